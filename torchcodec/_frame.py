"""The containers that decoders return: Frame, FrameBatch and AudioSamples."""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any


def _shape(name: str, value: Any) -> tuple[int, ...]:
    """The shape of an array field: an array or tensor, or any memory a caller gave as ``out=`` (an
    object with a CUDA or NumPy array interface, or the buffer protocol); TypeError for a value
    that has none (a list, say)."""
    shape = getattr(value, "shape", None)
    if shape is not None:
        return tuple(shape)
    for interface in ("__cuda_array_interface__", "__array_interface__"):
        described = getattr(value, interface, None)
        if isinstance(described, dict) and "shape" in described:
            return tuple(described["shape"])
    try:
        return tuple(memoryview(value).shape or ())
    except TypeError:
        raise TypeError(f"{name} must be an array or tensor, got {type(value).__name__}") from None


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
    Unpacks as a tuple: ``data, pts_seconds, duration_seconds = frame``. ValueError unless
    ``data`` has 3 dimensions.
    """

    data: Any
    pts_seconds: float
    duration_seconds: float

    def __post_init__(self) -> None:
        shape = _shape("data", self.data)
        if len(shape) != 3:
            raise ValueError(f"data must be 3-dimensional, got data.shape = {shape}")
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
    ValueError when ``data`` has fewer than 3 dimensions or the shapes of the timestamps are not
    its leading dimensions.
    """

    data: Any
    pts_seconds: Any
    duration_seconds: Any

    def __post_init__(self) -> None:
        shape = _shape("data", self.data)
        if len(shape) < 3:
            raise ValueError(f"data must be at least 3-dimensional, got data.shape = {shape}")
        leading = shape[:-3]
        pts_shape, duration_shape = _shape("pts_seconds", self.pts_seconds), _shape("duration_seconds",
                                                                                  self.duration_seconds)
        if not leading == pts_shape == duration_shape:
            raise ValueError(f"Tried to create a FrameBatch but the leading dimensions of the inputs do not match: "
                             f"data.shape = {shape}, so pts_seconds and duration_seconds must have shape "
                             f"{leading}, but they have {pts_shape} and {duration_shape}.")

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
    first sample; ``duration_seconds`` = num_samples / sample_rate; ``sample_rate`` in Hz. ValueError
    unless ``data`` has 2 dimensions."""

    data: Any
    pts_seconds: float
    duration_seconds: float
    sample_rate: int

    def __post_init__(self) -> None:
        shape = _shape("data", self.data)
        if len(shape) != 2:
            raise ValueError(f"data must be 2-dimensional, got data.shape = {shape}")
        self.pts_seconds = float(self.pts_seconds)
        self.duration_seconds = float(self.duration_seconds)
        self.sample_rate = int(self.sample_rate)

    def __iter__(self) -> Iterator[Any]:
        for field in dataclasses.fields(self):
            yield getattr(self, field.name)

    def __repr__(self) -> str:
        return _describe("AudioSamples", self)
