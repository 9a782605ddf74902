# Decoders of one stream's packets into AVFrames: the FrameDecoder interface that the video engine
# drives, and StreamDecoder, which implements it with libavcodec (CPU, or FFmpeg's CUDA hwaccel:
# decoded frames are then AV_PIX_FMT_CUDA frames in device memory, for the CudaConverter).
from torchcodec._core._demuxer cimport Demuxer
from torchcodec._ffmpeg.avcodec cimport AVCodecContext, AVPacket
from torchcodec._ffmpeg.avutil cimport AVFrame


cdef class FrameDecoder:
    # next_frame: decode the stream's next frame (presentation order) into ``frame``: 1 when one
    #   came, 0 at the end of the stream. Reads packets from ``demuxer`` (``packet`` is scratch).
    # flush: forget buffered packets and frames after the demuxer seeked; the stream goes on.
    # output_done: the last frame was returned (true until flush()).
    # frames_in_flight: how many frames the decoder holds back before it outputs one (reordering,
    #   frame threads): decoding on through that many frames costs no more than a seek's flush.
    cdef bint output_done
    cdef int next_frame(self, Demuxer demuxer, AVPacket *packet, AVFrame *frame) except -1 nogil
    cdef void flush(self) noexcept nogil
    cdef int frames_in_flight(self) noexcept nogil


cdef class StreamDecoder(FrameDecoder):
    cdef AVCodecContext *ptr
    cdef readonly int stream_index
    cdef bint input_done                # the decoder was sent the end of the stream
    cdef int bad_packets                # consecutive packets or frames the decoder refused
    cdef readonly int refused           # packets or frames the decoder refused in all (skipped as corrupt)
    cdef readonly int last_refusal      # the AVERROR of the last refusal (0: none)
    cdef int hwaccel_state              # -1 before the first frame, then whether it was a CUDA frame

    cdef int send(self, const AVPacket *packet) noexcept nogil
    cdef int receive(self, AVFrame *frame) noexcept nogil
    cdef int refuse_or_raise(self, int ret, const char *where) except -1 nogil
    cdef int use_cuda_device(self, int device, size_t context) except -1
