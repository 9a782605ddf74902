# Declarations of libavcodec, one block per header; C names unchanged; only what torchcodec uses.
from libc.stdint cimport int64_t, uint8_t, uint32_t
from torchcodec._ffmpeg.avutil cimport (
    AVChannelLayout, AVClass, AVColorPrimaries, AVColorRange, AVColorSpace, AVColorTransferCharacteristic,
    AVBufferRef, AVDictionary, AVFrame, AVHWDeviceType, AVMediaType, AVPixelFormat, AVRational, AVSampleFormat,
)


cdef extern from "libavcodec/codec_id.h" nogil:
    enum AVCodecID:
        AV_CODEC_ID_NONE
        AV_CODEC_ID_MPEG1VIDEO
        AV_CODEC_ID_MPEG2VIDEO
        AV_CODEC_ID_MPEG4
        AV_CODEC_ID_H264
        AV_CODEC_ID_VP8
        AV_CODEC_ID_VP9
        AV_CODEC_ID_HEVC
        AV_CODEC_ID_AV1
        AV_CODEC_ID_MP1
        AV_CODEC_ID_MP2
        AV_CODEC_ID_MP3
        AV_CODEC_ID_VORBIS
    const char *avcodec_get_name(AVCodecID id)


cdef extern from "libavcodec/codec_desc.h" nogil:
    int AV_CODEC_PROP_INTRA_ONLY
    int AV_CODEC_PROP_LOSSLESS
    ctypedef struct AVCodecDescriptor:
        AVCodecID id
        const char *name
        int props
    const AVCodecDescriptor *avcodec_descriptor_get(AVCodecID id)
    const AVCodecDescriptor *avcodec_descriptor_get_by_name(const char *name)


cdef extern from "libavcodec/codec.h" nogil:
    int AV_CODEC_CAP_DELAY
    int AV_CODEC_CAP_SMALL_LAST_FRAME
    int AV_CODEC_CAP_EXPERIMENTAL
    int AV_CODEC_CAP_VARIABLE_FRAME_SIZE
    ctypedef struct AVCodec:
        const char *name
        const char *long_name
        AVMediaType type
        AVCodecID id
        int capabilities
        const AVClass *priv_class
    const AVCodec *avcodec_find_decoder(AVCodecID id)
    const AVCodec *avcodec_find_decoder_by_name(const char *name)
    const AVCodec *avcodec_find_encoder(AVCodecID id)
    const AVCodec *avcodec_find_encoder_by_name(const char *name)
    int av_codec_is_encoder(const AVCodec *codec)
    const AVCodec *av_codec_iterate(void **opaque)
    ctypedef struct AVCodecHWConfig:
        AVPixelFormat pix_fmt
        int methods
        AVHWDeviceType device_type
    const AVCodecHWConfig *avcodec_get_hw_config(const AVCodec *codec, int index)


cdef extern from "libavcodec/codec_par.h" nogil:
    ctypedef struct AVCodecParameters:
        AVMediaType codec_type
        AVCodecID codec_id
        uint32_t codec_tag
        uint8_t *extradata
        int extradata_size
        int format
        int64_t bit_rate
        int bits_per_coded_sample
        int bits_per_raw_sample
        int profile
        int level
        int width
        int height
        AVRational sample_aspect_ratio
        int field_order                 # enum AVFieldOrder
        AVColorRange color_range
        AVColorPrimaries color_primaries
        AVColorTransferCharacteristic color_trc
        AVColorSpace color_space
        int chroma_location             # enum AVChromaLocation
        int video_delay
        AVChannelLayout ch_layout
        int sample_rate
        int block_align
        int frame_size
        int initial_padding
        int trailing_padding
        int seek_preroll
    int avcodec_parameters_copy(AVCodecParameters *dst, const AVCodecParameters *src)


cdef extern from "libavcodec/packet.h" nogil:
    int AV_PKT_FLAG_KEY
    int AV_PKT_FLAG_CORRUPT
    int AV_PKT_FLAG_DISCARD
    ctypedef struct AVPacket:
        int64_t pts
        int64_t dts
        uint8_t *data
        int size
        int stream_index
        int flags
        int64_t duration
        int64_t pos
    AVPacket *av_packet_alloc()
    void av_packet_free(AVPacket **pkt)
    void av_packet_unref(AVPacket *pkt)
    int av_packet_ref(AVPacket *dst, const AVPacket *src)
    void av_packet_rescale_ts(AVPacket *pkt, AVRational tb_src, AVRational tb_dst)


cdef extern from "libavcodec/avcodec.h" nogil:
    int AVDISCARD_DEFAULT
    int AVDISCARD_NONREF
    int AVDISCARD_ALL
    int FF_THREAD_FRAME
    int FF_THREAD_SLICE
    int AV_CODEC_FLAG_GLOBAL_HEADER
    int FF_COMPLIANCE_NORMAL
    ctypedef struct AVCodecContext:
        AVMediaType codec_type
        const AVCodec *codec
        AVCodecID codec_id
        void *priv_data
        int64_t bit_rate
        int flags
        AVRational time_base
        AVRational framerate
        int width
        int height
        AVPixelFormat pix_fmt
        AVPixelFormat sw_pix_fmt
        AVColorRange color_range
        AVColorSpace colorspace
        int thread_count
        int thread_type
        int active_thread_type
        int has_b_frames
        int skip_frame
        AVRational pkt_timebase
        int sample_rate
        AVSampleFormat sample_fmt
        AVChannelLayout ch_layout
        int frame_size
        AVBufferRef *hw_device_ctx
        AVBufferRef *hw_frames_ctx
        AVPixelFormat (*get_format)(AVCodecContext *s, const AVPixelFormat *fmt) noexcept nogil
    AVPixelFormat avcodec_default_get_format(AVCodecContext *s, const AVPixelFormat *fmt)
    AVCodecContext *avcodec_alloc_context3(const AVCodec *codec)
    void avcodec_free_context(AVCodecContext **avctx)
    int avcodec_parameters_to_context(AVCodecContext *codec, const AVCodecParameters *par)
    int avcodec_open2(AVCodecContext *avctx, const AVCodec *codec, AVDictionary **options)
    int avcodec_send_packet(AVCodecContext *avctx, const AVPacket *avpkt)
    int avcodec_receive_frame(AVCodecContext *avctx, AVFrame *frame)
    int avcodec_send_frame(AVCodecContext *avctx, const AVFrame *frame)
    int avcodec_receive_packet(AVCodecContext *avctx, AVPacket *avpkt)
    int avcodec_parameters_from_context(AVCodecParameters *par, const AVCodecContext *codec)
    void avcodec_flush_buffers(AVCodecContext *avctx)
    unsigned avcodec_version()
    const char *avcodec_license()


cdef extern from "libavcodec/bsf.h" nogil:
    ctypedef struct AVBitStreamFilter:
        const char *name
    ctypedef struct AVBSFContext:
        const AVBitStreamFilter *filter
        AVCodecParameters *par_in
        AVCodecParameters *par_out
        AVRational time_base_in
    const AVBitStreamFilter *av_bsf_get_by_name(const char *name)
    int av_bsf_alloc(const AVBitStreamFilter *filter, AVBSFContext **ctx)
    int av_bsf_init(AVBSFContext *ctx)
    int av_bsf_send_packet(AVBSFContext *ctx, AVPacket *pkt)
    int av_bsf_receive_packet(AVBSFContext *ctx, AVPacket *pkt)
    void av_bsf_flush(AVBSFContext *ctx)
    void av_bsf_free(AVBSFContext **ctx)
