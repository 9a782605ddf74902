"""The audio reader: decode one audio stream to planar float32, straight into caller memory.

It is what AudioDecoder runs on, built from the building blocks: the Demuxer, the stream's
AudioPacketDecoder (its ``next_frame`` loop) and an AudioConverter (its resampler), used at C
level (no Python per frame).

Samples are numbered by position: output sample k of the stream is at time
``begin + k / out_rate``, where ``begin`` is the pts of the first decoded sample. ``read(first, stop,
...)`` writes samples [first, stop). A request continues the current run when it starts at or a
little after where the run is; otherwise a new run starts, by a seek or from the start.

A run that starts with a seek gives exactly the samples of one unbroken decode of the whole stream
(resampled, when asked, by one unbroken libswresample run) when three things hold:

- **codec pre-roll**: the decoder's output converges to the unbroken run's once it has decoded
  ``codec_preroll`` samples (MDCT overlap, MP3's bit reservoir). True of lossless codecs, MP3 and
  Vorbis (float decoders); not of AAC (noise substitution draws from a random state that never
  resynchronises), fixed-point MP1/MP2 (rounding dither state) or Opus (slow convergence).
- **aligned resampler restarts**: the resampler is fed from an input position that is a multiple of
  ``in_rate / gcd(in_rate, out_rate)``, where an unbroken run has its filter phase at zero, and
  ``filter_margin`` samples early, so that its filter history is complete by the first sample used.
- **exact landing**: the first frame after a seek is placed by its pts, so the time base must
  resolve single samples (not Matroska's milliseconds) and the demuxer must read it from the file,
  not derive it (Ogg derives the pts of a page's first packets). Formats whose timestamps are estimated
  after a seek (raw MP3, ADTS AAC: FFmpeg's "generic index" formats) are read once first, which
  gives FFmpeg an index of every packet. A seek that lands after the position it needs is redone
  from earlier, and finally from the start. Matroska's index also grows as the file is read, so it
  is read once too: a seek then lands in the same place whatever was read before.

``seeks_are_exact`` says whether they hold. When they do not, an exact engine
(``approximate=False``) never seeks into the stream: it reads forward, and starts again from the
start for a request behind it, as TorchCodec does. An approximate engine seeks anyway, for every request that
does not continue the current run; such a request then gives the same samples whatever was decoded
before (every run starts with a new decoder), which may differ slightly from the unbroken decode's.

An exact engine that cannot seek keeps what its run from the start has converted (the **history**,
at most ``history_limit_bytes``, the oldest samples dropped first), and copies a request behind the
run from it instead of decoding from the start again: random ranges then cost one decode of the
stream up to the furthest range, not one per backward request. A read to the end stops the history
(``get_all_samples`` does not keep a second copy of the stream).

The loop runs without the GIL and writes each converted frame's samples straight to the caller's
channel rows; nothing is gathered in Python.
"""
from libc.stdint cimport INT64_MIN, int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, memmove, strcmp, strncmp

from torchcodec._core._audio_converter cimport AudioConverter, audio_converter
from torchcodec._core._demuxer cimport MAX_STEP_BACKS, Demuxer
from torchcodec._core._packet_decoder cimport AudioPacketDecoder, open_audio_decoder
from torchcodec._core._error cimport av_error_string
from torchcodec._core._frame_index cimport ticks_to_seconds
from torchcodec._core._resampler cimport Resampler
from torchcodec._memory import check_request
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avformat as lavf
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport ffcompat
from torchcodec._ffmpeg.avutil cimport AVRational

# Vorbis: decode this many seconds before the first sample a run needs (two of its longest blocks).
cdef double VORBIS_PREROLL_SECONDS = 0.4
# Other lossy codecs: at least this many frames (the MDCT overlap needs one).
cdef int LOSSY_PREROLL_FRAMES = 3
# An exact engine that cannot seek keeps at most this much of its run's output (6 minutes of
# 44.1 kHz stereo), for requests behind the run.
cdef int64_t HISTORY_LIMIT_BYTES = 128 * 1024 * 1024
# Reading forward rather than seeking, when the next request starts at most this far ahead.
cdef double READ_AHEAD_SECONDS = 1.0
# The resampler's filter reaches this many input samples back (libswresample's default
# filter_size of 32 taps, widened by the decimation factor), with a safety factor of 2.
cdef int FILTER_TAPS = 32


cdef int64_t gcd(int64_t a, int64_t b) noexcept nogil:
    while b:
        a, b = b, a % b
    return a


cdef int64_t floor_div(int64_t a, int64_t b) noexcept nogil:
    cdef int64_t q = a // b
    if (a % b != 0) and ((a < 0) != (b < 0)):
        q -= 1
    return q


cdef bint is_mpeg_audio(int codec_id) noexcept nogil:
    return codec_id == lavc.AV_CODEC_ID_MP3 or codec_id == lavc.AV_CODEC_ID_MP2 or codec_id == lavc.AV_CODEC_ID_MP1


cdef bint converges_after_preroll(int codec_id, int sample_format, bint lossless) noexcept nogil:
    """Whether decoding from a seek reproduces, after the pre-roll, an unbroken decode bit for bit
    (checked by the tests for each codec named here)."""
    if lossless or codec_id == lavc.AV_CODEC_ID_VORBIS:
        return True
    if is_mpeg_audio(codec_id):
        # The float decoders; the fixed-point ones carry a rounding dither across frames.
        return sample_format == lavu.AV_SAMPLE_FMT_FLT or sample_format == lavu.AV_SAMPLE_FMT_FLTP
    return False


cdef int64_t preroll_samples(const lavc.AVCodecParameters *par, int rate, bint lossless) noexcept nogil:
    """Input samples to decode and drop before the first sample a run needs, so that the decoder's
    state has caught up with an unbroken run's (where it can: see converges_after_preroll)."""
    cdef int64_t frame = par.frame_size if par.frame_size > 0 else max(1, rate // 50)
    cdef int64_t frame_bytes, frames
    if lossless:
        return 0
    if is_mpeg_audio(par.codec_id):
        # The bit reservoir reaches up to 511 bytes back: as many frames as that is at half the
        # stream's bit rate (a VBR floor; never below the MPEG version's lowest rate, 32 kb/s for
        # MPEG-1, 8 kb/s for MPEG-2/2.5), plus three for the filter bank's overlap.
        frame = 1152 if rate >= 32000 else 576
        frame_bytes = max(1, max(par.bit_rate // 2, 32000 if rate >= 32000 else 8000) // 8 * frame // rate)
        frames = (511 + frame_bytes - 1) // frame_bytes + 3
        return frames * frame
    if par.codec_id == lavc.AV_CODEC_ID_VORBIS:
        return <int64_t>(VORBIS_PREROLL_SECONDS * rate)
    return max(<int64_t>par.seek_preroll, LOSSY_PREROLL_FRAMES * frame)


cdef bint timestamps_guessed_after_seek(const char *format_name) noexcept nogil:
    """Formats whose first packets after a seek carry derived timestamps that can be off by a
    block: Ogg gives a packet's pts from its page's granule position minus packet durations, which
    for Vorbis depend on the packet before the seek (checked: 0.1 s into a page, off by 0.5 ms)."""
    return strcmp(format_name, "ogg") == 0


cdef class AudioReader:
    """Decoding state for audio stream ``stream_index`` of ``demuxer``.

    ``sample_rate``/``num_channels``: the output's (0: the stream's). ``approximate``: seek even
    where seeks are not exact (see the module's documentation). The first frame is decoded at
    construction: it tells where the stream begins and proves that it can be decoded.
    """

    def __cinit__(self, Demuxer demuxer, int stream_index, int sample_rate=0, int num_channels=0,
                  bint approximate=False):
        self.packet = NULL
        self.frame = NULL
        self.planes = NULL
        self.scratch = NULL
        self.history = NULL
        if sample_rate < 0 or num_channels < 0:
            raise ValueError("sample_rate and num_channels must be positive")
        cdef lavf.AVStream *st = demuxer.stream(stream_index)
        if st.codecpar.codec_type != lavu.AVMEDIA_TYPE_AUDIO:
            raise ValueError(f"stream {stream_index} is not an audio stream "
                             f"({demuxer._media_type(stream_index)})")
        self.demuxer = demuxer
        self.stream_index = stream_index
        self.time_base = st.time_base
        if not demuxer.follows(stream_index):
            raise ValueError(f"the demuxer does not follow stream {stream_index}: build it with "
                             f"Demuxer(source, streams={stream_index})")
        self.decoder = open_audio_decoder(demuxer, stream_index)
        self.packet = lavc.av_packet_alloc()
        self.frame = lavu.av_frame_alloc()
        if self.packet == NULL or self.frame == NULL:
            raise MemoryError("cannot allocate a packet and a frame")
        self.scan_before_seeking = ((demuxer.ptr.iformat.flags & lavf.AVFMT_GENERIC_INDEX) != 0
                                    or strncmp(demuxer.ptr.iformat.name, "matroska", 8) == 0)
        self.scanned = False
        self.frames_decoded = 0
        self.seeks = 0

        # The first frame: the stream's real sample rate, format and start.
        with nogil:
            self.has_frame = self.decoder.next_frame(self.demuxer, self.packet, self.frame) == 1
        if not self.has_frame:
            raise RuntimeError(f"audio stream {stream_index} of {demuxer.name} has no decodable audio "
                               f"(the file may be truncated or corrupt)")
        self.frames_decoded = 1
        self.in_rate = self.frame.sample_rate if self.frame.sample_rate > 0 else st.codecpar.sample_rate
        self.out_rate = sample_rate if sample_rate > 0 else self.in_rate
        self.converter = audio_converter(sample_rate, num_channels)
        self.converter.start(self.in_rate)
        self.resampler = self.converter.resampler
        self.resampler.configure(self.frame)
        cdef int64_t pts = ffcompat.tc_frame_pts(self.frame)
        self.begin_pts = pts if pts != lavu.AV_NOPTS_VALUE else (st.start_time if st.start_time != lavu.AV_NOPTS_VALUE else 0)

        cdef int64_t g = gcd(self.in_rate, self.out_rate)
        self.align_in = self.in_rate // g
        self.align_out = self.out_rate // g
        self.filter_margin = 0
        if self.out_rate != self.in_rate:
            self.filter_margin = 2 * FILTER_TAPS * max(1, (self.in_rate + self.out_rate - 1) // self.out_rate)
        cdef const lavc.AVCodecDescriptor *desc = lavc.avcodec_descriptor_get(st.codecpar.codec_id)
        cdef bint lossless = desc != NULL and (desc.props & lavc.AV_CODEC_PROP_LOSSLESS) != 0
        self.codec_preroll = preroll_samples(st.codecpar, self.in_rate, lossless)
        self.seeks_are_exact = (converges_after_preroll(st.codecpar.codec_id, self.frame.format, lossless)
                                and self.time_base.num * <int64_t>self.in_rate <= self.time_base.den
                                and not timestamps_guessed_after_seek(demuxer.ptr.iformat.name))
        self.may_seek = self.seeks_are_exact or approximate

        # The run that the constructor began: from the start, with the first frame in hand.
        self.step_backs = 0
        self.scratch_capacity = 0
        self.from_start = True
        self.reset_run(0, 0)
        self.has_frame = True
        self.keeps_history = not self.may_seek
        self.history_limit_bytes = HISTORY_LIMIT_BYTES
        self.history_capacity = 0
        self.history_expected = 0
        self.forget_history(self.keeps_history)
        self.next_wanted = 0

    def __dealloc__(self):
        lavc.av_packet_free(&self.packet)
        lavu.av_frame_free(&self.frame)
        free(self.scratch)
        free(self.planes)
        free(self.history)

    @property
    def num_channels(self):
        """Channels of the output."""
        return self.resampler.out_channels

    @property
    def begin_seconds(self):
        """Time of the stream's first sample (the pts of its first decoded frame)."""
        return ticks_to_seconds(self.begin_pts, self.time_base.num, self.time_base.den)

    # ---- runs ---------------------------------------------------------------------------------

    cdef int seek_for(self, int64_t first) except -1 nogil:
        """Start a run that delivers output sample ``first`` exactly as an unbroken run would."""
        cdef int64_t feed_from, out_position
        if self.out_rate == self.in_rate:
            feed_from = out_position = first
        else:
            feed_from = floor_div(first * self.in_rate // self.out_rate - self.filter_margin, self.align_in)
            if feed_from < 0:
                feed_from = 0
            out_position = feed_from * self.align_out       # = feed_from * in_rate / out_rate
            feed_from *= self.align_in
        self.step_backs = 0
        return self.start_run(feed_from, out_position, feed_from - self.codec_preroll)

    cdef int start_run(self, int64_t feed_from, int64_t out_position, int64_t seek_to) except -1 nogil:
        """Seek to input position ``seek_to`` (<= 0: the start of the stream), then feed the
        resampler from input position ``feed_from``, whose first output is at ``out_position``."""
        cdef AVRational per_sample
        self.from_start = seek_to <= 0 or self.step_backs > MAX_STEP_BACKS
        if self.from_start:
            # The first packet, not the start time: an AAC stream's priming packet lies before it
            # (pts -1024, with samples to skip) and shapes the first frames.
            self.demuxer.seek_timestamp(self.stream_index, INT64_MIN)
        else:
            if self.scan_before_seeking and not self.scanned:
                with gil:
                    self.demuxer.scan_followed(False)        # FFmpeg indexes every packet it reads
                self.scanned = True
            per_sample.num = 1
            per_sample.den = self.in_rate
            self.demuxer.seek_timestamp(self.stream_index,
                              self.begin_pts + lavu.av_rescale_q(seek_to, per_sample, self.time_base))
        with gil:
            # A new decoder, not a flushed one: some decoders keep state across a flush (AAC's noise
            # generator), and a run must not depend on what was decoded before it.
            self.decoder = open_audio_decoder(self.demuxer, self.stream_index)
        self.resampler.restart()
        self.seeks += 1
        self.reset_run(feed_from, out_position)
        if self.from_start:
            self.forget_history(self.keeps_history)
        return 0

    cdef void reset_run(self, int64_t feed_from, int64_t out_position) noexcept nogil:
        """The state of a run that has decoded nothing yet and feeds the resampler from input
        position ``feed_from``, whose first output is at ``out_position``."""
        self.has_frame = False
        self.landing = True
        self.drained = False
        self.feed_from = feed_from
        self.in_next = 0
        self.out_next = out_position
        self.scratch_start = out_position
        self.scratch_length = 0
        self.scratch_read = 0

    cdef int produce(self) except -1 nogil:
        """Decode and convert the next frame into the scratch planes: 1 if the stream goes on,
        0 when it has ended and the resampler has been drained."""
        cdef int64_t position, pts, offset
        cdef int n, count
        cdef AVRational per_sample
        if not self.has_frame:
            if not self.decoder.next_frame(self.demuxer, self.packet, self.frame):
                if self.drained:
                    return 0
                self.drained = True
                self.ensure_scratch(self.resampler.max_output(0))
                self.scratch_start = self.out_next
                self.scratch_read = 0
                self.scratch_length = self.resampler.drain(<uint8_t **>self.planes, self.scratch_capacity)
                self.out_next += self.scratch_length
                self.record()
                return 1
            self.frames_decoded += 1
        self.has_frame = False
        n = self.frame.nb_samples
        if self.landing:
            pts = ffcompat.tc_frame_pts(self.frame)
            if self.from_start or pts == lavu.AV_NOPTS_VALUE:
                position = 0 if self.from_start else self.feed_from + 1
            else:
                per_sample.num = 1
                per_sample.den = self.in_rate
                position = lavu.av_rescale_q(pts - self.begin_pts, self.time_base, per_sample)
            if position > self.feed_from:
                # Landed after the first sample this run needs: seek again from further back.
                lavu.av_frame_unref(self.frame)
                self.step_backs += 1
                self.start_run(self.feed_from, self.out_next,
                               self.feed_from - self.codec_preroll - self.step_backs * self.in_rate)
                return 1
            self.landing = False
            self.in_next = position

        position = self.in_next
        self.in_next += n
        if position + n <= self.feed_from or n == 0:
            lavu.av_frame_unref(self.frame)          # pre-roll: decoded for its history only
            return 1
        offset = self.feed_from - position if position < self.feed_from else 0
        count = n - <int>offset
        if self.frame.sample_rate != self.in_rate and self.frame.sample_rate > 0:
            with gil:
                self.raise_rate_change(self.frame.sample_rate)
        self.resampler.configure(self.frame)
        self.ensure_scratch(self.resampler.max_output(count))
        self.scratch_start = self.out_next
        self.scratch_read = 0
        self.scratch_length = self.resampler.convert(self.frame, <int>offset, count, self.planes,
                                                     self.scratch_capacity)
        self.out_next += self.scratch_length
        self.record()
        self.feed_from = position + n                # fed up to here: later frames go in whole
        lavu.av_frame_unref(self.frame)
        return 1

    cdef int raise_rate_change(self, int rate) except -1:
        """A frame at another sample rate: not supported, and usually the sign of corrupt data."""
        message = (f"the sample rate changes within the stream (from {self.in_rate} to {rate} Hz), which is "
                   f"not supported")
        if self.decoder.refused:
            message += (f"; the decoder had refused {self.decoder.refused} packet(s) before "
                        f"({av_error_string(self.decoder.last_refusal)}): the file is probably corrupt")
        raise RuntimeError(message)

    cdef int ensure_scratch(self, int samples) except -1 nogil:
        """Room for ``samples`` converted samples per channel (the scratch holds nothing undelivered)."""
        cdef int c, channels = self.resampler.out_channels
        if samples <= self.scratch_capacity:
            return 0
        samples = max(samples, 4096)
        with gil:       # one frame's output: large only with an extreme sample_rate ratio
            check_request(f"converting a frame to {self.out_rate} Hz", samples=samples, channels=channels)
        free(self.scratch)
        free(self.planes)
        self.scratch = <float *>malloc(<size_t>samples * channels * sizeof(float))
        self.planes = <float **>malloc(channels * sizeof(float *))
        if self.scratch == NULL or self.planes == NULL:
            self.scratch_capacity = 0
            with gil:
                raise MemoryError(f"cannot allocate {samples} x {channels} samples of scratch space")
        for c in range(channels):
            self.planes[c] = self.scratch + <size_t>c * samples
        self.scratch_capacity = samples
        return 0

    # ---- history ------------------------------------------------------------------------------

    cdef void forget_history(self, bint keep_recording) noexcept nogil:
        """Empty the history; the run records from here on if ``keep_recording``."""
        self.history_start = self.out_next
        self.history_length = 0
        self.recording = keep_recording

    cdef void record(self) noexcept nogil:
        """Append the scratch's converted samples to the history (if the run records)."""
        cdef int64_t n = self.scratch_length
        cdef int c
        if not self.recording or n <= 0:
            return
        if self.scratch_start != self.history_start + self.history_length:
            self.history_start = self.scratch_start         # not contiguous: start again here
            self.history_length = 0
        if not self.make_room(n):
            free(self.history)                               # no memory for it: do without
            self.history = NULL
            self.history_capacity = 0
            self.forget_history(False)
            return
        for c in range(self.resampler.out_channels):
            memcpy(self.history + c * self.history_capacity + self.history_length, self.planes[c],
                   <size_t>n * sizeof(float))
        self.history_length += n

    cdef bint make_room(self, int64_t samples) noexcept nogil:
        """Room for ``samples`` more per channel: grow the history up to its limit, then drop its
        oldest samples (at least half of it, so that drops are rare). False if it cannot."""
        cdef int c, channels = self.resampler.out_channels
        cdef int64_t limit = self.history_limit_bytes // (channels * <int64_t>sizeof(float))
        cdef int64_t wanted = self.history_length + samples, capacity, drop
        cdef float *grown
        if wanted <= self.history_capacity:
            return True
        if samples > limit:
            return False
        if self.history_capacity < limit:
            capacity = min(limit, max(wanted, 2 * self.history_capacity, self.history_expected,
                                      <int64_t>65536))
            grown = <float *>malloc(<size_t>capacity * channels * sizeof(float))
            if grown == NULL:
                return False
            if self.history_length > 0:                  # (history is NULL before the first growth)
                for c in range(channels):
                    memcpy(grown + c * capacity, self.history + c * self.history_capacity,
                           <size_t>self.history_length * sizeof(float))
            free(self.history)
            self.history = grown
            self.history_capacity = capacity
            if wanted <= capacity:
                return True
        drop = min(self.history_length, max(wanted - self.history_capacity, self.history_capacity // 2))
        for c in range(channels):
            memmove(self.history + c * self.history_capacity,
                    self.history + c * self.history_capacity + drop,
                    <size_t>(self.history_length - drop) * sizeof(float))
        self.history_start += drop
        self.history_length -= drop
        return True

    # ---- delivery -----------------------------------------------------------------------------

    cdef int64_t read_into(self, int64_t first, int64_t stop, char *dst, Py_ssize_t channel_stride,
                           int64_t capacity) except -1 nogil:
        """Write output samples [first, stop) (stop < 0: to the end) of every channel to
        ``dst + c * channel_stride``, at most ``capacity`` of them; return how many were written."""
        cdef int64_t written = 0, available, position, wanted, n, skip
        cdef int c, channels = self.resampler.out_channels
        cdef int64_t next_available
        if self.history_start <= first < self.history_start + self.history_length:
            # Behind the run, or at its undelivered samples: the history holds everything the run
            # converted from its start on; copy up to the run's end, then go on decoding.
            written = min(capacity, self.history_start + self.history_length - first)
            if stop >= 0:
                written = min(written, stop - first)
            for c in range(channels):
                memcpy(dst + c * channel_stride,
                       self.history + c * self.history_capacity + (first - self.history_start),
                       <size_t>written * sizeof(float))
            self.scratch_read = self.scratch_length
            if written == capacity or (stop >= 0 and first + written >= stop):
                self.next_wanted = first + written
                return written
        if stop < 0 and self.recording:
            self.forget_history(False)               # a read to the end: no second copy
        next_available = self.scratch_start + self.scratch_read
        if first + written < next_available:
            if self.may_seek:
                self.seek_for(first + written)
            else:
                self.start_run(0, 0, 0)               # from the start, reading forward
        elif self.may_seek and first + written > next_available and (
                not self.seeks_are_exact
                or first + written - next_available > (<int64_t>(READ_AHEAD_SECONDS * self.out_rate)
                                             + self.codec_preroll + self.filter_margin)):
            # Reading ahead gives the same samples as a seek only where seeks are exact; elsewhere a
            # request that does not continue the run always seeks, so that it does not depend on
            # what was decoded before.
            self.seek_for(first + written)
        while written < capacity and (stop < 0 or first + written < stop):
            available = self.scratch_length - self.scratch_read
            if available <= 0:
                if not self.produce():
                    break
                continue
            position = self.scratch_start + self.scratch_read
            wanted = first + written
            if position < wanted:
                skip = min(available, wanted - position)
                self.scratch_read += <int>skip
                continue
            if position > wanted:
                with gil:
                    raise RuntimeError(f"internal error: audio sample {wanted} was skipped "
                                       f"(the decoder is at {position})")
            n = min(available, capacity - written)
            if stop >= 0:
                n = min(n, stop - wanted)
            for c in range(channels):
                memcpy(dst + c * channel_stride + written * sizeof(float),
                       self.planes[c] + self.scratch_read, <size_t>n * sizeof(float))
            written += n
            self.scratch_read += <int>n
        self.next_wanted = first + written
        return written

    def read(self, int64_t first, int64_t stop, size_t address, Py_ssize_t channel_stride, int64_t capacity):
        """Write output samples [first, stop) (stop < 0: to the end of the stream), at most
        ``capacity``, as float32 rows at ``address + c * channel_stride``; return how many came.

        Fewer than asked means the stream ended. Consecutive calls continue without seeking.
        """
        if first < 0 or capacity < 0:
            raise ValueError(f"invalid sample range: first={first}, capacity={capacity}")
        cdef int64_t written
        with nogil:
            written = self.read_into(first, stop, <char *>address, channel_stride, capacity)
        return written

    @property
    def at_end(self):
        """Whether every sample of the stream has been delivered."""
        return self.drained and self.next_wanted >= self.scratch_start + self.scratch_length


def compact_rows(size_t address, int rows, Py_ssize_t stride, Py_ssize_t row_bytes):
    """Move rows 1.. of a (rows, stride bytes) block so that they follow each other with no gap:
    row r goes from ``address + r * stride`` to ``address + r * row_bytes`` (row_bytes <= stride)."""
    if row_bytes > stride or row_bytes < 0:
        raise ValueError(f"cannot compact rows of {stride} bytes to {row_bytes} bytes")
    cdef char *base = <char *>address
    cdef int r
    with nogil:
        for r in range(1, rows):
            memmove(base + r * row_bytes, base + r * stride, <size_t>row_bytes)
