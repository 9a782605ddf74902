#!/usr/bin/env python3
"""Benchmark this package's video decoding against its peers, on the same file, in one run.

Peers: this package ("ours": ``import torchcodec`` in this Python), TorchCodec 0.17, PyAV, OpenCV,
decord and the ffmpeg CLI. TorchCodec has our import name, so it lives in its own venv (created on
first use, minutes: torch is large) and is measured there by ``tools/_bench_torchcodec_worker.py``,
which this script drives over a pipe. Every peer is optional: one that cannot be imported shows
as "n/a (reason)". PyAV, OpenCV and decord bundle their own FFmpeg builds; the report says which.

Run from the repository root, with this package installed in the current Python::

    python tools/bench.py                        # default file, all workloads, threads 1 and 0
    python tools/bench.py --quick                # CI smoke run: no warm-up, 1 repeat
    python tools/bench.py --file clip.mkv --workloads uniform10 random10 --threads 1
    python tools/bench.py --json out/bench.json  # also save every measurement
    python tools/bench.py --no-torchcodec        # skip TorchCodec (and its venv)
    python tools/bench.py --seek-modes exact     # skip seek_mode="approximate"
    python tools/bench.py encode [--only video]  # the encoding workloads instead (tools/bench_encode.py)
    python tools/bench.py images [--only jpeg]   # the image workloads (tools/bench_images.py)
    python tools/bench.py targets                # the speed and memory targets, with verdicts

Method: each measurement runs once to warm up, then N timed repeats; the table reports the
BEST (minimum) of the N repeats, and their median. The best is the least disturbed by other work
on the machine (timeit's argument), so ratios use it. N is chosen per measurement so that the
repeats take about ``--budget`` seconds (at least 3, or ``--min-repeats``; at most 15) unless
``--repeats`` fixes it.
Every repeat opens a fresh decoder, so open time (and the packet scan of seek_mode="exact")
always counts. For each workload and thread count all peers run back to back, so that a change of
machine load hits them alike. Where a peer has several strategies (PyAV and OpenCV seeking), each
is warmed up and the fastest is timed; the note says which. A measurement that hangs for
``--timeout`` seconds stops the run with a partial report.

Ratio = peer best time / our best time (same workload, thread count and seek mode), so a ratio
above 1 means we are faster. When our package gives no numbers, ratios are against TorchCodec,
and the report says so. The frames of the uniform10 workload are compared with the reference
peer's (ours, else TorchCodec), so that a fast wrong answer shows.

Workloads live in the ``WORKLOADS`` registry and each peer implements a method of the same name;
a peer without that method does not appear in the workload's rows, a method raising
``NotApplicable`` shows as "n/a (reason)". Audio workloads (``media="audio"``) decode
``--audio-file`` (default: a 60 s AAC clip from tools/make_media.py) to float32 (channels,
samples) and run at the first thread count only.

This module imports only the standard library at the top, so that the TorchCodec worker (whose
venv has torch but maybe not numpy) can import it and time TorchCodec with the same code.
"""

from __future__ import annotations

import argparse
import bisect
import contextlib
import ctypes
import dataclasses
import faulthandler
import gc
import importlib
import importlib.util
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

Task = Callable[[], Any]  # one timed repeat
# called with (peer, threads, frames) for frame-checked workloads; returns the row's check entry
FrameRecorder = Callable[["Peer", int, Any], "dict[str, Any] | None"]

DEFAULT_FILE_NAME = "bench_1080p_h264.mp4"
DEFAULT_AUDIO_FILE_NAME = "bench_audio_aac_60s.m4a"
NUM_AUDIO_RANGES = 100
AUDIO_RANGE_SECONDS = 1.0
CACHE_DIR = Path.home() / ".cache" / "torchcodec-bench"
DEFAULT_TC_VENV = CACHE_DIR / "tc-venv"
TC_PIP_REQUIREMENTS = ("torch==2.14.1", "torchcodec==0.17.0")
WORKER_SCRIPT = Path(__file__).with_name("_bench_torchcodec_worker.py")
BATCH_SIZE = 32
NUM_SAMPLED_FRAMES = 10
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


# --------------------------------------------------------------------------------------------
# Peers
# --------------------------------------------------------------------------------------------


class Peer:
    """A library under test. Subclasses add one method per workload they can run.

    A workload method takes ``(job, threads)`` and returns a task (a no-argument callable doing
    one repeat, including open) or a dict ``{strategy name: task}``; the strategy fastest at
    warm-up is timed and reported.
    """

    key: str = ""  # selector for --peers
    name: str = ""  # label in the table
    in_process = True  # runs in this Python process, so its memory shows in the RSS columns
    seek_mode: str | None = None

    def unavailable_reason(self) -> str | None:
        """None when the peer can run, else why it cannot."""
        return None

    def describe(self) -> str:
        return self.name

    def shows(self, workload: Workload) -> bool:
        return hasattr(self, workload.name) or (workload.name == "reopen" and hasattr(self, "open"))

    def tasks(self, workload: Workload, job: VideoJob, threads: int) -> dict[str, Task]:
        # reopen: a peer that keeps nothing between opens opens as the first time
        method = getattr(self, workload.name, None) or getattr(self, "open")
        made = method(job, threads)
        return made if isinstance(made, dict) else {"": made}

    def overhead_task(self, workload: Workload, job: VideoJob, threads: int) -> Task | None:
        """A task whose best time is subtracted from this peer's times (process start), or None."""
        return None

    def alias(self, workload: Workload) -> str | None:
        """Name of an earlier workload whose measurement this one reuses, or None."""
        return "open" if workload.name == "reopen" and not hasattr(self, "reopen") else None

    def rgb_nhwc(self, result: Any) -> Any:
        """The frames of a frame-checked workload's result as (N, H, W, 3) RGB uint8."""
        raise NotImplementedError

    # The three steps of a measurement; overridden by peers that run in another process.

    def prepare(self, workload: Workload, job: VideoJob, threads: int, settings: RunSettings,
                record_frames: FrameRecorder | None) -> Prepared:
        """Build the task, warm it up, check its frames and decide the number of repeats."""
        return prepare_measurement(self, workload, job, threads, settings, record_frames)

    def repeat(self, prepared: Prepared) -> None:
        """One timed repeat."""
        prepared.run_once()

    def finish(self, prepared: Prepared) -> Measurement:
        return prepared.row


def _try_import(module: str) -> tuple[Any, str | None]:
    try:
        return importlib.import_module(module), None
    except Exception as exc:  # ImportError, or a broken install raising anything
        return None, f"cannot import {module}: {type(exc).__name__}: {exc}"


class TorchCodecApiPeer(Peer):
    """Anything with TorchCodec's public API: this package, or TorchCodec itself (in the worker)."""

    def __init__(self, key: str, label: str, seek_mode: str, loader: Callable[[], Any]):
        self.key = key
        self.label = label
        self.seek_mode = seek_mode
        self.name = f"{label} {'exact' if seek_mode == 'exact' else 'approx'}"
        self._loader = loader
        self._package: Any = None
        self._reason: str | None = None
        self._loaded = False

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        try:
            self._package = self._loader()
        except Exception as exc:
            self._reason = f"{type(exc).__name__}: {exc}"

    def unavailable_reason(self) -> str | None:
        self._load()
        return self._reason

    def describe(self) -> str:
        self._load()
        if self._package is None:
            return f"n/a ({self._reason})"
        return describe_torchcodec_package(self._package)

    def shows(self, workload: Workload) -> bool:
        return super().shows(workload) and (self.seek_mode == "exact" or workload.report_approximate)

    def _open(self, job: VideoJob, threads: int, **options: Any) -> Any:
        decoder_cls = self._package.decoders.VideoDecoder
        return decoder_cls(job.path, seek_mode=self.seek_mode, num_ffmpeg_threads=threads, **options)

    @staticmethod
    def _all_in_batches(decoder: Any) -> Any:
        count = len(decoder)
        batch = None
        for start in range(0, count, BATCH_SIZE):
            batch = None  # one batch alive at a time, so that the RSS columns show one batch's cost
            batch = decoder.get_frames_in_range(start, min(start + BATCH_SIZE, count))
        return batch

    def sequential(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            last = None
            for frame in self._open(job, threads):
                last = frame
            return last

        return run

    def batch(self, job: VideoJob, threads: int) -> Task:
        return lambda: self._all_in_batches(self._open(job, threads))

    def uniform10(self, job: VideoJob, threads: int) -> Task:
        return lambda: self._open(job, threads).get_frames_at(job.uniform_indices)

    def random10(self, job: VideoJob, threads: int) -> Task:
        return lambda: self._open(job, threads).get_frames_at(job.random_indices)

    def timestamp(self, job: VideoJob, threads: int) -> Task:
        return lambda: self._open(job, threads).get_frame_played_at(job.timestamp_s)

    def open(self, job: VideoJob, threads: int) -> Task:
        """A first open: ours with its index cache off (TorchCodec has none)."""
        return self._first_open(self.reopen(job, threads))

    def first_frames(self, job: VideoJob, threads: int) -> Task:
        """A first open and the frames at the start: ours reads its (lazy) index no further than they need."""
        return self._first_open(lambda: self._open(job, threads).get_frames_in_range(0, NUM_SAMPLED_FRAMES))

    def _first_open(self, task: Task) -> Task:
        """``task`` with ours's index cache off, as for a file not opened before."""
        set_cache = getattr(self._package, "set_index_cache", None)
        if set_cache is None:
            return task

        def run() -> Any:
            saved = self._package.get_index_cache()
            set_cache(False)
            try:
                return task()
            finally:
                set_cache(saved.enabled, directory=saved.directory, max_bytes=saved.max_bytes)

        return run

    def reopen(self, job: VideoJob, threads: int) -> Task:
        """Open a file opened before (the warm-up run opened it): ours reads its index cache."""
        def run() -> Any:
            meta = self._open(job, threads).metadata
            return meta.num_frames, meta.width, meta.height, meta.duration_seconds

        return run

    def _open_audio(self, job: VideoJob) -> Any:
        if self.seek_mode == "exact":
            return self._package.decoders.AudioDecoder(job.audio_path)
        if not hasattr(self._package, "set_bridge"):
            raise NotApplicable("TorchCodec's AudioDecoder has no seek_mode")
        return self._package.decoders.AudioDecoder(job.audio_path, seek_mode="approximate")

    def audio_whole(self, job: VideoJob, threads: int) -> Task:
        return lambda: self._open_audio(job).get_all_samples().data

    def audio_ranges(self, job: VideoJob, threads: int) -> Task:
        self._open_audio(job)           # NotApplicable now rather than in the timed task

        def run() -> Any:
            decoder = self._open_audio(job)
            return [decoder.get_samples_played_in_range(start, stop).data for start, stop in job.audio_ranges]

        return run

    def clips(self, job: VideoJob, threads: int) -> Task:
        """clips_at_random_indices after torch.manual_seed: TorchCodec's draws, which ours reproduces."""
        if job.clip_seed is None:
            raise NotApplicable("needs torch where bench.py runs, to know the clips that "
                                "torch.manual_seed gives")
        import torch

        sampler = importlib.import_module(f"{self._package.__name__}.samplers").clips_at_random_indices
        torch_output = getattr(self._package, "bridge", lambda name: contextlib.nullcontext())  # ours: a bridge

        def run() -> Any:
            decoder = self._open(job, threads)
            torch.manual_seed(job.clip_seed)
            with torch_output("torch"):
                return sampler(decoder, num_clips=NUM_CLIPS, num_frames_per_clip=FRAMES_PER_CLIP)

        return run

    def resize256(self, job: VideoJob, threads: int) -> Task:
        """Decode-time Resize((256, 256)): resized while converting, no full-size RGB frame."""
        try:
            transforms = importlib.import_module(f"{self._package.__name__}.transforms")
        except ImportError as exc:
            raise NotApplicable(f"no decode-time transforms: {exc}") from None
        resize = transforms.Resize((RESIZE_SIZE, RESIZE_SIZE))
        return lambda: self._all_in_batches(self._open(job, threads, transforms=[resize]))

    def _blocks(self, job: VideoJob, threads: int) -> tuple[Any, Any, Any]:
        decoders = self._package.decoders
        if not hasattr(decoders, "Demuxer"):
            raise NotApplicable("no building blocks (torchcodec.decoders.Demuxer)")
        demuxer = decoders.Demuxer(job.path)
        return demuxer, demuxer.streams[0].make_decoder(num_ffmpeg_threads=threads), decoders.ColorConverter()

    def blocks(self, job: VideoJob, threads: int) -> Task:
        """Demuxer -> VideoPacketDecoder -> ColorConverter, every frame, on the calling thread."""
        self._blocks(job, threads)

        def run() -> Any:
            demuxer, decoder, converter = self._blocks(job, threads)
            last = None
            for packet in demuxer:
                for raw in decoder.decode(packet):
                    last = converter.convert(raw)
            for raw in decoder.drain():
                last = converter.convert(raw)
            return last

        return run

    def blocks_pipeline(self, job: VideoJob, threads: int) -> Task:
        """The same stages on three threads joined by bounded queues: they overlap only where each
        call releases the GIL for its work."""
        import queue
        import threading
        self._blocks(job, threads)

        def run() -> Any:
            demuxer, decoder, converter = self._blocks(job, threads)
            packets: queue.Queue = queue.Queue(16)
            raws: queue.Queue = queue.Queue(4)
            out: list[Any] = []

            def demux() -> None:
                for packet in demuxer:
                    packets.put(packet)
                packets.put(None)

            def decode() -> None:
                while (packet := packets.get()) is not None:
                    for raw in decoder.decode(packet):
                        raws.put(raw)
                for raw in decoder.drain():
                    raws.put(raw)
                raws.put(None)

            def convert() -> None:
                while (raw := raws.get()) is not None:
                    out[:] = [converter.convert(raw)]

            stages = [threading.Thread(target=stage) for stage in (demux, decode, convert)]
            for stage in stages:
                stage.start()
            for stage in stages:
                stage.join()
            return out[0] if out else None

        return run

    def rgb_nhwc(self, result: Any) -> Any:
        data = result.data  # FrameBatch, NCHW (numpy array or torch tensor); clips as one batch
        data = data.reshape((-1,) + tuple(data.shape[-3:]))
        if hasattr(data, "permute"):
            return data.permute(0, 2, 3, 1)
        return data.transpose(0, 2, 3, 1)


def describe_torchcodec_package(package: Any) -> str:
    """Version and FFmpeg of a package with TorchCodec's API (ours or TorchCodec's)."""
    parts = [f"torchcodec {getattr(package, '__version__', '?')}"]
    if hasattr(package, "ffmpeg_version"):  # ours
        parts.append(f"FFmpeg {package.ffmpeg_version()} (linked)")
    else:  # TorchCodec: private helper, may move
        try:
            versions = importlib.import_module("torchcodec._core").get_ffmpeg_library_versions()
            parts.append(f"FFmpeg {versions.get('ffmpeg_version', '?')} (system libs)")
        except Exception:
            parts.append("FFmpeg version unknown")
    if "torch" in sys.modules:
        parts.append(f"torch {sys.modules['torch'].__version__}")
    return ", ".join(parts)


def load_our_package() -> Any:
    """Import this package; refuse an upstream TorchCodec that happens to be installed here."""
    package = importlib.import_module("torchcodec")
    importlib.import_module("torchcodec.decoders")
    if not hasattr(package, "set_bridge"):
        raise ImportError(f"the torchcodec in this Python ({package.__file__}) is not ours")
    return package


class PyAVPeer(Peer):
    """PyAV (bundles its own FFmpeg build in its wheels)."""

    key = "pyav"
    name = "PyAV"

    def __init__(self) -> None:
        self._av, self._reason = _try_import("av")

    def unavailable_reason(self) -> str | None:
        return self._reason

    def describe(self) -> str:
        if self._av is None:
            return f"n/a ({self._reason})"
        bundled = getattr(self._av, "ffmpeg_version_info", None)
        lavc = self._av.library_versions.get("libavcodec")
        ffmpeg = f"FFmpeg {bundled}" if bundled else ffmpeg_release_of_lavc(lavc)
        return f"PyAV {self._av.__version__}, bundled {ffmpeg} (its own build, not the system's)"

    def _open(self, job: VideoJob, threads: int) -> tuple[Any, Any]:
        container = self._av.open(job.path)
        stream = container.streams.video[0]
        stream.codec_context.thread_type = "AUTO"
        stream.codec_context.thread_count = threads
        return container, stream

    def sequential(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            container, stream = self._open(job, threads)
            with container:
                rgb = None
                for frame in container.decode(stream):
                    rgb = frame.to_ndarray(format="rgb24")
                return rgb

        return run

    def batch(self, job: VideoJob, threads: int) -> Task:
        raise NotApplicable("no batch API")

    def _frames_at(self, job: VideoJob, threads: int, indices: list[int], seek_each: bool) -> list[Any]:
        container, stream = self._open(job, threads)
        with container:
            return pyav_frames_at(container, stream, indices, seek_each)

    def _indexed_variants(self, job: VideoJob, threads: int, indices: list[int]) -> dict[str, Task]:
        return {
            "seek only past the GOP, else decode on": lambda: self._frames_at(job, threads, indices, False),
            "seek to keyframe before each target": lambda: self._frames_at(job, threads, indices, True),
        }

    def uniform10(self, job: VideoJob, threads: int) -> dict[str, Task]:
        return self._indexed_variants(job, threads, job.uniform_indices)

    def random10(self, job: VideoJob, threads: int) -> dict[str, Task]:
        return self._indexed_variants(job, threads, job.random_indices)

    def clips(self, job: VideoJob, threads: int) -> dict[str, Task]:
        return self._indexed_variants(job, threads, job.clip_indices())

    def timestamp(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            container, stream = self._open(job, threads)
            with container:
                return pyav_frame_played_at(container, stream, job.timestamp_s).to_ndarray(format="rgb24")

        return run

    def first_frames(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            container, stream = self._open(job, threads)
            with container:
                frames = []
                for frame in container.decode(stream):
                    frames.append(frame.to_ndarray(format="rgb24"))
                    if len(frames) == NUM_SAMPLED_FRAMES:
                        break
                return frames

        return run

    def open(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            container, stream = self._open(job, threads)
            with container:
                ctx = stream.codec_context
                return stream.frames, ctx.width, ctx.height, stream.duration

        return run

    def resize256(self, job: VideoJob, threads: int) -> dict[str, Task]:
        def run(convert: Callable[[Any], Any]) -> Any:
            container, stream = self._open(job, threads)
            with container:
                last = None
                for frame in container.decode(stream):
                    last = convert(frame)
                return last

        size = (RESIZE_SIZE, RESIZE_SIZE)
        variants = {"to_ndarray(width, height): swscale bilinear":
                    lambda: run(lambda f: f.to_ndarray(width=size[1], height=size[0], format="rgb24",
                                                       interpolation="BILINEAR"))}
        cv2, _ = _try_import("cv2")
        if cv2 is not None:
            variants["rgb24 then cv2.resize INTER_AREA"] = lambda: run(
                lambda f: cv2.resize(f.to_ndarray(format="rgb24"), size[::-1], interpolation=cv2.INTER_AREA))
        return variants

    def rgb_nhwc(self, result: Any) -> Any:
        import numpy as np

        return np.stack(result)

    def audio_whole(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            with self._av.open(job.audio_path) as container:
                return pyav_audio_samples(container.decode(container.streams.audio[0]))

        return run

    def audio_ranges(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            with self._av.open(job.audio_path) as container:
                stream = container.streams.audio[0]
                return [pyav_audio_range(container, stream, start, stop) for start, stop in job.audio_ranges]

        return run


def pyav_audio_samples(frames: Iterable[Any]) -> Any:
    """float32 (channels, samples) of decoded frames, converted the way the frames' format needs."""
    import numpy as np

    arrays = [pyav_frame_float32(frame) for frame in frames]
    return np.concatenate(arrays, axis=1) if arrays else np.zeros((0, 0), np.float32)


def pyav_frame_float32(frame: Any) -> Any:
    """One PyAV audio frame as float32 (channels, samples), scaled like libswresample."""
    import numpy as np

    data = frame.to_ndarray()
    if not frame.format.is_planar:
        data = data.reshape(-1, len(frame.layout.channels)).T
    if data.dtype == np.uint8:
        return (data.astype(np.float32) - 128) / 128
    if data.dtype.kind == "i":
        return data.astype(np.float32) / (np.iinfo(data.dtype).max + 1)
    return data.astype(np.float32, copy=False)


def pyav_audio_range(container: Any, stream: Any, start: float, stop: float) -> Any:
    """Samples in [start, stop): seek to the key frame before start, decode, trim by frame pts."""
    import numpy as np

    time_base = float(stream.time_base)
    container.seek(int(start / time_base), stream=stream)
    pieces, first_pts = [], None
    for frame in container.decode(stream):
        begin = frame.pts * time_base
        if begin >= stop:
            break
        if begin + frame.samples / frame.sample_rate <= start:
            continue
        if first_pts is None:
            first_pts = begin
        pieces.append(pyav_frame_float32(frame))
    if not pieces:
        return np.zeros((stream.channels, 0), np.float32)
    data = np.concatenate(pieces, axis=1)
    rate = stream.sample_rate
    first = max(0, int(round((start - first_pts) * rate)))
    return data[:, first:first + int(round((stop - start) * rate))]


def pyav_scan_packets(container: Any, stream: Any) -> tuple[list[int], list[int]]:
    """pts of every packet (= frame i's pts in presentation order) and of every keyframe."""
    all_pts: list[int] = []
    key_pts: list[int] = []
    for packet in container.demux(stream):
        if packet.pts is None:  # the empty flush packet at the end
            continue
        all_pts.append(packet.pts)
        if packet.is_keyframe:
            key_pts.append(packet.pts)
    return sorted(all_pts), sorted(key_pts)


def pyav_needs_seek(key_pts: list[int], current_pts: int | None, target_pts: int) -> bool:
    """Seek when the target is behind us, or a keyframe lies between us and the target."""
    if current_pts is None or target_pts <= current_pts:
        return True
    last_key = bisect.bisect_right(key_pts, target_pts) - 1
    return last_key >= 0 and key_pts[last_key] > current_pts


def pyav_decode_until(frames: Iterable[Any], target_pts: int) -> Any:
    for frame in frames:
        if frame.pts is not None and frame.pts >= target_pts:
            return frame
    raise RuntimeError(f"PyAV: no frame at pts {target_pts}")


def pyav_frames_at(container: Any, stream: Any, indices: list[int], seek_each: bool) -> list[Any]:
    """Exact frames at indices (any order) as RGB arrays, PyAV's way: packet scan, seeks, decode."""
    all_pts, key_pts = pyav_scan_packets(container, stream)
    decoded: dict[int, Any] = {}
    frames: Iterable[Any] | None = None
    current_pts: int | None = None
    for index in sorted(set(indices)):
        target_pts = all_pts[index]
        if frames is None or seek_each or pyav_needs_seek(key_pts, current_pts, target_pts):
            container.seek(target_pts, backward=True, any_frame=False, stream=stream)
            frames = container.decode(stream)
        frame = pyav_decode_until(frames, target_pts)
        current_pts = frame.pts
        decoded[index] = frame.to_ndarray(format="rgb24")
    return [decoded[i] for i in indices]


def pyav_frame_played_at(container: Any, stream: Any, seconds: float) -> Any:
    """The frame with pts <= t < pts + duration."""
    target_pts = int(seconds / stream.time_base)
    container.seek(target_pts, backward=True, any_frame=False, stream=stream)
    for frame in container.decode(stream):
        if frame.pts is not None and frame.pts + max(frame.duration or 0, 1) > target_pts:
            return frame
    raise RuntimeError(f"PyAV: no frame played at {seconds} s")


class OpenCVPeer(Peer):
    """OpenCV's FFmpeg backend (bundled FFmpeg); output is BGR, which we do not convert."""

    key = "opencv"
    name = "OpenCV"

    def __init__(self) -> None:
        self._cv2, self._reason = _try_import("cv2")

    def unavailable_reason(self) -> str | None:
        return self._reason

    def describe(self) -> str:
        if self._cv2 is None:
            return f"n/a ({self._reason})"
        info = self._cv2.getBuildInformation()
        match = re.search(r"avcodec:\s+YES \(([\d.]+)\)", info)
        ffmpeg = ffmpeg_release_of_lavc(match.group(1)) if match else "unknown"
        return f"OpenCV {self._cv2.__version__}, bundled {ffmpeg}; BGR output, not converted"

    def _open(self, job: VideoJob, threads: int) -> Any:
        cv2 = self._cv2
        params = [] if threads == 0 else [cv2.CAP_PROP_N_THREADS, threads]
        capture = cv2.VideoCapture(job.path, cv2.CAP_FFMPEG, params)
        if not capture.isOpened():
            raise RuntimeError(f"OpenCV cannot open {job.path}")
        return capture

    def _read_all(self, job: VideoJob, threads: int, convert: Callable[[Any], Any] | None = None) -> Any:
        """Every frame in order (through ``convert`` when given); returns the last one."""
        capture = self._open(job, threads)
        last = None
        while True:
            ok, frame = capture.read()
            if not ok:
                break
            last = frame if convert is None else convert(frame)
        capture.release()
        return last

    def sequential(self, job: VideoJob, threads: int) -> Task:
        return lambda: self._read_all(job, threads)

    def batch(self, job: VideoJob, threads: int) -> Task:
        raise NotApplicable("no batch API")

    def _frames_at(self, job: VideoJob, threads: int, indices: list[int], use_seek: bool) -> list[Any]:
        capture = self._open(job, threads)
        decoded: dict[int, Any] = {}
        position = 0  # index of the next frame read() returns
        for index in sorted(set(indices)):
            if use_seek and index != position:
                capture.set(self._cv2.CAP_PROP_POS_FRAMES, index)
            else:
                for _ in range(index - position):
                    capture.grab()
            ok, frame = capture.read()
            if not ok:
                raise RuntimeError(f"OpenCV: cannot read frame {index}")
            decoded[index] = frame
            position = index + 1
        capture.release()
        return [decoded[i] for i in indices]

    def _indexed_variants(self, job: VideoJob, threads: int, indices: list[int]) -> dict[str, Task]:
        return {
            "grab() forward, no seek": lambda: self._frames_at(job, threads, indices, False),
            "CAP_PROP_POS_FRAMES seeks (approximate semantics)":
                lambda: self._frames_at(job, threads, indices, True),
        }

    def uniform10(self, job: VideoJob, threads: int) -> dict[str, Task]:
        return self._indexed_variants(job, threads, job.uniform_indices)

    def random10(self, job: VideoJob, threads: int) -> dict[str, Task]:
        return self._indexed_variants(job, threads, job.random_indices)

    def timestamp(self, job: VideoJob, threads: int) -> dict[str, Task]:
        def run() -> Any:
            capture = self._open(job, threads)
            capture.set(self._cv2.CAP_PROP_POS_MSEC, job.timestamp_s * 1000.0)
            ok, frame = capture.read()
            capture.release()
            return frame

        return {"CAP_PROP_POS_MSEC seek (approximate semantics)": run}

    def resize256(self, job: VideoJob, threads: int) -> dict[str, Task]:
        cv2 = self._cv2

        def run(interpolation: int) -> Any:
            return self._read_all(job, threads,
                                  lambda frame: cv2.resize(frame, (RESIZE_SIZE, RESIZE_SIZE), interpolation=interpolation))

        return {"cv2.resize INTER_AREA": lambda: run(cv2.INTER_AREA),
                "cv2.resize INTER_LINEAR (no antialiasing)": lambda: run(cv2.INTER_LINEAR)}

    def open(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            capture = self._open(job, threads)
            cv2 = self._cv2
            props = (cv2.CAP_PROP_FRAME_COUNT, cv2.CAP_PROP_FRAME_WIDTH, cv2.CAP_PROP_FRAME_HEIGHT,
                     cv2.CAP_PROP_FPS)
            values = tuple(capture.get(p) for p in props)
            capture.release()
            return values

        return run

    def rgb_nhwc(self, result: Any) -> Any:
        import numpy as np

        return np.stack(result)[..., ::-1]  # BGR -> RGB


class DecordPeer(Peer):
    """decord (bundles an old FFmpeg build in its wheels)."""

    key = "decord"
    name = "decord"

    def __init__(self) -> None:
        self._decord, self._reason = _try_import("decord")

    def unavailable_reason(self) -> str | None:
        return self._reason

    def describe(self) -> str:
        if self._decord is None:
            return f"n/a ({self._reason})"
        return f"decord {self._decord.__version__}, bundled {self._bundled_ffmpeg()}"

    def _bundled_ffmpeg(self) -> str:
        libs = Path(self._decord.__file__).parent.parent / "decord.libs"
        for lib in sorted(libs.glob("libavcodec*.so.*")):
            return ffmpeg_release_of_lavc(lib.name.split(".so.", 1)[1])
        return "unknown (system libs?)"

    def _open(self, job: VideoJob, threads: int) -> Any:
        return self._decord.VideoReader(job.path, num_threads=threads)

    def sequential(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            reader = self._open(job, threads)
            frame = None
            for _ in range(len(reader)):
                frame = reader.next().asnumpy()
            return frame

        return run

    def batch(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            reader = self._open(job, threads)
            count = len(reader)
            batch = None
            for start in range(0, count, BATCH_SIZE):
                batch = reader.get_batch(list(range(start, min(start + BATCH_SIZE, count)))).asnumpy()
            return batch

        return run

    def uniform10(self, job: VideoJob, threads: int) -> Task:
        return lambda: self._open(job, threads).get_batch(job.uniform_indices).asnumpy()

    def random10(self, job: VideoJob, threads: int) -> Task:
        return lambda: self._open(job, threads).get_batch(job.random_indices).asnumpy()

    def timestamp(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            reader = self._open(job, threads)
            starts = reader.get_frame_timestamp(list(range(len(reader))))[:, 0]
            index = max(0, bisect.bisect_right(starts.tolist(), job.timestamp_s) - 1)
            return reader[index].asnumpy()

        return run

    def open(self, job: VideoJob, threads: int) -> Task:
        def run() -> Any:
            reader = self._open(job, threads)
            return len(reader), reader.get_avg_fps()

        return run

    def rgb_nhwc(self, result: Any) -> Any:
        return result


class FFmpegCliPeer(Peer):
    """The ffmpeg command line, net of process start (a 1-frame run is subtracted)."""

    key = "ffmpeg"
    in_process = False  # a child process: its memory is not this process's

    def __init__(self, to_rgb: bool):
        self.to_rgb = to_rgb
        self.name = "ffmpeg CLI +rgb24" if to_rgb else "ffmpeg CLI decode"
        self._ffmpeg = shutil.which("ffmpeg")

    def unavailable_reason(self) -> str | None:
        return None if self._ffmpeg else "no ffmpeg on PATH"

    def describe(self) -> str:
        if not self._ffmpeg:
            return "n/a (no ffmpeg on PATH)"
        return f"{ffmpeg_cli_version()} ({self._ffmpeg})"

    def _command(self, job: VideoJob, threads: int, one_frame: bool) -> list[str]:
        cmd = [self._ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error",
               "-threads", str(threads), "-i", job.path, "-map", "0:v:0"]
        if one_frame:
            cmd += ["-frames:v", "1"]
        if self.to_rgb:
            cmd += ["-vf", "format=rgb24"]
        return cmd + ["-f", "null", "-"]

    def shows(self, workload: Workload) -> bool:
        return super().shows(workload) and (workload.media == "video" or not self.to_rgb)

    def _audio_command(self, job: VideoJob, one_frame: bool) -> list[str]:
        cmd = [self._ffmpeg, "-nostdin", "-hide_banner", "-loglevel", "error", "-i", job.audio_path,
               "-map", "0:a:0"]
        if one_frame:
            cmd += ["-frames:a", "1"]
        return cmd + ["-c:a", "pcm_f32le", "-f", "f32le", "-"]

    def audio_whole(self, job: VideoJob, threads: int) -> Task:
        return self._run(self._audio_command(job, one_frame=False))

    def _task(self, job: VideoJob, threads: int, one_frame: bool) -> Task:
        return self._run(self._command(job, threads, one_frame))

    @staticmethod
    def _run(cmd: list[str]) -> Task:
        return lambda: subprocess.run(cmd, check=True, stdin=subprocess.DEVNULL,
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def sequential(self, job: VideoJob, threads: int) -> Task:
        return self._task(job, threads, one_frame=False)

    def batch(self, job: VideoJob, threads: int) -> Task:
        return self._task(job, threads, one_frame=False)

    def overhead_task(self, workload: Workload, job: VideoJob, threads: int) -> Task | None:
        if workload.media == "audio":
            return self._run(self._audio_command(job, one_frame=True))
        return self._task(job, threads, one_frame=True)


def ffmpeg_release_of_lavc(version: Any) -> str:
    """'62.28.101' or (62, 28, 101) -> 'libavcodec 62.28.101 = FFmpeg 8.x'."""
    if version is None:
        return "unknown"
    parts = [int(p) for p in (version.split(".") if isinstance(version, str) else version)]
    release = {56: "3.x", 57: "3.x", 58: "4.x", 59: "5.x", 60: "6.x", 61: "7.x", 62: "8.x"}
    text = ".".join(str(p) for p in parts)
    return f"FFmpeg {release.get(parts[0], '?')} (libavcodec {text})"


def ffmpeg_cli_version() -> str:
    try:
        out = subprocess.run(["ffmpeg", "-version"], capture_output=True, text=True, check=True)
        return out.stdout.splitlines()[0].split(" Copyright")[0]
    except (OSError, subprocess.CalledProcessError, IndexError):
        return "unknown"


# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------


def resident_kb() -> tuple[int, int] | None:
    """(VmRSS, VmHWM) of this process in kB (Linux), or None where /proc cannot tell."""
    try:
        fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines()
                      if line.startswith(("VmRSS", "VmHWM")))
        return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])
    except (OSError, KeyError, ValueError):
        return None


def reset_peak_rss() -> bool:
    """Set this process's peak RSS (VmHWM) back to its current RSS: Linux's clear_refs value 5."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def time_once(task: Task) -> tuple[float, Any]:
    """Run the task once with the garbage collector off; return (seconds, result)."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        result = task()
        return time.perf_counter() - start, result
    finally:
        gc.enable()


def best_of_runs(task: Task, settings: RunSettings) -> float:
    """Best time of a task measured on its own (the ffmpeg CLI's process start)."""
    warmup_s = time_once(task)[0] if settings.warmup else None
    return min(time_once(task)[0] for _ in range(settings.repeats_after(warmup_s)))


def choose_variant(variants: dict[str, Task],
                   settings: RunSettings) -> tuple[str, Task, float | None, Any]:
    """Warm up every variant and keep the fastest: (name, task, warm-up seconds, its result).

    Without warm-up the first variant is taken (peers list their usually-fastest one first).
    """
    if not settings.warmup:
        name, task = next(iter(variants.items()))
        return name, task, None, None
    best: tuple[str, Task, float | None, Any] | None = None
    for name, task in variants.items():
        elapsed, result = time_once(task)
        if best is None or elapsed < best[2]:
            best = (name, task, elapsed, result)
        del result
    assert best is not None
    return best


@dataclass
class Prepared:
    """A measurement under way: its row, the warmed-up task and how many repeats it wants."""

    row: Measurement
    task: Task | None = None
    repeats: int = 0
    done: int = 0
    start_cost_s: float = 0.0  # subtracted from every time (process start of the CLI)
    remote_id: int | None = None  # set when the task lives in the TorchCodec worker
    measure_rss: bool = False  # the task's memory is this process's (see Peer.in_process)

    @property
    def pending(self) -> bool:
        return self.row.status == "ok" and self.done < self.repeats

    def fail(self, exc: BaseException) -> None:
        self.row.status, self.row.times_s = "error", []
        self.row.note = f"{type(exc).__name__}: {exc}"[:300]

    def record_rss(self, peak_mb: float, added_mb: float) -> None:
        row = self.row
        row.peak_rss_mb = peak_mb if row.peak_rss_mb is None else max(row.peak_rss_mb, peak_mb)
        row.added_rss_mb = added_mb if row.added_rss_mb is None else max(row.added_rss_mb, added_mb)

    def run_once(self) -> None:
        """One timed repeat of a local task."""
        self.done += 1
        try:
            before = resident_kb() if self.measure_rss and reset_peak_rss() else None
            elapsed, result = time_once(self.task)
            after = resident_kb() if before is not None else None
            del result
            self.row.times_s.append(elapsed - self.start_cost_s)
            if before is not None and after is not None:
                self.record_rss(after[1] / 1024, (after[1] - before[0]) / 1024)
        except Exception as exc:
            traceback.print_exc(file=sys.stderr)
            self.fail(exc)


def prepare_measurement(peer: Peer, workload: Workload, job: VideoJob, threads: int,
                        settings: RunSettings, record_frames: FrameRecorder | None) -> Prepared:
    """Build, warm up and frame-check one peer's task for a workload at a thread count."""
    prepared = Prepared(Measurement(workload.name, threads, peer.name, peer.seek_mode),
                        measure_rss=peer.in_process)
    row = prepared.row
    reason = peer.unavailable_reason()
    if reason:
        row.status, row.note = "n/a", reason
        return prepared
    try:
        variants = peer.tasks(workload, job, threads)
        overhead = peer.overhead_task(workload, job, threads)
    except NotApplicable as exc:
        row.status, row.note = "n/a", str(exc)
        return prepared
    try:
        name, prepared.task, warmup_s, first = choose_variant(variants, settings)
        if first is None:  # no warm-up: the check uses a run of its own, untimed
            first = prepared.task()
        prepared.repeats = settings.repeats_after(warmup_s)
        row.variant, row.note = name or None, name
        if len(variants) > 1:
            row.note += (f" (fastest of {len(variants)} strategies)" if settings.warmup
                         else " (first strategy)")
        if overhead is not None:
            prepared.start_cost_s = best_of_runs(overhead, settings)
            row.note = f"net of {prepared.start_cost_s * 1e3:.0f} ms: process start + 1 frame"
        if workload.check_frames and record_frames is not None:
            row.check = record_frames(peer, threads, peer.rgb_nhwc(first))
    except Exception as exc:
        traceback.print_exc(file=sys.stderr)
        prepared.fail(exc)
    return prepared


def measure_group(peers: list[Peer], workload: Workload, job: VideoJob, threads: int,
                  settings: RunSettings, record_frames: FrameRecorder | None,
                  watchdog: Watchdog) -> list[Measurement]:
    """All peers on one workload at one thread count, their repeats taken round-robin.

    Interleaving the repeats spreads a burst of other work on the machine over all peers
    instead of letting it spoil one peer's numbers.
    """
    where = f"{workload.name} / threads={threads}"
    prepared: list[tuple[Peer, Prepared]] = []
    for peer in peers:
        with watchdog.guard(f"{peer.name} / {where} (warm-up)"):
            prepared.append((peer, peer.prepare(workload, job, threads, settings, record_frames)))
    while any(p.pending for _, p in prepared):
        for peer, p in prepared:
            if p.pending:
                with watchdog.guard(f"{peer.name} / {where}"):
                    peer.repeat(p)
    return [peer.finish(p) for peer, p in prepared]


def run_all(peers: list[Peer], job: VideoJob, settings: RunSettings,
            record_frames: FrameRecorder | None, watchdog: Watchdog,
            rows: list[Measurement]) -> None:
    """Every workload x thread count x peer, appended to rows as they come."""
    done: dict[tuple[str, str, int], Measurement] = {}
    for workload in job.workload_list():
        for threads in (job.threads[:1] if workload.media == "audio" else job.threads):
            shown = [p for p in peers if p.shows(workload)]
            reused = {p.name: done.get((p.name, p.alias(workload) or "", threads)) for p in shown}
            measured = measure_group([p for p in shown if reused[p.name] is None], workload, job,
                                     threads, settings, record_frames, watchdog)
            fresh = {row.peer: row for row in measured}
            for peer in shown:
                row = fresh.get(peer.name) or dataclasses.replace(
                    reused[peer.name], workload=workload.name,
                    note=f"same runs as '{peer.alias(workload)}'")
                done[peer.name, workload.name, threads] = row
                rows.append(row)
                log(f"{workload.name:<10} threads={threads} {peer.name:<20} {format_row_time(row)}")


class Watchdog:
    """Ends the run, with a report of what was measured so far, when one measurement hangs.

    A stuck call into a C library cannot be interrupted, so the only way out is to exit. A
    Python timer prints the partial report (it runs while the stuck code has released the GIL);
    faulthandler, which needs no GIL, dumps every thread's stack and exits a little later.
    """

    def __init__(self, limit_s: float, on_timeout: Callable[[str], None]):
        self.limit_s = limit_s
        self._on_timeout = on_timeout

    @contextlib.contextmanager
    def guard(self, what: str) -> Any:
        timer = threading.Timer(self.limit_s, self._fire, args=(what,))
        timer.daemon = True
        timer.start()
        faulthandler.dump_traceback_later(self.limit_s + 30, exit=True)
        try:
            yield
        finally:
            timer.cancel()
            faulthandler.cancel_dump_traceback_later()

    def _fire(self, what: str) -> None:
        log(f"TIMEOUT: {what} ran longer than {self.limit_s:g} s; stopping with a partial report")
        try:
            self._on_timeout(what)
        finally:
            sys.stdout.flush()
            os._exit(3)


def format_row_time(row: Measurement) -> str:
    if row.status != "ok":
        return f"{row.status} ({row.note})"
    return (f"best {row.min_s * 1e3:.1f} ms, median {row.median_s * 1e3:.1f} ms"
            f" (N={len(row.times_s)})")


_STARTED = time.perf_counter()


def log(message: str) -> None:
    """Progress line on stderr, stamped with seconds since start."""
    print(f"[{time.perf_counter() - _STARTED:6.1f}s] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------------------------
# Frame checks
# --------------------------------------------------------------------------------------------


@dataclass
class SavedFrames:
    """Frames that the TorchCodec worker wrote to a raw file (RGB uint8, NHWC)."""

    path: str
    shape: list[int]

    def load(self) -> Any:
        import numpy as np

        frames = np.fromfile(self.path, dtype=np.uint8).reshape(self.shape)
        os.unlink(self.path)
        return frames


def write_raw_frames(frames: Any, path: Path) -> SavedFrames:
    """Write an (N, H, W, 3) uint8 array or tensor as raw bytes; works without numpy for torch."""
    if hasattr(frames, "data_ptr"):  # torch tensor; its venv may lack numpy
        tensor = frames.cpu().contiguous()
        path.write_bytes(ctypes.string_at(tensor.data_ptr(), tensor.numel() * tensor.element_size()))
        return SavedFrames(str(path), list(tensor.shape))
    import numpy as np

    array = np.ascontiguousarray(frames)
    array.tofile(path)
    return SavedFrames(str(path), list(array.shape))


class FrameChecker:
    """Compares each peer's frames with the first frames recorded at the same thread count.

    Peers run in the order ours exact, TorchCodec exact, ..., so the reference is ours when it
    works and TorchCodec's otherwise.
    """

    def __init__(self) -> None:
        self._reference: dict[int, tuple[str, Any]] = {}

    def __call__(self, peer: Peer, threads: int, frames: Any) -> dict[str, Any]:
        import numpy as np

        frames = frames.load() if isinstance(frames, SavedFrames) else np.asarray(frames)
        if threads not in self._reference:
            self._reference[threads] = (peer.name, np.ascontiguousarray(frames))
            return {"verdict": "reference", "reference": peer.name}
        name, reference = self._reference[threads]
        return {"reference": name} | compare_frames(frames, reference)


def compare_frames(frames: Any, reference: Any) -> dict[str, Any]:
    """Max and mean |difference|; 'close' allows another FFmpeg build's rounding, not other frames."""
    import numpy as np

    if frames.shape != reference.shape:
        return {"verdict": f"shape {list(frames.shape)} != {list(reference.shape)}"}
    diff = np.abs(frames.astype(np.int16) - reference.astype(np.int16))
    per_frame = diff.reshape(len(diff), -1).mean(axis=1)
    if not diff.any():
        verdict = "identical"
    elif per_frame.max() < 1.0:  # rounding of another swscale; neighbouring frames differ more
        verdict = "close"
    else:
        verdict = "DIFFERENT FRAMES?"
    return {"verdict": verdict, "max_abs_diff": int(diff.max()),
            "mean_abs_diff": round(float(diff.mean()), 3),
            "worst_frame_mean_abs_diff": round(float(per_frame.max()), 3)}


# --------------------------------------------------------------------------------------------
# TorchCodec in its own venv, driven through a worker process
# --------------------------------------------------------------------------------------------


def ensure_tc_venv(venv: Path) -> Path:
    """Python of a venv with TorchCodec 0.17; creates it (minutes: torch is large) when missing."""
    python = venv / "bin" / "python"
    if python.exists() and _venv_has_torchcodec(python):
        return python
    log_path = venv.parent / "install.log"
    venv.parent.mkdir(parents=True, exist_ok=True)
    log(f"creating TorchCodec venv {venv} ({' '.join(TC_PIP_REQUIREMENTS)}); log: {log_path}")
    with open(log_path, "a") as log_file:
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True,
                           stdout=log_file, stderr=subprocess.STDOUT)
        subprocess.run([str(venv / "bin" / "pip"), "install", *TC_PIP_REQUIREMENTS], check=True,
                       stdout=log_file, stderr=subprocess.STDOUT)
    if not _venv_has_torchcodec(python):
        raise RuntimeError(f"torchcodec still not importable in {venv}; see {log_path}")
    return python


def _venv_has_torchcodec(python: Path) -> bool:
    probe = subprocess.run([str(python), "-c", "import torchcodec.decoders"],
                           capture_output=True, cwd=tempfile.gettempdir())
    return probe.returncode == 0


class WorkerConnection:
    """JSON lines to and from tools/_bench_torchcodec_worker.py running in the TorchCodec venv."""

    def __init__(self, python: Path, cwd: Path):
        # cwd away from the repository, so that 'import torchcodec' there is TorchCodec's
        self._proc = subprocess.Popen([str(python), str(WORKER_SCRIPT)], cwd=cwd, text=True,
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def request(self, message: dict[str, Any]) -> dict[str, Any]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        try:
            self._proc.stdin.write(json.dumps(message) + "\n")
            self._proc.stdin.flush()
            line = self._proc.stdout.readline()
        except (BrokenPipeError, ValueError):  # ValueError: pipe already closed
            line = ""
        if not line:
            raise RuntimeError(f"TorchCodec worker exited (status {self._proc.wait()}); see stderr")
        reply = json.loads(line)
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply

    def kill(self) -> None:
        self._proc.kill()

    def close(self) -> None:
        """End the worker: it exits at end of input; killed if it does not within a minute."""
        with contextlib.suppress(OSError):
            self._proc.stdin.close()
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()


class RemotePeer(Peer):
    """A TorchCodec peer that lives in the worker, which builds, warms up and times its tasks."""

    key = "torchcodec"

    def __init__(self, connection: WorkerConnection, spec: dict[str, Any], description: str):
        self._connection = connection
        self.name = spec["name"]
        self.seek_mode = spec["seek_mode"]
        self._workloads = set(spec["workloads"])
        self._description = description

    def describe(self) -> str:
        return self._description

    def shows(self, workload: Workload) -> bool:
        return workload.name in self._workloads

    def prepare(self, workload: Workload, job: VideoJob, threads: int, settings: RunSettings,
                record_frames: FrameRecorder | None) -> Prepared:
        prepared = Prepared(Measurement(workload.name, threads, self.name, self.seek_mode))
        try:
            reply = self._connection.request({"cmd": "prepare", "peer": self.name,
                                              "workload": workload.name, "threads": threads})
        except Exception as exc:
            prepared.fail(exc)
            return prepared
        prepared.row = Measurement.from_json(reply["row"])
        prepared.remote_id, prepared.repeats = reply["id"], reply["repeats"]
        saved = prepared.row.check or {}
        if "frames_file" in saved and record_frames is not None:
            frames = SavedFrames(saved["frames_file"], saved["shape"])
            prepared.row.check = record_frames(self, threads, frames)
        return prepared

    def repeat(self, prepared: Prepared) -> None:
        prepared.done += 1
        try:
            reply = self._connection.request({"cmd": "repeat", "id": prepared.remote_id})
            prepared.row.status = reply["status"]  # "error" ends the repeats; finish says why
        except Exception as exc:
            prepared.fail(exc)
            prepared.remote_id = None

    def finish(self, prepared: Prepared) -> Measurement:
        if prepared.remote_id is None:
            return prepared.row
        try:
            reply = self._connection.request({"cmd": "finish", "id": prepared.remote_id})
        except Exception as exc:
            prepared.fail(exc)
            return prepared.row
        row = Measurement.from_json(reply["row"])
        row.check = prepared.row.check  # compared here, not in the worker
        return row


def unavailable_torchcodec_peers(reason: str) -> list[Peer]:
    def fail() -> Any:
        raise RuntimeError(reason)

    return [TorchCodecApiPeer("torchcodec", "TorchCodec", mode, fail) for mode in ("exact", "approximate")]


def start_torchcodec(venv: Path, job: VideoJob, settings: RunSettings,
                     scratch: Path) -> tuple[WorkerConnection | None, list[Peer]]:
    """Start the worker; its peers, or stand-ins that report why TorchCodec is n/a."""
    try:
        python = ensure_tc_venv(venv)
        log(f"starting the TorchCodec worker ({python})")
        connection = WorkerConnection(python, scratch)
        reply = connection.request({"cmd": "init", "job": dataclasses.asdict(job),
                                    "settings": dataclasses.asdict(settings), "frames_dir": str(scratch)})
    except Exception as exc:
        return None, unavailable_torchcodec_peers(f"venv {venv}: {type(exc).__name__}: {exc}")
    return connection, [RemotePeer(connection, spec, reply["describe"]) for spec in reply["peers"]]


# --------------------------------------------------------------------------------------------
# Media and job planning
# --------------------------------------------------------------------------------------------


def bench_media(name: str) -> Path:
    """The file ``name`` of tools/make_media.py's catalogue, made (and cached) when missing."""
    spec = importlib.util.spec_from_file_location("make_media", Path(__file__).with_name("make_media.py"))
    if spec is None or spec.loader is None or not Path(spec.origin or "").exists():
        raise ImportError("tools/make_media.py not found")
    make_media = importlib.util.module_from_spec(spec)
    sys.modules["make_media"] = make_media  # its dataclasses look themselves up there
    spec.loader.exec_module(make_media)
    return Path(make_media.ensure_media([name])[name])


def default_audio_file() -> Path:
    """tools/make_media.py's bench audio clip."""
    try:
        return bench_media(DEFAULT_AUDIO_FILE_NAME)
    except ImportError as exc:
        raise SystemExit(f"{exc}: pass --audio-file") from exc


def default_media_file() -> Path:
    """tools/make_media.py's bench file; or our own ffmpeg-made copy when that is unavailable."""
    try:
        return bench_media(DEFAULT_FILE_NAME)
    except Exception as exc:
        log(f"tools/make_media.py unusable ({type(exc).__name__}: {exc}); making the file with ffmpeg")
        return make_fallback_media(CACHE_DIR / DEFAULT_FILE_NAME)


def make_fallback_media(path: Path) -> Path:
    """10 s of 1080p30 H.264 (GOP 60, 3 B-frames), like make_media's bench file."""
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.mp4")
    subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi",
                    "-i", "testsrc2=size=1920x1080:rate=30", "-t", "10", "-c:v", "libx264",
                    "-g", "60", "-keyint_min", "60", "-sc_threshold", "0", "-bf", "3",
                    "-pix_fmt", "yuv420p", str(tmp)], check=True)
    tmp.rename(path)
    return path


def probe_video(path: Path) -> dict[str, Any]:
    """Stream facts from ffprobe (packet count = frame count for ordinary files)."""
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
         "stream=codec_name,width,height,avg_frame_rate,nb_read_packets,start_time,duration"
         ":format=duration", "-of", "json", str(path)],
        capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    if not data.get("streams"):
        raise SystemExit(f"{path}: no video stream")
    stream = data["streams"][0]
    num, _, den = stream.get("avg_frame_rate", "0/1").partition("/")
    fps = float(num) / float(den) if float(den or 0) else 0.0
    duration = stream.get("duration") or data.get("format", {}).get("duration") or 0
    return {"codec": stream.get("codec_name", "?"), "width": int(stream["width"]),
            "height": int(stream["height"]), "num_frames": int(stream["nb_read_packets"]),
            "fps": fps, "begin_s": float(stream.get("start_time") or 0.0),
            "duration_s": float(duration)}


def probe_duration(path: Path) -> float:
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "json", str(path)],
                         capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout)["format"]["duration"])


def plan_audio_ranges(path: Path, seed: int) -> list[list[float]]:
    """NUM_AUDIO_RANGES ranges of AUDIO_RANGE_SECONDS at random starts (ms-rounded), in random order."""
    last_start = max(0.0, probe_duration(path) - AUDIO_RANGE_SECONDS)
    rng = random.Random(seed + 1)
    starts = [round(rng.uniform(0.0, last_start), 3) for _ in range(NUM_AUDIO_RANGES)]
    return [[start, round(start + AUDIO_RANGE_SECONDS, 3)] for start in starts]


def random_indices(count: int, wanted: int, seed: int) -> list[int]:
    """The random10 workload's frames: ``wanted`` distinct indices of ``count``, in the order drawn."""
    return random.Random(seed).sample(range(count), min(wanted, count))


def plan_job(path: Path, workloads: list[str], threads: list[int], seed: int,
             audio_path: Path | None = None) -> VideoJob:
    info = probe_video(path)
    count = info["num_frames"]
    if count < 1:
        raise SystemExit(f"{path}: no video frames")
    wanted = min(NUM_SAMPLED_FRAMES, count)
    uniform = [round(k * (count - 1) / max(wanted - 1, 1)) for k in range(wanted)]
    randoms = random_indices(count, wanted, seed)
    # mid-file and half a frame past a frame start, so that no library hits a boundary case
    frame_s = 1.0 / info["fps"] if info["fps"] else 0.0
    timestamp = info["begin_s"] + 0.55 * info["duration_s"] + 0.5 * frame_s
    timestamp = min(timestamp, info["begin_s"] + info["duration_s"] - frame_s)
    audio = {}
    if audio_path is not None:
        audio = dict(audio_path=str(audio_path), audio_ranges=plan_audio_ranges(audio_path, seed))
    clip_seed, clip_starts = plan_clip_starts(count, seed)
    return VideoJob(path=str(path), uniform_indices=uniform, random_indices=randoms,
                    timestamp_s=round(timestamp, 6), workloads=workloads, threads=threads,
                    clip_starts=clip_starts, clip_seed=clip_seed, **info, **audio)


def plan_clip_starts(count: int, seed: int) -> tuple[int | None, list[int]]:
    """(seed, starts): what clips_at_random_indices draws after torch.manual_seed(seed), i.e.
    torch.randint(0, count - FRAMES_PER_CLIP + 1, (NUM_CLIPS,)); (None, []) without torch."""
    if importlib.util.find_spec("torch") is None:
        return None, []
    import torch

    high = max(count - FRAMES_PER_CLIP + 1, 1)
    return seed, torch.randint(0, high, (NUM_CLIPS,), generator=torch.Generator().manual_seed(seed)).tolist()


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": cpu, "cores": usable, "platform": platform.platform(),
            "python": platform.python_version(), "ffmpeg_cli": ffmpeg_cli_version(),
            "load_average_1min": round(os.getloadavg()[0], 2),
            "index_cache": "off" if os.environ.get("TORCHCODEC_INDEX_CACHE", "").lower() in ("0", "off", "false", "no")
                           else "on (ours reads it in every workload but 'open')"}


def baseline_name(rows: list[Measurement]) -> str:
    """'ours' when our package produced numbers, else 'TorchCodec'."""
    if any(r.peer.startswith("ours ") and r.status == "ok" for r in rows):
        return "ours"
    return "TorchCodec"


def find_row(rows: list[Measurement], workload: str, threads: int, peer: str) -> Measurement | None:
    """The measurement of ``peer`` on ``workload`` at ``threads`` that gave numbers, or None."""
    for row in rows:
        if row.workload == workload and row.threads == threads and row.peer == peer and row.status == "ok":
            return row
    return None


def ratio_against(row: Measurement, rows: list[Measurement], baseline: str) -> str:
    if row.status != "ok":
        return ""
    mode = "approx" if row.seek_mode == "approximate" else "exact"
    other = find_row(rows, row.workload, row.threads, f"{baseline} {mode}")
    return f"{row.min_s / other.min_s:.2f}" if other is not None else "-"


def format_table(rows: list[Measurement], baseline: str) -> str:
    header = ("workload", "thr", "peer", "best ms", "median ms", "N", f"peer/{baseline}", "peak RSS MB",
              "+RSS MB", "note")
    lines: list[tuple[str, ...] | None] = []
    for workload in WORKLOADS.values():
        for threads in dict.fromkeys(r.threads for r in rows):
            group = [r for r in rows if r.workload == workload.name and r.threads == threads]
            for i, row in enumerate(group):
                lines.append(format_line(row, workload.title if i == 0 else "", rows, baseline))
            if group:
                lines.append(None)
    widths = [max(len(header[c]), *(len(line[c]) for line in lines if line))
              for c in range(len(header) - 1)]

    def render(cells: tuple[str, ...]) -> str:
        padded = [cells[c].rjust(widths[c]) if 3 <= c <= 8 else cells[c].ljust(widths[c])
                  for c in range(len(widths))]
        return "  ".join(padded + [cells[-1]]).rstrip()

    out = [render(header), "-" * (sum(widths) + 2 * len(widths) + 10)]
    out += [render(line) if line else "" for line in lines]
    return "\n".join(out).rstrip()


def format_line(row: Measurement, title: str, rows: list[Measurement], baseline: str) -> tuple[str, ...]:
    if row.status == "ok":
        times = (f"{row.min_s * 1e3:.1f}", f"{row.median_s * 1e3:.1f}", str(len(row.times_s)))
        note = row.note
    else:
        times, note = (row.status, "", ""), f"({row.note})"
    memory = (f"{row.peak_rss_mb:.0f}", f"{row.added_rss_mb:.0f}") if row.peak_rss_mb is not None else ("", "")
    return (title, str(row.threads), row.peer, *times, ratio_against(row, rows, baseline), *memory, note)


def format_checks(rows: list[Measurement]) -> str:
    checked = ", ".join(w.name for w in WORKLOADS.values() if w.check_frames)
    lines = [f"Frame check ({checked}): each peer's RGB frames vs the reference's, |difference| in 0..255"]
    for row in rows:
        if row.check is None:
            continue
        c = row.check
        detail = f"vs {c.get('reference', '?')}"
        if "max_abs_diff" in c:
            detail += (f": max {c['max_abs_diff']}, mean {c['mean_abs_diff']},"
                       f" worst frame mean {c['worst_frame_mean_abs_diff']}")
        lines.append(f"  {row.workload:<10} thr={row.threads} {row.peer:<20} {c['verdict']:<18} {detail}")
    return "\n".join(lines)


def format_report(machine: dict[str, Any], job: VideoJob, peers: dict[str, str], settings: RunSettings,
                  rows: list[Measurement], elapsed_s: float, interrupted: str | None = None) -> str:
    baseline = baseline_name(rows)
    count = (f"N={settings.repeats}" if settings.repeats is not None
             else f"N adaptive {settings.min_repeats}..{settings.max_repeats}, ~{settings.budget_s:g} s each")
    lines = [
        f"Machine: {machine['cpu']}, {machine['cores']} usable cores, {machine['platform']},"
        f" Python {machine['python']}; 1-min load average {machine['load_average_1min']} at start,"
        f" {os.getloadavg()[0]:.2f} at end",
        f"Our index cache: {machine.get('index_cache', 'on')}",
        f"File: {job.path} ({job.codec} {job.width}x{job.height}, {job.num_frames} frames,"
        f" {job.fps:g} fps, {job.duration_s:g} s)",
        f"Inputs: uniform {job.uniform_indices}; random {job.random_indices}; t = {job.timestamp_s} s;"
        f" clip starts {job.clip_starts or 'n/a (no torch)'}",
        *([f"Audio: {job.audio_path} ({len(job.audio_ranges)} ranges of {AUDIO_RANGE_SECONDS:g} s)"]
          if job.audio_path else []),
        "Peers:",
        *(f"  {name:<18} {text}" for name, text in peers.items()),
        f"Method: {'warm-up once, then ' if settings.warmup else 'no warm-up, '}best of N repeats"
        f" ({count}); every repeat opens a fresh decoder; output RGB uint8 (OpenCV: BGR);"
        " ours and TorchCodec in NCHW, the others HWC.",
        f"Ratio: peer best / {baseline} best (same workload, threads and seek mode);"
        f" > 1 means {baseline} is faster.",
        "Memory: peak RSS MB is the process's largest resident memory during a repeat (its peak is"
        " reset before each: /proc/self/clear_refs); +RSS MB is that peak less the resident memory"
        " before the repeat (what the work itself held). Blank for the CLI (another process).",
    ]
    if baseline != "ours":
        lines.append("NOTE: our package produced no numbers, so ratios are against TorchCodec.")
    if interrupted:
        lines.append(f"INTERRUPTED: {interrupted} hung (over --timeout); the table stops there."
                     " Leave it out with --peers / --seek-modes / --workloads.")
    lines += ["", format_table(rows, baseline), "", format_checks(rows), "",
              f"Total bench time: {elapsed_s:.0f} s"]
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------------------------

PEER_KEYS = ("ours", "torchcodec", "pyav", "opencv", "decord", "ffmpeg")


def our_peers() -> list[Peer]:
    return [TorchCodecApiPeer("ours", "ours", mode, load_our_package) for mode in ("exact", "approximate")]


def other_local_peers(keys: set[str]) -> list[Peer]:
    peers: list[Peer] = []
    if "pyav" in keys:
        peers.append(PyAVPeer())
    if "opencv" in keys:
        peers.append(OpenCVPeer())
    if "decord" in keys:
        peers.append(DecordPeer())
    if "ffmpeg" in keys:
        peers += [FFmpegCliPeer(to_rgb=False), FFmpegCliPeer(to_rgb=True)]
    return peers


def ordered_peers(ours: list[Peer], torchcodec: list[Peer], others: list[Peer]) -> list[Peer]:
    """ours exact, TorchCodec exact, ours approx, TorchCodec approx, then the rest.

    The first peer that records frames is the frame-check reference, so ours comes first.
    """
    by_mode = [p for mode in ("exact", "approximate") for p in ours + torchcodec if p.seek_mode == mode]
    return by_mode + others


def describe_peers(peers: list[Peer]) -> dict[str, str]:
    descriptions: dict[str, str] = {}
    for peer in peers:
        label = peer.key if peer.key in ("ours", "torchcodec") else peer.name
        label = {"ours": "ours", "torchcodec": "TorchCodec"}.get(label, label)
        descriptions.setdefault(label, peer.describe())
    return descriptions


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", type=Path, help=f"video to decode (default: {DEFAULT_FILE_NAME}"
                        " from tools/make_media.py --bench)")
    parser.add_argument("--audio-file", type=Path, help=f"audio for the audio workloads (default: "
                        f"{DEFAULT_AUDIO_FILE_NAME} from tools/make_media.py --bench)")
    parser.add_argument("--workloads", nargs="+", choices=list(WORKLOADS), default=list(WORKLOADS))
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 0],
                        help="num_ffmpeg_threads values; 0 lets FFmpeg choose (default: 1 0)")
    parser.add_argument("--peers", nargs="+", choices=PEER_KEYS, default=list(PEER_KEYS))
    parser.add_argument("--seek-modes", nargs="+", choices=("exact", "approximate"),
                        default=["exact", "approximate"], help="seek modes of ours and TorchCodec")
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds one measurement (all its repeats) may take before the run stops"
                        " with a partial report (default 300)")
    parser.add_argument("--repeats", type=int, help="fixed number of timed repeats (default: adaptive)")
    parser.add_argument("--budget", type=float, default=1.0,
                        help="seconds per measurement when choosing N adaptively (default 1)")
    parser.add_argument("--min-repeats", type=int, default=RunSettings.min_repeats,
                        help=f"fewest repeats when choosing N adaptively (default {RunSettings.min_repeats})")
    parser.add_argument("--quick", action="store_true", help="smoke run: no warm-up, 1 repeat")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random indices (default 0)")
    parser.add_argument("--json", type=Path, help="save machine info and every measurement here")
    parser.add_argument("--tc-venv", type=Path, default=DEFAULT_TC_VENV,
                        help=f"venv with TorchCodec 0.17, created if missing (default {DEFAULT_TC_VENV})")
    parser.add_argument("--no-torchcodec", action="store_true", help="skip TorchCodec and its venv")
    parser.add_argument("--no-index-cache", action="store_true",
                        help="run ours with its index cache off (default: on, as users get it; the warm-up "
                             "run of each measurement fills it, so every timed open but 'open' reads it)")
    return parser.parse_args(argv)


def settings_from(args: argparse.Namespace) -> RunSettings:
    if args.quick:
        return RunSettings(repeats=1, warmup=False)
    return RunSettings(repeats=args.repeats, budget_s=args.budget, min_repeats=args.min_repeats,
                       max_repeats=max(RunSettings.max_repeats, args.min_repeats))


# ``bench.py NAME ...`` runs the module's main with the remaining arguments.
SUBCOMMANDS = {
    "encode": "bench_encode",    # 1080p H.264 and 60 s AAC/FLAC, vs TorchCodec, PyAV, the CLI
    "images": "bench_images",    # 1080p JPEG, PNG and WebP, single and batched
    "targets": "bench_targets",  # the speed and memory targets, each with its verdict, in one run
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] and argv[0] in SUBCOMMANDS:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        return importlib.import_module(SUBCOMMANDS[argv[0]]).main(argv[1:])
    args = parse_args(argv)
    if args.no_index_cache:
        os.environ["TORCHCODEC_INDEX_CACHE"] = "0"      # before ours is imported
    machine = machine_info()
    path = (args.file if args.file else default_media_file()).resolve()
    audio_path = None
    if any(WORKLOADS[name].media == "audio" for name in args.workloads):
        audio_path = (args.audio_file if args.audio_file else default_audio_file()).resolve()
    job = plan_job(path, args.workloads, args.threads, args.seed, audio_path)
    settings = settings_from(args)
    keys = set(args.peers) - ({"torchcodec"} if args.no_torchcodec else set())
    rows: list[Measurement] = []
    descriptions: dict[str, str] = {}
    connection: WorkerConnection | None = None

    scratch = Path(tempfile.mkdtemp(prefix="tc-bench-"))  # frames from the TorchCodec worker

    def finish(interrupted: str | None = None) -> None:
        if interrupted and connection is not None:
            connection.kill()
        shutil.rmtree(scratch, ignore_errors=True)
        print(format_report(machine, job, descriptions, settings, rows,
                            time.perf_counter() - _STARTED, interrupted))
        if args.json:
            save_json(args.json, machine, job, settings, descriptions, rows)

    torchcodec: list[Peer] = []
    if "torchcodec" in keys:
        connection, torchcodec = start_torchcodec(args.tc_venv.expanduser(), job, settings, scratch)
    try:
        peers = ordered_peers(our_peers() if "ours" in keys else [], torchcodec, other_local_peers(keys))
        peers = [p for p in peers if p.seek_mode is None or p.seek_mode in args.seek_modes]
        descriptions.update(describe_peers(peers))
        watchdog = Watchdog(args.timeout, on_timeout=finish)
        run_all(peers, job, settings, FrameChecker(), watchdog, rows)
    finally:
        if connection is not None:
            connection.close()
    finish()
    return 0


def save_json(path: Path, machine: dict[str, Any], job: VideoJob, settings: RunSettings,
              peers: dict[str, str], rows: list[Measurement]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = {"machine": machine, "job": dataclasses.asdict(job), "settings": dataclasses.asdict(settings),
            "peers": peers, "baseline": baseline_name(rows), "results": [r.to_json() for r in rows]}
    path.write_text(json.dumps(data, indent=1))


if __name__ == "__main__":
    sys.exit(main())
