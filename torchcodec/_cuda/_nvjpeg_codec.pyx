"""JPEG decoding and encoding on CUDA with nvJPEG (torchcodec._cuda._nvjpeg opens the library).

``JpegDecoder(device)``: the decoding states of one device's nvJPEG handle, for one caller at a
time (torchcodec._cuda._jpeg keeps idle ones in a pool per device). ``decode(jobs, stream)``
decodes a batch into memory that the caller allocated, every call queued on ``stream`` (the output
library's current stream), in the device's primary context:

- with the hardware backend (GPUs with JPEG engines), the images that ``nvjpegDecodeBatchedSupported``
  accepts (baseline, single scan, supported subsampling) go through ``nvjpegDecodeBatched``, one
  call per output format (luma, planar RGB), each with its own state so that no host wait is
  needed between them; the others (progressive streams, 4:1:0 / 4:1:1...), and everything on GPUs
  without JPEG engines, go one at a time through ``nvjpegDecode`` (the default backend);
- a batch that nvJPEG refuses is decoded again one image at a time, so that a corrupt image is
  named by its index (``JpegBatchError.index``) and the others still decode;
- an image with an EXIF orientation, or a uint16 output, is decoded into scratch memory and copied
  into its output turned as the orientation says and widened (v * 257: the byte written twice;
  kernels/copy.cu's ``tc_copy_strided``, one byte per thread, any signed steps); an alpha plane
  (RGB_ALPHA, GRAY_ALPHA) is filled with the maximum (``cuMemsetD8Async``).

nvJPEG's states hold host buffers that its asynchronous copies read, so a decoder records an event
after its last call and waits for it (``cuEventSynchronize``, usually long passed) before it is used
again; until then it also keeps the encoded inputs alive. No host wait otherwise.

``JpegEncoder(device)``: an encoder state and parameters; ``encode`` compresses planar or
interleaved RGB device memory at a quality (4:4:4 chroma, baseline, as TorchCodec encodes on CUDA)
on the input's stream and returns the bytes (the host waits for them: their size is known only
then). ``copy_planes`` gathers an image of any strides into planar memory first.
"""
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize
from libc.stdint cimport int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from torchcodec._cuda cimport cuda as cu
from torchcodec._cuda cimport ffnvcodec   # the C definitions of the driver's tables
from torchcodec._cuda cimport nvjpeg as nj
from torchcodec._cuda._driver cimport CudaContext, CudaDriver, CudaModule, check_cu, check_cu_nogil
from torchcodec._cuda._nvjpeg cimport NvjpegDevice, NvjpegLibrary, check_nvjpeg, nvjpeg_error
from torchcodec._image._common cimport Markers, check_size, jpeg_markers

from torchcodec._cuda._converter import _modules_for

#: Output formats of decode jobs: the luma plane, or planar RGB.
FORMAT_Y = nj.NVJPEG_OUTPUT_Y
FORMAT_RGB = nj.NVJPEG_OUTPUT_RGB

cdef enum:
    MAX_GRID_Z = 65535      # the most blocks a grid's z dimension may have (the plane copy puts rows there)

cdef extern from "torchcodec/kernels.h" nogil:
    ctypedef struct tc_copy_params:
        uint64_t src, dst
        int64_t src_pitch, dst_pitch
        int64_t src_batch_stride, dst_batch_stride
        int64_t row_bytes
        int rows, count


class JpegBatchError(RuntimeError):
    """nvJPEG failed on one image of a batch: ``index`` is its position, ``status`` nvJPEG's code."""

    def __init__(self, message: str, index: int, status: int) -> None:
        super().__init__(message)
        self.index = index
        self.status = status


cdef unsigned blocks(int64_t count, int per_block) noexcept nogil:
    return <unsigned>((count + per_block - 1) // per_block)


cdef class PlaneCopier:
    """Copies a plane of bytes read at any signed steps into a plane written at any signed steps, on
    a stream (kernels/copy.cu's tc_copy_strided, one byte per thread: "rows" of one byte, the row
    steps as its batch strides)."""
    def __cinit__(self, CudaContext context not None):
        self.driver = context.driver
        self.module = _modules_for(context)[1]
        self.kernel = (<CudaModule>self.module).function_ptr(b"tc_copy_strided")

    cdef int copy(self, uint64_t src, int64_t src_row, int64_t src_col, uint64_t dst, int64_t dst_row,
                  int64_t dst_col, int width, int height, cu.CUstream stream) except -1 nogil:
        """dst[y * dst_row + x * dst_col] = src[y * src_row + x * src_col] for the width x height
        plane (byte steps). The context must be current."""
        cdef tc_copy_params params
        cdef void *args[1]
        memset(&params, 0, sizeof(params))
        params.src, params.dst, params.row_bytes = src, dst, 1
        if height <= MAX_GRID_Z:          # threads along a row, one row per z block
            params.rows, params.count = width, height
            params.src_pitch, params.dst_pitch = src_col, dst_col
            params.src_batch_stride, params.dst_batch_stride = src_row, dst_row
        elif width <= MAX_GRID_Z:         # threads down a column, one column per z block
            params.rows, params.count = height, width
            params.src_pitch, params.dst_pitch = src_row, dst_row
            params.src_batch_stride, params.dst_batch_stride = src_col, dst_col
        else:
            with gil:
                raise ValueError(f"cannot copy a {width}x{height} plane: one side must be at most {MAX_GRID_Z}")
        args[0] = &params
        return check_cu_nogil(self.driver, self.driver.ptr.cuLaunchKernel(
            self.kernel, 1, blocks(params.rows, 256), <unsigned>params.count, 1, 256, 1, 0, stream, args, NULL),
            "cuLaunchKernel")


cdef void orientation_steps(int orientation, int width, int height, int64_t *start, int64_t *row_step,
                            int64_t *col_step) noexcept nogil:
    """Where output pixel (y, x) of a plane stored width x height turned by EXIF ``orientation``
    is read: start + y * row_step + x * col_step (the same mapping as torchcodec._image's orient)."""
    cdef int64_t w = width, h = height
    start[0], row_step[0], col_step[0] = 0, w, 1
    if orientation == 2:
        start[0], row_step[0], col_step[0] = w - 1, w, -1
    elif orientation == 3:
        start[0], row_step[0], col_step[0] = (h - 1) * w + w - 1, -w, -1
    elif orientation == 4:
        start[0], row_step[0], col_step[0] = (h - 1) * w, -w, 1
    elif orientation == 5:
        start[0], row_step[0], col_step[0] = 0, 1, w
    elif orientation == 6:
        start[0], row_step[0], col_step[0] = (h - 1) * w, 1, -w
    elif orientation == 7:
        start[0], row_step[0], col_step[0] = (h - 1) * w + w - 1, -1, -w
    elif orientation == 8:
        start[0], row_step[0], col_step[0] = w - 1, -1, w


cdef class JpegDecoder:
    """``JpegDecoder(device)``: nvJPEG decoding states on an NvjpegDevice, for one caller at a time."""
    def __cinit__(self, NvjpegDevice device not None):
        cdef CudaContext context = device.context
        self.batch_states[0] = self.batch_states[1] = NULL
        self.single_state, self.parsed, self.done = NULL, NULL, NULL
        self.device, self.library, self.driver = device, device.library, context.driver
        self.copier = PlaneCopier(context)
        context.enter()
        try:
            check_nvjpeg(self.library.f.nvjpegJpegStateCreate(device.decode_handle, &self.single_state),
                         b"nvjpegJpegStateCreate")
            if device.hardware:
                check_nvjpeg(self.library.f.nvjpegJpegStateCreate(device.decode_handle, &self.batch_states[0]),
                             b"nvjpegJpegStateCreate")
                check_nvjpeg(self.library.f.nvjpegJpegStateCreate(device.decode_handle, &self.batch_states[1]),
                             b"nvjpegJpegStateCreate")
                check_nvjpeg(self.library.f.nvjpegJpegStreamCreate(device.decode_handle, &self.parsed),
                             b"nvjpegJpegStreamCreate")
            check_cu(self.driver, self.driver.ptr.cuEventCreate(&self.done, cu.CU_EVENT_DISABLE_TIMING),
                     "cuEventCreate")
        finally:
            context.exit()

    def close(self) -> None:
        """Wait for the last decode, destroy the states (also at exit, before the handles go)."""
        cdef CudaContext context = self.device.context
        cdef int k
        if context.ptr == NULL:
            return
        context.enter()
        try:
            if self.done != NULL:
                if self.recorded:
                    self.driver.ptr.cuEventSynchronize(self.done)
                self.driver.ptr.cuEventDestroy(self.done)
                self.done = NULL
            for k in range(2):
                if self.batch_states[k] != NULL:
                    self.library.f.nvjpegJpegStateDestroy(self.batch_states[k])
                    self.batch_states[k] = NULL
            if self.single_state != NULL:
                self.library.f.nvjpegJpegStateDestroy(self.single_state)
                self.single_state = NULL
            if self.parsed != NULL:
                self.library.f.nvjpegJpegStreamDestroy(self.parsed)
                self.parsed = NULL
        finally:
            context.exit()
        self.held = None

    def __dealloc__(self):
        # close() is the normal end (the pool calls it); here only what was never closed is freed.
        cdef int k
        if self.device is None or self.device.context.ptr == NULL or self.single_state == NULL:
            return
        if self.driver.ptr.cuCtxPushCurrent(self.device.context.ptr) != cu.CUDA_SUCCESS:
            return
        if self.done != NULL:
            self.driver.ptr.cuEventSynchronize(self.done)
            self.driver.ptr.cuEventDestroy(self.done)
        for k in range(2):
            if self.batch_states[k] != NULL:
                self.library.f.nvjpegJpegStateDestroy(self.batch_states[k])
        self.library.f.nvjpegJpegStateDestroy(self.single_state)
        if self.parsed != NULL:
            self.library.f.nvjpegJpegStreamDestroy(self.parsed)
        self.driver.ptr.cuCtxPopCurrent(NULL)

    def header(self, size_t address, size_t size, int64_t limit) -> tuple:
        """(components, subsampling, width, height, orientation) of the JPEG stream at ``address``:
        nvjpegGetImageInfo's view of it, and the EXIF orientation read as on the CPU. RuntimeError
        for a truncated stream, NvjpegError when nvJPEG cannot parse it, ImageTooLargeError when it
        declares more than ``limit`` pixels."""
        cdef int components = 0
        cdef nj.nvjpegChromaSubsampling_t subsampling = nj.NVJPEG_CSS_UNKNOWN
        cdef int widths[4]
        cdef int heights[4]
        cdef nj.nvjpegStatus_t status
        cdef Markers markers = jpeg_markers(<const uint8_t *>address, size)
        if not markers.complete:
            raise RuntimeError("Image is incomplete or truncated.")
        memset(widths, 0, sizeof(widths))
        memset(heights, 0, sizeof(heights))
        with nogil:
            status = self.library.f.nvjpegGetImageInfo(self.device.decode_handle, <const unsigned char *>address,
                                                       size, &components, &subsampling, widths, heights)
        if status != nj.NVJPEG_STATUS_SUCCESS:
            raise nvjpeg_error(status, "nvjpegGetImageInfo")
        check_size(1, heights[0], widths[0], limit, "decode_jpeg")
        return components, subsampling, widths[0], heights[0], markers.orientation

    def decode(self, list jobs, size_t stream, bint allow_hardware=True, object keep=None) -> tuple:
        """Decode ``jobs`` on the CUstream ``stream``. Each job is a tuple (address, size, format,
        channels, target, target_plane_stride, width, height, orientation, wide, out, alpha): the
        encoded bytes, FORMAT_Y or FORMAT_RGB, the planes written (1 or 3), where plane 0 of the
        decode goes (planes ``target_plane_stride`` bytes apart, rows ``width`` bytes apart), the
        stored size, the EXIF orientation, whether the output is uint16, the output's plane 0 and
        the alpha plane to fill (or 0). A ``target`` other than ``out`` is scratch, copied into
        ``out`` turned and widened. ``keep`` is held until this decoder is used again.
        Returns (images decoded by the hardware batch, images decoded one at a time); raises
        JpegBatchError naming the first image that failed."""
        cdef Py_ssize_t count = len(jobs), i
        cdef Job *c_jobs = <Job *>malloc(max(count, 1) * sizeof(Job))
        cdef int failed = -1, failed_status = 0, hardware_count = 0, single_count = 0
        cdef cu.CUstream cu_stream = <cu.CUstream>stream
        cdef CudaContext context = self.device.context
        cdef const char *where = b""
        if c_jobs == NULL:
            raise MemoryError("cannot allocate the batch")
        try:
            for i in range(count):
                fill_job(&c_jobs[i], jobs[i])
            self.wait_idle()
            self.held = keep
            context.enter()
            try:
                with nogil:
                    if allow_hardware and self.device.hardware:
                        hardware_count = self.decode_hardware(c_jobs, count, cu_stream)
                    for i in range(count):
                        if c_jobs[i].hardware:
                            continue
                        failed_status = self.library.f.nvjpegDecode(
                            self.device.decode_handle, self.single_state, c_jobs[i].data, c_jobs[i].size,
                            c_jobs[i].format, &c_jobs[i].target, cu_stream)
                        if failed_status != nj.NVJPEG_STATUS_SUCCESS:
                            failed, where = <int>i, b"nvjpegDecode"
                            break
                        single_count += 1
                    if failed < 0:
                        for i in range(count):
                            self.finish_job(&c_jobs[i], cu_stream)
                    check_cu_nogil(self.driver, self.driver.ptr.cuEventRecord(self.done, cu_stream), "cuEventRecord")
                    self.recorded = True
            finally:
                context.exit()
        finally:
            free(c_jobs)
        if failed >= 0:
            error = nvjpeg_error(failed_status, where.decode())
            raise JpegBatchError(str(error), failed, failed_status)
        return hardware_count, single_count

    cdef int wait_idle(self) except -1:
        """Wait until the last decode's calls have run (its states and inputs are free again)."""
        cdef cu.CUresult ret
        if not self.recorded:
            return 0
        self.device.context.enter()
        try:
            with nogil:
                ret = self.driver.ptr.cuEventSynchronize(self.done)
            check_cu(self.driver, ret, "cuEventSynchronize")
        finally:
            self.device.context.exit()
        self.recorded = False
        self.held = None
        return 0

    cdef int decode_hardware(self, Job *jobs, Py_ssize_t count, cu.CUstream stream) noexcept nogil:
        """Decode the jobs that the hardware backend accepts, in one nvjpegDecodeBatched per output
        format, marking them ``hardware``. A batch that fails is left to nvjpegDecode, image by
        image. Returns how many were decoded here."""
        cdef Py_ssize_t i, n
        cdef int supported, k, done = 0
        cdef int formats[2]
        cdef const unsigned char **datas = <const unsigned char **>malloc(max(count, 1) * sizeof(void *))
        cdef size_t *sizes = <size_t *>malloc(max(count, 1) * sizeof(size_t))
        cdef nj.nvjpegImage_t *images = <nj.nvjpegImage_t *>malloc(max(count, 1) * sizeof(nj.nvjpegImage_t))
        cdef Py_ssize_t *members = <Py_ssize_t *>malloc(max(count, 1) * sizeof(Py_ssize_t))
        cdef nj.nvjpegStatus_t status
        formats[0], formats[1] = nj.NVJPEG_OUTPUT_Y, nj.NVJPEG_OUTPUT_RGB
        if datas == NULL or sizes == NULL or images == NULL or members == NULL:
            free(datas); free(sizes); free(images); free(members)
            return 0                        # out of host memory: everything goes one at a time
        for i in range(count):
            supported = -1
            if (self.library.f.nvjpegJpegStreamParseHeader(self.device.decode_handle, jobs[i].data, jobs[i].size,
                                                           self.parsed) == nj.NVJPEG_STATUS_SUCCESS
                    and self.library.f.nvjpegDecodeBatchedSupported(self.device.decode_handle, self.parsed,
                                                                   &supported) == nj.NVJPEG_STATUS_SUCCESS):
                jobs[i].hardware = supported == 0        # nvJPEG says 0 for "supported"
        for k in range(2):
            n = 0
            for i in range(count):
                if jobs[i].hardware and jobs[i].format == formats[k]:
                    datas[n], sizes[n], images[n], members[n] = jobs[i].data, jobs[i].size, jobs[i].target, i
                    n += 1
            if n == 0:
                continue
            status = self.library.f.nvjpegDecodeBatchedInitialize(self.device.decode_handle, self.batch_states[k],
                                                                  <int>n, 1, formats[k])
            if status == nj.NVJPEG_STATUS_SUCCESS:
                status = self.library.f.nvjpegDecodeBatched(self.device.decode_handle, self.batch_states[k], datas,
                                                            sizes, images, stream)
            if status == nj.NVJPEG_STATUS_SUCCESS:
                done += <int>n
            else:
                for i in range(n):          # decoded again one at a time: a bad image is named
                    jobs[members[i]].hardware = False
        free(datas); free(sizes); free(images); free(members)
        return done

    cdef int finish_job(self, Job *job, cu.CUstream stream) except -1 nogil:
        """Copy a scratch job's planes into its output, turned by its orientation and widened to
        16 bits (v * 257: the byte written twice); fill its alpha plane with the maximum."""
        cdef int64_t start = 0, row_step = 0, col_step = 0
        cdef int plane, half, out_width = job.width, out_height = job.height
        cdef int itemsize = 2 if job.wide else 1
        cdef uint64_t plane_bytes = <uint64_t>job.width * job.height * itemsize
        if job.scratch:
            if job.orientation >= 5:
                out_width, out_height = job.height, job.width
            orientation_steps(job.orientation, job.width, job.height, &start, &row_step, &col_step)
            for plane in range(job.channels):
                for half in range(itemsize):
                    self.copier.copy(<uint64_t>job.target.channel[plane] + start, row_step, col_step,
                                     job.out + plane * plane_bytes + half, <int64_t>out_width * itemsize, itemsize,
                                     out_width, out_height, stream)
        if job.alpha != 0:
            check_cu_nogil(self.driver, self.driver.ptr.cuMemsetD8Async(job.alpha, 255, plane_bytes, stream),
                           "cuMemsetD8Async")
        return 0


cdef int fill_job(Job *job, tuple spec) except -1:
    cdef int plane
    address, size, fmt, channels, target, plane_stride, width, height, orientation, wide, out, alpha = spec
    memset(job, 0, sizeof(Job))
    job.data, job.size = <const unsigned char *><size_t>address, size
    job.format, job.channels, job.width, job.height = fmt, channels, width, height
    job.orientation, job.wide, job.out, job.alpha = orientation, wide, out, alpha
    job.scratch = target != out
    for plane in range(channels):
        job.target.channel[plane] = <unsigned char *><size_t>(target + plane * plane_stride)
        job.target.pitch[plane] = <size_t>width
    return 0


cdef class JpegEncoder:
    """``JpegEncoder(device)``: an nvJPEG encoder state and its parameters, for one caller at a time."""
    def __cinit__(self, NvjpegDevice device not None):
        cdef CudaContext context = device.context
        self.state, self.params = NULL, NULL
        self.device, self.library, self.driver = device, device.library, context.driver
        device.open_encoding()
        self.copier = PlaneCopier(context)
        context.enter()
        try:
            check_nvjpeg(self.library.f.nvjpegEncoderStateCreate(device.encode_handle, &self.state, NULL),
                         b"nvjpegEncoderStateCreate")
            check_nvjpeg(self.library.f.nvjpegEncoderParamsCreate(device.encode_handle, &self.params, NULL),
                         b"nvjpegEncoderParamsCreate")
        finally:
            context.exit()

    def close(self) -> None:
        """Destroy the state and parameters (also at exit, before the handles go)."""
        cdef CudaContext context = self.device.context
        if context.ptr == NULL or self.state == NULL:
            return
        context.enter()
        try:
            self.library.f.nvjpegEncoderParamsDestroy(self.params)
            self.library.f.nvjpegEncoderStateDestroy(self.state)
            self.state, self.params = NULL, NULL
        finally:
            context.exit()

    def __dealloc__(self):
        if self.device is None or self.device.context.ptr == NULL or self.state == NULL:
            return
        if self.driver.ptr.cuCtxPushCurrent(self.device.context.ptr) != cu.CUDA_SUCCESS:
            return
        if self.params != NULL:
            self.library.f.nvjpegEncoderParamsDestroy(self.params)
        self.library.f.nvjpegEncoderStateDestroy(self.state)
        self.driver.ptr.cuCtxPopCurrent(NULL)

    def copy_planes(self, size_t src, tuple strides, int channels, int height, int width, size_t dst,
                    size_t stream) -> None:
        """Gather the (channels, height, width) uint8 image at ``src`` (signed byte ``strides``) into
        contiguous planes at ``dst``, on ``stream``."""
        cdef int64_t sc = strides[0], sh = strides[1], sw = strides[2]
        cdef int plane
        cdef CudaContext context = self.device.context
        context.enter()
        try:
            with nogil:
                for plane in range(channels):
                    self.copier.copy(src + plane * sc, sh, sw, dst + <uint64_t>plane * height * width, width, 1,
                                     width, height, <cu.CUstream>stream)
        finally:
            context.exit()

    def encode(self, size_t address, size_t pitch, size_t plane_stride, bint interleaved, int width, int height,
               int quality, size_t stream) -> bytes:
        """The JPEG of the RGB image at ``address`` in device memory: planar (rows ``pitch`` bytes
        apart, planes ``plane_stride`` bytes apart) or ``interleaved`` (RGB pixels, rows ``pitch``
        apart), at ``quality`` 1..100 with 4:4:4 chroma, read on the CUstream ``stream``. The host
        waits for the encoded bytes."""
        cdef nj.nvjpegImage_t image
        cdef nj.nvjpegStatus_t status = nj.NVJPEG_STATUS_SUCCESS
        cdef size_t length = 0
        cdef cu.CUstream cu_stream = <cu.CUstream>stream
        cdef cu.CUresult ret = cu.CUDA_SUCCESS
        cdef const char *where = b""
        cdef int plane
        cdef bytes data = None
        cdef unsigned char *buffer
        cdef CudaContext context = self.device.context
        cdef nj.nvjpegHandle_t handle = self.device.encode_handle
        memset(&image, 0, sizeof(image))
        for plane in range(1 if interleaved else 3):
            image.channel[plane] = <unsigned char *>(address + plane * plane_stride)
            image.pitch[plane] = pitch
        context.enter()
        try:
            with nogil:
                status = self.library.f.nvjpegEncoderParamsSetQuality(self.params, quality, cu_stream)
                where = b"nvjpegEncoderParamsSetQuality"
                if status == nj.NVJPEG_STATUS_SUCCESS:
                    status = self.library.f.nvjpegEncoderParamsSetSamplingFactors(self.params, nj.NVJPEG_CSS_444,
                                                                                  cu_stream)
                    where = b"nvjpegEncoderParamsSetSamplingFactors"
                if status == nj.NVJPEG_STATUS_SUCCESS:
                    status = self.library.f.nvjpegEncodeImage(
                        handle, self.state, self.params, &image,
                        nj.NVJPEG_INPUT_RGBI if interleaved else nj.NVJPEG_INPUT_RGB, width, height, cu_stream)
                    where = b"nvjpegEncodeImage"
                if status == nj.NVJPEG_STATUS_SUCCESS:
                    status = self.library.f.nvjpegEncodeRetrieveBitstream(handle, self.state, NULL, &length,
                                                                          cu_stream)
                    where = b"nvjpegEncodeRetrieveBitstream"
                if status == nj.NVJPEG_STATUS_SUCCESS:
                    ret = self.driver.ptr.cuStreamSynchronize(cu_stream)
            check_nvjpeg(status, where)
            check_cu(self.driver, ret, "cuStreamSynchronize")
            data = PyBytes_FromStringAndSize(NULL, length)
            buffer = <unsigned char *>PyBytes_AS_STRING(data)
            with nogil:
                status = self.library.f.nvjpegEncodeRetrieveBitstream(handle, self.state, buffer, &length, cu_stream)
                if status == nj.NVJPEG_STATUS_SUCCESS:
                    ret = self.driver.ptr.cuStreamSynchronize(cu_stream)
            check_nvjpeg(status, b"nvjpegEncodeRetrieveBitstream")
            check_cu(self.driver, ret, "cuStreamSynchronize")
        finally:
            context.exit()
        return data if length == len(data) else data[:length]

    def upload(self, bytes data not None, size_t dst, size_t stream) -> None:
        """Copy ``data`` (host bytes) to the device memory at ``dst`` on the CUstream ``stream``
        (the bytes are staged before this returns: they may go at once)."""
        cdef cu.CUDA_MEMCPY2D copy
        cdef cu.CUresult ret
        cdef CudaContext context = self.device.context
        memset(&copy, 0, sizeof(copy))
        copy.srcMemoryType, copy.srcHost = cu.CU_MEMORYTYPE_HOST, PyBytes_AS_STRING(data)
        copy.dstMemoryType, copy.dstDevice = cu.CU_MEMORYTYPE_DEVICE, <cu.CUdeviceptr>dst
        copy.srcPitch = copy.dstPitch = copy.WidthInBytes = len(data)
        copy.Height = 1
        context.enter()
        try:
            with nogil:
                ret = self.driver.ptr.cuMemcpy2DAsync(&copy, <cu.CUstream>stream)
            check_cu(self.driver, ret, "cuMemcpy2DAsync")
        finally:
            context.exit()
