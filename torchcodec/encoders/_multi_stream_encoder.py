"""Encoder: TorchCodec's multi-stream, incremental encoder over the Cython engine
(torchcodec/_core/_muxer.pyx and _encoder.pyx).

Streams are described with ``add_video``/``add_audio``; ``open_file``/``open_file_like`` builds the
engine (a Muxer, then one stream encoder per stream: video streams first, then audio streams, as
TorchCodec orders them), so that every setting is checked before the destination is created;
frames and samples are then encoded as they arrive, without the GIL, and ``close`` drains the
codecs and writes the trailer.
"""
from __future__ import annotations

import os
import threading
import warnings
from typing import Any, Optional, Union

from torchcodec import _outputs
from torchcodec._core._avio import FileObjectSink, MemorySink
from torchcodec._core._encoder import AudioStreamEncoder, VideoStreamEncoder
from torchcodec._core._error import InvalidArgumentError
from torchcodec._core._devices import parse_device
from torchcodec._core._muxer import Muxer
from torchcodec.encoders import _inputs, _nvenc

PathLike = Union[str, "os.PathLike[str]"]


def _device_name(device: Any) -> str:
    """"cpu" or "cuda:N" from a str or torch.device (None: torch's default device when torch is in
    use, as everywhere in torchcodec; see torchcodec._core._devices.parse_device)."""
    name, index = parse_device(device)
    return "cpu" if index is None else f"{name}:{index}"


def _options(extra_options: Optional[dict[str, Any]]) -> dict[str, str]:
    if extra_options is None:
        return {}
    if not isinstance(extra_options, dict):
        raise InvalidArgumentError(f"extra_options must be a dict, got {type(extra_options).__name__}")
    return {str(key): str(value) for key, value in extra_options.items()}


class VideoStream:
    """A video stream within an :class:`Encoder`, returned by :meth:`Encoder.add_video`."""

    def __init__(self, encoder: "Encoder", spec: dict[str, Any]):
        self._encoder = encoder
        self._spec = spec
        self._engine: Optional[VideoStreamEncoder] = None

    def add_frames(self, frames: Any) -> None:
        """Encode ``frames``: uint8 RGB of shape (N, 3, H, W), H and W those given to ``add_video``,
        on the device given there; any array library, any memory layout (read in place)."""
        with self._encoder._using("add frames", "addFrames"):
            expected, actual = self._spec["device"], _outputs.device_of(frames)
            if expected != actual:
                raise InvalidArgumentError(f"All frames must be on the same device. Expected {expected}, got {actual}")
            if expected == "cpu":
                frames_in = _inputs.frames_input(frames)
                self._engine.add_frames(frames_in.address, frames_in.shape, frames_in.strides, *frames_in.extent())
            else:
                frames_in = _inputs.frames_input(frames, device_index=_nvenc.device_index(self._spec))
                self._engine.add_frames(frames_in.address, frames_in.shape, frames_in.strides, frames_in.stream or 0)
                frames_in.finish()


class AudioStream:
    """An audio stream within an :class:`Encoder`, returned by :meth:`Encoder.add_audio`."""

    def __init__(self, encoder: "Encoder", spec: dict[str, Any]):
        self._encoder = encoder
        self._spec = spec
        self._engine: Optional[AudioStreamEncoder] = None

    def add_samples(self, samples: Any) -> None:
        """Encode ``samples``: float32 in [-1, 1] of shape (num_channels, num_samples), num_channels
        that of ``add_audio``; any array library, any memory layout (read in place)."""
        self._add(samples, allow_1d=False)

    def _add(self, samples: Any, allow_1d: bool) -> None:
        with self._encoder._using("add samples", "addSamples"):
            samples_in = _inputs.samples_input(samples, allow_1d=allow_1d)
            self._engine.add_samples(samples_in.address, samples_in.shape, samples_in.strides)


class _Use:
    """Holds an Encoder's lock for one call; a second thread is told, not made to wait."""

    def __init__(self, encoder: "Encoder", action: str, camel: str):
        self._encoder, self._action, self._camel = encoder, action, camel

    def __enter__(self) -> None:
        encoder = self._encoder
        if not encoder._lock.acquire(blocking=False):
            raise RuntimeError("this Encoder is being used by another thread: an encoder may be used by one "
                               "thread at a time (give each thread its own, or serialise the calls)")
        if encoder._state == "closed":
            encoder._lock.release()
            raise RuntimeError(f"Cannot {self._action} after close() was called.")
        if encoder._state != "open":
            encoder._lock.release()
            raise RuntimeError(f"Call open() before {self._camel}().")

    def __exit__(self, *exc: Any) -> None:
        self._encoder._lock.release()


class Encoder:
    """A multi-stream encoder (video and/or audio), fed incrementally.

    Add streams with :meth:`add_video` and :meth:`add_audio`, open a destination with
    :meth:`open_file` (the extension chooses the container) or :meth:`open_file_like` (``format``
    does), feed the returned streams with ``add_frames``/``add_samples`` as often as needed (the
    data is encoded as it arrives; memory stays bounded), and finish with :meth:`close` or by using
    the encoder as a context manager. Every setting is checked when the destination is opened,
    before anything is written. An Encoder is used by one thread at a time; while it encodes, the
    GIL is released, so other threads (with other encoders) run.
    """

    def __init__(self) -> None:
        self._videos: list[VideoStream] = []
        self._audios: list[AudioStream] = []
        self._muxer: Optional[Muxer] = None
        self._state = "new"
        self._lock = threading.Lock()

    def _using(self, action: str, camel: str) -> _Use:
        return _Use(self, action, camel)

    def add_video(self, *, height: int, width: int, frame_rate: float, device: Any = None,
                  codec: Optional[str] = None, pixel_format: Optional[str] = None,
                  crf: Optional[Union[int, float]] = None, preset: Optional[Union[str, int]] = None,
                  extra_options: Optional[dict[str, Any]] = None) -> VideoStream:
        """Add a video stream of ``width`` x ``height`` RGB frames at ``frame_rate`` frames per
        second (also the output's rate). ``codec``: an encoder ("libx264") or codec ("h264") name,
        default the container's. ``pixel_format``: e.g. "yuv420p", "yuv444p", default the codec's
        first. ``crf``, ``preset``: the codec's options of those names (ignored, with a warning,
        by codecs without them). ``extra_options``: more codec or container options (``{"tune":
        "film", "g": 60, "movflags": "+faststart"}``); unknown names are an error at open time.
        Must be called before the encoder is opened.

        Args:
            height: frame height in pixels (> 0).
            width: frame width in pixels (> 0).
            frame_rate: frames per second of the input and the output (> 0).
            device: None or "cpu" (default), or "cuda"/"cuda:N": frames on that GPU (torch, cupy,
                any ``__cuda_array_interface__``), encoded by NVENC (h264_nvenc for mp4/mov/mkv by
                default, hevc_nvenc/av1_nvenc by ``codec``; NV12 only; refused with a RuntimeError
                where CUDA is not available, and with NvencUnavailableError, whose ``cause`` says
                why, where NVENC is not).
            codec: encoder or codec name; None: the container's default.
            pixel_format: the encoded pixel format; None: the codec's first.
            crf: constant rate factor, for codecs that have one.
            preset: the encoder's speed preset (a name, or a number for SVT-AV1).
            extra_options: more codec or container options, by FFmpeg's names.

        Returns:
            VideoStream: the stream to feed with :meth:`VideoStream.add_frames`.

        Raises:
            ValueError: a size or frame rate that is not > 0, or NVENC unavailable (also a RuntimeError).
            RuntimeError: the encoder is already open or closed.
        """
        self._check_new("add_video")
        if height <= 0:
            raise InvalidArgumentError(f"height must be > 0, got {height}")
        if width <= 0:
            raise InvalidArgumentError(f"width must be > 0, got {width}")
        if not frame_rate > 0:
            raise InvalidArgumentError(f"frame_rate must be > 0, got {frame_rate}")
        spec = dict(height=int(height), width=int(width), frame_rate=float(frame_rate), device=_device_name(device),
                    codec=codec, pixel_format=pixel_format, crf=crf,
                    preset=str(preset) if isinstance(preset, int) else preset,
                    extra_options=_options(extra_options))
        if spec["device"] != "cpu":
            _nvenc.check_cuda_video(spec)
        stream = VideoStream(self, spec)
        self._videos.append(stream)
        return stream

    def add_audio(self, *, sample_rate: int, num_channels: int, bit_rate: Optional[int] = None,
                  out_num_channels: Optional[int] = None, out_sample_rate: Optional[int] = None) -> AudioStream:
        """Add an audio stream fed float32 samples of ``num_channels`` channels at ``sample_rate``
        Hz, encoded with the container's default audio codec at ``out_sample_rate`` Hz with
        ``out_num_channels`` channels (defaults: the input's) and ``bit_rate`` bits per second
        (default: the codec's). Must be called before the encoder is opened.

        Args:
            sample_rate: the input's sample rate in Hz (> 0).
            num_channels: the input's channel count (1 to 8).
            bit_rate: bits per second; None: the codec's default.
            out_num_channels: the output's channel count; None: ``num_channels``.
            out_sample_rate: the output's sample rate in Hz; None: ``sample_rate``.

        Returns:
            AudioStream: the stream to feed with :meth:`AudioStream.add_samples`.

        Raises:
            ValueError: a rate or channel count out of range (also a RuntimeError).
            RuntimeError: the encoder is already open or closed.
        """
        self._check_new("add_audio")
        if sample_rate <= 0:
            raise InvalidArgumentError(f"sample_rate must be > 0, got {sample_rate}")
        if num_channels <= 0:
            raise InvalidArgumentError(f"num_channels must be > 0, got {num_channels}")
        if num_channels > 8:
            raise InvalidArgumentError(f"Trying to encode {num_channels} channels, but FFmpeg only supports 8 "
                                       f"channels per frame.")
        spec = dict(sample_rate=int(sample_rate), num_channels=int(num_channels), bit_rate=bit_rate,
                    out_num_channels=out_num_channels, out_sample_rate=out_sample_rate)
        stream = AudioStream(self, spec)
        self._audios.append(stream)
        return stream

    def open_file(self, dest: PathLike) -> "Encoder":
        """Open the file ``dest`` for writing (the extension chooses the container: .mp4, .mkv,
        .webm, .mov, .avi, .gif, .mp3, .wav, .flac...); returns ``self``."""
        self._check_openable()
        return self._open(Muxer(path=os.fspath(dest)))

    def open_file_like(self, dest: Any, *, format: str) -> "Encoder":
        """Open the binary file-like object ``dest`` (only its ``write`` and ``seek`` are used) in
        the container ``format`` ("mp4", "mkv", "webm", "wav"...); returns ``self``."""
        self._check_openable()
        return self._open(Muxer(format=format, sink=FileObjectSink(dest)))

    def _open_memory(self, format: str) -> MemorySink:
        """Open an in-memory destination (for ``to_tensor``)."""
        self._check_openable()
        sink = MemorySink()
        self._open(Muxer(format=format, sink=sink))
        return sink

    def _open(self, muxer: Muxer) -> "Encoder":
        if not self._videos and not self._audios:
            raise RuntimeError("Call addVideoStream() or addAudioStream() before open().")
        if not self._lock.acquire(blocking=False):
            raise RuntimeError("this Encoder is being used by another thread")
        try:
            for stream in self._videos:
                spec = stream._spec
                if spec["device"] != "cpu":
                    stream._engine = _nvenc.cuda_video_engine(muxer, spec)
                else:
                    stream._engine = VideoStreamEncoder(
                        muxer, spec["width"], spec["height"], spec["frame_rate"], spec["codec"],
                        spec["pixel_format"], spec["crf"], spec["preset"], spec["extra_options"])
            for stream in self._audios:
                spec = stream._spec
                stream._engine = AudioStreamEncoder(muxer, spec["sample_rate"], spec["num_channels"], spec["bit_rate"],
                                                    spec["out_num_channels"], spec["out_sample_rate"])
            muxer.open()
            muxer.write_header()
        except BaseException:
            for stream in self._videos + self._audios:
                stream._engine = None
            muxer.abort()
            raise
        finally:
            self._lock.release()
        self._muxer = muxer
        self._state = "open"
        return self

    def close(self) -> None:
        """Encode what the codecs still hold, write the container's trailer and close the
        destination. Closing twice does nothing."""
        if self._state == "closed":
            return
        if not self._lock.acquire(blocking=False):
            raise RuntimeError("this Encoder is being used by another thread: close() it from that thread")
        try:
            was_open, self._state = self._state == "open", "closed"
            if was_open:
                try:
                    for stream in self._audios + self._videos:
                        stream._engine.finish()
                finally:
                    self._muxer.finish()
        finally:
            self._lock.release()

    def __enter__(self) -> "Encoder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        # As TorchCodec's: an encoder dropped while open still finishes its file.
        if getattr(self, "_state", None) == "open":
            try:
                self.close()
            except Exception as error:       # noqa: BLE001 - nothing can be raised from here
                warnings.warn(f"closing an Encoder that was not closed failed: {error}", RuntimeWarning)

    def _check_new(self, method: str) -> None:
        if self._state != "new":
            raise RuntimeError(f"{method}() must be called before open_file()/open_file_like()"
                               + (" (the encoder is closed)" if self._state == "closed" else ""))

    def _check_openable(self) -> None:
        if self._state == "closed":
            raise RuntimeError("Cannot open after close() was called.")
        if self._state == "open":
            raise RuntimeError("open() was already called.")
