# The video engine: one stream of one source, decoded to RGB into caller-provided memory.
from libc.stdint cimport int64_t
from torchcodec._core._decoder cimport StreamDecoder
from torchcodec._core._demuxer cimport Demuxer
from torchcodec._core._frame_index cimport FrameIndex
from torchcodec._core._scaler cimport Scaler
from torchcodec._ffmpeg.avcodec cimport AVPacket
from torchcodec._ffmpeg.avutil cimport AVFrame

cpdef enum Match:
    AT_OR_AFTER = 0     # the first frame whose pts is >= the target
    PLAYED_AT = 1       # the frame on screen at the target: first frame with pts + duration > target


cdef struct OutputSlots:
    char *data                  # frame 0, row 0, pixel 0
    Py_ssize_t frame_stride     # bytes between frames
    Py_ssize_t row_stride       # bytes between rows
    int width
    int height
    bint as_float


cdef class VideoStream:
    cdef readonly Demuxer demuxer
    cdef readonly StreamDecoder decoder
    cdef readonly Scaler scaler
    cdef readonly FrameIndex index      # exact mode; None in approximate mode
    cdef readonly int stream_index
    cdef readonly int rotation          # clockwise degrees applied to output frames
    cdef AVPacket *packet
    cdef AVFrame *held                  # the last decoded frame
    cdef AVFrame *incoming
    cdef bint has_held
    cdef int64_t held_pts
    cdef int64_t held_duration
    cdef unsigned long held_serial      # incremented for every decoded frame
    cdef int64_t prev_pts               # pts of the frame decoded before `held` in this run
    cdef bint has_prev
    cdef int64_t covered_from           # every frame with pts >= this was output in this run
    cdef bint needs_seek                # the demuxer's position is unknown (after a scan)
    cdef bint input_done                # the decoder was sent the end-of-stream
    cdef bint output_done               # the decoder returned AVERROR_EOF
    cdef int bad_packets                # consecutive packets the decoder refused
    cdef double time_base
    cdef int64_t first_key_timestamp    # where a decoder opened at the start begins

    cdef int seek_to(self, int64_t timestamp) except -1 nogil
    cdef int decode_next(self) except -1 nogil
    cdef bint held_answers(self, int64_t target, Match match) noexcept nogil
    cdef bint should_seek(self, int64_t target) noexcept nogil
    cdef int64_t key_frame_timestamp(self, int64_t target) noexcept nogil
    cdef int find_frame(self, int64_t target, Match match) except -1 nogil
    cdef int refuse_or_raise(self, int ret, const char *where) except -1 nogil
