"""The containers that decoders return: Frame, FrameBatch and AudioSamples."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any


def _describe(name: str, obj: Any) -> str:
    fields = []
    for field in dataclasses.fields(obj):
        value = getattr(obj, field.name)
        if hasattr(value, "shape") and hasattr(value, "dtype"):
            fields.append(f"    {field.name}: {type(value).__name__} shape={tuple(value.shape)} dtype={value.dtype}")
        else:
            fields.append(f"    {field.name}: {value!r}")
    return f"{name}(\n" + ",\n".join(fields) + ",\n)"


@dataclasses.dataclass
class Frame:
    """A single decoded frame.

    ``data``: (3, H, W) or (H, W, 3) array (per ``dimension_order``), uint8 or float32.
    ``pts_seconds``, ``duration_seconds``: Python floats.
    Unpacks as a tuple: ``data, pts_seconds, duration_seconds = frame``.
    """

    data: Any
    pts_seconds: float
    duration_seconds: float

    def __post_init__(self) -> None:
        self.pts_seconds = float(self.pts_seconds)
        self.duration_seconds = float(self.duration_seconds)

    def __iter__(self) -> Iterator[Any]:
        for field in dataclasses.fields(self):
            yield getattr(self, field.name)

    def __repr__(self) -> str:
        return _describe("Frame", self)


@dataclasses.dataclass
class FrameBatch:
    """Several decoded frames.

    ``data``: (N, 3, H, W) or (N, H, W, 3) array (samplers: (clips, frames, ...)).
    ``pts_seconds``, ``duration_seconds``: float64 arrays of shape ``data.shape[:-3]``.
    ``len``, indexing and iteration give FrameBatch objects over the leading dimension.
    """

    data: Any
    pts_seconds: Any
    duration_seconds: Any

    def __iter__(self) -> Iterator[FrameBatch]:
        for i in range(len(self)):
            yield self[i]

    def __getitem__(self, key: Any) -> FrameBatch:
        return FrameBatch(self.data[key], self.pts_seconds[key], self.duration_seconds[key])

    def __len__(self) -> int:
        return len(self.data)

    def __repr__(self) -> str:
        return _describe("FrameBatch", self)


@dataclasses.dataclass
class AudioSamples:
    """Decoded audio: ``data`` float32 (num_channels, num_samples) in [-1, 1]; ``pts_seconds`` of the
    first sample; ``duration_seconds`` = num_samples / sample_rate; ``sample_rate`` in Hz."""

    data: Any
    pts_seconds: float
    duration_seconds: float
    sample_rate: int

    def __post_init__(self) -> None:
        self.pts_seconds = float(self.pts_seconds)
        self.duration_seconds = float(self.duration_seconds)
        self.sample_rate = int(self.sample_rate)

    def __iter__(self) -> Iterator[Any]:
        for field in dataclasses.fields(self):
            yield getattr(self, field.name)

    def __repr__(self) -> str:
        return _describe("AudioSamples", self)
