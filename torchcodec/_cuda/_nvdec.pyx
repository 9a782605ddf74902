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

Nothing waits on the host per frame. ``next_frame`` keeps the parser ahead: it feeds packets while
fewer than ``feed_budget`` displayed pictures wait (the decode surfaces beyond the parser's minimum
hold them), then maps the oldest (``cuvidMapVideoFrame64`` on the decoder's own stream, followed
by the slot's ``ready`` event). The frame it fills points at the mapped surface (device memory);
``AVFrame.opaque`` points at the slot's ``FrameSync``: the converter's stream waits for ``ready``
on the device and records ``done`` after its read. Releasing the frame only marks the slot; its
surface is unmapped by a later map once ``done`` has passed (``cuEventQuery``, no wait); the host
waits (``cuEventSynchronize``) only when every output surface is taken and one must come back.
Should the parser decode into the surface of a picture still queued, that picture is mapped first,
in the decode callback, and the parser is fed from then on only when nothing waits. Pictures of
packets that FFmpeg marks as discarded (edit lists) are dropped by pts, as libavcodec does.

Errors inside the callbacks are stored and raised after ``cuvidParseVideoData`` returns; the
device's primary context is pushed around every CUVID call. Every decoder's driver objects are
destroyed before the driver releases the context (``add_release_hook``), whatever the order of the
interpreter's exit handlers; frames still alive then only free their memory afterwards.
"""
from typing import NamedTuple

from cpython.pythread cimport (PyThread_acquire_lock, PyThread_allocate_lock, PyThread_release_lock,
                               PyThread_type_lock, WAIT_LOCK)
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport calloc, free
from libc.string cimport memset

from torchcodec._cuda._driver cimport CudaContext, CuvidLibrary, FrameSync, check_cu, check_cu_nogil
from torchcodec._core._packet_decoder cimport VideoPacketDecoder
from torchcodec._core._demuxer cimport Demuxer
from torchcodec._cuda._nvdec_input cimport NvdecInput
from torchcodec._cuda cimport driver as cu
from torchcodec._cuda cimport nvcuvid as cuvid
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport ffcompat
from torchcodec._ffmpeg.avcodec cimport AVCodecParameters, AVPacket
from torchcodec._ffmpeg.avutil cimport AVBufferRef, AVFrame

from torchcodec._cuda._driver import CudaError, CudaUnavailableError, add_release_hook, load_nvcuvid
from torchcodec._cuda._nvdec_cache import DecoderKey, cache

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
# ParserState.error of a failure that is not a driver's (its error_where says what happened).
cdef int NOT_A_CUDA_ERROR = -1
# What DALI and TorchCodec assume when the parser reports no minimum number of decode surfaces.
cdef int FALLBACK_DECODE_SURFACES = 20

# NvdecInput's codec names -> cudaVideoCodec.
CODECS = {
    "h264": cuvid.cudaVideoCodec_H264,
    "hevc": cuvid.cudaVideoCodec_HEVC,
    "av1": cuvid.cudaVideoCodec_AV1,
    "vp9": cuvid.cudaVideoCodec_VP9,
    "vp8": cuvid.cudaVideoCodec_VP8,
    "mpeg4": cuvid.cudaVideoCodec_MPEG4,
    "mpeg2": cuvid.cudaVideoCodec_MPEG2,
    "mpeg1": cuvid.cudaVideoCodec_MPEG1,
}
CODEC_NAMES = {value: name for name, value in CODECS.items()}
CHROMA_NAMES = {cuvid.cudaVideoChromaFormat_Monochrome: "4:0:0", cuvid.cudaVideoChromaFormat_420: "4:2:0",
                cuvid.cudaVideoChromaFormat_422: "4:2:2", cuvid.cudaVideoChromaFormat_444: "4:4:4"}


# ---- formats ------------------------------------------------------------------------------------

cdef tuple stream_chroma_and_depth(const AVCodecParameters *par):
    """(cudaVideoChromaFormat, bit depth) of a stream from FFmpeg's pixel format, or (None, reason)."""
    cdef const lavu.AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(<lavu.AVPixelFormat>par.format)
    if desc == NULL:
        return None, "FFmpeg does not report the stream's pixel format"
    name = desc.name.decode()
    if desc.flags & (lavu.AV_PIX_FMT_FLAG_RGB | lavu.AV_PIX_FMT_FLAG_PAL | lavu.AV_PIX_FMT_FLAG_HWACCEL):
        return None, f"NVDEC does not decode pixel format {name}"
    if desc.nb_components < 3:
        return cuvid.cudaVideoChromaFormat_Monochrome, desc.comp[0].depth
    subsampling = (desc.log2_chroma_w, desc.log2_chroma_h)
    if subsampling == (1, 1):
        return cuvid.cudaVideoChromaFormat_420, desc.comp[0].depth
    if subsampling == (1, 0):
        return cuvid.cudaVideoChromaFormat_422, desc.comp[0].depth
    if subsampling == (0, 0):
        return cuvid.cudaVideoChromaFormat_444, desc.comp[0].depth
    return None, f"NVDEC does not decode pixel format {name}"


cdef int surface_format(int chroma, int depth) noexcept:
    """The cudaVideoSurfaceFormat that keeps every bit of ``chroma`` / ``depth`` (4:2:0 or 4:4:4)."""
    if chroma == cuvid.cudaVideoChromaFormat_444:
        return cuvid.cudaVideoSurfaceFormat_YUV444 if depth == 8 else cuvid.cudaVideoSurfaceFormat_YUV444_16Bit
    return cuvid.cudaVideoSurfaceFormat_NV12 if depth == 8 else cuvid.cudaVideoSurfaceFormat_P016


_caps = {}      # (device, codec, chroma, depth) -> DecoderCaps: cuvidGetDecoderCaps asked once each


class DecoderCaps(NamedTuple):
    """What cuvidGetDecoderCaps answered for one (codec, chroma format, bit depth) on one device."""
    supported: bool
    output_formats: int         # bit i: cudaVideoSurfaceFormat i
    max_width: int
    max_height: int
    max_macroblocks: int
    min_width: int
    min_height: int


cdef object decoder_caps(CudaContext context, CuvidLibrary library, int codec, int chroma, int depth):
    """cuvidGetDecoderCaps for (codec, chroma, depth) on the context's device (cached per process)."""
    cdef cuvid.CUVIDDECODECAPS caps
    cdef cu.CUresult ret
    key = (context.index, codec, chroma, depth)
    if key in _caps:
        return _caps[key]
    memset(&caps, 0, sizeof(caps))
    caps.eCodecType = <cuvid.cudaVideoCodec>codec
    caps.eChromaFormat = <cuvid.cudaVideoChromaFormat>chroma
    caps.nBitDepthMinus8 = depth - 8
    context.enter()
    try:
        with nogil:
            ret = library.ptr.cuvidGetDecoderCaps(&caps)
        check_cu(context.driver, ret, "cuvidGetDecoderCaps")
    finally:
        context.exit()
    _caps[key] = DecoderCaps(bool(caps.bIsSupported), caps.nOutputFormatMask, caps.nMaxWidth, caps.nMaxHeight,
                             caps.nMaxMBCount, caps.nMinWidth, caps.nMinHeight)
    return _caps[key]


cdef str refusal(CudaContext context, CuvidLibrary library, int codec, int chroma, int depth,
                 unsigned int width, unsigned int height):
    """Why NVDEC on this device cannot decode (codec, chroma, depth) at width x height, or None.

    Asks cuvidGetDecoderCaps (codec, chroma format, bit depth, the surface format we need, the
    coded size between the minimum and the maximum, the macroblock count). 4:2:2 and 4:0:0 are
    refused first: the CUDA converter has no kernels for them.
    """
    what = f"{CODEC_NAMES.get(codec, codec)} {CHROMA_NAMES.get(chroma, chroma)} {depth}-bit"
    if chroma not in (cuvid.cudaVideoChromaFormat_420, cuvid.cudaVideoChromaFormat_444):
        return f"torchcodec's CUDA colour conversion does not handle {what} (only 4:2:0 and 4:4:4)"
    if library.ptr.cuvidGetDecoderCaps == NULL:
        return "this driver's libnvcuvid.so.1 has no cuvidGetDecoderCaps (the NVIDIA driver is too old)"
    caps = decoder_caps(context, library, codec, chroma, depth)
    macroblocks = ((width + 15) // 16) * ((height + 15) // 16)
    if (caps.supported and caps.output_formats & (1 << surface_format(chroma, depth))
            and caps.min_width <= width <= caps.max_width and caps.min_height <= height <= caps.max_height
            and macroblocks <= caps.max_macroblocks):
        return None
    device = f"NVDEC on {context.name}"
    if not caps.supported:
        return f"{device} cannot decode {what}"
    if not caps.output_formats & (1 << surface_format(chroma, depth)):
        return f"{device} cannot output {what} without losing bits (no matching surface format)"
    if width > caps.max_width or height > caps.max_height:
        return f"{device}: {what} at {width}x{height} exceeds the maximum {caps.max_width}x{caps.max_height}"
    if width < caps.min_width or height < caps.min_height:
        return f"{device}: {what} at {width}x{height} is below the minimum {caps.min_width}x{caps.min_height}"
    return (f"{device}: {what} at {width}x{height} has {macroblocks} macroblocks, more than the maximum "
            f"{caps.max_macroblocks}")


class NvdecUnsupportedError(RuntimeError):
    """NVDEC cannot decode this stream on this device (the message says why); the caller may decode it
    on the CPU instead. Driver failures are CudaErrors, not this."""


def nvdec_unsupported_reason(Demuxer demuxer not None, int stream_index, CudaContext context not None):
    """None when NVDEC on ``context``'s device can decode stream ``stream_index``, else a sentence
    saying why not (libnvcuvid missing, a codec or container NvdecInput cannot feed, a chroma
    format, bit depth or size that cuvidGetDecoderCaps refuses). Raises CudaError only for
    driver failures."""
    try:
        library = load_nvcuvid()
    except CudaUnavailableError as error:
        return str(error)
    return stream_refusal(NvdecInput(demuxer, stream_index), demuxer, stream_index, context, library)


cdef str stream_refusal(NvdecInput source, Demuxer demuxer, int stream_index, CudaContext context,
                        CuvidLibrary library):
    """nvdec_unsupported_reason for a stream whose NvdecInput and libnvcuvid are at hand."""
    if source.nvdec_codec == "unsupported":
        return source.unsupported_reason
    cdef AVCodecParameters *par = demuxer.stream(stream_index).codecpar
    chroma, depth = stream_chroma_and_depth(par)
    if chroma is None:
        return depth
    return refusal(context, library, CODECS[source.nvdec_codec], chroma, depth, par.width, par.height)


cdef unsigned int clock_rate(lavu.AVRational time_base) noexcept:
    """The parser's ulClockRate for timestamps in ``time_base``: den / num when that is an integer
    (1/12800 -> 12800, 1/90000 -> 90000), else 0 (the parser's default, 10 MHz)."""
    if time_base.num <= 0 or time_base.den <= 0 or time_base.den % time_base.num:
        return 0
    if time_base.den // time_base.num > 0xFFFFFFFF:
        return 0
    return <unsigned int>(time_base.den // time_base.num)


def parser_clock_rate(int num, int den) -> int:
    """clock_rate for the time base num/den (for tests)."""
    cdef lavu.AVRational time_base
    time_base.num = num
    time_base.den = den
    return clock_rate(time_base)


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


# ---- parser callbacks (C, called inside cuvidParseVideoData) --------------------------------------

cdef int handle_sequence(void *user, cuvid.CUVIDEOFORMAT *format) noexcept nogil:
    """A new sequence: size the decoder (NvdecDecoder.on_sequence, with the GIL). Returns the number
    of decode surfaces for the parser to use, 0 on failure (the error is kept for raising)."""
    cdef ParserState *state = <ParserState *>user
    with gil:
        decoder = <NvdecDecoder>state.owner
        try:
            return decoder.on_sequence(format)
        except BaseException as error:
            decoder.callback_error = error
            state.python_error = True
            return 0


cdef int map_early(ParserState *state, int picture_index) noexcept nogil:
    """Before the parser decodes into surface ``picture_index``: a queued picture of the current
    decoder that was displayed from that surface is mapped now, while it is intact (the host waits
    for its post-processing: this is the rare path of a parser that reuses surfaces sooner than the
    feed budget assumes). 1 on success, 0 with the error kept."""
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
            ret = NOT_A_CUDA_ERROR
            where = ("the parser reused the decode surface of a picture not yet read while every NVDEC output "
                     "surface is held by a frame still alive")
        if ret == cu.CUDA_SUCCESS:
            ret = map_into(decoder, &queued.info, slot, &where)
        if ret == cu.CUDA_SUCCESS:
            queued.slot = slot
            state.early_maps += 1
            ret = decoder.cu.cuEventSynchronize(slot.sync.ready)
            where = "cuEventSynchronize"
        if ret != cu.CUDA_SUCCESS:
            if state.error == cu.CUDA_SUCCESS:
                state.error = ret
                state.error_where = where
            return 0
    return 1


cdef int handle_decode(void *user, cuvid.CUVIDPICPARAMS *picture) noexcept nogil:
    """A picture to decode (decode order): cuvidDecodePicture on the current decoder, after mapping
    a queued picture whose surface it would overwrite."""
    cdef ParserState *state = <ParserState *>user
    cdef cu.CUresult ret
    if state.decoder == NULL:
        if state.error == cu.CUDA_SUCCESS:
            state.error = NOT_A_CUDA_ERROR
            state.error_where = "the parser asked to decode a picture before any sequence header"
        return 0
    if state.decoder.dead:
        if state.error == cu.CUDA_SUCCESS:
            state.error = NOT_A_CUDA_ERROR
            state.error_where = "the CUDA context was released (interpreter exit)"
        return 0
    if not map_early(state, picture.CurrPicIdx):
        return 0
    ret = state.cuvid.cuvidDecodePicture(state.decoder.decoder, picture)
    if ret != cu.CUDA_SUCCESS:
        if state.error == cu.CUDA_SUCCESS:
            state.error = ret
            state.error_where = "cuvidDecodePicture"
        return 0
    return 1


cdef int handle_display(void *user, cuvid.CUVIDPARSERDISPINFO *info) noexcept nogil:
    """A picture to display (presentation order): queued for next_frame (dropped while flushing)."""
    cdef ParserState *state = <ParserState *>user
    cdef QueuedPicture *slot
    if info == NULL or state.dropping:       # NULL: the end of the stream
        return 1
    if state.queue_count == DISPLAY_QUEUE_SIZE:
        if state.error == cu.CUDA_SUCCESS:
            state.error = NOT_A_CUDA_ERROR
            state.error_where = "the parser displayed more pictures at once than the display queue holds"
        return 0
    slot = &state.queue[(state.queue_head + state.queue_count) % DISPLAY_QUEUE_SIZE]
    slot.info = info[0]
    slot.decoder = state.decoder
    slot.slot = NULL
    state.queue_count += 1
    return 1


# ---- the decoder --------------------------------------------------------------------------------

cdef class NvdecDecoder(VideoPacketDecoder):
    """NVDEC decoding of video stream ``stream_index`` of ``demuxer`` on ``context``'s device.

    Raises NvdecUnsupportedError (a RuntimeError) with the reason when NVDEC cannot decode the
    stream (see :func:`nvdec_unsupported_reason`), CudaUnavailableError without libnvcuvid.so.1.
    The video engine calls ``next_frame`` (frames in presentation order, over device memory: see
    docs/nvdec.md, "The decoder"), ``flush`` after it seeked the demuxer, and reads ``output_done``.
    """

    def __cinit__(self, Demuxer demuxer not None, int stream_index, CudaContext context not None):
        cdef cuvid.CUVIDPARSERPARAMS params
        cdef cu.CUresult ret
        self.parser = NULL
        memset(&self.parser_state, 0, sizeof(ParserState))
        self.parser_state.owner = <void *>self
        self.output_done = False
        self.input_done = False
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
        self.demuxer = demuxer
        self.stream_index = stream_index
        self.time_base = demuxer.stream(stream_index).time_base
        self.device = f"cuda:{context.index}"
        self.codec_name = self.input.nvdec_codec
        self.header = self.input.sequence_header()
        self.header_data = <const uint8_t *>(<const char *>self.header)
        self.header_size = len(self.header)
        cdef AVCodecParameters *par = demuxer.stream(stream_index).codecpar
        self.display_width = par.width
        self.display_height = par.height
        self.colorspace = par.color_space
        self.color_range = par.color_range
        self.clock_rate = clock_rate(demuxer.stream(stream_index).time_base)

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

    cdef int parse(self, const uint8_t *data, int size, int64_t pts, unsigned long flags) except -1 nogil:
        """One cuvidParseVideoData call (context pushed); callback errors are raised after it."""
        cdef cuvid.CUVIDSOURCEDATAPACKET packet
        cdef cu.CUresult ret
        memset(&packet, 0, sizeof(packet))
        packet.payload = data
        packet.payload_size = size
        packet.flags = flags
        if pts != lavu.AV_NOPTS_VALUE and size > 0 and not (flags & cuvid.CUVID_PKT_ENDOFSTREAM):
            packet.flags |= cuvid.CUVID_PKT_TIMESTAMP
            packet.timestamp = pts
        self.context.enter()
        ret = self.library.ptr.cuvidParseVideoData(self.parser, &packet)
        self.context.exit()
        self.raise_pending()
        return check_cu_nogil(self.context.driver, ret, "cuvidParseVideoData")

    cdef int raise_pending(self) except -1 nogil:
        """Raise what a parser callback or a flush stored (once)."""
        cdef cu.CUresult ret = self.parser_state.error
        if self.parser_state.python_error:
            self.parser_state.python_error = False
            with gil:
                error, self.callback_error = self.callback_error, None
                raise error
        if ret != cu.CUDA_SUCCESS:
            self.parser_state.error = cu.CUDA_SUCCESS
            with gil:
                if ret == NOT_A_CUDA_ERROR:
                    raise RuntimeError(f"NVDEC decoding failed: {self.parser_state.error_where.decode()}")
                check_cu(self.context.driver, ret, self.parser_state.error_where)
        return 0

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
            raise RuntimeError(reason)
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

    # ---- the packet decoder's calls

    cdef int next_frame(self, Demuxer demuxer, AVPacket *packet, AVFrame *frame) except -1 nogil:
        """Map the next picture (presentation order) into ``frame``: 1, or 0 at the end of the stream.

        Feeds the parser while fewer than ``feed_budget`` displayed pictures wait, so that decoding
        runs ahead of mapping: the header first (after creation and after each flush), then the
        filtered packets, then the end of stream. ``packet`` is scratch; ``demuxer`` is the one
        given at creation.
        """
        cdef QueuedPicture *picture = NULL
        cdef PacketInfo *info = NULL
        cdef int got, waiting
        while True:
            self.raise_pending()
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
                self.map_picture(picture, info, frame)      # raises with the picture still queued
                self.parser_state.queue_head = (self.parser_state.queue_head + 1) % DISPLAY_QUEUE_SIZE
                self.parser_state.queue_count -= 1
                return 1
            if waiting == 0:
                if self.output_done:
                    return 0
                if self.input_done:
                    self.output_done = True
                    return 0
                if self.has_retired:
                    with gil:
                        self.release_retired()
            if self.header_pending:
                self.header_pending = False
                if self.header_size > 0:
                    self.parse(self.header_data, self.header_size, lavu.AV_NOPTS_VALUE, 0)
                continue
            got = self.input.next_packet(packet)
            if not got:
                self.input_done = True
                self.parse(NULL, 0, lavu.AV_NOPTS_VALUE, cuvid.CUVID_PKT_ENDOFSTREAM)
                continue
            try:
                self.remember(packet)
                self.parse(packet.data, packet.size, ffcompat.tc_packet_pts(packet), 0)
            finally:
                lavc.av_packet_unref(packet)

    cdef int map_picture(self, QueuedPicture *picture, const PacketInfo *info, AVFrame *frame) except -1 nogil:
        """Map a displayed picture into a free output slot (unless the decode callback mapped it
        early) and describe it in ``frame``; ``info``: the packet that carried its timestamp (NULL
        when unknown), for its duration. No host wait unless every slot is taken (free_slot)."""
        cdef DecoderState *state = picture.decoder
        cdef OutputSlot *slot = picture.slot
        cdef cu.CUresult ret = cu.CUDA_SUCCESS
        cdef AVBufferRef *buf
        cdef int i, rows, width, height
        cdef const char *where = NULL
        if state.dead:
            with gil:
                raise CudaError("the CUDA context of this NVDEC decoder was released (interpreter exit)")
        if slot == NULL:
            self.context.enter()
            ret = free_slot(state, &slot, &self.parser_state.host_waits, &where)
            if ret == cu.CUDA_SUCCESS and slot != NULL:
                ret = map_into(state, &picture.info, slot, &where)
            self.context.exit()
            check_cu_nogil(self.context.driver, ret, where)
            if slot == NULL:
                with gil:
                    raise RuntimeError(f"all {state.num_output} NVDEC output surfaces are mapped: release decoded "
                                       f"frames (av_frame_unref) before decoding more")
        picture.slot = NULL                         # the frame holds it from here
        buf = lavu.av_buffer_create(<uint8_t *><size_t>slot.surface, 0, release_surface, slot, 0)
        if buf == NULL:
            release_surface(slot, NULL)
            with gil:
                raise MemoryError("av_buffer_create failed")

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
        return 0

    cdef void flush(self) noexcept nogil:
        """After the demuxer seeked: forget the filter's and the parser's pictures; the next frames are
        those of the packets after the seek point, the sequence header going first. Errors are kept
        and raised by the next next_frame."""
        cdef cuvid.CUVIDSOURCEDATAPACKET packet
        cdef cu.CUresult ret
        self.input.flush()
        self.drop_queue()
        memset(&packet, 0, sizeof(packet))
        packet.flags = cuvid.CUVID_PKT_ENDOFSTREAM | cuvid.CUVID_PKT_DISCONTINUITY
        self.parser_state.dropping = True
        ret = self.context.driver.ptr.cuCtxPushCurrent(self.context.ptr)
        if ret == cu.CUDA_SUCCESS:
            ret = self.library.ptr.cuvidParseVideoData(self.parser, &packet)
            self.context.driver.ptr.cuCtxPopCurrent(NULL)
        self.parser_state.dropping = False
        if ret != cu.CUDA_SUCCESS and self.parser_state.error == cu.CUDA_SUCCESS:
            self.parser_state.error = ret
            self.parser_state.error_where = "cuvidParseVideoData (flush)"
        self.packets_next = 0
        self.header_pending = True
        self.input_done = False
        self.output_done = False

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

    # ---- Python helpers, for tests and tools

    def seek(self, pts=None):
        """Seek the demuxer to the key frame at or before ``pts`` (None: the start) and flush, as the
        video engine does."""
        cdef bint from_start = pts is None
        cdef int64_t target = 0 if from_start else pts
        with nogil:
            if from_start:
                self.demuxer.seek_to_start(self.stream_index)
            else:
                self.demuxer.seek_timestamp(self.stream_index, target)
            self.flush()

    def decode_frames(self, Py_ssize_t count=-1, peek=None, int alive=2):
        """Decode up to ``count`` frames (all when negative), keeping the last ``alive`` (1 to 8) frames
        mapped as the video engine does (it keeps two), and return one dict per frame: pts, duration,
        format (FFmpeg's name), width, height, crop_left/top/right/bottom, data (the three plane
        addresses), linesizes, has_event, bits, luma and chroma (the addresses of the first displayed
        luma sample and of the chroma sample(s) there), and "peek": ``peek(that dict)``'s result,
        called while the frame is mapped, after the host waited for its ``ready`` event (a test
        helper's wait: the video engine never waits). The addresses are device memory: read them
        with the driver (cuMemcpyDtoH), or as host memory only with the tests' stub libnvcuvid."""
        cdef AVPacket *packet = NULL
        cdef AVFrame *frames[8]
        cdef AVFrame *frame
        cdef FrameSync *sync
        cdef cu.CUresult ret
        cdef int got, bps, sub, i
        if not 1 <= alive <= 8:
            raise ValueError(f"alive must be between 1 and 8, got {alive}")
        memset(frames, 0, sizeof(frames))
        out = []
        try:
            packet = lavc.av_packet_alloc()
            for i in range(alive):
                frames[i] = lavu.av_frame_alloc()
                if frames[i] == NULL:
                    raise MemoryError("cannot allocate frames")
            if packet == NULL:
                raise MemoryError("cannot allocate a packet")
            while count < 0 or len(out) < count:
                frame = frames[len(out) % alive]
                lavu.av_frame_unref(frame)
                with nogil:
                    got = self.next_frame(self.demuxer, packet, frame)
                if not got:
                    break
                bps = 2 if frame.format in (lavu.AV_PIX_FMT_P016LE, lavu.AV_PIX_FMT_YUV444P16LE) else 1
                sub = 1 if frame.format in (lavu.AV_PIX_FMT_NV12, lavu.AV_PIX_FMT_P016LE) else 0
                luma = <size_t>frame.data[0] + frame.crop_top * frame.linesize[0] + frame.crop_left * bps
                chroma = (<size_t>frame.data[1] + (frame.crop_top >> sub) * frame.linesize[1]
                          + (frame.crop_left >> sub) * bps * (2 if sub else 1))
                info = {
                    "pts": frame.pts, "duration": ffcompat.tc_frame_duration(frame),
                    "format": lavu.av_get_pix_fmt_name(<lavu.AVPixelFormat>frame.format).decode(),
                    "width": frame.width, "height": frame.height,
                    "crop_left": frame.crop_left, "crop_top": frame.crop_top,
                    "crop_right": frame.crop_right, "crop_bottom": frame.crop_bottom,
                    "data": [<size_t>frame.data[i] for i in range(3)],
                    "linesizes": [frame.linesize[i] for i in range(3)],
                    "has_event": frame.opaque != NULL, "luma": luma, "chroma": chroma,
                    "bits": (<FrameSync *>frame.opaque).bits,
                }
                if peek is not None:
                    sync = <FrameSync *>frame.opaque
                    self.context.enter()
                    try:
                        with nogil:
                            ret = self.context.driver.ptr.cuEventSynchronize(sync.ready)
                        check_cu(self.context.driver, ret, "cuEventSynchronize")
                    finally:
                        self.context.exit()
                info["peek"] = peek(info) if peek is not None else None
                out.append(info)
        finally:
            for i in range(alive):
                lavu.av_frame_free(&frames[i])
            lavc.av_packet_free(&packet)
        return out

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
