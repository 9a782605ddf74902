"""Samplers whose clips start at timestamps (seconds)."""
from __future__ import annotations

import math
from typing import Any, Optional

from torchcodec import _random
from torchcodec._frame import FrameBatch
from torchcodec.decoders import VideoDecoder
from torchcodec.samplers._clips import (Policy, arange_below, as_clips, check_clips_request, check_common,
                                         check_num_clips, complete_clip)


def clips_at_random_timestamps(
    decoder: VideoDecoder,
    *,
    num_clips: int = 1,
    num_frames_per_clip: int = 1,
    seconds_between_frames: Optional[float] = None,
    sampling_range_start: Optional[float] = None,
    sampling_range_end: Optional[float] = None,
    policy: Policy = "repeat_last",
    generator: Any = None,
) -> FrameBatch:
    """``num_clips`` clips starting at times drawn uniformly from [sampling_range_start, sampling_range_end).

    The frames of a clip are those on screen at ``start + k * seconds_between_frames`` for
    k < num_frames_per_clip; ``pts_seconds`` are those frames' own timestamps.

    Args:
        decoder: the VideoDecoder to sample from.
        num_clips: number of clips (> 0).
        num_frames_per_clip: frames per clip (> 0).
        seconds_between_frames: time between the sampling points of a clip's frames (> 0). None:
            the average frame duration, 1 / average_fps.
        sampling_range_start: earliest clip start, in [begin_stream_seconds, end_stream_seconds).
            None: begin_stream_seconds (not always 0).
        sampling_range_end: end (excluded) of the clip starts, above begin_stream_seconds; clamped
            to end_stream_seconds. None: the latest start whose clip still ends inside the video,
            ``end_stream_seconds - (num_frames_per_clip - 1) * seconds_between_frames``.
        policy: what replaces sampling points at or past end_stream_seconds: "repeat_last" repeats
            the clip's last one inside, "wrap" starts the clip's points over, "error" raises ValueError.
        generator: where the starts are drawn from: None (torch's global generator under the torch
            bridge, so ``torch.manual_seed`` reproduces TorchCodec's clips; numpy's otherwise), an
            int seed, a numpy.random.Generator or a torch.Generator. The draw is one
            ``rand(num_clips, float64)``, scaled to the range: ``start + u * (end - start)``.

    Returns:
        A FrameBatch with ``data`` of shape (num_clips, num_frames_per_clip, C, H, W) (or
        (..., H, W, C) per the decoder's dimension_order) and float64 ``pts_seconds`` and
        ``duration_seconds`` of shape (num_clips, num_frames_per_clip).

    Raises:
        ValueError: a parameter out of range, a sampling range outside the stream or empty, a stream
            without average fps or end time, or policy="error" with a clip past the end.
        TypeError: an unsupported generator.
    """
    _random.check_generator(generator)
    check_common(decoder, num_frames_per_clip, policy)
    check_num_clips(num_clips)
    check_clips_request(decoder, num_clips, num_frames_per_clip)
    between = _check_time_params(decoder, seconds_between_frames)
    start, end = _sampling_range(decoder, num_frames_per_clip, between, sampling_range_start, sampling_range_end)
    width = end - start
    starts = [u * width + start for u in _random.uniform(num_clips, generator)]
    return _decode_clips(decoder, starts, num_frames_per_clip, between, policy)


def clips_at_regular_timestamps(
    decoder: VideoDecoder,
    *,
    seconds_between_clip_starts: float,
    num_frames_per_clip: int = 1,
    seconds_between_frames: Optional[float] = None,
    sampling_range_start: Optional[float] = None,
    sampling_range_end: Optional[float] = None,
    policy: Policy = "repeat_last",
) -> FrameBatch:
    """Clips starting every ``seconds_between_clip_starts`` seconds from ``sampling_range_start``,
    strictly before ``sampling_range_end``.

    The starts are ``torch.arange(start, end, seconds_between_clip_starts, dtype=torch.float64)``
    minus any value that floating-point rounding puts at or above ``end``; their count is the
    number of clips.

    Args:
        decoder: the VideoDecoder to sample from.
        seconds_between_clip_starts: time between the starts of consecutive clips (> 0).
        num_frames_per_clip: frames per clip (> 0).
        seconds_between_frames: time between the sampling points of a clip's frames (> 0). None:
            the average frame duration, 1 / average_fps.
        sampling_range_start: first clip start, in [begin_stream_seconds, end_stream_seconds).
            None: begin_stream_seconds.
        sampling_range_end: end (excluded) of the clip starts; clamped to end_stream_seconds.
            None: the latest start whose clip still ends inside the video.
        policy: what replaces sampling points at or past end_stream_seconds: "repeat_last", "wrap"
            or "error", as in :func:`clips_at_random_timestamps`.

    Returns:
        A FrameBatch with ``data`` of shape (num_clips, num_frames_per_clip, C, H, W) (or
        (..., H, W, C) per the decoder's dimension_order) and float64 ``pts_seconds`` and
        ``duration_seconds`` of shape (num_clips, num_frames_per_clip).

    Raises:
        ValueError: ``seconds_between_clip_starts`` is not > 0, a parameter out of range, a sampling
            range outside the stream or empty, a stream without average fps or end time, or
            policy="error" with a clip past the end.
    """
    check_common(decoder, num_frames_per_clip, policy)
    if not seconds_between_clip_starts > 0:            # NaN too
        raise ValueError(f"seconds_between_clip_starts ({seconds_between_clip_starts}) must be > 0")
    between = _check_time_params(decoder, seconds_between_frames)
    start, end = _sampling_range(decoder, num_frames_per_clip, between, sampling_range_start, sampling_range_end)
    check_clips_request(decoder, math.ceil((end - start) / seconds_between_clip_starts), num_frames_per_clip)
    starts = arange_below(start, end, seconds_between_clip_starts)
    return _decode_clips(decoder, starts, num_frames_per_clip, between, policy)


def _check_time_params(decoder: VideoDecoder, seconds_between_frames: Optional[float]) -> float:
    """Check the stream's metadata and seconds_between_frames; return the latter (default filled in)."""
    metadata = decoder.metadata
    if metadata.average_fps is None:
        raise ValueError("Could not infer average fps from video metadata. Try using an index-based sampler instead.")
    if metadata.end_stream_seconds is None:
        raise ValueError("Could not infer stream end from video metadata. Try using an index-based sampler instead.")
    if seconds_between_frames is None:
        return 1 / metadata.average_fps
    if not seconds_between_frames > 0:                 # NaN too
        raise ValueError(f"seconds_between_frames ({seconds_between_frames}) must be > 0")
    return seconds_between_frames


def _sampling_range(decoder: VideoDecoder, num_frames_per_clip: int, between: float,
                    range_start: Optional[float], range_end: Optional[float]) -> tuple[float, float]:
    """Check the range of clip starts; return it as [start, end), end clamped to the stream's end."""
    begin, stream_end = decoder.metadata.begin_stream_seconds, decoder.metadata.end_stream_seconds
    if range_start is None:
        range_start = begin
    elif range_start < begin:
        raise ValueError(f"sampling_range_start ({range_start}) must be at least {begin}")
    elif range_start >= stream_end:
        raise ValueError(f"sampling_range_start ({range_start}) must be smaller than {stream_end}")
    if range_end is None:
        # the latest start whose last sampling point, start + (n - 1) * between, is before the end
        range_end = stream_end - (num_frames_per_clip - 1) * between
    elif range_end <= begin:
        raise ValueError(f"sampling_range_end ({range_end}) must be at least {begin}")
    if range_start >= range_end:
        raise ValueError(f"sampling_range_start ({range_start}) must be smaller than sampling_range_end ({range_end})")
    return range_start, min(range_end, stream_end)


def _decode_clips(decoder: VideoDecoder, starts: list[float], num_frames_per_clip: int, between: float,
                  policy: str) -> FrameBatch:
    """All clips' sampling times in one ``get_frames_played_at`` request, viewed as (clips, frames, ...)."""
    end = decoder.metadata.end_stream_seconds
    times: list[float] = []
    for start in starts:
        clip = [t for t in (start + k * between for k in range(num_frames_per_clip)) if t < end]
        times += complete_clip(clip, num_frames_per_clip, policy)
    return as_clips(decoder.get_frames_played_at(times), len(starts), num_frames_per_clip)
