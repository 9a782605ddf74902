"""Colour conversion of decoded frames into RGB, written straight into the caller's memory.

The conversion reproduces what ``ffmpeg -i X -vf format=rgb24`` does with the same FFmpeg build:
swscale with the CLI's default flags (bicubic), the frame's colour matrix and range given
explicitly, and the display rotation applied the way the CLI's autorotate does it (the YUV planes
are turned before the conversion: ``transpose=clock`` for 90°, ``hflip,vflip`` for 180°,
``transpose=cclock`` for 270°). float32 output is RGB48 divided by 65535.

Transforms (``torchcodec.transforms``) arrive as a plan of stages (see ``Stage`` in the .pxd),
in the coordinates of the rotated frame. Stage 0 crops the decoded planes by offsetting their
pointers and converts to RGB in one swscale call. With a resize, the crop is the CLI's
``crop=w:h:x:y:exact=1`` (on subsampled chroma the offset is ``x >> log2_chroma_w``, so an odd
offset on 4:2:0 starts the chroma half a pixel early, as in the CLI) and the conversion is
SWS_BILINEAR straight to the output size (swscale widens its filter on downscale, which
antialiases), as ``crop=...:exact=1,scale=W:H:flags=bilinear+full_chroma_int,format=rgb24`` does.
A crop alone gives the pixels of the converted frame (``format=rgb24,crop=...``, what torchvision's
crop of a decoded frame gives): a slightly larger rectangle, aligned to whole chroma samples,
is converted (the CLI's bicubic conversion as above) and the crop is copied out of it. Later stages (a crop or a resize after a resize) work
on the RGB image of the stage before: a crop is a pointer offset, a resize an RGB-to-RGB bilinear
swscale call. Formats whose planes cannot be cropped by an offset (packed with subsampled chroma,
bitstream formats) and packed frames that need rotation are converted whole to RGB first.
"""
from libc.stdint cimport uint8_t, uint16_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from torchcodec._core._converter cimport FrameConverter
from torchcodec._core._error cimport check_av

from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport swscale as sws
from torchcodec._ffmpeg.avutil cimport AVFrame, AVPixelFormat, AVPixFmtDescriptor

# The flags the ffmpeg CLI gives the scale filters that it inserts (fftools: sws_flags=bicubic).
cdef int SWS_FLAGS = sws.SWS_BICUBIC
# Pixels converted beyond each edge of a crop (a multiple of every chroma subsampling), so that
# swscale's chroma interpolation (4 taps of bicubic) has the neighbours it has in the whole frame.
cdef int CROP_MARGIN = 8
# The flags of a Resize transform (the CLI's ``scale=W:H:flags=bilinear+full_chroma_int``).
# full_chroma_int interpolates chroma at the output's full width: without it swscale shares one
# chroma sample between two RGB pixels, which smears colour edges (up to 194/255 off torchvision's
# resize of the decoded frame on the test media, against 103 with it; mean 2.7 against 1.5).
cdef int RESIZE_FLAGS = sws.SWS_BILINEAR | sws.SWS_FULL_CHR_H_INT


cdef void rotate_plane(const uint8_t *src, Py_ssize_t src_stride, uint8_t *dst, Py_ssize_t dst_stride,
                       int width, int height, int elem, int rotation) noexcept nogil:
    """Turn a plane of ``width`` x ``height`` elements of ``elem`` bytes clockwise by ``rotation``."""
    cdef int r, c
    cdef const uint8_t *s
    cdef uint8_t *d
    if rotation == 90:            # dst (width rows x height cols): dst[r][c] = src[height-1-c][r]
        for r in range(width):
            d = dst + r * dst_stride
            for c in range(height):
                memcpy(d + c * elem, src + (height - 1 - c) * src_stride + r * elem, elem)
    elif rotation == 270:         # dst[r][c] = src[c][width-1-r]
        for r in range(width):
            d = dst + r * dst_stride
            s = src + (width - 1 - r) * elem
            for c in range(height):
                memcpy(d + c * elem, s + c * src_stride, elem)
    else:                         # 180: dst[r][c] = src[height-1-r][width-1-c]
        for r in range(height):
            d = dst + r * dst_stride
            s = src + (height - 1 - r) * src_stride
            for c in range(width):
                memcpy(d + c * elem, s + (width - 1 - c) * elem, elem)


cdef bint has_rotatable_planes(const AVPixFmtDescriptor *desc) noexcept nogil:
    """Planar and semi-planar formats can be turned plane by plane, element by element."""
    cdef int i
    if desc == NULL or not (desc.flags & lavu.AV_PIX_FMT_FLAG_PLANAR):
        return False
    if desc.flags & (lavu.AV_PIX_FMT_FLAG_BITSTREAM | lavu.AV_PIX_FMT_FLAG_PAL | lavu.AV_PIX_FMT_FLAG_HWACCEL):
        return False
    return True


cdef bint has_croppable_planes(const AVPixFmtDescriptor *desc) noexcept nogil:
    """Formats whose crop is an offset of each plane's pointer (not packed with subsampled chroma)."""
    if desc == NULL or desc.flags & (lavu.AV_PIX_FMT_FLAG_BITSTREAM | lavu.AV_PIX_FMT_FLAG_HWACCEL):
        return False
    return bool(desc.flags & lavu.AV_PIX_FMT_FLAG_PLANAR) or (desc.log2_chroma_w == 0 and desc.log2_chroma_h == 0)


cdef int plane_count(const AVPixFmtDescriptor *desc) noexcept nogil:
    cdef int comp, n = 0
    for comp in range(desc.nb_components):
        n = max(n, desc.comp[comp].plane + 1)
    return n


cdef int plane_step(const AVPixFmtDescriptor *desc, int plane) noexcept nogil:
    """Bytes between horizontally adjacent elements of ``plane``."""
    cdef int comp, elem = 1
    for comp in range(desc.nb_components):
        if desc.comp[comp].plane == plane:
            elem = max(elem, desc.comp[comp].step)
    return elem


cdef Py_ssize_t padded_row(int width, int bpp) noexcept nogil:
    """Row stride of internal RGB buffers: room for swscale's SIMD writes past the width."""
    return ((<Py_ssize_t>width + 64) * bpp + 63) & ~(<Py_ssize_t>63)


cdef size_t padded_size(Py_ssize_t stride, int height) noexcept nogil:
    return <size_t>stride * (height + 1)


cdef void copy_rows(uint8_t *dst, Py_ssize_t dst_stride, const uint8_t *src, Py_ssize_t src_stride,
                    size_t row_bytes, int height) noexcept nogil:
    cdef int r
    for r in range(height):
        memcpy(dst + r * dst_stride, src + r * src_stride, row_bytes)


cdef bint is_chroma_plane(const AVPixFmtDescriptor *desc, int plane) noexcept nogil:
    return (plane == 1 or plane == 2) and not (desc.flags & lavu.AV_PIX_FMT_FLAG_RGB)


cdef class Scaler(FrameConverter):
    def __cinit__(self):
        cdef int i
        self.ptr = NULL
        self.rotated = NULL
        self.view = lavu.av_frame_alloc()
        for i in range(MAX_STAGES):
            self.stage_ctx[i] = NULL
        for i in range(NUM_BUFFERS):
            self.buffers[i] = NULL
            self.buffer_sizes[i] = 0
        self.colorspace = -1
        self.color_range = -1
        self.num_stages = 0
        if self.view == NULL:
            raise MemoryError("av_frame_alloc failed")

    def __dealloc__(self):
        cdef int i
        sws.sws_freeContext(self.ptr)
        for i in range(MAX_STAGES):
            sws.sws_freeContext(self.stage_ctx[i])
        lavu.av_frame_free(&self.rotated)
        lavu.av_frame_free(&self.view)       # its planes are borrowed: only the AVFrame is freed
        for i in range(NUM_BUFFERS):
            free(self.buffers[i])

    def set_stages(self, stages):
        """Set the transform plan: a sequence of (x, y, crop_w, crop_h, out_w, out_h, resize) stages
        (see ``Stage``); empty for none. Stage k > 0 must crop within the output of stage k - 1;
        stage 0's crop is checked against each frame (after rotation) when it is converted.
        """
        cdef Stage plan[MAX_STAGES]
        cdef int k, prev_w = 0, prev_h = 0
        stages = list(stages)
        if len(stages) > MAX_STAGES:
            raise ValueError(f"at most {MAX_STAGES} transform stages are supported, got {len(stages)}")
        for k, stage in enumerate(stages):
            x, y, crop_w, crop_h, out_w, out_h, resize = stage
            if x < 0 or y < 0 or crop_w <= 0 or crop_h <= 0 or out_w <= 0 or out_h <= 0:
                raise ValueError(f"transform stage {k} has a negative offset or an empty size: {stage}")
            if not resize and (out_w != crop_w or out_h != crop_h):
                raise ValueError(f"transform stage {k} changes the size without a resize: {stage}")
            if k > 0 and (x + crop_w > prev_w or y + crop_h > prev_h):
                raise ValueError(f"transform stage {k} crops outside the {prev_w}x{prev_h} output of stage {k - 1}")
            plan[k].x, plan[k].y, plan[k].crop_w, plan[k].crop_h = x, y, crop_w, crop_h
            plan[k].out_w, plan[k].out_h, plan[k].resize = out_w, out_h, bool(resize)
            prev_w, prev_h = out_w, out_h
        for k in range(len(stages)):
            self.stages[k] = plan[k]
        self.num_stages = len(stages)

    cdef uint8_t *get_buffer(self, int which, size_t size) except NULL nogil:
        """Scratch buffer ``which`` with at least ``size`` bytes. 0: RGB before an RGB rotation;
        1: RGB48 before float conversion; 2 and 3: outputs of transform stages, in turn; 4: swscale's
        output on its way to memory that has no room for its over-wide writes (padded_output)."""
        if size > self.buffer_sizes[which]:
            free(self.buffers[which])
            self.buffers[which] = <uint8_t *>malloc(size)
            self.buffer_sizes[which] = size if self.buffers[which] != NULL else 0
            if self.buffers[which] == NULL:
                with gil:
                    raise MemoryError(f"cannot allocate {size} bytes for colour conversion")
        return self.buffers[which]

    cdef const AVFrame *rotate_frame(self, const AVFrame *frame, int rotation) except NULL nogil:
        """The frame turned by ``rotation`` (into self.rotated, whose buffer is reused)."""
        cdef const AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(<AVPixelFormat>frame.format)
        cdef int out_w = frame.height if rotation != 180 else frame.width
        cdef int out_h = frame.width if rotation != 180 else frame.height
        cdef int plane, w, h
        if (self.rotated == NULL or self.rotated.width != out_w or self.rotated.height != out_h
                or self.rotated.format != frame.format):
            lavu.av_frame_free(&self.rotated)
            self.rotated = lavu.av_frame_alloc()
            if self.rotated == NULL:
                with gil:
                    raise MemoryError("av_frame_alloc failed")
            self.rotated.width = out_w
            self.rotated.height = out_h
            self.rotated.format = frame.format
            if lavu.av_frame_get_buffer(self.rotated, 0) < 0:
                lavu.av_frame_free(&self.rotated)
                with gil:
                    raise MemoryError(f"cannot allocate a {out_w}x{out_h} frame for rotation")
        for plane in range(plane_count(desc)):
            w, h = frame.width, frame.height
            if is_chroma_plane(desc, plane):
                w = -((-w) >> desc.log2_chroma_w)       # AV_CEIL_RSHIFT
                h = -((-h) >> desc.log2_chroma_h)
            rotate_plane(frame.data[plane], frame.linesize[plane], self.rotated.data[plane],
                         self.rotated.linesize[plane], w, h, plane_step(desc, plane), rotation)
        self.rotated.colorspace = frame.colorspace
        self.rotated.color_range = frame.color_range
        return self.rotated

    cdef const AVFrame *crop_frame(self, const AVFrame *frame, const Stage *stage) except NULL nogil:
        """``frame`` cropped to ``stage``'s rectangle (into self.view, which borrows its planes)."""
        cdef const AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(<AVPixelFormat>frame.format)
        cdef int plane, x, y
        if stage.x + stage.crop_w > frame.width or stage.y + stage.crop_h > frame.height:
            with gil:
                raise RuntimeError(f"cannot crop {stage.crop_w}x{stage.crop_h} at ({stage.x}, {stage.y}) from a "
                                   f"{frame.width}x{frame.height} frame (did the video change size?)")
        for plane in range(8):
            self.view.data[plane] = frame.data[plane]
            self.view.linesize[plane] = frame.linesize[plane]
        for plane in range(plane_count(desc)):
            x, y = stage.x, stage.y
            if is_chroma_plane(desc, plane):
                x >>= desc.log2_chroma_w
                y >>= desc.log2_chroma_h
            self.view.data[plane] = (frame.data[plane] + <Py_ssize_t>y * frame.linesize[plane]
                                     + <Py_ssize_t>x * plane_step(desc, plane))
        self.view.width = stage.crop_w
        self.view.height = stage.crop_h
        self.view.format = frame.format
        self.view.colorspace = frame.colorspace
        self.view.color_range = frame.color_range
        return self.view

    cdef uint8_t *padded_output(self, Py_ssize_t *stride, int width, int height, int bpp) except NULL nogil:
        """Where swscale writes ``height`` rows of ``width`` pixels when the destination is not padded.

        swscale's SIMD code writes whole blocks of pixels: past the end of a row (8 or more pixels
        when the width is not a multiple of 16; one pixel for odd widths), which in tight memory
        such as a numpy array runs into the next frame or past the allocation, and with a stride
        just wide enough it leaves the last pixels unwritten. Widths that are multiples of 32 are
        written in place; others go through this buffer (and one copy of the rows).
        """
        stride[0] = padded_row(width, bpp)
        return self.get_buffer(4, padded_size(stride[0], height))

    cdef int scale(self, const AVFrame *frame, uint8_t *dst, Py_ssize_t row_stride, int width, int height,
                   AVPixelFormat dst_format, int flags, bint padded) except -1 nogil:
        """swscale ``frame`` into ``dst`` (``width`` x ``height`` packed pixels of ``dst_format``).

        ``padded``: ``dst`` is an internal buffer with room for swscale's over-wide writes.
        """
        cdef int bpp = 6 if dst_format == lavu.AV_PIX_FMT_RGB48 else 3
        cdef uint8_t *final_dst = dst
        cdef Py_ssize_t final_stride = row_stride
        if not padded and width % 32:
            dst = self.padded_output(&row_stride, width, height, bpp)
        cdef sws.SwsContext *ctx = sws.sws_getCachedContext(
            self.ptr, frame.width, frame.height, <AVPixelFormat>frame.format,
            width, height, dst_format, flags, NULL, NULL, NULL)
        if ctx != self.ptr:
            self.ptr = ctx              # the old context was freed, even when this one failed
            self.colorspace = -1
        if ctx == NULL:
            with gil:
                name = lavu.av_get_pix_fmt_name(<AVPixelFormat>frame.format)
                raise RuntimeError(f"swscale cannot convert {frame.width}x{frame.height} "
                                   f"{name.decode() if name != NULL else frame.format} frames to "
                                   f"{width}x{height} RGB")
        if frame.colorspace != self.colorspace or frame.color_range != self.color_range:
            # As the CLI's scale filter does: the frame's matrix for input and output, its range
            # for the input (full when JPEG range), RGB output in full range.
            coefficients = sws.sws_getCoefficients(frame.colorspace)
            sws.sws_setColorspaceDetails(ctx, coefficients, frame.color_range == lavu.AVCOL_RANGE_JPEG,
                                         coefficients, 0, 0, 1 << 16, 1 << 16)
            self.colorspace = frame.colorspace
            self.color_range = frame.color_range
        cdef uint8_t *dst_planes[4]
        cdef int dst_strides[4]
        dst_planes[0] = dst
        dst_planes[1] = dst_planes[2] = dst_planes[3] = NULL
        dst_strides[0] = <int>row_stride
        dst_strides[1] = dst_strides[2] = dst_strides[3] = 0
        cdef int rows = sws.sws_scale(ctx, <const uint8_t *const *>frame.data, frame.linesize, 0,
                                      frame.height, dst_planes, dst_strides)
        if rows < 0:
            with gil:
                check_av(rows, "sws_scale")
        if dst != final_dst:
            copy_rows(final_dst, final_stride, dst, row_stride, <size_t>width * bpp, height)
        return 0

    cdef int scale_rgb(self, int k, const uint8_t *src, Py_ssize_t src_stride, uint8_t *dst,
                       Py_ssize_t dst_stride, AVPixelFormat rgb_format, bint padded) except -1 nogil:
        """Resize as stage ``k`` says, from packed RGB at ``src`` to packed RGB at ``dst`` (bilinear).

        ``padded``: as for ``scale``.
        """
        cdef const Stage *stage = &self.stages[k]
        cdef int bpp = 6 if rgb_format == lavu.AV_PIX_FMT_RGB48 else 3
        cdef uint8_t *final_dst = dst
        cdef Py_ssize_t final_stride = dst_stride
        if not padded and stage.out_w % 32:
            dst = self.padded_output(&dst_stride, stage.out_w, stage.out_h, bpp)
        self.stage_ctx[k] = sws.sws_getCachedContext(
            self.stage_ctx[k], stage.crop_w, stage.crop_h, rgb_format,
            stage.out_w, stage.out_h, rgb_format, RESIZE_FLAGS, NULL, NULL, NULL)
        if self.stage_ctx[k] == NULL:
            with gil:
                raise RuntimeError(f"swscale cannot resize {stage.crop_w}x{stage.crop_h} RGB to "
                                   f"{stage.out_w}x{stage.out_h}")
        cdef const uint8_t *src_planes[4]
        cdef uint8_t *dst_planes[4]
        cdef int src_strides[4]
        cdef int dst_strides[4]
        src_planes[0] = src
        dst_planes[0] = dst
        src_planes[1] = src_planes[2] = src_planes[3] = NULL
        dst_planes[1] = dst_planes[2] = dst_planes[3] = NULL
        src_strides[0] = <int>src_stride
        dst_strides[0] = <int>dst_stride
        src_strides[1] = src_strides[2] = src_strides[3] = 0
        dst_strides[1] = dst_strides[2] = dst_strides[3] = 0
        cdef int rows = sws.sws_scale(self.stage_ctx[k], src_planes, src_strides, 0, stage.crop_h,
                                      dst_planes, dst_strides)
        if rows < 0:
            with gil:
                check_av(rows, "sws_scale")
        if dst != final_dst:
            copy_rows(final_dst, final_stride, dst, dst_stride, <size_t>stage.out_w * bpp, stage.out_h)
        return 0

    cdef int to_rgb(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                    int width, int height, AVPixelFormat rgb_format, bint padded) except -1 nogil:
        """Write ``frame``, turned by ``rotation``, as ``height`` x ``width`` packed ``rgb_format``.

        ``padded``: as for ``scale``.
        """
        cdef int rgb_w = width, rgb_h = height, bpp = 6 if rgb_format == lavu.AV_PIX_FMT_RGB48 else 3
        cdef Py_ssize_t rgb_stride
        cdef uint8_t *rgb
        if not rotation:
            return self.scale(frame, dst, row_stride, width, height, rgb_format, SWS_FLAGS, padded)
        if has_rotatable_planes(lavu.av_pix_fmt_desc_get(<AVPixelFormat>frame.format)):
            return self.scale(self.rotate_frame(frame, rotation), dst, row_stride, width, height, rgb_format,
                              SWS_FLAGS, padded)
        # Packed input: convert first, then turn the RGB image.
        if rotation != 180:
            rgb_w, rgb_h = height, width
        rgb_stride = padded_row(rgb_w, bpp)
        rgb = self.get_buffer(0, padded_size(rgb_stride, rgb_h))
        self.scale(frame, rgb, rgb_stride, rgb_w, rgb_h, rgb_format, SWS_FLAGS, True)
        rotate_plane(rgb, rgb_stride, dst, row_stride, rgb_w, rgb_h, bpp, rotation)
        return 0

    cdef bint crop_aligned(self, const AVFrame *frame, const Stage *stage, uint8_t *dst, Py_ssize_t row_stride,
                           AVPixelFormat rgb_format) except -1 nogil:
        """A crop (no resize) of subsampled planes: convert a rectangle around it, whose edges are
        whole chroma samples and CROP_MARGIN pixels beyond the crop (or the frame's edges), then
        copy the crop out of that. swscale's chroma interpolation then sees the same neighbours as
        in the whole frame, so the pixels are those of the whole frame's conversion, as
        torchvision's crop of a decoded frame gives (frames of odd size are converted whole).
        False (nothing done) for formats without subsampled chroma, whose crop is exact as it is.
        """
        cdef const AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(<AVPixelFormat>frame.format)
        cdef int bpp = 6 if rgb_format == lavu.AV_PIX_FMT_RGB48 else 3
        cdef int mask_w = (1 << desc.log2_chroma_w) - 1, mask_h = (1 << desc.log2_chroma_h) - 1
        cdef Stage region
        cdef Py_ssize_t region_stride
        cdef uint8_t *rgb
        if mask_w == 0 and mask_h == 0:
            return False
        if frame.width & mask_w or frame.height & mask_h:
            # Odd sizes: the chroma planes are not exactly half as large, so swscale's chroma
            # scale factor (and its filter phases) depends on the rectangle: convert it all.
            region.x, region.y, region.crop_w, region.crop_h = 0, 0, frame.width, frame.height
        else:
            region.x = max(0, (stage.x & ~mask_w) - CROP_MARGIN)
            region.y = max(0, (stage.y & ~mask_h) - CROP_MARGIN)
            region.crop_w = min(((stage.x + stage.crop_w + mask_w) & ~mask_w) + CROP_MARGIN, frame.width) - region.x
            region.crop_h = min(((stage.y + stage.crop_h + mask_h) & ~mask_h) + CROP_MARGIN, frame.height) - region.y
        region.out_w, region.out_h, region.resize = region.crop_w, region.crop_h, False
        region_stride = padded_row(region.crop_w, bpp)
        rgb = self.get_buffer(3, padded_size(region_stride, region.crop_h))
        self.scale(self.crop_frame(frame, &region), rgb, region_stride, region.crop_w, region.crop_h, rgb_format,
                   SWS_FLAGS, True)
        copy_rows(dst, row_stride, rgb + (stage.y - region.y) * region_stride + (stage.x - region.x) * bpp,
                  region_stride, <size_t>stage.crop_w * bpp, stage.crop_h)
        return True

    cdef int run_stages(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                        AVPixelFormat rgb_format, bint padded) except -1 nogil:
        """Write ``frame``, turned by ``rotation`` and transformed by the plan, into ``dst``.

        ``padded``: as for ``scale``. The stages' own outputs go to padded internal buffers.
        """
        cdef const AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(<AVPixelFormat>frame.format)
        cdef int bpp = 6 if rgb_format == lavu.AV_PIX_FMT_RGB48 else 3
        cdef int k, first, n = self.num_stages
        cdef int rotated_w = frame.height if rotation == 90 or rotation == 270 else frame.width
        cdef int rotated_h = frame.width if rotation == 90 or rotation == 270 else frame.height
        cdef const Stage *stage = &self.stages[0]
        cdef const AVFrame *src = frame
        cdef const uint8_t *corner
        cdef uint8_t *out
        cdef Py_ssize_t out_stride, in_stride
        cdef bint last
        if has_croppable_planes(desc) and (rotation == 0 or has_rotatable_planes(desc)):
            if rotation:
                src = self.rotate_frame(frame, rotation)
            if n == 1:
                out, out_stride = dst, row_stride
            else:
                out_stride = padded_row(stage.out_w, bpp)
                out = self.get_buffer(2, padded_size(out_stride, stage.out_h))
            if stage.resize or not self.crop_aligned(src, stage, out, out_stride, rgb_format):
                self.scale(self.crop_frame(src, stage), out, out_stride, stage.out_w, stage.out_h, rgb_format,
                           RESIZE_FLAGS if stage.resize else SWS_FLAGS, padded or n > 1)
            first = 1
        else:
            if stage.x + stage.crop_w > rotated_w or stage.y + stage.crop_h > rotated_h:
                with gil:
                    raise RuntimeError(f"cannot crop {stage.crop_w}x{stage.crop_h} at ({stage.x}, {stage.y}) from "
                                       f"a {rotated_w}x{rotated_h} frame (did the video change size?)")
            out_stride = padded_row(rotated_w, bpp)
            out = self.get_buffer(3, padded_size(out_stride, rotated_h))
            self.to_rgb(frame, rotation, out, out_stride, rotated_w, rotated_h, rgb_format, True)
            first = 0
        for k in range(first, n):
            stage = &self.stages[k]
            in_stride = out_stride
            corner = out + <Py_ssize_t>stage.y * in_stride + <Py_ssize_t>stage.x * bpp
            last = k == n - 1
            if last:
                out, out_stride = dst, row_stride
            else:
                out_stride = padded_row(stage.out_w, bpp)
                out = self.get_buffer(2 + k % 2, padded_size(out_stride, stage.out_h))
            if stage.resize:
                self.scale_rgb(k, corner, in_stride, out, out_stride, rgb_format, padded or not last)
            else:
                copy_rows(out, out_stride, corner, in_stride, <size_t>stage.crop_w * bpp, stage.crop_h)
        return 0

    cdef int convert(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                     int width, int height, bint as_float) except -1 nogil:
        """Write ``frame``, turned by ``rotation`` (clockwise degrees) and transformed by the plan
        (if any), as ``height`` x ``width`` RGB: uint8 when ``as_float`` is false, else float32 in
        [0, 1]. With a plan, ``width`` x ``height`` must be its output size. Nothing is written
        outside the ``width`` pixels of each row.
        """
        cdef AVPixelFormat rgb_format = lavu.AV_PIX_FMT_RGB48 if as_float else lavu.AV_PIX_FMT_RGB24
        cdef uint8_t *rgb = dst
        cdef Py_ssize_t rgb_stride = row_stride
        cdef Py_ssize_t r, c, n
        cdef float *out_row
        cdef const uint16_t *in_row
        cdef const Stage *last
        if self.num_stages:
            last = &self.stages[self.num_stages - 1]
            if width != last.out_w or height != last.out_h:
                with gil:
                    raise ValueError(f"the output is {width}x{height} but the transforms produce "
                                     f"{last.out_w}x{last.out_h}")
        if as_float:
            rgb_stride = padded_row(width, 6)
            rgb = self.get_buffer(1, padded_size(rgb_stride, height))
        if self.num_stages:
            self.run_stages(frame, rotation, rgb, rgb_stride, rgb_format, as_float)
        else:
            self.to_rgb(frame, rotation, rgb, rgb_stride, width, height, rgb_format, as_float)
        if as_float:
            n = <Py_ssize_t>width * 3
            for r in range(height):
                in_row = <const uint16_t *>(rgb + r * rgb_stride)
                out_row = <float *>(dst + r * row_stride)
                for c in range(n):
                    out_row[c] = <float>in_row[c] / <float>65535.0
        return 0
