# The Resampler owns a SwrContext (libswresample): any sample format, rate and layout to planar float32
# (decoding) or to an encoder's sample format (encoding).
from libc.stdint cimport int64_t, uint8_t
from torchcodec._ffmpeg.avutil cimport AVChannelLayout, AVFrame
from torchcodec._ffmpeg.swresample cimport SwrContext


cdef class Resampler:
    cdef SwrContext *ptr
    cdef AVChannelLayout in_layout
    cdef AVChannelLayout out_layout
    cdef int in_format
    cdef int out_format
    cdef int in_rate
    cdef int out_rate
    cdef int out_channels
    cdef bint started               # the context has been given samples since it was (re)initialised
    cdef bint copies                # output format, rate and layout are the input's: a copy, no swresample

    cdef int configure(self, const AVFrame *frame) except -1 nogil
    cdef int set_input(self, int in_format, AVChannelLayout *layout) except -1 nogil
    cdef int restart(self) except -1 nogil
    cdef int max_output(self, int in_samples) noexcept nogil
    cdef int convert(self, const AVFrame *frame, int offset, int count, float **out, int capacity) except -1 nogil
    cdef int convert_planes(self, const uint8_t **planes, int count, uint8_t **out, int capacity) except -1 nogil
    cdef int copy_planes(self, const uint8_t **planes, int count, uint8_t **out) noexcept nogil
    cdef int drain(self, uint8_t **out, int capacity) except -1 nogil
