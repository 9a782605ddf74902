# Decoders of one stream's packets into AVFrames: the FrameDecoder interface that the video engine
# drives, and StreamDecoder, which implements it with libavcodec (CPU, or FFmpeg's CUDA hwaccel:
# decoded frames are then AV_PIX_FMT_CUDA frames in device memory, for the CudaConverter).
from libc.stdint cimport int64_t
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
    # skip_unneeded_before: the frames displayed before timestamp ``pts`` are not wanted (none is
    #   a target): the decoder may leave out those that no other frame references, which does not
    #   change any other frame. Until the next flush; INT64_MIN: decode everything.
    # may_have_left_out: since the last flush, frames may have been left out that way.
    cdef bint output_done
    cdef readonly bint may_have_left_out
    cdef int next_frame(self, Demuxer demuxer, AVPacket *packet, AVFrame *frame) except -1 nogil
    cdef void flush(self) noexcept nogil
    cdef int frames_in_flight(self) noexcept nogil
    cdef void skip_unneeded_before(self, int64_t pts) noexcept nogil


cdef class StreamDecoder(FrameDecoder):
    cdef AVCodecContext *ptr
    cdef readonly int stream_index
    cdef bint input_done                # the decoder was sent the end of the stream
    cdef int bad_packets                # consecutive packets or frames the decoder refused
    cdef readonly int refused           # packets or frames the decoder refused in all (skipped as corrupt)
    cdef readonly int last_refusal      # the AVERROR of the last refusal (0: none)
    cdef int hwaccel_state              # -1 before the first frame, then whether it was a CUDA frame
    cdef readonly bint can_skip_unneeded    # the codec leaves out unreferenced frames exactly (H.264)
    cdef int64_t unneeded_before        # packets displayed before this may skip unreferenced frames
    cdef readonly unsigned long packets_skippable   # packets sent while they could be skipped (tests)

    cdef int send(self, const AVPacket *packet) noexcept nogil
    cdef int receive(self, AVFrame *frame) noexcept nogil
    cdef int refuse_or_raise(self, int ret, const char *where) except -1 nogil
    cdef int use_cuda_device(self, int device, size_t context) except -1
