# NvdecInput owns an AVBSFContext: what NVDEC is fed for one stream (codec, filtered packets,
# sequence header), chosen and produced with FFmpeg alone. Push-style: a packet in, filtered
# packets out; the decoder reads the demuxer.
from torchcodec._core._demuxer cimport Demuxer
from torchcodec._core._error cimport ErrorStash
from torchcodec._ffmpeg.avcodec cimport AVBSFContext, AVPacket


cdef class NvdecInput:
    cdef AVBSFContext *ptr              # the bitstream filter ("null" when the stream needs none)
    cdef AVPacket *packet               # the reference handed to the filter (it takes the data)
    cdef readonly int stream_index
    cdef readonly str nvdec_codec       # "h264", "hevc", "av1", "vp9", "vp8", "mpeg4", "mpeg2", "mpeg1" or "unsupported"
    cdef readonly str unsupported_reason  # why not, or None
    cdef readonly str bsf_name          # the FFmpeg bitstream filter applied, or None
    cdef readonly bytes header          # the sequence header to (re)send after creation and each flush
    cdef bint input_done                # the filter was sent the end of the stream
    cdef bint output_done               # the filter returned its last packet (until flush)
    cdef int bad_packets                # consecutive packets the filter refused
    cdef bint awaiting_key              # after a flush: packets before the next key packet are dropped

    # send: give the filter a packet of the stream (borrowed: the filter takes a reference of its
    #   own; packets of other streams are ignored), or NULL at the end of the stream. Call receive
    #   until it returns 0 before sending again. receive: the next filtered packet in ``out`` (unref
    #   it after use): 1; 0 when the filter needs another packet, or ended (output_done). Both
    #   return ERROR_STASHED with the exception in ``errors`` instead of raising (no GIL taken
    #   unless something fails).
    cdef int send(self, const AVPacket *packet, ErrorStash *errors) noexcept nogil
    cdef int receive(self, AVPacket *out, ErrorStash *errors) noexcept nogil
    # After the demuxer seeked: forget what the filter holds; the stream goes on from the next key packet.
    cdef void flush(self) noexcept nogil
    cdef int refuse(self, int ret, ErrorStash *errors) noexcept nogil
    cdef int check_supported(self) except -1
