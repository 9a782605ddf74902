/* torchcodec: the one place where FFmpeg version differences are handled.
 *
 * Supported: FFmpeg 5.1 (libavcodec 59.37) through 7.x. Each helper hides one API change behind a
 * small inline function; Cython code declares them in torchcodec/_ffmpeg/ffcompat.pxd and never
 * tests FFmpeg versions itself.
 */
#ifndef TORCHCODEC_FFCOMPAT_H
#define TORCHCODEC_FFCOMPAT_H

#include <stdint.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/avutil.h>
#include <libavutil/channel_layout.h>
#include <libavutil/display.h>
#include <libavutil/error.h>
#include <libavutil/frame.h>

/* AVFrame.duration arrived in libavutil 57.30 (FFmpeg 6.0); pkt_duration left in 7.0. */
static inline int64_t tc_frame_duration(const AVFrame *frame)
{
#if LIBAVUTIL_VERSION_INT >= AV_VERSION_INT(57, 30, 100)
    return frame->duration;
#else
    return frame->pkt_duration;
#endif
}

/* Set the duration of a frame made outside libavcodec (NVDEC's): the field tc_frame_duration reads. */
static inline void tc_frame_set_duration(AVFrame *frame, int64_t duration)
{
#if LIBAVUTIL_VERSION_INT >= AV_VERSION_INT(57, 30, 100)
    frame->duration = duration;
#else
    frame->pkt_duration = duration;
#endif
}

/* The pts of a decoded frame, falling back to its dts when the pts is missing. */
static inline int64_t tc_frame_pts(const AVFrame *frame)
{
    if (frame->pts != AV_NOPTS_VALUE)
        return frame->pts;
    if (frame->best_effort_timestamp != AV_NOPTS_VALUE)
        return frame->best_effort_timestamp;
    return frame->pkt_dts;
}

/* Whether a decoded frame is a key frame (AVFrame.key_frame gave way to AV_FRAME_FLAG_KEY in 6.1). */
static inline int tc_frame_is_key(const AVFrame *frame)
{
#ifdef AV_FRAME_FLAG_KEY
    return (frame->flags & AV_FRAME_FLAG_KEY) != 0;
#else
    return frame->key_frame != 0;
#endif
}

/* The pts of a packet, falling back to its dts. */
static inline int64_t tc_packet_pts(const AVPacket *packet)
{
    return packet->pts != AV_NOPTS_VALUE ? packet->pts : packet->dts;
}

/* The stream's display matrix (9 int32, see libavutil/display.h) or NULL.
 * FFmpeg 6.1 moved stream side data into AVCodecParameters.coded_side_data and 7.0 removed
 * av_stream_get_side_data(). */
static inline const int32_t *tc_stream_display_matrix(const AVStream *stream)
{
#if LIBAVFORMAT_VERSION_INT >= AV_VERSION_INT(60, 15, 100)
    const AVPacketSideData *sd = av_packet_side_data_get(stream->codecpar->coded_side_data,
                                                         stream->codecpar->nb_coded_side_data,
                                                         AV_PKT_DATA_DISPLAYMATRIX);
    if (sd == NULL || sd->size < 9 * (int)sizeof(int32_t))
        return NULL;
    return (const int32_t *)sd->data;
#else
    size_t size = 0;
    const uint8_t *data = av_stream_get_side_data(stream, AV_PKT_DATA_DISPLAYMATRIX, &size);
    if (data == NULL || size < 9 * sizeof(int32_t))
        return NULL;
    return (const int32_t *)data;
#endif
}

/* Number of audio channels of codec parameters (AVChannelLayout since FFmpeg 5.1). */
static inline int tc_codecpar_channels(const AVCodecParameters *par)
{
    return par->ch_layout.nb_channels;
}

/* The channel order of codec parameters as the index cache stores it: AV_CHANNEL_ORDER_UNSPEC or
 * AV_CHANNEL_ORDER_NATIVE, or -1 for the orders it does not store (custom, ambisonic). */
static inline int tc_codecpar_layout_order(const AVCodecParameters *par)
{
    if (par->ch_layout.order == AV_CHANNEL_ORDER_UNSPEC || par->ch_layout.order == AV_CHANNEL_ORDER_NATIVE)
        return par->ch_layout.order;
    return -1;
}

/* The channel mask of a native-order layout (0 for the others). */
static inline uint64_t tc_codecpar_layout_mask(const AVCodecParameters *par)
{
    return par->ch_layout.order == AV_CHANNEL_ORDER_NATIVE ? par->ch_layout.u.mask : 0;
}

/* Set the channel layout of codec parameters to `channels` channels of `order` (UNSPEC or NATIVE,
 * with `mask`), as the probe left it; the deprecated fields of FFmpeg 5.x and 6.x follow, as
 * avcodec_parameters_from_context sets them. AVERROR(EINVAL) for a layout that does not fit. */
static inline int tc_codecpar_set_layout(AVCodecParameters *par, int order, uint64_t mask, int channels)
{
    AVChannelLayout layout = {0};
    if (order == AV_CHANNEL_ORDER_NATIVE) {
        if (av_channel_layout_from_mask(&layout, mask) < 0 || layout.nb_channels != channels)
            return AVERROR(EINVAL);
    } else if (order == AV_CHANNEL_ORDER_UNSPEC && channels >= 0) {
        layout.order = AV_CHANNEL_ORDER_UNSPEC;
        layout.nb_channels = channels;
    } else {
        return AVERROR(EINVAL);
    }
    av_channel_layout_uninit(&par->ch_layout);
    par->ch_layout = layout;                /* native and unspecified layouts own no memory */
#if defined(FF_API_OLD_CHANNEL_LAYOUT) && FF_API_OLD_CHANNEL_LAYOUT
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
    par->channel_layout = order == AV_CHANNEL_ORDER_NATIVE ? mask : 0;
    par->channels = channels;
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#endif
    return 0;
}

/* A usable channel layout for an audio frame, written to *dst (to be released with
 * av_channel_layout_uninit). FFmpeg 5.1 introduced AVChannelLayout beside the deprecated
 * channel_layout/channels fields, which 7.0 removed; a 5.x frame may carry only the old fields.
 * A layout without a channel order (AV_CHANNEL_ORDER_UNSPEC, e.g. a 16-channel WAV without a mask)
 * becomes the default layout of its channel count, so that libswresample can remix it. */
static inline int tc_frame_channel_layout(AVChannelLayout *dst, const AVFrame *frame)
{
    int channels = frame->ch_layout.nb_channels;
#if defined(FF_API_OLD_CHANNEL_LAYOUT) && FF_API_OLD_CHANNEL_LAYOUT
    if (channels <= 0) {
#if defined(__GNUC__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
        channels = frame->channels;
        if (frame->channel_layout != 0 && av_channel_layout_from_mask(dst, frame->channel_layout) == 0
            && dst->nb_channels == channels)
            return 0;
#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
    }
#endif
    if (channels <= 0)
        return AVERROR(EINVAL);
    if (frame->ch_layout.nb_channels == channels && frame->ch_layout.order != AV_CHANNEL_ORDER_UNSPEC)
        return av_channel_layout_copy(dst, &frame->ch_layout);
    av_channel_layout_default(dst, channels);
    return 0;
}

/* An AVIOContext whose write callback takes const bytes: FFmpeg 7.0 (libavformat 61) made the
 * callback's buffer const; before, it was declared non-const (and never written to). */
typedef int (*tc_avio_write_fn)(void *opaque, const uint8_t *buf, int buf_size);
typedef int (*tc_avio_read_fn)(void *opaque, uint8_t *buf, int buf_size);
typedef int64_t (*tc_avio_seek_fn)(void *opaque, int64_t offset, int whence);

static inline AVIOContext *tc_avio_alloc_context(unsigned char *buffer, int buffer_size, int write_flag,
                                                 void *opaque, tc_avio_read_fn read, tc_avio_write_fn write,
                                                 tc_avio_seek_fn seek)
{
#if LIBAVFORMAT_VERSION_MAJOR < 61
    return avio_alloc_context(buffer, buffer_size, write_flag, opaque, read,
                              (int (*)(void *, uint8_t *, int))write, seek);
#else
    return avio_alloc_context(buffer, buffer_size, write_flag, opaque, read, write, seek);
#endif
}

/* What an encoder supports: FFmpeg 7.1 (libavcodec 61.13) added avcodec_get_supported_config() and
 * deprecated the AVCodec arrays. Each returns the codec's array, ended by its sentinel
 * (AV_PIX_FMT_NONE, AV_SAMPLE_FMT_NONE, 0, a zeroed layout), or NULL when the codec does not say. */
#if LIBAVCODEC_VERSION_INT >= AV_VERSION_INT(61, 13, 100)
static inline const void *tc_codec_config(const AVCodec *codec, enum AVCodecConfig config)
{
    const void *values = NULL;
    int count = 0;
    if (avcodec_get_supported_config(NULL, codec, config, 0, &values, &count) < 0)
        return NULL;
    return values;
}
#define TC_CODEC_CONFIG(codec, config, field) tc_codec_config(codec, config)
#else
#define TC_CODEC_CONFIG(codec, config, field) ((const void *)(codec)->field)
#endif

static inline const enum AVPixelFormat *tc_codec_pix_fmts(const AVCodec *codec)
{
    return (const enum AVPixelFormat *)TC_CODEC_CONFIG(codec, AV_CODEC_CONFIG_PIX_FORMAT, pix_fmts);
}

static inline const enum AVSampleFormat *tc_codec_sample_fmts(const AVCodec *codec)
{
    return (const enum AVSampleFormat *)TC_CODEC_CONFIG(codec, AV_CODEC_CONFIG_SAMPLE_FORMAT, sample_fmts);
}

static inline const int *tc_codec_sample_rates(const AVCodec *codec)
{
    return (const int *)TC_CODEC_CONFIG(codec, AV_CODEC_CONFIG_SAMPLE_RATE, supported_samplerates);
}

static inline const AVChannelLayout *tc_codec_ch_layouts(const AVCodec *codec)
{
    return (const AVChannelLayout *)TC_CODEC_CONFIG(codec, AV_CODEC_CONFIG_CHANNEL_LAYOUT, ch_layouts);
}

/* Whether a packet should be dropped because an edit list discards it. */
static inline int tc_packet_is_discarded(const AVPacket *packet)
{
    return (packet->flags & AV_PKT_FLAG_DISCARD) != 0;
}

#endif /* TORCHCODEC_FFCOMPAT_H */
