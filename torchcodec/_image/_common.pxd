# What every image codec module shares: modes, output dtypes, EXIF orientation, pixel conversion,
# the size bound, output allocation. See _common.pyx.
from cpython.buffer cimport Py_buffer
from libc.stdint cimport int64_t, uint8_t


cdef enum:
    # ImageReadMode values (torchcodec.decoders.ImageReadMode)
    MODE_UNCHANGED = 0
    MODE_GRAY = 1
    MODE_GRAY_ALPHA = 2
    MODE_RGB = 3
    MODE_RGB_ALPHA = 4
    # output_dtype codes
    DTYPE_UINT8 = 0
    DTYPE_UINT16 = 1
    DTYPE_AUTO = 2

cdef int mode_channels(int mode, int unchanged_channels) noexcept nogil
cdef bint output_wide(int dtype_code, bint source_wide) noexcept nogil

cdef int exif_orientation(const uint8_t *tiff, size_t size) noexcept nogil

cdef struct Markers:
    # What jpeg_markers reads from a JPEG stream's segments
    int orientation             # EXIF, 0 when absent
    bint complete               # an end-of-image marker follows the first scan

cdef Markers jpeg_markers(const uint8_t *data, size_t size) noexcept nogil
cdef bint swaps_axes(int orientation) noexcept nogil
cdef void orient(const uint8_t *src, uint8_t *dst, Py_ssize_t height, Py_ssize_t width, Py_ssize_t pixel_bytes,
                 int orientation) noexcept nogil

cdef void convert_pixels(const uint8_t *src, int src_channels, bint src_wide, uint8_t *dst, int dst_channels,
                         bint dst_wide, size_t count) noexcept nogil
cdef void widen_bits(uint8_t *data, size_t count, int bit_depth) noexcept nogil

cdef int check_size(int64_t frames, int64_t height, int64_t width, int64_t limit, str codec) except -1
cdef object output_bytes(tuple shape, bint wide)
cdef uint8_t *allocate(object allocator, tuple shape, bint wide, str codec, object scratch=*) except NULL

cdef struct Pixels:
    # An image of uint8 channels given by byte strides (read in place by the encoders)
    const uint8_t *data
    Py_ssize_t height
    Py_ssize_t width
    Py_ssize_t channels
    Py_ssize_t channel_stride
    Py_ssize_t row_stride
    Py_ssize_t column_stride

cdef const uint8_t *packed_rows(const Pixels *pixels, uint8_t **owned) noexcept nogil


cdef class EncodedBytes:
    cdef Py_buffer view
    cdef bint has_view
    cdef readonly object owner
    cdef readonly size_t address
    cdef readonly size_t size
