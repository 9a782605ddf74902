"""Colour conversion of decoded frames into RGB, written straight into the caller's memory.

The conversion reproduces what ``ffmpeg -i X -vf format=rgb24`` does with the same FFmpeg build:
swscale with the CLI's default flags (bicubic), the frame's colour matrix and range given
explicitly, and the display rotation applied the way the CLI's autorotate does it (the YUV planes
are turned before the conversion: ``transpose=clock`` for 90°, ``hflip,vflip`` for 180°,
``transpose=cclock`` for 270°). float32 output is RGB48 divided by 65535.
"""
from libc.stdint cimport uint8_t, uint16_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from torchcodec._core._error cimport check_av
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport swscale as sws
from torchcodec._ffmpeg.avutil cimport AVFrame, AVPixelFormat, AVPixFmtDescriptor

# The flags the ffmpeg CLI gives the scale filters that it inserts (fftools: sws_flags=bicubic).
cdef int SWS_FLAGS = sws.SWS_BICUBIC


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


cdef class Scaler:
    def __cinit__(self):
        self.ptr = NULL
        self.rotated = NULL
        self.scratch = NULL
        self.scratch_size = 0
        self.colorspace = -1
        self.color_range = -1

    def __dealloc__(self):
        sws.sws_freeContext(self.ptr)
        lavu.av_frame_free(&self.rotated)
        free(self.scratch)

    cdef uint8_t *get_scratch(self, size_t size) except NULL nogil:
        if size > self.scratch_size:
            free(self.scratch)
            self.scratch = <uint8_t *>malloc(size)
            self.scratch_size = size if self.scratch != NULL else 0
            if self.scratch == NULL:
                with gil:
                    raise MemoryError(f"cannot allocate {size} bytes for colour conversion")
        return self.scratch

    cdef const AVFrame *rotate_frame(self, const AVFrame *frame, int rotation) except NULL nogil:
        """The frame turned by ``rotation`` (into self.rotated, whose buffer is reused)."""
        cdef const AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(<AVPixelFormat>frame.format)
        cdef int out_w = frame.height if rotation != 180 else frame.width
        cdef int out_h = frame.width if rotation != 180 else frame.height
        cdef int plane, comp, elem, w, h, num_planes = 0
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
        for comp in range(desc.nb_components):
            num_planes = max(num_planes, desc.comp[comp].plane + 1)
        for plane in range(num_planes):
            elem = 1
            for comp in range(desc.nb_components):
                if desc.comp[comp].plane == plane:
                    elem = max(elem, desc.comp[comp].step)
            w, h = frame.width, frame.height
            if (plane == 1 or plane == 2) and not (desc.flags & lavu.AV_PIX_FMT_FLAG_RGB):
                w = -((-w) >> desc.log2_chroma_w)       # AV_CEIL_RSHIFT
                h = -((-h) >> desc.log2_chroma_h)
            rotate_plane(frame.data[plane], frame.linesize[plane], self.rotated.data[plane],
                         self.rotated.linesize[plane], w, h, elem, rotation)
        self.rotated.colorspace = frame.colorspace
        self.rotated.color_range = frame.color_range
        return self.rotated

    cdef int scale(self, const AVFrame *frame, uint8_t *dst, Py_ssize_t row_stride, int width, int height,
                   AVPixelFormat dst_format) except -1 nogil:
        """swscale ``frame`` into ``dst`` (``width`` x ``height`` packed pixels of ``dst_format``)."""
        cdef sws.SwsContext *ctx = sws.sws_getCachedContext(
            self.ptr, frame.width, frame.height, <AVPixelFormat>frame.format,
            width, height, dst_format, SWS_FLAGS, NULL, NULL, NULL)
        if ctx == NULL:
            with gil:
                name = lavu.av_get_pix_fmt_name(<AVPixelFormat>frame.format)
                raise RuntimeError(f"swscale cannot convert {frame.width}x{frame.height} "
                                   f"{name.decode() if name != NULL else frame.format} frames to RGB")
        if ctx != self.ptr:
            self.ptr = ctx
            self.colorspace = -1
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
        return 0

    cdef int convert(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                     int width, int height, bint as_float) except -1 nogil:
        """Write ``frame``, turned by ``rotation`` (clockwise degrees), as ``height`` x ``width`` RGB.

        uint8 output when ``as_float`` is false, else float32 in [0, 1].
        """
        cdef const AVFrame *src = frame
        cdef const AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(<AVPixelFormat>frame.format)
        cdef bint rotate_rgb = False
        cdef int rgb_w = width, rgb_h = height, bpp = 6 if as_float else 3
        cdef uint8_t *rgb = dst
        cdef uint8_t *rgb48
        cdef Py_ssize_t rgb_stride = row_stride
        cdef Py_ssize_t r, c, n
        cdef float *out_row
        cdef const uint16_t *in_row
        if rotation:
            if has_rotatable_planes(desc):
                src = self.rotate_frame(frame, rotation)
            else:
                rotate_rgb = True       # packed input: convert first, then turn the RGB image
                if rotation != 180:
                    rgb_w, rgb_h = height, width
        if rotate_rgb or as_float:
            rgb_stride = <Py_ssize_t>rgb_w * bpp
            rgb = self.get_scratch(<size_t>rgb_stride * rgb_h * (2 if (rotate_rgb and as_float) else 1))
        self.scale(src, rgb, rgb_stride, rgb_w, rgb_h,
                   lavu.AV_PIX_FMT_RGB48 if as_float else lavu.AV_PIX_FMT_RGB24)
        if rotate_rgb:
            if as_float:
                rgb48 = rgb + <size_t>rgb_stride * rgb_h
                rotate_plane(rgb, rgb_stride, rgb48, <Py_ssize_t>width * bpp, rgb_w, rgb_h, bpp, rotation)
                rgb = rgb48
                rgb_stride = <Py_ssize_t>width * bpp
            else:
                rotate_plane(rgb, rgb_stride, dst, row_stride, rgb_w, rgb_h, bpp, rotation)
                return 0
        if as_float:
            n = <Py_ssize_t>width * 3
            for r in range(height):
                in_row = <const uint16_t *>(rgb + r * rgb_stride)
                out_row = <float *>(dst + r * row_stride)
                for c in range(n):
                    out_row[c] = <float>in_row[c] / <float>65535.0
        return 0
