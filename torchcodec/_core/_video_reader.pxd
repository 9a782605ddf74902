# The video reader: frames of one stream by index or time, decoded to RGB into caller-provided
# memory, built from the blocks (a Demuxer, the stream's VideoPacketDecoder, a ColorConverter).
from libc.stdint cimport int64_t, uint8_t
from torchcodec._core._color_converter cimport ColorConverter
from torchcodec._core._demuxer cimport Demuxer
from torchcodec._core._packet_decoder cimport VideoPacketDecoder
from torchcodec._core._frame_index cimport FrameIndex
from torchcodec._ffmpeg.avcodec cimport AVPacket
from torchcodec._ffmpeg.avformat cimport AVStream
from torchcodec._ffmpeg.avutil cimport AVFrame

cpdef enum Match:
    AT_OR_AFTER = 0     # the first frame whose pts is >= the target
    PLAYED_AT = 1       # the frame on screen at the target: first frame with pts + duration > target

cpdef enum Request:     # decode_requests: what a request that is not a frame index (>= 0) asks for
    REPEAT = -1         # the frame of the request before
    BY_TIME = -2        # the frame played at a time


cdef struct Target:             # decode_at: a requested timestamp and its output slot
    int64_t timestamp
    Py_ssize_t position         # where the frame goes in the output


cdef struct CursorSeek:         # approximate mode: what TorchCodec decides a seek to ``cursor`` from
    AVStream *stream            # (its demuxer's index of key frames)
    int64_t cursor
    double grid_begin
    double grid_fps
    int64_t time_base_num
    int64_t time_base_den


cdef struct OutputSlots:
    char *data                  # frame 0, row 0, pixel 0
    Py_ssize_t frame_stride     # bytes between frames
    Py_ssize_t row_stride       # bytes between rows
    int width
    int height
    bint as_float


cdef class VideoReader:
    cdef readonly Demuxer demuxer
    cdef readonly VideoPacketDecoder decoder    # libavcodec (CPU or FFmpeg's CUDA hwaccel) or NVDEC's
    cdef readonly ColorConverter converter      # swscale (host memory) or the CUDA kernels (device memory)
    cdef readonly FrameIndex index      # exact mode; None in approximate mode
    cdef readonly int stream_index
    cdef readonly int rotation          # clockwise degrees applied to output frames
    cdef AVPacket *packet
    cdef AVFrame *held                  # the last decoded frame
    cdef AVFrame *incoming
    cdef bint has_held
    cdef int64_t held_pts
    cdef int64_t held_duration
    cdef int64_t decoded_pts            # the held frame's own timestamp (positional mode replaces held_pts)
    cdef unsigned long held_serial      # incremented for every decoded frame
    cdef int64_t prev_pts               # pts of the frame decoded before `held` in this run
    cdef bint has_prev
    cdef int64_t covered_from           # every frame with pts >= this was output in this run
    cdef bint run_from_start            # the current run began at the start of the file
    cdef int64_t last_seek_key          # the key frame timestamp of the last seek
    cdef long frames_since_seek
    cdef bint positional                # frames are matched to the index by their order, not pts
    cdef Py_ssize_t position            # index entry of the held frame, in positional mode
    cdef int step_backs                 # consecutive seeks that landed after their target
    cdef bint needs_seek                # the demuxer's position is unknown (after a scan)
    cdef readonly unsigned long frames_decoded   # counters (docs/cython_api.md): frames decoded, seeks
    cdef readonly unsigned long seeks
    cdef int64_t time_base_num          # seconds per tick of the stream's time base = num / den
    cdef int64_t time_base_den
    cdef int64_t first_key_timestamp    # where a decoder opened at the start begins
    cdef int64_t start_timestamp        # the stream's start time (INT64_MIN: unknown)
    cdef bint start_by_bytes            # a timestamp seek to the start proved unreliable: seek to byte 0
    cdef bint seek_by_bytes             # timestamp seeks proved unreliable: seek to key frame positions
    # Approximate mode answers requests as TorchCodec 0.17 does (see decode_requests):
    cdef bint decoder_timestamps        # held_pts is the frame's pts, else its pkt_dts, as decoded
    cdef double grid_begin              # frame i is expected at grid_begin + i / grid_fps (the header's
    cdef double grid_fps                #   start time and r_frame_rate; grid_fps 0: no frame rate)
    cdef int64_t cursor                 # index requests take the first frame with pts >= cursor
    cdef int64_t last_index             # frame index of the last index request (INT64_MIN: none)
    cdef int64_t returned_pts           # pts and duration of the frame the last request returned
    cdef int64_t returned_duration      #   (returned_pts INT64_MIN: none yet)
    cdef CursorSeek next_request        # the next request's seek rule, while the decoder may drain for it
    # decode_at's plan (exact mode): its distinct targets in order and, for each, the end of its
    # run (the targets reached from one seek), so that the decoder is drained once the packets of
    # a run's last targets were sent, instead of decoding the packets after them (see arm_drain).
    cdef int64_t *plan_pts
    cdef Py_ssize_t *plan_run_end
    cdef uint8_t *plan_sent
    cdef Py_ssize_t plan_size
    cdef Py_ssize_t plan_at             # the distinct target being found (-1: no plan)
    cdef bint early_drain               # the plan may drain early (off after a drain came too early)
    cdef Py_ssize_t drained_run_end     # the end of the run the decoder was last armed for

    cdef int seek_to(self, int64_t target) except -1 nogil
    cdef int seek_to_key(self, int64_t key, int64_t position) except -1 nogil
    cdef int step_back(self, int64_t target) except -1 nogil
    cdef int decode_next(self) except -1 nogil
    cdef bint landed_late(self) noexcept nogil
    cdef int64_t answer_lower_bound(self, int64_t target, Match match) noexcept nogil
    cdef bint held_answers(self, int64_t target, Match match) noexcept nogil
    cdef bint should_seek(self, int64_t target) noexcept nogil
    cdef int64_t pts_after(self, int64_t pts, int64_t duration) noexcept nogil
    cdef int make_plan(self, const Target *order, Py_ssize_t n) except -1 nogil
    cdef void drop_plan(self) noexcept nogil
    cdef void arm_drain(self) noexcept nogil
    cdef int64_t key_frame_timestamp(self, int64_t target) noexcept nogil
    cdef int64_t key_frame_position(self, int64_t target) noexcept nogil
    cdef int find_frame(self, int64_t target, Match match) except -1 nogil
    cdef CursorSeek cursor_seek(self, int64_t cursor) noexcept nogil
    cdef int64_t index_cursor(self, int64_t index) noexcept nogil
    cdef bint cursor_needs_seek(self) noexcept nogil
    cdef int serve(self, int64_t index, double seconds, int64_t next_index) except -1 nogil
    cdef int decode_into(self, int64_t target, Match match, uint8_t *dst, Py_ssize_t row_stride,
                         int width, int height, bint as_float) except -1 nogil
