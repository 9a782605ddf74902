"""Demuxing: open a source, describe its streams, read packets, seek, and scan streams' frames.

The ``Demuxer`` is the first building block (TorchCodec's ``torchcodec.decoders.Demuxer``): it
follows one or more streams (``streams=``), yields their compressed :class:`Packet`\\ s, seeks,
and describes the container (``metadata``) and each followed stream (``streams[i].metadata``,
``VideoStream.scan()``). A stream builds the packet decoder for its packets
(``stream.make_decoder()``). The video and audio readers behind ``VideoDecoder`` and
``AudioDecoder`` use the same Demuxer, through its C-level methods.
"""
import math
import zlib
from fractions import Fraction

from cpython.pyport cimport PY_SSIZE_T_MAX
from libc.errno cimport EINVAL
from libc.math cimport isnan
from libc.stdint cimport INT64_MAX, INT64_MIN, int32_t, int64_t
from libc.stdlib cimport free, malloc

from torchcodec._core._avio cimport IOSource, MemorySource
from torchcodec._core._error cimport check_av, open_error
from torchcodec._core._error import InvalidArgumentError
from torchcodec._core._frame_index cimport FrameIndex, IndexBuilder, closest_ticks, ticks_to_seconds
from torchcodec._core import _metadata
from torchcodec._core._devices import device_parts, parse_device
from torchcodec._core._source import is_url, open_source
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avformat as lavf
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport ffcompat
from torchcodec._ffmpeg.avcodec cimport AVPacket
from torchcodec._ffmpeg.avformat cimport AVFormatContext, AVStream
from torchcodec._ffmpeg.avutil cimport AVRational

MEDIA_TYPE_NAMES = {
    lavu.AVMEDIA_TYPE_VIDEO: "video",
    lavu.AVMEDIA_TYPE_AUDIO: "audio",
    lavu.AVMEDIA_TYPE_DATA: "data",
    lavu.AVMEDIA_TYPE_SUBTITLE: "subtitle",
    lavu.AVMEDIA_TYPE_ATTACHMENT: "attachment",
}


cdef object optional_str(const char *text):
    return text.decode("utf-8", "replace") if text != NULL else None


cdef object color_name(int value, const char *name):
    """FFmpeg's name of a colour property; None when unspecified (2 in all three enums)."""
    return optional_str(name) if value != 2 else None


cdef object display_rotation(const int32_t *matrix):
    """The display matrix's rotation in degrees (counter-clockwise), to 6 decimals as TorchCodec
    reports it; None without a matrix or for a degenerate one (NaN)."""
    if matrix == NULL:
        return None
    cdef double degrees = lavu.av_display_rotation_get(matrix)
    return None if isnan(degrees) else float(f"{degrees:f}")


# What avformat_find_stream_info learns, kept so that a file opened before can skip it (its
# decoding of the first frames is most of an open: ~10 ms of a 1080p H.264 mp4's ~11). Only for the
# formats whose header alone gives every stream and every packet's timestamps, where the packets
# read afterwards were tested to be the same with and without the probe (tests/test_index_cache.py).
PROBE_SKIPPING_FORMATS = frozenset({"mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm"})
# A format of the probe state below: bump it when its fields change (older states are then refused).
PROBE_STATE_VERSION = 1


cdef list stream_checks(AVStream *st):
    """What the header gives before the probe and the probe must not have changed: a stored
    probe applies to a file only where these are the same (else the probe runs)."""
    cdef lavc.AVCodecParameters *par = st.codecpar
    extradata = (<char *>par.extradata)[:par.extradata_size] if par.extradata != NULL and par.extradata_size > 0 else b""
    return [par.codec_type, par.codec_id, par.extradata_size, zlib.crc32(extradata), st.time_base.num,
            st.time_base.den, st.disposition, ffcompat.tc_codecpar_channels(par)]


cdef list stream_probe(AVStream *st):
    """The fields of a stream that the probe sets (restored by ``restore_stream_probe``, same order)."""
    cdef lavc.AVCodecParameters *par = st.codecpar
    return [par.codec_tag, par.format, par.bit_rate, par.bits_per_coded_sample, par.bits_per_raw_sample,
            par.profile, par.level, par.width, par.height, par.sample_aspect_ratio.num, par.sample_aspect_ratio.den,
            par.field_order, par.color_range, par.color_primaries, par.color_trc, par.color_space,
            par.chroma_location, par.video_delay, par.sample_rate, par.block_align, par.frame_size,
            par.initial_padding, par.trailing_padding, par.seek_preroll,
            st.start_time, st.duration, st.nb_frames, st.r_frame_rate.num, st.r_frame_rate.den,
            st.avg_frame_rate.num, st.avg_frame_rate.den, st.sample_aspect_ratio.num, st.sample_aspect_ratio.den,
            ffcompat.tc_codecpar_layout_order(par), ffcompat.tc_codecpar_layout_mask(par)]


cdef int restore_stream_probe(AVStream *st, list values) except -1:
    """Set the fields of ``stream_probe`` from ``values`` (checked by the caller to fit)."""
    cdef lavc.AVCodecParameters *par = st.codecpar
    order, mask = values[LAYOUT_ORDER], values[LAYOUT_ORDER + 1]
    values = values[:LAYOUT_ORDER]
    check_av(ffcompat.tc_codecpar_set_layout(par, order, mask, ffcompat.tc_codecpar_channels(par)),
             "setting the probed channel layout", "the index cache")
    (par.codec_tag, par.format, par.bit_rate, par.bits_per_coded_sample, par.bits_per_raw_sample,
     par.profile, par.level, par.width, par.height, par.sample_aspect_ratio.num, par.sample_aspect_ratio.den,
     par.field_order, par.color_range, par.color_primaries, par.color_trc, par.color_space,
     par.chroma_location, par.video_delay, par.sample_rate, par.block_align, par.frame_size,
     par.initial_padding, par.trailing_padding, par.seek_preroll,
     st.start_time, st.duration, st.nb_frames, st.r_frame_rate.num, st.r_frame_rate.den,
     st.avg_frame_rate.num, st.avg_frame_rate.den, st.sample_aspect_ratio.num, st.sample_aspect_ratio.den) = values
    return 0


cdef bint plausible_probe(list values, list checks):
    """Whether stored probe values have the shape and ranges ``restore_stream_probe`` needs (a
    stored state is data from disk: never assigned before this says yes)."""
    if len(values) != len(checks):
        return False
    for value, check in zip(values, checks):
        if type(value) is not int:
            return False
        low, high = _C_RANGES[check]
        if not low <= value < high:
            return False
    return True


LAYOUT_ORDER = 33                 # where the channel order and mask are in stream_probe's list (they end it)
_C_RANGES = {"int": (-2 ** 31, 2 ** 31), "int64": (-2 ** 63, 2 ** 63), "uint32": (0, 2 ** 32), "uint64": (0, 2 ** 64)}
# The C type of each field of stream_probe, for plausible_probe.
_STREAM_PROBE_TYPES = (["uint32", "int", "int64"] + ["int"] * 21 + ["int64"] * 3 + ["int"] * 6 + ["int", "uint64"])


def _process_local(name, hint):
    raise TypeError(f"{name} cannot be pickled, copied or sent to another process: it is a handle to an FFmpeg "
                    f"object that only exists in this one. {hint}")


cdef class Packet:
    """One compressed packet of one stream, as a :class:`Demuxer` read it.

    Made by a ``Demuxer``, consumed by the packet decoder of its stream
    (``VideoPacketDecoder``/``AudioPacketDecoder``); ``stream_index`` routes it there when a demuxer
    follows several streams. The contents are FFmpeg's, by reference (no copy). Process-local: it
    cannot be pickled or sent to another process.
    """

    def __cinit__(self):
        self.ptr = lavc.av_packet_alloc()
        if self.ptr == NULL:
            raise MemoryError("av_packet_alloc failed")
        self.stream_index = -1
        self.generation = 0

    def __dealloc__(self):
        lavc.av_packet_free(&self.ptr)

    def __reduce__(self):
        _process_local("Packet", "Build a Demuxer in each process instead, from the same source: a packet is only "
                                 "decodable by a decoder built from its own stream.")

    @property
    def pts_seconds(self):
        """The packet's presentation timestamp in seconds (its decode timestamp where it has none;
        None when it has neither)."""
        cdef int64_t pts = ffcompat.tc_packet_pts(self.ptr)
        return None if pts == lavu.AV_NOPTS_VALUE else ticks_to_seconds(pts, self.time_base.num, self.time_base.den)

    @property
    def duration_seconds(self):
        """How long the packet's frame(s) are displayed, in seconds (0.0 when the container does not say)."""
        return ticks_to_seconds(self.ptr.duration, self.time_base.num, self.time_base.den)

    @property
    def is_key_frame(self):
        """Whether the packet starts a key frame (a decoder can start there)."""
        return (self.ptr.flags & lavc.AV_PKT_FLAG_KEY) != 0

    @property
    def size(self):
        """The packet's size in bytes."""
        return self.ptr.size

    def __repr__(self):
        return (f"Packet(stream_index={self.stream_index}, pts_seconds={self.pts_seconds}, "
                f"is_key_frame={self.is_key_frame}, size={self.size})")


cdef class Demuxer:
    """Reads one or more video and audio streams of a container and produces their compressed
    :class:`Packet`\\ s (TorchCodec 0.17's building block).

    This is a low-level API: for straightforward decoding, use ``VideoDecoder`` or ``AudioDecoder``.
    Packets come out interleaved, in the order the container stores them, and
    ``Packet.stream_index`` says which followed stream each belongs to::

        demuxer = Demuxer("video.mp4", streams=("video", "audio"))
        decoders = {s.index: s.make_decoder() for s in demuxer.streams}
        for packet in demuxer:
            for output in decoders[packet.stream_index].decode(packet):
                ...

    Args:
        source: a path (str or pathlib.Path) or URL; bytes, bytearray, memoryview or a 1-D uint8
            array of encoded bytes (read in place); or a binary file object with ``read`` and
            ``seek`` (each read takes the GIL, so it overlaps less with other stages).
        streams: which streams to follow: ``"video"`` / ``"audio"`` (FFmpeg's best stream of that
            type), an int (an absolute stream index, video or audio), a tuple of those, or ``"all"``
            (every video and audio stream, in container order; only on its own). Default "video".

    Attributes:
        streams (tuple): the :class:`VideoStream` / :class:`AudioStream` objects followed, in the
            order ``streams`` named them; packet decoders are built from these.
        metadata (DemuxerMetadata): what the header says about the container.

    Errors: ``ValueError`` for a bad ``streams`` selection (not a stream, not video or audio, no
    such stream type, empty); the source errors of ``VideoDecoder``. Passive and not thread-safe
    (one thread at a time; reading a packet releases the GIL). Process-local: not picklable.
    """

    def __cinit__(self, source, *args, name=None, probe=None, **kwargs):
        self.ptr = NULL
        self.probe_skipped = False
        self.probe_state = None
        self.probed_best = None
        self.source = None
        self.location = None
        self.generation = 0
        self.followed = []
        self.indices = {}
        self._metadata = None
        cdef bytes url
        cdef const char *c_url
        cdef int ret
        if not isinstance(source, IOSource):
            source, opened_name = open_source(source)
            name = name or opened_name
        cdef AVFormatContext *ctx = lavf.avformat_alloc_context()
        if ctx == NULL:
            raise MemoryError("avformat_alloc_context failed")
        if isinstance(source, IOSource):
            self.source = source
            self.name = name or "the in-memory/file-object source"
            ctx.pb = self.source.ptr
            ctx.flags |= lavf.AVFMT_FLAG_CUSTOM_IO
            url = b""
        else:
            self.name = name or repr(source)
            self.location = source
            url = source.encode("utf-8", "surrogateescape")
        c_url = url
        with nogil:
            ret = lavf.avformat_open_input(&ctx, c_url, NULL, NULL)   # frees ctx on failure
        if ret < 0:
            self.raise_source_error()
            raise open_error(ret, self.name, self.source is not None)
        self.ptr = ctx
        if probe is not None and self.restore_probe(probe):
            self.probe_skipped = True
            self.probe_state = probe
            return
        with nogil:
            ret = lavf.avformat_find_stream_info(self.ptr, NULL)
        self.raise_source_error()
        check_av(ret, "avformat_find_stream_info", self.name)
        self.probe_state = self.capture_probe()

    def _probe_state(self):
        """What avformat_find_stream_info learnt about this file, as JSON-able lists, for a later
        open of the same file to skip it (``Demuxer(source, probe=state)``): taken when the probe
        ends, before any packet is read, or the state this demuxer was given (``probe_skipped``).
        None for a format where skipping the probe is not safe (see PROBE_SKIPPING_FORMATS)."""
        return self.probe_state

    def _unread(self):
        """A new Demuxer of the same source, following the same streams, that has read no packet:
        opened from this one's probe state, so without the probe (a tenth of a millisecond for an
        mp4). None where there is no such state (``_probe_state``), and for a URL or a file object,
        which a second open would make fetch the header again (they are never cached either).

        Some demuxers index the packets they read and seek by that index afterwards (AVI, Matroska
        without cues, fragmented mp4), so where a read lands after a seek can depend on what was read
        before it. A decoder that scans the file and then reads from this demuxer reads exactly as
        one opened with a cached index (the fuzzer found an AVI where the two gave other frames).
        The two demuxers read independently (an in-memory source gets a reader of its own over the
        same bytes), so this one can go on scanning while the other decodes (the lazy index).
        """
        cdef Demuxer unread
        cdef MemorySource memory
        if (self.probe_state is None or self.source is not None and not isinstance(self.source, MemorySource)
                or self.location is not None and is_url(self.location)):
            return None
        source = self.location
        if self.source is not None:
            memory = <MemorySource>self.source
            source = MemorySource(memory.owner, <size_t>memory.reader.data, memory.reader.size)
        unread = open_demuxer(source, self.name, self.probe_state)
        for index in self.followed:
            unread.follow(index)
        return unread

    cdef object capture_probe(self):
        format_name = optional_str(self.ptr.iformat.name)
        if format_name not in PROBE_SKIPPING_FORMATS:
            return None
        streams = [[stream_checks(self.ptr.streams[i]), stream_probe(self.ptr.streams[i])]
                   for i in range(self.ptr.nb_streams)]
        for checks, values in streams:
            if values[LAYOUT_ORDER] == -1:
                return None             # a channel order that is not stored (custom, ambisonic)
        return [PROBE_STATE_VERSION, format_name, [self.ptr.start_time, self.ptr.duration, self.ptr.bit_rate], streams,
                {kind: self._best_stream(kind) for kind in ("video", "audio")}]

    cdef bint restore_probe(self, state) except -1:
        """Apply a ``_probe_state`` of this file, right after avformat_open_input, instead of the
        probe; False (and nothing changed) when it does not fit the file's header: another format,
        stream layout, codec, codec configuration or time base, or a malformed state."""
        cdef unsigned int i
        try:
            version, format_name, container, streams, best = state
            if (version != PROBE_STATE_VERSION or format_name != optional_str(self.ptr.iformat.name)
                    or format_name not in PROBE_SKIPPING_FORMATS or len(streams) != self.ptr.nb_streams
                    or not plausible_probe(list(container), ["int64"] * 3) or set(best) != {"video", "audio"}):
                return False
            for chosen in best.values():
                if chosen is not None and (type(chosen) is not int or not 0 <= chosen < self.ptr.nb_streams):
                    return False
            for i in range(self.ptr.nb_streams):
                checks, values = streams[i]
                if list(checks) != stream_checks(self.ptr.streams[i]) or not plausible_probe(list(values), _STREAM_PROBE_TYPES):
                    return False
                order, mask = values[LAYOUT_ORDER], values[LAYOUT_ORDER + 1]
                if not (order == lavu.AV_CHANNEL_ORDER_UNSPEC and mask == 0 or order == lavu.AV_CHANNEL_ORDER_NATIVE
                        and bin(mask).count("1") == checks[7]):
                    return False            # not a layout of the stream's channel count
        except (TypeError, ValueError):
            return False
        for i in range(self.ptr.nb_streams):
            restore_stream_probe(self.ptr.streams[i], list(streams[i][1]))
        self.ptr.start_time, self.ptr.duration, self.ptr.bit_rate = container
        self.probed_best = dict(best)
        return True

    def __init__(self, source, *, streams="video"):
        for selector in self._selectors(streams):
            self.follow(self._stream_of(selector))

    def __reduce__(self):
        _process_local("Demuxer", "It owns an open container and the file descriptor behind it. Construct one in "
                                  "each process, from the same source.")

    def _selectors(self, streams):
        """The stream selectors of ``streams`` (see the class documentation), checked."""
        if isinstance(streams, str) and streams == "all":
            return [i for i in range(self.ptr.nb_streams)
                    if self.ptr.streams[i].codecpar.codec_type in (lavu.AVMEDIA_TYPE_VIDEO, lavu.AVMEDIA_TYPE_AUDIO)]
        if isinstance(streams, (str, int)) or not hasattr(streams, "__iter__"):
            streams = (streams,)
        streams = tuple(streams)
        if not streams:
            raise InvalidArgumentError("streams is empty, so this demuxer would have nothing to demux.")
        for selector in streams:
            if isinstance(selector, str) and selector == "all":
                raise InvalidArgumentError(f"streams='all' can only be used on its own, not alongside other selectors: got "
                                 f"{streams!r}.")
            if not (isinstance(selector, str) and selector in ("video", "audio")) and (
                    isinstance(selector, bool) or not isinstance(selector, int)):
                raise InvalidArgumentError(f"Invalid stream selector {selector!r}. Expected 'video', 'audio', or an int "
                                 f"stream index.")
        return list(streams)

    def _stream_of(self, selector):
        """The stream index that ``selector`` names (ValueError when it names none)."""
        if isinstance(selector, str):
            best = self._best_stream(selector)
            if best is None:
                raise InvalidArgumentError(f"No valid {selector} stream found in input file: {self.name} has no "
                                           f"{selector} stream")
            return best
        if not 0 <= selector < self.ptr.nb_streams:
            raise InvalidArgumentError(f"The stream index {selector} is not a valid stream (the file has "
                                       f"{self.ptr.nb_streams} stream(s)).")
        kind = self._media_type(selector)
        if kind not in ("video", "audio"):
            raise InvalidArgumentError(f"The stream at index {selector} is not a video stream nor an audio stream "
                                       f"(it is '{kind}').")
        return selector

    cdef object follow(self, int index):
        """Follow stream ``index`` (its packets are read from now on); its VideoStream/AudioStream."""
        if index in self.followed:
            raise InvalidArgumentError(f"stream {index} is selected twice")
        kind = self._media_type(index)
        if kind not in ("video", "audio"):
            raise InvalidArgumentError(f"The stream at index {index} is not a video stream nor an audio stream (it is '{kind}').")
        self.followed.append(index)
        self.set_discards()
        return self.stream_object(index)

    cdef object stream_object(self, int index):
        """A VideoStream / AudioStream of followed stream ``index``. The demuxer keeps only indices
        (the stream objects point at it: keeping them would make a reference cycle, which the
        garbage collector may break in an order that frees the source before the format context)."""
        if self._media_type(index) == "video":
            return VideoStream.__new__(VideoStream, self, index)
        return AudioStream.__new__(AudioStream, self, index)

    cdef int set_discards(self) except -1:
        """Have FFmpeg skip the packets of the streams not followed (less I/O and parsing)."""
        cdef unsigned int i
        wanted = set(self.followed)
        for i in range(self.ptr.nb_streams):
            self.ptr.streams[i].discard = lavc.AVDISCARD_DEFAULT if i in wanted else lavc.AVDISCARD_ALL
        return 0

    def _follow(self, int index):
        """Follow stream ``index`` too (the decoders' way of choosing their stream); its stream object."""
        return self.follow(index)

    @property
    def streams(self):
        """The followed streams (VideoStream / AudioStream), in the order they were selected."""
        return tuple(self.stream_object(index) for index in self.followed)

    @property
    def metadata(self):
        """What the header says about the container (a ``DemuxerMetadata``)."""
        if self._metadata is None:
            self._metadata = _metadata.DemuxerMetadata(**self._container_header())
        return self._metadata

    def _stream_metadata(self, int index):
        """The header metadata of stream ``index`` (made once)."""
        key = ("stream", index)
        if key not in self.indices:
            self.indices[key] = _metadata.header_metadata(self._stream_header(index))
        return self.indices[key]

    def _container_header(self):
        """The container's header fields of DemuxerMetadata, as a dict."""
        duration = None
        if self.ptr.duration != lavu.AV_NOPTS_VALUE and self.ptr.duration > 0:
            duration = ticks_to_seconds(self.ptr.duration, 1, lavu.AV_TIME_BASE)
        return dict(duration_seconds_from_header=duration,
                    bit_rate_from_header=float(self.ptr.bit_rate) if self.ptr.bit_rate > 0 else None,
                    best_video_stream_index=self._best_stream("video"),
                    best_audio_stream_index=self._best_stream("audio"))

    # ---- packets ------------------------------------------------------------------------------

    cdef Packet next_packet(self):
        """The next packet of a followed stream, or None at the end of the file (or at data that
        cannot be read: a truncated file ends there). Reading releases the GIL."""
        cdef Packet packet = Packet.__new__(Packet)
        cdef int got
        with nogil:
            got = self.read_into(packet)
        return packet if got else None

    def __iter__(self):
        return self

    def __next__(self):
        """The next :class:`Packet` of the followed streams, interleaved as the container stores them."""
        packet = self.next_packet()
        if packet is None:
            raise StopIteration
        return packet

    def seek(self, seconds, *, stream=None):
        """Move the demuxer to ``seconds`` (on ``stream``'s key frames; default: the first of ``streams``).

        Every followed stream moves. Video lands on the key frame at or before ``seconds`` (the first
        frames decoded then are usually before it); audio codecs need to re-prime, so decode a margin
        before your target and drop it. Seeking straight to ``seconds`` is what VideoDecoder calls
        seek_mode="approximate"; for exact access, scan the stream and seek to
        ``FrameIndex.key_frame_seconds_for(target)``. Afterwards, call ``reset()`` on every packet
        decoder and AudioConverter fed by this demuxer (a packet from before the seek refuses to be
        decoded after it). ValueError for a ``stream`` this demuxer does not follow or a time that
        is not a finite number.
        """
        cdef int index
        if stream is None:
            if not self.followed:
                raise ValueError("this demuxer follows no stream")
            index = self.followed[0]
        elif (not isinstance(stream, DemuxedStream) or (<DemuxedStream>stream).demuxer is not self
              or (<DemuxedStream>stream).index not in self.followed):
            raise ValueError(f"seek(stream=...) must be one of this demuxer's streams, got {stream!r}")
        else:
            index = (<DemuxedStream>stream).index
        seconds = float(seconds)
        if not math.isfinite(seconds):
            raise InvalidArgumentError(f"cannot seek to {seconds} seconds")
        if self.ptr.pb != NULL and not (self.ptr.pb.seekable & lavf.AVIO_SEEKABLE_NORMAL):
            raise RuntimeError(f"cannot seek {self.name}: it is read as a stream (a pipe or a live source), and its "
                               f"'{self.ptr.iformat.name.decode()}' format does not support seeking in one")
        cdef AVStream *st = self.ptr.streams[index]
        cdef int64_t timestamp = closest_ticks(seconds, st.time_base.num, st.time_base.den)
        with nogil:
            self.seek_timestamp(index, timestamp)
        self.generation += 1

    def __dealloc__(self):
        if self.ptr != NULL:
            lavf.avformat_close_input(&self.ptr)   # leaves a custom pb alone; IOSource frees it

    cdef int raise_source_error(self) except -1:
        if self.source is not None:
            self.source.raise_pending()
        return 0

    cdef AVStream *stream(self, int index) except NULL:
        if index < 0 or index >= <int>self.ptr.nb_streams:
            raise ValueError(f"stream index {index} is not a stream of {self.name}, which has "
                             f"{self.ptr.nb_streams} stream(s) (valid: 0..{self.ptr.nb_streams - 1})")
        return self.ptr.streams[index]

    @property
    def _num_streams(self):
        return self.ptr.nb_streams

    @property
    def _size(self):
        """The source's size in bytes; None when unknown (a stream without a size, or a format
        that reads no file). A file object's seek() that raises here raises to the caller."""
        cdef int64_t size = -1
        if self.ptr.pb != NULL:
            with nogil:
                size = lavf.avio_size(self.ptr.pb)
            self.raise_source_error()
        return size if size >= 0 else None

    def _media_type(self, int index):
        """'video', 'audio', ... for stream ``index``."""
        return MEDIA_TYPE_NAMES.get(self.stream(index).codecpar.codec_type, "unknown")

    def _best_stream(self, str media_type):
        """FFmpeg's choice (av_find_best_stream) of the stream of ``media_type``, or None. It ranks
        streams by what the probe decoded: a demuxer that skipped the probe answers as the probed
        open of the file did."""
        if self.probe_skipped:
            return self.probed_best[media_type]
        cdef lavu.AVMediaType kind = (lavu.AVMEDIA_TYPE_VIDEO if media_type == "video"
                                      else lavu.AVMEDIA_TYPE_AUDIO)
        cdef int ret = lavf.av_find_best_stream(self.ptr, kind, -1, -1, NULL, 0)
        return ret if ret >= 0 else None

    def _stream_header(self, int index):
        """A dict of what the container and codec parameters say about stream ``index``."""
        cdef AVStream *st = self.stream(index)
        cdef lavc.AVCodecParameters *par = st.codecpar
        cdef const int32_t *matrix = ffcompat.tc_stream_display_matrix(st)
        cdef const lavu.AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(<lavu.AVPixelFormat>par.format)
        # The stream's own duration only (Matroska/WebM streams have none); the container's is
        # reported apart, as the last fallback of the computed duration (approximate mode).
        duration = container_duration = None
        if st.duration != lavu.AV_NOPTS_VALUE and st.duration > 0:
            duration = ticks_to_seconds(st.duration, st.time_base.num, st.time_base.den)
        if self.ptr.duration != lavu.AV_NOPTS_VALUE and self.ptr.duration > 0:
            container_duration = ticks_to_seconds(self.ptr.duration, 1, lavu.AV_TIME_BASE)
        header = {
            "stream_index": index,
            "media_type": MEDIA_TYPE_NAMES.get(par.codec_type, "unknown"),
            "codec": optional_str(lavc.avcodec_get_name(par.codec_id)),
            "time_base": Fraction(st.time_base.num, st.time_base.den),
            "duration_seconds_from_header": duration,
            "duration_seconds_from_container": container_duration,
            "begin_stream_seconds_from_header": (ticks_to_seconds(st.start_time, st.time_base.num, st.time_base.den) if st.start_time != lavu.AV_NOPTS_VALUE
                                                 else None),
            "bit_rate": par.bit_rate,
            "num_frames_from_header": st.nb_frames if st.nb_frames > 0 else None,
        }
        if par.codec_type == lavu.AVMEDIA_TYPE_VIDEO:
            # The codec parameters' sample aspect ratio as it is: 0/1 when unknown (as TorchCodec)
            sar = par.sample_aspect_ratio
            header.update(
                width=par.width,
                height=par.height,
                average_fps_from_header=(lavu.av_q2d(st.r_frame_rate)
                                         if st.r_frame_rate.num > 0 and st.r_frame_rate.den > 0 else None),
                pixel_aspect_ratio=Fraction(sar.num, sar.den) if sar.den != 0 else None,
                rotation=display_rotation(matrix),
                pixel_format=optional_str(lavu.av_get_pix_fmt_name(<lavu.AVPixelFormat>par.format)),
                bits_per_component=(desc.comp[0].depth if desc != NULL else 8),
                color_primaries=color_name(par.color_primaries, lavu.av_color_primaries_name(par.color_primaries)),
                color_space=color_name(par.color_space, lavu.av_color_space_name(par.color_space)),
                color_transfer_characteristic=color_name(par.color_trc, lavu.av_color_transfer_name(par.color_trc)),
                color_range=(optional_str(lavu.av_color_range_name(par.color_range))
                             if par.color_range != lavu.AVCOL_RANGE_UNSPECIFIED else None),
            )
        elif par.codec_type == lavu.AVMEDIA_TYPE_AUDIO:
            header.update(
                sample_rate=par.sample_rate,
                num_channels=ffcompat.tc_codecpar_channels(par),
                sample_format=optional_str(lavu.av_get_sample_fmt_name(<lavu.AVSampleFormat>par.format)),
            )
        return header

    cdef int read(self, AVPacket *packet) except? -1 nogil:
        """av_read_frame; returns its code (AVERROR_EOF at the end). Raises a file object's error."""
        cdef int ret = lavf.av_read_frame(self.ptr, packet)
        self.has_read = True
        if ret < 0 and self.source is not None:
            with gil:
                self.raise_source_error()
        return ret

    cdef int read_into(self, Packet packet) except -1 nogil:
        """Read the next packet of a followed stream into ``packet`` (its previous content is
        released): 1, or 0 at the end of the file (or at data that cannot be read). The C-level
        form of iterating the demuxer, for extensions (see ``torchcodec/blocks.pxd``)."""
        cdef int ret
        while True:
            lavc.av_packet_unref(packet.ptr)
            ret = self.read(packet.ptr)
            if ret < 0:
                return 0
            # Packets an edit list discards are kept: the decoder needs them (they are references,
            # or an audio codec's priming) and drops their frames itself.
            if self.ptr.streams[packet.ptr.stream_index].discard != lavc.AVDISCARD_ALL:
                break
        packet.stream_index = packet.ptr.stream_index
        packet.generation = self.generation
        packet.time_base = self.ptr.streams[packet.stream_index].time_base
        return 1

    cdef int seek_timestamp(self, int stream_index, int64_t timestamp) except -1 nogil:
        """Seek so that the next packets start at the key frame at or before ``timestamp``
        (INT64_MIN: the first key frame). Falls back to the nearest key frame, then to byte 0."""
        cdef int ret = lavu.AVERROR(EINVAL)
        if timestamp != INT64_MIN:
            ret = lavf.avformat_seek_file(self.ptr, stream_index, INT64_MIN, timestamp, timestamp, 0)
        if ret < 0:
            ret = lavf.avformat_seek_file(self.ptr, stream_index, INT64_MIN, timestamp, INT64_MAX, 0)
        if ret < 0 and self.can_seek_bytes():
            ret = lavf.av_seek_frame(self.ptr, -1, 0, lavf.AVSEEK_FLAG_BYTE | lavf.AVSEEK_FLAG_BACKWARD)
        if ret < 0:
            with gil:
                self.raise_source_error()
                check_av(ret, "avformat_seek_file",
                         f"{self.name}: its '{self.ptr.iformat.name.decode()}' format does not support seeking")
        return 0

    cdef int seek_to_start(self, int stream_index) except -1 nogil:
        """Seek to the stream's start time (its first key frame when the start time is unknown).
        The video paths use this: INT64_MIN was seen to bring no packets back once an mp4 video had
        been read to its end."""
        cdef int64_t start = self.ptr.streams[stream_index].start_time
        return self.seek_timestamp(stream_index, start if start != lavu.AV_NOPTS_VALUE else INT64_MIN)

    cdef int rewind(self, int stream_index) except -1 nogil:
        """Back to the first packet of the file. A seek of the whole file (stream -1) to INT64_MIN
        gave back exactly the first packets in every format of the corpus (tested), where seeking a
        stream to its start time lands late in MPEG-TS/PS, raw MP3 and mp4 with audio first, and a
        byte seek to 0 fails or loses sync in mp4, Matroska and AVI; those are the fallbacks."""
        cdef int ret = lavf.avformat_seek_file(self.ptr, -1, INT64_MIN, INT64_MIN, INT64_MIN, 0)
        if ret >= 0:
            return 0
        return self.seek_to_start(stream_index)

    cdef int seek_bytes(self, int64_t position) except -1 nogil:
        """Seek to byte ``position`` (the start of a packet) of the file."""
        cdef int ret = lavf.av_seek_frame(self.ptr, -1, position, lavf.AVSEEK_FLAG_BYTE | lavf.AVSEEK_FLAG_BACKWARD)
        if ret < 0:
            with gil:
                self.raise_source_error()
                check_av(ret, "av_seek_frame (by bytes)", self.name)
        return 0

    cdef bint can_seek_bytes(self) noexcept nogil:
        return not (self.ptr.iformat.flags & lavf.AVFMT_NO_BYTE_SEEK)

    cdef bint follows(self, int index) noexcept:
        return index in self.followed

    cdef int scan_followed(self, bint rewind) except -1:
        """Read every packet of the followed streams once and keep each stream's FrameIndex
        (discarded packets left out) in ``indices``; then, if ``rewind``, seek back to the start.

        Reading starts at the start of the file and stops at its end or at the first unreadable
        packet (a truncated file keeps the frames before the damage). Without ``rewind``, the
        demuxer must be seeked before reading again.
        """
        cdef AVStream *st
        cdef Py_ssize_t i, count = len(self.followed)
        cdef int first
        if count == 0:
            raise ValueError("this demuxer follows no stream: there is nothing to scan")
        first = self.followed[0]
        builders = []
        for i in range(count):
            st = self.ptr.streams[<int>self.followed[i]]
            builders.append(IndexBuilder((st.time_base.num, st.time_base.den)))
        cdef int *wanted = <int *>malloc(count * sizeof(int))
        cdef void **targets = <void **>malloc(count * sizeof(void *))     # borrowed: ``builders`` holds them
        cdef AVPacket *packet = lavc.av_packet_alloc()
        try:
            if wanted == NULL or targets == NULL or packet == NULL:
                raise MemoryError("cannot allocate the scan's packet")
            for i in range(count):
                wanted[i] = self.followed[i]
                targets[i] = <void *>builders[i]
            with nogil:
                if self.generation > 0 or self.has_read:
                    self.rewind(first)
                self.read_scan(packet, wanted, targets, count, None, 0, INT64_MIN)
                if rewind:
                    self.rewind(first)
        finally:
            lavc.av_packet_free(&packet)
            free(wanted)
            free(targets)
        for i in range(count):
            self.indices[self.followed[i]] = (<IndexBuilder>builders[i]).index
        if rewind:
            self.generation += 1
        return 0

    cdef int read_scan(self, AVPacket *packet, const int *wanted, void **builders, Py_ssize_t count,
                       IndexBuilder watched, Py_ssize_t want_size, int64_t want_pts) except -1 nogil:
        """Read packets into the IndexBuilders of streams ``wanted`` (discarded packets left out)
        until ``watched`` (one of them, or None) has ``want_size`` final entries and, unless
        ``want_pts`` is INT64_MIN, a final entry after ``want_pts``: 0. At the end of the file, or at
        the first packet that cannot be read, every builder is ended: 1. A ``watched`` builder out of
        order reads on to the end (nothing more of it becomes final before)."""
        cdef Py_ssize_t i, size
        cdef int ret
        while True:
            if watched is not None and watched.ordered:
                size = watched.index.size
                if size >= want_size and (want_pts == INT64_MIN or size > 0 and watched.index.entries[size - 1].pts > want_pts):
                    return 0
            ret = self.read(packet)
            if ret < 0:
                break
            if not ffcompat.tc_packet_is_discarded(packet):
                for i in range(count):
                    if packet.stream_index == wanted[i]:
                        (<IndexBuilder>builders[i]).add(packet.pts, packet.dts, packet.duration,
                                                        (packet.flags & lavc.AV_PKT_FLAG_KEY) != 0, packet.pos)
                        break
            lavc.av_packet_unref(packet)
        for i in range(count):
            (<IndexBuilder>builders[i]).end()
        return 1

    def _scan(self, int stream_index, bint rewind=False):
        """The FrameIndex of followed stream ``stream_index``, from one read of the file (see
        scan_followed; every followed stream is indexed by the same read)."""
        if not self.follows(stream_index):
            raise ValueError(f"stream {stream_index} is not followed by this demuxer")
        if stream_index not in self.indices:
            self.scan_followed(rewind)
        return self.indices[stream_index]


cdef class IndexScan:
    """The exact frame index of one followed stream, read only as far as it is needed: the lazy
    index of ``VideoDecoder``. ``index`` holds the entries known final (IndexBuilder), a prefix of
    the full scan's index in presentation order; ``cover_frames`` and ``cover_seconds`` read on
    until it reaches far enough, ``complete`` to the end (then ``done``; ``index`` is exactly what
    ``Demuxer._scan`` gives).

    ``demuxer`` is read by this scan alone, from where its probe left it, so that its packets come
    in the order a full scan reads them; decoding needs another demuxer (``Demuxer._unread``).
    """
    cdef Demuxer demuxer
    cdef int stream_index
    cdef readonly IndexBuilder builder
    cdef AVPacket *packet

    def __cinit__(self, Demuxer demuxer not None, int stream_index):
        if not demuxer.follows(stream_index):
            raise ValueError(f"stream {stream_index} is not followed by this demuxer")
        if demuxer.generation > 0 or demuxer.has_read:
            raise ValueError("the demuxer has read packets: a lazy scan starts where the probe left it")
        self.demuxer = demuxer
        self.stream_index = stream_index
        cdef AVStream *st = demuxer.stream(stream_index)
        self.builder = IndexBuilder((st.time_base.num, st.time_base.den))
        self.packet = lavc.av_packet_alloc()
        if self.packet == NULL:
            raise MemoryError("cannot allocate the scan's packet")

    def __dealloc__(self):
        lavc.av_packet_free(&self.packet)

    def __reduce__(self):
        _process_local("IndexScan", "Scan the stream in that process.")

    @property
    def index(self):
        """The FrameIndex so far: every entry final, in presentation order (grows as the scan goes on)."""
        return self.builder.index

    @property
    def done(self):
        """Whether the scan reached the end of the file: ``index`` is the whole stream's."""
        return self.builder.ended

    @property
    def end_seconds(self):
        """The largest pts + duration (seconds) among the final entries (None while there is none):
        the stream's end is at least this."""
        if self.builder.index.size == 0:
            return None
        return ticks_to_seconds(self.builder.end_ticks, self.builder.index.time_base_num,
                                self.builder.index.time_base_den)

    cdef int read_until(self, Py_ssize_t want_size, int64_t want_pts) except -1:
        cdef int wanted = self.stream_index
        cdef void *target = <void *>self.builder
        cdef Py_ssize_t before = self.builder.index.size
        if self.builder.ended:
            return 0
        with nogil:
            self.demuxer.read_scan(self.packet, &wanted, &target, 1, self.builder, want_size, want_pts)
        if self.builder.index.size != before or self.builder.ended:
            self.builder.index.grew()
        return 0

    def cover_frames(self, Py_ssize_t count):
        """Read on until ``index`` holds ``count`` frames, or to the end of the stream."""
        self.read_until(count, INT64_MIN)

    def cover_seconds(self, double seconds, Py_ssize_t margin=0):
        """Read on until ``index`` holds a frame whose pts is after ``seconds`` and ``margin`` more
        frames, or to the end of the stream."""
        cdef FrameIndex index = self.builder.index
        cdef double ticks = seconds * index.time_base_den / index.time_base_num
        if isnan(ticks) or ticks >= 9.0e18:
            self.complete()
            return
        if ticks > -9.0e18:
            self.read_until(0, closest_ticks(seconds, index.time_base_num, index.time_base_den) + 1)
        self.read_until(index.size + margin + 1, INT64_MIN)

    def complete(self):
        """Read to the end of the stream: ``index`` is then the whole stream's."""
        self.read_until(PY_SSIZE_T_MAX, INT64_MIN)


cdef class DemuxedStream:
    """A stream that a :class:`Demuxer` follows (a VideoStream or an AudioStream); the demuxer makes
    them (``demuxer.streams``), never the caller.

    Attributes:
        index (int): the stream's absolute index in the container (what ``Packet.stream_index`` says).
    """

    def __cinit__(self, Demuxer demuxer not None, int index):
        self.demuxer = demuxer
        self.index = index

    def __init__(self, *args, **kwargs):
        raise RuntimeError(f"{type(self).__name__} cannot be built directly: a Demuxer makes one for each stream "
                           f"it follows (demuxer.streams)")

    def __reduce__(self):
        _process_local(type(self).__name__, "Reach it through a Demuxer built in that process.")

    def __repr__(self):
        return f"{type(self).__name__}(index={self.index})"

    def __eq__(self, other):
        return (type(other) is type(self) and (<DemuxedStream>other).demuxer is self.demuxer
                and (<DemuxedStream>other).index == self.index)

    def __hash__(self):
        return hash((id(self.demuxer), self.index))

    @property
    def metadata(self):
        """What the container header says about this stream (VideoStreamHeaderMetadata or
        AudioStreamHeaderMetadata): no frame count or timestamps from the content (see ``scan``)."""
        return self.demuxer._stream_metadata(self.index)


cdef class VideoStream(DemuxedStream):
    """A video stream followed by a :class:`Demuxer` (see ``Demuxer.streams``)."""

    def scan(self):
        """Read the stream's packets from end to end without decoding them (a scan) and return its
        :class:`FrameIndex`: the exact frame count, timestamps and key frames, which the header may
        get wrong. One read of the file indexes every stream the demuxer follows, so later calls (on
        this or another stream) are free. Call it before reading packets: the demuxer is back at the
        start afterwards (decoders fed before must be ``reset()``)."""
        return self.demuxer._scan(self.index, True)

    def make_decoder(self, device=None, *, num_ffmpeg_threads=1):
        """The :class:`VideoPacketDecoder` of this stream's packets.

        Args:
            device: where to decode: "cpu", "cuda" or "cuda:N" (also a ``torch.device``). None: torch's
                default device when torch is in use (``torch.set_default_device``), else the CPU. On
                CUDA, NVDEC decodes (or FFmpeg's CUDA hwaccel, under ``set_cuda_backend("ffmpeg")``);
                a stream NVDEC cannot decode is decoded on the CPU and its frames uploaded.
            num_ffmpeg_threads: CPU decoding threads (1: on the calling thread, best when several
                streams decode in parallel; 0 lets FFmpeg choose). No effect on the GPU.
        """
        from torchcodec._core._packet_decoder import check_threads, make_video_decoder
        threads = check_threads(num_ffmpeg_threads)
        name, index = parse_device(device)
        if index is None:
            return make_video_decoder(self.demuxer, self.index, threads)
        return device_parts(name).packet_decoder(self.demuxer, self.index, index, threads)


cdef class AudioStream(DemuxedStream):
    """An audio stream followed by a :class:`Demuxer` (see ``Demuxer.streams``)."""

    def make_decoder(self):
        """The :class:`AudioPacketDecoder` of this stream's packets (audio decodes on the CPU)."""
        from torchcodec._core._packet_decoder import make_audio_decoder
        return make_audio_decoder(self.demuxer, self.index)


cdef Demuxer open_demuxer(object source, object name=None, object probe=None):
    """A Demuxer of ``source`` that follows no stream yet (``follow`` chooses them); ``probe``: a
    ``_probe_state`` of the same file, to skip avformat_find_stream_info where it fits."""
    return Demuxer.__new__(Demuxer, source, name=name, probe=probe)


def unselected_demuxer(source, name=None, probe=None):
    """A Demuxer of ``source`` with no stream selected yet (``open_demuxer`` for Python callers: the
    decoders choose their stream with their own checks and messages, then ``_follow`` it)."""
    return open_demuxer(source, name, probe)


def get_container_metadata(source):
    """Describe a container and every stream in it, without decoding anything (only the header is
    read): a ``ContainerMetadata`` with the container's fields and one entry per stream, indexed by
    stream index (VideoStreamHeaderMetadata, AudioStreamHeaderMetadata, or StreamMetadata for the
    others)::

        metadata = get_container_metadata("video.mp4")
        metadata.streams[metadata.best_video_stream_index].width

    ``source`` is anything a Demuxer opens.
    """
    cdef Demuxer demuxer = open_demuxer(source)
    streams = [_metadata.header_metadata(demuxer._stream_header(i)) for i in range(demuxer.ptr.nb_streams)]
    return _metadata.ContainerMetadata(**demuxer._container_header(), streams=streams)
