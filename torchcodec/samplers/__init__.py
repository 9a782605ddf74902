"""Clip samplers: several clips of a video, decoded by one batch request, as a 5-D FrameBatch.

Index-based samplers pick clip starts among frame indices, time-based samplers among timestamps;
random ones draw the starts (see ``generator``), regular ones space them evenly. A clip is
``num_frames_per_clip`` frames, ``num_indices_between_frames`` frames (or
``seconds_between_frames`` seconds) apart. Every frame of every clip is decoded in one request to
the engine (sorted, each distinct frame decoded once) and written straight into the output of
shape (num_clips, num_frames_per_clip, C, H, W) or (..., H, W, C) per the decoder's
``dimension_order``; ``pts_seconds`` and ``duration_seconds`` have shape (num_clips, num_frames_per_clip).
"""
from torchcodec.samplers._index_based import clips_at_random_indices, clips_at_regular_indices
from torchcodec.samplers._time_based import clips_at_random_timestamps, clips_at_regular_timestamps

__all__ = ["clips_at_random_indices", "clips_at_random_timestamps", "clips_at_regular_indices",
           "clips_at_regular_timestamps"]
