# Declarations of include/torchcodec/ffcompat.h: every FFmpeg version difference, in one place.
from libc.stdint cimport int32_t, int64_t
from torchcodec._ffmpeg.avcodec cimport AVCodecParameters, AVPacket
from torchcodec._ffmpeg.avformat cimport AVStream
from torchcodec._ffmpeg.avutil cimport AVChannelLayout, AVFrame


cdef extern from "torchcodec/ffcompat.h" nogil:
    int64_t tc_frame_duration(const AVFrame *frame)
    void tc_frame_set_duration(AVFrame *frame, int64_t duration)
    int64_t tc_frame_pts(const AVFrame *frame)
    int tc_frame_is_key(const AVFrame *frame)
    int64_t tc_packet_pts(const AVPacket *packet)
    const int32_t *tc_stream_display_matrix(const AVStream *stream)
    int tc_codecpar_channels(const AVCodecParameters *par)
    int tc_packet_is_discarded(const AVPacket *packet)
    int tc_frame_channel_layout(AVChannelLayout *dst, const AVFrame *frame)
