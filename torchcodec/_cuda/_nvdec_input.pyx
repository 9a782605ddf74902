"""What NVDEC is fed for one video stream, chosen and produced with FFmpeg alone.

NVDEC's parser (cuvidParseVideoData) takes elementary streams: H.264 and HEVC in Annex B form
(start codes, parameter sets in band), MPEG-4 part 2 with one VOP per packet, AV1 as low-overhead
OBUs, VP8 and VP9 frames as they are. ``NvdecInput`` chooses, for stream ``i`` of a ``Demuxer``:

- the NVDEC codec (or "unsupported" and why);
- the FFmpeg bitstream filter that turns the container's packets into that form:
  ``h264_mp4toannexb`` / ``hevc_mp4toannexb`` when the extradata is avcC / hvcC (mp4, mkv),
  ``mpeg4_unpack_bframes`` for MPEG-4 part 2 (DivX-style packed B-frames, in AVI), none for Annex B
  streams (MPEG-TS, raw), AV1, VP9, VP8 and MPEG-1/2 (they pass through FFmpeg's "null" filter);
- the sequence header to send to a parser before the first packet and again after a flush or a
  seek: H.264/HEVC parameter sets in Annex B form, the AV1 sequence header OBU, the MPEG-4 VOL,
  the MPEG-1/2 sequence header; empty for VP8/VP9 (every key frame carries its own header).

``next_packet`` (C, nogil) returns filtered packets with their pts; ``flush`` forgets what the
filter holds (after a seek of the demuxer) and drops the packets before the next key packet, where
a parser can start again. The Python methods are for tests and tools.
"""
from libc.errno cimport EAGAIN, ENOMEM
from libc.stdint cimport int64_t, uint8_t

from torchcodec._core._demuxer cimport Demuxer
from torchcodec._core._error cimport av_error_string, check_av
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avformat as lavf
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport ffcompat
from torchcodec._ffmpeg.avcodec cimport AVCodecParameters, AVPacket

# AVCodecID -> the codec's name in NVDEC's terms (cudaVideoCodec_<NAME>).
NVDEC_CODECS = {
    lavc.AV_CODEC_ID_H264: "h264",
    lavc.AV_CODEC_ID_HEVC: "hevc",
    lavc.AV_CODEC_ID_AV1: "av1",
    lavc.AV_CODEC_ID_VP9: "vp9",
    lavc.AV_CODEC_ID_VP8: "vp8",
    lavc.AV_CODEC_ID_MPEG4: "mpeg4",
    lavc.AV_CODEC_ID_MPEG2VIDEO: "mpeg2",
    lavc.AV_CODEC_ID_MPEG1VIDEO: "mpeg1",
}

# The filter may refuse this many packets in a row (corrupt data: each is dropped) before it gives up.
cdef int MAX_BAD_PACKETS = 16

# AV1: the av1C box starts with a marker bit and version 1 (0x81); the config OBUs follow 4 bytes in.
cdef int AV1C_HEADER_SIZE = 4
cdef int AV1_OBU_SEQUENCE_HEADER = 1


cdef bint has_start_code(const uint8_t *data, int size) noexcept nogil:
    """Whether ``data`` starts with an Annex B / MPEG start code (00 00 01 or 00 00 00 01)."""
    if size >= 3 and data[0] == 0 and data[1] == 0 and data[2] == 1:
        return True
    return size >= 4 and data[0] == 0 and data[1] == 0 and data[2] == 0 and data[3] == 1


cdef bytes extradata_of(const AVCodecParameters *par):
    if par.extradata == NULL or par.extradata_size <= 0:
        return b""
    return par.extradata[:par.extradata_size]


cdef tuple choose_bsf(str codec, bytes extradata):
    """(bitstream filter name or None, reason the stream cannot be fed to NVDEC or None)."""
    if codec in ("h264", "hevc"):
        if not extradata or has_start_code(extradata, len(extradata)):
            return None, None                      # Annex B already (MPEG-TS, raw), sets in band
        if extradata[0] == 1:
            return f"{codec}_mp4toannexb", None    # avcC / hvcC (mp4, mkv): length-prefixed NALs
        return None, (f"its {codec} extradata ({len(extradata)} bytes, first byte "
                      f"{extradata[0]:#04x}) is neither avcC/hvcC nor Annex B")
    if codec == "mpeg4":
        return "mpeg4_unpack_bframes", None
    return None, None


# NAL unit types of parameter sets: H.264 SPS, PPS, SPS extension; HEVC VPS, SPS, PPS.
PARAMETER_SET_TYPES = {"h264": (7, 8, 13), "hevc": (32, 33, 34)}


cdef bytes parameter_sets(str codec, bytes annex_b):
    """The parameter-set NAL units of an Annex B byte string, each after a 4-byte start code.
    SEI and other units in the extradata (x265 puts its settings there, kilobytes) are left out:
    what stays is what a parser needs, small enough for CUVIDEOFORMATEX.raw_seqhdr_data."""
    if not has_start_code(annex_b, len(annex_b)):
        return b""
    kept = []
    for unit in annex_b.split(b"\x00\x00\x01"):
        unit = unit.rstrip(b"\x00")      # trailing zero bytes belong to the next start code
        if not unit:
            continue
        nal_type = unit[0] & 0x1F if codec == "h264" else (unit[0] >> 1) & 0x3F
        if nal_type in PARAMETER_SET_TYPES[codec]:
            kept.append(b"\x00\x00\x00\x01" + unit)
    return b"".join(kept)


cdef bytes av1_sequence_header(bytes extradata):
    """The configOBUs of an av1C box (or the extradata itself when it is bare OBUs)."""
    if not extradata:
        return b""
    if extradata[0] & 0x80:                        # av1C: marker bit set
        return extradata[AV1C_HEADER_SIZE:]
    return extradata


cdef class NvdecInput:
    """The input of an NVDEC decoder for video stream ``stream_index`` of ``demuxer``.

    The demuxer is shared: the caller seeks it (then calls ``flush``); packets of other streams
    are skipped. For a stream NVDEC cannot take, ``nvdec_codec`` is ``"unsupported"``,
    ``unsupported_reason`` says why, and asking for packets raises ``ValueError``.
    """

    def __cinit__(self, Demuxer demuxer, int stream_index):
        self.ptr = NULL
        self.packet = NULL
        self.demuxer = demuxer
        self.stream_index = stream_index
        self.header = b""
        self.bsf_name = None
        self.unsupported_reason = None
        self.input_done = False
        self.output_done = False
        self.awaiting_key = False
        self.bad_packets = 0
        cdef lavf.AVStream *st = demuxer.stream(stream_index)
        cdef AVCodecParameters *par = st.codecpar
        codec_name = lavc.avcodec_get_name(par.codec_id).decode()
        if par.codec_type != lavu.AVMEDIA_TYPE_VIDEO:
            self.nvdec_codec = "unsupported"
            self.unsupported_reason = f"stream {stream_index} is not a video stream (codec {codec_name!r})"
            return
        if par.codec_id not in NVDEC_CODECS:
            self.nvdec_codec = "unsupported"
            self.unsupported_reason = f"NVDEC does not decode {codec_name!r}"
            return
        self.nvdec_codec = NVDEC_CODECS[par.codec_id]
        extradata = extradata_of(par)
        self.bsf_name, self.unsupported_reason = choose_bsf(self.nvdec_codec, extradata)
        if self.unsupported_reason is not None:
            self.nvdec_codec = "unsupported"
            return

        cdef bytes filter_name = (self.bsf_name or "null").encode()
        cdef const lavc.AVBitStreamFilter *bsf = lavc.av_bsf_get_by_name(filter_name)
        if bsf == NULL:
            raise RuntimeError(f"this FFmpeg build lacks the {filter_name.decode()!r} bitstream filter")
        check_av(lavc.av_bsf_alloc(bsf, &self.ptr), "av_bsf_alloc")
        check_av(lavc.avcodec_parameters_copy(self.ptr.par_in, par), "avcodec_parameters_copy")
        self.ptr.time_base_in = st.time_base
        check_av(lavc.av_bsf_init(self.ptr), "av_bsf_init",
                 f"the {filter_name.decode()!r} filter of stream {stream_index} ({codec_name})")
        self.packet = lavc.av_packet_alloc()
        if self.packet == NULL:
            raise MemoryError("av_packet_alloc failed")

        extradata = extradata_of(self.ptr.par_out)   # Annex B parameter sets after mp4toannexb
        if self.nvdec_codec == "av1":
            self.header = av1_sequence_header(extradata)
        elif self.nvdec_codec in ("h264", "hevc"):
            self.header = parameter_sets(self.nvdec_codec, extradata)
        elif self.nvdec_codec in ("mpeg4", "mpeg2", "mpeg1"):
            self.header = extradata if has_start_code(extradata, len(extradata)) else b""

    def __dealloc__(self):
        if self.packet != NULL:
            lavc.av_packet_free(&self.packet)
        if self.ptr != NULL:
            lavc.av_bsf_free(&self.ptr)

    cdef int next_packet(self, AVPacket *out) except -1 nogil:
        """The next filtered packet of the stream, in ``out`` (unref it after use): 1, or 0 at the end.

        Reads the demuxer (skipping other streams) until the filter has a packet. At the end of the
        file, or at unreadable data, the filter is drained. Packets the filter cannot parse are
        dropped, up to MAX_BAD_PACKETS in a row.
        """
        cdef int ret
        while True:
            if self.output_done:
                return 0
            ret = lavc.av_bsf_receive_packet(self.ptr, out)
            if ret >= 0:
                if self.awaiting_key and not (out.flags & lavc.AV_PKT_FLAG_KEY):
                    lavc.av_packet_unref(out)     # undecodable without what came before the seek
                    continue
                self.awaiting_key = False
                self.bad_packets = 0
                return 1
            if ret == lavu.AVERROR_EOF:
                self.output_done = True
                return 0
            if ret != lavu.AVERROR(EAGAIN):
                self.refuse_or_raise(ret)     # the filter dropped a packet it could not parse
                continue
            if self.input_done:
                self.output_done = True
                return 0
            ret = self.demuxer.read(self.packet)
            if ret < 0:                   # end of file, or unreadable data: drain the filter
                self.input_done = True
                ret = lavc.av_bsf_send_packet(self.ptr, NULL)
            elif self.packet.stream_index == self.stream_index:
                ret = lavc.av_bsf_send_packet(self.ptr, self.packet)   # takes the packet's data
            else:
                ret = 0
            lavc.av_packet_unref(self.packet)
            if ret < 0:
                with gil:
                    check_av(ret, "av_bsf_send_packet", self.bsf_name)

    cdef int refuse_or_raise(self, int ret) except -1 nogil:
        """A packet the filter refused: skip it, unless memory ran out or too much data is bad."""
        self.bad_packets += 1
        if ret == lavu.AVERROR(ENOMEM) or self.bad_packets > MAX_BAD_PACKETS:
            with gil:
                raise RuntimeError(
                    f"bitstream filter {(self.bsf_name or 'null')!r} refused the packets of stream "
                    f"{self.stream_index}: av_bsf_receive_packet returned {av_error_string(ret)} "
                    f"({self.bad_packets} errors in a row)")
        return 0

    cdef void flush(self) noexcept nogil:
        """Forget what the filter holds (after a seek of the demuxer); the stream goes on from the
        next key packet."""
        if self.ptr != NULL:
            lavc.av_bsf_flush(self.ptr)
        self.awaiting_key = True
        self.input_done = False
        self.output_done = False

    cdef int check_supported(self) except -1:
        if self.ptr == NULL:
            raise ValueError(f"NVDEC cannot take stream {self.stream_index}: {self.unsupported_reason}")
        return 0

    def sequence_header(self):
        """The bytes to send to NVDEC's parser before the first packet and after every flush or seek
        (Annex B parameter sets for H.264/HEVC, the AV1 sequence header OBU, the MPEG-4 VOL, the
        MPEG-1/2 sequence header; empty for VP8/VP9, or when the container has none)."""
        self.check_supported()
        return self.header

    def seek(self, pts=None, position=-1):
        """Seek the demuxer and flush the filter: what a decoder does before re-sending the
        sequence header. ``pts``: the key frame at or before it (in the stream's time base; None:
        the first key frame). ``position`` >= 0: the byte position of a key packet instead (from a
        frame index), for containers whose timestamp seek lands only near the target (MPEG-TS/PS).
        Packets before the next key packet are then dropped."""
        self.check_supported()
        cdef bint from_start = pts is None
        cdef int64_t target = 0 if from_start else pts
        cdef int64_t byte_position = position
        with nogil:
            if byte_position >= 0:
                self.demuxer.seek_bytes(byte_position)
            elif from_start:
                self.demuxer.seek_to_start(self.stream_index)
            else:
                self.demuxer.seek_timestamp(self.stream_index, target)
            self.flush()

    def filtered_packets(self, Py_ssize_t max_count=-1):
        """Up to ``max_count`` (all when negative) next filtered packets, as a list of
        ``(data: bytes, pts: int | None, is_key: bool)``; pts falls back to dts."""
        self.check_supported()
        cdef AVPacket *out = lavc.av_packet_alloc()
        if out == NULL:
            raise MemoryError("av_packet_alloc failed")
        cdef int got
        cdef int64_t pts
        packets = []
        try:
            while max_count < 0 or len(packets) < max_count:
                with nogil:
                    got = self.next_packet(out)
                if not got:
                    break
                pts = ffcompat.tc_packet_pts(out)
                packets.append((out.data[:out.size] if out.size > 0 else b"",
                                None if pts == lavu.AV_NOPTS_VALUE else pts,
                                (out.flags & lavc.AV_PKT_FLAG_KEY) != 0))
                lavc.av_packet_unref(out)
        finally:
            lavc.av_packet_free(&out)
        return packets
