"""Decoding video with NVIDIA's NVDEC, driven from Cython (no FFmpeg hwaccel involved).

FFmpeg demuxes and applies the bitstream filters (``NvdecInput``); a CUVID parser
(``cuvidCreateVideoParser``, display delay 0, ``ulClockRate`` the stream's time base where it is
integral) turns the elementary stream into pictures, and calls back three C functions inside
``cuvidParseVideoData``:

- the sequence callback checks ``cuvidGetDecoderCaps`` and takes a CUVID decoder for the format
  from the per-device cache (or creates one): at the coded size, with the parser's minimum number
  of decode surfaces plus ``EXTRA_DECODE_SURFACES``, ``NUM_OUTPUT_SURFACES`` output surfaces, an
  NV12 / P016 / YUV444 / YUV444_16Bit surface by chroma format and bit depth, Weave (no
  deinterlacing: fields stay woven, as libavcodec outputs them);
- the decode callback runs ``cuvidDecodePicture``;
- the display callback queues the picture (presentation order).

``NvdecDecoder`` is a VideoPacketDecoder: PacketDecoder's one send/receive/drain loop drives it
through its codec calls. ``send`` puts a packet through NvdecInput's bitstream filter into the
parser (the sequence header first, after creation and after each flush; NULL: the end of the
stream), ``receive`` hands out the next displayed picture, ``flush`` forgets everything after a
seek of the demuxer (which the video reader decides).

Nothing waits on the host per frame. ``receive`` keeps the parser ahead: it answers EAGAIN (feed
me) while fewer than ``feed_budget`` displayed pictures wait (the decode surfaces beyond the
parser's minimum hold them), then maps the oldest (``cuvidMapVideoFrame64`` on the decoder's own stream, followed
by the slot's ``ready`` event). The frame it fills points at the mapped surface (device memory);
``AVFrame.opaque`` points at the slot's ``FrameSync``: the converter's stream waits for ``ready``
on the device and records ``done`` after its read. Releasing the frame only marks the slot; its
surface is unmapped by a later map once ``done`` has passed (``cuEventQuery``, no wait); the host
waits (``cuEventSynchronize``) only when every output surface is taken and one must come back.
Should the parser decode into the surface of a picture still queued, that picture is mapped first,
in the decode callback, and the parser is fed from then on only when nothing waits. Pictures of
packets that FFmpeg marks as discarded (edit lists) are dropped by pts, as libavcodec does.

Errors inside the callbacks, and in the codec calls themselves, are stashed in the decoder's
ErrorStash (torchcodec._core._error) and raised by the loop once the call returned (the calls
return ERROR_STASHED): nothing takes the GIL while all goes well. The device's primary context is
pushed around every CUVID call. Every decoder's driver objects are
destroyed before the driver releases the context (``add_release_hook``), whatever the order of the
interpreter's exit handlers; frames still alive then only free their memory afterwards.
"""
from cpython.pythread cimport (PyThread_acquire_lock, PyThread_allocate_lock, PyThread_release_lock,
                               PyThread_type_lock, WAIT_LOCK)
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport calloc, free
from libc.string cimport memset

from libc.errno cimport EAGAIN

from torchcodec._core._demuxer cimport Demuxer, display_rotation
from torchcodec._core._error cimport (ERROR_STASHED, ErrorStash, has_stashed, stash_code, stash_exception)
from torchcodec._core._packet_decoder cimport VideoPacketDecoder
from torchcodec._cuda._driver cimport CudaContext, CuvidLibrary, FrameSync, check_cu, stashed_cuda_error
from torchcodec._cuda._nvdec_caps cimport refusal, stream_refusal, surface_format
from torchcodec._cuda._nvdec_input cimport NvdecInput
from torchcodec._cuda cimport cuda as cu
from torchcodec._cuda cimport ffnvcodec   # the C definitions of the driver's tables
from torchcodec._cuda cimport nvcuvid as cuvid
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avformat as lavf
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport ffcompat
from torchcodec._ffmpeg.avcodec cimport AVCodecParameters, AVPacket
from torchcodec._ffmpeg.avutil cimport AVBufferRef, AVFrame

from torchcodec._cuda._driver import CudaError, add_release_hook, load_nvcuvid
from torchcodec._cuda._nvdec_cache import DecoderKey, cache
from torchcodec._cuda._nvdec_caps import CODECS, NvdecUnsupportedError

cdef extern from *:
    """
    /* Reference counts and slot flags touched by frames released on any thread. */
    static inline int tc_nvdec_atomic_add(int *value, int delta)
    {
        return __atomic_add_fetch(value, delta, __ATOMIC_ACQ_REL);
    }
    static inline unsigned long tc_nvdec_atomic_add_ul(unsigned long *value, unsigned long delta)
    {
        return __atomic_add_fetch(value, delta, __ATOMIC_ACQ_REL);
    }
    static inline int tc_nvdec_load(const int *value) { return __atomic_load_n(value, __ATOMIC_ACQUIRE); }
    static inline void tc_nvdec_store(int *value, int v) { __atomic_store_n(value, v, __ATOMIC_RELEASE); }
    """
    int tc_nvdec_atomic_add(int *value, int delta) nogil
    unsigned long tc_nvdec_atomic_add_ul(unsigned long *value, unsigned long delta) nogil
    int tc_nvdec_load(const int *value) nogil
    void tc_nvdec_store(int *value, int v) nogil

# Decode surfaces beyond the parser's minimum: they hold the displayed pictures that wait to be
# mapped while the parser runs ahead (NVIDIA recommends a few extra).
cdef int EXTRA_DECODE_SURFACES = 4
# The parser is fed while fewer displayed pictures than this wait: half the extra surfaces, the
# others left for the pictures one parse call displays and the one it decodes, so that a parser
# that takes its surfaces in turn never decodes into a waiting picture's surface.
cdef int FEED_BUDGET = 2
cdef int MAX_DECODE_SURFACES = 32          # NVDEC's limit for ulNumDecodeSurfaces
# Mapped surfaces at once: the video engine keeps two frames alive; the others are released frames
# whose conversions may still be running (unmapped once they are done) or pictures mapped early.
cdef int NUM_OUTPUT_SURFACES = 4
# The stashed code of a failure that is not a driver's (its ``where`` says what happened).
cdef int NOT_A_CUDA_ERROR = -1
# What DALI and TorchCodec assume when the parser reports no minimum number of decode surfaces.
cdef int FALLBACK_DECODE_SURFACES = 20

cdef unsigned int clock_rate(int num, int den) noexcept:
    """The parser's ulClockRate for timestamps in a time base of num/den seconds: den / num when
    that is an integer (1/12800 -> 12800, 1/90000 -> 90000), else 0 (the parser's default, 10 MHz)."""
    if num <= 0 or den <= 0 or den % num:
        return 0
    if den // num > 0xFFFFFFFF:
        return 0
    return <unsigned int>(den // num)


# ---- decoders and their cache -------------------------------------------------------------------

# Every live DecoderState, linked through prev/next under registry_lock: the driver's release hook
# tears them all down while the context still exists (frames may outlive everything else).
cdef DecoderState *live_states = NULL
cdef PyThread_type_lock registry_lock = PyThread_allocate_lock()


cdef void register_state(DecoderState *state) noexcept nogil:
    global live_states
    PyThread_acquire_lock(registry_lock, WAIT_LOCK)
    state.prev = NULL
    state.next = live_states
    if live_states != NULL:
        live_states.prev = state
    live_states = state
    PyThread_release_lock(registry_lock)


cdef void teardown_state(DecoderState *state) noexcept nogil:
    """(registry_lock held.) Unmap every surface still mapped (after its readers' ``done``), destroy
    the slot events, the CUVID decoder and its stream, with the context pushed; the state is dead
    from then on. Errors are ignored: this runs in a deallocator, a frame's release or at exit."""
    cdef int i
    cdef OutputSlot *slot
    if state.dead:
        return
    state.dead = True
    if state.cu.cuCtxPushCurrent(state.context) != cu.CUDA_SUCCESS:
        return
    for i in range(state.num_output):
        slot = &state.slots[i]
        if slot.status != SLOT_FREE and state.decoder != NULL:
            if slot.sync.done != NULL:
                state.cu.cuEventSynchronize(slot.sync.done)
            state.cuvid.cuvidUnmapVideoFrame(state.decoder, slot.surface)
            slot.surface = 0
        if slot.sync.ready != NULL:
            state.cu.cuEventDestroy(slot.sync.ready)
        if slot.sync.done != NULL:
            state.cu.cuEventDestroy(slot.sync.done)
    if state.decoder != NULL:
        state.cuvid.cuvidDestroyDecoder(state.decoder)
    if state.stream != NULL:
        state.cu.cuStreamDestroy(state.stream)
    state.cu.cuCtxPopCurrent(NULL)


cdef void destroy_state(DecoderState *state) noexcept nogil:
    """Tear the state down (unless the release hook did) and free it."""
    global live_states
    PyThread_acquire_lock(registry_lock, WAIT_LOCK)
    if state.prev != NULL:
        state.prev.next = state.next
    elif live_states == state:
        live_states = state.next
    if state.next != NULL:
        state.next.prev = state.prev
    teardown_state(state)
    PyThread_release_lock(registry_lock)
    free(state)


cdef void teardown_all() noexcept nogil:
    """Tear down every live state (the driver's release hook, before the context is released)."""
    cdef DecoderState *state
    PyThread_acquire_lock(registry_lock, WAIT_LOCK)
    state = live_states
    while state != NULL:
        teardown_state(state)
        state = state.next
    PyThread_release_lock(registry_lock)


cdef void unref_state(DecoderState *state) noexcept nogil:
    """Drop one reference (the CuvidDecoder's or a mapped slot's); the last destroys the decoder."""
    if tc_nvdec_atomic_add(&state.refs, -1) == 0:
        destroy_state(state)


cdef void release_surface(void *opaque, uint8_t *data) noexcept nogil:
    """AVBuffer free callback of a mapped frame (any thread): no driver call, no wait. The slot is
    marked released; a later map unmaps it once its readers' ``done`` event has passed."""
    cdef OutputSlot *slot = <OutputSlot *>opaque
    cdef DecoderState *state = slot.state
    slot.released_at = tc_nvdec_atomic_add_ul(&state.releases, 1)
    tc_nvdec_store(&slot.status, SLOT_RELEASED)
    unref_state(state)


cdef cu.CUresult unmap_slot(DecoderState *state, OutputSlot *slot, const char **where) noexcept nogil:
    """(Context pushed.) cuvidUnmapVideoFrame64 of a released slot, which becomes free."""
    cdef cu.CUresult ret = state.cuvid.cuvidUnmapVideoFrame(state.decoder, slot.surface)
    if ret != cu.CUDA_SUCCESS:
        where[0] = "cuvidUnmapVideoFrame64"
        return ret
    slot.surface = 0
    slot.status = SLOT_FREE
    return ret


cdef cu.CUresult free_slot(DecoderState *state, OutputSlot **found, unsigned long *host_waits,
                           const char **where) noexcept nogil:
    """(Context pushed.) A free output slot in ``found`` (NULL when every slot is held by a frame
    still alive). Released slots whose ``done`` event has passed are unmapped first, found with
    cuEventQuery (no wait). Only when no slot is free does the host wait, for the slot released
    first (cuEventSynchronize): its memory must come back before another picture can be mapped."""
    cdef OutputSlot *slot
    cdef OutputSlot *oldest = NULL
    cdef cu.CUresult ret
    cdef int i
    found[0] = NULL
    for i in range(state.num_output):
        slot = &state.slots[i]
        if tc_nvdec_load(&slot.status) == SLOT_RELEASED:
            ret = state.cu.cuEventQuery(slot.sync.done)
            if ret == <cu.CUresult>cu.TC_CUDA_ERROR_NOT_READY:
                if oldest == NULL or slot.released_at < oldest.released_at:
                    oldest = slot
                continue
            if ret != cu.CUDA_SUCCESS:
                where[0] = "cuEventQuery"
                return ret
            ret = unmap_slot(state, slot, where)
            if ret != cu.CUDA_SUCCESS:
                return ret
        if slot.status == SLOT_FREE and found[0] == NULL:
            found[0] = slot
    if found[0] != NULL or oldest == NULL:
        return cu.CUDA_SUCCESS
    host_waits[0] += 1
    ret = state.cu.cuEventSynchronize(oldest.sync.done)
    if ret != cu.CUDA_SUCCESS:
        where[0] = "cuEventSynchronize"
        return ret
    ret = unmap_slot(state, oldest, where)
    if ret == cu.CUDA_SUCCESS:
        found[0] = oldest
    return ret


cdef cu.CUresult map_into(DecoderState *state, const cuvid.CUVIDPARSERDISPINFO *info, OutputSlot *slot,
                          const char **where) noexcept nogil:
    """(Context pushed.) Map the displayed picture ``info`` into the free ``slot``: cuvidMapVideoFrame64
    post-processes on the decoder's stream, after which ``ready`` and ``done`` are recorded there.
    The slot is then MAPPED and holds a reference to the state."""
    cdef cuvid.CUVIDPROCPARAMS proc
    cdef cu.CUdeviceptr surface = 0
    cdef unsigned int pitch = 0
    cdef cu.CUresult ret
    memset(&proc, 0, sizeof(proc))
    proc.progressive_frame = info.progressive_frame
    proc.top_field_first = info.top_field_first
    proc.second_field = info.repeat_first_field + 1
    proc.unpaired_field = info.repeat_first_field < 0
    proc.output_stream = state.stream
    ret = state.cuvid.cuvidMapVideoFrame(state.decoder, info.picture_index, &surface, &pitch, &proc)
    if ret != cu.CUDA_SUCCESS:
        where[0] = "cuvidMapVideoFrame64"
        return ret
    ret = state.cu.cuEventRecord(slot.sync.ready, state.stream)
    if ret == cu.CUDA_SUCCESS:
        ret = state.cu.cuEventRecord(slot.sync.done, state.stream)
    if ret != cu.CUDA_SUCCESS:
        where[0] = "cuEventRecord"
        state.cuvid.cuvidUnmapVideoFrame(state.decoder, surface)
        return ret
    slot.surface = surface
    slot.pitch = pitch
    slot.sync.readers = 0
    slot.sync.done_stream = NULL
    slot.sync.bits = state.bits
    slot.status = SLOT_MAPPED
    tc_nvdec_atomic_add(&state.refs, 1)
    return ret


cdef class CuvidDecoder:
    """A CUVID decoder (``cuvidCreateDecoder``) for one format, with its output-surface slots and
    their events (``ready`` and ``done`` per slot). Kept in the per-device cache between NvdecDecoders; its C state lives on while
    frames mapped from it are alive."""

    def __cinit__(self):
        self.state = NULL

    cdef int create(self, object key) except -1:
        codec, chroma, depth, width, height, output_format, num_decode, num_output = key
        cdef cuvid.CUVIDDECODECREATEINFO info
        cdef DecoderState *state = <DecoderState *>calloc(1, sizeof(DecoderState))
        cdef cu.CUresult ret
        cdef int i
        if state == NULL:
            raise MemoryError("cannot allocate an NVDEC decoder state")
        state.refs = 1
        register_state(state)
        state.cu = self.context.driver.ptr
        state.cuvid = self.library.ptr
        state.context = self.context.ptr
        state.num_output = num_output
        state.bits = depth
        state.coded_width = width
        state.coded_height = height
        state.chroma_planes = 2 if chroma == cuvid.cudaVideoChromaFormat_444 else 1
        if chroma == cuvid.cudaVideoChromaFormat_444:
            state.av_format = lavu.AV_PIX_FMT_YUV444P if depth == 8 else lavu.AV_PIX_FMT_YUV444P16LE
        else:
            state.av_format = lavu.AV_PIX_FMT_NV12 if depth == 8 else lavu.AV_PIX_FMT_P016LE
        for i in range(num_output):
            state.slots[i].state = state
        self.state = state      # from here __dealloc__ destroys what was made

        memset(&info, 0, sizeof(info))
        info.ulWidth = width
        info.ulHeight = height
        info.ulNumDecodeSurfaces = num_decode
        info.CodecType = <cuvid.cudaVideoCodec>codec
        info.ChromaFormat = <cuvid.cudaVideoChromaFormat>chroma
        info.ulCreationFlags = cuvid.cudaVideoCreate_PreferCUVID
        info.bitDepthMinus8 = depth - 8
        info.ulMaxWidth = width
        info.ulMaxHeight = height
        info.display_area.left = 0           # the whole coded picture: the converter crops
        info.display_area.top = 0
        info.display_area.right = width
        info.display_area.bottom = height
        info.OutputFormat = <cuvid.cudaVideoSurfaceFormat>output_format
        # Weave: fields stay woven as coded, as libavcodec (and so the CPU decoder) outputs them.
        info.DeinterlaceMode = cuvid.cudaVideoDeinterlaceMode_Weave
        info.ulTargetWidth = width
        info.ulTargetHeight = height
        info.ulNumOutputSurfaces = num_output
        self.context.enter()
        try:
            for i in range(num_output):
                check_cu(self.context.driver, state.cu.cuEventCreate(&state.slots[i].sync.ready,
                                                                     cu.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
                check_cu(self.context.driver, state.cu.cuEventCreate(&state.slots[i].sync.done,
                                                                     cu.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
            check_cu(self.context.driver, state.cu.cuStreamCreate(&state.stream, cu.TC_STREAM_NON_BLOCKING),
                     "cuStreamCreate")
            with nogil:
                ret = state.cuvid.cuvidCreateDecoder(&state.decoder, &info)
            check_cu(self.context.driver, ret, "cuvidCreateDecoder")
        finally:
            self.context.exit()
        self.key = key
        self.device = self.context.index
        return 0

    def __dealloc__(self):
        if self.state != NULL:
            unref_state(self.state)


def _release_before_context() -> None:
    """The driver's release hook: destroy the cached decoders, then tear down every decoder still in
    use or kept alive by frames (surfaces unmapped after their readers), while the context exists."""
    cache.clear()
    with nogil:
        teardown_all()


add_release_hook(_release_before_context)


cdef CuvidDecoder take_decoder(CudaContext context, CuvidLibrary library, object key):
    """An idle decoder of ``key`` on the context's device from the cache, or a new one."""
    cdef CuvidDecoder decoder = cache.take(context.index, key)
    if decoder is not None:
        return decoder
    decoder = CuvidDecoder.__new__(CuvidDecoder)
    decoder.context = context
    decoder.library = library
    decoder.create(key)
    return decoder


# ---- errors -------------------------------------------------------------------------------------
# Everything below runs without the GIL while all goes well: failures are stashed in the decoder's
# ErrorStash (a CUresult and where it happened, a sentence, or an exception raised in the sequence
# callback) and the codec call returns ERROR_STASHED; PacketDecoder's loop raises it.

cdef object nvdec_failure(int code, const char *where):
    """The error builder of failures that are not a driver's: ``where`` says what happened."""
    return RuntimeError(f"NVDEC decoding failed: {where.decode()}")


cdef object context_released(int code, const char *where):
    return CudaError(f"the CUDA context of this NVDEC decoder was released ({where.decode()})")


cdef inline int stash_cu(ErrorStash *errors, cu.CUresult ret, const char *where) noexcept nogil:
    """Stash the driver's failure ``ret`` of ``where``; ERROR_STASHED."""
    stash_code(errors, <int>ret, where, stashed_cuda_error)
    return ERROR_STASHED


cdef inline int stash_failure(ErrorStash *errors, const char *what) noexcept nogil:
    stash_code(errors, NOT_A_CUDA_ERROR, what, nvdec_failure)
    return ERROR_STASHED


# ---- parser callbacks (C, called inside cuvidParseVideoData) --------------------------------------

cdef int handle_sequence(void *user, cuvid.CUVIDEOFORMAT *format) noexcept nogil:
    """A new sequence: size the decoder (NvdecDecoder.on_sequence, with the GIL). Returns the number
    of decode surfaces for the parser to use, 0 on failure (the exception is stashed)."""
    cdef ParserState *state = <ParserState *>user
    with gil:
        decoder = <NvdecDecoder>state.owner
        try:
            return decoder.on_sequence(format)
        except BaseException as error:
            return stash_exception(state.errors, error, 0)


cdef int map_early(ParserState *state, int picture_index) noexcept nogil:
    """Before the parser decodes into surface ``picture_index``: a queued picture of the current
    decoder that was displayed from that surface is mapped now, while it is intact (the host waits
    for its post-processing: this is the rare path of a parser that reuses surfaces sooner than the
    feed budget assumes). 1 on success, 0 with the error stashed."""
    cdef DecoderState *decoder = state.decoder
    cdef QueuedPicture *queued
    cdef OutputSlot *slot
    cdef const char *where = NULL
    cdef cu.CUresult ret
    cdef int i
    for i in range(state.queue_count):
        queued = &state.queue[(state.queue_head + i) % DISPLAY_QUEUE_SIZE]
        if queued.decoder != decoder or queued.slot != NULL or queued.info.picture_index != picture_index:
            continue
        ret = free_slot(decoder, &slot, &state.host_waits, &where)
        if ret == cu.CUDA_SUCCESS and slot == NULL:
            stash_failure(state.errors, "the parser reused the decode surface of a picture not yet read while every "
                                        "NVDEC output surface is held by a frame still alive")
            return 0
        if ret == cu.CUDA_SUCCESS:
            ret = map_into(decoder, &queued.info, slot, &where)
        if ret == cu.CUDA_SUCCESS:
            queued.slot = slot
            state.early_maps += 1
            ret = decoder.cu.cuEventSynchronize(slot.sync.ready)
            where = "cuEventSynchronize"
        if ret != cu.CUDA_SUCCESS:
            stash_cu(state.errors, ret, where)
            return 0
    return 1


cdef int handle_decode(void *user, cuvid.CUVIDPICPARAMS *picture) noexcept nogil:
    """A picture to decode (decode order): cuvidDecodePicture on the current decoder, after mapping
    a queued picture whose surface it would overwrite."""
    cdef ParserState *state = <ParserState *>user
    cdef cu.CUresult ret
    if state.decoder == NULL:
        stash_failure(state.errors, "the parser asked to decode a picture before any sequence header")
        return 0
    if state.decoder.dead:
        stash_failure(state.errors, "the CUDA context was released (interpreter exit)")
        return 0
    if not map_early(state, picture.CurrPicIdx):
        return 0
    ret = state.cuvid.cuvidDecodePicture(state.decoder.decoder, picture)
    if ret != cu.CUDA_SUCCESS:
        stash_cu(state.errors, ret, "cuvidDecodePicture")
        return 0
    return 1


cdef int handle_display(void *user, cuvid.CUVIDPARSERDISPINFO *info) noexcept nogil:
    """A picture to display (presentation order): queued for receive (dropped while flushing)."""
    cdef ParserState *state = <ParserState *>user
    cdef QueuedPicture *slot
    if info == NULL or state.dropping:       # NULL: the end of the stream
        return 1
    if state.queue_count == DISPLAY_QUEUE_SIZE:
        stash_failure(state.errors, "the parser displayed more pictures at once than the display queue holds")
        return 0
    slot = &state.queue[(state.queue_head + state.queue_count) % DISPLAY_QUEUE_SIZE]
    slot.info = info[0]
    slot.decoder = state.decoder
    slot.slot = NULL
    state.queue_count += 1
    return 1


# ---- the decoder --------------------------------------------------------------------------------

cdef class NvdecDecoder(VideoPacketDecoder):
    """NVDEC decoding of video stream ``stream_index`` of ``demuxer`` on ``context``'s device: a
    VideoPacketDecoder whose codec calls feed NVIDIA's parser (see the module's documentation).

    Raises NvdecUnsupportedError (a RuntimeError) with the reason when NVDEC cannot decode the
    stream (see torchcodec._cuda._nvdec_caps.nvdec_unsupported_reason), CudaUnavailableError without
    libnvcuvid.so.1. PacketDecoder's loop drives it: ``next_frame`` for the video reader (frames in
    presentation order, over device memory: docs/nvdec.md, "The decoder"), ``decode``/``drain``/
    ``reset`` for the building blocks (whose RawFrames get copies: see torchcodec._cuda._device_frame).
    """

    def __cinit__(self, Demuxer demuxer not None, int stream_index, CudaContext context not None):
        cdef cuvid.CUVIDPARSERPARAMS params
        cdef cu.CUresult ret
        cdef lavu.AVRational time_base
        self.parser = NULL
        self.filtered = NULL
        memset(&self.parser_state, 0, sizeof(ParserState))
        self.parser_state.owner = <void *>self
        self.parser_state.errors = &self.errors
        self.header_pending = True
        self.retired = []
        self.packets_next = 0
        self.feed_budget = FEED_BUDGET
        memset(self.packets, 0, sizeof(self.packets))
        self.library = load_nvcuvid()
        self.input = NvdecInput(demuxer, stream_index)
        reason = stream_refusal(self.input, demuxer, stream_index, context, self.library)
        if reason is not None:
            raise NvdecUnsupportedError(reason)
        self.context = context
        self.parser_state.cuvid = self.library.ptr
        self.stream_index = stream_index
        cdef lavf.AVStream *st = demuxer.stream(stream_index)
        time_base = st.time_base
        self.time_base = time_base
        rotation = display_rotation(ffcompat.tc_stream_display_matrix(st))
        self.rotation = rotation if rotation is not None else 0.0
        self.device = f"cuda:{context.index}"
        self.codec_name = self.input.nvdec_codec
        self.header = self.input.header
        self.header_data = <const uint8_t *>(<const char *>self.header)
        self.header_size = len(self.header)
        cdef AVCodecParameters *par = st.codecpar
        self.display_width = par.width
        self.display_height = par.height
        self.colorspace = par.color_space
        self.color_range = par.color_range
        self.color_primaries = par.color_primaries
        self.color_trc = par.color_trc
        self.clock_rate = clock_rate(time_base.num, time_base.den)
        self.filtered = lavc.av_packet_alloc()
        if self.filtered == NULL:
            raise MemoryError("av_packet_alloc failed")

        memset(&params, 0, sizeof(params))
        params.CodecType = <cuvid.cudaVideoCodec>CODECS[self.codec_name]
        params.ulMaxNumDecodeSurfaces = 1          # the sequence callback returns the real count
        # Timestamps are the packets' pts in the stream's time base; the parser interpolates those of
        # packets without one in units of ulClockRate Hz: the time base's, so that they come back in
        # the same units (0, the parser's 10 MHz, where the time base is not 1/n of a second).
        params.ulClockRate = self.clock_rate
        params.ulErrorThreshold = 100              # decode damaged pictures, as libavcodec does
        params.ulMaxDisplayDelay = 0
        params.pUserData = &self.parser_state
        params.pfnSequenceCallback = handle_sequence
        params.pfnDecodePicture = handle_decode
        params.pfnDisplayPicture = handle_display
        context.enter()
        try:
            ret = self.library.ptr.cuvidCreateVideoParser(&self.parser, &params)
            check_cu(context.driver, ret, "cuvidCreateVideoParser")
        finally:
            context.exit()

    def __init__(self, *args, **kwargs):
        pass                        # built by the CUDA backend (torchcodec._cuda._backend), not by a stream

    def __dealloc__(self):
        self.drop_queue()
        lavc.av_packet_free(&self.filtered)
        if self.parser != NULL:
            # The parser is host state: destroyed with the context pushed when it still exists.
            pushed = (self.context.ptr != NULL
                      and self.context.driver.ptr.cuCtxPushCurrent(self.context.ptr) == cu.CUDA_SUCCESS)
            self.library.ptr.cuvidDestroyVideoParser(self.parser)
            if pushed:
                self.context.driver.ptr.cuCtxPopCurrent(NULL)
        self.parser = NULL
        try:
            for decoder in self.retired + ([self.decoder] if self.decoder is not None else []):
                cache.give_back(decoder)
        except Exception:
            pass        # never raise from a deallocator: the decoders are then destroyed instead

    # ---- feeding the parser

    cdef int parse(self, const uint8_t *data, int size, int64_t pts, unsigned long flags) noexcept nogil:
        """One cuvidParseVideoData call (context pushed): 0, or ERROR_STASHED when it or one of its
        callbacks failed."""
        cdef cuvid.CUVIDSOURCEDATAPACKET packet
        cdef cu.CUresult ret
        if self.context.ptr == NULL:
            stash_code(&self.errors, NOT_A_CUDA_ERROR, "close() was called", context_released)
            return ERROR_STASHED
        memset(&packet, 0, sizeof(packet))
        packet.payload = data
        packet.payload_size = size
        packet.flags = flags
        if pts != lavu.AV_NOPTS_VALUE and size > 0 and not (flags & cuvid.CUVID_PKT_ENDOFSTREAM):
            packet.flags |= cuvid.CUVID_PKT_TIMESTAMP
            packet.timestamp = pts
        ret = self.context.driver.ptr.cuCtxPushCurrent(self.context.ptr)
        if ret != cu.CUDA_SUCCESS:
            return stash_cu(&self.errors, ret, "cuCtxPushCurrent")
        ret = self.library.ptr.cuvidParseVideoData(self.parser, &packet)
        self.context.driver.ptr.cuCtxPopCurrent(NULL)
        if has_stashed(&self.errors):
            return ERROR_STASHED        # a callback failed: its error first
        if ret != cu.CUDA_SUCCESS:
            return stash_cu(&self.errors, ret, "cuvidParseVideoData")
        return 0

    cdef int parse_filtered(self) noexcept nogil:
        """Parse every packet the bitstream filter has ready: 0, or ERROR_STASHED."""
        cdef int got, ret
        while True:
            got = self.input.receive(self.filtered, &self.errors)
            if got <= 0:
                return ERROR_STASHED if got < 0 else 0
            self.remember(self.filtered)
            ret = self.parse(self.filtered.data, self.filtered.size, ffcompat.tc_packet_pts(self.filtered), 0)
            lavc.av_packet_unref(self.filtered)
            if ret < 0:
                return ret

    cdef int remember(self, const AVPacket *packet) noexcept nogil:
        """Note a packet's pts, duration and discard flag, for the frame that will carry its pts."""
        cdef PacketInfo *entry = &self.packets[self.packets_next % PACKET_TABLE_SIZE]
        entry.pts = ffcompat.tc_packet_pts(packet)
        entry.duration = packet.duration
        entry.discard = ffcompat.tc_packet_is_discarded(packet)
        self.packets_next += 1
        return 0

    cdef PacketInfo *recall(self, int64_t pts) noexcept nogil:
        """The most recent packet with this pts, or NULL."""
        cdef int i, count = min(self.packets_next, PACKET_TABLE_SIZE)
        cdef PacketInfo *entry
        for i in range(1, count + 1):
            entry = &self.packets[(self.packets_next - i) % PACKET_TABLE_SIZE]
            if entry.pts == pts:
                return entry
        return NULL

    cdef int on_sequence(self, cuvid.CUVIDEOFORMAT *format) except -1:
        """The sequence callback: check the format, keep or replace the decoder, return the number of
        decode surfaces."""
        cdef int depth = format.bit_depth_luma_minus8 + 8
        reason = refusal(self.context, self.library, format.codec, format.chroma_format, depth,
                         format.coded_width, format.coded_height)
        if reason is not None:
            raise NvdecUnsupportedError(reason)
        minimum = format.min_num_decode_surfaces or FALLBACK_DECODE_SURFACES
        num_decode = min(minimum + EXTRA_DECODE_SURFACES, MAX_DECODE_SURFACES)
        key = DecoderKey(<int>format.codec, <int>format.chroma_format, depth, format.coded_width,
                         format.coded_height, surface_format(format.chroma_format, depth), num_decode,
                         NUM_OUTPUT_SURFACES)
        if self.decoder is None or self.decoder.key != key:
            if self.decoder is not None:        # a format change: its queued pictures still map
                self.retired.append(self.decoder)
                self.has_retired = True
            self.decoder = take_decoder(self.context, self.library, key)
            self.parser_state.decoder = self.decoder.state
        self.decoder.state.display_left = max(0, format.display_area.left)
        self.decoder.state.display_top = max(0, format.display_area.top)
        self.decoder.state.display_width = max(0, format.display_area.right - format.display_area.left)
        self.decoder.state.display_height = max(0, format.display_area.bottom - format.display_area.top)
        return num_decode

    cdef int release_retired(self) except -1:
        """Return the decoders replaced by a format change to the cache (no picture of theirs is queued)."""
        retired, self.retired = self.retired, []
        self.has_retired = False
        for decoder in retired:
            cache.give_back(decoder)
        return 0

    # ---- the codec calls (PacketDecoder's loop drives them)

    cdef int send(self, const AVPacket *packet) noexcept nogil:
        """A packet of the stream through the bitstream filter into the parser (the sequence header
        first after creation and after each flush); NULL: the end of the stream (the filter drained,
        then CUVID_PKT_ENDOFSTREAM). 0, or ERROR_STASHED."""
        if has_stashed(&self.errors):
            return ERROR_STASHED        # a flush failed
        if self.header_pending:
            self.header_pending = False
            if self.header_size > 0 and self.parse(self.header_data, self.header_size, lavu.AV_NOPTS_VALUE, 0) < 0:
                return ERROR_STASHED
        if self.input.send(packet, &self.errors) < 0 or self.parse_filtered() < 0:
            return ERROR_STASHED
        if packet == NULL:
            return self.parse(NULL, 0, lavu.AV_NOPTS_VALUE, cuvid.CUVID_PKT_ENDOFSTREAM)
        return 0

    cdef int receive(self, AVFrame *frame) noexcept nogil:
        """The next displayed picture (presentation order), mapped into ``frame``: 0; AVERROR(EAGAIN)
        while fewer than ``feed_budget`` pictures wait and the input goes on (the parser runs that
        far ahead of the maps); AVERROR_EOF once the end of the stream was sent and every picture
        was taken; ERROR_STASHED."""
        cdef QueuedPicture *picture = NULL
        cdef PacketInfo *info = NULL
        cdef int waiting
        if has_stashed(&self.errors):
            return ERROR_STASHED
        if self.parser_state.early_maps:
            self.feed_budget = 1        # this parser reuses surfaces sooner: feed only when none waits
        while self.parser_state.queue_count > 0:
            # Pictures of discarded packets (edit-list priming) are dropped, as libavcodec drops them.
            picture = &self.parser_state.queue[self.parser_state.queue_head]
            info = self.recall(picture.info.timestamp)
            if info == NULL or not info.discard:
                break
            if picture.slot != NULL:
                release_surface(picture.slot, NULL)
                picture.slot = NULL
            self.parser_state.queue_head = (self.parser_state.queue_head + 1) % DISPLAY_QUEUE_SIZE
            self.parser_state.queue_count -= 1
            self.frames_dropped += 1
        waiting = self.parser_state.queue_count
        if waiting > self.queue_high_water:
            self.queue_high_water = waiting
        if waiting > 0 and (waiting >= self.feed_budget or self.input_done):
            if self.map_picture(picture, info, frame) < 0:
                return ERROR_STASHED    # the picture stays queued
            self.parser_state.queue_head = (self.parser_state.queue_head + 1) % DISPLAY_QUEUE_SIZE
            self.parser_state.queue_count -= 1
            return 0
        if waiting == 0 and self.has_retired:
            with gil:
                try:
                    self.release_retired()
                except BaseException as error:
                    return stash_exception(&self.errors, error, ERROR_STASHED)
        if waiting == 0 and self.input_done:
            return lavu.AVERROR_EOF
        return lavu.AVERROR(EAGAIN)

    cdef void flush(self) noexcept nogil:
        """After the demuxer seeked: forget the filter's and the parser's pictures; the next frames are
        those of the packets after the seek point, the sequence header going first. A failure is
        stashed and raised by the next codec call."""
        cdef cuvid.CUVIDSOURCEDATAPACKET packet
        cdef cu.CUresult ret
        self.input.flush()
        self.drop_queue()
        memset(&packet, 0, sizeof(packet))
        packet.flags = cuvid.CUVID_PKT_ENDOFSTREAM | cuvid.CUVID_PKT_DISCONTINUITY
        self.parser_state.dropping = True
        if self.context.ptr != NULL:
            ret = self.context.driver.ptr.cuCtxPushCurrent(self.context.ptr)
            if ret == cu.CUDA_SUCCESS:
                ret = self.library.ptr.cuvidParseVideoData(self.parser, &packet)
                self.context.driver.ptr.cuCtxPopCurrent(NULL)
            if ret != cu.CUDA_SUCCESS:
                stash_cu(&self.errors, ret, "cuvidParseVideoData (flush)")
        self.parser_state.dropping = False
        self.packets_next = 0
        self.header_pending = True
        self.input_done = False
        self.output_done = False

    cdef int frames_in_flight(self) noexcept nogil:
        """The pictures the parser is kept ahead by (decoding on through that many costs no more than
        a seek)."""
        return self.feed_budget

    cdef int map_picture(self, QueuedPicture *picture, const PacketInfo *info, AVFrame *frame) noexcept nogil:
        """Map a displayed picture into a free output slot (unless the decode callback mapped it
        early) and describe it in ``frame``; ``info``: the packet that carried its timestamp (NULL
        when unknown), for its duration. No host wait unless every slot is taken (free_slot).
        0, or ERROR_STASHED."""
        cdef DecoderState *state = picture.decoder
        cdef OutputSlot *slot = picture.slot
        cdef cu.CUresult ret = cu.CUDA_SUCCESS
        cdef AVBufferRef *buf
        cdef int i, rows, width, height
        cdef const char *where = NULL
        if state.dead or self.context.ptr == NULL:
            stash_code(&self.errors, NOT_A_CUDA_ERROR, "interpreter exit", context_released)
            return ERROR_STASHED
        if slot == NULL:
            ret = self.context.driver.ptr.cuCtxPushCurrent(self.context.ptr)
            if ret != cu.CUDA_SUCCESS:
                return stash_cu(&self.errors, ret, "cuCtxPushCurrent")
            ret = free_slot(state, &slot, &self.parser_state.host_waits, &where)
            if ret == cu.CUDA_SUCCESS and slot != NULL:
                ret = map_into(state, &picture.info, slot, &where)
            self.context.driver.ptr.cuCtxPopCurrent(NULL)
            if ret != cu.CUDA_SUCCESS:
                return stash_cu(&self.errors, ret, where)
            if slot == NULL:
                with gil:
                    return stash_exception(&self.errors, RuntimeError(
                        f"all {state.num_output} NVDEC output surfaces are mapped: release decoded frames "
                        f"(av_frame_unref) before decoding more"), ERROR_STASHED)
        picture.slot = NULL                         # the frame holds it from here
        buf = lavu.av_buffer_create(<uint8_t *><size_t>slot.surface, 0, release_surface, slot, 0)
        if buf == NULL:
            release_surface(slot, NULL)
            with gil:
                return stash_exception(&self.errors, MemoryError("av_buffer_create failed"), ERROR_STASHED)

        rows = (state.coded_height + 1) & ~1        # NVDEC aligns the luma height of a surface to 2
        frame.buf[0] = buf
        frame.opaque = &slot.sync
        frame.format = state.av_format
        frame.data[0] = <uint8_t *><size_t>slot.surface
        frame.linesize[0] = slot.pitch
        for i in range(1, state.chroma_planes + 1):
            frame.data[i] = <uint8_t *><size_t>(slot.surface + <cu.CUdeviceptr>slot.pitch * rows * i)
            frame.linesize[i] = slot.pitch
        # FFmpeg's size, within the display area (smaller after a mid-stream change) and the surface.
        width = min(self.display_width, state.coded_width - state.display_left)
        height = min(self.display_height, state.coded_height - state.display_top)
        if state.display_width > 0:
            width = min(width, state.display_width)
        if state.display_height > 0:
            height = min(height, state.display_height)
        frame.width = width
        frame.height = height
        frame.crop_left = state.display_left
        frame.crop_top = state.display_top
        frame.crop_right = state.coded_width - state.display_left - width
        frame.crop_bottom = state.coded_height - state.display_top - height
        frame.pts = picture.info.timestamp
        ffcompat.tc_frame_set_duration(frame, info.duration if info != NULL else 0)
        frame.colorspace = <lavu.AVColorSpace>self.colorspace
        frame.color_range = <lavu.AVColorRange>self.color_range
        frame.color_primaries = <lavu.AVColorPrimaries>self.color_primaries
        frame.color_trc = <lavu.AVColorTransferCharacteristic>self.color_trc
        return 0

    cdef int drop_queue(self) noexcept nogil:
        """Forget the queued pictures, releasing those mapped early."""
        cdef QueuedPicture *picture
        cdef int i
        for i in range(self.parser_state.queue_count):
            picture = &self.parser_state.queue[(self.parser_state.queue_head + i) % DISPLAY_QUEUE_SIZE]
            if picture.slot != NULL:
                release_surface(picture.slot, NULL)
                picture.slot = NULL
        self.parser_state.queue_head = 0
        self.parser_state.queue_count = 0
        return 0

    # ---- diagnostics

    @property
    def early_maps(self) -> int:
        """Queued pictures mapped in the decode callback because the parser reused their surface."""
        return self.parser_state.early_maps

    @property
    def host_waits(self) -> int:
        """Maps that found every output surface taken and waited on the host for one to come back."""
        return self.parser_state.host_waits

    @property
    def surface_counts(self):
        """(decode surfaces, output surfaces) of the current CUVID decoder, or None before the first
        sequence."""
        if self.decoder is None:
            return None
        return self.decoder.key.decode_surfaces, self.decoder.key.output_surfaces
