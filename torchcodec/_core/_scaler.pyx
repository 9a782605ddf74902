"""Colour conversion of decoded frames into RGB, written straight into the caller's memory.

The conversion reproduces what ``ffmpeg -i X -vf format=rgb24`` does with the same FFmpeg build:
swscale with the CLI's default flags (bicubic), the frame's colour matrix and range given
explicitly, and the display rotation applied the way the CLI's autorotate does it (the YUV planes
are turned before the conversion: ``transpose=clock`` for 90°, ``hflip,vflip`` for 180°,
``transpose=cclock`` for 270°). float32 output is RGB48 divided by 65535.

Two conversions that swscale makes are computed here instead, in one pass and exactly as swscale
computes them: 8-bit 4:2:0 and 4:2:2 frames (include/torchcodec/yuv8_rgb.h: swscale's x86
converter, 32 pixels a step with AVX2 where swscale takes 8) and 9- to 12-bit 4:2:0 frames
(hbd_rgb.h: swscale's general scaler, for which it has no fast path). Each is used only for a
geometry, format, matrix and range where it gave swscale's bytes on a frame of random samples
(fast_path_for, agrees_with_swscale), and writes exactly the frame's width, so that tight memory
needs no copy.

Transforms (``torchcodec.transforms``) arrive as a plan of stages (see ``Stage`` in the .pxd), in
the coordinates of the rotated frame, and are applied as TorchCodec 0.17 applies them: to the RGB
image of the converted frame, in order (its filter graph ``format=rgb24,crop=w:h:x:y:exact=1,
scale=W:H:flags=bilinear``). A crop is a window of that image; only the part of the frame around
it is converted (whole chroma samples and CROP_MARGIN pixels beyond it, so that swscale's chroma
interpolation sees the neighbours it has in the whole frame and the pixels are those of the whole
frame's conversion). A resize is an RGB-to-RGB bilinear swscale call configured as the filter's
``scale`` configures it (the BT.601 matrix of its internal YUV), except in the one case where
TorchCodec resizes with its own swscale call instead of the filter graph (a single Resize of an
unrotated frame whose width and output width are multiples of 32), where the matrix is swscale's
default for RGB (BT.709's), as there. The two differ by 1 on natural images, and up to 14 on
saturated colour edges.

Such a resize to at most half the width does not hand the RGB image to swscale: swscale's first
step of it (the 14-bit Y, U, V it computes from pairs of pixels, in plain C) is reproduced in
include/torchcodec/rgb_planes.h, and a yuv422p14le context (planar GBR output when the output has
at most half the rows, for swscale's SIMD vertical filter) runs the rest, slice by slice. It is
used only where a comparison with swscale's RGB-to-RGB resize of a random image of the same
geometry and matrix gave the same bytes.
"""
from libc.stdint cimport uint8_t, uint16_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy, memset

from torchcodec._core._device_converter cimport DeviceConverter
from torchcodec._core._error cimport check_av

from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport swscale as sws
from torchcodec._ffmpeg.avutil cimport AVFrame, AVPixelFormat, AVPixFmtDescriptor

# Pixels converted beyond each edge of a crop (a multiple of every chroma subsampling), so that
# swscale's chroma interpolation (4 taps of bicubic) has the neighbours it has in the whole frame.
cdef int CROP_MARGIN = 8
# The flags of a Resize transform (TorchCodec's ``scale=W:H:flags=bilinear`` on RGB).
cdef int RESIZE_FLAGS = sws.SWS_BILINEAR
# The matrix of the internal YUV of an RGB-to-RGB resize: FFmpeg's scale filter gives swscale the
# matrix of the frame's colour space, which is AVCOL_SPC_RGB for RGB frames and then falls back to
# BT.601; TorchCodec's own swscale resize asks swscale for AVCOL_SPC_RGB's coefficients.
cdef int FILTER_RESIZE_MATRIX = lavu.AVCOL_SPC_BT470BG
cdef int SWSCALE_RESIZE_MATRIX = lavu.AVCOL_SPC_RGB


cdef bint same_key(const ContextKey *a, const ContextKey *b) noexcept nogil:
    return (a.src_w == b.src_w and a.src_h == b.src_h and a.src_format == b.src_format and a.dst_w == b.dst_w
            and a.dst_h == b.dst_h and a.dst_format == b.dst_format and a.flags == b.flags
            and a.colorspace == b.colorspace and a.color_range == b.color_range)


cdef SwsContext *make_context(const ContextKey *want, bint *colorspace_refused) noexcept nogil:
    """A new swscale context for ``want``, or NULL (with ``colorspace_refused`` set when swscale made
    the context but refused its colour details)."""
    cdef const int *coefficients
    cdef SwsContext *ctx = sws.sws_getContext(want.src_w, want.src_h, <AVPixelFormat>want.src_format, want.dst_w,
                                              want.dst_h, <AVPixelFormat>want.dst_format, want.flags, NULL, NULL,
                                              NULL)
    colorspace_refused[0] = False
    if ctx == NULL:
        return NULL
    # As FFmpeg's scale filter does: one matrix for input and output, the input's range (full
    # when JPEG range), output range left to swscale (which ignores it for RGB).
    coefficients = sws.sws_getCoefficients(want.colorspace)
    if sws.sws_setColorspaceDetails(ctx, coefficients, want.color_range == lavu.AVCOL_RANGE_JPEG,
                                    coefficients, 0, 0, 1 << 16, 1 << 16) < 0:
        sws.sws_freeContext(ctx)
        colorspace_refused[0] = True
        return NULL
    return ctx


cdef SwsContext *context_for(SwsContext **slot, ContextKey *have, const ContextKey *want) except NULL nogil:
    """The swscale context in ``slot`` when it was made for ``want`` (``have`` says what it was made
    for), else a new one made for ``want``, stored in ``slot`` (the old one freed).

    A context's key is kept here rather than left to sws_getCachedContext, whose comparison sees
    the format that swscale rewrote (yuvj420p becomes yuv420p inside the context), so it frees and
    remakes the context on every call for full-range frames, and the new one can reuse the old
    one's address: colour details remembered by address were then silently lost.
    """
    cdef bint colorspace_refused
    if slot[0] != NULL and same_key(have, want):
        return slot[0]
    sws.sws_freeContext(slot[0])
    slot[0] = NULL
    cdef SwsContext *ctx = make_context(want, &colorspace_refused)
    if ctx == NULL:
        with gil:
            if colorspace_refused:
                raise RuntimeError(f"swscale cannot use colour space {want.colorspace} for "
                                   f"{pixel_format_name(want.src_format)} frames")
            raise RuntimeError(f"swscale cannot convert {want.src_w}x{want.src_h} {pixel_format_name(want.src_format)} "
                               f"frames to {want.dst_w}x{want.dst_h} {pixel_format_name(want.dst_format)}")
    slot[0] = ctx
    have[0] = want[0]
    return ctx


# Verdicts of agrees_with_swscale for each (width, height, format, matrix, range) this process has met:
# a one-pass conversion (hbd_rgb.h, yuv8_rgb.h) is used only where it gave swscale's bytes.
_fast_verdicts = {}


cdef int fast_path_bits(int pixel_format) noexcept nogil:
    """The sample depth when ``pixel_format`` is planar little-endian 4:2:0 YUV of 9 to 12 bits (the
    formats hbd_rgb.h reproduces swscale's RGB24 conversion for), else 0."""
    cdef const AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(<AVPixelFormat>pixel_format)
    cdef int i
    if desc == NULL or desc.nb_components != 3 or desc.log2_chroma_w != 1 or desc.log2_chroma_h != 1:
        return 0
    if (desc.flags & (lavu.AV_PIX_FMT_FLAG_BE | lavu.AV_PIX_FMT_FLAG_PAL | lavu.AV_PIX_FMT_FLAG_BITSTREAM
                      | lavu.AV_PIX_FMT_FLAG_HWACCEL | lavu.AV_PIX_FMT_FLAG_RGB | lavu.AV_PIX_FMT_FLAG_FLOAT
                      | lavu.AV_PIX_FMT_FLAG_ALPHA)) or not (desc.flags & lavu.AV_PIX_FMT_FLAG_PLANAR):
        return 0
    for i in range(3):
        if desc.comp[i].plane != i or desc.comp[i].step != 2 or desc.comp[i].shift != 0 or desc.comp[i].offset != 0:
            return 0
    if desc.comp[0].depth < 9 or desc.comp[0].depth > 12:
        return 0
    return desc.comp[0].depth


cdef int yuv8_chroma_shift(int pixel_format) noexcept nogil:
    """For the 8-bit formats whose RGB24 conversion yuv8_rgb.h reproduces, the shift from a row to
    its chroma row: 1 for 4:2:0, 0 for 4:2:2 (yuvj formats too: their range is the frame's, as
    swscale is told); -1 for other formats."""
    if pixel_format == lavu.AV_PIX_FMT_YUV420P or pixel_format == lavu.AV_PIX_FMT_YUVJ420P:
        return 1
    if pixel_format == lavu.AV_PIX_FMT_YUV422P or pixel_format == lavu.AV_PIX_FMT_YUVJ422P:
        return 0
    return -1


cdef bint fast_path_for(const ContextKey *want, FastPath *path) noexcept nogil:
    """Make ``path`` the one-pass form of the conversion ``want`` describes, when there is one (to
    RGB24 at the same size with the CLI's flags: from 9- to 12-bit 4:2:0 where tc_hbd_plan_new
    takes the geometry; from 8-bit 4:2:0 or 4:2:2 of even height, which swscale gives its unscaled
    converter); else False, with ``path`` empty. Whether it gives swscale's bytes is decided apart
    (agrees_with_swscale)."""
    path.hbd = NULL
    path.chroma_shift = -1
    path.width, path.height = want.src_w, want.src_h
    if (want.dst_format != lavu.AV_PIX_FMT_RGB24 or want.dst_w != want.src_w or want.dst_h != want.src_h
            or want.flags != cli_sws_flags() or want.src_w <= 0 or want.src_h <= 0):
        return False
    if yuv8_chroma_shift(want.src_format) >= 0:
        if want.src_h & 1:
            return False
        path.chroma_shift = yuv8_chroma_shift(want.src_format)
        path.bits = 8
        path.coeffs = tc_colour_coeffs_for(want.colorspace, want.color_range == lavu.AVCOL_RANGE_JPEG)
        return True
    path.bits = fast_path_bits(want.src_format)
    if path.bits:
        path.hbd = tc_hbd_plan_new(want.src_w, want.src_h, path.bits, sws.sws_getCoefficients(want.colorspace),
                                   want.color_range == lavu.AVCOL_RANGE_JPEG)
    return path.hbd != NULL


cdef void fast_path_free(FastPath *path) noexcept nogil:
    tc_hbd_plan_free(path.hbd)
    path.hbd = NULL
    path.chroma_shift = -1


cdef int vector_rows(int enabled) noexcept nogil:
    """Whether the one-pass conversions and the planes route run their AVX2 rows where the CPU has
    AVX2 (1, the default) or their plain C rows everywhere (0), as set for this module's copy of
    the headers' switches; -1 leaves it. Returns the setting before."""
    global tc_hbd_vector_code, tc_yuv8_vector_code, tc_rgb_planes_vector_code
    cdef int before = tc_hbd_vector_code
    if enabled >= 0:
        tc_hbd_vector_code = tc_yuv8_vector_code = tc_rgb_planes_vector_code = enabled
    return before


cdef void fast_rows(const FastPath *path, const uint8_t *const *src, const int *src_stride, uint8_t *dst,
                    Py_ssize_t dst_stride, uint8_t *scratch, bint streaming) noexcept nogil:
    """Convert a whole frame's planes with ``path`` into RGB24 at ``dst``, exactly path.width pixels a
    row; ``scratch``: path.width bytes for the high-bit-depth rows' chroma (unused at 8 bits).
    ``streaming``: with non-temporal stores (the rows' blocks past the caches), fenced at the end."""
    if path.hbd != NULL:
        tc_hbd_convert_rows(path.hbd, src, src_stride, dst, dst_stride, 0, path.height, scratch, streaming)
    else:
        tc_yuv8_convert_rows(&path.coeffs, path.chroma_shift, src, src_stride, path.width, dst, dst_stride, 0,
                             path.height, streaming)
    if streaming:
        tc_stream_fence()


cdef void write_table_last_column(const AVFrame *frame, uint8_t *dst, Py_ssize_t row_stride) noexcept nogil:
    """Write the last column of ``frame``'s RGB48 conversion at ``dst`` where swscale leaves it out.

    8-bit 4:2:0 frames of even height go to RGB48 through swscale's unscaled table converter, which
    writes pixels in pairs: for an odd width it never writes the last one, and the output would
    hold whatever the memory held. Here that pixel gets the value the converter's arithmetic gives
    it (swscale_rgb.h's TC_ROUTE_TABLE_RGB48, with the frame's matrix and range as swscale was
    given them), which is what the CUDA kernels write there.
    """
    cdef tc_sws_coeffs coeffs
    cdef int x = frame.width - 1, row, c
    cdef int rgb[3]
    cdef uint16_t *out
    if (frame.format != lavu.AV_PIX_FMT_YUV420P and frame.format != lavu.AV_PIX_FMT_YUVJ420P
            or not frame.width & 1 or frame.height & 1):
        return
    coeffs = tc_sws_coeffs_from(sws.sws_getCoefficients(frame.colorspace), is_full_range(frame))
    for row in range(frame.height):
        tc_sws_table_rgb(&coeffs, frame.data[0][<Py_ssize_t>row * frame.linesize[0] + x],
                         frame.data[1][<Py_ssize_t>(row >> 1) * frame.linesize[1] + x // 2],
                         frame.data[2][<Py_ssize_t>(row >> 1) * frame.linesize[2] + x // 2], rgb)
        out = <uint16_t *>(dst + row * row_stride) + 3 * x
        for c in range(3):
            out[c] = <uint16_t>(rgb[c] * 257)          # the table's 8-bit value, written twice


cdef object verdict_key(const ContextKey *want):
    """The key of _fast_verdicts for a conversion: what the comparison with swscale depends on."""
    return (want.src_w, want.src_h, want.src_format, want.colorspace, want.color_range)


cdef inline unsigned random_value(unsigned *state, unsigned top) noexcept nogil:
    """The next value of a fixed xorshift sequence over 0..top, a quarter of them 0 or top (the
    extremes, where swscale's clipping acts)."""
    state[0] ^= state[0] << 13
    state[0] ^= state[0] >> 17
    state[0] ^= state[0] << 5
    return 0 if state[0] % 8 == 0 else top if state[0] % 8 == 1 else (state[0] >> 8) % (top + 1)


cdef void fill_random_samples(AVFrame *frame, int bits) noexcept nogil:
    """Every sample of ``frame``'s three planes of planar YUV (bytes for 8 bits, else 16-bit words)
    from random_value over the depth's values."""
    cdef const AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(<AVPixelFormat>frame.format)
    cdef unsigned state = 2463534242u, top = (1u << bits) - 1
    cdef int p, x, y, w, h
    cdef uint8_t *row
    for p in range(3):
        w = frame.width if p == 0 else -((-frame.width) >> desc.log2_chroma_w)      # AV_CEIL_RSHIFT
        h = frame.height if p == 0 else -((-frame.height) >> desc.log2_chroma_h)
        for y in range(h):
            row = frame.data[p] + <Py_ssize_t>y * frame.linesize[p]
            for x in range(w):
                if bits <= 8:
                    row[x] = <uint8_t>random_value(&state, top)
                else:
                    (<uint16_t *>row)[x] = <uint16_t>random_value(&state, top)


cdef bint same_rgb_rows(const FastPath *path, SwsContext *ctx, AVFrame *frame, uint8_t *expected,
                        uint8_t *actual, uint8_t *scratch, Py_ssize_t stride) noexcept nogil:
    cdef uint8_t *dst_planes[4]
    cdef int dst_strides[4]
    cdef int y
    dst_planes[0], dst_planes[1], dst_planes[2], dst_planes[3] = expected, NULL, NULL, NULL
    dst_strides[0], dst_strides[1], dst_strides[2], dst_strides[3] = <int>stride, 0, 0, 0
    if sws.sws_scale(ctx, <const uint8_t *const *>frame.data, frame.linesize, 0, path.height,
                     dst_planes, dst_strides) != path.height:
        return False
    fast_rows(path, <const uint8_t *const *>frame.data, frame.linesize, actual, stride, scratch, False)
    for y in range(path.height):
        if memcmp(expected + y * stride, actual + y * stride, <size_t>path.width * 3) != 0:
            return False
    return True


cdef bint agrees_with_swscale(const FastPath *path, SwsContext *ctx, int pixel_format) noexcept nogil:
    """Whether ``path`` converts a frame of random samples to the bytes swscale's ``ctx`` gives.
    False too when memory or swscale fails (the caller then keeps swscale)."""
    cdef AVFrame *frame = lavu.av_frame_alloc()
    cdef Py_ssize_t stride = padded_row(path.width, 3)
    cdef uint8_t *expected = <uint8_t *>malloc(padded_size(stride, path.height))
    cdef uint8_t *actual = <uint8_t *>malloc(padded_size(stride, path.height))
    cdef uint8_t *scratch = <uint8_t *>malloc(path.width)
    cdef bint same = False
    if frame != NULL and expected != NULL and actual != NULL and scratch != NULL:
        frame.width, frame.height, frame.format = path.width, path.height, pixel_format
        if lavu.av_frame_get_buffer(frame, 0) >= 0:
            fill_random_samples(frame, path.bits)
            same = same_rgb_rows(path, ctx, frame, expected, actual, scratch, stride)
    lavu.av_frame_free(&frame)
    free(expected)
    free(actual)
    free(scratch)
    return same


cdef bint takes_planes_route(const ContextKey *want) noexcept nogil:
    """Whether swscale's resize ``want`` (RGB24 to RGB24, RESIZE_FLAGS) reads its source through
    rgb24ToUV_half, the one reproduced in rgb_planes.h: outputs at most half as wide as the input."""
    return (want.src_format == lavu.AV_PIX_FMT_RGB24 and want.dst_format == lavu.AV_PIX_FMT_RGB24
            and want.flags == RESIZE_FLAGS and want.dst_w <= want.src_w >> 1)


cdef bint planes_rows_are_vector(int colorspace) noexcept nogil:
    """Whether rgb_planes.h's rows run as AVX2 code for ``colorspace``'s matrix (its plain C rows,
    the reference and the rows' tails, are slower than swscale's own resize)."""
    cdef tc_rgb_matrix matrix
    tc_rgb_matrix_init(&matrix, sws.sws_getCoefficients(colorspace))
    return tc_rgb_planes_vectors(&matrix)


cdef bint is_full_range(const AVFrame *frame) noexcept nogil:
    """Whether swscale converts ``frame`` as full range: the range given to it (make_context; a
    yuvj format without AVCOL_RANGE_JPEG is converted as limited range, its given range)."""
    return frame.color_range == lavu.AVCOL_RANGE_JPEG


cdef void frame_key(const AVFrame *frame, int width, int height, int dst_format, ContextKey *key) noexcept nogil:
    """The key of the swscale context that converts ``frame`` to width x height ``dst_format``, as
    the CLI's scale filter does: bicubic, the frame's matrix and range."""
    key.src_w, key.src_h, key.src_format = frame.width, frame.height, frame.format
    key.dst_w, key.dst_h, key.dst_format = width, height, dst_format
    key.flags, key.colorspace, key.color_range = cli_sws_flags(), frame.colorspace, frame.color_range


cdef void resize_key(const Stage *stage, int rgb_format, int colorspace, ContextKey *key) noexcept nogil:
    """The key of the swscale context of ``stage``'s RGB-to-RGB resize (``colorspace``'s matrix for
    swscale's internal YUV)."""
    key.src_w, key.src_h, key.src_format = stage.crop_w, stage.crop_h, rgb_format
    key.dst_w, key.dst_h, key.dst_format = stage.out_w, stage.out_h, rgb_format
    key.flags, key.colorspace, key.color_range = RESIZE_FLAGS, colorspace, lavu.AVCOL_RANGE_UNSPECIFIED


cdef void planes_key(ContextKey *key) noexcept nogil:
    """Turn the key of an RGB24 resize into that of the same resize from 14-bit planes.

    Its output is planar GBR where the output has at most half the rows: swscale's vertical filter
    then has more than two taps, so its RGB24 output runs yuv2rgb_full_X_c, whose arithmetic
    yuv2gbrp_full_X gives too, with SIMD code (the RGB24 functions for one- and two-tap filters
    round differently). Otherwise RGB24, as asked.
    """
    key.src_format = lavu.AV_PIX_FMT_YUV422P14LE
    key.flags = RESIZE_FLAGS | sws.SWS_FULL_CHR_H_INT
    if key.dst_h <= key.src_h >> 1:
        key.dst_format = lavu.AV_PIX_FMT_GBRP


cdef size_t planes_buffer_size(int width) noexcept nogil:
    """Bytes of the Y, U and V rows of one slice of a width-pixel resize through planes, and one
    RGB24 row (the scratch of tc_yuv420_to_planes)."""
    cdef size_t rows = <size_t>(padded_row(width, 2) + 2 * padded_row((width + 1) // 2, 2)) * PLANE_SLICE_ROWS
    return rows + padded_row(width, 3)


cdef size_t gbr_buffer_size(int width, int height) noexcept nogil:
    """Bytes of the three planes of a width x height GBR image (padded as RGB buffers are)."""
    return 3 * padded_size(padded_row(width, 1), height)


cdef int resize_through_planes(SwsContext *ctx, const ContextKey *key, const uint8_t *src, Py_ssize_t src_stride,
                               const AVFrame *yuv, uint8_t *dst, Py_ssize_t dst_stride, uint8_t *slices,
                               uint8_t *gbr) noexcept nogil:
    """Resize the RGB24 image at ``src`` (or, with ``yuv``, the RGB24 conversion of that 8-bit
    4:2:0 frame, which route_agrees accepted) into RGB24 at ``dst`` with ``ctx``, made for
    ``key`` (a planes_key), slice by slice of PLANE_SLICE_ROWS rows converted into ``slices``
    (planes_buffer_size bytes). A GBRP output goes through ``gbr`` (gbr_buffer_size bytes) and is
    interleaved into exactly key.dst_w pixels a row; an RGB24 one is swscale's, written over-wide
    as ever (``dst`` must have the room). The output rows, or swscale's negative error code."""
    cdef tc_colour_coeffs colours
    cdef tc_rgb_matrix matrix
    cdef int width = key.src_w, height = key.src_h
    cdef Py_ssize_t y_stride = padded_row(width, 2), c_stride = padded_row((width + 1) // 2, 2)
    cdef Py_ssize_t gbr_stride = padded_row(key.dst_w, 1), gbr_plane = padded_size(gbr_stride, key.dst_h)
    cdef uint16_t *y = <uint16_t *>slices
    cdef uint16_t *u = <uint16_t *>(slices + y_stride * PLANE_SLICE_ROWS)
    cdef uint16_t *v = <uint16_t *>(slices + (y_stride + c_stride) * PLANE_SLICE_ROWS)
    cdef const uint8_t *planes[4]
    cdef int strides[4]
    cdef uint8_t *dst_planes[4]
    cdef int dst_strides[4]
    cdef int first = 0, rows, got, total = 0
    cdef uint8_t *rgb_row = slices + (y_stride + 2 * c_stride) * PLANE_SLICE_ROWS
    tc_rgb_matrix_init(&matrix, sws.sws_getCoefficients(key.colorspace))
    if yuv != NULL:
        colours = tc_colour_coeffs_for(yuv.colorspace, is_full_range(yuv))
    planes[0], planes[1], planes[2], planes[3] = <uint8_t *>y, <uint8_t *>u, <uint8_t *>v, NULL
    strides[0], strides[1], strides[2], strides[3] = <int>y_stride, <int>c_stride, <int>c_stride, 0
    if key.dst_format == lavu.AV_PIX_FMT_GBRP:
        dst_planes[0], dst_planes[1], dst_planes[2], dst_planes[3] = gbr, gbr + gbr_plane, gbr + 2 * gbr_plane, NULL
        dst_strides[0], dst_strides[1], dst_strides[2] = <int>gbr_stride, <int>gbr_stride, <int>gbr_stride
    else:
        dst_planes[0], dst_planes[1], dst_planes[2], dst_planes[3] = dst, NULL, NULL, NULL
        dst_strides[0], dst_strides[1], dst_strides[2] = <int>dst_stride, 0, 0
    dst_strides[3] = 0
    while first < height:
        rows = min(<int>PLANE_SLICE_ROWS, height - first)
        if yuv != NULL:
            tc_yuv420_to_planes(&matrix, &colours, <const uint8_t *const *>yuv.data, yuv.linesize, first, rows,
                                width, rgb_row, y, y_stride, u, v, c_stride)
        else:
            tc_rgb_to_planes(&matrix, src + first * src_stride, src_stride, width, rows, y, y_stride, u, v,
                             c_stride)
        got = sws.sws_scale(ctx, planes, strides, first, rows, dst_planes, dst_strides)
        if got < 0:
            return got
        total += got
        first += rows
    if key.dst_format == lavu.AV_PIX_FMT_GBRP:
        interleave_gbr(dst_planes, gbr_stride, dst, dst_stride, key.dst_w, key.dst_h)
    return total


cdef void interleave_gbr(uint8_t **planes, Py_ssize_t plane_stride, uint8_t *dst, Py_ssize_t dst_stride, int width,
                         int height) noexcept nogil:
    """Planar G, B, R (GBRP's plane order) to packed RGB24."""
    cdef int row, x
    cdef const uint8_t *g
    cdef const uint8_t *b
    cdef const uint8_t *r
    cdef uint8_t *out
    for row in range(height):
        g = planes[0] + row * plane_stride
        b = planes[1] + row * plane_stride
        r = planes[2] + row * plane_stride
        out = dst + row * dst_stride
        for x in range(width):
            out[3 * x] = r[x]
            out[3 * x + 1] = g[x]
            out[3 * x + 2] = b[x]


cdef bint same_resize(const ContextKey *resize, const ContextKey *frame) noexcept nogil:
    """Whether the planes route gives the bytes of swscale's own passes for the RGB24 resize
    ``resize`` of a random image: random bytes (past each row too: an odd width reads one pixel
    there) when ``frame`` is NULL; else swscale's conversion (``frame``, a frame_key) of an 8-bit
    4:2:0 frame of random samples, which the route reads from its YUV instead. False when memory or
    swscale fails."""
    cdef AVFrame *yuv = NULL
    cdef SwsContext *rgb_ctx = NULL
    cdef SwsContext *resize_ctx = NULL
    cdef SwsContext *planes_ctx = NULL
    cdef ContextKey planes = resize[0]
    cdef int src_w = resize.src_w, src_h = resize.src_h, dst_w = resize.dst_w, dst_h = resize.dst_h
    cdef Py_ssize_t src_stride = padded_row(src_w, 3), dst_stride = padded_row(dst_w, 3)
    cdef uint8_t *src = <uint8_t *>malloc(padded_size(src_stride, src_h))
    cdef uint8_t *expected = <uint8_t *>malloc(padded_size(dst_stride, dst_h))
    cdef uint8_t *actual = <uint8_t *>malloc(padded_size(dst_stride, dst_h))
    cdef uint8_t *slices = <uint8_t *>malloc(planes_buffer_size(src_w))
    cdef uint8_t *gbr = <uint8_t *>malloc(gbr_buffer_size(dst_w, dst_h))
    cdef uint8_t *dst_planes[4]
    cdef int dst_strides[4]
    cdef const uint8_t *src_planes[4]
    cdef int src_strides[4]
    cdef unsigned state = 2463534242u
    cdef size_t i
    cdef int row
    cdef bint same = False, ready, refused
    planes_key(&planes)
    resize_ctx = make_context(resize, &refused)
    planes_ctx = make_context(&planes, &refused)
    ready = (src != NULL and expected != NULL and actual != NULL and slices != NULL and gbr != NULL
             and resize_ctx != NULL and planes_ctx != NULL)
    src_planes[0], src_planes[1], src_planes[2], src_planes[3] = src, NULL, NULL, NULL
    src_strides[0], src_strides[1], src_strides[2], src_strides[3] = <int>src_stride, 0, 0, 0
    dst_planes[1], dst_planes[2], dst_planes[3] = NULL, NULL, NULL
    dst_strides[0], dst_strides[1], dst_strides[2], dst_strides[3] = <int>src_stride, 0, 0, 0
    if ready and frame != NULL:
        yuv = lavu.av_frame_alloc()
        rgb_ctx = make_context(frame, &refused)
        ready = yuv != NULL and rgb_ctx != NULL
        if ready:
            yuv.width, yuv.height, yuv.format = src_w, src_h, frame.src_format
            yuv.colorspace = <lavu.AVColorSpace>frame.colorspace
            yuv.color_range = <lavu.AVColorRange>frame.color_range
            ready = lavu.av_frame_get_buffer(yuv, 0) >= 0
        if ready:
            fill_random_samples(yuv, 8)
            dst_planes[0] = src
            ready = sws.sws_scale(rgb_ctx, <const uint8_t *const *>yuv.data, yuv.linesize, 0, src_h, dst_planes,
                                  dst_strides) == src_h
    elif ready:
        for i in range(padded_size(src_stride, src_h)):
            src[i] = <uint8_t>random_value(&state, 255)
    if ready:
        dst_planes[0] = expected
        dst_strides[0] = <int>dst_stride
        if sws.sws_scale(resize_ctx, src_planes, src_strides, 0, src_h, dst_planes, dst_strides) == dst_h:
            same = (resize_through_planes(planes_ctx, &planes, src, src_stride, yuv, actual, dst_stride, slices, gbr)
                    == dst_h)
            for row in range(dst_h):
                same = same and memcmp(expected + row * dst_stride, actual + row * dst_stride, <size_t>dst_w * 3) == 0
    sws.sws_freeContext(rgb_ctx)
    sws.sws_freeContext(resize_ctx)
    sws.sws_freeContext(planes_ctx)
    lavu.av_frame_free(&yuv)
    free(src)
    free(expected)
    free(actual)
    free(slices)
    free(gbr)
    return same


# Verdicts of route_agrees: in _planes_verdicts, for each resize from RGB (source w, h, output w, h,
# matrix); in _fused_verdicts, for each resize of a whole 8-bit 4:2:0 frame from its YUV planes
# (frame w, h, format, matrix, range, output w, h, resize matrix). A route is used only where it
# gave the bytes of swscale's own passes.
_planes_verdicts = {}
_fused_verdicts = {}


cdef tuple verdict_entry(const ContextKey *resize, const ContextKey *frame):
    """(the verdict dictionary, the key) of route_agrees for ``resize`` (and ``frame``)."""
    if frame == NULL:
        return _planes_verdicts, (resize.src_w, resize.src_h, resize.dst_w, resize.dst_h, resize.colorspace)
    return _fused_verdicts, (frame.src_w, frame.src_h, frame.src_format, frame.colorspace, frame.color_range,
                             resize.dst_w, resize.dst_h, resize.colorspace)


cdef bint route_agrees(const ContextKey *resize, const ContextKey *frame) noexcept nogil:
    """same_resize's answer for ``resize`` (and ``frame``), decided once per process and key."""
    cdef int verdict
    with gil:
        verdicts, key = verdict_entry(resize, frame)
        verdict = verdicts.get(key, -1)
    if verdict < 0:
        verdict = same_resize(resize, frame)
        with gil:
            verdicts, key = verdict_entry(resize, frame)
            verdicts[key] = verdict
    return verdict


cdef str pixel_format_name(int pixel_format):
    name = lavu.av_get_pix_fmt_name(<AVPixelFormat>pixel_format)
    return name.decode() if name != NULL else str(pixel_format)


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


cdef void clear_after(uint8_t *image, Py_ssize_t stride, int width, int height, int bpp) noexcept nogil:
    """Zero the pixel just right of each row of an RGB image in an internal buffer (which has room).

    swscale reads RGB input in pairs of pixels for its half-width chroma, so an RGB-to-RGB resize
    of an odd width reads one pixel past the row. In FFmpeg's filter graph, and so in TorchCodec,
    that pixel is the next one of the image a crop was cut from, or past an image's edge, the zero
    of the frame pool's zeroed buffers; here it must be made the same.
    """
    cdef int r
    for r in range(height):
        memset(image + r * stride + <Py_ssize_t>width * bpp, 0, bpp)


cdef bint is_chroma_plane(const AVPixFmtDescriptor *desc, int plane) noexcept nogil:
    return (plane == 1 or plane == 2) and not (desc.flags & lavu.AV_PIX_FMT_FLAG_RGB)


cdef int parse_stages(stages, Stage *plan) except -1:
    """Check the transform plan ``stages`` (a sequence of (x, y, crop_w, crop_h, out_w, out_h,
    resize) tuples, at most MAX_STAGES) and write it into ``plan`` (MAX_STAGES entries); returns
    the number of stages. Stage k > 0 must crop within the output of stage k - 1; stage 0's crop is
    checked against each frame (after rotation) when it is converted. ValueError otherwise (``plan``
    unchanged)."""
    cdef Stage checked[MAX_STAGES]
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
        checked[k].x, checked[k].y, checked[k].crop_w, checked[k].crop_h = x, y, crop_w, crop_h
        checked[k].out_w, checked[k].out_h, checked[k].resize = out_w, out_h, bool(resize)
        prev_w, prev_h = out_w, out_h
    for k in range(len(stages)):
        plan[k] = checked[k]
    return len(stages)


cdef bint stage_resizes(const Stage *stage) noexcept nogil:
    """Whether the stage runs a resize: a crop, or a resize to the same size, passes the pixels
    through (FFmpeg's scale filter does not scale a frame to its own size)."""
    return stage.resize and (stage.out_w != stage.crop_w or stage.out_h != stage.crop_h)


cdef int resize_matrix(bint single_resize, int rotation, int frame_width, const Stage *stage) noexcept nogil:
    """The matrix of swscale's internal YUV in the resizes of a plan (see the module's docstring):
    TorchCodec resizes a lone Resize (``single_resize``) with its own swscale call, not its filter
    graph, when the frame is unrotated and both its width (``frame_width``, before rotation) and
    the output's (``stage``, stage 0) are multiples of 32."""
    if single_resize and not rotation and frame_width % 32 == 0 and stage.out_w % 32 == 0:
        return SWSCALE_RESIZE_MATRIX
    return FILTER_RESIZE_MATRIX


cdef class Scaler(DeviceConverter):
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
        self.num_stages = 0
        self.single_resize = False
        self.fast.hbd = NULL
        self.fast.chroma_shift = -1
        self.fast_decided = False
        self.fast_active = False
        self.fused_verdict = -1
        if self.view == NULL:
            raise MemoryError("av_frame_alloc failed")

    def __dealloc__(self):
        cdef int i
        sws.sws_freeContext(self.ptr)
        for i in range(MAX_STAGES):
            sws.sws_freeContext(self.stage_ctx[i])
        fast_path_free(&self.fast)
        lavu.av_frame_free(&self.rotated)
        lavu.av_frame_free(&self.view)       # its planes are borrowed: only the AVFrame is freed
        for i in range(NUM_BUFFERS):
            free(self.buffers[i])

    def set_stages(self, stages, single_resize=False):
        """Set the transform plan: a sequence of (x, y, crop_w, crop_h, out_w, out_h, resize) stages
        (see ``Stage`` and ``parse_stages``); empty for none. ``single_resize``: the transforms were
        one Resize and nothing else (TorchCodec resizes those with its own swscale call where it
        can; see the module's docstring).
        """
        self.num_stages = parse_stages(stages, self.stages)
        self.single_resize = bool(single_resize) and self.num_stages == 1

    cdef uint8_t *get_buffer(self, int which, size_t size) except NULL nogil:
        """Scratch buffer ``which`` with at least ``size`` bytes. 0: RGB before an RGB rotation;
        1: RGB48 before float conversion; 2 and 3: outputs of transform stages, in turn, and 3 also
        the converted region around stage 0's crop; 4: swscale's output on its way to memory that
        has no room for its over-wide writes (padded_output); 5: the chroma rows of the fast
        high-bit-depth conversion; 6: the 14-bit planes of a resize's slice and 7: its planar GBR
        output (resize_through_planes)."""
        if size > self.buffer_sizes[which]:
            free(self.buffers[which])
            self.buffers[which] = <uint8_t *>malloc(size)
            self.buffer_sizes[which] = size if self.buffers[which] != NULL else 0
            if self.buffers[which] == NULL:
                with gil:
                    raise MemoryError(f"cannot allocate {size} bytes for colour conversion")
        return self.buffers[which]

    cdef const FastPath *fast_plan(self, const ContextKey *want, SwsContext *ctx) noexcept nogil:
        """The one-pass conversion (hbd_rgb.h, yuv8_rgb.h) of frames that ``want`` describes, when one
        applies and gives swscale's bytes for them (decided once per process and key), else NULL.
        The 8-bit rows are taken only as AVX2 code: their plain C form is slower than swscale's SIMD."""
        cdef int verdict     # 1: agrees, 0: differs, -1: not tried yet
        if self.fast_decided and same_key(&self.fast_key, want):
            return &self.fast if self.fast_active else NULL
        fast_path_free(&self.fast)
        self.fast_key = want[0]
        self.fast_decided = True
        self.fast_active = False
        if not fast_path_for(want, &self.fast) or (self.fast.hbd == NULL and not tc_yuv8_vectors()):
            fast_path_free(&self.fast)
            return NULL
        with gil:
            verdict = _fast_verdicts.get(verdict_key(want), -1)
        if verdict < 0:
            verdict = agrees_with_swscale(&self.fast, ctx, want.src_format)
            with gil:
                _fast_verdicts[verdict_key(want)] = verdict
        if not verdict:
            fast_path_free(&self.fast)
            return NULL
        self.fast_active = True
        return &self.fast

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
                   AVPixelFormat dst_format, bint padded) except -1 nogil:
        """Convert ``frame`` into ``dst`` (``width`` x ``height`` packed pixels of ``dst_format``), as
        the CLI's scale filter does: bicubic, the frame's matrix and range.

        ``padded``: ``dst`` is an internal buffer with room for swscale's over-wide writes.
        """
        cdef int bpp = 6 if dst_format == lavu.AV_PIX_FMT_RGB48 else 3
        cdef uint8_t *final_dst = dst
        cdef Py_ssize_t final_stride = row_stride
        cdef ContextKey want
        frame_key(frame, width, height, dst_format, &want)
        cdef SwsContext *ctx = context_for(&self.ptr, &self.key, &want)
        cdef const FastPath *fast = self.fast_plan(&want, ctx)
        if fast != NULL:                # writes exactly width pixels a row: no padding needed
            fast_rows(fast, <const uint8_t *const *>frame.data, frame.linesize, dst, row_stride,
                      self.get_buffer(5, <size_t>width) if fast.hbd != NULL else NULL, self.stream_output and not padded)
            return 0
        if not padded and width % 32:
            dst = self.padded_output(&row_stride, width, height, bpp)
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
        if dst_format == lavu.AV_PIX_FMT_RGB48:
            write_table_last_column(frame, dst, row_stride)
        if dst != final_dst:
            copy_rows(final_dst, final_stride, dst, row_stride, <size_t>width * bpp, height)
        return 0

    cdef int scale_rgb(self, int k, const uint8_t *src, Py_ssize_t src_stride, const AVFrame *yuv, uint8_t *dst,
                       Py_ssize_t dst_stride, AVPixelFormat rgb_format, int colorspace, bint padded) except -1 nogil:
        """Resize as stage ``k`` says, from packed RGB at ``src`` to packed RGB at ``dst`` (bilinear,
        with ``colorspace``'s matrix for swscale's internal YUV). RGB24 outputs at most half as wide
        as their input go through 14-bit planes (rgb_planes.h) where that gives swscale's bytes; with
        ``yuv`` (stage 0 of a frame fused_applies accepted), those planes come straight from the
        frame's YUV and ``src`` is unused.

        ``padded``: as for ``scale``.
        """
        cdef const Stage *stage = &self.stages[k]
        cdef int bpp = 6 if rgb_format == lavu.AV_PIX_FMT_RGB48 else 3
        cdef uint8_t *final_dst = dst
        cdef Py_ssize_t final_stride = dst_stride
        cdef ContextKey want
        resize_key(stage, rgb_format, colorspace, &want)
        cdef ContextKey planes_want = want
        planes_key(&planes_want)
        cdef bint through_planes = yuv != NULL
        if takes_planes_route(&want) and not through_planes:
            # The context made for the previous frame tells what was decided for this geometry.
            if self.stage_ctx[k] != NULL and same_key(&self.stage_key[k], &planes_want):
                through_planes = True
            elif not (self.stage_ctx[k] != NULL and same_key(&self.stage_key[k], &want)):
                through_planes = planes_rows_are_vector(colorspace) and route_agrees(&want, NULL)
        if through_planes:
            want = planes_want
        cdef SwsContext *ctx = context_for(&self.stage_ctx[k], &self.stage_key[k], &want)
        cdef bint exact_rows = through_planes and want.dst_format == lavu.AV_PIX_FMT_GBRP
        if not padded and stage.out_w % 32 and not exact_rows:
            dst = self.padded_output(&dst_stride, stage.out_w, stage.out_h, bpp)
        cdef const uint8_t *src_planes[4]
        cdef uint8_t *dst_planes[4]
        cdef int src_strides[4]
        cdef int dst_strides[4]
        cdef int rows
        if through_planes:
            rows = resize_through_planes(ctx, &want, src, src_stride, yuv, dst, dst_stride,
                                         self.get_buffer(6, planes_buffer_size(stage.crop_w)),
                                         self.get_buffer(7, gbr_buffer_size(stage.out_w, stage.out_h)))
        else:
            src_planes[0], src_planes[1], src_planes[2], src_planes[3] = src, NULL, NULL, NULL
            dst_planes[0], dst_planes[1], dst_planes[2], dst_planes[3] = dst, NULL, NULL, NULL
            src_strides[0], src_strides[1], src_strides[2], src_strides[3] = <int>src_stride, 0, 0, 0
            dst_strides[0], dst_strides[1], dst_strides[2], dst_strides[3] = <int>dst_stride, 0, 0, 0
            rows = sws.sws_scale(ctx, src_planes, src_strides, 0, stage.crop_h, dst_planes, dst_strides)
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
            return self.scale(frame, dst, row_stride, width, height, rgb_format, padded)
        if has_rotatable_planes(lavu.av_pix_fmt_desc_get(<AVPixelFormat>frame.format)):
            return self.scale(self.rotate_frame(frame, rotation), dst, row_stride, width, height, rgb_format, padded)
        # Packed input: convert first, then turn the RGB image.
        if rotation != 180:
            rgb_w, rgb_h = height, width
        rgb_stride = padded_row(rgb_w, bpp)
        rgb = self.get_buffer(0, padded_size(rgb_stride, rgb_h))
        self.scale(frame, rgb, rgb_stride, rgb_w, rgb_h, rgb_format, True)
        rotate_plane(rgb, rgb_stride, dst, row_stride, rgb_w, rgb_h, bpp, rotation)
        return 0

    cdef const uint8_t *converted_crop(self, const AVFrame *frame, int rotation, const Stage *stage,
                                       Py_ssize_t *stride, AVPixelFormat rgb_format) except NULL nogil:
        """The RGB pixels of ``stage``'s crop of ``frame`` turned by ``rotation`` and converted whole:
        a pointer to the crop's top-left pixel in scratch buffer 3, ``stride[0]`` its row stride.

        Only a region around the crop is converted where the planes can be cut by offsets: a
        rectangle whose edges are whole chroma samples and CROP_MARGIN pixels beyond the crop (or
        the frame's edges), so that swscale's chroma interpolation sees the same neighbours as in
        the whole frame, and a resize reading one pixel past the crop finds the frame's pixel
        there (see clear_after); frames of odd size are converted whole (their chroma
        planes are not exactly half as large, so swscale's chroma scale factor, and its filter
        phases, would depend on the rectangle).
        """
        cdef const AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(<AVPixelFormat>frame.format)
        cdef int bpp = 6 if rgb_format == lavu.AV_PIX_FMT_RGB48 else 3
        cdef int rotated_w = frame.height if rotation == 90 or rotation == 270 else frame.width
        cdef int rotated_h = frame.width if rotation == 90 or rotation == 270 else frame.height
        cdef int mask_w, mask_h
        cdef const AVFrame *src = frame
        cdef Stage region
        cdef uint8_t *rgb
        if stage.x + stage.crop_w > rotated_w or stage.y + stage.crop_h > rotated_h:
            with gil:
                raise RuntimeError(f"cannot crop {stage.crop_w}x{stage.crop_h} at ({stage.x}, {stage.y}) from "
                                   f"a {rotated_w}x{rotated_h} frame (did the video change size?)")
        region.x, region.y, region.crop_w, region.crop_h = 0, 0, rotated_w, rotated_h
        if has_croppable_planes(desc) and (rotation == 0 or has_rotatable_planes(desc)):
            mask_w, mask_h = (1 << desc.log2_chroma_w) - 1, (1 << desc.log2_chroma_h) - 1
            if not (rotated_w & mask_w or rotated_h & mask_h):
                region.x = max(0, (stage.x & ~mask_w) - CROP_MARGIN)
                region.y = max(0, (stage.y & ~mask_h) - CROP_MARGIN)
                region.crop_w = min(((stage.x + stage.crop_w + mask_w) & ~mask_w) + CROP_MARGIN, rotated_w) - region.x
                region.crop_h = min(((stage.y + stage.crop_h + mask_h) & ~mask_h) + CROP_MARGIN, rotated_h) - region.y
        stride[0] = padded_row(region.crop_w, bpp)
        rgb = self.get_buffer(3, padded_size(stride[0], region.crop_h))
        if region.crop_w == rotated_w and region.crop_h == rotated_h:
            self.to_rgb(frame, rotation, rgb, stride[0], rotated_w, rotated_h, rgb_format, True)
        else:
            if rotation:
                src = self.rotate_frame(frame, rotation)
            region.out_w, region.out_h, region.resize = region.crop_w, region.crop_h, False
            self.scale(self.crop_frame(src, &region), rgb, stride[0], region.crop_w, region.crop_h, rgb_format, True)
        if region.x + region.crop_w == rotated_w:
            clear_after(rgb, stride[0], region.crop_w, region.crop_h, bpp)
        return rgb + (stage.y - region.y) * stride[0] + (stage.x - region.x) * bpp

    cdef bint fused_applies(self, const AVFrame *frame, int rotation, const Stage *stage, AVPixelFormat rgb_format,
                            int matrix) noexcept nogil:
        """Whether stage 0, ``stage``, resizes ``frame`` from its YUV planes (scale_rgb's ``yuv``): a
        resize of the whole unrotated 8-bit 4:2:0 frame of even size to RGB24 at most half as wide,
        with AVX2, where route_agrees (decided once per Scaler and key)."""
        cdef FusedKey key
        if (rotation or rgb_format != lavu.AV_PIX_FMT_RGB24 or not stage.resize or stage.x or stage.y
                or stage.crop_w != frame.width or stage.crop_h != frame.height
                or (frame.format != lavu.AV_PIX_FMT_YUV420P and frame.format != lavu.AV_PIX_FMT_YUVJ420P)
                or frame.width & 1 or frame.height & 1):
            return False
        frame_key(frame, frame.width, frame.height, lavu.AV_PIX_FMT_RGB24, &key.frame)
        resize_key(stage, lavu.AV_PIX_FMT_RGB24, matrix, &key.resize)
        if not takes_planes_route(&key.resize):
            return False
        if (self.fused_verdict >= 0 and same_key(&self.fused_key.frame, &key.frame)
                and same_key(&self.fused_key.resize, &key.resize)):
            return self.fused_verdict
        self.fused_key = key
        self.fused_verdict = planes_rows_are_vector(matrix) and route_agrees(&key.resize, &key.frame)
        return self.fused_verdict

    cdef int run_stages(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                        AVPixelFormat rgb_format, bint padded) except -1 nogil:
        """Write ``frame``, turned by ``rotation`` and transformed by the plan, into ``dst``.

        ``padded``: as for ``scale``. The stages' own outputs go to padded internal buffers.
        """
        cdef int bpp = 6 if rgb_format == lavu.AV_PIX_FMT_RGB48 else 3
        cdef int k, n = self.num_stages
        cdef const Stage *stage = &self.stages[0]
        cdef Py_ssize_t in_stride = 0, out_stride = 0
        cdef uint8_t *out = NULL
        cdef bint last
        cdef int matrix = resize_matrix(self.single_resize, rotation, frame.width, stage)
        cdef bint fused = self.fused_applies(frame, rotation, stage, rgb_format, matrix)
        cdef const uint8_t *corner = NULL
        if not fused:
            corner = self.converted_crop(frame, rotation, stage, &in_stride, rgb_format)
        for k in range(n):
            stage = &self.stages[k]
            if k > 0:
                in_stride = out_stride
                corner = out + <Py_ssize_t>stage.y * in_stride + <Py_ssize_t>stage.x * bpp
            last = k == n - 1
            if last:
                out, out_stride = dst, row_stride
            else:
                out_stride = padded_row(stage.out_w, bpp)
                out = self.get_buffer(2 + k % 2, padded_size(out_stride, stage.out_h))
            if stage_resizes(stage):
                self.scale_rgb(k, corner, in_stride, frame if fused and k == 0 else NULL, out, out_stride, rgb_format,
                               matrix, padded or not last)
            else:                       # a crop, or a resize to the same size (FFmpeg passes those through)
                copy_rows(out, out_stride, corner, in_stride, <size_t>stage.crop_w * bpp, stage.crop_h)
            if not last:
                clear_after(out, out_stride, stage.out_w, stage.out_h, bpp)
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
