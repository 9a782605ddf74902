"""VideoEncoder: TorchCodec's one-shot video encoder, a thin layer over :class:`Encoder`."""
from __future__ import annotations

from typing import Any, Optional, Union

from torchcodec import _outputs
from torchcodec._core._error import InvalidArgumentError
from torchcodec.encoders import _inputs
from torchcodec.encoders._encoded_bytes import memory_to_array
from torchcodec.encoders._multi_stream_encoder import Encoder, PathLike


class VideoEncoder:
    """Encodes ``frames`` in one go: uint8 RGB of shape (N, 3, H, W) (N, C, H, W), as numpy,
    torch, jax or any buffer, in any memory layout (read in place, never copied as a whole), on the
    CPU or (torch, cupy) on a CUDA device, which encodes with NVENC. ``frame_rate``: frames per
    second of the input, and of the output.

    Args:
        frames: uint8 RGB frames of shape (N, 3, H, W).
        frame_rate: frames per second (> 0).

    Raises:
        ValueError: ``frames`` is not a 4-D uint8 array with 3 channels, or ``frame_rate <= 0``.
    """

    def __init__(self, frames: Any, *, frame_rate: float):
        _inputs.checked_shape(frames, "frames", (4,), "uint8")
        if not frame_rate > 0:
            raise InvalidArgumentError(f"{frame_rate = } must be > 0.")
        self._frames = frames
        self._frame_rate = frame_rate

    def _encoder(self, codec: Optional[str], pixel_format: Optional[str], crf: Optional[Union[int, float]],
                 preset: Optional[Union[str, int]], extra_options: Optional[dict[str, Any]]) -> tuple[Encoder, Any]:
        encoder = Encoder()
        stream = encoder.add_video(height=self._frames.shape[2], width=self._frames.shape[3],
                                   frame_rate=self._frame_rate, device=_outputs.device_of(self._frames), codec=codec,
                                   pixel_format=pixel_format, crf=crf, preset=preset, extra_options=extra_options)
        return encoder, stream

    def to_file(self, dest: PathLike, *, codec: Optional[str] = None, pixel_format: Optional[str] = None,
                crf: Optional[Union[int, float]] = None, preset: Optional[Union[str, int]] = None,
                extra_options: Optional[dict[str, Any]] = None) -> None:
        """Encode into the file ``dest``; its extension chooses the container (.mp4, .mkv, .webm,
        .mov, .avi, .gif...). ``codec`` (e.g. "libx264" or "h264"; default: the container's),
        ``pixel_format`` (e.g. "yuv420p", "yuv444p"; default: the codec's first), ``crf``,
        ``preset`` and ``extra_options`` (more codec or container options) as in
        :meth:`Encoder.add_video`.

        Args:
            dest: the output path (str or pathlib.Path); its extension chooses the container.
            codec: encoder name or codec name; None: the container's default (libx264 for mp4,
                mov and mkv, VP9 for webm).
            pixel_format: the encoded pixel format; None: the codec's first supported one.
            crf: constant rate factor for codecs that have one (libx264, libx265, VP9, AV1...).
            preset: the encoder's speed preset (e.g. "ultrafast" ... "veryslow" for libx264).
            extra_options: more options for the codec or the container, as FFmpeg names them.

        Raises:
            ValueError: an unknown container, codec, pixel format or option, or a setting the
                codec refuses; checked before the file is created.
        """
        encoder, stream = self._encoder(codec, pixel_format, crf, preset, extra_options)
        with encoder.open_file(dest):
            stream.add_frames(self._frames)

    def to_file_like(self, file_like: Any, format: str, *, codec: Optional[str] = None,
                     pixel_format: Optional[str] = None, crf: Optional[Union[int, float]] = None,
                     preset: Optional[Union[str, int]] = None, extra_options: Optional[dict[str, Any]] = None) -> None:
        """Encode into a binary file-like object (only its ``write`` and ``seek`` are called) in the
        container ``format`` ("mp4", "mkv", "webm", "mov", "avi"...); options as :meth:`to_file`."""
        encoder, stream = self._encoder(codec, pixel_format, crf, preset, extra_options)
        with encoder.open_file_like(file_like, format=format):
            stream.add_frames(self._frames)

    def to_tensor(self, format: str, *, codec: Optional[str] = None, pixel_format: Optional[str] = None,
                  crf: Optional[Union[int, float]] = None, preset: Optional[Union[str, int]] = None,
                  extra_options: Optional[dict[str, Any]] = None) -> Any:
        """The encoded bytes, in the container ``format``, as a 1-D uint8 CPU array of the bridge's
        library (torch tensor or numpy array), allocated by it; options as :meth:`to_file`."""
        encoder, stream = self._encoder(codec, pixel_format, crf, preset, extra_options)
        sink = encoder._open_memory(format)
        with encoder:
            stream.add_frames(self._frames)
        return memory_to_array(sink)
