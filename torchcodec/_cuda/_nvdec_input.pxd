# NvdecInput owns an AVBSFContext: what NVDEC is fed for one stream (codec, filtered packets,
# sequence header), chosen and produced with FFmpeg alone.
from torchcodec._core._demuxer cimport Demuxer
from torchcodec._ffmpeg.avcodec cimport AVBSFContext, AVPacket


cdef class NvdecInput:
    cdef AVBSFContext *ptr              # the bitstream filter ("null" when the stream needs none)
    cdef Demuxer demuxer
    cdef AVPacket *packet               # the demuxed packet being handed to the filter
    cdef readonly int stream_index
    cdef readonly str nvdec_codec       # "h264", "hevc", "av1", "vp9", "vp8", "mpeg4", "mpeg2", "mpeg1" or "unsupported"
    cdef readonly str unsupported_reason  # why not, or None
    cdef readonly str bsf_name          # the FFmpeg bitstream filter applied, or None
    cdef bytes header                   # the sequence header to (re)send after a flush or seek
    cdef bint input_done                # the filter was sent the end of the stream
    cdef bint output_done               # the filter returned its last packet
    cdef int bad_packets                # consecutive packets the filter refused
    cdef bint awaiting_key              # after a flush: packets before the next key packet are dropped

    cdef int next_packet(self, AVPacket *out) except -1 nogil
    cdef void flush(self) noexcept nogil
    cdef int refuse_or_raise(self, int ret) except -1 nogil
    cdef int check_supported(self) except -1
