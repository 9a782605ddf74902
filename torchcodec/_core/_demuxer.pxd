# The Demuxer owns an AVFormatContext: opening, stream description, packets, seeking, scanning.
# Packet owns one demuxed AVPacket; VideoStream / AudioStream are the streams a Demuxer follows.
from libc.stdint cimport int32_t, int64_t
from torchcodec._core._avio cimport IOSource
from torchcodec._core._frame_index cimport FrameIndex, IndexBuilder
from torchcodec._ffmpeg.avcodec cimport AVPacket
from torchcodec._ffmpeg.avformat cimport AVFormatContext, AVStream
from torchcodec._ffmpeg.avutil cimport AVRational

cdef enum:
    # A seek that lands after its target (timestamp search is approximate in some formats) is
    # redone from further back this many times, then from the start of the file (both readers).
    MAX_STEP_BACKS = 4


cdef class Packet:
    cdef AVPacket *ptr                  # owned (its data is reference-counted by FFmpeg)
    cdef readonly int stream_index
    cdef readonly unsigned long generation   # the demuxer's seek count when it was read
    cdef AVRational time_base           # its stream's


cdef class Demuxer:
    cdef AVFormatContext *ptr
    cdef IOSource source            # the custom AVIO that ptr reads through, or None for a path/URL
    cdef object location            # the path/URL that ptr opened, or None for an IOSource
    cdef object name                # what to call the source in error messages
    cdef readonly unsigned long generation   # seeks so far: the packets read carry it
    cdef list followed              # the indices of the streams followed, in the caller's order
    cdef dict indices               # stream index -> FrameIndex (from a scan); ("stream", index) -> its metadata
    cdef object _metadata           # DemuxerMetadata, when asked for
    cdef bint has_read              # packets were read since the demuxer opened (or seeked to the start)
    cdef readonly bint probe_skipped    # a stored probe state replaced avformat_find_stream_info
    cdef object probe_state         # what the probe learnt (see _probe_state), or None
    cdef dict probed_best           # a skipped probe's best streams ("video"/"audio" -> index or None)

    cdef AVStream *stream(self, int index) except NULL
    cdef int read(self, AVPacket *packet) except? -1 nogil
    cdef int read_into(self, Packet packet) except -1 nogil
    cdef int seek_timestamp(self, int stream_index, int64_t timestamp) except -1 nogil
    cdef int raise_source_error(self) except -1
    cdef int seek_to_start(self, int stream_index) except -1 nogil
    cdef int seek_bytes(self, int64_t position) except -1 nogil
    cdef int rewind(self, int stream_index) except -1 nogil
    cdef bint can_seek_bytes(self) noexcept nogil
    cdef int set_discards(self) except -1
    cdef object follow(self, int index)
    cdef object stream_object(self, int index)
    cdef bint follows(self, int index) noexcept
    cdef int scan_followed(self, bint rewind) except -1
    cdef int read_scan(self, AVPacket *packet, const int *wanted, void **builders, Py_ssize_t count,
                       IndexBuilder watched, Py_ssize_t want_size, int64_t want_pts) except -1 nogil
    cdef bint restore_probe(self, state) except -1
    cdef object capture_probe(self)
    cdef Packet next_packet(self)


cdef class DemuxedStream:
    cdef readonly Demuxer demuxer
    cdef readonly int index


cdef class VideoStream(DemuxedStream):
    pass


cdef class AudioStream(DemuxedStream):
    pass


cdef object display_rotation(const int32_t *matrix)
cdef Demuxer open_demuxer(object source, object name=*, object probe=*)
