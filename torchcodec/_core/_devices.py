"""The device registry: how the engine reaches a device other than the CPU.

A device wing (torchcodec._cuda) registers its name and a loader of its :class:`DeviceParts` when
it is imported; the engine asks ``device_parts`` for them only when a decoder, converter or frame
is on that device, so that decoding on the CPU loads nothing of a wing. The registry is written
once per device, at import. ``parse_device`` reads every device name, and CpuFallbackStatus is
what a VideoDecoder on any device reports about decoding on the CPU instead.
"""
from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Optional, Protocol

from torchcodec._core._error import InvalidArgumentError


@dataclass
class CpuFallbackStatus:
    """Whether a CUDA VideoDecoder decodes on the CPU instead of the GPU, and why.

    ``bool(status)`` is True when it falls back; ``str(status)`` says so with the reason;
    ``reason`` holds the reason alone (None without a fallback). ``status_known`` is False only for
    the "ffmpeg" backend before the first frame (FFmpeg decides then). A CPU decoder's status is
    "no fallback" (it decodes where it was asked to). Frames decoded on the CPU are uploaded and
    converted on the GPU by the same kernels, so outputs are CUDA arrays either way.
    """

    status_known: bool = True
    reason: Optional[str] = None
    backend: str = ""

    def __bool__(self) -> bool:
        return self.status_known and self.reason is not None

    def __str__(self) -> str:
        prefix = f"[{self.backend}] " if self.backend else ""
        if not self.status_known:
            return f"{prefix}Fallback status: Unknown (known after the first frame)"
        if self.reason is None:
            return f"{prefix}Fallback status: No fallback required"
        return f"{prefix}Fallback status: Falling back to the CPU decoder: {self.reason}"


class VideoParts(Protocol):
    """What a VideoDecoder on a device decodes and converts with."""

    decoder: Any          # the stream's VideoPacketDecoder
    converter: Any        # a ColorConverter writing the device's memory

    def set_stream(self, stream: int) -> None:
        """Have the converter write on ``stream`` (the output library's)."""

    def fallback_status(self) -> CpuFallbackStatus:
        """Whether the decoder decodes on the CPU instead, and why."""


class DeviceParts(Protocol):
    """The parts of a device that the engine asks for (see the module's documentation)."""

    def check_usable(self, device: Any) -> None:
        """Raise RuntimeError saying why a VideoDecoder cannot decode on ``device``."""

    def video_parts(self, index: int, demuxer: Any, stream_index: int, num_threads: int) -> VideoParts:
        """The decoder and converter of a VideoDecoder of ``stream_index`` on device ``index``."""

    def packet_decoder(self, demuxer: Any, stream_index: int, index: int, num_threads: int) -> Any:
        """``VideoStream.make_decoder(device=...)``: a VideoPacketDecoder whose RawFrames are on the device."""

    def device_converter(self, index: int) -> Any:
        """The DeviceConverter of ``ColorConverter(device=...)``."""

    def convert_raw_frame(self, converter: Any, raw_frame: Any, rotation: int, width: int, height: int,
                          dtype: str) -> Any:
        """``ColorConverter.convert`` on the device: a new (height, width, 3) array of the bridge's library."""

    def device_planes(self, raw_frame: Any, views: list) -> tuple:
        """``RawFrame.planes`` of a frame on the device, one array per (address, shape, strides, dtype)."""


_LOADERS: dict[str, Callable[[], DeviceParts]] = {}


def register_device(name: str, load: Callable[[], DeviceParts]) -> None:
    """Make ``name`` and ``name:N`` devices, whose parts ``load()`` returns (imported when first
    asked for). Once per name, when the wing is imported."""
    if name == "cpu" or name in _LOADERS or not name.isidentifier():
        raise ValueError(f"cannot register the device {name!r}: it exists, or is not a name")
    _LOADERS[name] = load


def device_parts(device: str) -> DeviceParts:
    """The parts of ``device`` ("cuda" or "cuda:N", as a frame or converter names it)."""
    return _LOADERS[device.partition(":")[0]]()


def parse_device(device: Any) -> tuple[str, Optional[int]]:
    """``("cpu", None)`` for the CPU, ``(name, N)`` for a registered device "name" (N = 0) or
    "name:N" (``torch.device`` objects too); ValueError (also a RuntimeError, as in TorchCodec)
    for anything else. ``None`` is torch's default device (``torch.set_default_device``) when torch
    is in use, as in TorchCodec, and the CPU otherwise (torch is never imported for this)."""
    if device is None:
        torch = sys.modules.get("torch")
        get_default = getattr(torch, "get_default_device", None)
        device = get_default() if get_default is not None else "cpu"
    name, colon, number = str(device).partition(":")
    if colon and not number.isdigit():
        name = ""
    if name == "cpu":
        return "cpu", None
    if name not in _LOADERS:
        names = "".join(f", {name!r} or '{name}:N'" for name in _LOADERS)
        raise InvalidArgumentError(f"Invalid device {device!r}: use None, 'cpu'{names}")
    return name, int(number) if colon else 0
