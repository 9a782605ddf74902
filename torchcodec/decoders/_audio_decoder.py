"""AudioDecoder: TorchCodec's audio decoding API over the Cython engine (torchcodec/_core/_audio_reader.pyx),
and SampleRanges, the sample ranges it shares with WavDecoder."""
from __future__ import annotations

import math
import numbers
import os
import threading
from typing import Any, Optional

from torchcodec import _outputs
from torchcodec._core._audio_reader import compact_rows
from torchcodec._core._error import InvalidArgumentError, InvalidArgumentTypeError
from torchcodec._core._metadata import AudioStreamMetadata
from torchcodec._core._source import SourceLike
from torchcodec._frame import AudioSamples
from torchcodec._logging import forwards_ffmpeg_log
from torchcodec._memory import check_request
from torchcodec.decoders._arguments import as_seconds
from torchcodec.decoders._factory import open_audio
from torchcodec.decoders._reopenable import Reopenable

_SEEK_MODES = ("exact", "approximate")
_UNKNOWN_LENGTH_GUESS = 1 << 22      # samples per channel allocated first when the header has no duration
# A header's duration is believed for the first allocation only up to what the source could hold:
# MAX_EXPANSION bytes of float32 samples (at the stream's rate and channels) per byte of input (MP3
# at 32 kbit/s gives about 88, Opus at 6 kbit/s about 256), and never less than FIRST_BLOCK_BYTES.
# Beyond that the output grows from what is decoded, so that a few KB claiming hours cost neither
# memory nor a refusal by the memory limit.
FIRST_BLOCK_BYTES = 4 << 20
MAX_EXPANSION = 256


class SampleRanges(Reopenable):
    """What AudioDecoder and WavDecoder share: sample ranges by time, read by an engine into one
    array of the bridge's library.

    Subclasses set ``_engine`` (with ``read``, ``at_end`` and ``num_channels``, as
    ``AudioStream``), ``_begin`` (seconds of sample 0), ``_sample_rate``, ``_lock`` and
    ``_expected_remaining``.
    """

    _engine: Any
    _begin: float
    _sample_rate: int
    _lock: threading.Lock
    _nothing_decoded = "No audio frames were decoded."      # TorchCodec's words for an empty range

    def _expected_remaining(self, first: int) -> int:
        """About how many samples the stream holds from position ``first`` on (>= 1)."""
        raise NotImplementedError

    def get_all_samples(self) -> AudioSamples:
        """Return every sample of the stream.

        Returns:
            AudioSamples: ``data`` float32 of shape (num_channels, num_samples) in [-1, 1],
            ``pts_seconds`` of the first sample, ``duration_seconds`` = num_samples / sample_rate,
            ``sample_rate``.

        Raises:
            RuntimeError: the stream holds no sample, or its data cannot be decoded.
            MemoryError: the samples need more than ``torchcodec.get_memory_limit()`` (also a RuntimeError).
        """
        return self.get_samples_played_in_range()

    def get_samples_played_in_range(self, start_seconds: float = 0.0,
                                    stop_seconds: Optional[float] = None) -> AudioSamples:
        """Return the samples played in the half-open range [start_seconds, stop_seconds).

        Sample k is included when ``start <= begin + k / sample_rate < stop``, with times rounded
        to the nearest sample (halves up). A start before the stream's first sample starts there;
        a stop after its end stops there. ``pts_seconds`` is ``max(start_seconds, begin)``, as in
        TorchCodec. ``start == stop`` gives zero samples; ``start > stop`` is a ValueError, and so are
        NaN and infinite times (also RuntimeErrors, as TorchCodec raises for infinities). A range
        wholly before the stream's first sample or at or after its end is a RuntimeError, as in
        TorchCodec; a range inside the stream that is narrower than one sample gives zero samples.

        Args:
            start_seconds: start of the range in seconds, included (default 0: the stream's start).
            stop_seconds: end of the range in seconds, excluded; None reads to the end.

        Returns:
            AudioSamples: ``data`` float32 of shape (num_channels, num_samples) in [-1, 1] (the
            bridge's array type), ``pts_seconds``, ``duration_seconds`` = num_samples / sample_rate
            and ``sample_rate``.

        Raises:
            TypeError: a time is not a number (also a RuntimeError).
            ValueError: ``start_seconds > stop_seconds``, or a time is NaN or infinite (also a
                RuntimeError for infinities, as in TorchCodec).
            RuntimeError: the range lies wholly before the first sample or at or after the end.
            MemoryError: the range needs more than ``torchcodec.get_memory_limit()`` (also a RuntimeError).
        """
        start = as_seconds("start_seconds", start_seconds)
        stop = None if stop_seconds is None else as_seconds("stop_seconds", stop_seconds)
        if stop is not None and not start <= stop:
            raise ValueError(f"Invalid start seconds: {start_seconds}. It must be less than or equal to "
                             f"stop seconds ({stop_seconds}).")
        for name, value in (("start", start), ("stop", stop)):
            if value is not None and not math.isfinite(value):
                raise InvalidArgumentError(f"Invalid {name} seconds: {value}. Times must be finite numbers of "
                                           f"seconds (stop_seconds=None reads to the end).")
        first = max(0, self._position(start))
        last = None if stop is None else max(first, self._position(stop))
        data = self._read(first, last)
        count = _columns(data)
        if count == 0 and (stop is None or stop > start) and not self._inside_stream(first, last, stop):
            raise RuntimeError(f"{self._nothing_decoded} This is probably because start_seconds is too "
                               f"high({start:g}), or because stop_seconds({'None' if stop is None else f'{stop:g}'}) "
                               f"is too low: the stream's samples start at {self._begin:g} s, and the range "
                               f"holds none of them.")
        return AudioSamples(data=data, pts_seconds=max(start, self._begin),
                            duration_seconds=count / self._sample_rate, sample_rate=self._sample_rate)

    # ---- internals ------------------------------------------------------------------------------

    def _inside_stream(self, first: int, last: Optional[int], stop: Optional[float]) -> bool:
        """Whether a range that gave no sample lies inside the stream (narrower than one sample
        there), rather than before its first sample or at or after its end."""
        if stop is None or stop <= self._begin or last != first:
            return False
        return _columns(self._read(first, first + 1)) > 0

    def _position(self, seconds: float) -> int:
        """The sample at time ``seconds``: floor((t - begin) * rate + 0.5), clamped to int64."""
        position = math.floor((seconds - self._begin) * self._sample_rate + 0.5)
        return max(-(2**40), min(position, 2**40))      # ~265 days at 48 kHz; keeps C arithmetic in range

    @forwards_ffmpeg_log
    def _read(self, first: int, last: Optional[int]) -> Any:
        """Samples [first, last) (None: to the end) in one array of the bridge's library.

        The array is sized before decoding from the range, capped by what the header says the
        stream holds (a far stop costs no memory) and by what the source's size makes plausible
        (``_expected_remaining``); when that was short, it grows.
        """
        name = _outputs.get_bridge()
        channels = self._engine.num_channels
        wanted = None if last is None else last - first
        capacity = self._expected_remaining(first)
        if wanted is not None:
            capacity = min(wanted, capacity)
        check_request(self._describe_request(first, last), samples=capacity, channels=channels)
        memory = _outputs.allocate((channels, capacity), "float32", bridge=name)
        count = 0
        with self._lock:
            self._check_fork()
            while True:
                address = memory.address + count * 4
                room = capacity - count
                count += self._engine.read(first + count, -1 if last is None else last,
                                           address, memory.strides[0], room)
                if count < capacity or count == wanted or self._engine.at_end:
                    break
                capacity = capacity * 2 if wanted is None else min(wanted, capacity * 2)
                check_request(self._describe_request(first, last), samples=count + capacity, channels=channels)
                memory = _grow(memory, count, capacity, name)
        return memory.finish(_first_columns(memory, count) if count < capacity else None)

    def _describe_request(self, first: int, last: Optional[int]) -> str:
        until = "the end" if last is None else f"sample {last}"
        return (f"reading samples {first} to {until} ({self._engine.num_channels} channels at "
                f"{self._sample_rate} Hz)")


class AudioDecoder(SampleRanges):
    """Decode the samples of one audio stream, of an audio file or of a video.

    Args:
        source: a path (str or pathlib.Path) or URL; bytes, bytearray, memoryview or a 1-D uint8
            array of encoded bytes (read in place, not copied as TorchCodec does: it must not change
            while the decoder is used); or a binary file object with
            ``read(n)`` and ``seek(offset, whence)``.
        stream_index: absolute index of the audio stream; None picks FFmpeg's best audio stream.
        sample_rate: output sample rate in Hz (libswresample); None keeps the stream's.
        num_channels: output channel count (libswresample's remixing, from the stream's layout to
            the default layout of that count); None keeps the stream's.
        seek_mode: "exact" (default): every range holds exactly the samples of one unbroken decode
            of the whole stream, i.e. the matching slice of ``get_all_samples()``. Where the codec
            and container allow it (lossless codecs, MP3, WAV, FLAC; MP4, MP3 and MPEG files)
            ranges are reached by seeking with a pre-roll; otherwise (AAC, Opus, Vorbis in Ogg,
            Matroska/WebM) decoding reads forward and starts again from the beginning for a range
            behind the last one, as TorchCodec does. "approximate": in streams longer than two
            minutes, always seek; a range then depends only on its bounds, and may differ slightly
            from the unbroken decode's where the codec's state does not resynchronise. Shorter
            streams are read as in exact mode (at most two minutes of decoding for any range,
            one pass for many).

    Samples are float32 in [-1, 1], shaped (num_channels, num_samples), allocated by the bridge
    (numpy, or torch when installed). Sample k of the stream is at ``begin + k / sample_rate``,
    where ``begin`` is the time of the first decoded sample. Errors: TypeError for a bad source
    type, ValueError for bad arguments or a stream that is not audio (also RuntimeErrors where
    TorchCodec raises those, e.g. ``num_channels=0``), RuntimeError for data that cannot be
    decoded, MemoryError (also a RuntimeError) for a range that needs more memory than
    ``torchcodec.get_memory_limit()``, before allocating it.
    """

    @forwards_ffmpeg_log
    def __init__(
        self,
        source: SourceLike,
        *,
        stream_index: Optional[int] = None,
        sample_rate: Optional[int] = None,
        num_channels: Optional[int] = None,
        seek_mode: str = "exact",
    ) -> None:
        _check_positive("sample_rate", sample_rate)
        _check_positive("num_channels", num_channels)
        if seek_mode not in _SEEK_MODES:
            raise ValueError(f"Invalid seek mode ({seek_mode}). Supported values are exact, approximate.")
        self._reopen = dict(source=source, stream_index=stream_index, sample_rate=sample_rate,
                            num_channels=num_channels, seek_mode=seek_mode)
        self._pid = os.getpid()
        self._lock = threading.Lock()
        engine = open_audio(source, stream_index, sample_rate, num_channels, seek_mode)
        self.stream_index: int = engine.stream_index
        self._engine, self._demuxer = engine.reader, engine.demuxer
        self.metadata: AudioStreamMetadata = engine.metadata
        self._sample_rate = self._engine.out_rate
        self._begin = self._engine.begin_seconds
        self._source_size = engine.source_size
        if self._engine.keeps_history:      # reserve what the stream plausibly holds, in one block
            self._engine.history_expected = self._expected_remaining(0)

    def _engines(self) -> tuple:
        return (self._engine, self._demuxer)

    def _expected_remaining(self, first: int) -> int:
        """Samples from position ``first`` to the end by the header, with some slack, capped by
        what the source's size makes plausible (see MAX_EXPANSION) (>= 1)."""
        duration = self.metadata.duration_seconds          # the stream's, else the container's
        slack = self._sample_rate // 10 + 4096
        if duration is None or not math.isfinite(duration) or duration <= 0:
            claimed = min(10 * self._sample_rate, _UNKNOWN_LENGTH_GUESS)
        else:
            begin = self.metadata.begin_stream_seconds or 0.0
            claimed = math.ceil((begin + duration - self._begin) * self._sample_rate) - first + slack
        # In the stream's own samples, then at the output rate: resampling up really needs more.
        rate, channels = self.metadata.sample_rate or self._sample_rate, self.metadata.num_channels or 1
        plausible = max(FIRST_BLOCK_BYTES, MAX_EXPANSION * (self._source_size or 0)) // (4 * channels)
        return max(1, min(claimed, plausible * self._sample_rate // max(1, rate)))


def _check_positive(name: str, value: Any) -> None:
    """None, or a positive int below 2**31 (errors are also RuntimeErrors, as in TorchCodec)."""
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidArgumentTypeError(f"{name} must be an int, got {type(value).__name__} ({value!r})")
    if not 0 < value < 2**31:
        raise InvalidArgumentError(f"{name} must be > 0 (and below 2**31). Got: {value!r}")


def _columns(data: Any) -> int:
    return int(data.shape[1])


def _grow(memory: _outputs.Memory, count: int, capacity: int, name: str) -> _outputs.Memory:
    """A (channels, capacity) array holding the first ``count`` columns of ``memory``'s."""
    bigger = _outputs.allocate((memory.shape[0], capacity), "float32", bridge=name)
    bigger.data[:, :count] = memory.data[:, :count]
    return bigger


def _first_columns(memory: _outputs.Memory, count: int) -> Any:
    """The first ``count`` columns of ``memory``'s array as a C-contiguous array: the rows are moved
    together in place (no new allocation) and a view of the front of the buffer is returned."""
    channels, data = memory.shape[0], memory.data
    compact_rows(memory.address, channels, memory.strides[0], count * 4)
    return data.reshape(-1)[:channels * count].reshape(channels, count)
