"""Encoding: the caller's frames and samples, read in place, converted, encoded and muxed.

A stream encoder is made for a Muxer before the Muxer opens its destination: the codec is chosen,
its options are checked and set, and it is opened, so that a bad setting raises before anything
is written. Frames are encoded as they arrive (``add_frames``/``add_samples``, without the GIL);
nothing but the codec's own look-ahead is held, however long the stream.

Video: frames are (N, 3, H, W) uint8 RGB at any strides. Rows of one colour (planes) are read in
place as swscale's GBRP, rows of packed pixels (a channels-last array) as RGB24; swscale gives the
same pixels for both. Any other layout is gathered into planes first, and so is a frame whose last
row ends too near the end of the caller's memory for swscale's SIMD readers, which read a little
past a row. The conversion is bicubic (the CLI's flags), with the stream's colour matrix (BT.601
unless the ``colorspace`` option says otherwise) and range (limited for YUV unless ``color_range``
says otherwise), and both are written into the stream, so that decoders convert back with the
same ones. Each frame's pts is its index in the frame rate's time base.

Audio: samples are (C, S) float32 at any strides, cut into chunks, resampled, remixed and converted
to the codec's sample format by libswresample where needed, and cut by an AVAudioFifo into frames
of the codec's frame size; the last frame is short, and libavcodec pads it for codecs that need it.
"""
import warnings

from libc.limits cimport INT_MAX
from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy, strcmp

from torchcodec._core._error cimport av_error_string, av_exception, check_av, is_again_or_eof
from torchcodec._core._error import InvalidArgumentError
from torchcodec._core._muxer cimport Muxer
from torchcodec._core._resampler cimport Resampler
from torchcodec._core._scaler cimport cli_sws_flags
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport ffcompat
from torchcodec._ffmpeg cimport swscale as sws
from torchcodec._ffmpeg.avcodec cimport AVCodec, AVCodecContext, AVCodecDescriptor, AVCodecID
from torchcodec._ffmpeg.avutil cimport (AVChannelLayout, AVClass, AVDictionary, AVFrame, AVOption,
                                        AVPixelFormat, AVPixFmtDescriptor, AVSampleFormat)
from torchcodec._ffmpeg.swscale cimport SwsContext

cdef enum InputLayout:
    PLANAR = 0          # one plane per colour: (N, 3, H, W) with unit steps along W (swscale's GBRP)
    PACKED = 1          # packed pixels: channels-last memory viewed as (N, 3, H, W) (swscale's RGB24)
    GATHER = 2          # anything else: copied into planes first

# Bytes that swscale's SIMD input readers may read past the end of a row.
cdef Py_ssize_t OVERREAD = 128
# Matrices swscale can convert RGB to YUV with (AVColorSpace values it has coefficients for).
MATRICES = {1: "bt709", 4: "fcc", 5: "bt470bg", 6: "smpte170m", 7: "smpte240m", 9: "bt2020nc"}
# The matrix of a YUV stream when no colorspace option is given: BT.601, which swscale uses by default.
cdef int DEFAULT_MATRIX = lavu.AVCOL_SPC_BT470BG
# Input samples per conversion step of add_samples.
cdef int AUDIO_CHUNK = 4096
# The sample formats an audio encoder is given, best first (the input is float32).
cdef int[12] PREFERRED_SAMPLE_FORMATS = [
    lavu.AV_SAMPLE_FMT_FLTP, lavu.AV_SAMPLE_FMT_FLT, lavu.AV_SAMPLE_FMT_DBLP, lavu.AV_SAMPLE_FMT_DBL,
    lavu.AV_SAMPLE_FMT_S64P, lavu.AV_SAMPLE_FMT_S64, lavu.AV_SAMPLE_FMT_S32P, lavu.AV_SAMPLE_FMT_S32,
    lavu.AV_SAMPLE_FMT_S16P, lavu.AV_SAMPLE_FMT_S16, lavu.AV_SAMPLE_FMT_U8P, lavu.AV_SAMPLE_FMT_U8]


cdef int check_frames(bint finished, tuple shape, int height, int width) except -1:
    """The checks of a video stream's add_frames, shared by the CPU and NVENC encoders: the stream
    is open, and ``shape`` (N, C, H, W) has 3 channels and the stream's size."""
    if finished:
        raise RuntimeError("Cannot add frames after close() was called.")
    if shape[1] != 3:
        raise InvalidArgumentError(f"frame must have 3 channels (R, G, B), got {shape[1]}")
    if shape[2] != height or shape[3] != width:
        raise InvalidArgumentError(
            f"All frames must have the same dimensions. Expected height={height} width={width}, "
            f"got height={shape[2]} width={shape[3]}")
    return 0


cdef str c_str(const char *text):
    return text.decode("utf-8", "replace") if text != NULL else "?"


cdef str pixel_format_name(int pixel_format):
    return c_str(lavu.av_get_pix_fmt_name(<AVPixelFormat>pixel_format))


# ---- codecs and their options -----------------------------------------------------------------

cdef const AVCodec *find_encoder(str name) noexcept:
    """An encoder by its name ("libx264") or by its codec's name ("h264": FFmpeg's first encoder of
    it), as the ffmpeg CLI finds them; NULL when there is none."""
    cdef bytes raw = name.encode()
    cdef const AVCodec *codec = lavc.avcodec_find_encoder_by_name(raw)
    cdef const AVCodecDescriptor *desc
    if codec == NULL:
        desc = lavc.avcodec_descriptor_get_by_name(raw)
        if desc != NULL:
            codec = lavc.avcodec_find_encoder(desc.id)
    return codec


def codec_name_of(int codec_id):
    """FFmpeg's name of a codec id ("h264"), for messages."""
    return c_str(lavc.avcodec_get_name(<AVCodecID>codec_id))


cdef const AVOption *private_option(const AVCodec *codec, const char *name) noexcept:
    if codec.priv_class == NULL:
        return NULL
    return lavu.av_opt_find2(<void *>&codec.priv_class, name, NULL, 0, lavu.AV_OPT_SEARCH_FAKE_OBJ, NULL)


cdef bint is_named_constant(const AVCodec *codec, const AVOption *option, str value) noexcept:
    """Whether ``value`` names one of the constants of ``option`` (e.g. x264's direct-pred=spatial)."""
    cdef const AVOption *entry = NULL
    cdef bytes raw = value.encode()
    if option.unit == NULL:
        return False
    cdef const char *name = raw
    while True:
        entry = lavu.av_opt_next(<void *>&codec.priv_class, entry)
        if entry == NULL:
            return False
        if (entry.type == lavu.AV_OPT_TYPE_CONST and entry.unit != NULL and strcmp(entry.unit, option.unit) == 0
                and strcmp(entry.name, name) == 0):
            return True


cdef int check_number_option(const AVCodec *codec, str key, str value) except -1:
    """Refuse a numeric private option of the codec whose value is not a number (or one of the
    option's named constants) or lies outside the option's range, with TorchCodec's messages."""
    cdef const AVOption *option = private_option(codec, key.encode())
    if option == NULL or option.type not in (lavu.AV_OPT_TYPE_INT, lavu.AV_OPT_TYPE_INT64,
                                             lavu.AV_OPT_TYPE_FLOAT, lavu.AV_OPT_TYPE_DOUBLE):
        return 0
    try:
        number = float(value)
    except ValueError:
        if is_named_constant(codec, option, value):
            return 0
        raise InvalidArgumentError(f"Option {key} expects a numeric value but got '{value}'") from None
    if not option.min <= number <= option.max:
        raise InvalidArgumentError(
            f"{key}={number:g} is out of valid range [{option.min:g}, {option.max:g}] for this codec. "
            f"For more details, run 'ffmpeg -h encoder={c_str(codec.name)}'")
    return 0


cdef bint has_option(AVCodecContext *ctx, const AVCodec *codec, str key) noexcept:
    """Whether ``key`` is an option of the codec (private) or of every codec context (generic)."""
    cdef bytes raw = key.encode()
    return (private_option(codec, raw) != NULL
            or lavu.av_opt_find2(<void *>ctx, raw, NULL, 0, 0, NULL) != NULL)


cdef dict codec_options(Muxer muxer, AVCodecContext *ctx, const AVCodec *codec, object crf, object preset,
                        dict extra_options):
    """The codec's options from ``extra_options`` (str -> str), ``crf`` and ``preset``, checked as
    TorchCodec checks them; ``extra_options`` that are the container's go to the muxer. ``crf`` and
    ``preset`` are ignored, with a warning, by codecs without them (as by the ffmpeg CLI)."""
    cdef dict options = {}
    for key, value in extra_options.items():
        check_number_option(codec, key, value)
        if muxer.is_option(key):
            muxer.set_option(key, value)
        else:
            options[key] = value
    for key, value in (("crf", None if crf is None else f"{float(crf):f}"), ("preset", preset)):
        if value is None:
            continue
        check_number_option(codec, key, value)
        if has_option(ctx, codec, key):
            options[key] = value
        else:
            warnings.warn(f"the {c_str(codec.name)} encoder has no {key} option: {key}={value} is ignored",
                          stacklevel=4)
    return options


cdef int set_codec_options(AVCodecContext *ctx, const AVCodec *codec, dict options) except -1:
    """Set ``options`` on the codec context as avcodec_open2 would (the codec's own options first,
    then the generic ones); an option that neither knows is an error."""
    cdef AVDictionary *remaining = NULL
    cdef const lavu.AVDictionaryEntry *entry = NULL
    cdef int ret = 0
    try:
        for key, value in options.items():
            check_av(lavu.av_dict_set(&remaining, key.encode(), value.encode(), 0), "av_dict_set")
        if ctx.priv_data != NULL:
            ret = lavu.av_opt_set_dict2(ctx.priv_data, &remaining, 0)
        if ret >= 0:
            ret = lavu.av_opt_set_dict2(<void *>ctx, &remaining, 0)
        if ret < 0:
            raise av_exception(ret, f"avcodec_open2 failed: {av_error_string(ret)} (the {c_str(codec.name)} "
                                    f"encoder refused one of the options {options})")
        entry = lavu.av_dict_get(remaining, b"", NULL, lavu.AV_DICT_IGNORE_SUFFIX)
        if entry != NULL:
            raise InvalidArgumentError(
                f"unknown option {c_str(entry.key)}={c_str(entry.value)}: neither the {c_str(codec.name)} "
                f"encoder nor the container has it (see 'ffmpeg -h encoder={c_str(codec.name)}')")
    finally:
        lavu.av_dict_free(&remaining)
    return 0


cdef int choose_yuv_matrix(AVCodecContext *ctx) except -1:
    """The matrix RGB frames are converted to YUV with, written into the codec context: the colorspace
    option's (one of MATRICES), BT.601 when none was given. The same matrices on CPU (swscale) and
    CUDA (colour.h's RGB -> YUV part)."""
    if ctx.colorspace == lavu.AVCOL_SPC_UNSPECIFIED:
        ctx.colorspace = <lavu.AVColorSpace>DEFAULT_MATRIX
    if <int>ctx.colorspace not in MATRICES:
        raise InvalidArgumentError(
            f"cannot convert RGB to YUV with the colorspace {c_str(lavu.av_color_space_name(ctx.colorspace))}; "
            f"use one of {', '.join(MATRICES.values())}")
    return 0


cdef class StreamEncoder:
    """What video and audio stream encoders share: the codec context, the send/receive loop that
    hands packets to the muxer, and the end of the stream."""

    def __cinit__(self, *args, **kwargs):
        self.ptr = NULL
        self.codec = NULL
        self.stream = NULL
        self.next_pts = 0
        self.finished = False
        self.min_duration_one = False
        self.packet = lavc.av_packet_alloc()
        self.frame = lavu.av_frame_alloc()
        if self.packet == NULL or self.frame == NULL:
            raise MemoryError("av_packet_alloc/av_frame_alloc failed")

    def __dealloc__(self):
        lavc.avcodec_free_context(&self.ptr)
        lavc.av_packet_free(&self.packet)
        lavu.av_frame_free(&self.frame)

    @property
    def codec_name(self):
        """The encoder's name, e.g. "libx264"."""
        return c_str(self.codec.name)

    @property
    def stream_index(self):
        return self.stream.index

    cdef int open_codec(self) except -1:
        """Open the configured codec context and give the muxer a stream with its parameters."""
        if self.muxer.global_header:
            self.ptr.flags |= lavc.AV_CODEC_FLAG_GLOBAL_HEADER
        cdef int ret
        with nogil:
            ret = lavc.avcodec_open2(self.ptr, self.codec, NULL)
        if ret < 0:
            raise self.open_error(ret)
        self.stream = self.muxer.new_stream(self.ptr)
        return 0

    cdef object open_error(self, int ret):
        """The exception for avcodec_open2's failure ``ret``."""
        return av_exception(ret, f"avcodec_open2 failed: {av_error_string(ret)} (the {c_str(self.codec.name)} "
                                 f"encoder refused its settings{self.describe_settings()})")

    def describe_settings(self):
        return ""

    cdef int send(self, AVFrame *frame) except -1 nogil:
        """Send ``frame`` (NULL: the end of the stream) and write every packet it gives to the muxer."""
        cdef int ret = lavc.avcodec_send_frame(self.ptr, frame)
        if ret < 0:
            with gil:
                raise av_exception(ret, f"Error while sending frame: {av_error_string(ret)}")
        while True:
            ret = lavc.avcodec_receive_packet(self.ptr, self.packet)
            if is_again_or_eof(ret):
                return 0
            if ret < 0:
                with gil:
                    raise av_exception(ret, f"Error receiving packet: {av_error_string(ret)}")
            if self.min_duration_one and self.packet.duration == 0:
                self.packet.duration = 1        # so that the last frame lasts one frame
            lavc.av_packet_rescale_ts(self.packet, self.ptr.time_base, self.stream.time_base)
            self.packet.stream_index = self.stream.index
            self.muxer.write_packet(self.packet)

    def finish(self):
        """Drain the codec: every packet it still holds goes to the muxer."""
        if self.finished:
            return
        self.finished = True
        with nogil:
            self.send(NULL)


# ---- video ------------------------------------------------------------------------------------

cdef AVPixelFormat choose_pixel_format(const AVCodec *codec, object name) except? lavu.AV_PIX_FMT_NONE:
    """``name``'s format when the codec takes it, the codec's first format when ``name`` is None."""
    cdef const AVPixelFormat *formats = ffcompat.tc_codec_pix_fmts(codec)
    cdef AVPixelFormat wanted
    cdef int i = 0
    if name is None:
        return formats[0] if formats != NULL and formats[0] != lavu.AV_PIX_FMT_NONE else lavu.AV_PIX_FMT_YUV420P
    wanted = lavu.av_get_pix_fmt(str(name).encode())
    supported = []
    while formats != NULL and formats[i] != lavu.AV_PIX_FMT_NONE:
        if formats[i] == wanted:
            return wanted
        supported.append(pixel_format_name(formats[i]))
        i += 1
    if formats == NULL and wanted != lavu.AV_PIX_FMT_NONE:
        return wanted                       # the codec does not say: let it refuse when opened
    if wanted == lavu.AV_PIX_FMT_NONE:
        problem = f"Unknown pixel format: {name}"
    else:
        problem = f"Specified pixel format {name} is not supported by the {c_str(codec.name)} encoder."
    raise InvalidArgumentError(f"{problem}\nSupported pixel formats for {c_str(codec.name)}: {' '.join(supported)}")


cdef void gather_frame(const uint8_t *base, Py_ssize_t sc, Py_ssize_t sh, Py_ssize_t sw, int height, int width,
                       uint8_t *dst, Py_ssize_t dst_stride) noexcept nogil:
    """Copy one (3, H, W) frame at any strides into G, B, R planes of ``dst_stride``-byte rows."""
    cdef int plane, y, x
    cdef const uint8_t *src
    cdef uint8_t *out
    cdef int channel_of_plane[3]
    channel_of_plane[0], channel_of_plane[1], channel_of_plane[2] = 1, 2, 0
    for plane in range(3):
        for y in range(height):
            src = base + channel_of_plane[plane] * sc + y * sh
            out = dst + (plane * <Py_ssize_t>height + y) * dst_stride
            if sw == 1:
                memcpy(out, src, width)
            else:
                for x in range(width):
                    out[x] = src[x * sw]


cdef extern from "pthread.h" nogil:
    ctypedef unsigned long pthread_t
    int pthread_create(pthread_t *thread, const void *attr, void *(*start)(void *) noexcept nogil, void *arg)
    int pthread_join(pthread_t thread, void **retval)

# Frames of at least this many pixels are converted on a helper thread while the codec encodes the
# previous one (below, a thread costs more than the conversion).
cdef Py_ssize_t OVERLAP_PIXELS = 320 * 240


cdef int input_layout(const Conversion *job) noexcept nogil:
    """How the frame at ``job.base`` is read: PLANAR or PACKED in place, or GATHER (any other steps,
    or a frame whose rows, with what swscale reads past them, do not all lie below ``job.high``)."""
    cdef int layout, plane
    cdef Py_ssize_t row_bytes
    if job.sw == 1 and 0 < job.sh <= INT_MAX:
        layout, row_bytes = PLANAR, job.width
    elif job.sc == 1 and job.sw == 3 and 0 < job.sh <= INT_MAX:
        layout, row_bytes = PACKED, 3 * job.width
    else:
        return GATHER
    if job.base == NULL:
        return layout
    for plane in range(3 if layout == PLANAR else 1):
        if (<size_t>(job.base + plane * job.sc + (job.height - 1) * job.sh) + row_bytes + OVERREAD) > job.high:
            return GATHER
    return layout


cdef void *run_conversion(void *arg) noexcept nogil:
    """Convert one frame (a Conversion) into its AVFrame: sws_scale, after gathering if needed;
    the number of rows converted (or a negative error) goes to ``rows``. Runs on any thread."""
    cdef Conversion *job = <Conversion *>arg
    cdef const uint8_t *planes[3]
    cdef int line[3]
    cdef int plane
    if job.layout == PLANAR:
        planes[0], planes[1], planes[2] = job.base + job.sc, job.base + 2 * job.sc, job.base
        line[0] = line[1] = line[2] = <int>job.sh
    elif job.layout == PACKED:
        planes[0] = job.base
        line[0] = <int>job.sh
    else:
        gather_frame(job.base, job.sc, job.sh, job.sw, job.height, job.width, job.scratch, job.scratch_stride)
        for plane in range(3):
            planes[plane] = job.scratch + plane * job.height * job.scratch_stride
            line[plane] = <int>job.scratch_stride
    job.rows = sws.sws_scale(job.ctx, planes, line, 0, job.height, job.frame.data, job.frame.linesize)
    return NULL


cdef class VideoStreamEncoder(StreamEncoder):
    """``VideoStreamEncoder(muxer, width, height, frame_rate, codec=None, pixel_format=None, crf=None,
    preset=None, extra_options={})``.

    ``codec``: an encoder or codec name, or None for the container's default codec.
    ``extra_options``: str -> str, options of the codec (``tune``, ``colorspace``, ``g``...) or of the
    container (``movflags``...); an option that neither has is an error. Raises
    InvalidArgumentError (a ValueError and a RuntimeError) for anything the codec or container refuses.
    """

    def __init__(self, Muxer muxer, int width, int height, double frame_rate, codec=None, pixel_format=None,
                 crf=None, preset=None, dict extra_options=None):
        cdef int i
        for i in range(NUM_INPUT_LAYOUTS):
            self.scalers[i] = NULL
        self.scratch[0] = self.scratch[1] = NULL
        self.frames[0] = self.frame
        self.frames[1] = lavu.av_frame_alloc()
        if self.frames[1] == NULL:
            raise MemoryError("av_frame_alloc failed")
        self.muxer = muxer
        self.width, self.height = width, height
        self.min_duration_one = True
        if width <= 0 or height <= 0 or lavu.av_image_check_size(width, height, 0, NULL) < 0:
            raise InvalidArgumentError(f"cannot encode {width}x{height} frames: height and width must be > 0 "
                                       f"and the picture not too large")
        if not frame_rate > 0 or frame_rate > INT_MAX:
            raise InvalidArgumentError(f"frame_rate must be > 0, got {frame_rate}")
        if codec is None:
            self.codec = lavc.avcodec_find_encoder(<AVCodecID><int>muxer.default_codec_id("video"))
            if self.codec == NULL:
                raise InvalidArgumentError(
                    f"Video codec not found: the {muxer.format_name} container has no default video codec that "
                    f"this FFmpeg can encode; pass codec=. To see available codecs, run: ffmpeg -encoders")
        else:
            self.codec = find_encoder(str(codec))
            if self.codec == NULL:
                raise InvalidArgumentError(f"Video codec {codec} not found. To see available codecs, run: "
                                           f"ffmpeg -encoders")
        if self.codec.type != lavu.AVMEDIA_TYPE_VIDEO:
            raise InvalidArgumentError(f"{c_str(self.codec.name)} is not a video codec")
        muxer.check_codec(<int>self.codec.id, c_str(self.codec.name))
        cdef AVPixelFormat pix_fmt = choose_pixel_format(self.codec, pixel_format)
        self.ptr = lavc.avcodec_alloc_context3(self.codec)
        if self.ptr == NULL:
            raise MemoryError("avcodec_alloc_context3 failed")
        self.ptr.width, self.ptr.height, self.ptr.pix_fmt = width, height, pix_fmt
        self.ptr.framerate = lavu.av_d2q(frame_rate, INT_MAX)
        self.ptr.time_base = lavu.av_inv_q(self.ptr.framerate)
        set_codec_options(self.ptr, self.codec,
                          codec_options(muxer, self.ptr, self.codec, crf, preset, extra_options or {}))
        self.choose_colours()
        try:
            self.open_codec()
        except RuntimeError as error:
            if self.odd_size_subsampled() and not isinstance(error, InvalidArgumentError):
                raise InvalidArgumentError(str(error)) from None      # a bad size, not a library failure
            raise
        self.stream.r_frame_rate = self.ptr.framerate

    def __dealloc__(self):
        cdef int i
        for i in range(NUM_INPUT_LAYOUTS):
            sws.sws_freeContext(self.scalers[i])
        free(self.scratch[0])
        free(self.scratch[1])
        lavu.av_frame_free(&self.frames[1])          # frames[0] is the base class's frame

    cdef int choose_colours(self) except -1:
        """The matrix and range of the conversion, written into the codec context (and so into the
        stream). YUV: the colorspace option's matrix (BT.601 by default) and the color_range option's
        range (else swscale's: limited, full for yuvj formats); RGB formats: the RGB "matrix"."""
        cdef const AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(self.ptr.pix_fmt)
        cdef int *inv_table
        cdef int *table
        cdef int src_range, brightness, contrast, saturation
        if desc == NULL or desc.flags & (lavu.AV_PIX_FMT_FLAG_HWACCEL | lavu.AV_PIX_FMT_FLAG_BITSTREAM):
            raise InvalidArgumentError(f"cannot convert RGB frames to {pixel_format_name(self.ptr.pix_fmt)}")
        cdef bint rgb = (desc.flags & lavu.AV_PIX_FMT_FLAG_RGB) or (desc.flags & lavu.AV_PIX_FMT_FLAG_PAL)
        cdef bint gray = not rgb and desc.nb_components <= 2
        if rgb:
            if self.ptr.colorspace == lavu.AVCOL_SPC_UNSPECIFIED:
                self.ptr.colorspace = lavu.AVCOL_SPC_RGB
        elif not gray:
            choose_yuv_matrix(self.ptr)
        self.dst_range = -1 if self.ptr.color_range == lavu.AVCOL_RANGE_UNSPECIFIED else \
            int(self.ptr.color_range == lavu.AVCOL_RANGE_JPEG)
        cdef SwsContext *ctx = self.scaler(PLANAR)
        if sws.sws_getColorspaceDetails(ctx, &inv_table, &src_range, &table, &self.dst_range,
                                        &brightness, &contrast, &saturation) < 0:
            raise RuntimeError("sws_getColorspaceDetails failed")
        if not rgb:
            self.ptr.color_range = lavu.AVCOL_RANGE_JPEG if self.dst_range else lavu.AVCOL_RANGE_MPEG
        return 0

    cdef SwsContext *scaler(self, int layout) except NULL nogil:
        """The swscale context from ``layout``'s input format to the codec's, made on first use."""
        cdef int *inv_table
        cdef int *table
        cdef int src_range, dst_range, brightness, contrast, saturation
        cdef const int *coefficients
        cdef SwsContext *ctx = self.scalers[layout]
        cdef AVPixelFormat src_format = lavu.AV_PIX_FMT_GBRP if layout == PLANAR else lavu.AV_PIX_FMT_RGB24
        if ctx != NULL:
            return ctx
        ctx = sws.sws_getContext(self.width, self.height, src_format, self.width, self.height, self.ptr.pix_fmt,
                                 cli_sws_flags(), NULL, NULL, NULL)
        if ctx == NULL:
            with gil:
                raise InvalidArgumentError(f"swscale cannot convert {self.width}x{self.height} RGB frames to "
                                           f"{pixel_format_name(self.ptr.pix_fmt)}")
        if sws.sws_getColorspaceDetails(ctx, &inv_table, &src_range, &table, &dst_range,
                                        &brightness, &contrast, &saturation) < 0:
            sws.sws_freeContext(ctx)
            with gil:
                raise RuntimeError("sws_getColorspaceDetails failed")
        if self.dst_range >= 0:
            dst_range = self.dst_range
        coefficients = sws.sws_getCoefficients(self.ptr.colorspace)
        if sws.sws_setColorspaceDetails(ctx, coefficients, src_range, coefficients, dst_range,
                                        brightness, contrast, saturation) < 0:
            sws.sws_freeContext(ctx)
            with gil:
                raise RuntimeError(f"swscale cannot use colour space {self.ptr.colorspace} for "
                                   f"{pixel_format_name(self.ptr.pix_fmt)}")
        self.scalers[layout] = ctx
        return ctx

    def odd_size_subsampled(self):
        """Whether the width or height is odd where the pixel format halves the chroma."""
        desc = lavu.av_pix_fmt_desc_get(self.ptr.pix_fmt)
        return desc != NULL and bool((self.width & 1 and desc.log2_chroma_w)
                                     or (self.height & 1 and desc.log2_chroma_h))

    def describe_settings(self):
        text = f" for {self.width}x{self.height} {pixel_format_name(self.ptr.pix_fmt)}"
        if self.odd_size_subsampled():
            text += (f"; the width and height must be even for {pixel_format_name(self.ptr.pix_fmt)} with most "
                     f"codecs: use an even size or pixel_format='yuv444p'")
        return text

    @property
    def pixel_format(self):
        return pixel_format_name(self.ptr.pix_fmt)

    @property
    def num_frames(self):
        """Frames added so far."""
        return self.next_pts

    def add_frames(self, size_t address, tuple shape, tuple strides, size_t low, size_t high):
        """Encode ``shape[0]`` frames of shape (3, height, width), uint8, at ``address`` with byte
        ``strides``; the caller's memory spans [low, high) (bounds for swscale's over-reads).

        Frame i + 1 is converted on a helper thread while the codec encodes frame i (for frames of
        at least OVERLAP_PIXELS pixels; smaller ones are not worth a thread).
        """
        cdef Py_ssize_t n = shape[0], step = strides[0], i
        cdef Conversion jobs[2]
        cdef pthread_t helper
        cdef bint threaded, overlap = <Py_ssize_t>self.width * self.height >= OVERLAP_PIXELS
        cdef int current = 0, layout
        check_frames(self.finished, shape, self.height, self.width)
        if n == 0:
            return
        for i in range(2):
            jobs[i].sc, jobs[i].sh, jobs[i].sw = strides[1], strides[2], strides[3]
            jobs[i].width, jobs[i].height, jobs[i].high = self.width, self.height, high
            jobs[i].base = NULL
        layout = input_layout(&jobs[0])
        self.scaler(PACKED if layout == PACKED else PLANAR)
        with nogil:
            self.prepare(&jobs[0], 0, <const uint8_t *>address)
            run_conversion(&jobs[0])
            for i in range(n):
                threaded = False
                if i + 1 < n:
                    self.prepare(&jobs[1 - current], 1 - current, <const uint8_t *>address + (i + 1) * step)
                    threaded = overlap and pthread_create(&helper, NULL, run_conversion, &jobs[1 - current]) == 0
                try:
                    self.send_converted(&jobs[current])
                finally:
                    if threaded:
                        pthread_join(helper, NULL)
                if i + 1 < n and not threaded:
                    run_conversion(&jobs[1 - current])
                current = 1 - current

    cdef int prepare(self, Conversion *job, int slot, const uint8_t *base) except -1 nogil:
        """Set up the conversion of the frame at ``base`` into frame buffers ``slot`` (made writable)."""
        cdef AVFrame *frame = self.frames[slot]
        cdef int ret
        job.base = base
        job.layout = input_layout(job)
        if job.layout == GATHER:
            self.ensure_scratch(slot)
        job.scratch, job.scratch_stride = self.scratch[slot], self.scratch_stride
        job.ctx = self.scalers[<int>PACKED if job.layout == PACKED else <int>PLANAR]
        if not lavu.av_frame_is_writable(frame):     # the codec still holds that frame's buffers
            lavu.av_frame_unref(frame)
            frame.format = self.ptr.pix_fmt
            frame.width = self.width
            frame.height = self.height
            ret = lavu.av_frame_get_buffer(frame, 0)
            if ret < 0:
                with gil:
                    check_av(ret, "av_frame_get_buffer")
        frame.colorspace = self.ptr.colorspace
        frame.color_range = self.ptr.color_range
        job.frame = frame
        job.rows = -1
        return 0

    cdef int ensure_scratch(self, int slot) except -1 nogil:
        """Room for one frame gathered into planes (G, B, R), rows padded for swscale's readers."""
        if self.scratch[slot] != NULL:
            return 0
        self.scratch_stride = (self.width + OVERREAD + 63) & ~(<Py_ssize_t>63)
        self.scratch[slot] = <uint8_t *>calloc(<size_t>self.scratch_stride * (3 * self.height + 1), 1)
        if self.scratch[slot] == NULL:
            with gil:
                raise MemoryError(f"cannot allocate a {self.width}x{self.height} frame")
        return 0

    cdef int send_converted(self, Conversion *job) except -1 nogil:
        """Send a converted frame to the codec, as the next frame of the stream."""
        if job.rows != self.height:
            with gil:
                if job.rows < 0:
                    check_av(job.rows, "sws_scale")
                raise RuntimeError(f"sws_scale converted {job.rows} rows of {self.height}")
        job.frame.pts = self.next_pts
        self.next_pts += 1
        return self.send(job.frame)


# ---- audio ------------------------------------------------------------------------------------

cdef AVSampleFormat best_sample_format(const AVCodec *codec) noexcept:
    """The codec's sample format nearest the float32 input (TorchCodec's order of preference)."""
    cdef const AVSampleFormat *formats = ffcompat.tc_codec_sample_fmts(codec)
    cdef int k, i
    if formats == NULL:
        return lavu.AV_SAMPLE_FMT_FLTP
    for k in range(12):
        i = 0
        while formats[i] != lavu.AV_SAMPLE_FMT_NONE:
            if formats[i] == PREFERRED_SAMPLE_FORMATS[k]:
                return formats[i]
            i += 1
    return formats[0]


cdef int check_channels(const AVCodec *codec, int channels) except -1:
    cdef const AVChannelLayout *layouts = ffcompat.tc_codec_ch_layouts(codec)
    cdef int i = 0
    if layouts == NULL:
        return 0
    supported = []
    while layouts[i].nb_channels != 0:
        if layouts[i].nb_channels == channels:
            return 0
        supported.append(str(layouts[i].nb_channels))
        i += 1
    raise InvalidArgumentError(f"Desired number of channels ({channels}) is not supported by the encoder. "
                               f"Supported number of channels are: {', '.join(supported)}.")


cdef int check_sample_rate(const AVCodec *codec, int rate) except -1:
    cdef const int *rates = ffcompat.tc_codec_sample_rates(codec)
    cdef int i = 0
    if rates == NULL:
        return 0
    supported = []
    while rates[i] != 0:
        if rates[i] == rate:
            return 0
        supported.append(str(rates[i]))
        i += 1
    raise InvalidArgumentError(f"invalid sample rate={rate}. Supported sample rate values are: {', '.join(supported)}")


cdef class AudioStreamEncoder(StreamEncoder):
    """``AudioStreamEncoder(muxer, in_rate, in_channels, bit_rate=None, out_channels=None, out_rate=None)``:
    the container's default audio codec, fed float32 samples of ``in_channels`` channels at
    ``in_rate`` Hz, encoding ``out_channels`` channels at ``out_rate`` Hz (defaults: the input's)."""

    def __init__(self, Muxer muxer, int in_rate, int in_channels, bit_rate=None, out_channels=None, out_rate=None):
        cdef AVChannelLayout in_layout
        cdef int i
        self.gathered = NULL
        self.converted = NULL
        self.converted_capacity = 0
        self.fifo = NULL
        self.resampler = None
        self.muxer = muxer
        self.in_rate, self.in_channels = in_rate, in_channels
        self.out_rate = in_rate if out_rate is None else out_rate
        self.out_channels = in_channels if out_channels is None else out_channels
        if in_rate <= 0 or self.out_rate <= 0:
            raise InvalidArgumentError(f"sample_rate must be > 0, got {in_rate if in_rate <= 0 else self.out_rate}")
        if not 0 < in_channels <= lavu.AV_NUM_DATA_POINTERS:
            raise InvalidArgumentError(f"num_channels must be > 0 and <= {lavu.AV_NUM_DATA_POINTERS}, "
                                       f"got {in_channels}")
        if not 0 < self.out_channels <= MAX_AUDIO_CHANNELS:
            raise InvalidArgumentError(f"num_channels must be > 0 and <= {MAX_AUDIO_CHANNELS}, got {self.out_channels}")
        self.codec = lavc.avcodec_find_encoder(<AVCodecID><int>muxer.default_codec_id("audio"))
        if self.codec == NULL:
            raise InvalidArgumentError(f"Codec not found: the {muxer.format_name} container has no default audio "
                                       f"codec that this FFmpeg can encode")
        if bit_rate is not None and bit_rate < 0:
            raise InvalidArgumentError(f"bit_rate={bit_rate} must be >= 0.")
        check_channels(self.codec, self.out_channels)
        check_sample_rate(self.codec, self.out_rate)
        self.ptr = lavc.avcodec_alloc_context3(self.codec)
        if self.ptr == NULL:
            raise MemoryError("avcodec_alloc_context3 failed")
        self.ptr.bit_rate = bit_rate or 0
        lavu.av_channel_layout_default(&self.ptr.ch_layout, self.out_channels)
        self.ptr.sample_rate = self.out_rate
        self.ptr.time_base.num, self.ptr.time_base.den = 1, self.out_rate
        self.ptr.sample_fmt = best_sample_format(self.codec)
        self.open_codec()
        self.frame_size = self.ptr.frame_size if self.ptr.frame_size > 0 else 256
        self.fifo = lavu.av_audio_fifo_alloc(self.ptr.sample_fmt, self.out_channels, 2 * self.frame_size)
        if self.fifo == NULL:
            raise MemoryError("av_audio_fifo_alloc failed")
        if (self.ptr.sample_fmt != lavu.AV_SAMPLE_FMT_FLTP or self.out_rate != in_rate
                or self.out_channels != in_channels):
            self.resampler = Resampler(in_rate, self.out_rate, self.out_channels, <int>self.ptr.sample_fmt)
            lavu.av_channel_layout_default(&in_layout, in_channels)
            with nogil:
                self.resampler.set_input(lavu.AV_SAMPLE_FMT_FLTP, &in_layout)
        self.gathered = <float *>malloc(sizeof(float) * <size_t>AUDIO_CHUNK * in_channels)
        if self.gathered == NULL:
            raise MemoryError("cannot allocate the sample buffer")

    def __dealloc__(self):
        lavu.av_audio_fifo_free(self.fifo)
        free(self.gathered)
        free(self.converted)

    def describe_settings(self):
        return (f" for {self.out_channels} channels at {self.out_rate} Hz in "
                f"{c_str(lavu.av_get_sample_fmt_name(self.ptr.sample_fmt))}")

    @property
    def sample_format(self):
        return c_str(lavu.av_get_sample_fmt_name(self.ptr.sample_fmt))

    def add_samples(self, size_t address, tuple shape, tuple strides):
        """Encode the (channels, samples) float32 array at ``address`` with byte ``strides``."""
        cdef Py_ssize_t channels = shape[0], count = shape[1], sc = strides[0], ss = strides[1]
        cdef Py_ssize_t position = 0, c, k
        cdef int step
        cdef const uint8_t *planes[MAX_AUDIO_CHANNELS]
        cdef const uint8_t *base
        if self.finished:
            raise RuntimeError("Cannot add samples after close() was called.")
        if channels != self.in_channels:
            raise InvalidArgumentError(f"Expected {self.in_channels} channels, got {channels}")
        with nogil:
            while position < count:
                step = <int>min(<Py_ssize_t>AUDIO_CHUNK, count - position)
                base = <const uint8_t *>address + position * ss
                for c in range(channels):
                    if ss == sizeof(float):     # rows of samples: read in place
                        planes[c] = base + c * sc
                    else:
                        for k in range(step):
                            self.gathered[c * AUDIO_CHUNK + k] = (<const float *>(base + c * sc + k * ss))[0]
                        planes[c] = <const uint8_t *>(self.gathered + c * AUDIO_CHUNK)
                self.push(planes, step)
                position += step

    cdef int ensure_converted(self, int samples) except -1 nogil:
        """Room for ``samples`` converted samples per channel in ``converted_planes``."""
        cdef int bytes_per_sample = lavu.av_get_bytes_per_sample(self.ptr.sample_fmt)
        cdef bint planar = lavu.av_sample_fmt_is_planar(self.ptr.sample_fmt)
        cdef size_t plane_bytes
        cdef int c
        if samples <= self.converted_capacity:
            return 0
        plane_bytes = <size_t>samples * bytes_per_sample * (1 if planar else self.out_channels)
        free(self.converted)
        self.converted = <uint8_t *>malloc(plane_bytes * (self.out_channels if planar else 1))
        if self.converted == NULL:
            self.converted_capacity = 0
            with gil:
                raise MemoryError("cannot allocate the converted samples")
        for c in range(self.out_channels if planar else 1):
            self.converted_planes[c] = self.converted + c * plane_bytes
        self.converted_capacity = samples
        return 0

    cdef int push(self, const uint8_t **planes, int count) except -1 nogil:
        """Convert ``count`` float32 samples (one row per input channel) into the FIFO; encode the
        frames that are complete."""
        cdef int n = count, written
        cdef void **fifo_planes = <void **>planes
        if self.resampler is not None:
            self.ensure_converted(self.resampler.max_output(count))
            n = self.resampler.convert_planes(planes, count, self.converted_planes, self.converted_capacity)
            fifo_planes = <void **>self.converted_planes
        if n > 0:
            written = lavu.av_audio_fifo_write(self.fifo, fifo_planes, n)
            if written != n:
                with gil:
                    if written < 0:
                        check_av(written, "av_audio_fifo_write")
                    raise RuntimeError(f"Tried to write {n} samples, but only wrote {written}")
        return self.encode_fifo(False)

    cdef int encode_fifo(self, bint final) except -1 nogil:
        """Encode the FIFO's samples in frames of frame_size; ``final``: the last, shorter one too."""
        cdef AVFrame *frame = self.frame
        cdef int available, n, ret
        while True:
            available = lavu.av_audio_fifo_size(self.fifo)
            if available == 0 or (available < self.frame_size and not final):
                return 0
            n = min(available, self.frame_size)
            if not lavu.av_frame_is_writable(frame):
                lavu.av_frame_unref(frame)
                frame.format = self.ptr.sample_fmt
                frame.sample_rate = self.out_rate
                frame.nb_samples = self.frame_size
                ret = lavu.av_channel_layout_copy(&frame.ch_layout, &self.ptr.ch_layout)
                if ret >= 0:
                    ret = lavu.av_frame_get_buffer(frame, 0)
                if ret < 0:
                    with gil:
                        check_av(ret, "av_frame_get_buffer")
            ret = lavu.av_audio_fifo_read(self.fifo, <void **>frame.extended_data, n)
            if ret != n:
                with gil:
                    if ret < 0:
                        check_av(ret, "av_audio_fifo_read")
                    raise RuntimeError(f"Tried to read {n} samples, but only read {ret}")
            frame.nb_samples = n
            frame.pts = self.next_pts
            self.next_pts += n
            self.send(frame)

    def finish(self):
        """Drain the resampler and the FIFO (the last frame may be short), then the codec."""
        cdef int n
        if self.finished:
            return
        with nogil:
            if self.resampler is not None:
                while True:
                    self.ensure_converted(max(self.resampler.max_output(0), 1))
                    n = self.resampler.drain(self.converted_planes, self.converted_capacity)
                    if n <= 0:
                        break
                    if lavu.av_audio_fifo_write(self.fifo, <void **>self.converted_planes, n) != n:
                        with gil:
                            raise RuntimeError("av_audio_fifo_write failed")
            self.encode_fifo(True)
        StreamEncoder.finish(self)
