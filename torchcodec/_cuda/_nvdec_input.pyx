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

Push-style, as the packet decoders are: ``send`` (C, nogil) hands the filter one packet of the
stream (or NULL at its end), ``receive`` gives the filtered packets, with their pts, until the
filter needs another one. ``flush`` forgets what the filter holds (after a seek of the demuxer) and
drops the packets before the next key packet, where a parser can start again. The NVDEC decoder
reads the demuxer and drives these calls (torchcodec._cuda._nvdec); errors are stashed for it to
raise (torchcodec._core._error's ErrorStash), so that the calls never take the GIL while all goes well.
"""
from libc.errno cimport EAGAIN, ENOMEM
from libc.stdint cimport uint8_t

from torchcodec._core._demuxer cimport Demuxer
from torchcodec._core._error cimport ERROR_STASHED, ErrorStash, av_error_string, av_exception, check_av, stash_exception
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avformat as lavf
from torchcodec._ffmpeg cimport avutil as lavu
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
cdef int MAX_BAD_FILTERED_PACKETS = 16

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
    """The input of an NVDEC decoder for video stream ``stream_index`` of ``demuxer`` (read for the
    stream's codec parameters only: the decoder reads the packets and sends them here).

    For a stream NVDEC cannot take, ``nvdec_codec`` is ``"unsupported"``, ``unsupported_reason``
    says why, and ``check_supported`` raises ``ValueError``. ``header``: the sequence header (Annex
    B parameter sets for H.264/HEVC, the AV1 sequence header OBU, the MPEG-4 VOL, the MPEG-1/2
    sequence header; empty for VP8/VP9, or when the container has none).
    """

    def __cinit__(self, Demuxer demuxer not None, int stream_index):
        self.ptr = NULL
        self.packet = NULL
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

    cdef int send(self, const AVPacket *packet, ErrorStash *errors) noexcept nogil:
        """Give the filter ``packet`` (NULL: the end of the stream); 0, or ERROR_STASHED."""
        cdef int ret
        if packet == NULL:
            if self.input_done:
                return 0
            self.input_done = True
            ret = lavc.av_bsf_send_packet(self.ptr, NULL)
        elif packet.stream_index != self.stream_index or self.input_done:
            return 0
        else:
            ret = lavc.av_packet_ref(self.packet, packet)
            if ret >= 0:
                ret = lavc.av_bsf_send_packet(self.ptr, self.packet)   # takes the reference's data
            lavc.av_packet_unref(self.packet)
        if ret < 0:
            with gil:
                return stash_exception(errors, av_exception(ret, f"av_bsf_send_packet failed for the "
                                       f"{(self.bsf_name or 'null')!r} filter of stream {self.stream_index}: "
                                       f"{av_error_string(ret)} (FFmpeg error {ret})"), ERROR_STASHED)
        return 0

    cdef int receive(self, AVPacket *out, ErrorStash *errors) noexcept nogil:
        """The next filtered packet in ``out``: 1; 0 when the filter needs a packet or has ended
        (``output_done``); ERROR_STASHED. Packets the filter cannot parse are dropped, up to
        MAX_BAD_FILTERED_PACKETS in a row; after a flush, those before the next key packet."""
        cdef int ret
        while not self.output_done:
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
                if self.refuse(ret, errors) < 0:    # the filter dropped a packet it could not parse
                    return ERROR_STASHED
                continue
            if self.input_done:
                self.output_done = True
            return 0
        return 0

    cdef int refuse(self, int ret, ErrorStash *errors) noexcept nogil:
        """A packet the filter refused: skip it (0), unless memory ran out or too much data is bad."""
        self.bad_packets += 1
        if ret == lavu.AVERROR(ENOMEM) or self.bad_packets > MAX_BAD_FILTERED_PACKETS:
            with gil:
                return stash_exception(errors, RuntimeError(
                    f"bitstream filter {(self.bsf_name or 'null')!r} refused the packets of stream "
                    f"{self.stream_index}: av_bsf_receive_packet returned {av_error_string(ret)} "
                    f"({self.bad_packets} errors in a row)"), -1)
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
