"""JPEG with libjpeg-turbo's TurboJPEG API: decoding (one image, or a batch on several threads
without the GIL) and encoding.

Decoding follows TorchCodec 0.17: libjpeg's own conversions for UNCHANGED (the stored components),
GRAY (the luma component) and RGB; CMYK/YCCK sources converted to RGB and gray with Pillow's
formulas and, for UNCHANGED, inverted as Pillow shows them; RGB_ALPHA and GRAY_ALPHA add an opaque
alpha channel; uint16 output is the 8-bit value times 257; the EXIF orientation (the first APP1
segment with an "Exif" header) is applied. TurboJPEG's defaults are libjpeg's (accurate integer
IDCT, smooth chroma upsampling), so pixels equal Pillow's and djpeg's on the same library. A truncated
stream (no end-of-image marker after the scans, or libjpeg running out of data) is an error, as in
TorchCodec; corrupt-data warnings are not. Progressive streams with more than 500 scans are refused
(TJFLAG_LIMITSCANS), a known denial of service.

Encoding: baseline JPEG at the given quality, 4:2:0 chroma (gray for one channel), accurate DCT:
libjpeg's defaults, so the bytes equal cjpeg's and Pillow's for the same quality.
"""
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport strlen, strncmp, strncpy, strstr

from torchcodec._image cimport turbojpeg as tj
from torchcodec._image._common cimport (
    DTYPE_UINT16, MODE_GRAY, MODE_GRAY_ALPHA, MODE_RGB, MODE_RGB_ALPHA, MODE_UNCHANGED, Pixels, allocate,
    Markers, check_size, convert_pixels, jpeg_markers, mode_channels, orient, output_bytes, packed_rows, swaps_axes)
from torchcodec._image.pthread cimport (pthread_create, pthread_join, pthread_mutex_destroy, pthread_mutex_init,
                                        pthread_mutex_lock, pthread_mutex_t, pthread_mutex_unlock, pthread_t)

import logging

from torchcodec._memory import check_request

# libjpeg's warnings about corrupt data it decoded past ("Corrupt JPEG data: ..."), which TorchCodec
# prints on stderr: here records of this logger, shown as torchcodec.set_log_level says.
_LOGGER = logging.getLogger("torchcodec.image")

cdef enum:
    MESSAGE_SIZE = 320
cdef const char *TRUNCATED = b"Image is incomplete or truncated."


cdef struct Job:
    const uint8_t *data
    size_t size
    int width                   # as stored
    int height
    int colorspace              # TJCS_*
    int orientation             # EXIF, 0 when absent
    int mode
    int channels                # of the output
    bint wide                   # 16-bit output
    uint8_t *out
    bint failed
    char message[MESSAGE_SIZE]


cdef bint is_warning(tj.tjhandle handle) noexcept nogil:
    """Whether the failure TurboJPEG reports is only libjpeg's warning about corrupt data, which the
    image was decoded past (Pillow and TorchCodec ignore those). TurboJPEG keeps the message of the
    first warning unless a fatal error came after it, and its error code says "warning" as soon as
    any warning was seen, so the message decides: libjpeg's warnings (JWRN_*) all begin so."""
    if tj.tjGetErrorCode(handle) != tj.TJERR_WARNING:
        return False
    cdef const char *message = tj.tjGetErrorStr2(handle)
    cdef const char *prefixes[7]
    prefixes[:] = [b"Corrupt JPEG data", b"Premature end of JPEG file", b"Inconsistent progression sequence",
                   b"Unknown Adobe color transform code", b"Warning: unknown JFIF revision",
                   b"Invalid SOS parameters for sequential JPEG", b"Application transferred too many scanlines"]
    cdef int i
    for i in range(7):
        if strncmp(message, prefixes[i], strlen(prefixes[i])) == 0:
            return True
    return False


cdef int fail(Job *job, const char *message) noexcept nogil:
    job.failed = True
    strncpy(job.message, message, MESSAGE_SIZE - 1)
    job.message[MESSAGE_SIZE - 1] = 0
    return -1


cdef void note_warning(Job *job, tj.tjhandle handle) noexcept nogil:
    """Keep the first libjpeg warning of a job that goes on (logged when the call returns)."""
    if not job.failed and job.message[0] == 0:
        strncpy(job.message, tj.tjGetErrorStr2(handle), MESSAGE_SIZE - 1)
        job.message[MESSAGE_SIZE - 1] = 0


cdef int read_header(Job *job, tj.tjhandle handle) noexcept nogil:
    """Fill the job's size, colour space and orientation from the stream's headers."""
    cdef int subsamp = -1, colorspace = -1
    cdef Markers markers = jpeg_markers(job.data, job.size)
    job.orientation = markers.orientation
    cdef int ret = tj.tjDecompressHeader3(handle, job.data, job.size, &job.width, &job.height, &subsamp, &colorspace)
    if is_warning(handle):
        # corrupt data that libjpeg read past; running out of data is an error (as in TorchCodec)
        if strstr(tj.tjGetErrorStr2(handle), b"Premature end of JPEG file") != NULL:
            return fail(job, TRUNCATED)
        note_warning(job, handle)
    elif ret != 0:
        if strstr(tj.tjGetErrorStr2(handle), b"Could not determine subsampling") == NULL:
            # (TurboJPEG 2.x gives up on chroma subsamplings it has no name for, after reading the
            # size and colour space; libjpeg decodes those images fine.)
            if not markers.complete:
                return fail(job, TRUNCATED)
            return fail(job, tj.tjGetErrorStr2(handle))
    if not markers.complete:
        return fail(job, TRUNCATED)
    if job.width <= 0 or job.height <= 0 or colorspace < 0:
        return fail(job, b"Invalid data returned in header")
    job.colorspace = colorspace
    cdef int unchanged = 1 if colorspace == tj.TJCS_GRAY else (4 if is_cmyk(job) else 3)
    job.channels = mode_channels(job.mode, unchanged)
    return 0


cdef inline bint is_cmyk(const Job *job) noexcept nogil:
    return job.colorspace == tj.TJCS_CMYK or job.colorspace == tj.TJCS_YCCK


cdef inline uint8_t cmyk_channel(int k, int cmy) noexcept nogil:
    # Pillow's CMYK to RGB (libImaging/Convert.c): k - k * cmy / 255, rounded, from the raw samples
    # libjpeg gives for Adobe CMYK.
    cdef int v = k * cmy + 128
    v = ((v >> 8) + v) >> 8
    v = k - v
    return <uint8_t>(0 if v < 0 else (255 if v > 255 else v))


cdef void convert_cmyk(const uint8_t *cmyk, uint8_t *out, size_t count, int channels) noexcept nogil:
    """Raw CMYK samples to gray (1, 2 with alpha) or RGB (3, 4 with alpha), 8-bit."""
    cdef size_t i
    cdef int r, g, b
    cdef const uint8_t *p
    for i in range(count):
        p = cmyk + 4 * i
        r = cmyk_channel(p[3], 255 - p[0])
        g = cmyk_channel(p[3], 255 - p[1])
        b = cmyk_channel(p[3], 255 - p[2])
        if channels <= 2:
            out[0] = <uint8_t>((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16)    # Pillow's "L"
        else:
            out[0] = <uint8_t>r
            out[1] = <uint8_t>g
            out[2] = <uint8_t>b
        if channels == 2 or channels == 4:
            out[channels - 1] = 255
        out += channels


cdef int decompress(Job *job, tj.tjhandle handle, uint8_t *dst, int pixel_format, int channels) noexcept nogil:
    cdef int ret = tj.tjDecompress2(handle, job.data, job.size, dst, job.width, job.width * channels, job.height,
                                    pixel_format, tj.TJFLAG_LIMITSCANS)
    if ret == 0:
        return 0
    if is_warning(handle):
        if strstr(tj.tjGetErrorStr2(handle), b"Premature end of JPEG file") != NULL:
            return fail(job, TRUNCATED)
        note_warning(job, handle)
        return 0                           # corrupt data that libjpeg worked around (as Pillow and TorchCodec)
    return fail(job, tj.tjGetErrorStr2(handle))


cdef int run(Job *job, tj.tjhandle handle) noexcept nogil:
    """Decode the job's image into ``job.out`` (packed rows of ``job.channels``, displayed orientation)."""
    cdef size_t count = <size_t>job.width * job.height
    cdef size_t pixel_bytes = job.channels * (2 if job.wide else 1)
    cdef bint oriented = job.orientation > 1
    cdef uint8_t *work = job.out
    cdef uint8_t *cmyk = NULL
    cdef int ret = 0, channels, pixel_format
    if oriented:
        work = <uint8_t *>malloc(count * pixel_bytes)
        if work == NULL:
            return fail(job, b"out of memory")
    if is_cmyk(job):
        if job.mode == MODE_UNCHANGED:
            ret = decompress(job, handle, work, tj.TJPF_CMYK, 4)
            if ret == 0:
                invert(work, count * 4)                 # Adobe CMYK is stored inverted; Pillow shows it so
                if job.wide:
                    convert_pixels(work, 4, False, work, 4, True, count)
        else:
            cmyk = <uint8_t *>malloc(count * 4)
            if cmyk == NULL:
                ret = fail(job, b"out of memory")
            else:
                ret = decompress(job, handle, cmyk, tj.TJPF_CMYK, 4)
                if ret == 0:
                    convert_cmyk(cmyk, work, count, job.channels)
                    if job.wide:
                        convert_pixels(work, job.channels, False, work, job.channels, True, count)
                free(cmyk)
    else:
        if job.mode == MODE_GRAY or job.mode == MODE_GRAY_ALPHA or (
                job.mode == MODE_UNCHANGED and job.colorspace == tj.TJCS_GRAY):
            pixel_format, channels = tj.TJPF_GRAY, 1
        elif job.mode == MODE_RGB_ALPHA:
            pixel_format, channels = tj.TJPF_RGBA, 4              # libjpeg-turbo fills the alpha with 255
        else:
            pixel_format, channels = tj.TJPF_RGB, 3
        ret = decompress(job, handle, work, pixel_format, channels)
        if ret == 0 and (channels != job.channels or job.wide):
            convert_pixels(work, channels, False, work, job.channels, job.wide, count)
    if oriented:
        if ret == 0:
            orient(work, job.out, job.height, job.width, pixel_bytes, job.orientation)
        free(work)
    return ret


cdef void invert(uint8_t *data, size_t count) noexcept nogil:
    cdef size_t i
    for i in range(count):
        data[i] = 255 - data[i]


cdef tuple output_shape(const Job *job):
    if swaps_axes(job.orientation):
        return (job.width, job.height, job.channels)
    return (job.height, job.width, job.channels)


cdef class Decompressor:
    """Owns a TurboJPEG decompressor (``ptr``)."""
    cdef tj.tjhandle ptr

    def __cinit__(self):
        self.ptr = tj.tjInitDecompress()
        if self.ptr == NULL:
            raise MemoryError("tjInitDecompress failed")

    def __dealloc__(self):
        if self.ptr != NULL:
            tj.tjDestroy(self.ptr)


def decode(size_t address, size_t size, int mode, int dtype_code, int64_t limit, object allocator):
    """Decode the JPEG stream of ``size`` bytes at ``address`` into memory from ``allocator(shape,
    dtype)`` (shape (H, W, C)); raises RuntimeError with libjpeg's message on bad data."""
    cdef Decompressor decompressor = Decompressor()
    cdef Job job
    prepare(&job, address, size, mode, dtype_code)
    if read_header(&job, decompressor.ptr) != 0:
        raise RuntimeError(f"decode_jpeg: {job.message.decode('utf-8', 'replace')}")
    check_size(1, job.height, job.width, limit, "decode_jpeg")
    job.out = allocate(allocator, output_shape(&job), job.wide, "decode_jpeg")
    cdef int ret
    with nogil:
        ret = run(&job, decompressor.ptr)
    if ret != 0:
        raise RuntimeError(f"decode_jpeg: {job.message.decode('utf-8', 'replace')}")
    if job.message[0] != 0:
        _LOGGER.warning("decode_jpeg: %s", job.message.decode('utf-8', 'replace'))


cdef void prepare(Job *job, size_t address, size_t size, int mode, int dtype_code) noexcept:
    job.data = <const uint8_t *>address
    job.size = size
    job.mode = mode
    job.wide = dtype_code == DTYPE_UINT16
    job.failed = False
    job.message[0] = 0
    job.out = NULL
    job.orientation = 0


cdef struct Batch:
    Job *jobs
    Py_ssize_t count
    Py_ssize_t next
    pthread_mutex_t lock


cdef void work_on(Batch *batch) noexcept nogil:
    """Take the batch's next job until none is left (every worker thread, and the caller's)."""
    cdef tj.tjhandle handle = tj.tjInitDecompress()
    cdef Py_ssize_t i
    while True:
        pthread_mutex_lock(&batch.lock)
        i = batch.next
        batch.next += 1
        pthread_mutex_unlock(&batch.lock)
        if i >= batch.count:
            break
        if handle == NULL:
            fail(&batch.jobs[i], b"tjInitDecompress failed")
        else:
            run(&batch.jobs[i], handle)
    if handle != NULL:
        tj.tjDestroy(handle)


cdef void *worker(void *arg) noexcept nogil:
    work_on(<Batch *>arg)
    return NULL


def decode_batch(list sources, int mode, int dtype_code, int64_t limit, object allocator, int num_threads):
    """Decode each (address, size) of ``sources`` like ``decode``: headers read and outputs allocated
    first (in order), then the images decoded on ``num_threads`` threads (the caller's among them)
    without the GIL. An error names the index of the first image that failed."""
    cdef Py_ssize_t count = len(sources), i, started = 0
    cdef Job *jobs = <Job *>malloc(max(count, 1) * sizeof(Job))
    if jobs == NULL:
        raise MemoryError("cannot allocate the batch")
    cdef Decompressor decompressor
    cdef Batch batch
    cdef pthread_t *threads = NULL
    cdef object total = 0
    try:
        decompressor = Decompressor()
        for i in range(count):
            address, size = sources[i]
            prepare(&jobs[i], address, size, mode, dtype_code)
            if read_header(&jobs[i], decompressor.ptr) != 0:
                raise RuntimeError(f"decode_jpeg: image {i} of the batch: {jobs[i].message.decode('utf-8', 'replace')}")
            try:
                check_size(1, jobs[i].height, jobs[i].width, limit, "decode_jpeg")
            except RuntimeError as error:
                raise type(error)(f"image {i} of the batch: {error}") from None
            total += output_bytes(output_shape(&jobs[i]), jobs[i].wide)
        check_request(f"decode_jpeg: a batch of {count} images", other_bytes=total)   # all, before any
        for i in range(count):
            jobs[i].out = allocate(allocator, output_shape(&jobs[i]), jobs[i].wide, "decode_jpeg")
        batch.jobs, batch.count, batch.next = jobs, count, 0
        num_threads = max(1, min(num_threads, count))
        threads = <pthread_t *>malloc(num_threads * sizeof(pthread_t))
        if threads == NULL:
            raise MemoryError("cannot allocate the batch's threads")
        pthread_mutex_init(&batch.lock, NULL)
        with nogil:
            for i in range(num_threads - 1):
                if pthread_create(&threads[started], NULL, worker, &batch) != 0:
                    break                            # fewer threads: the others take more jobs
                started += 1
            work_on(&batch)
            for i in range(started):
                pthread_join(threads[i], NULL)
        pthread_mutex_destroy(&batch.lock)
        for i in range(count):
            if jobs[i].failed:
                raise RuntimeError(f"decode_jpeg: image {i} of the batch: {jobs[i].message.decode('utf-8', 'replace')}")
        for i in range(count):
            if jobs[i].message[0] != 0:
                _LOGGER.warning("decode_jpeg: image %d of the batch: %s", i, jobs[i].message.decode('utf-8', 'replace'))
    finally:
        free(threads)
        free(jobs)


# ---- encoding ------------------------------------------------------------------------------

def encode(size_t address, Py_ssize_t channels, Py_ssize_t height, Py_ssize_t width, Py_ssize_t channel_stride,
           Py_ssize_t row_stride, Py_ssize_t column_stride, int quality):
    """Encode the uint8 image at ``address`` (1 or 3 channels, byte strides given) as a JPEG of
    ``quality`` (1..100); returns the bytes."""
    cdef Pixels pixels
    pixels.data = <const uint8_t *>address
    pixels.channels, pixels.height, pixels.width = channels, height, width
    pixels.channel_stride, pixels.row_stride, pixels.column_stride = channel_stride, row_stride, column_stride
    cdef tj.tjhandle handle = tj.tjInitCompress()
    if handle == NULL:
        raise MemoryError("tjInitCompress failed")
    cdef uint8_t *owned = NULL
    cdef const uint8_t *rows
    cdef unsigned char *jpeg = NULL
    cdef unsigned long jpeg_size = 0
    cdef int ret = -1
    cdef int pitch = <int>row_stride
    cdef bint gray = channels == 1
    try:
        with nogil:
            rows = packed_rows(&pixels, &owned)
            if rows != NULL:
                if owned != NULL:
                    pitch = <int>(width * channels)
                ret = tj.tjCompress2(handle, rows, <int>width, pitch, <int>height,
                                     tj.TJPF_GRAY if gray else tj.TJPF_RGB, &jpeg, &jpeg_size,
                                     tj.TJSAMP_GRAY if gray else tj.TJSAMP_420, quality, tj.TJFLAG_ACCURATEDCT)
        if rows == NULL:
            raise MemoryError("out of memory while gathering the image's pixels")
        if ret != 0:
            raise RuntimeError(f"encode_jpeg: {tj.tjGetErrorStr2(handle).decode('utf-8', 'replace')}")
        return PyBytes_FromStringAndSize(<const char *>jpeg, jpeg_size)
    finally:
        free(owned)
        if jpeg != NULL:
            tj.tjFree(jpeg)
        tj.tjDestroy(handle)
