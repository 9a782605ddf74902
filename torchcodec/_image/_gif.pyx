"""GIF with giflib's record-level reader: every frame composited on the logical screen.

Follows TorchCodec 0.17: the output is (N, H, W, C), or (H, W, C) for a single frame, where the
screen is the logical screen widened to the first frame's size; each frame is drawn over the canvas
that the previous frame's disposal method left (DISPOSE_BACKGROUND clears the previous frame's
rectangle, DISPOSE_PREVIOUS restores the canvas from before it); a frame's transparent index leaves
the canvas showing. Cleared areas are transparent (alpha 0) in the alpha modes, and the GIF's
background colour in RGB. UNCHANGED is RGBA when any frame has a transparent index, else RGB.

DGifSlurp would hold every frame's pixel indices in memory; this reader reads the file twice instead:
a first pass counts the frames, adds up their rectangles and finds the transparency without
decompressing anything (so the size bound is checked before any allocation or decompression,
however many frames the file has), a second pass
decompresses each frame's rows straight onto one canvas. giflib's reader still records each image
descriptor (with a copy of its colour map) in SavedImages; they are released after every frame, so
memory stays bounded by the canvas. Colour indices past the end of the colour map are black.
"""
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memset

from torchcodec._image cimport gif_lib as gif
from torchcodec._image._common cimport (
    DTYPE_UINT16, MODE_GRAY, MODE_GRAY_ALPHA, MODE_RGB, MODE_RGB_ALPHA, MODE_UNCHANGED, allocate, check_size,
    convert_pixels, mode_channels)

cdef struct Reader:
    const uint8_t *data
    size_t size
    size_t position


cdef int read_bytes(gif.GifFileType *file, gif.GifByteType *out, int length) noexcept nogil:
    cdef Reader *reader = <Reader *>file.UserData
    cdef size_t n = reader.size - reader.position
    if <size_t>length < n:
        n = length
    memcpy(out, reader.data + reader.position, n)
    reader.position += n
    return <int>n


cdef class GifFile:
    """Owns a giflib decoder (``ptr``) reading from memory."""
    cdef gif.GifFileType *ptr
    cdef Reader reader

    def __dealloc__(self):
        cdef int error = 0
        if self.ptr != NULL:
            gif.DGifCloseFile(self.ptr, &error)

    cdef int open(self, const uint8_t *data, size_t size) except -1:
        cdef int error = 0
        self.reader.data, self.reader.size, self.reader.position = data, size, 0
        self.ptr = gif.DGifOpen(&self.reader, read_bytes, &error)
        if self.ptr == NULL or error != gif.D_GIF_SUCCEEDED:
            raise RuntimeError(f"DGifOpen() failed - {error} ({describe(error)}): not a GIF image, or a corrupt one")
        return 0


cdef str describe(int error):
    cdef const char *text = gif.GifErrorString(error)
    return text.decode("utf-8", "replace") if text != NULL else "unknown error"


cdef void release_saved_images(gif.GifFileType *file) noexcept nogil:
    # DGifGetImageDesc appends every descriptor (and a copy of its colour map) to SavedImages.
    gif.GifFreeSavedImages(file)
    file.ImageCount = 0


cdef void reset_gcb(gif.GraphicsControlBlock *gcb) noexcept nogil:
    gcb.DisposalMode = gif.DISPOSAL_UNSPECIFIED
    gcb.UserInputFlag = False
    gcb.DelayTime = 0
    gcb.TransparentColor = gif.NO_TRANSPARENT_COLOR


cdef int read_extension(gif.GifFileType *file, gif.GraphicsControlBlock *gcb, bint *have_gcb) noexcept nogil:
    """An extension record; the first graphics control block before an image is that image's."""
    cdef int code = 0
    cdef gif.GifByteType *block = NULL
    if gif.DGifGetExtension(file, &code, &block) == gif.GIF_ERROR:
        return -1
    if code == gif.GRAPHICS_EXT_FUNC_CODE and block != NULL and not have_gcb[0]:
        have_gcb[0] = True
        gif.DGifExtensionToGCB(block[0], block + 1, gcb)      # a malformed block leaves the defaults
    while block != NULL:
        if gif.DGifGetExtensionNext(file, &block) == gif.GIF_ERROR:
            return -1
    return 0


cdef int skip_image_data(gif.GifFileType *file) noexcept nogil:
    cdef int code_size = 0
    cdef gif.GifByteType *block = NULL
    if gif.DGifGetCode(file, &code_size, &block) == gif.GIF_ERROR:
        return -1
    while block != NULL:
        if gif.DGifGetCodeNext(file, &block) == gif.GIF_ERROR:
            return -1
    return 0


cdef struct Scan:
    int64_t frames
    int64_t area                # of all frames' rectangles: the pixels to decompress
    int first_width
    int first_height
    bint transparency


cdef int scan(gif.GifFileType *file, Scan *result) noexcept nogil:
    """Pass 1: count the frames, note the first frame's size and whether any frame has a transparent index."""
    cdef gif.GifRecordType record
    cdef gif.GraphicsControlBlock gcb
    cdef bint have_gcb = False
    reset_gcb(&gcb)
    result.frames, result.area, result.transparency = 0, 0, False
    while True:
        if gif.DGifGetRecordType(file, &record) == gif.GIF_ERROR:
            return -1
        if record == gif.IMAGE_DESC_RECORD_TYPE:
            if gif.DGifGetImageDesc(file) == gif.GIF_ERROR:
                return -1
            if result.frames == 0:
                result.first_width, result.first_height = file.Image.Width, file.Image.Height
            result.frames += 1
            result.area += <int64_t>file.Image.Width * file.Image.Height
            if have_gcb and gcb.TransparentColor != gif.NO_TRANSPARENT_COLOR:
                result.transparency = True
            if skip_image_data(file) != 0:
                return -1
            release_saved_images(file)
            reset_gcb(&gcb)
            have_gcb = False
        elif record == gif.EXTENSION_RECORD_TYPE:
            if read_extension(file, &gcb, &have_gcb) != 0:
                return -1
        elif record == gif.TERMINATE_RECORD_TYPE:
            return 0


cdef struct Canvas:
    uint8_t *pixels             # height x width x channels (3, or 4 with alpha)
    uint8_t *saved              # the canvas before a DISPOSE_PREVIOUS frame, or NULL
    int height
    int width
    int channels
    uint8_t background[4]


cdef void fill(Canvas *canvas, int top, int left, int height, int width) noexcept nogil:
    cdef int y, x, c
    cdef uint8_t *pixel
    for y in range(max(top, 0), min(top + height, canvas.height)):
        for x in range(max(left, 0), min(left + width, canvas.width)):
            pixel = canvas.pixels + (<size_t>y * canvas.width + x) * canvas.channels
            for c in range(canvas.channels):
                pixel[c] = canvas.background[c]


cdef int draw(gif.GifFileType *file, Canvas *canvas, const gif.GraphicsControlBlock *gcb, uint8_t *line) noexcept nogil:
    """Decompress the current frame's rows and draw its opaque pixels on the canvas."""
    cdef gif.GifImageDesc *desc = &file.Image
    cdef gif.ColorMapObject *colors = desc.ColorMap if desc.ColorMap != NULL else file.SColorMap
    cdef int rows = desc.Height, width = desc.Width
    cdef int k, step, row, y, x, index
    cdef uint8_t *pixel
    cdef const gif.GifColorType *color
    # interlaced rows come in four passes: every 8th row from 0, every 8th from 4, every 4th from 2, every 2nd from 1
    cdef int offsets[4]
    cdef int jumps[4]
    offsets[0], offsets[1], offsets[2], offsets[3] = 0, 4, 2, 1
    jumps[0], jumps[1], jumps[2], jumps[3] = 8, 8, 4, 2
    if <int64_t>rows * width == 0:
        return skip_image_data(file)
    if colors == NULL:
        file.Error = -1
        return -2
    for k in range(4 if desc.Interlace else 1):
        row = offsets[k] if desc.Interlace else 0
        step = jumps[k] if desc.Interlace else 1
        while row < rows:
            if gif.DGifGetLine(file, line, width) == gif.GIF_ERROR:
                return -1
            y = desc.Top + row
            if 0 <= y < canvas.height:
                for x in range(width):
                    index = line[x]
                    if index == gcb.TransparentColor or not (0 <= desc.Left + x < canvas.width):
                        continue
                    pixel = canvas.pixels + (<size_t>y * canvas.width + desc.Left + x) * canvas.channels
                    if index < colors.ColorCount:
                        color = &colors.Colors[index]
                        pixel[0], pixel[1], pixel[2] = color.Red, color.Green, color.Blue
                    else:
                        pixel[0] = pixel[1] = pixel[2] = 0
                    if canvas.channels == 4:
                        pixel[3] = 255
            row += step
    return 0


cdef int composite(gif.GifFileType *file, Canvas *canvas, uint8_t *out, int channels, bint wide,
                   int64_t frames) noexcept nogil:
    """Pass 2: every frame drawn over the canvas its predecessor's disposal left, then copied to ``out``."""
    cdef uint8_t *line = <uint8_t *>malloc(65536)            # a frame's row (widths are 16-bit)
    if line == NULL:
        return -3
    cdef int ret = composite_frames(file, canvas, out, channels, wide, frames, line)
    free(line)
    return ret


cdef int composite_frames(gif.GifFileType *file, Canvas *canvas, uint8_t *out, int channels, bint wide,
                          int64_t frames, uint8_t *line) noexcept nogil:
    cdef gif.GifRecordType record
    cdef gif.GraphicsControlBlock gcb
    cdef bint have_gcb = False
    cdef int previous_disposal = gif.DISPOSAL_UNSPECIFIED
    cdef int previous_top = 0, previous_left = 0, previous_height = 0, previous_width = 0
    cdef size_t count = <size_t>canvas.height * canvas.width
    cdef size_t canvas_bytes = count * canvas.channels
    cdef size_t frame_bytes = count * channels * (2 if wide else 1)
    cdef int64_t index = 0
    cdef int ret
    reset_gcb(&gcb)
    fill(canvas, 0, 0, canvas.height, canvas.width)
    while index < frames:
        if gif.DGifGetRecordType(file, &record) == gif.GIF_ERROR:
            return -1
        if record == gif.EXTENSION_RECORD_TYPE:
            if read_extension(file, &gcb, &have_gcb) != 0:
                return -1
        elif record == gif.IMAGE_DESC_RECORD_TYPE:
            if gif.DGifGetImageDesc(file) == gif.GIF_ERROR:
                return -1
            if index > 0:
                if previous_disposal == gif.DISPOSE_BACKGROUND:
                    fill(canvas, previous_top, previous_left, previous_height, previous_width)
                elif previous_disposal == gif.DISPOSE_PREVIOUS and canvas.saved != NULL:
                    memcpy(canvas.pixels, canvas.saved, canvas_bytes)
            if gcb.DisposalMode == gif.DISPOSE_PREVIOUS:
                if canvas.saved == NULL:
                    canvas.saved = <uint8_t *>malloc(canvas_bytes)
                    if canvas.saved == NULL:
                        return -3
                memcpy(canvas.saved, canvas.pixels, canvas_bytes)
            ret = draw(file, canvas, &gcb, line)
            if ret != 0:
                return ret
            if channels == canvas.channels and not wide:
                memcpy(out + index * frame_bytes, canvas.pixels, canvas_bytes)
            else:
                convert_pixels(canvas.pixels, canvas.channels, False, out + index * frame_bytes, channels, wide,
                               count)
            previous_disposal = gcb.DisposalMode
            previous_top, previous_left = file.Image.Top, file.Image.Left
            previous_height, previous_width = file.Image.Height, file.Image.Width
            release_saved_images(file)
            reset_gcb(&gcb)
            have_gcb = False
            index += 1
        elif record == gif.TERMINATE_RECORD_TYPE:
            return -1
    return 0


def decode(size_t address, size_t size, int mode, int dtype_code, int64_t limit, object allocator):
    """Decode the GIF of ``size`` bytes at ``address`` into memory from ``allocator(shape, dtype)``:
    (N, H, W, C), or (H, W, C) for a single frame."""
    cdef const uint8_t *data = <const uint8_t *>address
    cdef GifFile first = GifFile()
    first.open(data, size)
    cdef Scan found
    cdef int ret
    with nogil:
        ret = scan(first.ptr, &found)
    if ret != 0:
        raise RuntimeError(f"DGifSlurp() failed - {first.ptr.Error} ({describe(first.ptr.Error)}): the GIF is "
                           f"truncated or corrupt")
    if found.frames == 0:
        raise RuntimeError("GIF file should contain at least one image!")
    cdef Canvas canvas
    canvas.height = max(first.ptr.SHeight, found.first_height)
    canvas.width = max(first.ptr.SWidth, found.first_width)
    check_size(found.frames, canvas.height, canvas.width, limit, "decode_gif")
    if found.area > limit:                 # frames far larger than the screen: work for nothing
        check_size(1, found.area, 1, limit, "decode_gif (the frames' rectangles)")
    cdef bint alpha = mode == MODE_RGB_ALPHA or mode == MODE_GRAY_ALPHA or (mode == MODE_UNCHANGED and found.transparency)
    canvas.channels = 4 if alpha else 3
    cdef int channels = mode_channels(mode, canvas.channels)
    cdef bint wide = dtype_code == DTYPE_UINT16
    cdef gif.ColorMapObject *screen_colors = first.ptr.SColorMap
    cdef int background = first.ptr.SBackGroundColor
    memset(canvas.background, 0, 4)
    if not alpha and screen_colors != NULL and 0 <= background < screen_colors.ColorCount:
        canvas.background[0] = screen_colors.Colors[background].Red
        canvas.background[1] = screen_colors.Colors[background].Green
        canvas.background[2] = screen_colors.Colors[background].Blue

    cdef tuple shape = (canvas.height, canvas.width, channels)
    if found.frames > 1:
        shape = (found.frames,) + shape
    cdef uint8_t *out = allocate(allocator, shape, wide, "decode_gif")
    cdef GifFile second = GifFile()
    second.open(data, size)
    canvas.saved = NULL
    canvas.pixels = <uint8_t *>malloc(<size_t>canvas.height * canvas.width * canvas.channels)
    if canvas.pixels == NULL:
        raise MemoryError("out of memory for the GIF canvas")
    with nogil:
        ret = composite(second.ptr, &canvas, out, channels, wide, found.frames)
        free(canvas.pixels)
        free(canvas.saved)
    if ret == -2:
        raise RuntimeError("Global and local color maps are missing: the GIF is corrupt")
    if ret == -3:
        raise MemoryError("out of memory while decoding the GIF")
    if ret != 0:
        raise RuntimeError(f"DGifSlurp() failed - {second.ptr.Error} ({describe(second.ptr.Error)}): the GIF is "
                           f"truncated or corrupt")
