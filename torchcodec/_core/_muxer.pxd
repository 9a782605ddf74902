# The Muxer owns an output AVFormatContext: streams, header, interleaved packets, trailer, and the
# AVIO it writes through (a path it opened itself, or a sink from _avio: memory or a file object).
from torchcodec._core._avio cimport IOSource
from torchcodec._ffmpeg.avcodec cimport AVCodecContext, AVPacket
from torchcodec._ffmpeg.avformat cimport AVFormatContext, AVStream
from torchcodec._ffmpeg.avutil cimport AVDictionary


cdef class Muxer:
    cdef AVFormatContext *ptr
    cdef IOSource sink                  # the AVIO of a file object or memory; None for a path
    cdef readonly object path           # the destination path (str), or None
    cdef AVDictionary *options          # the container's options, given to avformat_write_header
    cdef bint opened_path               # ptr.pb was opened here (avio_open) and is closed here
    cdef bint created_path              # the file at path did not exist before it was opened
    cdef readonly bint header_written
    cdef readonly bint finished

    cdef AVStream *new_stream(self, const AVCodecContext *codec) except NULL
    cdef int write_packet(self, AVPacket *packet) except -1 nogil
    cdef int check_sink(self) except -1
