# NVDEC decoding driven from Cython: a VideoPacketDecoder whose codec calls (send, receive, flush)
# feed a CUVID parser through NvdecInput; CUVID decoders shared through a per-device cache; decoded
# pictures handed out as AVFrames over mapped device surfaces. PacketDecoder.next_frame drives it.
from libc.stdint cimport int64_t, uint8_t
from torchcodec._core._error cimport ErrorStash
from torchcodec._cuda._driver cimport CudaContext, CuvidLibrary, FrameSync
from torchcodec._core._packet_decoder cimport VideoPacketDecoder
from torchcodec._cuda._nvdec_input cimport NvdecInput
from torchcodec._cuda cimport cuda as cu
from torchcodec._cuda cimport nvcuvid as cuvid
from torchcodec._ffmpeg.avcodec cimport AVPacket
from torchcodec._ffmpeg.avutil cimport AVFrame

cdef enum:
    MAX_OUTPUT_SURFACES = 8     # upper bound of ulNumOutputSurfaces (slots of a DecoderState)
    DISPLAY_QUEUE_SIZE = 64     # pictures the display callback may queue in one parse call
    PACKET_TABLE_SIZE = 64      # recent packets remembered for their duration and discard flag


cdef struct DecoderState


cdef enum:                      # OutputSlot.status
    SLOT_FREE = 0
    SLOT_MAPPED = 1             # mapped; a frame (or a queued picture mapped early) holds it
    SLOT_RELEASED = 2           # its frame is gone: unmapped once sync.done has passed


cdef struct OutputSlot:
    DecoderState *state
    FrameSync sync              # AVFrame.opaque points here: ready/done events, readers, bits
    cu.CUdeviceptr surface      # the mapped surface while MAPPED or RELEASED
    unsigned int pitch          # its pitch
    int status                  # SLOT_*; set to RELEASED (atomically) by the frame's release, on any thread
    unsigned long released_at   # order of release, so that the host waits for the oldest first


cdef struct DecoderState:
    # The C side of a CuvidDecoder, shared with the frames mapped from it: freed when the
    # CuvidDecoder is gone and its last frame was released (refs counts both, atomically).
    int refs
    cu.CudaFunctions *cu
    cuvid.CuvidFunctions *cuvid
    cu.CUcontext context
    cuvid.CUvideodecoder decoder
    cu.CUstream stream          # where mapping post-processes into the output surface
    int num_output
    OutputSlot slots[MAX_OUTPUT_SURFACES]
    int av_format               # AVPixelFormat of the mapped surfaces
    int bits                    # bits per sample of the content (the surfaces hold 8 or 16)
    int chroma_planes           # 1 (interleaved CbCr) or 2 (planar 4:4:4)
    int coded_width             # the surface size (decoder created at the coded size)
    int coded_height
    int display_left            # the display area, set by the parser that uses the decoder now
    int display_top
    int display_width           # (0 when the parser reports none)
    int display_height
    unsigned long releases      # slots released so far (OutputSlot.released_at)
    bint dead                   # its driver objects were destroyed before the context's release
    DecoderState *prev          # the registry of live states (torn down before the context goes)
    DecoderState *next


cdef struct QueuedPicture:
    cuvid.CUVIDPARSERDISPINFO info
    DecoderState *decoder       # the decoder that decoded it (kept alive by NvdecDecoder)
    OutputSlot *slot            # mapped early (its decode surface was about to be reused), else NULL


cdef struct PacketInfo:
    int64_t pts
    int64_t duration
    bint discard


cdef struct ParserState:
    # What the parser callbacks (C, called inside cuvidParseVideoData) read and write.
    void *owner                 # the NvdecDecoder (borrowed: it owns the parser)
    cuvid.CuvidFunctions *cuvid
    DecoderState *decoder       # where pictures are decoded now; NULL before the first sequence
    QueuedPicture queue[DISPLAY_QUEUE_SIZE]
    int queue_head
    int queue_count
    bint dropping               # flushing: displayed pictures are dropped
    ErrorStash *errors          # the decoder's (PacketDecoder.errors): a callback's failure, raised
                                # after the parse call by the loop (the codec call returns ERROR_STASHED)
    unsigned long early_maps    # queued pictures mapped in the decode callback (their surface was reused)
    unsigned long host_waits    # host waits for a reader to hand a surface back (no slot was free)


cdef class CuvidDecoder:
    cdef DecoderState *state
    cdef CudaContext context
    cdef CuvidLibrary library
    cdef readonly object key    # what it was created for: a DecoderKey (torchcodec._cuda._nvdec_cache)
    cdef readonly int device
    cdef int create(self, object key) except -1


cdef class NvdecDecoder(VideoPacketDecoder):
    cdef ParserState parser_state
    cdef cuvid.CUvideoparser parser
    cdef CudaContext context
    cdef CuvidLibrary library
    cdef NvdecInput input
    cdef AVPacket *filtered             # scratch: a packet out of the bitstream filter
    cdef readonly str codec_name
    cdef CuvidDecoder decoder           # None until the first sequence callback
    cdef list retired                   # decoders replaced by a format change, until their pictures are out
    cdef bint has_retired
    cdef bytes header                   # sent before the first packet and after each flush
    cdef const uint8_t *header_data     # (its bytes, for nogil code)
    cdef int header_size
    cdef bint header_pending
    cdef int display_width              # the stream's size, as FFmpeg reports it
    cdef int display_height
    cdef int colorspace                 # FFmpeg's view of the stream's colour properties
    cdef int color_range
    cdef int color_primaries
    cdef int color_trc
    cdef PacketInfo packets[PACKET_TABLE_SIZE]
    cdef int packets_next
    cdef readonly unsigned long frames_dropped   # discarded (edit list) pictures (a diagnostic)
    cdef readonly unsigned int clock_rate        # CUVIDPARSERPARAMS.ulClockRate: the time base's, or 0
    cdef readonly int feed_budget                # fed while fewer pictures than this wait to be mapped
    cdef readonly int queue_high_water           # the most pictures that waited at once (a diagnostic)

    # What the codec calls are made of; each returns 0 or ERROR_STASHED (the failure in self.errors).
    cdef int parse(self, const uint8_t *data, int size, int64_t pts, unsigned long flags) noexcept nogil
    cdef int parse_filtered(self) noexcept nogil
    cdef int remember(self, const AVPacket *packet) noexcept nogil
    cdef PacketInfo *recall(self, int64_t pts) noexcept nogil
    cdef int map_picture(self, QueuedPicture *picture, const PacketInfo *info, AVFrame *frame) noexcept nogil
    cdef int drop_queue(self) noexcept nogil
    cdef int on_sequence(self, cuvid.CUVIDEOFORMAT *format) except -1
    cdef int release_retired(self) except -1


# The parser's ulClockRate for timestamps in a time base of num/den seconds (den / num where integral, else 0).
cdef unsigned int clock_rate(int num, int den) noexcept
