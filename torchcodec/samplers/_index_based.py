"""Samplers whose clips start at frame indices."""
from __future__ import annotations

from typing import Any, Optional

from torchcodec import _random
from torchcodec._frame import FrameBatch
from torchcodec.decoders import VideoDecoder
from torchcodec.samplers._clips import (Policy, as_clips, check_clips_request, check_common, check_num_clips,
                                         complete_clip, evenly_spaced_ints)


def clips_at_random_indices(
    decoder: VideoDecoder,
    *,
    num_clips: int = 1,
    num_frames_per_clip: int = 1,
    num_indices_between_frames: int = 1,
    sampling_range_start: int = 0,
    sampling_range_end: Optional[int] = None,
    policy: Policy = "repeat_last",
    generator: Any = None,
) -> FrameBatch:
    """``num_clips`` clips starting at frame indices drawn uniformly from the sampling range.

    Args:
        decoder: the VideoDecoder to sample from.
        num_clips: number of clips (> 0). Starts are drawn with replacement, so clips may repeat.
        num_frames_per_clip: frames per clip (> 0).
        num_indices_between_frames: index step between the frames of a clip (> 0; 1 = consecutive
            frames, 2 = every other frame, ...).
        sampling_range_start: first index a clip may start at; negative counts from the end.
        sampling_range_end: end (excluded) of the indices a clip may start at; negative counts from
            the end, values past the last frame are clamped. None: the last start whose clip still
            fits in the video, plus one (at least 1).
        policy: what fills a clip that runs past the last frame: "repeat_last" repeats its last
            frame, "wrap" starts the clip's frames over, "error" raises ValueError.
        generator: where the starts are drawn from: None (torch's global generator under the torch
            bridge, so ``torch.manual_seed`` reproduces TorchCodec's clips; numpy's otherwise), an
            int seed, a numpy.random.Generator or a torch.Generator. The draw is one
            ``randint(start, end, (num_clips,))``.

    Returns:
        A FrameBatch with ``data`` of shape (num_clips, num_frames_per_clip, C, H, W) (or
        (..., H, W, C) per the decoder's dimension_order) and float64 ``pts_seconds`` and
        ``duration_seconds`` of shape (num_clips, num_frames_per_clip).

    Raises:
        ValueError: a parameter out of range, an empty sampling range, or policy="error" with a clip
            past the end. TypeError: an unsupported generator.
    """
    _random.check_generator(generator)
    start, end = _check_index_params(decoder, num_clips, num_frames_per_clip, num_indices_between_frames,
                                     sampling_range_start, sampling_range_end, policy)
    starts = _random.integers(start, end, num_clips, generator)
    return _decode_clips(decoder, starts, num_frames_per_clip, num_indices_between_frames, policy)


def clips_at_regular_indices(
    decoder: VideoDecoder,
    *,
    num_clips: int = 1,
    num_frames_per_clip: int = 1,
    num_indices_between_frames: int = 1,
    sampling_range_start: int = 0,
    sampling_range_end: Optional[int] = None,
    policy: Policy = "repeat_last",
) -> FrameBatch:
    """``num_clips`` clips starting at evenly spaced frame indices of the sampling range.

    The starts go from ``sampling_range_start`` to ``sampling_range_end - 1`` (both included),
    spaced like ``torch.linspace(start, end - 1, num_clips, dtype=torch.int)``; more clips than
    indices in the range gives repeated starts.

    Args:
        decoder: the VideoDecoder to sample from.
        num_clips: number of clips (> 0).
        num_frames_per_clip: frames per clip (> 0).
        num_indices_between_frames: index step between the frames of a clip (> 0).
        sampling_range_start: first index a clip may start at; negative counts from the end.
        sampling_range_end: end (excluded) of the indices a clip may start at; negative counts from
            the end, values past the last frame are clamped. None: the last start whose clip still
            fits in the video, plus one (at least 1).
        policy: what fills a clip that runs past the last frame: "repeat_last", "wrap" or "error",
            as in :func:`clips_at_random_indices`.

    Returns:
        A FrameBatch with ``data`` of shape (num_clips, num_frames_per_clip, C, H, W) (or
        (..., H, W, C) per the decoder's dimension_order) and float64 ``pts_seconds`` and
        ``duration_seconds`` of shape (num_clips, num_frames_per_clip).

    Raises:
        ValueError: a parameter out of range, an empty sampling range, or policy="error" with a clip
            past the end.
    """
    start, end = _check_index_params(decoder, num_clips, num_frames_per_clip, num_indices_between_frames,
                                     sampling_range_start, sampling_range_end, policy)
    starts = evenly_spaced_ints(start, end - 1, num_clips)
    return _decode_clips(decoder, starts, num_frames_per_clip, num_indices_between_frames, policy)


def _check_index_params(decoder: VideoDecoder, num_clips: int, num_frames_per_clip: int,
                        num_indices_between_frames: int, range_start: int, range_end: Optional[int],
                        policy: str) -> tuple[int, int]:
    """Check the arguments; return the sampling range [start, end) of clip starts."""
    check_common(decoder, num_frames_per_clip, policy)
    check_num_clips(num_clips)
    check_clips_request(decoder, num_clips, num_frames_per_clip)
    if num_indices_between_frames <= 0:
        raise ValueError(f"num_indices_between_frames ({num_indices_between_frames}) must be strictly positive")
    num_frames = len(decoder)
    if range_start < 0:
        range_start += num_frames
    if range_start >= num_frames:
        raise ValueError(f"sampling_range_start ({range_start}) must be smaller than the number of frames "
                         f"({num_frames}).")
    if range_end is None:
        span = _clip_span(num_frames_per_clip, num_indices_between_frames)
        range_end = max(num_frames - span + 1, 1)
        if range_start >= range_end:
            raise ValueError(f"We determined that sampling_range_end should be {range_end} (the last start "
                             f"whose clip of {span} frames fits in the video, plus one), but it is smaller than "
                             f"or equal to sampling_range_start ({range_start}).")
        return range_start, range_end
    if range_end < 0:
        range_end += num_frames
    range_end = min(range_end, num_frames)
    if range_start >= range_end:
        raise ValueError(f"sampling_range_start ({range_start}) must be smaller than sampling_range_end "
                         f"({range_end}).")
    return range_start, range_end


def _clip_span(num_frames_per_clip: int, num_indices_between_frames: int) -> int:
    """Frames from a clip's first to its last frame, both included (4 frames, step 2: 7)."""
    return num_indices_between_frames * (num_frames_per_clip - 1) + 1


def _decode_clips(decoder: VideoDecoder, starts: list[int], num_frames_per_clip: int, step: int,
                  policy: str) -> FrameBatch:
    """All clips' frame indices in one ``get_frames_at`` request, viewed as (clips, frames, ...)."""
    num_frames = len(decoder)
    span = _clip_span(num_frames_per_clip, step)
    indices: list[int] = []
    for start in starts:
        clip = list(range(start, min(start + span, num_frames), step))
        indices += complete_clip(clip, num_frames_per_clip, policy)
    return as_clips(decoder.get_frames_at(indices), len(starts), num_frames_per_clip)
