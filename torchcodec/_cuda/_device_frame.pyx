"""RawFrames on a CUDA device (the building blocks' ``make_decoder(device="cuda")``).

A RawFrame must not pin what its decoder needs back: NVDEC has 4 output surfaces, FFmpeg's CUDA
hwaccel a fixed pool of frames. So, as TorchCodec 0.17 does (``RawFrame.storage_cuda``), each frame a
CUDA packet decoder hands out is copied into device memory of its own, allocated by the output
library (the bridge's: a torch tensor, a cupy array, or torchcodec's DeviceBuffer) and written on
that library's current stream (``cuMemcpy2DAsync``); the decoder's picture is released at once.
Frames of the CPU fallback are uploaded the same way. The copy holds the picture's display area,
cropped, in an NVDEC surface format:

- NVDEC frames: nv12, p010le (10-bit content; p012le for 12-bit where FFmpeg has it) or p016le,
  yuv444p, yuv444p16le, as NVDEC output them (the stream's current stream first waits for the map's
  ``ready`` event; ``done`` is recorded after the copy, which lets the decoder unmap the surface);
- FFmpeg hwaccel frames: their software format (the copy is ordered after FFmpeg's writes on the
  legacy default stream, and FFmpeg's next writes after the copy, on the device);
- CPU frames: 8- to 16-bit 4:2:0 become nv12 / p010le / p012le / p016le (chroma interleaved, deep
  samples MSB-aligned), deep 4:4:4 becomes yuv444p16le, 8-bit 4:4:4 stays yuv444p; any other
  format (4:2:2, gray, RGB, with alpha) is uploaded as it is, its pixel format kept: converting it
  into a YUV surface format would change its samples.

The new AVFrame's ``opaque`` points at a FrameSync of its own (``ready`` recorded after the copy,
``bits`` the content's depth), so the CUDA converter treats it as it treats NVDEC frames: its
stream waits for ``ready`` on the device, nothing waits on the host. ``device_planes`` views the
planes as 2-D arrays of the storage's library, without a copy.
"""
from cpython.ref cimport Py_INCREF, PyObject
from libc.stdint cimport uint8_t, uint16_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from torchcodec._core._raw_frames cimport RawFrame
from torchcodec._cuda._driver cimport CudaContext, CudaDriver, FrameSync, check_cu, check_cu_nogil, stream_wait_event
from torchcodec._cuda cimport cuda as cu
from torchcodec._cuda cimport ffnvcodec   # the C definitions of the driver's tables
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport ffcompat
from torchcodec._ffmpeg.avutil cimport AVBufferRef, AVFrame, AVHWFramesContext, AVPixelFormat, AVPixFmtDescriptor

from torchcodec import _outputs

cdef extern from "Python.h":
    void Py_DecRef(PyObject *o)
    int Py_IsInitialized() nogil

cdef enum:
    COPY = 0            # the planes as they are
    PACK_420 = 1        # planar 4:2:0 -> Cb Cr interleaved (nv12-like), samples shifted to the MSB
    WIDEN_444 = 2       # planar 4:4:4 of 9 to 16 bits -> 16-bit words, MSB-aligned

# Rows of the copy start at multiples of this (what cuMemAllocPitch would choose).
cdef size_t PITCH_ALIGN = 256
cdef int PALETTE_BYTES = 1024
cdef cu.CUstream LEGACY_STREAM = <cu.CUstream><size_t>cu.TC_STREAM_LEGACY

# Surface formats by name (p012le exists from FFmpeg 6 on: AV_PIX_FMT_NONE before).
cdef int FMT_P010 = lavu.av_get_pix_fmt(b"p010le")
cdef int FMT_P012 = lavu.av_get_pix_fmt(b"p012le")


cdef inline size_t aligned(size_t size) noexcept nogil:
    return (size + PITCH_ALIGN - 1) & ~(PITCH_ALIGN - 1)


cdef int semi_planar_format(int bits) noexcept nogil:
    """The 4:2:0 surface format of ``bits``-bit content (MSB-aligned 16-bit words beyond 8 bits)."""
    if bits <= 8:
        return lavu.AV_PIX_FMT_NV12
    if bits == 10 and FMT_P010 != lavu.AV_PIX_FMT_NONE:
        return FMT_P010
    if bits == 12 and FMT_P012 != lavu.AV_PIX_FMT_NONE:
        return FMT_P012
    return lavu.AV_PIX_FMT_P016LE


cdef int picture_layout(int format, int width, int height, PictureLayout *layout) noexcept nogil:
    cdef const AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(<AVPixelFormat>format)
    cdef int p, c, count, line
    memset(layout, 0, sizeof(PictureLayout))
    if desc == NULL or desc.flags & lavu.AV_PIX_FMT_FLAG_HWACCEL or width <= 0 or height <= 0:
        return -1
    layout.format = format
    layout.width = width
    layout.height = height
    count = lavu.av_pix_fmt_count_planes(<AVPixelFormat>format)
    if count <= 0 or count > MAX_PLANES:
        return -1
    for p in range(count):
        line = lavu.av_image_get_linesize(<AVPixelFormat>format, width, p)
        if line <= 0:
            return -1
        layout.row_bytes[p] = <size_t>line
        layout.rows[p] = height
        for c in range(desc.nb_components):
            if desc.comp[c].plane != p:
                continue
            if (c == 1 or c == 2) and not (desc.flags & lavu.AV_PIX_FMT_FLAG_RGB):
                layout.shift_x[p] = desc.log2_chroma_w
                layout.shift_y[p] = desc.log2_chroma_h
                layout.rows[p] = -((-height) >> desc.log2_chroma_h)
            if not (desc.flags & lavu.AV_PIX_FMT_FLAG_BITSTREAM) and <size_t>desc.comp[c].step > layout.element[p]:
                layout.element[p] = desc.comp[c].step
    layout.num_planes = count
    if desc.flags & lavu.AV_PIX_FMT_FLAG_PAL:        # data[1] is the palette: 256 RGBA entries
        layout.num_planes = 2
        layout.rows[1] = 1
        layout.row_bytes[1] = PALETTE_BYTES
        layout.shift_x[1] = layout.shift_y[1] = 0
        layout.element[1] = 0
    return 0


cdef void release_memory(void *opaque, uint8_t *data) noexcept nogil:
    """AVBuffer free callback of a device RawFrame's AVFrame (any thread): drops its reference to
    the DeviceFrameMemory, with the GIL (after interpreter shutdown the memory is the driver's)."""
    if Py_IsInitialized():
        with gil:
            Py_DecRef(<PyObject *>opaque)


cdef class DeviceFrameMemory:
    """The storage of one device RawFrame and its FrameSync (see the .pxd); made by FrameUploader."""

    def __cinit__(self):
        memset(&self.sync, 0, sizeof(FrameSync))

    def __init__(self, *args, **kwargs):
        raise TypeError("DeviceFrameMemory is made by the CUDA packet decoders only")

    def __dealloc__(self):
        # Destroying an event that work still records is allowed: its resources go when the work is done.
        if self.context is None or self.context.ptr == NULL:
            return
        if self.context.driver.ptr.cuCtxPushCurrent(self.context.ptr) != cu.CUDA_SUCCESS:
            return
        if self.sync.ready != NULL:
            self.context.driver.ptr.cuEventDestroy(self.sync.ready)
        if self.sync.done != NULL:
            self.context.driver.ptr.cuEventDestroy(self.sync.done)
        self.context.driver.ptr.cuCtxPopCurrent(NULL)


cdef struct CopyPlan:
    PictureLayout layout        # of the copy
    int kind                    # COPY, PACK_420 or WIDEN_444
    int shift                   # left shift of host samples (PACK_420, WIDEN_444)
    int bits                    # the content's bits per sample (FrameSync.bits)
    int src_x                   # where the picture starts in the source (device sources)
    int src_y
    size_t pitches[MAX_PLANES]
    size_t offsets[MAX_PLANES]
    size_t total


cdef str format_name(int pix_fmt):
    cdef const char *name = lavu.av_get_pix_fmt_name(<AVPixelFormat>pix_fmt)
    return name.decode() if name != NULL else f"pixel format {pix_fmt}"


cdef int plan_copy(const AVFrame *frame, CopyPlan *plan) except -1:
    """How ``frame`` (an NVDEC, hwaccel or host frame) is copied to the device."""
    cdef const AVPixFmtDescriptor *desc
    cdef FrameSync *sync = NULL
    cdef int format = frame.format, width = frame.width, height = frame.height, depth, p
    cdef size_t offset = 0
    memset(plan, 0, sizeof(CopyPlan))
    plan.kind = COPY
    if frame.format == lavu.AV_PIX_FMT_CUDA:
        if frame.hw_frames_ctx == NULL:
            raise RuntimeError("a CUDA hwaccel frame without hw_frames_ctx: its pixel layout is unknown")
        format = (<AVHWFramesContext *>frame.hw_frames_ctx.data).sw_format
        # FFmpeg applies right and bottom cropping to hardware frames, not left and top.
        plan.src_x, plan.src_y = <int>frame.crop_left, <int>frame.crop_top
        width, height = frame.width - plan.src_x, frame.height - plan.src_y
    elif frame.opaque != NULL:                    # NVDEC: a mapped surface, the display area at the crop
        sync = <FrameSync *>frame.opaque
        plan.src_x, plan.src_y = <int>frame.crop_left, <int>frame.crop_top
        if format == lavu.AV_PIX_FMT_P016LE:
            format = semi_planar_format(sync.bits)
    desc = lavu.av_pix_fmt_desc_get(<AVPixelFormat>format)
    if desc == NULL:
        raise RuntimeError(f"the frame has no pixel format ({format}): it cannot be copied to the device")
    depth = desc.comp[0].depth
    plan.bits = sync.bits if sync != NULL and sync.bits > 8 else depth
    if frame.format != lavu.AV_PIX_FMT_CUDA and sync == NULL and kernel_yuv(desc):
        if desc.log2_chroma_w == 1 and desc.comp[2].plane == 2:
            plan.kind = PACK_420
            format = semi_planar_format(depth)
        elif desc.log2_chroma_w == 0 and depth > 8:
            plan.kind = WIDEN_444
            format = lavu.AV_PIX_FMT_YUV444P16LE
        if depth > 8:
            plan.shift = 16 - depth - desc.comp[0].shift
    if picture_layout(format, width, height, &plan.layout) < 0:
        raise RuntimeError(f"a {format_name(format)} frame of {width}x{height} cannot be copied to the device")
    for p in range(plan.layout.num_planes):
        plan.pitches[p] = aligned(plan.layout.row_bytes[p])
        plan.offsets[p] = offset
        offset += plan.pitches[p] * plan.layout.rows[p]
    plan.total = offset
    return 0


cdef bint kernel_yuv(const AVPixFmtDescriptor *desc) noexcept nogil:
    """Planar 3-component little-endian YUV of 8 to 16 bits, 4:2:0 (its Cb and Cr in planes of their
    own) or 4:4:4: what the host copy turns into a surface format."""
    cdef int k, depth = desc.comp[0].depth
    if desc.nb_components != 3 or not (desc.flags & lavu.AV_PIX_FMT_FLAG_PLANAR):
        return False
    if desc.flags & (lavu.AV_PIX_FMT_FLAG_BE | lavu.AV_PIX_FMT_FLAG_PAL | lavu.AV_PIX_FMT_FLAG_BITSTREAM
                     | lavu.AV_PIX_FMT_FLAG_HWACCEL | lavu.AV_PIX_FMT_FLAG_RGB | lavu.AV_PIX_FMT_FLAG_ALPHA
                     | lavu.AV_PIX_FMT_FLAG_FLOAT):
        return False
    if desc.log2_chroma_w != desc.log2_chroma_h or desc.log2_chroma_w > 1 or depth < 8 or depth > 16:
        return False
    for k in range(3):
        if desc.comp[k].depth != depth or desc.comp[k].plane != k or desc.comp[k].shift != desc.comp[0].shift:
            return False
        if desc.comp[k].step != (1 if depth == 8 else 2) or desc.comp[k].offset != 0:
            return False
    return depth > 8 or desc.comp[0].shift == 0


cdef void fill_staging(const AVFrame *frame, const CopyPlan *plan, uint8_t *staging) noexcept nogil:
    """Lay a host frame out in ``staging`` as its device copy holds it."""
    cdef const PictureLayout *layout = &plan.layout
    cdef int p, r, x, width, shift = plan.shift
    cdef const uint8_t *src
    cdef const uint8_t *cb
    cdef const uint8_t *cr
    cdef uint8_t *dst
    cdef const uint16_t *src16
    cdef const uint16_t *cb16
    cdef const uint16_t *cr16
    cdef uint16_t *dst16
    cdef bint deep = plan.bits > 8 or layout.row_bytes[0] >= 2 * <size_t>layout.width
    cdef int planes = 1 if plan.kind == PACK_420 else 3
    if plan.kind == COPY:
        for p in range(layout.num_planes):
            for r in range(layout.rows[p]):
                memcpy(staging + plan.offsets[p] + r * plan.pitches[p], frame.data[p] + <Py_ssize_t>r * frame.linesize[p],
                       layout.row_bytes[p])
        return
    for p in range(planes):                     # luma (and, for 4:4:4, the chroma planes): widened
        for r in range(layout.rows[p]):
            dst = staging + plan.offsets[p] + r * plan.pitches[p]
            src = frame.data[p] + <Py_ssize_t>r * frame.linesize[p]
            if not deep:
                memcpy(dst, src, layout.row_bytes[p])
                continue
            src16 = <const uint16_t *>src
            dst16 = <uint16_t *>dst
            for x in range(layout.width):
                dst16[x] = <uint16_t>(src16[x] << shift)
    if plan.kind != PACK_420:
        return
    width = layout.row_bytes[1] // (4 if deep else 2)     # chroma samples per row, each of Cb and Cr
    for r in range(layout.rows[1]):
        dst = staging + plan.offsets[1] + r * plan.pitches[1]
        cb = frame.data[1] + <Py_ssize_t>r * frame.linesize[1]
        cr = frame.data[2] + <Py_ssize_t>r * frame.linesize[2]
        if not deep:
            for x in range(width):
                dst[2 * x] = cb[x]
                dst[2 * x + 1] = cr[x]
            continue
        dst16 = <uint16_t *>dst
        cb16 = <const uint16_t *>cb
        cr16 = <const uint16_t *>cr
        for x in range(width):
            dst16[2 * x] = <uint16_t>(cb16[x] << shift)
            dst16[2 * x + 1] = <uint16_t>(cr16[x] << shift)


cdef int copy_planes(CudaDriver driver, const CopyPlan *plan, const AVFrame *frame, bint from_device,
                     const uint8_t *staging, cu.CUdeviceptr base, cu.CUstream stream) except -1 nogil:
    """(Context pushed.) Queue one 2-D copy per plane into the storage at ``base`` on ``stream``:
    from the device frame's planes (display area at src_x, src_y), or from the host staging."""
    cdef const PictureLayout *layout = &plan.layout
    cdef cu.CUDA_MEMCPY2D copy
    cdef int p
    for p in range(layout.num_planes):
        memset(&copy, 0, sizeof(copy))
        if from_device:
            copy.srcMemoryType = cu.CU_MEMORYTYPE_DEVICE
            copy.srcDevice = (<cu.CUdeviceptr><size_t>frame.data[p]
                              + <cu.CUdeviceptr>(plan.src_y >> layout.shift_y[p]) * <cu.CUdeviceptr>frame.linesize[p]
                              + <cu.CUdeviceptr>(plan.src_x >> layout.shift_x[p]) * layout.element[p])
            copy.srcPitch = <size_t>frame.linesize[p]
        else:
            copy.srcMemoryType = cu.CU_MEMORYTYPE_HOST
            copy.srcHost = staging + plan.offsets[p]
            copy.srcPitch = plan.pitches[p]
        copy.dstMemoryType = cu.CU_MEMORYTYPE_DEVICE
        copy.dstDevice = base + plan.offsets[p]
        copy.dstPitch = plan.pitches[p]
        copy.WidthInBytes = layout.row_bytes[p]
        copy.Height = <size_t>layout.rows[p]
        check_cu_nogil(driver, driver.ptr.cuMemcpy2DAsync(&copy, stream), "cuMemcpy2DAsync")
    return 0


cdef class FrameUploader:
    """Copies the frames of one CUDA packet decoder into device memory of their own (see the
    module's documentation). ``__call__(raw_frame)`` replaces the RawFrame's AVFrame with the copy's
    and sets its ``storage_cuda``."""

    def __cinit__(self, CudaContext context not None):
        self.context = context
        self.driver = context.driver
        self.upstream_ready = NULL
        self.copied = NULL
        self.staging = NULL
        self.staging_size = 0
        context.enter()
        try:
            check_cu(self.driver, self.driver.ptr.cuEventCreate(&self.upstream_ready, cu.CU_EVENT_DISABLE_TIMING),
                     "cuEventCreate")
            check_cu(self.driver, self.driver.ptr.cuEventCreate(&self.copied, cu.CU_EVENT_DISABLE_TIMING),
                     "cuEventCreate")
        finally:
            context.exit()

    def __dealloc__(self):
        free(self.staging)
        if self.context is None or self.context.ptr == NULL:
            return
        if self.driver.ptr.cuCtxPushCurrent(self.context.ptr) != cu.CUDA_SUCCESS:
            return
        if self.upstream_ready != NULL:
            self.driver.ptr.cuEventDestroy(self.upstream_ready)
        if self.copied != NULL:
            self.driver.ptr.cuEventDestroy(self.copied)
        self.driver.ptr.cuCtxPopCurrent(NULL)

    def __call__(self, RawFrame raw not None):
        self.upload(raw)

    def __reduce__(self):
        raise TypeError("FrameUploader cannot be pickled: it holds CUDA events of this process")

    cdef int upload(self, RawFrame raw) except -1:
        cdef AVFrame *src = raw.ptr
        cdef AVFrame *copy = NULL
        cdef bint hwaccel = src.format == lavu.AV_PIX_FMT_CUDA
        cdef FrameSync *source = <FrameSync *>src.opaque if src.opaque != NULL and not hwaccel else NULL
        cdef bint from_device = hwaccel or source != NULL
        cdef CopyPlan plan
        cdef DeviceFrameMemory memory
        cdef cu.CUdeviceptr base
        cdef cu.CUstream stream
        cdef bint same_stream
        cdef AVBufferRef *buf
        cdef int p
        plan_copy(src, &plan)
        bridge = _outputs.get_bridge()
        output = _outputs.allocate((plan.total,), "uint8", device_index=self.context.index,
                                   bridge="numpy" if bridge == "jax" else bridge)
        memory = DeviceFrameMemory.__new__(DeviceFrameMemory)
        memory.context = self.context
        memory.nbytes = plan.total
        memory.sync.bits = plan.bits
        memory.sync.is_copy = True
        base = <cu.CUdeviceptr>output.address
        stream = <cu.CUstream><size_t>output.stream
        same_stream = stream == NULL or stream == LEGACY_STREAM
        if not from_device:
            if plan.total > self.staging_size:
                free(self.staging)
                self.staging = <uint8_t *>malloc(plan.total)
                self.staging_size = plan.total if self.staging != NULL else 0
                if self.staging == NULL:
                    raise MemoryError(f"cannot allocate {plan.total} bytes to stage a frame for its upload")
            with nogil:
                fill_staging(src, &plan, self.staging)
        self.context.enter()
        try:
            check_cu(self.driver, self.driver.ptr.cuEventCreate(&memory.sync.ready, cu.CU_EVENT_DISABLE_TIMING),
                     "cuEventCreate")
            check_cu(self.driver, self.driver.ptr.cuEventCreate(&memory.sync.done, cu.CU_EVENT_DISABLE_TIMING),
                     "cuEventCreate")
            with nogil:
                if source != NULL:
                    stream_wait_event(self.driver, stream, source.ready)    # NVDEC's post-processing first
                elif hwaccel and not same_stream:
                    check_cu_nogil(self.driver, self.driver.ptr.cuEventRecord(self.upstream_ready, LEGACY_STREAM),
                                   "cuEventRecord")
                    stream_wait_event(self.driver, stream, self.upstream_ready)
                copy_planes(self.driver, &plan, src, from_device, self.staging, base, stream)
                if source != NULL:
                    # The surface is unmapped once `done` has passed; an earlier reader on another
                    # stream is kept in it (as the converter keeps it).
                    if source.readers > 0 and source.done_stream != stream:
                        stream_wait_event(self.driver, stream, source.done)
                    check_cu_nogil(self.driver, self.driver.ptr.cuEventRecord(source.done, stream), "cuEventRecord")
                    source.done_stream = stream
                    source.readers += 1
                elif hwaccel and not same_stream:
                    check_cu_nogil(self.driver, self.driver.ptr.cuEventRecord(self.copied, stream), "cuEventRecord")
                    stream_wait_event(self.driver, LEGACY_STREAM, self.copied)
                check_cu_nogil(self.driver, self.driver.ptr.cuEventRecord(memory.sync.ready, stream), "cuEventRecord")
                check_cu_nogil(self.driver, self.driver.ptr.cuEventRecord(memory.sync.done, stream), "cuEventRecord")
        finally:
            self.context.exit()
        memory.storage = output.finish()

        copy = lavu.av_frame_alloc()
        if copy == NULL:
            raise MemoryError("av_frame_alloc failed")
        buf = lavu.av_buffer_create(<uint8_t *><size_t>base, plan.total, release_memory, <void *>memory, 0)
        if buf == NULL:
            lavu.av_frame_free(&copy)
            raise MemoryError("av_buffer_create failed")
        Py_INCREF(memory)                        # the buffer's reference, dropped by release_memory
        copy.buf[0] = buf
        copy.opaque = &memory.sync
        copy.format = plan.layout.format
        copy.width = plan.layout.width
        copy.height = plan.layout.height
        for p in range(plan.layout.num_planes):
            copy.data[p] = <uint8_t *><size_t>(base + plan.offsets[p])
            copy.linesize[p] = <int>plan.pitches[p]
        copy.pts = src.pts
        copy.pkt_dts = src.pkt_dts
        copy.best_effort_timestamp = src.best_effort_timestamp
        ffcompat.tc_frame_set_duration(copy, ffcompat.tc_frame_duration(src))
        copy.flags = src.flags
        copy.colorspace = src.colorspace
        copy.color_range = src.color_range
        copy.color_primaries = src.color_primaries
        copy.color_trc = src.color_trc
        lavu.av_frame_unref(src)                 # NVDEC's surface, FFmpeg's pool frame, the host frame: released
        lavu.av_frame_move_ref(src, copy)
        lavu.av_frame_free(&copy)
        raw.storage_cuda = memory.storage
        return 0


cdef int download_frame(CudaDriver driver, const AVFrame *src, AVFrame *host) except -1 nogil:
    cdef FrameSync *sync = <FrameSync *>src.opaque
    cdef PictureLayout layout
    cdef cu.CUDA_MEMCPY2D copy
    cdef int p, ret
    if sync == NULL or not sync.is_copy or picture_layout(src.format, src.width, src.height, &layout) < 0:
        with gil:
            raise RuntimeError("the frame is not a device copy that torchcodec made: it cannot be read back")
    host.format = src.format
    host.width = src.width
    host.height = src.height
    ret = lavu.av_frame_get_buffer(host, 0)
    if ret < 0:
        with gil:
            raise MemoryError(f"cannot allocate a {src.width}x{src.height} frame on the host")
    host.colorspace = src.colorspace
    host.color_range = src.color_range
    host.color_primaries = src.color_primaries
    host.color_trc = src.color_trc
    check_cu_nogil(driver, driver.ptr.cuEventSynchronize(sync.ready), "cuEventSynchronize")
    for p in range(layout.num_planes):
        memset(&copy, 0, sizeof(copy))
        copy.srcMemoryType = cu.CU_MEMORYTYPE_DEVICE
        copy.srcDevice = <cu.CUdeviceptr><size_t>src.data[p]
        copy.srcPitch = <size_t>src.linesize[p]
        copy.dstMemoryType = cu.CU_MEMORYTYPE_HOST
        copy.dstHost = host.data[p]
        copy.dstPitch = <size_t>host.linesize[p] if p < 4 and host.linesize[p] > 0 else layout.row_bytes[p]
        copy.WidthInBytes = layout.row_bytes[p]
        copy.Height = <size_t>layout.rows[p]
        check_cu_nogil(driver, driver.ptr.cuMemcpy2D(&copy), "cuMemcpy2D")
    return 0


# ---- planes ---------------------------------------------------------------------------------------

def device_planes(RawFrame raw not None, views):
    """The planes of a device RawFrame as 2-D arrays of its storage's library, without a copy.

    ``views``: one ``(address, (rows, columns), (row stride, column stride) in bytes, dtype)`` per
    component (RawFrame's layout of its planes); the arrays view ``raw.storage_cuda`` (a torch CUDA
    tensor, a cupy array or a DeviceBuffer) at those addresses and keep it alive."""
    storage = raw.storage_cuda
    if storage is None:
        raise RuntimeError("this CUDA RawFrame has no storage (storage_cuda was cleared): its planes are gone")
    return tuple(_outputs.strided_view(storage, address, shape, strides, dtype) for address, shape, strides, dtype in views)
