"""What every sampler shares: the policies, parameter checks, evenly spaced starts, and the view of
one decoded batch as (clips, frames, ...)."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Literal, TypeVar

from torchcodec._outputs import get_bridge
from torchcodec._frame import FrameBatch

Policy = Literal["repeat_last", "wrap", "error"]
_T = TypeVar("_T", int, float)


def _repeat_last(clip: list[_T], length: int) -> list[_T]:
    """[95, 97, 99] -> [95, 97, 99, 99, 99]"""
    return clip + [clip[-1]] * (length - len(clip))


def _wrap(clip: list[_T], length: int) -> list[_T]:
    """[95, 97, 99] -> [95, 97, 99, 95, 97]"""
    return [clip[i % len(clip)] for i in range(length)]


def _error(clip: list[_T], length: int) -> list[_T]:
    raise ValueError(f"policy='error': the sampler tried to decode a frame that is beyond the number of frames "
                     f"in the video (a clip has only {len(clip)} of its {length} frames inside it: it starts too "
                     f"close to the end). Leave sampling_range_end at its default (None), which keeps clips "
                     f"inside the video, or choose policy='repeat_last' or 'wrap'.")


POLICIES: dict[str, Callable[[list, int], list]] = {"repeat_last": _repeat_last, "wrap": _wrap, "error": _error}


def complete_clip(clip: list[_T], length: int, policy: str) -> list[_T]:
    """``clip`` (its frames that lie inside the video, at least one) filled up to ``length`` per ``policy``."""
    return clip if len(clip) == length else POLICIES[policy](clip, length)


def check_common(decoder: Any, num_frames_per_clip: int, policy: str) -> None:
    """The checks every sampler makes first (ValueError)."""
    if len(decoder) < 1:
        raise ValueError(f"Decoder must have at least one frame, found {len(decoder)} frames.")
    if num_frames_per_clip <= 0:
        raise ValueError(f"num_frames_per_clip ({num_frames_per_clip}) must be strictly positive")
    if policy not in POLICIES:
        raise ValueError(f"Invalid policy ({policy!r}). Supported values are {', '.join(map(repr, POLICIES))}.")


def check_num_clips(num_clips: int) -> None:
    if num_clips <= 0:
        raise ValueError(f"num_clips ({num_clips}) must be > 0")


def check_clips_request(decoder: Any, num_clips: int, num_frames_per_clip: int) -> None:
    """Refuse (MemoryError) clips that would need more memory than the limit, before drawing or
    listing their starts."""
    decoder._check_request(num_clips * num_frames_per_clip, f"{num_clips} clips of {num_frames_per_clip} frames")


def evenly_spaced_ints(first: int, last: int, count: int) -> list[int]:
    """``count`` integers from ``first`` to ``last`` (both included), evenly spaced and truncated:
    ``torch.linspace(first, last, count, dtype=torch.int)``. With more values than integers in the
    range, values repeat (0..10 in 20 steps: 0, 0, 1, 1, 2, ...).

    Under the torch bridge torch computes them, so the values are TorchCodec's bit for bit. Otherwise
    the same formula in Python: the first half counts up from ``first``, the second half down from
    ``last``, in float64.
    """
    if get_bridge() == "torch":
        import torch

        return torch.linspace(first, last, steps=count, dtype=torch.int).tolist()
    if count == 1:
        return [first]
    step = (last - first) / (count - 1)
    half = count // 2
    return [int(first + step * i) if i < half else int(last - step * (count - 1 - i)) for i in range(count)]


def arange_below(start: float, stop: float, step: float) -> list[float]:
    """``start, start + step, ...`` strictly below ``stop``: ``torch.arange(start, stop, step,
    dtype=torch.float64)`` without the values that rounding puts at or above ``stop``.

    Under the torch bridge torch computes them (its vectorised kernel rounds some values a unit
    in the last place differently from ``start + k * step``), so the values are TorchCodec's bit
    for bit. Otherwise ``start + k * step`` in float64, for k < ceil((stop - start) / step).
    """
    if get_bridge() == "torch":
        import torch

        values = torch.arange(start, stop, step, dtype=torch.float64).tolist()
    else:
        values = [start + k * step for k in range(math.ceil((stop - start) / step))]
    return [v for v in values if v < stop]


def as_clips(batch: FrameBatch, num_clips: int, num_frames_per_clip: int) -> FrameBatch:
    """A batch of num_clips * num_frames_per_clip frames viewed as (clips, frames, ...), no copy."""
    def split(values: Any) -> Any:
        return values.reshape((num_clips, num_frames_per_clip) + tuple(values.shape[1:]))

    return FrameBatch(split(batch.data), split(batch.pts_seconds), split(batch.duration_seconds))

