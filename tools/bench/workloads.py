"""The benchmark's workloads (the WORKLOADS registry: what each measures, on which media) and
what a run is made of: the job (file, indices, ranges), the run settings and one measurement."""
from __future__ import annotations

import dataclasses
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


Task = Callable[[], Any]  # one timed repeat
# called with (peer, workload name, threads, frames) for frame-checked workloads; returns the row's check entry
FrameRecorder = Callable[["Peer", str, int, Any], "dict[str, Any] | None"]

DEFAULT_FILE_NAME = "bench_1080p_h264.mp4"
LONG_FILE_NAME = "bench_1080p_h264_40s.mp4"    # the loader's second clip; the GOP-parallel target's
DEFAULT_AUDIO_FILE_NAME = "bench_audio_aac_60s.m4a"
NUM_AUDIO_RANGES = 100
AUDIO_RANGE_SECONDS = 1.0
CACHE_DIR = Path.home() / ".cache" / "torchcodec-bench"
DEFAULT_TC_VENV = CACHE_DIR / "tc-venv"
TC_PIP_REQUIREMENTS = ("torch==2.14.1", "torchcodec==0.17.0")
WORKER_SCRIPT = Path(__file__).with_name("torchcodec_worker.py")
BATCH_SIZE = 32
NUM_SAMPLED_FRAMES = 10
NUM_SPREAD_FRAMES = 32  # the uniform32 workload: frames over every GOP of a long clip
NUM_CLIPS, FRAMES_PER_CLIP = 8, 16  # the sampler workload
RESIZE_SIZE = 256  # the resize256 workload's output: RESIZE_SIZE x RESIZE_SIZE RGB

# --------------------------------------------------------------------------------------------
# Workload registry
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """One thing to time. Peers implement a method named ``name``."""

    name: str
    title: str
    media: str = "video"  # "audio": decodes the job's audio file, at one thread count
    report_approximate: bool = False  # also measure seek_mode="approximate"
    check_frames: bool = False  # compare each peer's frames with the reference peer's
    worker_memory: bool = False  # memory is that of the workload's worker processes (the task's result says)


WORKLOADS: dict[str, Workload] = {
    w.name: w
    for w in (
        Workload("sequential", "every frame, one at a time"),
        Workload("batch", f"every frame, batches of {BATCH_SIZE}"),
        Workload("uniform10", f"{NUM_SAMPLED_FRAMES} frames, uniform indices",
                 report_approximate=True, check_frames=True),
        Workload("random10", f"{NUM_SAMPLED_FRAMES} frames, random indices",
                 report_approximate=True),
        Workload("timestamp", "1 frame at a timestamp (with open)", report_approximate=True),
        Workload("uniform32", f"{NUM_SPREAD_FRAMES} frames, uniform indices (GOP-parallel at threads != 1)",
                 check_frames=True),
        Workload("clips", f"{NUM_CLIPS} clips x {FRAMES_PER_CLIP} frames at random indices (sampler)",
                 report_approximate=True, check_frames=True),
        Workload("open", "open + metadata, a file not opened before", report_approximate=True),
        Workload("first_frames", f"open + the first {NUM_SAMPLED_FRAMES} frames, a file not opened before",
                 report_approximate=True, check_frames=True),
        Workload("reopen", "open + metadata, a file opened before (index cache)", report_approximate=True),
        Workload("audio_whole", "audio: whole file to float32", media="audio"),
        Workload("audio_ranges", f"audio: {NUM_AUDIO_RANGES} random {AUDIO_RANGE_SECONDS:g}-s ranges",
                 media="audio", report_approximate=True),
        Workload("resize256", f"every frame, batches of {BATCH_SIZE}, resized to {RESIZE_SIZE}x{RESIZE_SIZE}"),
        Workload("loader", "training loader: 8 videos, 2 workers, clips_at_random_indices 4 x 8 frames, resized "
                 "to 224x224", worker_memory=True),
        Workload("blocks", "every frame, building blocks on one thread (demux, decode, convert)"),
        Workload("blocks_pipeline", "every frame, building blocks on 3 threads (demux | decode | convert)"),
    )
}


class NotApplicable(Exception):
    """Raised by a peer's workload method when the peer has no way to do that workload."""


# --------------------------------------------------------------------------------------------
# The job: one media file and the inputs every peer gets
# --------------------------------------------------------------------------------------------


@dataclass
class VideoJob:
    """The file and the exact indices/timestamps that every peer decodes."""

    path: str
    num_frames: int
    fps: float
    begin_s: float
    duration_s: float
    width: int
    height: int
    codec: str
    uniform_indices: list[int]
    random_indices: list[int]
    timestamp_s: float
    workloads: list[str]
    threads: list[int]
    audio_path: str = ""
    audio_ranges: list[list[float]] = field(default_factory=list)  # [start, stop] seconds
    # the clips workload: starts that torch.manual_seed(clip_seed) makes clips_at_random_indices
    # draw (torch.randint); clip_seed is None when torch was not there to compute them
    clip_starts: list[int] = field(default_factory=list)
    clip_seed: int | None = None
    spread_indices: list[int] = field(default_factory=list)   # uniform32's
    loader_paths: list[str] = field(default_factory=list)     # the loader's clips

    def workload_list(self) -> list[Workload]:
        return [WORKLOADS[name] for name in self.workloads]

    def clip_indices(self) -> list[int]:
        """The frames of all clips, clip after clip (consecutive frames)."""
        return [start + k for start in self.clip_starts for k in range(FRAMES_PER_CLIP)]


@dataclass
class RunSettings:
    """How many times each measurement runs."""

    repeats: int | None = None  # fixed N; None = adaptive within [min_repeats, max_repeats]
    warmup: bool = True
    budget_s: float = 1.0
    min_repeats: int = 3
    max_repeats: int = 15

    def repeats_after(self, warmup_s: float | None) -> int:
        if self.repeats is not None:
            return self.repeats
        if not warmup_s:
            return self.min_repeats
        return max(self.min_repeats, min(self.max_repeats, int(self.budget_s / warmup_s)))


@dataclass
class Measurement:
    """One row of the result table."""

    workload: str
    threads: int
    peer: str
    seek_mode: str | None = None
    status: str = "ok"  # "ok" | "n/a" | "error"
    note: str = ""
    variant: str | None = None
    times_s: list[float] = field(default_factory=list)
    check: dict[str, Any] | None = None
    peak_rss_mb: float | None = None   # the process's peak resident memory during a repeat (largest)
    added_rss_mb: float | None = None  # that peak less the resident memory before the repeat

    @property
    def median_s(self) -> float | None:
        return statistics.median(self.times_s) if self.times_s else None

    @property
    def min_s(self) -> float | None:
        return min(self.times_s) if self.times_s else None

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self) | {"median_s": self.median_s, "min_s": self.min_s}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Measurement:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})
