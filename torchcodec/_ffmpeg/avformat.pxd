# Declarations of libavformat, one block per header; C names unchanged; only what torchcodec uses.
from libc.stdint cimport int64_t, uint8_t
from torchcodec._ffmpeg.avcodec cimport AVCodec, AVCodecID, AVCodecParameters, AVPacket
from torchcodec._ffmpeg.avutil cimport AVClass, AVDictionary, AVMediaType, AVRational


cdef extern from "libavformat/avio.h" nogil:
    int AVSEEK_SIZE
    int AVSEEK_FORCE
    ctypedef struct AVIOContext:
        unsigned char *buffer
        int error
        int seekable
    int AVIO_SEEKABLE_NORMAL
    AVIOContext *avio_alloc_context(
        unsigned char *buffer, int buffer_size, int write_flag, void *opaque,
        int (*read_packet)(void *opaque, uint8_t *buf, int buf_size),
        int (*write_packet)(void *opaque, const uint8_t *buf, int buf_size),
        int64_t (*seek)(void *opaque, int64_t offset, int whence))
    void avio_context_free(AVIOContext **s)
    int AVIO_FLAG_READ
    int AVIO_FLAG_WRITE
    int avio_open(AVIOContext **s, const char *url, int flags)
    void avio_flush(AVIOContext *s)
    int avio_closep(AVIOContext **s)
    int avio_read(AVIOContext *s, unsigned char *buf, int size)
    int64_t avio_seek(AVIOContext *s, int64_t offset, int whence)
    int64_t avio_size(AVIOContext *s)


cdef extern from "libavformat/avformat.h" nogil:
    int AVFMT_FLAG_CUSTOM_IO
    int AVSEEK_FLAG_BACKWARD
    int AVSEEK_FLAG_BYTE
    int AVSEEK_FLAG_ANY
    int AVSEEK_FLAG_FRAME
    int AVINDEX_KEYFRAME
    int AVFMT_NO_BYTE_SEEK
    int AVFMT_GENERIC_INDEX
    int AVFMT_NOFILE
    int AVFMT_GLOBALHEADER

    ctypedef struct AVInputFormat:
        const char *name
        const char *long_name
        int flags

    ctypedef struct AVOutputFormat:
        const char *name
        const char *long_name
        const char *extensions
        AVCodecID audio_codec
        AVCodecID video_codec
        int flags
        const AVClass *priv_class

    ctypedef struct AVIndexEntry:
        int64_t pos
        int64_t timestamp
        int flags

    ctypedef struct AVStream:
        int index
        AVCodecParameters *codecpar
        AVRational time_base
        int64_t start_time
        int64_t duration
        int64_t nb_frames
        int disposition
        int discard
        AVRational sample_aspect_ratio
        AVDictionary *metadata
        AVRational avg_frame_rate
        AVRational r_frame_rate

    ctypedef struct AVFormatContext:
        const AVInputFormat *iformat
        const AVOutputFormat *oformat
        AVIOContext *pb
        int ctx_flags
        unsigned int nb_streams
        AVStream **streams
        int64_t start_time
        int64_t duration
        int64_t bit_rate
        int flags
        AVDictionary *metadata

    AVFormatContext *avformat_alloc_context()
    void avformat_free_context(AVFormatContext *s)
    int avformat_open_input(AVFormatContext **ps, const char *url, const AVInputFormat *fmt,
                            AVDictionary **options)
    int avformat_find_stream_info(AVFormatContext *ic, AVDictionary **options)
    void avformat_close_input(AVFormatContext **s)
    int av_find_best_stream(AVFormatContext *ic, AVMediaType type, int wanted_stream_nb,
                            int related_stream, const AVCodec **decoder_ret, int flags)
    int av_read_frame(AVFormatContext *s, AVPacket *pkt)
    int avformat_seek_file(AVFormatContext *s, int stream_index, int64_t min_ts, int64_t ts,
                           int64_t max_ts, int flags)
    int av_seek_frame(AVFormatContext *s, int stream_index, int64_t timestamp, int flags)
    int avformat_index_get_entries_count(const AVStream *st)
    int av_index_search_timestamp(AVStream *st, int64_t timestamp, int flags)
    const AVIndexEntry *avformat_index_get_entry_from_timestamp(AVStream *st, int64_t wanted_timestamp,
                                                                int flags)
    unsigned avformat_version()
    const AVClass *avformat_get_class()
    int avformat_alloc_output_context2(AVFormatContext **ctx, const AVOutputFormat *oformat,
                                       const char *format_name, const char *filename)
    AVStream *avformat_new_stream(AVFormatContext *s, const AVCodec *c)
    int avformat_query_codec(const AVOutputFormat *ofmt, AVCodecID codec_id, int std_compliance)
    int avformat_write_header(AVFormatContext *s, AVDictionary **options)
    int av_interleaved_write_frame(AVFormatContext *s, AVPacket *pkt)
    int av_write_trailer(AVFormatContext *s)
