"""HEIC/HEIF with libheif (its HEVC decoder, libde265, and its colour conversion).

Follows TorchCodec 0.17: every top-level image is a frame ((H, W, C) for one, (N, H, W, C) for
more; all must share the first one's size and depth); libheif applies the 'irot'/'imir' transforms
itself; UNCHANGED gives RGBA when the image has alpha; for sources deeper than 8 bits, uint16 and
"auto" give libheif's samples scaled to 0..65535 by bit replication, otherwise 8-bit samples (times
257 for uint16); GRAY and GRAY_ALPHA come from RGB/RGBA with TorchCodec's luma weights. The size
bound is checked on the first image's declared size before anything is allocated, and every decoded
plane must have the declared size.
"""
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from torchcodec._image cimport heif
from torchcodec._image._common cimport (
    DTYPE_UINT16, MODE_GRAY, MODE_GRAY_ALPHA, MODE_RGB, MODE_RGB_ALPHA, MODE_UNCHANGED, allocate, check_size,
    convert_pixels, mode_channels, output_wide, widen_bits)

heif.heif_init(NULL)          # reference-counted; never released (plugins stay loaded for the process)

DECODER_HINT = (" If this is an \"Unsupported codec\" error, the libheif found at run time has no decoder for "
                "this image's codec (libde265 for HEVC): install libheif's HEVC decoder (Debian: the "
                "libheif1 package with libde265, or libheif-plugin-libde265 on newer releases; conda: "
                "conda install -c conda-forge libheif).")


cdef class Context:
    """Owns a libheif context (``ptr``)."""
    cdef heif.heif_context *ptr

    def __cinit__(self):
        self.ptr = heif.heif_context_alloc()
        if self.ptr == NULL:
            raise MemoryError("heif_context_alloc failed")

    def __dealloc__(self):
        if self.ptr != NULL:
            heif.heif_context_free(self.ptr)


cdef class ImageHandle:
    """Owns a libheif image handle (``ptr``)."""
    cdef heif.heif_image_handle *ptr

    def __dealloc__(self):
        if self.ptr != NULL:
            heif.heif_image_handle_release(self.ptr)


cdef class Image:
    """Owns a decoded libheif image (``ptr``)."""
    cdef heif.heif_image *ptr

    def __dealloc__(self):
        if self.ptr != NULL:
            heif.heif_image_release(self.ptr)


cdef str message(heif.heif_error error):
    return error.message.decode("utf-8", "replace") if error.message != NULL else "unknown error"


cdef ImageHandle open_image(Context context, heif.heif_item_id item, Py_ssize_t index):
    cdef ImageHandle handle = ImageHandle()
    cdef heif.heif_error error = heif.heif_context_get_image_handle(context.ptr, item, &handle.ptr)
    if error.code != heif.heif_error_Ok:
        raise RuntimeError(f"heif_context_get_image_handle failed at frame {index}: {message(error)}")
    return handle


def decode(size_t address, size_t size, int mode, int dtype_code, int64_t limit, object allocator):
    """Decode the HEIF of ``size`` bytes at ``address`` into memory from ``allocator(shape, dtype)``:
    (H, W, C) for one top-level image, (N, H, W, C) for several."""
    cdef Context context = Context()
    cdef heif.heif_error error
    with nogil:
        error = heif.heif_context_read_from_memory_without_copy(context.ptr, <const void *>address, size, NULL)
    if error.code != heif.heif_error_Ok:
        raise RuntimeError(f"heif_context_read_from_memory_without_copy failed: {message(error)}")
    cdef int frames = heif.heif_context_get_number_of_top_level_images(context.ptr)
    if frames <= 0:
        raise RuntimeError("HEIC file should contain at least one top-level image.")
    cdef heif.heif_item_id *items = <heif.heif_item_id *>malloc(frames * sizeof(heif.heif_item_id))
    if items == NULL:
        raise MemoryError("out of memory for the HEIC image list")
    try:
        if heif.heif_context_get_list_of_top_level_image_IDs(context.ptr, items, frames) != frames:
            raise RuntimeError(f"Expected {frames} top-level HEIC image IDs but libheif listed fewer.")
        decode_images(context, items, frames, mode, dtype_code, limit, allocator)
    finally:
        free(items)


cdef decode_images(Context context, heif.heif_item_id *items, int frames, int mode, int dtype_code, int64_t limit,
                   object allocator):
    cdef ImageHandle handle = open_image(context, items[0], 0)
    cdef int64_t height = heif.heif_image_handle_get_height(handle.ptr)
    cdef int64_t width = heif.heif_image_handle_get_width(handle.ptr)
    cdef int depth = heif.heif_image_handle_get_luma_bits_per_pixel(handle.ptr)
    if depth <= 0 or depth > 16:
        raise RuntimeError(f"the HEIC image has an invalid bit depth ({depth})")
    check_size(frames, height, width, limit, "decode_heic")
    cdef bint alpha = heif.heif_image_handle_has_alpha_channel(handle.ptr)
    cdef int native = 4 if (mode == MODE_RGB_ALPHA or mode == MODE_GRAY_ALPHA
                            or (mode == MODE_UNCHANGED and alpha)) else 3
    cdef int channels = mode_channels(mode, native)
    cdef bint deep = output_wide(dtype_code, depth > 8) and depth > 8      # libheif's 16-bit samples
    cdef bint wide = deep or dtype_code == DTYPE_UINT16                   # output samples
    cdef heif.heif_chroma chroma
    if deep:
        chroma = heif.heif_chroma_interleaved_RRGGBBAA_LE if native == 4 else heif.heif_chroma_interleaved_RRGGBB_LE
    else:
        chroma = heif.heif_chroma_interleaved_RGBA if native == 4 else heif.heif_chroma_interleaved_RGB
    cdef size_t count = <size_t>width * height
    cdef size_t sample = 2 if deep else 1
    cdef size_t row_bytes = width * native * sample
    cdef size_t frame_bytes = count * channels * (2 if wide else 1)
    cdef tuple shape = (height, width, channels)
    if frames > 1:
        shape = (frames,) + shape
    cdef uint8_t *out = allocate(allocator, shape, wide, "decode_heic")
    cdef bint direct = native == channels and deep == wide
    cdef uint8_t *work = NULL
    if not direct:
        work = <uint8_t *>malloc(count * native * sample)
        if work == NULL:
            raise MemoryError("out of memory for a HEIC frame")
    cdef Image image
    cdef const uint8_t *plane
    cdef int stride = 0
    cdef int64_t y
    cdef int index
    cdef uint8_t *target
    cdef heif.heif_error error
    try:
        for index in range(frames):
            if index > 0:
                handle = open_image(context, items[index], index)
                if (heif.heif_image_handle_get_height(handle.ptr) != height
                        or heif.heif_image_handle_get_width(handle.ptr) != width
                        or heif.heif_image_handle_get_luma_bits_per_pixel(handle.ptr) != depth):
                    raise RuntimeError(
                        f"HEIC image sequence has frames with mismatched geometry: frame {index} is "
                        f"{heif.heif_image_handle_get_width(handle.ptr)}x{heif.heif_image_handle_get_height(handle.ptr)} "
                        f"at {heif.heif_image_handle_get_luma_bits_per_pixel(handle.ptr)} bits vs {width}x{height} "
                        f"at {depth} bits for the first frame. This is not supported.")
            image = Image()
            with nogil:
                error = heif.heif_decode_image(handle.ptr, &image.ptr, heif.heif_colorspace_RGB, chroma, NULL)
            if error.code != heif.heif_error_Ok:
                raise RuntimeError(f"heif_decode_image failed at frame {index}: {message(error)}.{DECODER_HINT}")
            plane = heif.heif_image_get_plane_readonly(image.ptr, heif.heif_channel_interleaved, &stride)
            if plane == NULL:
                raise RuntimeError("Failed to get the decoded HEIC image plane.")
            if (heif.heif_image_get_width(image.ptr, heif.heif_channel_interleaved) != width
                    or heif.heif_image_get_height(image.ptr, heif.heif_channel_interleaved) != height
                    or stride < <int64_t>row_bytes):
                raise RuntimeError(f"HEIC frame {index} decoded to a size other than the {width}x{height} its header "
                                   f"declares. This file is malformed.")
            target = work if work != NULL else out + index * frame_bytes
            with nogil:
                for y in range(height):
                    memcpy(target + y * row_bytes, plane + y * stride, row_bytes)
                if deep:
                    widen_bits(target, count * native, depth)
                if not direct:
                    convert_pixels(work, native, deep, out + index * frame_bytes, channels, wide, count)
            image = None
    finally:
        free(work)
