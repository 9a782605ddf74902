# cython: language_level=3
"""Test helper, built by the ``engine_probe`` fixture (tests/conftest.py) against the installed
package's .pxd files, as a downstream extension would be: reaches the engine's internals that the
tests check and the package has no reason to offer in Python.

- ``fast_path_agrees``, ``resize_route_agrees``, ``fused_route_agrees_for``: the scaler's own
  comparisons with swscale (which decide, at run time, where the one-pass conversions and the
  planes route run) asked for any geometry, with the AVX2 rows or the plain C ones;
- ``fast_path_active``: whether a Scaler's last conversion took a one-pass conversion;
- ``index_add``/``index_end``: an IndexBuilder fed packets by hand;
- ``without_early_drain``: a packet decoder that the video reader never drains early.
"""
from libc.stdint cimport INT64_MIN, int64_t

from torchcodec._core._frame_index cimport IndexBuilder
from torchcodec._core._packet_decoder cimport VideoPacketDecoder
from torchcodec._core._scaler cimport (ContextKey, FastPath, Scaler, Stage, agrees_with_swscale, cli_sws_flags,
                                       context_for, fast_path_for, fast_path_free, resize_key, same_resize,
                                       takes_planes_route, vector_rows)
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport swscale as sws
from torchcodec._ffmpeg.swscale cimport SwsContext


def fast_path_agrees(int width, int height, str pixel_format, int colorspace, int color_range,
                     bint vector_code=True):
    """Whether the one-pass conversion (high bit depth, or 8 bits) gives swscale's bytes for frames
    of this size, pixel format (a name: "yuv420p10le"), AVColorSpace and AVColorRange, tried on
    random samples; None where none applies (other formats, odd widths at high bit depth, odd
    heights at 8 bits, very short frames). ``vector_code`` False tries the plain C rows that CPUs
    without AVX2 run; with True, False also where a high-bit-depth plan has no exact 16-bit form,
    which the AVX2 rows need (they would not run)."""
    cdef FastPath path
    cdef SwsContext *ctx = NULL
    cdef ContextKey have, want
    cdef bint agrees
    want.src_w, want.src_h, want.src_format = width, height, lavu.av_get_pix_fmt(pixel_format.encode())
    want.dst_w, want.dst_h, want.dst_format = width, height, lavu.AV_PIX_FMT_RGB24
    want.flags, want.colorspace, want.color_range = cli_sws_flags(), colorspace, color_range
    if not fast_path_for(&want, &path):
        return None
    cdef int before = vector_rows(-1)
    try:
        context_for(&ctx, &have, &want)
        vector_rows(vector_code)
        with nogil:
            agrees = agrees_with_swscale(&path, ctx, want.src_format)
        return bool(agrees and (path.hbd == NULL or path.hbd.has_vector_form or not vector_code))
    finally:
        vector_rows(before)
        fast_path_free(&path)
        sws.sws_freeContext(ctx)


cdef object tried_route(const ContextKey *resize, const ContextKey *frame, bint vector_code):
    """same_resize with the AVX2 rows (``vector_code``) or the plain C ones, as a bool."""
    cdef int before = vector_rows(vector_code)
    cdef bint same
    try:
        with nogil:
            same = same_resize(resize, frame)
        return bool(same)
    finally:
        vector_rows(before)


cdef void whole_resize_key(int width, int height, int out_w, int out_h, int colorspace, ContextKey *key) noexcept nogil:
    """resize_key of a resize of a whole width x height RGB24 image."""
    cdef Stage stage
    stage.x, stage.y, stage.crop_w, stage.crop_h, stage.resize = 0, 0, width, height, True
    stage.out_w, stage.out_h = out_w, out_h
    resize_key(&stage, lavu.AV_PIX_FMT_RGB24, colorspace, key)


def resize_route_agrees(int colorspace, int src_w, int src_h, int dst_w, int dst_h, bint vector_code=True):
    """Whether the resize through 14-bit planes gives swscale's RGB-to-RGB bytes for this resize of
    a random image with AVColorSpace ``colorspace``'s matrix; None where the route does not apply
    (outputs wider than half the input). ``vector_code`` False tries the plain C rows that CPUs
    without AVX2 run."""
    cdef ContextKey resize
    whole_resize_key(src_w, src_h, dst_w, dst_h, colorspace, &resize)
    if min(src_w, src_h, dst_w, dst_h) <= 0 or not takes_planes_route(&resize):
        return None
    return tried_route(&resize, NULL, vector_code)


def fused_route_agrees_for(int width, int height, str pixel_format, int colorspace, int color_range, int out_w,
                           int out_h, int resize_colorspace, bint vector_code=True):
    """Whether resizing frames of this size, pixel format (a name), AVColorSpace and AVColorRange
    to out_w x out_h (``resize_colorspace``'s matrix inside swscale's resize) from their YUV planes
    gives the bytes of swscale's conversion then resize, on random samples; None where the route
    does not apply (not 8-bit 4:2:0 of even size, outputs wider than half the input).
    ``vector_code`` False tries the plain C rows."""
    cdef ContextKey frame, resize
    cdef int pixel_format_value = lavu.av_get_pix_fmt(pixel_format.encode())
    if (pixel_format_value not in (lavu.AV_PIX_FMT_YUV420P, lavu.AV_PIX_FMT_YUVJ420P) or width & 1 or height & 1
            or min(width, height, out_w, out_h) <= 0):
        return None
    frame.src_w, frame.src_h, frame.src_format = width, height, pixel_format_value
    frame.dst_w, frame.dst_h, frame.dst_format = width, height, lavu.AV_PIX_FMT_RGB24
    frame.flags, frame.colorspace, frame.color_range = cli_sws_flags(), colorspace, color_range
    whole_resize_key(width, height, out_w, out_h, resize_colorspace, &resize)
    if not takes_planes_route(&resize):
        return None
    return tried_route(&resize, &frame, vector_code)


def fast_path_active(Scaler scaler not None):
    """Whether the last frame ``scaler`` converted to RGB24 went through a one-pass conversion (high
    bit depth, or 8-bit 4:2:0 and 4:2:2) rather than swscale."""
    return scaler.fast_active


def index_add(IndexBuilder builder not None, pts, dts, int64_t duration, bint is_key, int64_t pos=-1):
    """``builder.add``: one packet; ``pts``/``dts`` None for a packet without them."""
    builder.add(INT64_MIN if pts is None else pts, INT64_MIN if dts is None else dts, duration, is_key, pos)


def index_end(IndexBuilder builder not None):
    """``builder.end``: the scan reached the end of the file."""
    builder.end()


def without_early_drain(VideoPacketDecoder decoder not None):
    """Have the video reader over ``decoder`` never drain it before the end of a request's run (as
    for decoders that cannot drain early), to compare with the early drain."""
    decoder.can_drain_early = False
