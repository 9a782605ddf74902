# Packet decoders: one stream's packets into AVFrames. PacketDecoder is the one send/receive/drain
# loop of the package (over libavcodec, whose calls a subclass may replace: NVDEC's NvdecDecoder);
# VideoPacketDecoder and AudioPacketDecoder turn its frames into RawFrame / RawAudioSamples for
# Python callers. The video and audio readers drive the same objects through next_frame.
from libc.stdint cimport int64_t, uint8_t
from torchcodec._core._demuxer cimport Demuxer, Packet
from torchcodec._core._error cimport ErrorStash
from torchcodec._ffmpeg.avcodec cimport AVCodec, AVCodecContext, AVPacket
from torchcodec._ffmpeg.avutil cimport AVBufferRef, AVFrame, AVRational


# drain_once_known's judge: whether to drain, given the least pts the codec will output at or after
# the armed bound (approximate mode: whether the reader's next request seeks anyway).
ctypedef bint (*DrainJudge)(const void *context, int64_t pts, int in_flight) noexcept nogil


cdef class PacketDecoder:
    cdef AVCodecContext *ptr            # libavcodec's decoder (NULL where a subclass decodes otherwise)
    cdef readonly int stream_index
    cdef AVRational time_base           # the stream's: frames' pts and durations are in it
    cdef bint input_done                # the codec was sent the end of the stream
    cdef bint output_done               # the codec gave its last frame (until flush())
    cdef int bad_packets                # consecutive packets or frames the codec refused
    cdef readonly int refused           # packets or frames the codec refused in all (skipped as corrupt)
    cdef readonly int last_refusal      # the AVERROR of the last refusal (0: none)
    cdef readonly bint may_have_left_out    # since the last flush, unreferenced frames may have been left out
    cdef bint drained                   # Python API: drain() was called (reset() makes it usable again)
    cdef object generation              # Python API: the demuxer's seek count its packets came with (None: any)
    cdef AVFrame *scratch               # Python API: what receive_frame fills before it is wrapped
    cdef ErrorStash errors              # a codec call's failure, when it returned ERROR_STASHED (NVDEC)
    # next_frame drains the codec as soon as packets with each of these pts were sent (a reader's
    # targets before its next seek: no packet after them is needed). Borrowed; NULL: never.
    cdef const int64_t *drain_pts
    cdef uint8_t *drain_sent            # which of them were sent (borrowed, as drain_pts)
    cdef Py_ssize_t drain_count
    cdef Py_ssize_t drain_pending       # how many are still to be sent
    cdef readonly bint drained_early    # next_frame drained the codec before the end of the stream (until flush())
    # next_frame also drains the codec once the least pts at or after ``known_from`` among the packets
    # sent and not yet output is final (it is ``known_from`` itself, or a sent packet's dts reached
    # it: packets of ordered streams come with pts >= dts and dts not decreasing, so no later one
    # can come before it) and ``known_judge`` says so for that pts. The pts in flight are tracked
    # while ``track_in_flight``.
    cdef bint track_in_flight
    cdef int64_t *in_flight_pts         # pts of the packets sent since the flush and not yet output
    cdef Py_ssize_t in_flight_count
    cdef Py_ssize_t in_flight_capacity
    cdef int64_t last_dts               # the dts of the last packet sent (INT64_MIN after a flush)
    cdef bint dts_ordered               # every packet since the flush had pts >= dts, dts not decreasing
    cdef int64_t known_from
    cdef DrainJudge known_judge         # NULL: not armed
    cdef const void *known_context
    cdef readonly bint can_drain_early  # libavcodec on the CPU: draining mid-stream gives the frames decoded so far
    cdef readonly unsigned long packets_sent    # counters (docs/blocks/packet_decoders.md): packets sent,
    cdef readonly unsigned long early_drains    # drains before the end of the stream

    # The codec's own calls, AVERROR codes as libavcodec returns them (subclasses may replace them):
    # send: a packet, or NULL for the end of the stream; receive: 0 with a frame, EAGAIN, AVERROR_EOF.
    # A call that failed in a way no AVERROR says (a subclass's driver error, an exception) returns
    # ERROR_STASHED with the failure in ``errors``: the loop raises it.
    cdef int send(self, const AVPacket *packet) noexcept nogil
    cdef int receive(self, AVFrame *frame) noexcept nogil
    # flush: forget buffered packets and frames (after the demuxer seeked); the stream goes on.
    cdef void flush(self) noexcept nogil
    # frames_in_flight: how many frames the codec holds back before it outputs one (reordering,
    #   frame threads): decoding on through that many frames costs no more than a seek's flush.
    cdef int frames_in_flight(self) noexcept nogil
    # skip_unneeded_before: the frames displayed before ``pts`` are not wanted: the codec may leave
    #   out those that no other frame references (which changes no other frame). INT64_MIN: none.
    cdef void skip_unneeded_before(self, int64_t pts) noexcept nogil
    # Called before a packet of the stream is sent (the codec may adjust how it decodes it).
    cdef void before_send(self, const AVPacket *packet) noexcept nogil
    # drain_once_sent: drain the codec once packets with each of ``count`` sorted distinct pts were
    #   sent (``sent``: their flags, zeroed here); count 0: never (what flush() restores).
    cdef void drain_once_sent(self, const int64_t *pts, uint8_t *sent, Py_ssize_t count) noexcept nogil
    cdef bint note_sent(self, int64_t pts) noexcept nogil
    # drain_once_known: arm (judge NULL: disarm) the drain above; drains at once if it is due.
    cdef int drain_once_known(self, int64_t from_pts, DrainJudge judge, const void *context) except -1 nogil
    cdef int note_in_flight(self, const AVPacket *packet) except -1 nogil
    cdef void note_output(self, const AVFrame *frame) noexcept nogil
    cdef bint known_drain_due(self) noexcept nogil
    cdef int drain_early(self) except -1 nogil

    # The loop, built on the calls above. send_packet: send, refusing corrupt data (counted, up to a
    # limit); a NULL packet ends the input. receive_frame: 1 with a frame, 0 when none is ready or
    # the stream ended (output_done). next_frame: the next frame of the stream, reading packets
    # from ``demuxer`` as needed (``packet`` is scratch): 1, or 0 at the end of the stream.
    cdef int send_packet(self, const AVPacket *packet) except -1 nogil
    cdef int receive_frame(self, AVFrame *frame) except -1 nogil
    cdef int next_frame(self, Demuxer demuxer, AVPacket *packet, AVFrame *frame) except -1 nogil
    cdef int refuse_or_raise(self, int ret, const char *where) except -1 nogil

    # libavcodec set-up (the factories call it): the stream's codec with ``num_threads`` threads.
    cdef int open_codec(self, Demuxer demuxer, int stream_index, int num_threads) except -1
    cdef int finish_open(self, const AVCodec *codec) except -1
    # Python API: check a packet before it is decoded; the frames ready now, wrapped.
    cdef int check_packet(self, Packet packet) except -1
    cdef list ready_frames(self)
    cdef object wrap(self, AVFrame *frame)


cdef class VideoPacketDecoder(PacketDecoder):
    cdef int hwaccel_state              # -1 before the first frame, then whether it was a CUDA frame
    cdef readonly bint can_skip_unneeded    # the codec leaves out unreferenced frames exactly (H.264)
    cdef int64_t unneeded_before        # packets displayed before this may skip unreferenced frames
    cdef readonly unsigned long packets_skippable   # counter: packets sent while they could be skipped
    cdef readonly double rotation       # the stream's display rotation, counter-clockwise degrees (0: none)
    cdef readonly object device         # "cpu" or "cuda:N": where its RawFrames' samples are
    cdef object upload                  # CUDA blocks: moves each RawFrame's picture to the device (or None)

    cdef int use_cuda_device(self, int device, size_t context) except -1


cdef class AudioPacketDecoder(PacketDecoder):
    pass


# The factories (PacketDecoder's Python constructors refuse: build them from the stream).
cdef VideoPacketDecoder open_video_decoder(Demuxer demuxer, int stream_index, int num_threads,
                                           int cuda_device=*, size_t cuda_context=*)
cdef AudioPacketDecoder open_audio_decoder(Demuxer demuxer, int stream_index)


# An FFmpeg CUDA device over the package's context (the hwaccel decoder's, NVENC's: torchcodec._cuda._nvenc).
cdef AVBufferRef *cuda_device_ref(int device, size_t context, size_t stream, str purpose) except NULL
