"""AudioConverter: decoded audio to normalised float32 samples, optionally resampled and remixed.

The audio reader behind AudioDecoder converts with it at C level (through its ``resampler``, which
it restarts at aligned positions for exact ranges, see _audio_reader.pyx); callers of the building
blocks convert RawAudioSamples one frame at a time with ``convert`` and finish with ``drain``.
Both are libswresample's samples: a whole-stream ``convert`` + ``drain`` run gives the samples of
``AudioDecoder(...).get_all_samples()`` with the same sample_rate and num_channels.
"""
import numbers

from libc.stdint cimport int64_t, uint8_t
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy

from torchcodec._core._raw_frames cimport RawAudioSamples
from torchcodec._core._resampler cimport Resampler
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg.avutil cimport AVSampleFormat

from torchcodec import _outputs
from torchcodec._frame import AudioSamples
from torchcodec._memory import check_request


def _positive_or_none(value, name):
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int or None, got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value}")
    if value >= 2**31:
        raise ValueError(f"{name}={value} is out of range")
    return int(value)


cdef AudioConverter audio_converter(int sample_rate, int num_channels):
    cdef AudioConverter converter = AudioConverter.__new__(AudioConverter)
    converter.requested_rate = sample_rate
    converter.requested_channels = num_channels
    return converter


cdef class AudioConverter:
    """Turns :class:`RawAudioSamples` into normalised float32 ``AudioSamples`` (channels, samples)
    in [-1, 1], resampling and remixing when asked::

        converter = AudioConverter(sample_rate=16_000)
        for packet in demuxer:
            for raw_samples in packet_decoder.decode(packet):
                samples = converter.convert(raw_samples)
        for raw_samples in packet_decoder.drain():
            samples = converter.convert(raw_samples)
        samples = converter.drain()

    A stateful stream processor bound to one stream: feed it the stream's samples in order. When
    resampling it holds samples back between calls, so a call may give fewer samples than it was
    given (even none); ``drain()`` gives the rest. The pts of each result continues the previous
    one's (the first frame's pts plus the samples given out so far).

    Args:
        sample_rate: the output's sample rate (default: the source's: no resampling).
        num_channels: the output's number of channels (default: the source's).

    Passive and not thread-safe; ``convert`` releases the GIL while it converts. Process-local.
    """

    def __cinit__(self, *args, **kwargs):
        self.resampler = None
        self.requested_rate = 0
        self.requested_channels = 0
        self.out_rate = 0
        self.scratch = NULL
        self.scratch_capacity = 0
        self.first_pts = 0.0
        self.emitted = 0
        self.generation = None
        self.drained = False

    def __init__(self, sample_rate=None, num_channels=None):
        self.requested_rate = _positive_or_none(sample_rate, "sample_rate")
        self.requested_channels = _positive_or_none(num_channels, "num_channels")

    def __dealloc__(self):
        free(self.scratch)

    def __reduce__(self):
        raise TypeError("AudioConverter cannot be pickled, copied or sent to another process: it is a handle to an "
                        "FFmpeg object that only exists in this one. A resampler carries filter history across "
                        "calls that FFmpeg cannot serialise. Construct one in each process.")

    def __repr__(self):
        return (f"AudioConverter(sample_rate={self.requested_rate or None}, "
                f"num_channels={self.requested_channels or None})")

    cdef int start(self, int in_rate) except -1:
        self.out_rate = self.requested_rate if self.requested_rate > 0 else in_rate
        self.resampler = Resampler(in_rate, self.out_rate, self.requested_channels)
        return 0

    cdef int ensure_scratch(self, int samples, int channels) except -1:
        if samples * <int64_t>channels <= self.scratch_capacity:
            return 0
        check_request(f"converting audio to {self.out_rate} Hz", samples=samples, channels=channels)
        free(self.scratch)
        self.scratch = <float *>malloc(<size_t>samples * channels * sizeof(float))
        if self.scratch == NULL:
            self.scratch_capacity = 0
            raise MemoryError(f"cannot allocate {samples} x {channels} samples of scratch space")
        self.scratch_capacity = samples * channels
        return 0

    cdef object samples_from_scratch(self, int count, int capacity):
        """The first ``count`` samples of each of the scratch's channel rows (``capacity`` apart) as
        a new AudioSamples, its pts continuing the previous result's."""
        cdef int channels = self.resampler.out_channels
        cdef int c
        memory = _outputs.allocate((channels, count), "float32", bridge=_outputs.host_bridge())
        cdef char *dst = <char *><size_t>memory.address
        with nogil:
            for c in range(channels):
                memcpy(dst + <size_t>c * count * sizeof(float), self.scratch + <size_t>c * capacity,
                       <size_t>count * sizeof(float))
        pts = self.first_pts + self.emitted / <double>self.out_rate
        self.emitted += count
        return AudioSamples(data=memory.finish(), pts_seconds=pts, duration_seconds=count / <double>self.out_rate,
                            sample_rate=self.out_rate)

    def convert(self, RawAudioSamples raw_samples not None):
        """One RawAudioSamples as normalised float32 AudioSamples (possibly fewer samples, or none,
        when resampling). RuntimeError after ``drain()`` (until ``reset()``), when the demuxer seeked
        since the last ``reset()``, or when the sample rate changes."""
        if self.generation is None:
            self.generation = raw_samples._generation
        elif self.generation != raw_samples._generation:
            raise RuntimeError("The demuxer seeked since this converter was last reset(), and a resampler carries "
                               "state across calls, so these samples would be resampled against the wrong history. "
                               "Call reset() on every converter fed by that demuxer after a seek.")
        if self.drained:
            raise RuntimeError("This AudioConverter has been drained. Call reset() to convert more samples.")
        cdef int in_rate = raw_samples.sample_rate
        if self.resampler is None:
            self.first_pts = raw_samples.pts_seconds
            self.emitted = 0
            self.start(in_rate)
        elif in_rate != self.resampler.in_rate:
            raise RuntimeError(f"the sample rate changed from {self.resampler.in_rate} to {in_rate} Hz: convert "
                               f"another stream with another AudioConverter (or reset() this one)")
        cdef int count = raw_samples.ptr.nb_samples, n, c, s, capacity, channels
        cdef const lavu.AVFrame *frame = raw_samples.ptr
        cdef const uint8_t *planes[64]
        cdef float *out[64]
        cdef char *interleaved = NULL
        cdef int bytes_per_sample = lavu.av_get_bytes_per_sample(<AVSampleFormat>frame.format)
        cdef int in_channels = frame.ch_layout.nb_channels
        cdef size_t row
        if in_channels > 64:
            raise ValueError(f"{in_channels} channels: at most 64 are supported")
        data = raw_samples._data
        with nogil:
            self.resampler.configure(frame)
        capacity = self.resampler.max_output(count)
        channels = self.resampler.out_channels
        self.ensure_scratch(max(capacity, 1), channels)
        for c in range(channels):
            out[c] = self.scratch + <size_t>c * capacity
        if data is None:
            with nogil:
                n = self.resampler.convert(frame, 0, count, out, capacity)
            return self.samples_from_scratch(n, capacity)
        # The samples were read (and may have been changed in place): convert what ``data`` holds, a
        # planar copy of the frame in its sample type, laid out again as the frame's format is.
        row = <size_t>count * bytes_per_sample
        cdef char *address = <char *><size_t>_outputs.describe(data, writable=False, name="RawAudioSamples.data").address
        try:
            if lavu.av_sample_fmt_is_planar(<AVSampleFormat>frame.format):
                for c in range(in_channels):
                    planes[c] = <const uint8_t *>(address + c * row)
            else:
                interleaved = <char *>malloc(row * in_channels + 1)
                if interleaved == NULL:
                    raise MemoryError("cannot allocate a frame of samples")
                with nogil:
                    for c in range(in_channels):
                        for s in range(count):
                            memcpy(interleaved + (<size_t>s * in_channels + c) * bytes_per_sample,
                                   address + c * row + <size_t>s * bytes_per_sample, bytes_per_sample)
                planes[0] = <const uint8_t *>interleaved
            with nogil:
                n = self.resampler.convert_planes(planes, count, <uint8_t **>out, capacity)
        finally:
            free(interleaved)
        return self.samples_from_scratch(n, capacity)

    def drain(self):
        """The samples the resampler still holds (none unless resampling): call it at the end of the
        stream, after converting the decoder's ``drain()``. RuntimeError before any conversion."""
        if self.resampler is None:
            raise RuntimeError("This AudioConverter hasn't converted any samples, so there is nothing to drain.")
        cdef int capacity = max(self.resampler.max_output(0), 1)
        cdef int channels = self.resampler.out_channels, c, n
        cdef float *out[64]
        self.ensure_scratch(capacity, channels)
        for c in range(channels):
            out[c] = self.scratch + <size_t>c * capacity
        with nogil:
            n = self.resampler.drain(<uint8_t **>out, capacity)
        self.drained = True
        return self.samples_from_scratch(n, capacity)

    def reset(self):
        """Drop the resampler's state and start over: after a ``Demuxer.seek``, after ``drain()``, and
        before converting another stream."""
        self.resampler = None
        self.drained = False
        self.generation = None
        self.emitted = 0
