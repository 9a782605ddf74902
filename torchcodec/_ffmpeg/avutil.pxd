# Declarations of libavutil, one block per header; C names unchanged; only what torchcodec uses.
from libc.stdint cimport int64_t, int32_t, uint8_t, uint64_t


cdef extern from "libavutil/avutil.h" nogil:
    enum AVMediaType:
        AVMEDIA_TYPE_UNKNOWN
        AVMEDIA_TYPE_VIDEO
        AVMEDIA_TYPE_AUDIO
        AVMEDIA_TYPE_DATA
        AVMEDIA_TYPE_SUBTITLE
        AVMEDIA_TYPE_ATTACHMENT
    int64_t AV_NOPTS_VALUE
    int AV_TIME_BASE
    const char *av_version_info()
    unsigned avutil_version()
    const char *av_get_media_type_string(AVMediaType media_type)


cdef extern from "libavutil/rational.h" nogil:
    ctypedef struct AVRational:
        int num
        int den
    double av_q2d(AVRational a)
    AVRational av_d2q(double d, int max)
    AVRational av_inv_q(AVRational q)


cdef extern from "libavutil/mathematics.h" nogil:
    enum AVRounding:
        AV_ROUND_ZERO
        AV_ROUND_INF
        AV_ROUND_DOWN
        AV_ROUND_UP
        AV_ROUND_NEAR_INF
        AV_ROUND_PASS_MINMAX
    int64_t av_rescale_q(int64_t a, AVRational bq, AVRational cq)
    int64_t av_rescale_rnd(int64_t a, int64_t b, int64_t c, AVRounding rnd)
    int64_t av_rescale_q_rnd(int64_t a, AVRational bq, AVRational cq, AVRounding rnd)


cdef extern from "libavutil/error.h" nogil:
    int AVERROR(int e)
    int AVERROR_EOF
    int AVERROR_INVALIDDATA
    int AVERROR_DECODER_NOT_FOUND
    int AVERROR_DEMUXER_NOT_FOUND
    int AVERROR_STREAM_NOT_FOUND
    int AVERROR_EXIT
    int AVERROR_UNKNOWN
    int AV_ERROR_MAX_STRING_SIZE
    int av_strerror(int errnum, char *errbuf, size_t errbuf_size)


cdef extern from "libavutil/mem.h" nogil:
    void *av_malloc(size_t size)
    void av_free(void *ptr)
    void av_freep(void *ptr)


cdef extern from "libavutil/opt.h" nogil:
    enum AVOptionType:
        AV_OPT_TYPE_FLAGS
        AV_OPT_TYPE_INT
        AV_OPT_TYPE_INT64
        AV_OPT_TYPE_DOUBLE
        AV_OPT_TYPE_FLOAT
        AV_OPT_TYPE_STRING
        AV_OPT_TYPE_RATIONAL
        AV_OPT_TYPE_CONST
        AV_OPT_TYPE_BOOL
    ctypedef struct AVOption:
        const char *name
        const char *help
        AVOptionType type
        double min
        double max
        int flags
        const char *unit
    int AV_OPT_SEARCH_CHILDREN
    int AV_OPT_SEARCH_FAKE_OBJ
    const AVOption *av_opt_find2(void *obj, const char *name, const char *unit, int opt_flags,
                                 int search_flags, void **target_obj)
    const AVOption *av_opt_next(const void *obj, const AVOption *prev)
    int av_opt_set_dict2(void *obj, AVDictionary **options, int search_flags)


cdef extern from "<stdarg.h>" nogil:
    ctypedef struct va_list:
        pass


cdef extern from "libavutil/log.h" nogil:
    int AV_LOG_QUIET
    int AV_LOG_PANIC
    int AV_LOG_FATAL
    int AV_LOG_ERROR
    int AV_LOG_WARNING
    int AV_LOG_INFO
    int AV_LOG_VERBOSE
    int AV_LOG_DEBUG
    int AV_LOG_TRACE
    void av_log_set_level(int level)
    int av_log_get_level()
    void av_log_set_callback(void (*callback)(void *avcl, int level, const char *fmt, va_list vl) noexcept nogil)
    int av_log_format_line2(void *ptr, int level, const char *fmt, va_list vl, char *line, int line_size,
                            int *print_prefix)
    ctypedef struct AVClass:
        const char *class_name
        const AVOption *option


cdef extern from "libavutil/dict.h" nogil:
    ctypedef struct AVDictionary:
        pass
    ctypedef struct AVDictionaryEntry:
        char *key
        char *value
    int AV_DICT_IGNORE_SUFFIX
    AVDictionaryEntry *av_dict_get(const AVDictionary *m, const char *key,
                                   const AVDictionaryEntry *prev, int flags)
    int av_dict_set(AVDictionary **pm, const char *key, const char *value, int flags)
    int av_dict_count(const AVDictionary *m)
    void av_dict_free(AVDictionary **m)


cdef extern from "libavutil/pixfmt.h" nogil:
    enum AVPixelFormat:
        AV_PIX_FMT_NONE
        AV_PIX_FMT_YUV420P
        AV_PIX_FMT_YUVJ420P
        AV_PIX_FMT_YUV422P
        AV_PIX_FMT_YUVJ422P
        AV_PIX_FMT_RGB24
        AV_PIX_FMT_RGB48
        AV_PIX_FMT_GBRP
        AV_PIX_FMT_CUDA
        AV_PIX_FMT_NV12
        AV_PIX_FMT_P016LE
        AV_PIX_FMT_YUV444P
        AV_PIX_FMT_YUV444P16LE
        AV_PIX_FMT_YUV422P14LE
    AVPixelFormat av_get_pix_fmt(const char *name)
    enum AVColorRange:
        AVCOL_RANGE_UNSPECIFIED
        AVCOL_RANGE_MPEG
        AVCOL_RANGE_JPEG
    enum AVColorPrimaries:
        AVCOL_PRI_UNSPECIFIED
    enum AVColorTransferCharacteristic:
        AVCOL_TRC_UNSPECIFIED
    enum AVColorSpace:
        AVCOL_SPC_RGB
        AVCOL_SPC_BT709
        AVCOL_SPC_UNSPECIFIED
        AVCOL_SPC_BT470BG
        AVCOL_SPC_SMPTE170M
        AVCOL_SPC_BT2020_NCL


cdef extern from "libavutil/pixdesc.h" nogil:
    ctypedef struct AVComponentDescriptor:
        int plane
        int step
        int offset
        int shift
        int depth
    ctypedef struct AVPixFmtDescriptor:
        const char *name
        uint8_t nb_components
        uint8_t log2_chroma_w
        uint8_t log2_chroma_h
        uint64_t flags
        AVComponentDescriptor comp[4]
    int AV_PIX_FMT_FLAG_BE
    int AV_PIX_FMT_FLAG_PAL
    int AV_PIX_FMT_FLAG_BITSTREAM
    int AV_PIX_FMT_FLAG_HWACCEL
    int AV_PIX_FMT_FLAG_PLANAR
    int AV_PIX_FMT_FLAG_RGB
    int AV_PIX_FMT_FLAG_FLOAT
    int AV_PIX_FMT_FLAG_ALPHA
    const AVPixFmtDescriptor *av_pix_fmt_desc_get(AVPixelFormat pix_fmt)
    const char *av_get_pix_fmt_name(AVPixelFormat pix_fmt)
    int av_pix_fmt_count_planes(AVPixelFormat pix_fmt)
    const char *av_color_range_name(AVColorRange range)
    const char *av_color_primaries_name(AVColorPrimaries primaries)
    const char *av_color_transfer_name(AVColorTransferCharacteristic transfer)
    const char *av_color_space_name(AVColorSpace space)


cdef extern from "libavutil/samplefmt.h" nogil:
    enum AVSampleFormat:
        AV_SAMPLE_FMT_NONE
        AV_SAMPLE_FMT_U8
        AV_SAMPLE_FMT_S16
        AV_SAMPLE_FMT_S32
        AV_SAMPLE_FMT_FLT
        AV_SAMPLE_FMT_DBL
        AV_SAMPLE_FMT_U8P
        AV_SAMPLE_FMT_S16P
        AV_SAMPLE_FMT_S32P
        AV_SAMPLE_FMT_FLTP
        AV_SAMPLE_FMT_DBLP
        AV_SAMPLE_FMT_S64
        AV_SAMPLE_FMT_S64P
    const char *av_get_sample_fmt_name(AVSampleFormat sample_fmt)
    int av_get_bytes_per_sample(AVSampleFormat sample_fmt)
    int av_sample_fmt_is_planar(AVSampleFormat sample_fmt)
    AVSampleFormat av_get_packed_sample_fmt(AVSampleFormat sample_fmt)
    AVSampleFormat av_get_planar_sample_fmt(AVSampleFormat sample_fmt)


cdef extern from "libavutil/channel_layout.h" nogil:
    enum AVChannelOrder:
        AV_CHANNEL_ORDER_UNSPEC
        AV_CHANNEL_ORDER_NATIVE
    ctypedef struct AVChannelLayout:
        AVChannelOrder order
        int nb_channels
    void av_channel_layout_default(AVChannelLayout *ch_layout, int nb_channels)
    void av_channel_layout_uninit(AVChannelLayout *channel_layout)
    int av_channel_layout_copy(AVChannelLayout *dst, const AVChannelLayout *src)
    int av_channel_layout_compare(const AVChannelLayout *chl, const AVChannelLayout *chl1)
    int av_channel_layout_describe(const AVChannelLayout *channel_layout, char *buf, size_t buf_size)


cdef extern from "libavutil/buffer.h" nogil:
    ctypedef struct AVBufferRef:
        uint8_t *data
        size_t size
    AVBufferRef *av_buffer_ref(const AVBufferRef *buf)
    void av_buffer_unref(AVBufferRef **buf)
    AVBufferRef *av_buffer_create(uint8_t *data, size_t size, void (*free)(void *opaque, uint8_t *data) noexcept nogil,
                                  void *opaque, int flags)


cdef extern from "libavutil/frame.h" nogil:
    int AV_NUM_DATA_POINTERS
    ctypedef struct AVFrame:
        uint8_t *data[8]
        uint8_t **extended_data
        int linesize[8]
        int width
        int height
        int nb_samples
        int format
        int64_t pts
        int64_t pkt_dts
        int64_t best_effort_timestamp
        int sample_rate
        AVChannelLayout ch_layout
        AVColorRange color_range
        AVColorPrimaries color_primaries
        AVColorTransferCharacteristic color_trc
        AVColorSpace colorspace
        int flags
        void *opaque
        AVBufferRef *hw_frames_ctx
        size_t crop_top
        size_t crop_bottom
        size_t crop_left
        size_t crop_right
        AVBufferRef *buf[8]
    AVFrame *av_frame_alloc()
    void av_frame_free(AVFrame **frame)
    void av_frame_unref(AVFrame *frame)
    void av_frame_move_ref(AVFrame *dst, AVFrame *src)
    int av_frame_ref(AVFrame *dst, const AVFrame *src)
    int av_frame_get_buffer(AVFrame *frame, int align)
    int av_frame_is_writable(AVFrame *frame)


cdef extern from "libavutil/imgutils.h" nogil:
    int av_image_check_size(unsigned int w, unsigned int h, int log_offset, void *log_ctx)
    int av_image_get_linesize(AVPixelFormat pix_fmt, int width, int plane)


cdef extern from "libavutil/audio_fifo.h" nogil:
    ctypedef struct AVAudioFifo:
        pass
    AVAudioFifo *av_audio_fifo_alloc(AVSampleFormat sample_fmt, int channels, int nb_samples)
    void av_audio_fifo_free(AVAudioFifo *af)
    int av_audio_fifo_write(AVAudioFifo *af, void **data, int nb_samples)
    int av_audio_fifo_read(AVAudioFifo *af, void **data, int nb_samples)
    int av_audio_fifo_size(AVAudioFifo *af)


cdef extern from "libavutil/display.h" nogil:
    double av_display_rotation_get(const int32_t *matrix)


cdef extern from "libavutil/hwcontext.h" nogil:
    enum AVHWDeviceType:
        AV_HWDEVICE_TYPE_NONE
        AV_HWDEVICE_TYPE_CUDA
    ctypedef struct AVHWDeviceContext:
        AVHWDeviceType type
        void *hwctx             # AVCUDADeviceContext for AV_HWDEVICE_TYPE_CUDA (see _decoder.pyx)
    ctypedef struct AVHWFramesContext:
        AVPixelFormat format
        AVPixelFormat sw_format
        int width
        int height
    AVHWDeviceType av_hwdevice_iterate_types(AVHWDeviceType prev)
    AVBufferRef *av_hwdevice_ctx_alloc(AVHWDeviceType type)
    int av_hwdevice_ctx_init(AVBufferRef *ref)
    AVBufferRef *av_hwframe_ctx_alloc(AVBufferRef *device_ctx)
    int av_hwframe_ctx_init(AVBufferRef *ref)
    int av_hwframe_get_buffer(AVBufferRef *hwframe_ctx, AVFrame *frame, int flags)
