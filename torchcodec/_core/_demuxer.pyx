"""Demuxing: open a source, describe its streams, read packets, seek, and scan a stream's frames."""
from fractions import Fraction

from libc.errno cimport EINVAL
from libc.math cimport isnan
from libc.stdint cimport INT64_MAX, INT64_MIN, int32_t, int64_t

from torchcodec._core._avio cimport IOSource
from torchcodec._core._error cimport check_av
from torchcodec._core._frame_index cimport FrameIndex, ticks_to_seconds
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avformat as lavf
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport ffcompat
from torchcodec._ffmpeg.avcodec cimport AVPacket
from torchcodec._ffmpeg.avformat cimport AVFormatContext, AVStream

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


cdef class Demuxer:
    """Opens ``source``: a path or URL (``str``), or an ``IOSource`` (memory or file object)."""

    def __cinit__(self, source, name=None):
        self.ptr = NULL
        self.source = None
        cdef bytes url
        cdef const char *c_url
        cdef int ret
        cdef AVFormatContext *ctx = lavf.avformat_alloc_context()
        if ctx == NULL:
            raise MemoryError("avformat_alloc_context failed")
        if isinstance(source, IOSource):
            self.source = source
            self.name = name or "the in-memory/file-object source"
            ctx.pb = self.source.ptr
            ctx.flags |= lavf.AVFMT_FLAG_CUSTOM_IO
            url = b""
        elif isinstance(source, str):
            self.name = repr(source)
            url = source.encode("utf-8", "surrogateescape")
        else:
            lavf.avformat_free_context(ctx)
            raise TypeError(f"Demuxer needs a str path/URL or an IOSource, not {type(source).__name__}")
        c_url = url
        with nogil:
            ret = lavf.avformat_open_input(&ctx, c_url, NULL, NULL)   # frees ctx on failure
        if ret < 0:
            self.raise_source_error()
            check_av(ret, "avformat_open_input", self.name)
        self.ptr = ctx
        with nogil:
            ret = lavf.avformat_find_stream_info(self.ptr, NULL)
        self.raise_source_error()
        check_av(ret, "avformat_find_stream_info", self.name)

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
    def num_streams(self):
        return self.ptr.nb_streams

    @property
    def size(self):
        """The source's size in bytes; None when unknown (a stream without a size, or a format
        that reads no file). A file object's seek() that raises here raises to the caller."""
        cdef int64_t size = -1
        if self.ptr.pb != NULL:
            with nogil:
                size = lavf.avio_size(self.ptr.pb)
            self.raise_source_error()
        return size if size >= 0 else None

    def media_type(self, int index):
        """'video', 'audio', ... for stream ``index``."""
        return MEDIA_TYPE_NAMES.get(self.stream(index).codecpar.codec_type, "unknown")

    def best_stream(self, str media_type):
        """FFmpeg's choice (av_find_best_stream) of the stream of ``media_type``, or None."""
        cdef lavu.AVMediaType kind = (lavu.AVMEDIA_TYPE_VIDEO if media_type == "video"
                                      else lavu.AVMEDIA_TYPE_AUDIO)
        cdef int ret = lavf.av_find_best_stream(self.ptr, kind, -1, -1, NULL, 0)
        return ret if ret >= 0 else None

    def use_only_stream(self, int index):
        """Tell the demuxer to skip the packets of every other stream (less I/O and parsing)."""
        self.stream(index)
        cdef unsigned int i
        for i in range(self.ptr.nb_streams):
            self.ptr.streams[i].discard = lavc.AVDISCARD_DEFAULT if <int>i == index else lavc.AVDISCARD_ALL

    def stream_header(self, int index):
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
        if ret < 0 and self.source is not None:
            with gil:
                self.raise_source_error()
        return ret

    cdef int seek(self, int stream_index, int64_t timestamp) except -1 nogil:
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
        return self.seek(stream_index, start if start != lavu.AV_NOPTS_VALUE else INT64_MIN)

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

    def scan(self, int stream_index):
        """Read every packet of ``stream_index`` and return its FrameIndex (discarded packets left out).

        Reading stops at the end of the file or at the first unreadable packet (a truncated file
        keeps the frames before the damage). The demuxer must be seeked before reading again.
        """
        cdef AVStream *st = self.stream(stream_index)
        cdef FrameIndex index = FrameIndex((st.time_base.num, st.time_base.den))
        cdef AVPacket *packet = lavc.av_packet_alloc()
        if packet == NULL:
            raise MemoryError("av_packet_alloc failed")
        cdef int ret = 0
        try:
            with nogil:
                while True:
                    ret = self.read(packet)
                    if ret < 0:
                        break
                    if packet.stream_index == stream_index and not ffcompat.tc_packet_is_discarded(packet):
                        if packet.pts == lavu.AV_NOPTS_VALUE:
                            index.pts_from_dts = True
                        index.append(ffcompat.tc_packet_pts(packet), packet.duration,
                                     (packet.flags & lavc.AV_PKT_FLAG_KEY) != 0, packet.pos)
                    lavc.av_packet_unref(packet)
                index.finish()
        finally:
            lavc.av_packet_free(&packet)
        return index

