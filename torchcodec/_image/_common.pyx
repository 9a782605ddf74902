"""What every image codec module shares.

- The ImageReadMode and output_dtype codes, and how many channels a mode gives.
- EXIF orientation: the tag read from TIFF-formatted EXIF data (found in a JPEG's APP1 segment by
  the one walk of its markers, which also says whether the stream is complete), and the copy that
  applies it.
- Pixel conversion between channel layouts (gray from RGB with TorchCodec's luma weights, an opaque
  alpha channel added, 8-bit samples widened to 16 bits), in place when the output is larger.
- The size bounds checked before any output is allocated (the pixel limit, then the memory limit of
  torchcodec._memory), and the allocation through the caller's allocator (the bridge's array library).
"""
from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.math cimport nearbyintf
from libc.stdint cimport int64_t, uint8_t, uint16_t, uint32_t
from libc.stdlib cimport malloc
from libc.string cimport memcmp, memcpy


from torchcodec._memory import MemoryLimitError
from torchcodec._memory import check_request


class ImageTooLargeError(MemoryLimitError):
    """An image whose decoded size is over the pixel limit (``torchcodec.decoders.set_max_image_pixels``).
    Raised from the header, before anything is allocated. A MemoryLimitError (so a MemoryError and a
    RuntimeError) like the memory limit's (``torchcodec.set_memory_limit``), which images respect too."""


cdef int mode_channels(int mode, int unchanged_channels) noexcept nogil:
    """Channels of the output for ``mode``; UNCHANGED keeps the source's (``unchanged_channels``)."""
    if mode == MODE_GRAY:
        return 1
    if mode == MODE_GRAY_ALPHA:
        return 2
    if mode == MODE_RGB:
        return 3
    if mode == MODE_RGB_ALPHA:
        return 4
    return unchanged_channels


cdef bint output_wide(int dtype_code, bint source_wide) noexcept nogil:
    """Whether the output holds 16-bit samples: uint16 always, "auto" when the source has more than 8 bits."""
    if dtype_code == DTYPE_UINT16:
        return True
    if dtype_code == DTYPE_AUTO:
        return source_wide
    return False


# ---- EXIF orientation ----------------------------------------------------------------------------
# The orientation tag (0x0112) of IFD0 of TIFF-formatted EXIF data, read the way TorchCodec reads it:
# byte order from the first two bytes ("II" little-endian, "MM" big-endian), the TIFF mark 0x2a,
# then IFD0's entries until the tag; any read past the end ends the search. 1..8, or 0 when absent.

cdef uint32_t read_u16(const uint8_t *p, size_t size, bint little, size_t offset) noexcept nogil:
    if offset + 1 >= size:
        return 0xFFFF
    if little:
        return p[offset] | (<uint32_t>p[offset + 1] << 8)
    return (<uint32_t>p[offset] << 8) | p[offset + 1]


cdef uint32_t read_u32(const uint8_t *p, size_t size, bint little, size_t offset) noexcept nogil:
    if offset + 3 >= size:
        return 0xFFFFFFFF
    if little:
        return p[offset] | (<uint32_t>p[offset + 1] << 8) | (<uint32_t>p[offset + 2] << 16) | (<uint32_t>p[offset + 3] << 24)
    return (<uint32_t>p[offset] << 24) | (<uint32_t>p[offset + 1] << 16) | (<uint32_t>p[offset + 2] << 8) | p[offset + 3]


cdef int exif_orientation(const uint8_t *tiff, size_t size) noexcept nogil:
    if tiff == NULL or size < 2 or tiff[0] != tiff[1]:
        return 0
    cdef bint little = tiff[0] == b'I'
    if read_u16(tiff, size, little, 2) != 0x2a:
        return 0
    cdef size_t offset = read_u32(tiff, size, little, 4)
    cdef uint32_t count = read_u16(tiff, size, little, offset)
    cdef uint32_t entry, tag, value
    offset += 2
    for entry in range(count):
        tag = read_u16(tiff, size, little, offset)
        if tag == 0xFFFF:
            break
        if tag == 0x0112:
            value = read_u16(tiff, size, little, offset + 8)
            return <int>value if 1 <= value <= 8 else 0
        offset += 12
    return 0


# ---- JPEG markers --------------------------------------------------------------------------------

cdef Markers jpeg_markers(const uint8_t *data, size_t size) noexcept nogil:
    """Walk a JPEG stream's segments before the first scan: the EXIF orientation of the first APP1
    segment that starts with "Exif\\0\\0"; then whether an end-of-image marker (FF D9) lies after the
    scan start. The one reading of JPEG metadata: libjpeg-turbo's decoder and nvJPEG's both use it."""
    cdef Markers found
    found.orientation = 0
    found.complete = True                 # unknown structure: let the decoder decide
    if size < 4 or data[0] != 0xFF or data[1] != 0xD8:
        return found
    cdef size_t pos = 2, length, scan = 0, i
    cdef uint8_t marker
    cdef bint have_exif = False
    while pos + 4 <= size:
        if data[pos] != 0xFF:
            return found
        marker = data[pos + 1]
        if marker == 0xFF:                # fill byte
            pos += 1
            continue
        if marker == 0xD8 or marker == 0x01 or 0xD0 <= marker <= 0xD7:
            pos += 2
            continue
        if marker == 0xD9:
            return found
        length = (<size_t>data[pos + 2] << 8) | data[pos + 3]
        if length < 2 or pos + 2 + length > size:
            found.complete = False        # a segment runs past the end of the data
            return found
        if marker == 0xE1 and not have_exif and length - 2 > 6 and memcmp(data + pos + 4, b"Exif\0\0", 6) == 0:
            have_exif = True
            found.orientation = exif_orientation(data + pos + 10, length - 8)
        if marker == 0xDA:
            scan = pos + 2 + length
            break
        pos += 2 + length
    if scan == 0:
        found.complete = pos + 4 <= size
        return found
    found.complete = False
    i = size - 1
    while i > scan:
        if data[i] == 0xD9 and data[i - 1] == 0xFF:
            found.complete = True
            break
        i -= 1
    return found


cdef bint swaps_axes(int orientation) noexcept nogil:
    """Orientations 5..8 transpose the image: the output is width x height."""
    return 5 <= orientation <= 8


cdef inline void copy_pixel(uint8_t *dst, const uint8_t *src, Py_ssize_t n) noexcept nogil:
    if n == 3:
        memcpy(dst, src, 3)
    elif n == 4:
        memcpy(dst, src, 4)
    elif n == 1:
        dst[0] = src[0]
    elif n == 2:
        memcpy(dst, src, 2)
    elif n == 6:
        memcpy(dst, src, 6)
    elif n == 8:
        memcpy(dst, src, 8)
    else:
        memcpy(dst, src, n)


cdef void orient(const uint8_t *src, uint8_t *dst, Py_ssize_t height, Py_ssize_t width, Py_ssize_t pixel_bytes,
                 int orientation) noexcept nogil:
    """Copy the packed ``height`` x ``width`` image ``src`` into ``dst`` displayed the way EXIF
    ``orientation`` says: 2 mirrors left-right, 3 rotates 180 degrees, 4 mirrors top-bottom, 5
    transposes, 6 rotates 90 degrees clockwise, 7 transverses, 8 rotates 90 degrees counter-clockwise
    (``dst`` is width x height for 5..8). Output pixel (y, x) reads ``src`` at
    ``start + y * step_y + x * step_x``."""
    cdef Py_ssize_t row = width * pixel_bytes
    cdef Py_ssize_t start = 0, step_y = row, step_x = pixel_bytes
    cdef Py_ssize_t out_height = height, out_width = width
    if orientation == 2:
        start, step_y, step_x = (width - 1) * pixel_bytes, row, -pixel_bytes
    elif orientation == 3:
        start, step_y, step_x = (height - 1) * row + (width - 1) * pixel_bytes, -row, -pixel_bytes
    elif orientation == 4:
        start, step_y, step_x = (height - 1) * row, -row, pixel_bytes
    elif orientation == 5:
        start, step_y, step_x = 0, pixel_bytes, row
    elif orientation == 6:
        start, step_y, step_x = (height - 1) * row, pixel_bytes, -row
    elif orientation == 7:
        start, step_y, step_x = (height - 1) * row + (width - 1) * pixel_bytes, -pixel_bytes, -row
    elif orientation == 8:
        start, step_y, step_x = (width - 1) * pixel_bytes, -pixel_bytes, row
    if swaps_axes(orientation):
        out_height, out_width = width, height
    cdef Py_ssize_t y, x
    cdef const uint8_t *line
    cdef uint8_t *out = dst
    for y in range(out_height):
        line = src + start + y * step_y
        for x in range(out_width):
            copy_pixel(out, line + x * step_x, pixel_bytes)
            out += pixel_bytes


# ---- pixel conversion ------------------------------------------------------------------------

cdef inline float luma(float r, float g, float b) noexcept nogil:
    # ITU-R 601-2 weights in float32, summed in this order, rounded half to even: TorchCodec's
    # rgb_to_gray (its weights tensor times the channels, summed over them, .round()).
    cdef float total = r * <float>0.2989
    total += g * <float>0.587
    total += b * <float>0.114
    return nearbyintf(total)


cdef void convert_pixels(const uint8_t *src, int src_channels, bint src_wide, uint8_t *dst, int dst_channels,
                         bint dst_wide, size_t count) noexcept nogil:
    """Convert ``count`` packed pixels of ``src_channels`` (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA)
    8- or 16-bit (``*_wide``) samples to ``dst_channels``: RGB to gray by TorchCodec's luma (computed
    at the source's depth), gray to RGB by copying, alpha copied or opaque when the source has none,
    8-bit samples widened to 16 bits exactly (v * 257). ``src`` and ``dst`` may be the same memory:
    a larger output is filled from the last pixel backwards. (16-bit sources are never narrowed here.)"""
    cdef int src_color = 1 if src_channels <= 2 else 3
    cdef int dst_color = 1 if dst_channels <= 2 else 3
    cdef bint src_alpha = src_channels == 2 or src_channels == 4
    cdef bint dst_alpha = dst_channels == 2 or dst_channels == 4
    cdef uint32_t src_max = 65535 if src_wide else 255
    cdef uint32_t scale = 257 if (dst_wide and not src_wide) else 1
    cdef size_t src_pixel = src_channels * (2 if src_wide else 1)
    cdef size_t dst_pixel = dst_channels * (2 if dst_wide else 1)
    cdef bint backwards = dst_pixel > src_pixel
    cdef size_t n, i
    cdef uint32_t v[4]
    cdef uint32_t out[4]
    cdef int c, k
    cdef float gray
    cdef const uint16_t *s16
    cdef uint16_t *d16
    for n in range(count):
        i = count - 1 - n if backwards else n
        if src_wide:
            s16 = <const uint16_t *>(src + i * src_pixel)
            for c in range(src_channels):
                v[c] = s16[c]
        else:
            for c in range(src_channels):
                v[c] = src[i * src_pixel + c]
        if dst_color == src_color:
            for c in range(dst_color):
                out[c] = v[c]
        elif dst_color == 1:
            gray = luma(<float>v[0], <float>v[1], <float>v[2])
            out[0] = <uint32_t>(gray if gray < src_max else src_max)
        else:
            out[0] = out[1] = out[2] = v[0]
        k = dst_color
        if dst_alpha:
            out[k] = v[src_color] if src_alpha else src_max
            k += 1
        if dst_wide:
            d16 = <uint16_t *>(dst + i * dst_pixel)
            for c in range(k):
                d16[c] = <uint16_t>(out[c] * scale)
        else:
            for c in range(k):
                dst[i * dst_pixel + c] = <uint8_t>out[c]


cdef void widen_bits(uint8_t *data, size_t count, int bit_depth) noexcept nogil:
    """Scale ``count`` 16-bit samples holding ``bit_depth``-bit values (e.g. 0..1023) to the full
    0..65535 range by bit replication, as TorchCodec does for HEIC: (v << s) | (v >> (depth - s))."""
    cdef uint16_t *samples = <uint16_t *>data
    cdef int shift = 16 - bit_depth
    cdef size_t i
    cdef uint32_t v
    if bit_depth <= 8 or bit_depth >= 16:
        return
    for i in range(count):
        v = samples[i]
        samples[i] = <uint16_t>((v << shift) | (v >> (bit_depth - shift)))


# ---- bounds and allocation ----------------------------------------------------------------------

cdef int check_size(int64_t frames, int64_t height, int64_t width, int64_t limit, str codec) except -1:
    """Refuse, before anything is allocated, an image whose frames hold more than ``limit`` pixels in all."""
    if frames <= 0 or height <= 0 or width <= 0:
        raise RuntimeError(f"{codec}: the image has no pixels ({frames} frame(s) of {width}x{height})")
    cdef object total = <object>frames * height * width       # a Python int: no overflow
    if total > limit:
        what = f"{frames} frames of {width}x{height}" if frames > 1 else f"{width}x{height}"
        raise ImageTooLargeError(
            f"{codec}: the image declares {what} pixels, more than the limit of {limit} pixels "
            f"(a decompression bomb or a corrupt header?); raise the limit with "
            f"torchcodec.decoders.set_max_image_pixels() if the image is genuine")
    return 0


cdef object output_bytes(tuple shape, bint wide):
    """Bytes of an output of ``shape`` (a Python int: no overflow)."""
    cdef object nbytes = 2 if wide else 1
    for extent in shape:
        nbytes *= extent
    return nbytes


cdef uint8_t *allocate(object allocator, tuple shape, bint wide, str codec, object scratch=0) except NULL:
    """The output's memory, after the memory limit (torchcodec.set_memory_limit) allowed it and
    ``scratch`` more bytes (the codec's working memory): ``allocator(shape, dtype)`` allocates it
    (with the bridge's library) and returns its address; the codec writes into it."""
    cdef tuple shown = shape[:-3] + shape[-1:] + shape[-3:-1]           # as the user sees it: [N,] C, H, W
    check_request(f"{codec}: an image of shape {shown} ({'uint16' if wide else 'uint8'})",
                  other_bytes=output_bytes(shape, wide) + scratch)
    cdef size_t address = allocator(shape, "uint16" if wide else "uint8")
    if address == 0:
        raise MemoryError(f"could not allocate an image of shape {shape}")
    return <uint8_t *>address


cdef const uint8_t *packed_rows(const Pixels *pixels, uint8_t **owned) noexcept nogil:
    """The image as rows of packed pixels (channels innermost): ``pixels.data`` itself when it is laid
    out so with rows going forward (row stride ``pixels.row_stride``), else a gathered copy in ``*owned`` (malloc'ed, row
    stride width * channels; the caller frees it). NULL when memory runs out."""
    owned[0] = NULL
    if (pixels.channel_stride == 1 and pixels.column_stride == pixels.channels
            and pixels.row_stride >= pixels.width * pixels.channels):
        return pixels.data
    cdef uint8_t *copy = <uint8_t *>malloc(pixels.height * pixels.width * pixels.channels)
    if copy == NULL:
        return NULL
    cdef Py_ssize_t y, x, c
    cdef uint8_t *out = copy
    cdef const uint8_t *row
    for y in range(pixels.height):
        row = pixels.data + y * pixels.row_stride
        for x in range(pixels.width):
            for c in range(pixels.channels):
                out[0] = row[x * pixels.column_stride + c * pixels.channel_stride]
                out += 1
    owned[0] = copy
    return copy


cdef class EncodedBytes:
    """Encoded image bytes, read in place: the buffer of ``source`` (bytes, bytearray, memoryview, a
    contiguous numpy array), held until this object goes; or, given ``address`` and ``size``, the
    memory of ``source`` (a torch tensor), which is kept alive."""

    def __cinit__(self, object source, size_t address=0, size_t size=0):
        self.has_view = False
        self.owner = source
        if address != 0:
            self.address, self.size = address, size
            return
        PyObject_GetBuffer(source, &self.view, PyBUF_C_CONTIGUOUS)
        self.has_view = True
        self.address, self.size = <size_t>self.view.buf, <size_t>self.view.len

    def __dealloc__(self):
        if self.has_view:
            PyBuffer_Release(&self.view)

    def head(self, Py_ssize_t n):
        """The first ``n`` bytes (fewer when there are fewer)."""
        return PyBytes_FromStringAndSize(<const char *>self.address, min(<size_t>n, self.size))
