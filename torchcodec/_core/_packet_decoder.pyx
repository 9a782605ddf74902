"""Packet decoders: turning one stream's packets into frames, with libavcodec (on the CPU, or with
FFmpeg's own CUDA hwaccel when a CUDA device is given).

``PacketDecoder`` holds the one send/receive/drain loop of the package. ``next_frame`` reads
packets from a Demuxer until the codec has a frame (the video and audio readers call it for their
next frame); ``decode(packet)``/``drain()`` are the same loop driven packet by packet from Python
(the building-block API: ``Demuxer`` → ``VideoPacketDecoder``/``AudioPacketDecoder`` →
``ColorConverter``/``AudioConverter``). Subclasses replace the codec's calls (``send``,
``receive``, ``flush``): NVDEC's NvdecDecoder feeds NVIDIA's parser instead of libavcodec.

The CUDA hwaccel (``open_video_decoder(..., cuda_device=N, cuda_context=handle)``, the
``set_cuda_backend("ffmpeg")`` backend): FFmpeg's CUDA device is given the device's primary context
that the package retained (the one torch and cupy use too; FFmpeg's own ``primary_ctx=1`` route
refuses a primary context that another library activated first), and the decoder's ``get_format`` picks
AV_PIX_FMT_CUDA whenever libavcodec offers it. Where it is not offered (a codec or profile without
NVDEC support) or its initialisation fails, libavcodec decodes on the CPU as usual;
``hwaccel_used`` says which happened.
"""
from libc.errno cimport EAGAIN, ENOMEM
from libc.stdint cimport INT64_MAX, INT64_MIN, int64_t, uint8_t
from libc.stdlib cimport free, realloc
from libc.string cimport memset

from torchcodec._core._demuxer cimport Demuxer, Packet, display_rotation
from torchcodec._core._error cimport ERROR_STASHED, av_error_string, check_av, clear_stash, raise_stashed_nogil
from torchcodec._core._raw_frames cimport take_raw_audio, take_raw_frame
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avformat as lavf
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport ffcompat
from torchcodec._ffmpeg.avcodec cimport AVCodec, AVCodecContext, AVPacket
from torchcodec._ffmpeg.avutil cimport AVBufferRef, AVFrame, AVPixelFormat

import numbers

from torchcodec._core._error import InvalidArgumentError, InvalidArgumentTypeError

cdef extern from *:
    """
    /* libavutil/hwcontext_cuda.h's AVCUDADeviceContext (the same from FFmpeg 4 to 7), declared here so
     * that this FFmpeg-only module needs no CUDA header. */
    typedef struct tc_cuda_device_context { void *cuda_ctx; void *stream; void *internal; } tc_cuda_device_context;
    """
    ctypedef struct tc_cuda_device_context:
        void *cuda_ctx
        void *stream

# The codec may refuse this many packets in a row (corrupt data) before decoding gives up.
cdef int MAX_BAD_PACKETS = 100


def cuda_hwaccel_unavailable_reason() -> str | None:
    """``None`` when this FFmpeg build has the CUDA hwaccel (its hwcontext lists the CUDA device
    type), else a sentence saying why it cannot be used. Whether a GPU is present is not asked here."""
    cdef lavu.AVHWDeviceType kind = lavu.av_hwdevice_iterate_types(lavu.AV_HWDEVICE_TYPE_NONE)
    while kind != lavu.AV_HWDEVICE_TYPE_NONE:      # the device types compiled into this FFmpeg
        if kind == lavu.AV_HWDEVICE_TYPE_CUDA:
            return None
        kind = lavu.av_hwdevice_iterate_types(kind)
    return (f"this FFmpeg build ({lavu.av_version_info().decode()}) has no CUDA hwaccel (its hwcontext does not "
            f"list the 'cuda' device type: FFmpeg must be configured with ffnvcodec, --enable-cuda / "
            f"--enable-nvdec); use the NVDEC backend or decode on the CPU")


cdef AVPixelFormat choose_cuda_format(AVCodecContext *context, const AVPixelFormat *formats) noexcept nogil:
    """libavcodec's get_format: AV_PIX_FMT_CUDA when offered, else what libavcodec would choose
    (a software format). libavcodec calls it again without CUDA if the hwaccel fails to start."""
    cdef const AVPixelFormat *offered = formats
    while offered[0] != lavu.AV_PIX_FMT_NONE:
        if offered[0] == lavu.AV_PIX_FMT_CUDA:
            return lavu.AV_PIX_FMT_CUDA
        offered += 1
    return lavc.avcodec_default_get_format(context, formats)


cdef bint leaves_out_only_unreferenced(const lavc.AVCodecParameters *par) noexcept nogil:
    """Whether AVDISCARD_NONREF leaves out only pictures that no other picture references.
    H.264: NAL units with nal_ref_idc 0. HEVC: "sub-layer non-reference" pictures, which pictures
    of higher temporal sub-layers may still reference; so only for streams with one sub-layer, as
    the hvcC record says (byte 21, bits 3-5: numTemporalLayers; Annex B streams do not say)."""
    if par.codec_id == lavc.AV_CODEC_ID_H264:
        return True
    if par.codec_id == lavc.AV_CODEC_ID_HEVC:
        return (par.extradata_size >= 23 and par.extradata[0] == 1
                and ((par.extradata[21] >> 3) & 7) == 1)
    return False


cdef class PacketDecoder:
    """Decodes the packets of one stream (see the module's documentation). Built by a stream's
    ``make_decoder()`` (or the factories of this module), never directly."""

    def __cinit__(self, *args, **kwargs):
        self.ptr = NULL
        self.scratch = NULL
        self.stream_index = -1
        self.input_done = False
        self.output_done = False
        self.bad_packets = 0
        self.refused = 0
        self.last_refusal = 0
        self.may_have_left_out = False
        self.drained = False
        self.generation = None
        self.drain_pts = NULL
        self.drain_sent = NULL
        self.drain_count = 0
        self.drain_pending = 0
        self.drained_early = False
        self.can_drain_early = False
        self.packets_sent = 0
        self.early_drains = 0
        self.last_dts = INT64_MIN           # (the in-flight record starts empty: NULL, 0)
        self.dts_ordered = True
        self.known_from = INT64_MIN

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__} cannot be instantiated directly. Build one from the stream "
                           f"whose packets it decodes, with stream.make_decoder().")

    def __dealloc__(self):
        free(self.in_flight_pts)
        clear_stash(&self.errors)
        if self.ptr != NULL:
            lavc.avcodec_free_context(&self.ptr)     # also unrefs hw_device_ctx
        lavu.av_frame_free(&self.scratch)

    def __reduce__(self):
        raise TypeError(f"{type(self).__name__} cannot be pickled, copied or sent to another process: it is a "
                        f"handle to an FFmpeg object that only exists in this one. A codec context holds reference "
                        f"frames and entropy state that FFmpeg cannot serialise. Call stream.make_decoder() in "
                        f"each process.")

    cdef int open_codec(self, Demuxer demuxer, int stream_index, int num_threads) except -1:
        if num_threads < 0:
            raise ValueError(f"num_ffmpeg_threads must be >= 0, got {num_threads}")
        cdef lavf.AVStream *st = demuxer.stream(stream_index)
        cdef const AVCodec *codec = lavc.avcodec_find_decoder(st.codecpar.codec_id)
        if codec == NULL:
            name = lavc.avcodec_get_name(st.codecpar.codec_id).decode()
            raise RuntimeError(f"stream {stream_index} uses codec {name!r}, which this FFmpeg build "
                               f"cannot decode (no decoder found)")
        self.stream_index = stream_index
        self.time_base = st.time_base
        self.ptr = lavc.avcodec_alloc_context3(codec)
        if self.ptr == NULL:
            raise MemoryError("avcodec_alloc_context3 failed")
        check_av(lavc.avcodec_parameters_to_context(self.ptr, st.codecpar), "avcodec_parameters_to_context")
        self.ptr.pkt_timebase = st.time_base
        self.ptr.thread_count = num_threads
        return 0

    cdef int finish_open(self, const AVCodec *codec) except -1:
        """avcodec_open2, once the context is configured."""
        cdef int ret
        with nogil:
            ret = lavc.avcodec_open2(self.ptr, codec, NULL)
        check_av(ret, "avcodec_open2", f"codec {codec.name.decode()!r} of stream {self.stream_index}")
        return 0

    # ---- the codec's calls (libavcodec) ---------------------------------------------------------

    cdef int send(self, const AVPacket *packet) noexcept nogil:
        return lavc.avcodec_send_packet(self.ptr, packet)

    cdef int receive(self, AVFrame *frame) noexcept nogil:
        return lavc.avcodec_receive_frame(self.ptr, frame)

    cdef void flush(self) noexcept nogil:
        lavc.avcodec_flush_buffers(self.ptr)
        self.input_done = False
        self.output_done = False
        self.may_have_left_out = False
        self.skip_unneeded_before(INT64_MIN)
        self.drain_once_sent(NULL, NULL, 0)
        self.drained_early = False
        self.in_flight_count = 0
        self.last_dts = INT64_MIN
        self.dts_ordered = True
        self.known_judge = NULL

    cdef void drain_once_sent(self, const int64_t *pts, uint8_t *sent, Py_ssize_t count) noexcept nogil:
        self.drain_pts = pts if count > 0 else NULL
        self.drain_sent = sent if count > 0 else NULL
        self.drain_count = count if count > 0 else 0
        self.drain_pending = self.drain_count
        if count > 0:
            memset(sent, 0, count)

    cdef bint note_sent(self, int64_t pts) noexcept nogil:
        """Count a sent packet of timestamp ``pts``: True when it was the last one awaited."""
        cdef Py_ssize_t lo = 0, hi = self.drain_count, mid
        while lo < hi:
            mid = (lo + hi) // 2
            if self.drain_pts[mid] < pts:
                lo = mid + 1
            else:
                hi = mid
        if lo == self.drain_count or self.drain_pts[lo] != pts or self.drain_sent[lo]:
            return False
        self.drain_sent[lo] = 1
        self.drain_pending -= 1
        return self.drain_pending == 0

    cdef int drain_once_known(self, int64_t from_pts, DrainJudge judge, const void *context) except -1 nogil:
        self.known_from = from_pts
        self.known_judge = judge if self.track_in_flight and self.dts_ordered and not self.input_done else NULL
        self.known_context = context
        if self.known_drain_due():
            self.drain_early()
        return 0

    cdef int note_in_flight(self, const AVPacket *packet) except -1 nogil:
        """Record a packet just sent: its pts among those in flight, its order."""
        cdef int64_t pts = ffcompat.tc_packet_pts(packet)
        cdef int64_t *grown
        if packet.dts == lavu.AV_NOPTS_VALUE or pts == lavu.AV_NOPTS_VALUE or pts < packet.dts or packet.dts < self.last_dts:
            self.dts_ordered = False          # the order of what comes cannot be told: no such drain
            self.known_judge = NULL
            return 0
        self.last_dts = packet.dts
        if self.in_flight_count == self.in_flight_capacity:
            grown = <int64_t *>realloc(self.in_flight_pts, (self.in_flight_capacity * 2 + 16) * sizeof(int64_t))
            if grown == NULL:
                with gil:
                    raise MemoryError("cannot track the packets in flight")
            self.in_flight_pts = grown
            self.in_flight_capacity = self.in_flight_capacity * 2 + 16
        self.in_flight_pts[self.in_flight_count] = pts
        self.in_flight_count += 1
        return 0

    cdef void note_output(self, const AVFrame *frame) noexcept nogil:
        """A frame came out: frames come in presentation order, so every pts up to its own is done."""
        cdef Py_ssize_t k, kept = 0
        if frame.pts == lavu.AV_NOPTS_VALUE:
            return
        for k in range(self.in_flight_count):
            if self.in_flight_pts[k] > frame.pts:
                self.in_flight_pts[kept] = self.in_flight_pts[k]
                kept += 1
        self.in_flight_count = kept

    cdef bint known_drain_due(self) noexcept nogil:
        """Whether the armed drain is due: the least pts at or after known_from in flight is final,
        and the judge says to drain for it (asked once: the drain is disarmed either way)."""
        cdef int64_t least = INT64_MAX
        cdef Py_ssize_t k
        cdef DrainJudge judge = self.known_judge
        if judge == NULL:               # (never armed while the packets are out of order)
            return False
        for k in range(self.in_flight_count):
            if self.known_from <= self.in_flight_pts[k] < least:
                least = self.in_flight_pts[k]
        # (a packet at known_from itself is the least at once; others once no later packet can come before)
        if least == INT64_MAX or (self.last_dts < least and least != self.known_from):
            return False
        self.known_judge = NULL
        return judge(self.known_context, least, self.frames_in_flight())

    cdef int drain_early(self) except -1 nogil:
        """Drain the codec before the end of the stream (the frames of the packets sent come out)."""
        self.drain_once_sent(NULL, NULL, 0)
        self.known_judge = NULL
        self.send_packet(NULL)
        self.drained_early = True
        self.may_have_left_out = True     # the frames of packets never sent
        self.early_drains += 1
        return 0

    cdef int frames_in_flight(self) noexcept nogil:
        return 0

    cdef void skip_unneeded_before(self, int64_t pts) noexcept nogil:
        pass

    cdef void before_send(self, const AVPacket *packet) noexcept nogil:
        pass

    # ---- the loop -----------------------------------------------------------------------------

    cdef int send_packet(self, const AVPacket *packet) except -1 nogil:
        """Send ``packet`` (NULL: the end of the stream). Corrupt data is refused and counted."""
        cdef int ret
        if packet == NULL:
            if self.input_done:
                return 0
            self.input_done = True
            ret = self.send(NULL)
            if ret < 0 and ret != lavu.AVERROR_EOF:
                self.output_done = True       # the codec cannot be drained: nothing more will come
                if ret == ERROR_STASHED:
                    raise_stashed_nogil(&self.errors)
            return 0
        self.before_send(packet)
        self.packets_sent += 1
        ret = self.send(packet)
        if ret < 0 and ret != lavu.AVERROR(EAGAIN):
            self.refuse_or_raise(ret, "avcodec_send_packet")
        return 0

    cdef int receive_frame(self, AVFrame *frame) except -1 nogil:
        """1 with the codec's next frame in ``frame``; 0 when none is ready (or none will come:
        ``output_done``). Frames the codec refuses (corrupt data) are skipped."""
        cdef int ret
        while not self.output_done:
            ret = self.receive(frame)
            if ret >= 0:
                self.bad_packets = 0
                if self.track_in_flight:
                    self.note_output(frame)
                return 1
            if ret == lavu.AVERROR_EOF:
                self.output_done = True
                return 0
            if ret != lavu.AVERROR(EAGAIN):
                self.refuse_or_raise(ret, "avcodec_receive_frame")
                continue
            if self.input_done:       # EAGAIN after the end of the stream: nothing more will come
                self.output_done = True
            return 0
        return 0

    cdef int next_frame(self, Demuxer demuxer, AVPacket *packet, AVFrame *frame) except -1 nogil:
        """Decode the next frame of the stream into ``frame``: 1 when one came, 0 at the end.

        Reads packets from ``demuxer`` (skipping other streams) until the codec has a frame. At the
        end of the file, or at unreadable data, the codec is drained. Corrupt packets are skipped,
        up to MAX_BAD_PACKETS in a row.
        """
        cdef int ret
        while True:
            if self.receive_frame(frame):
                return 1
            if self.output_done:
                return 0
            ret = demuxer.read(packet)
            if ret < 0:               # end of file, or unreadable data: decode what we have
                self.send_packet(NULL)
                continue
            if packet.stream_index == self.stream_index:
                try:
                    self.send_packet(packet)
                    if self.track_in_flight:
                        self.note_in_flight(packet)
                    if ((self.drain_pending > 0 and self.note_sent(ffcompat.tc_packet_pts(packet)))
                            or self.known_drain_due()):
                        # Every packet a wanted frame needs was sent: drain rather than decode the
                        # packets after them, which the codec would want before it outputs them.
                        self.drain_early()
                finally:
                    lavc.av_packet_unref(packet)
            else:
                lavc.av_packet_unref(packet)

    cdef int refuse_or_raise(self, int ret, const char *where) except -1 nogil:
        """A decoding error: skip the bad data, unless memory ran out or too much data is bad. A
        failure the codec call stashed (ERROR_STASHED) is raised."""
        if ret == ERROR_STASHED:
            raise_stashed_nogil(&self.errors)
            with gil:
                raise RuntimeError(f"{where.decode()} reported a failure that it did not keep")
        self.bad_packets += 1
        self.refused += 1
        self.last_refusal = ret
        if ret == lavu.AVERROR(ENOMEM) or self.bad_packets > MAX_BAD_PACKETS:
            with gil:
                raise RuntimeError(f"decoding failed: {where.decode()} returned {av_error_string(ret)}"
                                   f" ({self.bad_packets} errors in a row)")
        return 0

    # ---- the Python API (building blocks) -------------------------------------------------------

    cdef int check_packet(self, Packet packet) except -1:
        if packet is None:
            raise TypeError(f"{type(self).__name__}.decode() takes a Packet, not None")
        if self.drained:
            raise RuntimeError("This decoder has been drained, and a codec that has been told the stream ended "
                               "ignores any further packet. Call reset() (after a seek), or create a new decoder "
                               "to decode another stream.")
        if packet.stream_index != self.stream_index:
            raise ValueError(f"this decoder decodes stream {self.stream_index}; the packet is of stream "
                             f"{packet.stream_index} (route packets by packet.stream_index)")
        if self.generation is None:
            self.generation = packet.generation
        elif self.generation != packet.generation:
            raise RuntimeError("The demuxer seeked since this decoder was last reset(), so this packet is from a "
                               "position the codec knows nothing about - decoding it would produce plausible-looking "
                               "garbage. Call reset() on every decoder fed by that demuxer after a seek.")
        return 0

    cdef object wrap(self, AVFrame *frame):
        raise NotImplementedError(f"{type(self).__name__} does not wrap frames")

    cdef list ready_frames(self):
        """Every frame the codec has ready, wrapped for Python (the GIL released while receiving)."""
        cdef list frames = []
        cdef int got
        if self.scratch == NULL:
            self.scratch = lavu.av_frame_alloc()
            if self.scratch == NULL:
                raise MemoryError("av_frame_alloc failed")
        while True:
            with nogil:
                got = self.receive_frame(self.scratch)
            if not got:
                return frames
            frames.append(self.wrap(self.scratch))      # takes the frame's references

    def decode(self, Packet packet):
        """Send one packet of this decoder's stream to the codec and return the frames that are
        ready: zero, one or more (a codec buffering B-frames, or still priming, gives what it owes
        on a later call), in presentation order. RuntimeError after ``drain()``, or when the
        demuxer seeked since the last ``reset()``."""
        self.check_packet(packet)
        cdef int ret
        cdef const AVPacket *c_packet = packet.ptr
        frames = []
        while True:
            with nogil:
                self.before_send(c_packet)
                ret = self.send(c_packet)
            if ret != lavu.AVERROR(EAGAIN):
                break
            ready = self.ready_frames()       # the codec wants its output read first
            if not ready:
                break                         # (cannot happen with libavcodec: nothing to read means room)
            frames += ready
        if ret < 0 and ret != lavu.AVERROR(EAGAIN):
            with nogil:
                self.refuse_or_raise(ret, "avcodec_send_packet")
        frames += self.ready_frames()
        return frames

    def drain(self):
        """Tell the codec that the stream ended, and return the frames it was still holding
        (skipping this loses the tail of the stream). A drained decoder refuses further packets
        until ``reset()``."""
        if not self.drained:
            with nogil:
                self.send_packet(NULL)
        frames = self.ready_frames()
        self.drained = True
        return frames

    def reset(self):
        """Drop the codec's buffered state and start over: needed after a ``Demuxer.seek``, and
        after ``drain()``."""
        with nogil:
            self.flush()
        self.drained = False
        self.generation = None


cdef AVBufferRef *cuda_device_ref(int device, size_t context, size_t stream, str purpose) except NULL:
    """A new reference to an FFmpeg CUDA device (AVHWDeviceContext) over the CUcontext ``context``
    of cuda:``device`` (the package's retained primary context: FFmpeg creates none of its own), with
    ``stream`` as its CUstream (0: the legacy default stream), where FFmpeg's CUDA work runs (NVENC
    reads its input frames there). ``purpose`` ("hwaccel", "NVENC") names the user in messages."""
    cdef AVBufferRef *device_ref = NULL
    cdef lavu.AVHWDeviceContext *hw_device
    cdef int ret
    if context == 0:
        raise ValueError(f"FFmpeg's CUDA {purpose} on cuda:{device} needs the device's CUDA context (cuda_context)")
    device_ref = lavu.av_hwdevice_ctx_alloc(lavu.AV_HWDEVICE_TYPE_CUDA)
    if device_ref == NULL:
        raise MemoryError("av_hwdevice_ctx_alloc failed")
    hw_device = <lavu.AVHWDeviceContext *>device_ref.data
    (<tc_cuda_device_context *>hw_device.hwctx).cuda_ctx = <void *>context
    (<tc_cuda_device_context *>hw_device.hwctx).stream = <void *>stream
    with nogil:
        ret = lavu.av_hwdevice_ctx_init(device_ref)
    if ret < 0:
        lavu.av_buffer_unref(&device_ref)
    if ret == -1:       # what FFmpeg's copy of ffnvcodec's loader returns
        raise RuntimeError(f"FFmpeg could not load libcuda.so.1, or a function it needs from it, for its "
                           f"CUDA {purpose} on cuda:{device} (no NVIDIA driver, or one too old for this FFmpeg)")
    if ret < 0:
        raise RuntimeError(f"FFmpeg could not use CUDA device cuda:{device} for its {purpose} "
                           f"(av_hwdevice_ctx_init: {av_error_string(ret)}); "
                           f"torchcodec.set_log_level('error') shows FFmpeg's own message")
    return device_ref


cdef class VideoPacketDecoder(PacketDecoder):
    """Decodes the packets of one video stream into :class:`RawFrame`\\ s (pixels as the codec made
    them: no conversion). Built by ``VideoStream.make_decoder()``.

    Feed it the packets of its own stream in demuxing order, and drain it at the end::

        demuxer = Demuxer("video.mp4")
        decoder = demuxer.streams[0].make_decoder()
        for packet in demuxer:
            for raw_frame in decoder.decode(packet):
                ...
        for raw_frame in decoder.drain():
            ...

    It holds the codec's reference frames: after ``Demuxer.seek``, call ``reset()``. Passive and
    not thread-safe: one thread at a time (stages on different threads each own their object).
    Each call releases the GIL while the codec works.
    """

    def __cinit__(self, *args, **kwargs):
        self.hwaccel_state = -1
        self.unneeded_before = INT64_MIN
        self.packets_skippable = 0
        self.can_skip_unneeded = False
        self.rotation = 0.0
        self.device = "cpu"
        self.upload = None

    def _upload_to(self, upload, device):
        """(The CUDA backend.) Hand every RawFrame made from now on to ``upload``, a callable that
        moves its picture into device memory the frame owns (torchcodec._cuda._device_frame), and
        report ``device`` ("cuda:N") as the frames' device: the building blocks' CUDA decoders."""
        self.upload = upload
        self.device = device

    cdef int use_cuda_device(self, int device, size_t context) except -1:
        """Decode with FFmpeg's CUDA hwaccel on cuda:``device``, in the CUcontext ``context``."""
        reason = cuda_hwaccel_unavailable_reason()
        if reason is not None:
            raise RuntimeError(reason)
        cdef AVBufferRef *device_ref = cuda_device_ref(device, context, 0, "hwaccel")
        self.ptr.hw_device_ctx = device_ref          # the codec context owns the reference now
        self.ptr.get_format = choose_cuda_format
        self.device = f"cuda:{device}"
        return 0

    @property
    def hwaccel_used(self):
        """None before the first frame; then whether FFmpeg's CUDA hwaccel decoded it (False on the CPU)."""
        return None if self.hwaccel_state < 0 else bool(self.hwaccel_state)

    cdef int receive(self, AVFrame *frame) noexcept nogil:
        cdef int ret = lavc.avcodec_receive_frame(self.ptr, frame)
        if ret >= 0 and self.hwaccel_state < 0:
            self.hwaccel_state = frame.format == lavu.AV_PIX_FMT_CUDA
        return ret

    cdef void skip_unneeded_before(self, int64_t pts) noexcept nogil:
        self.unneeded_before = pts if self.can_skip_unneeded else INT64_MIN
        if self.unneeded_before == INT64_MIN and self.ptr != NULL:
            self.ptr.skip_frame = lavc.AVDISCARD_DEFAULT

    cdef void before_send(self, const AVPacket *packet) noexcept nogil:
        """Leave out the unreferenced frames displayed before ``unneeded_before`` (frame threads
        read the setting when the packet is submitted)."""
        if self.unneeded_before == INT64_MIN or packet == NULL:
            return
        if packet.pts != lavu.AV_NOPTS_VALUE and packet.pts < self.unneeded_before:
            self.ptr.skip_frame = lavc.AVDISCARD_NONREF
            self.packets_skippable += 1
            self.may_have_left_out = True
        else:
            self.ptr.skip_frame = lavc.AVDISCARD_DEFAULT

    cdef int frames_in_flight(self) noexcept nogil:
        """The reorder delay (``has_b_frames``, as far as the codec knows it yet), plus the frames
        that other threads decode ahead with frame threading on the CPU."""
        cdef int in_flight = max(self.ptr.has_b_frames, 0)
        if self.ptr.hw_device_ctx == NULL and (self.ptr.active_thread_type & lavc.FF_THREAD_FRAME):
            in_flight += max(self.ptr.thread_count, 1) - 1
        return in_flight

    cdef object wrap(self, AVFrame *frame):
        raw = take_raw_frame(frame, self.time_base, self.rotation, self.device)
        if self.upload is not None:
            self.upload(raw)
        return raw


cdef class AudioPacketDecoder(PacketDecoder):
    """Decodes the packets of one audio stream into :class:`RawAudioSamples` (the codec's own sample
    format: no conversion). Built by ``AudioStream.make_decoder()``; always on the CPU.

    Feed it the packets of its own stream in demuxing order, and drain it at the end. A lossy codec
    carries state from frame to frame: after ``Demuxer.seek``, ``reset()`` is necessary but not
    sufficient, since the first samples are subtly wrong until the codec re-primes (decode a margin
    before your target and drop it). Passive and not thread-safe; each call releases the GIL while
    the codec works.
    """

    cdef object wrap(self, AVFrame *frame):
        return take_raw_audio(frame, self.time_base, self.generation)


cdef VideoPacketDecoder open_video_decoder(Demuxer demuxer, int stream_index, int num_threads,
                                           int cuda_device=-1, size_t cuda_context=0):
    """A libavcodec decoder for video stream ``stream_index`` of ``demuxer``.

    ``num_threads``: 1 decodes on the calling thread; 0 lets FFmpeg choose; n > 1 uses n threads.
    ``cuda_device``: -1 decodes on the CPU; N >= 0 uses FFmpeg's CUDA hwaccel on device cuda:N, in
    ``cuda_context`` (the CUcontext handle of that device's primary context, as an int:
    ``CudaContext.handle``), whose frames are AV_PIX_FMT_CUDA frames in device memory where the
    hwaccel handles the stream (RuntimeError when this FFmpeg build lacks it or FFmpeg cannot use
    the context).
    """
    cdef VideoPacketDecoder decoder = VideoPacketDecoder.__new__(VideoPacketDecoder)
    cdef lavf.AVStream *st = demuxer.stream(stream_index)
    if st.codecpar.codec_type != lavu.AVMEDIA_TYPE_VIDEO:
        raise ValueError(f"stream {stream_index} is not a video stream ({demuxer._media_type(stream_index)})")
    decoder.open_codec(demuxer, stream_index, num_threads)
    decoder.can_skip_unneeded = leaves_out_only_unreferenced(st.codecpar)
    rotation = display_rotation(ffcompat.tc_stream_display_matrix(st))
    decoder.rotation = rotation if rotation is not None else 0.0
    if cuda_device >= 0:
        decoder.use_cuda_device(cuda_device, cuda_context)
    decoder.can_drain_early = cuda_device < 0
    decoder.finish_open(decoder.ptr.codec)
    return decoder


cdef AudioPacketDecoder open_audio_decoder(Demuxer demuxer, int stream_index):
    """A libavcodec decoder (one thread) for audio stream ``stream_index`` of ``demuxer``."""
    cdef AudioPacketDecoder decoder = AudioPacketDecoder.__new__(AudioPacketDecoder)
    if demuxer.stream(stream_index).codecpar.codec_type != lavu.AVMEDIA_TYPE_AUDIO:
        raise ValueError(f"stream {stream_index} is not an audio stream ({demuxer._media_type(stream_index)})")
    decoder.open_codec(demuxer, stream_index, 1)
    decoder.finish_open(decoder.ptr.codec)
    return decoder


def check_threads(num_ffmpeg_threads):
    """``num_ffmpeg_threads`` as an int >= 0 (TypeError/ValueError, also RuntimeErrors, otherwise)."""
    if isinstance(num_ffmpeg_threads, bool) or not isinstance(num_ffmpeg_threads, numbers.Integral):
        raise InvalidArgumentTypeError(f"num_ffmpeg_threads must be an int >= 0, got {num_ffmpeg_threads!r}")
    if not 0 <= num_ffmpeg_threads < 2**31:
        raise InvalidArgumentError(f"num_ffmpeg_threads must be an int >= 0, got {num_ffmpeg_threads!r}")
    return int(num_ffmpeg_threads)


def make_video_decoder(Demuxer demuxer not None, int stream_index, int num_threads=1, int cuda_device=-1,
                       size_t cuda_context=0):
    """``open_video_decoder`` for Python callers (the VideoStream block, the CUDA backends)."""
    return open_video_decoder(demuxer, stream_index, num_threads, cuda_device, cuda_context)


def make_audio_decoder(Demuxer demuxer not None, int stream_index):
    """``open_audio_decoder`` for Python callers (the AudioStream block)."""
    return open_audio_decoder(demuxer, stream_index)
