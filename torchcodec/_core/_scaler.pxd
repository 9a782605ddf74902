# The Scaler owns a SwsContext: decoded frames to RGB in caller-provided memory, rotation applied.
from libc.stdint cimport uint8_t, uint16_t
from torchcodec._ffmpeg.avutil cimport AVFrame, AVPixelFormat
from torchcodec._ffmpeg.swscale cimport SwsContext


cdef class Scaler:
    cdef SwsContext *ptr
    cdef AVFrame *rotated           # the frame's planes turned by the display rotation
    cdef uint8_t *scratch           # RGB48 (float output) or RGB (rotation of packed inputs)
    cdef size_t scratch_size
    cdef int colorspace             # the colour details last given to ptr (-1: none yet)
    cdef int color_range

    cdef uint8_t *get_scratch(self, size_t size) except NULL nogil
    cdef const AVFrame *rotate_frame(self, const AVFrame *frame, int rotation) except NULL nogil
    cdef int scale(self, const AVFrame *frame, uint8_t *dst, Py_ssize_t row_stride, int width, int height,
                   AVPixelFormat dst_format) except -1 nogil
    cdef int convert(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                     int width, int height, bint as_float) except -1 nogil
