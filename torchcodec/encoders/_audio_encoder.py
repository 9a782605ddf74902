"""AudioEncoder: TorchCodec's one-shot audio encoder, a thin layer over :class:`Encoder`."""
from __future__ import annotations

from typing import Any, Optional

from torchcodec._core._error import InvalidArgumentError
from torchcodec.encoders import _inputs
from torchcodec.encoders._encoded_bytes import memory_to_array
from torchcodec.encoders._multi_stream_encoder import Encoder, PathLike


class AudioEncoder:
    """Encodes ``samples`` in one go: float32 in [-1, 1] of shape (num_channels, num_samples), or
    1-D for one channel, as numpy, torch, jax or any buffer, in any memory layout (read in place).
    ``sample_rate``: of the input, in Hz. The codec is the container's default (from the
    extension or ``format``: mp3, aac in mp4/m4a/mov, flac, wav, opus, vorbis in ogg/mkv...).

    Args:
        samples: float32 samples of shape (num_channels, num_samples), or (num_samples,) for one channel.
        sample_rate: the input's sample rate in Hz (> 0).

    Raises:
        ValueError: ``samples`` is not a 1-D or 2-D float32 array, or ``sample_rate <= 0``.
    """

    def __init__(self, samples: Any, *, sample_rate: int):
        shape = _inputs.checked_shape(samples, "samples", (1, 2), "float32")
        if not sample_rate > 0:
            raise InvalidArgumentError(f"{sample_rate = } must be > 0.")
        self._samples = samples
        self._num_channels = 1 if len(shape) == 1 else shape[0]
        self._sample_rate = sample_rate

    def _encoder(self, bit_rate: Optional[int], num_channels: Optional[int],
                 sample_rate: Optional[int]) -> tuple[Encoder, Any]:
        encoder = Encoder()
        stream = encoder.add_audio(sample_rate=self._sample_rate, num_channels=self._num_channels,
                                   bit_rate=bit_rate, out_num_channels=num_channels, out_sample_rate=sample_rate)
        return encoder, stream

    def _feed(self, stream: Any) -> None:
        stream._add(self._samples, allow_1d=True)

    def to_file(self, dest: PathLike, *, bit_rate: Optional[int] = None, num_channels: Optional[int] = None,
                sample_rate: Optional[int] = None) -> None:
        """Encode into the file ``dest`` (its extension chooses the container and codec).
        ``bit_rate``: bits per second (default: the codec's); ``num_channels``, ``sample_rate``:
        of the output (defaults: the input's; remixed and resampled by libswresample).

        Args:
            dest: the output path (str or pathlib.Path); its extension chooses container and codec.
            bit_rate: bits per second; None: the codec's default.
            num_channels: output channel count; None: the input's.
            sample_rate: output sample rate in Hz; None: the input's.

        Raises:
            ValueError: an unknown container, or a setting the codec refuses (checked before the
                file is created).
        """
        encoder, stream = self._encoder(bit_rate, num_channels, sample_rate)
        with encoder.open_file(dest):
            self._feed(stream)

    def to_file_like(self, file_like: Any, format: str, *, bit_rate: Optional[int] = None,
                     num_channels: Optional[int] = None, sample_rate: Optional[int] = None) -> None:
        """Encode into a binary file-like object (only ``write`` and ``seek`` are called) in the
        container ``format`` ("mp3", "wav", "flac", "ogg", "opus", "mp4"...)."""
        encoder, stream = self._encoder(bit_rate, num_channels, sample_rate)
        with encoder.open_file_like(file_like, format=format):
            self._feed(stream)

    def to_tensor(self, format: str, *, bit_rate: Optional[int] = None, num_channels: Optional[int] = None,
                  sample_rate: Optional[int] = None) -> Any:
        """The encoded bytes, in the container ``format``, as a 1-D uint8 CPU array of the bridge's
        library (torch tensor or numpy array), allocated by it."""
        encoder, stream = self._encoder(bit_rate, num_channels, sample_rate)
        sink = encoder._open_memory(format)
        with encoder:
            self._feed(stream)
        return memory_to_array(sink)
