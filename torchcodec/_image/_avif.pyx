"""AVIF with libavif (its AV1 decoder, and avifImageYUVToRGB for the colour conversion).

Follows TorchCodec 0.17: a still image is (H, W, C), an image sequence (N, H, W, C); UNCHANGED gives
RGBA when the file has an alpha plane; uint16 output is libavif's own 16-bit conversion (every source
depth scaled to 0..65535), "auto" gives it for sources deeper than 8 bits; GRAY and GRAY_ALPHA come
from RGB/RGBA at the output depth with TorchCodec's luma weights; the 'irot'/'imir' orientation is
applied to every frame. libavif's own limits (image size, image count) stay in force, and the size
bound is checked after parsing, before anything is allocated; every frame must have the size the
container declared.
"""
from libc.stdint cimport int64_t, uint8_t, uint32_t
from libc.stdlib cimport free, malloc

from torchcodec._image cimport avif
from torchcodec._image._common cimport (
    DTYPE_UINT16, MODE_GRAY, MODE_GRAY_ALPHA, MODE_RGB, MODE_RGB_ALPHA, MODE_UNCHANGED, allocate, check_size,
    convert_pixels, mode_channels, orient, output_wide, swaps_axes)


cdef int avif_orientation(const avif.avifImage *image) noexcept nogil:
    """The EXIF orientation equivalent to the image's 'irot' (counter-clockwise quarter turns) then
    'imir' (axis 0: top and bottom exchanged, 1: left and right)."""
    cdef bint rotated = (image.transformFlags & avif.AVIF_TRANSFORM_IROT) != 0
    cdef bint mirrored = (image.transformFlags & avif.AVIF_TRANSFORM_IMIR) != 0
    cdef int angle = image.irot.angle & 3 if rotated else 0
    cdef int axis = avif.tc_avif_imir_axis(image)
    if angle == 0:
        return 1 if not mirrored else (4 if axis == 0 else 2)
    if angle == 1:
        return 8 if not mirrored else (5 if axis == 0 else 7)
    if angle == 2:
        return 3 if not mirrored else (2 if axis == 0 else 4)
    return 6 if not mirrored else (7 if axis == 0 else 5)


cdef class Decoder:
    """Owns an avifDecoder (``ptr``)."""
    cdef avif.avifDecoder *ptr

    def __cinit__(self):
        self.ptr = avif.avifDecoderCreate()
        if self.ptr == NULL:
            raise MemoryError("avifDecoderCreate failed")

    def __dealloc__(self):
        if self.ptr != NULL:
            avif.avifDecoderDestroy(self.ptr)


cdef str result_text(avif.avifResult result):
    return avif.avifResultToString(result).decode("utf-8", "replace")


def decode(size_t address, size_t size, int mode, int dtype_code, int64_t limit, object allocator,
           int num_threads=1):
    """Decode the AVIF of ``size`` bytes at ``address`` into memory from ``allocator(shape, dtype)``:
    (H, W, C) for a still image, (N, H, W, C) for a sequence; libavif decodes on ``num_threads``."""
    if num_threads < 1:
        raise ValueError(f"num_threads must be >= 1, got {num_threads}")
    cdef Decoder decoder = Decoder()
    decoder.ptr.maxThreads = num_threads
    cdef avif.avifResult result
    result = avif.avifDecoderSetIOMemory(decoder.ptr, <const uint8_t *>address, size)
    if result != avif.AVIF_RESULT_OK:
        raise RuntimeError(f"avifDecoderSetIOMemory failed: {result_text(result)}")
    with nogil:
        result = avif.avifDecoderParse(decoder.ptr)
    if result != avif.AVIF_RESULT_OK:
        raise RuntimeError(f"avifDecoderParse failed: {result_text(result)}")
    cdef avif.avifImage *image = decoder.ptr.image
    cdef int orientation = avif_orientation(image)
    cdef int64_t frames = decoder.ptr.imageCount
    cdef int64_t height = image.height, width = image.width
    check_size(frames, height, width, limit, "decode_avif")
    cdef int native = 4 if (mode == MODE_RGB_ALPHA or mode == MODE_GRAY_ALPHA
                            or (mode == MODE_UNCHANGED and decoder.ptr.alphaPresent)) else 3
    cdef int channels = mode_channels(mode, native)
    cdef bint wide = output_wide(dtype_code, image.depth > 8)
    cdef size_t count = <size_t>width * height
    cdef size_t sample = 2 if wide else 1
    cdef size_t frame_bytes = count * channels * sample
    cdef tuple shape = (width, height, channels) if swaps_axes(orientation) else (height, width, channels)
    if frames > 1:
        shape = (frames,) + shape
    cdef uint8_t *out = allocate(allocator, shape, wide, "decode_avif")
    # libavif writes native-channel rows: into the output when they fit and no orientation, else a scratch frame
    cdef bint direct = orientation <= 1 and native <= channels
    cdef uint8_t *work = NULL
    if not direct:
        work = <uint8_t *>malloc(count * native * sample)
        if work == NULL:
            raise MemoryError("out of memory for an AVIF frame")
    cdef avif.avifRGBImage rgb
    cdef int64_t index
    cdef uint8_t *target
    try:
        for index in range(frames):
            with nogil:
                result = avif.avifDecoderNextImage(decoder.ptr)
            if result != avif.AVIF_RESULT_OK:
                raise RuntimeError(f"avifDecoderNextImage failed at frame {index}: {result_text(result)}")
            image = decoder.ptr.image
            if image.width != width or image.height != height:
                raise RuntimeError(f"AVIF frame {index} is {image.width}x{image.height} but the file declares "
                                   f"{width}x{height}: the file is corrupt")
            target = work if work != NULL else out + index * frame_bytes
            avif.avifRGBImageSetDefaults(&rgb, image)
            rgb.depth = 16 if wide else 8
            rgb.format = avif.AVIF_RGB_FORMAT_RGBA if native == 4 else avif.AVIF_RGB_FORMAT_RGB
            rgb.ignoreAlpha = avif.AVIF_FALSE if native == 4 else avif.AVIF_TRUE
            rgb.pixels = target
            rgb.rowBytes = <uint32_t>(width * native * sample)
            with nogil:
                result = avif.avifImageYUVToRGB(image, &rgb)
                if result == avif.AVIF_RESULT_OK:
                    if native != channels:
                        convert_pixels(target, native, wide, target, channels, wide, count)
                    if work != NULL:
                        orient(work, out + index * frame_bytes, height, width, channels * sample,
                               orientation if orientation > 1 else 1)
            if result != avif.AVIF_RESULT_OK:
                raise RuntimeError(f"avifImageYUVToRGB failed at frame {index}: {result_text(result)}")
    finally:
        free(work)
