"""PNG with libpng: decoding and encoding.

Decoding follows TorchCodec 0.17: every mode through libpng's own transformations (palette to RGB,
tRNS to alpha, gray to RGB, RGB to gray with the 0.2989/0.587 weights, an opaque alpha added,
16-bit samples scaled to 8 bits or 8-bit samples expanded to 16), the eXIf orientation applied.
libpng reports errors by longjmp: every sequence of libpng calls runs as one "step" under
``tc_png_guard`` (pngguard.h), a Cython function that holds no Python object, so the longjmp only
discards C frames; messages go through the step's state.

Encoding: 8-bit gray or RGB, no interlacing, libpng's default filters at the given zlib level.
"""
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcpy, strncpy

from torchcodec._image cimport png
from torchcodec._image._common cimport (
    DTYPE_UINT8, MODE_GRAY, MODE_GRAY_ALPHA, MODE_RGB, MODE_RGB_ALPHA, MODE_UNCHANGED, Pixels, allocate,
    check_size, exif_orientation, orient, output_wide, packed_rows, swaps_axes)

cdef enum:
    MESSAGE_SIZE = 256

cdef bint LITTLE_ENDIAN = (<const uint8_t *><const char *>b"\x01\x00")[0] == 1


cdef struct ReadState:
    const uint8_t *data
    size_t size
    size_t position
    char message[MESSAGE_SIZE]
    int mode
    int dtype_code
    png.png_infop info
    # filled by the header step
    png.png_uint_32 width
    png.png_uint_32 height
    int channels
    bint wide
    int passes
    int orientation
    size_t row_bytes
    # for the rows step
    uint8_t *rows


cdef void on_error(png.png_structp png_ptr, png.png_const_charp message) noexcept nogil:
    cdef char *buffer = <char *>png.png_get_error_ptr(png_ptr)
    strncpy(buffer, message, MESSAGE_SIZE - 1)
    buffer[MESSAGE_SIZE - 1] = 0
    png.png_longjmp(png_ptr, 1)


cdef void on_warning(png.png_structp png_ptr, png.png_const_charp message) noexcept nogil:
    pass                                                    # libpng's warnings are not errors


cdef void read_data(png.png_structp png_ptr, png.png_bytep out, size_t length) noexcept nogil:
    cdef ReadState *state = <ReadState *>png.png_get_io_ptr(png_ptr)
    if state.size - state.position < length:
        png.png_error(png_ptr, b"Out of bound read in decode_png. The input image might be corrupted?")
    memcpy(out, state.data + state.position, length)
    state.position += length


cdef void read_header(png.png_structp png_ptr, void *arg) noexcept nogil:
    """Step 1: the header and chunks before the image data; transformations chosen for the mode."""
    cdef ReadState *state = <ReadState *>arg
    cdef png.png_infop info = state.info
    cdef int bit_depth = 0, color_type = 0, interlace = 0
    png.png_read_info(png_ptr, info)
    png.png_get_IHDR(png_ptr, info, &state.width, &state.height, &bit_depth, &color_type, &interlace, NULL, NULL)
    if bit_depth > 8 and bit_depth != 16:
        png.png_error(png_ptr, b"unsupported bit depth (only <=8 and 16 are supported)")
    state.wide = output_wide(state.dtype_code, bit_depth == 16)
    cdef png.png_uint_32 exif_size = 0
    cdef png.png_bytep exif = NULL
    state.orientation = 0
    if png.png_get_valid(png_ptr, info, png.PNG_INFO_eXIf):
        png.png_get_eXIf_1(png_ptr, info, &exif_size, &exif)
        if exif != NULL and exif_size > 0:
            state.orientation = exif_orientation(exif, exif_size)

    cdef bint palette = (color_type & png.PNG_COLOR_MASK_PALETTE) != 0
    cdef bint color = (color_type & png.PNG_COLOR_MASK_COLOR) != 0
    cdef bint trns = png.png_get_valid(png_ptr, info, png.PNG_INFO_tRNS) != 0
    cdef bint alpha = (color_type & png.PNG_COLOR_MASK_ALPHA) != 0 or trns
    cdef png.png_uint_32 opaque = 65535 if state.wide else 255
    state.channels = png.png_get_channels(png_ptr, info)
    if color_type == png.PNG_COLOR_TYPE_GRAY and bit_depth < 8:
        png.png_set_expand_gray_1_2_4_to_8(png_ptr)
    state.passes = png.png_set_interlace_handling(png_ptr) if interlace == png.PNG_INTERLACE_ADAM7 else 1
    if state.mode == MODE_UNCHANGED:
        if palette:                         # the palette's colours, as Pillow shows them
            png.png_set_palette_to_rgb(png_ptr)
            state.channels = 3
            if trns:
                png.png_set_tRNS_to_alpha(png_ptr)
                state.channels = 4
        elif trns:
            png.png_set_strip_alpha(png_ptr)
    elif state.mode == MODE_GRAY or state.mode == MODE_GRAY_ALPHA:
        if palette:
            png.png_set_palette_to_rgb(png_ptr)
        if state.mode == MODE_GRAY:
            if alpha:
                png.png_set_strip_alpha(png_ptr)
            state.channels = 1
        else:
            if trns:
                png.png_set_tRNS_to_alpha(png_ptr)
            elif not alpha:
                png.png_set_add_alpha(png_ptr, opaque, png.PNG_FILLER_AFTER)
            state.channels = 2
        if color:
            png.png_set_rgb_to_gray(png_ptr, 1, 0.2989, 0.587)
    else:
        if palette:
            png.png_set_palette_to_rgb(png_ptr)
        elif not color:
            png.png_set_gray_to_rgb(png_ptr)
        if state.mode == MODE_RGB:
            if alpha:
                png.png_set_strip_alpha(png_ptr)
            state.channels = 3
        else:
            if trns:
                png.png_set_tRNS_to_alpha(png_ptr)
            elif not alpha:
                png.png_set_add_alpha(png_ptr, opaque, png.PNG_FILLER_AFTER)
            state.channels = 4
    if state.wide and bit_depth != 16:
        png.png_set_expand_16(png_ptr)
    elif not state.wide and bit_depth == 16:
        png.png_set_scale_16(png_ptr)
    if state.wide and LITTLE_ENDIAN:
        png.png_set_swap(png_ptr)
    png.png_read_update_info(png_ptr, info)
    state.row_bytes = png.png_get_rowbytes(png_ptr, info)
    if state.row_bytes != <size_t>state.width * state.channels * (2 if state.wide else 1):
        png.png_error(png_ptr, b"libpng's rows do not have the expected size (please report this as a bug)")


cdef void read_rows(png.png_structp png_ptr, void *arg) noexcept nogil:
    """Step 2: the image data, into ``state.rows`` (every interlace pass over the same rows)."""
    cdef ReadState *state = <ReadState *>arg
    cdef int p
    cdef png.png_uint_32 y
    for p in range(state.passes):
        for y in range(state.height):
            png.png_read_row(png_ptr, state.rows + y * state.row_bytes, NULL)


cdef class ReadStruct:
    """Owns a libpng read structure (``ptr``) and its info structure."""
    cdef png.png_structp ptr
    cdef png.png_infop info

    def __cinit__(self):
        self.ptr = png.png_create_read_struct(png.PNG_LIBPNG_VER_STRING, NULL, NULL, NULL)
        if self.ptr == NULL:
            raise MemoryError("png_create_read_struct failed")
        self.info = png.png_create_info_struct(self.ptr)
        if self.info == NULL:
            raise MemoryError("png_create_info_struct failed")

    def __dealloc__(self):
        if self.ptr != NULL:
            png.png_destroy_read_struct(&self.ptr, &self.info if self.info != NULL else NULL, NULL)


def decode(size_t address, size_t size, int mode, int dtype_code, int64_t limit, object allocator):
    """Decode the PNG of ``size`` bytes at ``address`` into memory from ``allocator(shape, dtype)``
    (shape (H, W, C), uint8 or uint16); raises RuntimeError with libpng's message on bad data."""
    cdef ReadStruct reader = ReadStruct()
    cdef ReadState state
    state.data, state.size, state.position = <const uint8_t *>address, size, 0
    state.message[0] = 0
    state.mode, state.dtype_code, state.info = mode, dtype_code, reader.info
    state.rows = NULL
    png.png_set_error_fn(reader.ptr, state.message, on_error, on_warning)
    png.png_set_read_fn(reader.ptr, &state, read_data)
    cdef int ret
    with nogil:
        ret = png.tc_png_guard(reader.ptr, read_header, &state)
    if ret != 0:
        raise RuntimeError(f"decode_png failed: {state.message.decode('utf-8', 'replace')}")
    check_size(1, state.height, state.width, limit, "decode_png")
    cdef bint oriented = state.orientation > 1
    cdef tuple shape = (state.height, state.width, state.channels)
    if swaps_axes(state.orientation):
        shape = (state.width, state.height, state.channels)
    cdef uint8_t *out = allocate(allocator, shape, state.wide, "decode_png")
    cdef size_t total = state.row_bytes * state.height
    state.rows = out
    if oriented:
        state.rows = <uint8_t *>malloc(total)
        if state.rows == NULL:
            raise MemoryError("out of memory for the image's rows")
    with nogil:
        ret = png.tc_png_guard(reader.ptr, read_rows, &state)
        if ret == 0 and oriented:
            orient(state.rows, out, state.height, state.width, state.row_bytes // state.width, state.orientation)
        if oriented:
            free(state.rows)
    if ret != 0:
        raise RuntimeError(f"decode_png failed: {state.message.decode('utf-8', 'replace')}")


# ---- encoding ------------------------------------------------------------------------------

cdef struct WriteState:
    char message[MESSAGE_SIZE]
    uint8_t *buffer
    size_t size
    size_t capacity
    png.png_infop info
    const uint8_t *rows
    size_t row_stride
    png.png_uint_32 width
    png.png_uint_32 height
    int color_type
    int level


cdef void write_data(png.png_structp png_ptr, png.png_bytep data, size_t length) noexcept nogil:
    cdef WriteState *state = <WriteState *>png.png_get_io_ptr(png_ptr)
    cdef size_t capacity
    cdef uint8_t *grown
    if state.size + length > state.capacity:
        capacity = max(2 * state.capacity, state.size + length, <size_t>65536)
        grown = <uint8_t *>realloc(state.buffer, capacity)
        if grown == NULL:
            png.png_error(png_ptr, b"out of memory for the encoded image")
        state.buffer, state.capacity = grown, capacity
    memcpy(state.buffer + state.size, data, length)
    state.size += length


cdef void flush_data(png.png_structp png_ptr) noexcept nogil:
    pass


cdef void write_image(png.png_structp png_ptr, void *arg) noexcept nogil:
    cdef WriteState *state = <WriteState *>arg
    cdef png.png_uint_32 y
    png.png_set_IHDR(png_ptr, state.info, state.width, state.height, 8, state.color_type, png.PNG_INTERLACE_NONE,
                     png.PNG_COMPRESSION_TYPE_DEFAULT, png.PNG_FILTER_TYPE_DEFAULT)
    png.png_set_compression_level(png_ptr, state.level)
    png.png_write_info(png_ptr, state.info)
    for y in range(state.height):
        png.png_write_row(png_ptr, state.rows + y * state.row_stride)
    png.png_write_end(png_ptr, state.info)


cdef class WriteStruct:
    """Owns a libpng write structure (``ptr``) and its info structure."""
    cdef png.png_structp ptr
    cdef png.png_infop info

    def __cinit__(self):
        self.ptr = png.png_create_write_struct(png.PNG_LIBPNG_VER_STRING, NULL, NULL, NULL)
        if self.ptr == NULL:
            raise MemoryError("png_create_write_struct failed")
        self.info = png.png_create_info_struct(self.ptr)
        if self.info == NULL:
            raise MemoryError("png_create_info_struct failed")

    def __dealloc__(self):
        if self.ptr != NULL:
            png.png_destroy_write_struct(&self.ptr, &self.info if self.info != NULL else NULL)


def encode(size_t address, Py_ssize_t channels, Py_ssize_t height, Py_ssize_t width, Py_ssize_t channel_stride,
           Py_ssize_t row_stride, Py_ssize_t column_stride, int level):
    """Encode the uint8 image at ``address`` (1 or 3 channels, byte strides given) as a PNG at zlib
    ``level`` (0..9); returns the bytes."""
    cdef Pixels pixels
    pixels.data = <const uint8_t *>address
    pixels.channels, pixels.height, pixels.width = channels, height, width
    pixels.channel_stride, pixels.row_stride, pixels.column_stride = channel_stride, row_stride, column_stride
    cdef WriteStruct writer = WriteStruct()
    cdef WriteState state
    state.message[0] = 0
    state.buffer, state.size, state.capacity = NULL, 0, 0
    state.info = writer.info
    state.width, state.height = <png.png_uint_32>width, <png.png_uint_32>height
    state.color_type = png.PNG_COLOR_TYPE_GRAY if channels == 1 else png.PNG_COLOR_TYPE_RGB
    state.level = level
    png.png_set_error_fn(writer.ptr, state.message, on_error, on_warning)
    png.png_set_write_fn(writer.ptr, &state, write_data, flush_data)
    cdef uint8_t *owned = NULL
    cdef int ret = -1
    try:
        with nogil:
            state.rows = packed_rows(&pixels, &owned)
            state.row_stride = row_stride if owned == NULL else width * channels
            if state.rows != NULL:
                ret = png.tc_png_guard(writer.ptr, write_image, &state)
        if state.rows == NULL:
            raise MemoryError("out of memory while gathering the image's pixels")
        if ret != 0:
            raise RuntimeError(f"encode_png failed: {state.message.decode('utf-8', 'replace')}")
        return PyBytes_FromStringAndSize(<const char *>state.buffer, state.size)
    finally:
        free(owned)
        free(state.buffer)
