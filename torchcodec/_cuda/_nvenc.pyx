"""Encoding CUDA frames with NVENC, through FFmpeg's h264_nvenc / hevc_nvenc / av1_nvenc.

``CudaFrameWriter`` turns the caller's RGB frames in device memory (uint8, (3, H, W) at any byte
strides: planar or channels-last) into FFmpeg CUDA frames: ``av_hwframe_get_buffer`` of an
AVHWFramesContext of NV12 frames whose FFmpeg CUDA device wraps the package's retained primary
context (torchcodec._core._packet_decoder.cuda_device_ref, as the hwaccel decoder does: FFmpeg
creates no context of its own), written in place by kernels/colour.cu's ``tc_convert_rgb8_to_nv12``.
Nothing goes through the host.

Streams: the writer owns a non-blocking CUstream, which is also the FFmpeg device's stream, so that
NVENC (FFmpeg gives it the device's stream with nvEncSetIOCudaStreams) reads each frame after the
kernel that wrote it. The producer's stream (torch's or cupy's current stream, the
``__cuda_array_interface__`` v3 ``stream``) is ordered on the device both ways: the writer's stream
waits for an event recorded on it before the first launch, and it waits for an event recorded on the
writer's stream after the last one, so the producer's library cannot reuse the memory while the
kernel still reads it. No host synchronisation.

``NvencStreamEncoder`` is the StreamEncoder (codec context, send/receive loop, muxer) over such a
writer: the codec (h264's NVENC encoder for mp4, mov and mkv, else the container's default codec's,
or the one named), its options as on the CPU (crf, preset, extra_options, an unknown key an error),
the colour matrix and range of the CPU encoder (BT.601, limited range, unless the colorspace /
color_range options say otherwise), written into the stream.

When FFmpeg's encoder cannot open, :func:`nvenc_status` asks NVIDIA's encoder library directly
(ffnvcodec's loader, then an encode session opened and closed on the same context) which of the
causes it is, so that the NvencUnavailableError names it: the library missing, a driver whose NVENC
API is too old, or a GPU without an NVENC engine (the A100, H100 and H200 have none).
"""
from libc.limits cimport INT_MAX
from libc.stdint cimport int64_t, uint8_t, uint32_t, uint64_t
from libc.string cimport memset

from torchcodec._core._encoder cimport (StreamEncoder, c_str, check_frames, choose_yuv_matrix, codec_options,
                                        pixel_format_name, set_codec_options)
from torchcodec._core._error cimport av_error_string, check_av
from torchcodec._core._error import InvalidArgumentError
from torchcodec._core._muxer cimport Muxer
from torchcodec._core._packet_decoder cimport cuda_device_ref
from torchcodec._core._packet_decoder import cuda_hwaccel_unavailable_reason
from torchcodec._cuda._converter import _modules_for
from torchcodec._cuda._driver cimport CudaContext, CudaModule, check_cu, check_cu_nogil, launch_kernel, stream_wait_event
from torchcodec._cuda cimport cuda as cu
from torchcodec._cuda cimport ffnvcodec as ffnv
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg.avcodec cimport AVCodec, AVCodecDescriptor, AVCodecHWConfig, AVCodecID
from torchcodec._ffmpeg.avutil cimport AVBufferRef, AVFrame, AVHWFramesContext

cdef extern from "torchcodec/kernels.h" nogil:
    enum:
        TC_KERNEL_BLOCK_X
        TC_KERNEL_BLOCK_Y
    ctypedef struct tc_rgb_to_nv12_params:
        uint64_t src
        int64_t src_row_stride
        int64_t src_col_stride
        int64_t src_chan_stride
        uint64_t planes[2]
        int64_t pitches[2]
        int width
        int height
        int matrix
        int full_range

class NvencUnavailableError(RuntimeError):
    """NVENC cannot encode on this machine. ``cause`` says why: "library" (libnvidia-encode.so.1
    could not be opened), "driver" (a driver too old for the NVENC API FFmpeg's encoders use, or
    whose library lacks NVENC's entry points), "engine" (the GPU has no NVENC engine) or "session"
    (the engine refused a session: out of memory, or the GPU's limit of concurrent sessions)."""

    def __init__(self, message: str, cause: str) -> None:
        super().__init__(message)
        self.cause = cause


# nvEncOpenEncodeSessionEx's refusals that the check names (NVENCSTATUS values, nvEncodeAPI.h).
SESSION_ERRORS = {ffnv.NV_ENC_ERR_NO_ENCODE_DEVICE: "NV_ENC_ERR_NO_ENCODE_DEVICE",
                  ffnv.NV_ENC_ERR_UNSUPPORTED_DEVICE: "NV_ENC_ERR_UNSUPPORTED_DEVICE",
                  ffnv.NV_ENC_ERR_INVALID_VERSION: "NV_ENC_ERR_INVALID_VERSION",
                  ffnv.NV_ENC_ERR_OUT_OF_MEMORY: "NV_ENC_ERR_OUT_OF_MEMORY"}


def _api_version(uint32_t version) -> str:
    """NvEncodeAPIGetMaxSupportedVersion's (major << 4 | minor) as "major.minor"."""
    return f"{version >> 4}.{version & 0xF}"


def nvenc_status(CudaContext context not None):
    """Whether NVENC can encode on ``context``'s GPU, asked of NVIDIA's encoder library itself:
    ``(None, sentence)`` when an encode session opens (it is closed at once), else ``(cause,
    sentence)`` with the cause of :class:`NvencUnavailableError` and what was found."""
    cdef ffnv.NvencFunctions *functions = NULL
    cdef ffnv.tc_loader_log log
    cdef ffnv.NV_ENCODE_API_FUNCTION_LIST api
    cdef ffnv.NV_ENC_OPEN_ENCODE_SESSION_EX_PARAMS params
    cdef uint32_t version = 0
    cdef uint32_t needed = (ffnv.NVENCAPI_MAJOR_VERSION << 4) | ffnv.NVENCAPI_MINOR_VERSION
    cdef void *encoder = NULL
    cdef ffnv.NVENCSTATUS status
    log.text[0] = 0
    if ffnv.nvenc_load_functions(&functions, &log) < 0:
        message = log.text.decode("utf-8", "replace").strip()
        if message.startswith("Cannot load libnvidia-encode"):
            return "library", ("NVIDIA's encoder library libnvidia-encode.so.1 could not be opened (it comes with the "
                               "NVIDIA driver; in a container, NVIDIA_DRIVER_CAPABILITIES must include 'video')")
        return "driver", (f"libnvidia-encode.so.1 was opened but lacks NVENC's entry point "
                          f"{message.replace('Cannot load ', '')}: the NVIDIA driver is too old or not a real one")
    try:
        status = functions.NvEncodeAPIGetMaxSupportedVersion(&version)
        if status != ffnv.NV_ENC_SUCCESS:
            return "driver", f"NvEncodeAPIGetMaxSupportedVersion failed (NVENCSTATUS {status})"
        if version < needed:
            return "driver", (f"the NVIDIA driver's NVENC API is version {_api_version(version)}, older than the "
                              f"{_api_version(needed)} that FFmpeg's NVENC encoders were built for: update the driver")
        memset(&api, 0, sizeof(api))
        api.version = ffnv.NV_ENCODE_API_FUNCTION_LIST_VER
        status = functions.NvEncodeAPICreateInstance(&api)
        if status != ffnv.NV_ENC_SUCCESS or api.nvEncOpenEncodeSessionEx == NULL or api.nvEncDestroyEncoder == NULL:
            return "driver", (f"NvEncodeAPICreateInstance failed (NVENCSTATUS {status}) for NVENC API "
                              f"{_api_version(needed)}, although the driver reports {_api_version(version)}")
        memset(&params, 0, sizeof(params))
        params.version = ffnv.NV_ENC_OPEN_ENCODE_SESSION_EX_PARAMS_VER
        params.deviceType = ffnv.NV_ENC_DEVICE_TYPE_CUDA
        params.device = <void *>context.ptr
        params.apiVersion = ffnv.NVENCAPI_VERSION
        context.enter()
        try:
            with nogil:
                status = api.nvEncOpenEncodeSessionEx(&params, &encoder)
                if encoder != NULL:        # also after a failure, as NVENC's API asks
                    api.nvEncDestroyEncoder(encoder)
        finally:
            context.exit()
        name = SESSION_ERRORS.get(status, f"NVENCSTATUS {status}")
        where = f"cuda:{context.index} ({context.name})"
        if status == ffnv.NV_ENC_SUCCESS:
            return None, f"an NVENC session opens on {where} (driver NVENC API {_api_version(version)})"
        if status == ffnv.NV_ENC_ERR_NO_ENCODE_DEVICE or status == ffnv.NV_ENC_ERR_UNSUPPORTED_DEVICE:
            return "engine", (f"this GPU has no NVENC engine: {where} refused an encode session "
                              f"(nvEncOpenEncodeSessionEx: {name}); data-centre GPUs such as the A100, H100 and "
                              f"H200 have none. Encode CPU frames (frames.cpu()) or use a GPU with NVENC")
        if status == ffnv.NV_ENC_ERR_INVALID_VERSION:
            return "driver", (f"the NVIDIA driver refused NVENC API {_api_version(needed)} "
                              f"(nvEncOpenEncodeSessionEx: {name}): update the driver")
        return "session", (f"{where} refused an encode session (nvEncOpenEncodeSessionEx: {name}): out of "
                           f"memory, or the GPU's limit of concurrent encode sessions is reached")
    finally:
        ffnv.nvenc_free_functions(&functions)


# The only pixel format NVENC is given here, as in TorchCodec 0.17.
GPU_PIXEL_FORMAT_ERROR = ("Video encoding on GPU currently only supports the nv12 pixel format. "
                          "Do not set pixel_format to use nv12 by default.")
NVENC_ENCODERS = "h264_nvenc, hevc_nvenc or av1_nvenc"


cdef bint takes_cuda_frames(const AVCodec *codec) noexcept:
    """Whether the encoder takes AV_PIX_FMT_CUDA frames of an FFmpeg CUDA device (the NVENC encoders)."""
    cdef const AVCodecHWConfig *config
    cdef int i = 0
    while True:
        config = lavc.avcodec_get_hw_config(codec, i)
        if config == NULL:
            return False
        if config.device_type == lavu.AV_HWDEVICE_TYPE_CUDA and config.pix_fmt == lavu.AV_PIX_FMT_CUDA:
            return True
        i += 1


cdef const AVCodec *cuda_encoder_of(AVCodecID codec_id) noexcept:
    """FFmpeg's first encoder of ``codec_id`` that takes CUDA frames (h264 -> h264_nvenc), or NULL."""
    cdef void *state = NULL
    cdef const AVCodec *codec
    while True:
        codec = lavc.av_codec_iterate(&state)
        if codec == NULL:
            return NULL
        if codec.id == codec_id and lavc.av_codec_is_encoder(codec) and takes_cuda_frames(codec):
            return codec


# The codec of CUDA frames when none is named, by muxer: H.264 (h264_nvenc), whatever the container's
# CPU default is in this FFmpeg (mpeg4 for mp4 without libx264). Other containers: their default's.
CUDA_DEFAULT_CODECS = {"mp4": lavc.AV_CODEC_ID_H264, "mov": lavc.AV_CODEC_ID_H264, "matroska": lavc.AV_CODEC_ID_H264}


cdef const AVCodec *choose_nvenc_codec(Muxer muxer, object name) except NULL:
    """The encoder for CUDA frames: ``name``'s when it is an NVENC encoder, the NVENC encoder of the
    codec ``name`` ("h264", "hevc", "av1"), or, when ``name`` is None, h264's for mp4, mov and mkv and
    that of the container's default codec for the others."""
    cdef const AVCodec *codec
    cdef const AVCodecDescriptor *desc
    cdef int codec_id
    if name is None:
        codec_id = CUDA_DEFAULT_CODECS.get(muxer.format_name, muxer.default_codec_id("video"))
        codec = cuda_encoder_of(<AVCodecID>codec_id)
        if codec == NULL:
            raise InvalidArgumentError(
                f"the {muxer.format_name} container's default video codec "
                f"({c_str(lavc.avcodec_get_name(<AVCodecID>codec_id))}) has no NVENC encoder in this FFmpeg: "
                f"pass codec= ({NVENC_ENCODERS}) for CUDA frames")
        return codec
    raw = str(name).encode()
    codec = lavc.avcodec_find_encoder_by_name(raw)
    if codec != NULL:
        if not takes_cuda_frames(codec):
            raise InvalidArgumentError(f"the {c_str(codec.name)} encoder cannot encode CUDA frames: use an NVENC "
                                       f"encoder ({NVENC_ENCODERS}), or encode CPU frames")
        return codec
    desc = lavc.avcodec_descriptor_get_by_name(raw)
    if desc == NULL:
        raise InvalidArgumentError(f"Video codec {name} not found. To see available codecs, run: ffmpeg -encoders")
    codec = cuda_encoder_of(desc.id)
    if codec == NULL:
        raise InvalidArgumentError(f"this FFmpeg has no NVENC encoder of {name} for CUDA frames "
                                   f"({NVENC_ENCODERS} are NVENC's)")
    return codec


cdef unsigned blocks(int count, int per_block) noexcept nogil:
    return <unsigned>((count + per_block - 1) // per_block)


cdef class CudaFrameWriter:
    """``CudaFrameWriter(context, width, height)``: RGB frames in device memory of cuda:N (the
    CudaContext) into NV12 FFmpeg CUDA frames (AV_PIX_FMT_CUDA over NV12) of ``width`` x ``height``,
    from an AVHWFramesContext on an FFmpeg CUDA device over ``context``. ``matrix`` (AVColorSpace)
    and ``full_range`` choose the conversion (default BT.601, limited range)."""

    def __cinit__(self, CudaContext context not None, int width, int height):
        cdef AVBufferRef *device_ref
        cdef AVHWFramesContext *frames
        cdef int ret
        self.stream = NULL
        self.input_ready = self.input_read = NULL
        self.frames_ref = NULL
        self.context, self.driver = context, context.driver
        self.width, self.height = width, height
        self.matrix, self.full_range = lavu.AVCOL_SPC_BT470BG, False
        if width <= 0 or height <= 0 or lavu.av_image_check_size(width, height, 0, NULL) < 0:
            raise InvalidArgumentError(f"cannot encode {width}x{height} frames: height and width must be > 0 "
                                       f"and the picture not too large")
        reason = cuda_hwaccel_unavailable_reason()
        if reason is not None:
            raise RuntimeError(f"NVENC cannot be used: {reason}")
        self.modules = _modules_for(context)
        self.kernel = (<CudaModule>self.modules[0]).function_ptr(b"tc_convert_rgb8_to_nv12")
        context.enter()
        try:
            check_cu(self.driver, self.driver.ptr.cuStreamCreate(&self.stream, cu.TC_STREAM_NON_BLOCKING),
                     "cuStreamCreate")
            check_cu(self.driver, self.driver.ptr.cuEventCreate(&self.input_ready, cu.CU_EVENT_DISABLE_TIMING),
                     "cuEventCreate")
            check_cu(self.driver, self.driver.ptr.cuEventCreate(&self.input_read, cu.CU_EVENT_DISABLE_TIMING),
                     "cuEventCreate")
        finally:
            context.exit()
        device_ref = cuda_device_ref(context.index, <size_t>context.ptr, <size_t>self.stream, "NVENC")
        self.frames_ref = lavu.av_hwframe_ctx_alloc(device_ref)
        lavu.av_buffer_unref(&device_ref)        # the frames context holds its own reference
        if self.frames_ref == NULL:
            raise MemoryError("av_hwframe_ctx_alloc failed")
        frames = <AVHWFramesContext *>self.frames_ref.data
        frames.format = lavu.AV_PIX_FMT_CUDA
        frames.sw_format = lavu.AV_PIX_FMT_NV12
        frames.width, frames.height = width, height
        with nogil:
            ret = lavu.av_hwframe_ctx_init(self.frames_ref)
        if ret < 0:
            lavu.av_buffer_unref(&self.frames_ref)
            raise RuntimeError(f"Failed to initialize CUDA frames context for codec: {av_error_string(ret)} "
                               f"(av_hwframe_ctx_init, {width}x{height} nv12 on cuda:{context.index})")

    def __dealloc__(self):
        # Frames go back to FFmpeg's pool (freed with it, in its own context push); nothing here raises.
        lavu.av_buffer_unref(&self.frames_ref)
        if self.context is None or self.context.ptr == NULL or self.driver.ptr == NULL:
            return
        if self.driver.ptr.cuCtxPushCurrent(self.context.ptr) != cu.CUDA_SUCCESS:
            return
        if self.stream != NULL:
            self.driver.ptr.cuStreamSynchronize(self.stream)
            self.driver.ptr.cuStreamDestroy(self.stream)
        if self.input_ready != NULL:
            self.driver.ptr.cuEventDestroy(self.input_ready)
        if self.input_read != NULL:
            self.driver.ptr.cuEventDestroy(self.input_read)
        self.driver.ptr.cuCtxPopCurrent(NULL)

    @property
    def stream_handle(self):
        """The writer's CUstream (an int): its launches and NVENC's reads run there."""
        return <size_t>self.stream

    cdef int begin(self, cu.CUstream producer) except -1 nogil:
        """Enter the context and order the writer's stream after the work queued on ``producer``
        (the input's stream). Call ``end`` after the last ``write``, in a finally."""
        cdef bint ordered = False
        self.context.enter()
        try:
            check_cu_nogil(self.driver, self.driver.ptr.cuEventRecord(self.input_ready, producer), "cuEventRecord")
            stream_wait_event(self.driver, self.stream, self.input_ready)
            ordered = True
        finally:
            if not ordered:
                self.context.exit()
        return 0

    cdef int end(self, cu.CUstream producer) except -1 nogil:
        """Order ``producer`` after the launches (its library may then reuse the input), leave the context."""
        try:
            check_cu_nogil(self.driver, self.driver.ptr.cuEventRecord(self.input_read, self.stream), "cuEventRecord")
            stream_wait_event(self.driver, producer, self.input_read)
        finally:
            self.context.exit()
        return 0

    cdef int write(self, AVFrame *frame, const uint8_t *src, Py_ssize_t sc, Py_ssize_t sh,
                   Py_ssize_t sw) except -1 nogil:
        """``frame`` (unreferenced first) := a new frame of the pool, NV12 of the RGB frame at ``src``
        (device memory; byte steps sc between colours, sh between rows, sw between pixels), queued
        on the writer's stream. Between ``begin`` and ``end``."""
        cdef tc_rgb_to_nv12_params params
        lavu.av_frame_unref(frame)
        cdef int ret = lavu.av_hwframe_get_buffer(self.frames_ref, frame, 0)
        if ret < 0:
            with gil:
                check_av(ret, "av_hwframe_get_buffer")
        params.src = <uint64_t>src
        params.src_row_stride, params.src_col_stride, params.src_chan_stride = sh, sw, sc
        params.planes[0], params.planes[1] = <uint64_t>frame.data[0], <uint64_t>frame.data[1]
        params.pitches[0], params.pitches[1] = frame.linesize[0], frame.linesize[1]
        params.width, params.height = self.width, self.height
        params.matrix, params.full_range = self.matrix, self.full_range
        frame.colorspace = <lavu.AVColorSpace>self.matrix
        frame.color_range = lavu.AVCOL_RANGE_JPEG if self.full_range else lavu.AVCOL_RANGE_MPEG
        return launch_kernel(self.driver, self.kernel, blocks((self.width + 1) // 2, TC_KERNEL_BLOCK_X),
                             blocks((self.height + 1) // 2, TC_KERNEL_BLOCK_Y), self.stream, &params)


cdef class NvencStreamEncoder(StreamEncoder):
    """``NvencStreamEncoder(muxer, context, width, height, frame_rate, codec=None, pixel_format=None,
    crf=None, preset=None, extra_options={})``: a video stream of ``muxer`` encoded by NVENC on the
    device of ``context`` (a CudaContext), fed RGB device frames by ``add_frames``. Raises
    InvalidArgumentError for settings the codec or container refuses, RuntimeError when NVENC
    cannot be opened (no libnvidia-encode.so.1, an unsupported GPU or driver)."""

    def __init__(self, Muxer muxer, CudaContext context not None, int width, int height, double frame_rate,
                 codec=None, pixel_format=None, crf=None, preset=None, dict extra_options=None):
        self.muxer = muxer
        self.width, self.height = width, height
        self.min_duration_one = True
        if not frame_rate > 0 or frame_rate > INT_MAX:
            raise InvalidArgumentError(f"frame_rate must be > 0, got {frame_rate}")
        self.codec = choose_nvenc_codec(muxer, codec)
        muxer.check_codec(<int>self.codec.id, c_str(self.codec.name))
        if pixel_format is not None and str(pixel_format) != "nv12":
            raise InvalidArgumentError(GPU_PIXEL_FORMAT_ERROR)
        self.ptr = lavc.avcodec_alloc_context3(self.codec)
        if self.ptr == NULL:
            raise MemoryError("avcodec_alloc_context3 failed")
        self.ptr.width, self.ptr.height = width, height
        self.ptr.pix_fmt, self.ptr.sw_pix_fmt = lavu.AV_PIX_FMT_CUDA, lavu.AV_PIX_FMT_NV12
        self.ptr.framerate = lavu.av_d2q(frame_rate, INT_MAX)
        self.ptr.time_base = lavu.av_inv_q(self.ptr.framerate)
        set_codec_options(self.ptr, self.codec,
                          codec_options(muxer, self.ptr, self.codec, crf, preset, extra_options or {}))
        choose_yuv_matrix(self.ptr)
        if self.ptr.color_range == lavu.AVCOL_RANGE_UNSPECIFIED:
            self.ptr.color_range = lavu.AVCOL_RANGE_MPEG
        self.writer = CudaFrameWriter(context, width, height)
        self.writer.matrix = <int>self.ptr.colorspace
        self.writer.full_range = self.ptr.color_range == lavu.AVCOL_RANGE_JPEG
        self.ptr.hw_frames_ctx = lavu.av_buffer_ref(self.writer.frames_ref)
        if self.ptr.hw_frames_ctx == NULL:
            raise MemoryError("av_buffer_ref failed")
        self.open_codec()
        self.stream.r_frame_rate = self.ptr.framerate

    def __dealloc__(self):
        # NVENC is closed (it still uses the writer's stream and frames) before the writer goes.
        lavc.avcodec_free_context(&self.ptr)
        lavu.av_frame_unref(self.frame)

    cdef object open_error(self, int ret):
        # Whatever FFmpeg's code (ENOSYS for an unsupported device or an old driver, ENOENT for no
        # encode device, AVERROR_UNKNOWN when its loader failed), NVENC itself says what is missing.
        cause, text = nvenc_status(self.writer.context)
        if cause is not None:
            return NvencUnavailableError(
                f"NVENC cannot encode: {text} (FFmpeg's {c_str(self.codec.name)}: avcodec_open2: "
                f"{av_error_string(ret)})", cause)
        return StreamEncoder.open_error(self, ret)

    def describe_settings(self):
        return f" for {self.width}x{self.height} nv12 CUDA frames"

    @property
    def pixel_format(self):
        return pixel_format_name(self.ptr.sw_pix_fmt)

    @property
    def num_frames(self):
        """Frames added so far."""
        return self.next_pts

    def add_frames(self, size_t address, tuple shape, tuple strides, size_t producer_stream):
        """Encode ``shape[0]`` RGB frames of shape (3, height, width), uint8, in device memory at
        ``address`` with byte ``strides``, written by work queued on the CUstream ``producer_stream``."""
        cdef Py_ssize_t n = shape[0], step = strides[0], i
        cdef Py_ssize_t sc = strides[1], sh = strides[2], sw = strides[3]
        cdef cu.CUstream producer = <cu.CUstream>producer_stream
        check_frames(self.finished, shape, self.height, self.width)
        if n == 0:
            return
        with nogil:
            self.writer.begin(producer)
            try:
                for i in range(n):
                    self.writer.write(self.frame, <const uint8_t *>address + i * step, sc, sh, sw)
                    self.frame.pts = self.next_pts
                    self.next_pts += 1
                    self.send(self.frame)
            finally:
                self.writer.end(producer)
