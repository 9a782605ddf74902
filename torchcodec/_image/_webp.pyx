"""WebP with libwebp (still images, decoded straight into the output) and libwebpdemux (animations,
composited by WebPAnimDecoder; the EXIF chunk).

Follows TorchCodec 0.17: a still image is (H, W, C), an animation (N, H, W, C) with every frame
composited on the canvas; UNCHANGED gives RGBA when the bitstream has alpha, else RGB; GRAY and
GRAY_ALPHA come from RGB/RGBA with TorchCodec's luma weights; uint16 is the 8-bit value times 257;
the EXIF orientation (an "EXIF" chunk, with or without an "Exif\\0\\0" prefix) is applied to every
frame. The canvas size and frame count are checked against the size bound before WebPAnimDecoder
allocates its canvases.
"""
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy

from torchcodec._image cimport webp
from torchcodec._image._common cimport (
    DTYPE_UINT16, MODE_GRAY, MODE_GRAY_ALPHA, MODE_RGB, MODE_RGB_ALPHA, MODE_UNCHANGED, allocate, check_size,
    convert_pixels, exif_orientation, mode_channels, orient, swaps_axes)


cdef int webp_orientation(const uint8_t *data, size_t size) noexcept nogil:
    cdef webp.WebPData input
    webp.WebPDataInit(&input)
    input.bytes, input.size = data, size
    cdef webp.WebPDemuxer *demux = webp.WebPDemux(&input)
    if demux == NULL:
        return 0
    cdef webp.WebPChunkIterator chunk
    cdef int orientation = 0
    cdef const uint8_t *exif
    cdef size_t exif_size
    if webp.WebPDemuxGetChunk(demux, b"EXIF", 1, &chunk):
        exif, exif_size = chunk.chunk.bytes, chunk.chunk.size
        if exif_size >= 6 and memcmp(exif, b"Exif\0\0", 6) == 0:
            exif, exif_size = exif + 6, exif_size - 6
        orientation = exif_orientation(exif, exif_size)
        webp.WebPDemuxReleaseChunkIterator(&chunk)
    webp.WebPDemuxDelete(demux)
    return orientation


def decode(size_t address, size_t size, int mode, int dtype_code, int64_t limit, object allocator):
    """Decode the WebP of ``size`` bytes at ``address`` into memory from ``allocator(shape, dtype)``:
    (H, W, C) for a still image, (N, H, W, C) for an animation."""
    cdef const uint8_t *data = <const uint8_t *>address
    cdef webp.WebPBitstreamFeatures features
    cdef int status = webp.WebPGetFeatures(data, size, &features)
    if status != webp.VP8_STATUS_OK:
        raise RuntimeError(f"WebPGetFeatures failed with error code {status}: not a WebP image, or a corrupt one")
    cdef int native = 4 if (mode == MODE_RGB_ALPHA or mode == MODE_GRAY_ALPHA
                            or (mode == MODE_UNCHANGED and features.has_alpha)) else 3
    cdef int channels = mode_channels(mode, native)
    cdef bint wide = dtype_code == DTYPE_UINT16
    cdef int orientation
    with nogil:
        orientation = webp_orientation(data, size)
    if features.has_animation:
        decode_animation(data, size, native, channels, wide, orientation, limit, allocator)
    else:
        decode_still(data, size, features.width, features.height, native, channels, wide, orientation, limit,
                     allocator)


cdef void decode_still(const uint8_t *data, size_t size, int width, int height, int native, int channels, bint wide,
                       int orientation, int64_t limit, object allocator) except *:
    check_size(1, height, width, limit, "decode_webp")
    cdef size_t count = <size_t>width * height
    cdef size_t pixel_bytes = channels * (2 if wide else 1)
    cdef tuple shape = (width, height, channels) if swaps_axes(orientation) else (height, width, channels)
    cdef uint8_t *out = allocate(allocator, shape, wide, "decode_webp")
    # libwebp writes native-channel rows; when they fit in the output (and no orientation), in place
    cdef bint direct = orientation <= 1 and native * 1 <= <int>pixel_bytes
    cdef uint8_t *work = out
    cdef uint8_t *result
    if not direct:
        work = <uint8_t *>malloc(count * max(<size_t>native, pixel_bytes))
        if work == NULL:
            raise MemoryError("out of memory for the decoded WebP")
    with nogil:
        if native == 4:
            result = webp.WebPDecodeRGBAInto(data, size, work, count * 4, width * 4)
        else:
            result = webp.WebPDecodeRGBInto(data, size, work, count * 3, width * 3)
        if result != NULL:
            if native != channels or wide:
                convert_pixels(work, native, False, work, channels, wide, count)
            if not direct:
                orient(work, out, height, width, pixel_bytes, orientation if orientation > 1 else 1)
        if not direct:
            free(work)
    if result == NULL:
        raise RuntimeError("Failed to decode the WebP bitstream. The file is likely corrupted or truncated.")


cdef class AnimDecoder:
    """Owns a WebPAnimDecoder (``ptr``)."""
    cdef webp.WebPAnimDecoder *ptr

    def __dealloc__(self):
        if self.ptr != NULL:
            webp.WebPAnimDecoderDelete(self.ptr)


cdef void decode_animation(const uint8_t *data, size_t size, int native, int channels, bint wide, int orientation,
                           int64_t limit, object allocator) except *:
    cdef webp.WebPData input
    webp.WebPDataInit(&input)
    input.bytes, input.size = data, size
    # The canvas size and frame count, checked before WebPAnimDecoder allocates two canvases.
    cdef webp.WebPDemuxer *demux = webp.WebPDemux(&input)
    if demux == NULL:
        raise RuntimeError("WebPAnimDecoderNew failed. The file is likely corrupted or truncated.")
    cdef int64_t width = webp.WebPDemuxGetI(demux, webp.WEBP_FF_CANVAS_WIDTH)
    cdef int64_t height = webp.WebPDemuxGetI(demux, webp.WEBP_FF_CANVAS_HEIGHT)
    cdef int64_t frames = webp.WebPDemuxGetI(demux, webp.WEBP_FF_FRAME_COUNT)
    webp.WebPDemuxDelete(demux)
    check_size(frames, height, width, limit, "decode_webp")
    cdef size_t count = <size_t>width * height
    cdef size_t frame_bytes = count * channels * (2 if wide else 1)
    cdef tuple shape = ((frames, width, height, channels) if swaps_axes(orientation)
                        else (frames, height, width, channels))
    # the output, and WebPAnimDecoder's two RGBA canvases, within the memory limit
    cdef uint8_t *out = allocate(allocator, shape, wide, "decode_webp", 8 * <object>count)

    cdef webp.WebPAnimDecoderOptions options
    if not webp.WebPAnimDecoderOptionsInit(&options):
        raise RuntimeError("WebPAnimDecoderOptionsInit failed: libwebpdemux's version does not match its headers")
    options.color_mode = webp.MODE_RGBA
    options.use_threads = 0
    cdef AnimDecoder decoder = AnimDecoder()
    decoder.ptr = webp.WebPAnimDecoderNew(&input, &options)
    if decoder.ptr == NULL:
        raise RuntimeError("WebPAnimDecoderNew failed. The file is likely corrupted or truncated.")
    cdef webp.WebPAnimInfo info
    if not webp.WebPAnimDecoderGetInfo(decoder.ptr, &info):
        raise RuntimeError("WebPAnimDecoderGetInfo failed.")
    if info.canvas_width != width or info.canvas_height != height or info.frame_count != frames:
        raise RuntimeError("WebPAnimDecoder disagrees with the demuxer about the canvas: the file is corrupt")

    cdef uint8_t *work = NULL
    if orientation > 1:
        work = <uint8_t *>malloc(frame_bytes)
        if work == NULL:
            raise MemoryError("out of memory for a WebP frame")
    cdef int64_t index = 0
    cdef uint8_t *canvas = NULL
    cdef uint8_t *target
    cdef int timestamp = 0
    cdef bint ok = True
    with nogil:
        while index < frames and webp.WebPAnimDecoderHasMoreFrames(decoder.ptr):
            if not webp.WebPAnimDecoderGetNext(decoder.ptr, &canvas, &timestamp):
                ok = False
                break
            target = work if work != NULL else out + index * frame_bytes
            convert_pixels(canvas, 4, False, target, channels, wide, count)
            if work != NULL:
                orient(work, out + index * frame_bytes, height, width, channels * (2 if wide else 1), orientation)
            index += 1
        free(work)
    if not ok:
        raise RuntimeError(f"WebPAnimDecoderGetNext failed at frame {index}. The file is likely corrupted or truncated.")
    if index != frames:
        raise RuntimeError(f"Decoded {index} webp frame(s) but expected {frames}. The file is likely corrupted or "
                           f"truncated.")
