"""The training-loader workload: what a user of TorchCodec's samplers runs to feed a model.

One epoch over a set of 1080p clips with 2 worker processes: each item opens a VideoDecoder with a
decode-time ``Resize`` to LOADER_SIZE x LOADER_SIZE, draws ``clips_at_random_indices`` (LOADER_CLIPS
clips of LOADER_FRAMES frames, after ``torch.manual_seed(item)``: TorchCodec and this package draw
the same clips) and hands the clips to the main process. With torch, the workers are a
``torch.utils.data.DataLoader``'s (``num_workers=2``, one item per batch); without it, a
``multiprocessing`` pool of 2 processes (clips drawn from numpy's generator, seeded the same).

Each worker reports its peak resident memory (``VmHWM``, reset when the worker starts) and its
resident memory at that moment: the peak includes what the worker inherited from its parent by
fork, the difference is what decoding added. Only the standard library is imported at the top
(the TorchCodec worker imports this module too).
"""
from __future__ import annotations

import importlib
import importlib.util
import multiprocessing
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

LOADER_WORKERS = 2
LOADER_ITEMS = 8             # videos per epoch (the loader's clips: LOADER_ITEMS * LOADER_CLIPS)
LOADER_CLIPS, LOADER_FRAMES, LOADER_SIZE = 4, 8, 224


def _resident_kb() -> tuple[int, int]:
    """(VmRSS, VmHWM) of this process in kB (0, 0 where /proc cannot tell)."""
    try:
        fields = dict(line.split(":", 1) for line in Path("/proc/self/status").read_text().splitlines()
                      if line.startswith(("VmRSS", "VmHWM")))
        return int(fields["VmRSS"].split()[0]), int(fields["VmHWM"].split()[0])
    except (OSError, KeyError, ValueError):
        return 0, 0


_WORKER_START_KB = 0          # this worker's resident memory when it started (set in each worker)


def _start_worker(*_: Any) -> None:
    """In each worker, first: reset the peak to the resident memory inherited by fork."""
    global _WORKER_START_KB
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass
    _WORKER_START_KB = _resident_kb()[0]


@dataclass
class ClipItems:
    """The epoch's items: item k decodes ``paths[k % len(paths)]`` with the package ``package``."""

    package: str                  # "torchcodec": this package or TorchCodec, whichever the process has
    paths: list[str]
    seek_mode: str
    threads: int
    items: int = LOADER_ITEMS
    with_torch: bool = True

    def __len__(self) -> int:
        return self.items

    def __getitem__(self, k: int) -> tuple[Any, int, int, int]:
        """(the clips, this worker's pid, its peak resident memory and its memory at start, in kB)."""
        decoders = importlib.import_module(f"{self.package}.decoders")
        samplers = importlib.import_module(f"{self.package}.samplers")
        transforms = importlib.import_module(f"{self.package}.transforms")
        decoder = decoders.VideoDecoder(self.paths[k % len(self.paths)], seek_mode=self.seek_mode,
                                        num_ffmpeg_threads=self.threads,
                                        transforms=[transforms.Resize((LOADER_SIZE, LOADER_SIZE))])
        if self.with_torch:
            import torch

            torch.manual_seed(k)
            clips = samplers.clips_at_random_indices(decoder, num_clips=LOADER_CLIPS,
                                                     num_frames_per_clip=LOADER_FRAMES).data
        else:
            clips = samplers.clips_at_random_indices(decoder, num_clips=LOADER_CLIPS, num_frames_per_clip=LOADER_FRAMES,
                                                     generator=k).data
        return clips, os.getpid(), _resident_kb()[1], _WORKER_START_KB


@dataclass
class EpochResult:
    """What one epoch gave: its clips, and per worker pid its (peak, start) resident memory in kB."""

    clips: int = 0
    shape: tuple = ()
    workers: dict[int, tuple[int, int]] = field(default_factory=dict)

    def add(self, clips: Any, pid: int, peak_kb: int, start_kb: int) -> None:
        self.clips += int(clips.shape[0])
        self.shape = tuple(clips.shape)
        peak, start = self.workers.get(pid, (0, start_kb))
        self.workers[pid] = (max(peak, peak_kb), start)

    def worker_memory(self) -> tuple[float, float]:
        """(the largest peak resident memory of a worker, the most a worker's resident memory grew
        past what it started with), in MB: the benchmark's memory columns for this workload."""
        return (max((peak for peak, _ in self.workers.values()), default=0) / 1024,
                max((peak - start for peak, start in self.workers.values()), default=0) / 1024)


def run_epoch(items: ClipItems) -> EpochResult:
    """One epoch: every item through LOADER_WORKERS fresh worker processes (fork, as on Linux by default)."""
    result = EpochResult()
    if items.with_torch:
        from torch.utils.data import DataLoader

        loader = DataLoader(items, batch_size=None, num_workers=LOADER_WORKERS, worker_init_fn=_start_worker,
                            multiprocessing_context="fork")
        for clips, pid, peak_kb, start_kb in loader:
            result.add(clips, pid, peak_kb, start_kb)
        return result
    with multiprocessing.get_context("fork").Pool(LOADER_WORKERS, initializer=_start_worker) as pool:
        for clips, pid, peak_kb, start_kb in pool.imap(items.__getitem__, range(len(items))):
            result.add(clips, pid, peak_kb, start_kb)
    return result


def has_torch() -> bool:
    return importlib.util.find_spec("torch") is not None
