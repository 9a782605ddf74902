# The audio reader: sample ranges of one audio stream, decoded to planar float32 into caller memory,
# built from the blocks (a Demuxer, the stream's AudioPacketDecoder, an AudioConverter).
from libc.stdint cimport int64_t
from torchcodec._core._audio_converter cimport AudioConverter
from torchcodec._core._demuxer cimport Demuxer
from torchcodec._core._packet_decoder cimport AudioPacketDecoder
from torchcodec._core._resampler cimport Resampler
from torchcodec._ffmpeg.avcodec cimport AVPacket
from torchcodec._ffmpeg.avutil cimport AVFrame, AVRational


cdef class AudioReader:
    cdef readonly Demuxer demuxer
    cdef AudioPacketDecoder decoder         # a new one for every run (see start_run)
    cdef readonly AudioConverter converter
    cdef readonly Resampler resampler       # the converter's
    cdef readonly int stream_index
    cdef readonly int in_rate               # samples per second of the stream
    cdef readonly int out_rate              # ... and of the output
    cdef AVRational time_base
    cdef readonly int64_t begin_pts         # pts of the stream's first sample (time base units)
    cdef AVPacket *packet
    cdef AVFrame *frame
    cdef bint has_frame                     # `frame` holds a decoded frame not yet converted
    # Where runs start: in input samples, a multiple of align_in (= output positions multiple of
    # align_out), filter_margin of resampler history and codec_preroll of decoder history earlier.
    cdef int64_t align_in
    cdef int64_t align_out
    cdef int64_t filter_margin
    cdef public int64_t codec_preroll
    cdef readonly bint seeks_are_exact      # a run started by a seek gives the samples of an unbroken run
    cdef readonly bint may_seek             # runs may start by a seek (else: from the start, reading forward)
    cdef bint scan_before_seeking           # timestamps after a seek are estimates until the file was read once
    cdef bint scanned
    # The current run (everything decoded since the last seek).
    cdef bint landing                       # the next frame is the first of a run: its pts places it
    cdef bint from_start                    # the run began at the start of the stream
    cdef int step_backs                     # seeks of this request that landed after their target
    cdef int64_t feed_from                  # input position from which the resampler is fed
    cdef int64_t in_next                    # input position of the next decoded sample
    cdef int64_t out_next                   # output position of the next converted sample
    cdef bint drained                       # the resampler gave its last samples
    # Converted samples not yet delivered: planes[c][read:length] are at out positions start + read...
    cdef float **planes
    cdef float *scratch
    cdef int scratch_capacity
    cdef int64_t scratch_start
    cdef int scratch_length
    cdef int scratch_read
    # What the current run from the start has converted, kept where runs cannot seek exactly, so
    # that a request behind the run is copied rather than decoded again from the start:
    # history[c * history_capacity + i] is output sample history_start + i of channel c.
    cdef readonly bint keeps_history        # this engine's runs record (exact and cannot seek)
    cdef bint recording                     # the current run records (off after a read to the end)
    cdef float *history
    cdef int64_t history_start
    cdef int64_t history_length
    cdef int64_t history_capacity
    cdef public int64_t history_expected    # its first size (reserved, not touched): the caller's
                                            # estimate of the stream's output samples (0: unknown)
    cdef public int64_t history_limit_bytes # at most this much is kept: the oldest samples go first
    cdef int64_t next_wanted                # the position after the last delivered sample
    cdef readonly unsigned long frames_decoded   # counters (docs/cython_api.md): frames decoded, seeks
    cdef readonly unsigned long seeks

    cdef int seek_for(self, int64_t first) except -1 nogil
    cdef int start_run(self, int64_t feed_from, int64_t out_position, int64_t seek_to) except -1 nogil
    cdef void reset_run(self, int64_t feed_from, int64_t out_position) noexcept nogil
    cdef int produce(self) except -1 nogil
    cdef int raise_rate_change(self, int rate) except -1
    cdef int ensure_scratch(self, int samples) except -1 nogil
    cdef void record(self) noexcept nogil
    cdef bint make_room(self, int64_t samples) noexcept nogil
    cdef void forget_history(self, bint keep_recording) noexcept nogil
    cdef int64_t read_into(self, int64_t first, int64_t stop, char *dst, Py_ssize_t channel_stride,
                           int64_t capacity) except -1 nogil
