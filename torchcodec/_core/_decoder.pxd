# The StreamDecoder owns an AVCodecContext (libavcodec, CPU).
from torchcodec._ffmpeg.avcodec cimport AVCodecContext, AVPacket
from torchcodec._ffmpeg.avutil cimport AVFrame


cdef class StreamDecoder:
    cdef AVCodecContext *ptr

    cdef int send(self, const AVPacket *packet) noexcept nogil
    cdef int receive(self, AVFrame *frame) noexcept nogil
    cdef void flush(self) noexcept nogil
