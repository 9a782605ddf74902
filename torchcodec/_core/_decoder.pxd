# The StreamDecoder owns an AVCodecContext (libavcodec, CPU).
from torchcodec._core._demuxer cimport Demuxer
from torchcodec._ffmpeg.avcodec cimport AVCodecContext, AVPacket
from torchcodec._ffmpeg.avutil cimport AVFrame


cdef class StreamDecoder:
    cdef AVCodecContext *ptr
    cdef readonly int stream_index
    cdef bint input_done                # the decoder was sent the end of the stream
    cdef bint output_done               # the decoder has returned its last frame
    cdef int bad_packets                # consecutive packets or frames the decoder refused

    cdef int send(self, const AVPacket *packet) noexcept nogil
    cdef int receive(self, AVFrame *frame) noexcept nogil
    cdef void flush(self) noexcept nogil
    cdef int next_frame(self, Demuxer demuxer, AVPacket *packet, AVFrame *frame) except -1 nogil
    cdef int refuse_or_raise(self, int ret, const char *where) except -1 nogil
