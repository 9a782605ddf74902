# The Demuxer owns an AVFormatContext: opening, stream description, packets, seeking, scanning.
from libc.stdint cimport int64_t
from torchcodec._core._avio cimport IOSource
from torchcodec._core._frame_index cimport FrameIndex
from torchcodec._ffmpeg.avcodec cimport AVPacket
from torchcodec._ffmpeg.avformat cimport AVFormatContext, AVStream


cdef class Demuxer:
    cdef AVFormatContext *ptr
    cdef IOSource source            # the custom AVIO that ptr reads through, or None for a path/URL
    cdef object name                # what to call the source in error messages

    cdef AVStream *stream(self, int index) except NULL
    cdef int read(self, AVPacket *packet) except? -1 nogil
    cdef int seek(self, int stream_index, int64_t timestamp) except -1 nogil
    cdef int raise_source_error(self) except -1
    cdef int seek_to_start(self, int stream_index) except -1 nogil
    cdef int seek_bytes(self, int64_t position) except -1 nogil
    cdef bint can_seek_bytes(self) noexcept nogil
