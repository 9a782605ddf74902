"""Colour conversion on the GPU: decoded frames to RGB in device memory, with the kernels of
kernels/colour.cu (launch interface: include/torchcodec/kernels.h; see docs/cuda_kernels.md,
"The converter").

``CudaConverter`` implements the engine's DeviceConverter for device memory. It takes three kinds of
frames and turns each into one launch of a ``tc_convert_yuv*`` kernel on the stream set with
``set_stream`` (the output library's stream), or, with a transform plan (``set_stages``), into the
launches of the plan's resize kernels (torchcodec._cuda._transforms), which read the frame as the
colour kernels do:

- NVDEC frames (``frame.opaque`` points at the slot's ``FrameSync``): planes in device memory, the
  display area at (crop_left, crop_top). The stream waits on the device for the slot's ``ready``
  event (the map's post-processing) before the launch, and records ``done`` after it, so that the
  decoder unmaps the surface only when the kernel has read it. A frame converted again on another
  stream keeps the earlier reader: that stream first waits for ``done`` as recorded before, so
  the new record covers both reads.
- FFmpeg CUDA hwaccel frames (AV_PIX_FMT_CUDA): FFmpeg writes them on the legacy default stream,
  so the stream waits for an event recorded there before the launch, and the legacy stream waits
  for the conversion before FFmpeg may reuse the surface (no host synchronisation either way).
- Host frames (CPU decoding): 8- to 16-bit 4:2:0 and 4:4:4 YUV, planar or NV12-like, are uploaded
  plane by plane into a staging buffer on the device, then converted by the same kernels. Any other
  format is converted to RGB on the CPU by a Scaler (with the same plan), and the RGB image is
  uploaded.
- Device RawFrames of the building blocks (torchcodec._cuda._device_frame: copies in memory of
  their own, ``opaque`` at a FrameSync of theirs): read as NVDEC frames are. The few whose format
  the kernels cannot read (a 4:2:2 or RGB source decoded on the CPU, uploaded as it was) come back
  to the host (the host waits for their upload) and go the Scaler's way, as their host frame would.

The kernels give the CPU path's bytes: each frame takes the route swscale would take for it
(include/torchcodec/swscale_rgb.h), with swscale's chroma filters, computed here once per frame
geometry and kept in device memory (``filters``). Rotation (0, 90, 180, 270 degrees clockwise) is
the planes' steps: the kernels read the frame turned as the CPU turns it before converting.
Every driver call runs with the context pushed (popped again on errors) and is checked.
"""
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc
from libc.string cimport memset

from torchcodec._core._device_converter cimport DeviceConverter
from torchcodec._core._raw_frames cimport RawFrame
from torchcodec._cuda._device_frame cimport download_frame
from torchcodec._cuda._driver cimport (CudaContext, CudaDriver, CudaModule, FrameSync, check_cu, check_cu_nogil,
                                            launch_kernel, stream_wait_event)
from torchcodec._cuda._scratch cimport (scratch_follow, scratch_free, scratch_init, scratch_read, scratch_take,
                                        scratch_upload)
from torchcodec._cuda._transforms cimport CudaTransforms, cached_module
from torchcodec._cuda.kernels cimport (TC_CHROMA_420, TC_CHROMA_444, TC_KERNEL_BLOCK_X, TC_KERNEL_BLOCK_Y,
                                       TC_ROUTE_TABLE_RGB48, TC_ROUTE_X86_RGB24, tc_copy_params, tc_sws_coeffs_for,
                                       tc_sws_filter_table, tc_sws_route, tc_yuv_to_rgb_params)
from torchcodec._core._scaler cimport Scaler
from torchcodec._cuda cimport cuda as cu
from torchcodec._cuda cimport ffnvcodec   # the C definitions of the driver's tables
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg.avutil cimport AVFrame, AVHWFramesContext, AVPixelFormat, AVPixFmtDescriptor


# The colour kernels, in the order of CudaConverter.colour_kernels: index 2 * (16-bit samples) + as_float.
COLOUR_KERNELS = (b"tc_convert_yuv8_to_rgb8", b"tc_convert_yuv8_to_rgbf",
                  b"tc_convert_yuv16_to_rgb8", b"tc_convert_yuv16_to_rgbf")
# The legacy default stream, where FFmpeg's CUDA hwaccel writes its frames.
cdef cu.CUstream LEGACY_STREAM = <cu.CUstream><size_t>cu.TC_STREAM_LEGACY
# Pitch alignment of the planes in the staging buffer (what cuMemAllocPitch would choose).
cdef size_t STAGING_PITCH_ALIGN = 256

def _modules_for(CudaContext context):
    """The "colour" and "copy" kernel modules of ``context``, loaded once per context (the NVENC and
    nvJPEG glue launch kernels of theirs too)."""
    return cached_module(context, "colour"), cached_module(context, "copy")


cdef struct Layout:
    # How the colour kernels read a pixel format; chroma == -1 when they cannot.
    int chroma              # TC_CHROMA_*
    int interleaved         # Cb Cr pairs in plane 1 (NV12, P010, P016)
    int size                # bytes per sample: 1, or 2 (9- to 16-bit formats)
    int depth               # bits per sample
    int shift               # bits below a sample in its 16-bit word (6 for P010)
    int log2_chroma         # 1 for 4:2:0, 0 for 4:4:4
    int num_planes


cdef Layout layout_of(int pix_fmt) noexcept nogil:
    """Read ``pix_fmt``'s descriptor: 3-component little-endian YUV, 4:2:0 (planar, or Cb Cr
    interleaved as NV12/P010/P016) or 4:4:4 planar, 8 to 16 bits, is what the kernels read."""
    cdef Layout layout
    cdef const AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(<AVPixelFormat>pix_fmt)
    cdef int depth, size, k
    layout.chroma = -1
    if desc == NULL or desc.nb_components != 3 or not (desc.flags & lavu.AV_PIX_FMT_FLAG_PLANAR):
        return layout
    if desc.flags & (lavu.AV_PIX_FMT_FLAG_BE | lavu.AV_PIX_FMT_FLAG_PAL | lavu.AV_PIX_FMT_FLAG_BITSTREAM
                     | lavu.AV_PIX_FMT_FLAG_HWACCEL | lavu.AV_PIX_FMT_FLAG_RGB | lavu.AV_PIX_FMT_FLAG_ALPHA):
        return layout
    if desc.log2_chroma_w != desc.log2_chroma_h or desc.log2_chroma_w > 1:
        return layout
    depth = desc.comp[0].depth
    if depth < 8 or depth > 16 or (depth == 8 and desc.comp[0].shift != 0):
        return layout
    size = 1 if depth == 8 else 2
    for k in range(3):
        if desc.comp[k].depth != depth or desc.comp[k].shift != desc.comp[0].shift:
            return layout
    if desc.comp[0].plane != 0 or desc.comp[0].step != size or desc.comp[1].plane != 1:
        return layout
    if desc.comp[2].plane == 1:
        # Interleaved chroma: Cb first, 4:2:0 only.
        if desc.log2_chroma_w != 1 or desc.comp[1].step != 2 * size or desc.comp[1].offset != 0 \
                or desc.comp[2].offset != size:
            return layout
        layout.interleaved = True
        layout.num_planes = 2
    else:
        if desc.comp[2].plane != 2 or desc.comp[1].step != size or desc.comp[2].step != size:
            return layout
        layout.interleaved = False
        layout.num_planes = 3
    layout.chroma = TC_CHROMA_420 if desc.log2_chroma_w else TC_CHROMA_444
    layout.size = size
    layout.depth = depth
    layout.shift = desc.comp[0].shift
    layout.log2_chroma = desc.log2_chroma_w
    return layout


cdef str format_name(int pix_fmt):
    cdef const char *name = lavu.av_get_pix_fmt_name(<AVPixelFormat>pix_fmt)
    return name.decode() if name != NULL else f"pixel format {pix_fmt}"


cdef void set_plane(tc_yuv_to_rgb_params *p, int k, uint64_t base, int64_t elem, int64_t pitch, int width,
                    int height, int rotation) noexcept nogil:
    """Point the kernel's plane ``k`` at a plane of ``width`` x ``height`` samples of ``elem`` bytes at
    ``base``, ``pitch`` bytes a row, turned ``rotation`` degrees clockwise as the Scaler's
    rotate_plane turns it: sample (x, y) of the turned plane is sample (y, H-1-x) of the plane for
    90, (W-1-x, H-1-y) for 180, (W-1-y, x) for 270."""
    if rotation == 90:
        p.planes[k], p.x_steps[k], p.y_steps[k] = base + <uint64_t>((height - 1) * pitch), -pitch, elem
    elif rotation == 180:
        p.planes[k] = base + <uint64_t>((width - 1) * elem + (height - 1) * pitch)
        p.x_steps[k], p.y_steps[k] = -elem, -pitch
    elif rotation == 270:
        p.planes[k], p.x_steps[k], p.y_steps[k] = base + <uint64_t>((width - 1) * elem), pitch, -elem
    else:
        p.planes[k], p.x_steps[k], p.y_steps[k] = base, elem, pitch


cdef void set_destination(tc_yuv_to_rgb_params *p, uint8_t *dst, Py_ssize_t row_stride, int elem) noexcept nogil:
    """Point the kernel's output at ``dst``: packed RGB rows ``row_stride`` bytes apart."""
    p.dst = <uint64_t><size_t>dst
    p.dst_row_stride, p.dst_col_stride, p.dst_chan_stride = row_stride // elem, 3, 1
    p.dst_batch_stride = 0


cdef unsigned blocks(int64_t count, int per_block) noexcept nogil:
    return <unsigned>((count + per_block - 1) // per_block)


cdef class CudaConverter(DeviceConverter):
    """Converts decoded frames to RGB in device memory of ``context``'s device (see the module doc).

    ``convert``'s ``dst`` is a device pointer to ``height`` rows of ``width`` packed RGB pixels
    (uint8, or float32 in [0, 1]), ``row_stride`` bytes apart; width x height must be the frame's
    display size after rotation, or the output size of the transform plan (``set_stages``) when
    there is one. Work is queued on the stream set
    with ``set_stream`` (default 0: the legacy default stream) and nothing waits for it on the host.
    """

    def __cinit__(self, CudaContext context not None):
        cdef int k
        self.stream = NULL
        self.upstream_ready = NULL
        self.converted = NULL
        self.staging.read = self.filters.read = NULL
        self.filters_width = self.filters_height = self.v_taps = self.h_taps = 0
        self.host_rgb = NULL
        self.host_rgb_size = 0
        self.stages = ()
        self.single_resize = False
        self.context = context
        self.driver = context.driver
        self.modules = _modules_for(context)
        colour, copy = self.modules
        for k in range(NUM_COLOUR_KERNELS):
            self.colour_kernels[k] = (<CudaModule>colour).function_ptr(COLOUR_KERNELS[k])
        self.copy_kernel = (<CudaModule>copy).function_ptr(b"tc_copy_strided")
        context.enter()
        try:
            check_cu(self.driver, self.driver.ptr.cuEventCreate(&self.upstream_ready, cu.CU_EVENT_DISABLE_TIMING),
                     "cuEventCreate")
            check_cu(self.driver, self.driver.ptr.cuEventCreate(&self.converted, cu.CU_EVENT_DISABLE_TIMING),
                     "cuEventCreate")
            scratch_init(self.driver, &self.staging)
            scratch_init(self.driver, &self.filters)
        finally:
            context.exit()

    def __dealloc__(self):
        # The last conversions that read the staging buffer and the filters are waited for before
        # they are freed; nothing here raises.
        free(self.host_rgb)
        if self.context is None or self.context.ptr == NULL or self.driver.ptr == NULL:
            return
        if self.driver.ptr.cuCtxPushCurrent(self.context.ptr) != cu.CUDA_SUCCESS:
            return
        scratch_free(self.driver, &self.staging)
        scratch_free(self.driver, &self.filters)
        if self.upstream_ready != NULL:
            self.driver.ptr.cuEventDestroy(self.upstream_ready)
        if self.converted != NULL:
            self.driver.ptr.cuEventDestroy(self.converted)
        self.driver.ptr.cuCtxPopCurrent(NULL)

    def set_stream(self, stream: int) -> None:
        """Launch the next conversions on the CUstream handle ``stream`` (0: the legacy default stream)."""
        stream = int(stream)
        if stream < 0:
            raise ValueError(f"a CUstream handle is a non-negative integer, got {stream}")
        self.stream = <cu.CUstream><size_t>stream

    def set_stages(self, stages, single_resize=False):
        """Apply the transform plan ``stages`` (as ``Scaler.set_stages`` takes it; empty for none) to
        every frame converted from now on, on the GPU (torchcodec._cuda._transforms); frames of
        formats the kernels do not read go through the CPU Scaler with the same plan. ValueError
        for a plan that is not one."""
        stages = [tuple(stage) for stage in stages]
        transforms = CudaTransforms(self.context, stages, single_resize) if stages else None
        if self.scaler is not None:
            self.scaler.set_stages(stages, single_resize)
        self.transforms, self.stages, self.single_resize = transforms, stages, single_resize

    @property
    def staging_bytes(self) -> int:
        """Size of the device buffer that host frames are uploaded into (0 until one is)."""
        return self.staging.size

    cdef int record(self, cu.CUevent event, cu.CUstream stream) except -1 nogil:
        """cuEventRecord, checked."""
        return check_cu_nogil(self.driver, self.driver.ptr.cuEventRecord(event, stream), "cuEventRecord")

    cdef int launch(self, cu.CUfunction function, unsigned grid_x, unsigned grid_y, void *params) except -1 nogil:
        """Launch ``function`` on the stream with its one by-value parameter struct ``params``."""
        return launch_kernel(self.driver, function, grid_x, grid_y, self.stream, params)

    cdef int prepare_filters(self, int width, int height) except -1 nogil:
        """Have swscale's chroma filters for 4:2:0 frames of width x height (as converted) in
        ``self.filters``, computed and uploaded on the stream when the geometry changes (else
        waited for by another stream: scratch_follow)."""
        cdef void *table = NULL
        cdef int64_t size = 0
        cdef int v_taps, h_taps
        if width == self.filters_width and height == self.filters_height:
            return scratch_follow(self.driver, self.stream, &self.filters)
        if tc_sws_filter_table(width, height, &table, &size, &v_taps, &h_taps) < 0:
            with gil:
                raise MemoryError(f"cannot compute the chroma filters of {width}x{height} frames")
        try:
            scratch_upload(self.driver, self.stream, &self.filters, table, <size_t>size)
        finally:
            free(table)
        self.filters_width, self.filters_height, self.v_taps, self.h_taps = width, height, v_taps, h_taps
        return 0

    cdef int upload_planes(self, const AVFrame *frame, int num_planes, const int *plane_rows,
                           const size_t *plane_bytes, cu.CUdeviceptr *planes, Py_ssize_t *pitches) except -1 nogil:
        """Copy the host frame's planes (``plane_rows`` rows of ``plane_bytes`` each) into the staging
        buffer, growing it when needed; fill in each plane's device address and pitch."""
        cdef size_t total = 0
        cdef size_t offsets[3]
        cdef cu.CUDA_MEMCPY2D copy
        cdef int k
        for k in range(num_planes):
            pitches[k] = <Py_ssize_t>((plane_bytes[k] + STAGING_PITCH_ALIGN - 1) & ~(STAGING_PITCH_ALIGN - 1))
            offsets[k] = total
            total += <size_t>pitches[k] * plane_rows[k]
        scratch_take(self.driver, self.stream, &self.staging, total)
        for k in range(num_planes):
            memset(&copy, 0, sizeof(copy))
            copy.srcMemoryType = cu.CU_MEMORYTYPE_HOST
            copy.srcHost = frame.data[k]
            copy.srcPitch = <size_t>frame.linesize[k]
            copy.dstMemoryType = cu.CU_MEMORYTYPE_DEVICE
            copy.dstDevice = self.staging.ptr + offsets[k]
            copy.dstPitch = <size_t>pitches[k]
            copy.WidthInBytes = plane_bytes[k]
            copy.Height = <size_t>plane_rows[k]
            check_cu_nogil(self.driver, self.driver.ptr.cuMemcpy2DAsync(&copy, self.stream),
                           "cuMemcpy2DAsync")
            planes[k] = self.staging.ptr + offsets[k]
        return 0

    cdef int convert_with_scaler(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                                 int width, int height, bint as_float) except -1 nogil:
        """A host frame in a format the kernels do not read: RGB on the CPU (the Scaler), then one
        2-D upload. From pageable memory the copy returns once the bytes are staged by the driver,
        so the host buffer can be reused at once."""
        cdef size_t row_bytes = <size_t>width * 3 * (4 if as_float else 1)
        cdef size_t size = row_bytes * height
        cdef cu.CUDA_MEMCPY2D copy
        if size > self.host_rgb_size:
            free(self.host_rgb)
            self.host_rgb = <uint8_t *>malloc(size)
            self.host_rgb_size = size if self.host_rgb != NULL else 0
            if self.host_rgb == NULL:
                with gil:
                    raise MemoryError(f"cannot allocate {size} bytes for a frame converted on the CPU")
        if self.scaler is None:
            with gil:
                self.scaler = Scaler()
                self.scaler.set_stages(self.stages, self.single_resize)
        self.scaler.convert(frame, rotation, self.host_rgb, <Py_ssize_t>row_bytes, width, height, as_float)
        memset(&copy, 0, sizeof(copy))
        copy.srcMemoryType = cu.CU_MEMORYTYPE_HOST
        copy.srcHost = self.host_rgb
        copy.srcPitch = row_bytes
        copy.dstMemoryType = cu.CU_MEMORYTYPE_DEVICE
        copy.dstDevice = <cu.CUdeviceptr><size_t>dst
        copy.dstPitch = <size_t>row_stride
        copy.WidthInBytes = row_bytes
        copy.Height = <size_t>height
        self.context.enter()
        try:
            check_cu_nogil(self.driver, self.driver.ptr.cuMemcpy2DAsync(&copy, self.stream),
                           "cuMemcpy2DAsync")
        finally:
            self.context.exit()
        return 0

    cdef int convert_downloaded(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                                int width, int height, bint as_float) except -1 nogil:
        """A device copy in a format the kernels do not read: back to the host (the host waits for
        its upload), then the Scaler's way, as the host frame it was made from would go."""
        cdef AVFrame *host = lavu.av_frame_alloc()
        if host == NULL:
            with gil:
                raise MemoryError("av_frame_alloc failed")
        try:
            self.context.enter()
            try:
                download_frame(self.driver, frame, host)
            finally:
                self.context.exit()
            self.convert_with_scaler(host, rotation, dst, row_stride, width, height, as_float)
        finally:
            lavu.av_frame_free(&host)
        return 0

    cdef int convert(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                     int width, int height, bint as_float) except -1 nogil:
        """Queue the conversion of ``frame``, turned ``rotation`` degrees clockwise, into ``dst``
        (device memory; see the class doc). Raises ValueError for a size or stride that does not
        fit, RuntimeError for hardware frames the kernels cannot read, CudaError from the driver."""
        cdef int elem = 4 if as_float else 1
        cdef bint hwaccel = frame.format == lavu.AV_PIX_FMT_CUDA
        cdef bint on_device = hwaccel or frame.opaque != NULL
        cdef FrameSync *sync = <FrameSync *>frame.opaque if frame.opaque != NULL and not hwaccel else NULL
        cdef int sw_format = frame.format
        cdef int src_w = frame.width, src_h = frame.height, crop_left = 0, crop_top = 0, k, bits, turned_w, turned_h
        cdef int source, sub, step
        cdef uint64_t base
        cdef bint same_stream = self.stream == NULL or self.stream == LEGACY_STREAM
        cdef bint filtered
        cdef Layout layout
        cdef tc_yuv_to_rgb_params params
        cdef int plane_rows[3]
        cdef size_t plane_bytes[3]
        cdef cu.CUdeviceptr planes[3]
        cdef Py_ssize_t pitches[3]
        if rotation != 0 and rotation != 90 and rotation != 180 and rotation != 270:
            with gil:
                raise ValueError(f"rotation must be 0, 90, 180 or 270, got {rotation}")
        if hwaccel:
            if frame.hw_frames_ctx == NULL:
                with gil:
                    raise RuntimeError("a CUDA hwaccel frame without hw_frames_ctx: its pixel layout is unknown")
            sw_format = (<AVHWFramesContext *>frame.hw_frames_ctx.data).sw_format
            # FFmpeg applies right and bottom cropping to hardware frames, not left and top.
            crop_left, crop_top = <int>frame.crop_left, <int>frame.crop_top
            src_w, src_h = frame.width - crop_left, frame.height - crop_top
        elif on_device:
            crop_left, crop_top = <int>frame.crop_left, <int>frame.crop_top
        turned_w, turned_h = (src_h, src_w) if rotation == 90 or rotation == 270 else (src_w, src_h)
        if self.transforms is not None:
            if width != self.transforms.out_width or height != self.transforms.out_height:
                with gil:
                    raise ValueError(f"the output is {width}x{height} but the transforms produce "
                                     f"{self.transforms.out_width}x{self.transforms.out_height}")
        elif width != turned_w or height != turned_h:
            with gil:
                raise ValueError(f"the CUDA converter writes frames at their own size: a {src_w}x{src_h} frame "
                                 f"turned by {rotation} degrees cannot fill a {width}x{height} output (it does not "
                                 f"resize without transforms)")
        if src_w <= 0 or src_h <= 0 or row_stride % elem or row_stride < <Py_ssize_t>width * 3 * elem:
            with gil:
                raise ValueError(f"the output rows ({row_stride} bytes apart) do not fit {width} RGB pixels of "
                                 f"{elem} byte(s) per channel")
        layout = layout_of(sw_format)
        if layout.chroma < 0:
            if sync != NULL and sync.is_copy:   # a device RawFrame uploaded in its own format
                return self.convert_downloaded(frame, rotation, dst, row_stride, width, height, as_float)
            if on_device:
                with gil:
                    raise RuntimeError(f"the CUDA kernels cannot convert {format_name(sw_format)} frames in device "
                                       f"memory (they read 8- to 16-bit YUV 4:2:0 and 4:4:4)")
            return self.convert_with_scaler(frame, rotation, dst, row_stride, width, height, as_float)
        for k in range(layout.num_planes):
            if frame.data[k] == NULL or frame.linesize[k] <= 0:
                if on_device:
                    with gil:
                        raise RuntimeError(f"a {format_name(sw_format)} frame in device memory lacks plane {k}")
                return self.convert_with_scaler(frame, rotation, dst, row_stride, width, height, as_float)
        # The CPU path converts the frame turned by the rotation, of `width` x `height`: so do the
        # kernels, reading the planes through rotated steps. Its samples: `bits`-bit (NVDEC's 16-bit
        # surfaces say their content's depth through their FrameSync), each a stored word >> shift.
        bits = sync.bits if sync != NULL and layout.size == 2 and 8 < sync.bits <= layout.depth else layout.depth
        memset(&params, 0, sizeof(params))
        params.width, params.height = turned_w, turned_h
        params.chroma = layout.chroma
        params.sample_bits = bits
        params.sample_shift = layout.shift + layout.depth - bits
        # Device frames (NVDEC's, FFmpeg hwaccel's, the CPU fallback's uploads into surface formats)
        # hold what the CPU decoder gives as planar YUV: swscale's routes for that; a host frame
        # takes the route of its own format (NV12 from a CPU decoder: the general scaler).
        params.route = tc_sws_route(bits, layout.chroma == TC_CHROMA_420, on_device or not layout.interleaved,
                                    turned_w, turned_h, as_float)
        params.coeffs = tc_sws_coeffs_for(frame.colorspace, frame.color_range == lavu.AVCOL_RANGE_JPEG)
        filtered = (layout.chroma == TC_CHROMA_420 and params.route != TC_ROUTE_X86_RGB24
                    and params.route != TC_ROUTE_TABLE_RGB48)
        set_destination(&params, dst, row_stride, elem)
        self.context.enter()
        try:
            if on_device:
                for k in range(layout.num_planes):
                    planes[k] = <cu.CUdeviceptr><size_t>frame.data[k]
                    pitches[k] = frame.linesize[k]
            else:
                for k in range(layout.num_planes):
                    plane_rows[k] = src_h if k == 0 else (src_h + layout.log2_chroma) >> layout.log2_chroma
                    plane_bytes[k] = <size_t>((src_w + layout.log2_chroma) >> layout.log2_chroma if k else src_w)
                    plane_bytes[k] *= layout.size * (2 if k and layout.interleaved else 1)
                self.upload_planes(frame, layout.num_planes, plane_rows, plane_bytes, planes, pitches)
            for k in range(3):
                # Plane k as the kernels read it; interleaved chroma: Cb and Cr are the pairs of plane 1.
                source = 1 if k and layout.interleaved else k
                sub = layout.log2_chroma if k else 0
                step = layout.size * (2 if source == 1 and layout.interleaved else 1)
                base = (planes[source] + <uint64_t>((crop_left >> sub) * step + (crop_top >> sub) * pitches[source])
                        + <uint64_t>(layout.size if k == 2 and layout.interleaved else 0))
                set_plane(&params, k, base, step, pitches[source], (src_w + sub) >> sub, (src_h + sub) >> sub, rotation)
            if filtered:
                self.prepare_filters(turned_w, turned_h)
                params.filters, params.v_taps, params.h_taps = self.filters.ptr, self.v_taps, self.h_taps
            if hwaccel and not same_stream:
                self.record(self.upstream_ready, LEGACY_STREAM)
                stream_wait_event(self.driver, self.stream, self.upstream_ready)
            if sync != NULL:
                # NVDEC: the map's post-processing, on the decoder's stream, must be done first.
                stream_wait_event(self.driver, self.stream, sync.ready)
            if self.transforms is not None:
                self.transforms.run(&params, self.stream, rotation, src_w, dst, row_stride, as_float)
            else:               # one thread per pixel pair
                self.launch(self.colour_kernels[2 * (layout.size == 2) + as_float],
                            blocks((width + 1) // 2, TC_KERNEL_BLOCK_X), blocks(height, TC_KERNEL_BLOCK_Y), &params)
            if sync != NULL:
                # NVDEC: the decoder unmaps the surface once `done` has passed. A read recorded on another
                # stream is kept: this stream waits for it before `done` is recorded again here.
                if sync.readers > 0 and sync.done_stream != self.stream:
                    stream_wait_event(self.driver, self.stream, sync.done)
                self.record(sync.done, self.stream)
                sync.done_stream = self.stream
                sync.readers += 1
            if not on_device:
                scratch_read(self.driver, self.stream, &self.staging)
            if filtered:
                scratch_read(self.driver, self.stream, &self.filters)
            if hwaccel and not same_stream:
                # FFmpeg writes the next frames into this surface on the legacy stream.
                self.record(self.converted, self.stream)
                stream_wait_event(self.driver, LEGACY_STREAM, self.converted)
        finally:
            self.context.exit()
        return 0

    cdef int copy_output(self, uint8_t *dst, const uint8_t *src, Py_ssize_t row_stride, int width, int height,
                         bint as_float) except -1 nogil:
        """Queue a device-to-device copy of one converted frame (tc_copy_strided) on the stream."""
        cdef tc_copy_params params
        memset(&params, 0, sizeof(params))
        params.src = <uint64_t><size_t>src
        params.dst = <uint64_t><size_t>dst
        params.src_pitch = params.dst_pitch = row_stride
        params.row_bytes = <int64_t>width * 3 * (4 if as_float else 1)
        params.rows = height
        params.count = 1
        self.context.enter()
        try:
            self.launch(self.copy_kernel, blocks(params.row_bytes, 16 * TC_KERNEL_BLOCK_X),
                        blocks(height, TC_KERNEL_BLOCK_Y), &params)
        finally:
            self.context.exit()
        return 0


def convert_raw_frame(CudaConverter converter not None, RawFrame raw_frame not None, int rotation, size_t dst,
                      Py_ssize_t row_stride, int width, int height, bint as_float):
    """``ColorConverter.convert`` on CUDA: queue the conversion of a device RawFrame, turned
    ``rotation`` degrees clockwise, into ``height`` rows of ``width`` packed RGB pixels at the device
    address ``dst``, rows ``row_stride`` bytes apart, on the converter's stream (set_stream)."""
    with nogil:
        converter.convert(raw_frame.ptr, rotation, <uint8_t *>dst, row_stride, width, height, as_float)
