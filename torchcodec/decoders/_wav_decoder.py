"""WavDecoder: TorchCodec's fast WAV decoder, over torchcodec/_core/_wav.pyx."""
from __future__ import annotations

import os
import threading

from torchcodec._core._wav import WavReader
from torchcodec._core._source import SourceLike, open_source
from torchcodec.decoders._audio_decoder import SampleRanges
from torchcodec._core._metadata import AudioStreamMetadata, audio_metadata


class WavDecoder(SampleRanges):
    """Decode a WAV file (8/16/24/32-bit PCM, 32/64-bit float, any number of channels) by reading
    its samples straight into the output, with none of FFmpeg's per-packet work.

    Same sources and methods as :class:`AudioDecoder`, and the same values, bit for bit; no
    resampling or remixing (use AudioDecoder for those, and for other WAV encodings such as
    ADPCM or mu-law, which raise ``UnsupportedWavError``, a ValueError and a RuntimeError, as does
    a file that is not WAV). ``stream_index`` is 0.

    Args:
        source: a path (str or pathlib.Path); bytes, bytearray, memoryview or a 1-D uint8 array of
            the file's bytes (read in place); or a binary file object with ``read(n)`` and
            ``seek(offset, whence)``.

    Raises:
        UnsupportedWavError: the data is not WAV, or is a WAV encoding other than PCM or float
            (a ValueError and a RuntimeError).
        TypeError: ``source`` is of no supported kind.
        MediaNotFoundError: the path does not exist (a FileNotFoundError and a RuntimeError).
    """

    _nothing_decoded = "No samples to decode."      # TorchCodec's words for an empty range

    def __init__(self, source: SourceLike) -> None:
        self._reopen = dict(source=source)
        self._pid = os.getpid()
        self._lock = threading.Lock()
        reader_input, name = open_source(source)
        self._engine = reader = WavReader(reader_input, name)
        self.stream_index = 0
        self._sample_rate = reader.sample_rate
        self._begin = 0.0
        self.metadata: AudioStreamMetadata = audio_metadata(dict(
            duration_seconds_from_header=reader.num_samples / reader.sample_rate,
            begin_stream_seconds_from_header=None,      # WAV has no start time (as FFmpeg says)
            bit_rate=reader.sample_rate * reader.num_channels * reader.bits_per_sample,
            codec=reader.codec,
            stream_index=0,
            sample_rate=reader.sample_rate,
            num_channels=reader.num_channels,
            sample_format=reader.sample_format,
        ))

    def _engines(self) -> tuple:
        return (self._engine,)

    def _expected_remaining(self, first: int) -> int:
        return max(1, self._engine.num_samples - first)
