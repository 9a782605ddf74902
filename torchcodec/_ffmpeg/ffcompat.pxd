# Declarations of include/torchcodec/ffcompat.h: every FFmpeg version difference, in one place.
from libc.stdint cimport int32_t, int64_t, uint8_t, uint64_t
from torchcodec._ffmpeg.avcodec cimport AVCodec, AVCodecParameters, AVPacket
from torchcodec._ffmpeg.avformat cimport AVIOContext, AVStream
from torchcodec._ffmpeg.avutil cimport AVChannelLayout, AVFrame, AVPixelFormat, AVSampleFormat


cdef extern from "torchcodec/ffcompat.h" nogil:
    int64_t tc_frame_duration(const AVFrame *frame)
    void tc_frame_set_duration(AVFrame *frame, int64_t duration)
    int64_t tc_frame_pts(const AVFrame *frame)
    int tc_frame_is_key(const AVFrame *frame)
    int64_t tc_packet_pts(const AVPacket *packet)
    const int32_t *tc_stream_display_matrix(const AVStream *stream)
    int tc_codecpar_channels(const AVCodecParameters *par)
    int tc_codecpar_layout_order(const AVCodecParameters *par)
    uint64_t tc_codecpar_layout_mask(const AVCodecParameters *par)
    int tc_codecpar_set_layout(AVCodecParameters *par, int order, uint64_t mask, int channels)
    int tc_packet_is_discarded(const AVPacket *packet)
    int tc_frame_channel_layout(AVChannelLayout *dst, const AVFrame *frame)
    ctypedef int (*tc_avio_read_fn)(void *opaque, uint8_t *buf, int buf_size) noexcept nogil
    ctypedef int (*tc_avio_write_fn)(void *opaque, const uint8_t *buf, int buf_size) noexcept nogil
    ctypedef int64_t (*tc_avio_seek_fn)(void *opaque, int64_t offset, int whence) noexcept nogil
    AVIOContext *tc_avio_alloc_context(unsigned char *buffer, int buffer_size, int write_flag, void *opaque,
                                       tc_avio_read_fn read, tc_avio_write_fn write, tc_avio_seek_fn seek)
    const AVPixelFormat *tc_codec_pix_fmts(const AVCodec *codec)
    const AVSampleFormat *tc_codec_sample_fmts(const AVCodec *codec)
    const int *tc_codec_sample_rates(const AVCodec *codec)
    const AVChannelLayout *tc_codec_ch_layouts(const AVCodec *codec)
