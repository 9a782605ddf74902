"""Timing: warm-up and timed repeats, peak memory, running every peer of a workload back to back,
the watchdog that cuts a run short; and the frame checks that compare peers' frames."""
from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import faulthandler
import gc
import os
import sys
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from bench.workloads import FrameRecorder, Measurement, NotApplicable, RunSettings, Task, VideoJob, Workload

if TYPE_CHECKING:
    from bench.peers import Peer


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
            worker_memory = getattr(result, "worker_memory", None)      # (peak MB, added MB) of its workers
            if worker_memory is not None:
                self.record_rss(*worker_memory())
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
                        measure_rss=peer.in_process and not workload.worker_memory)
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
            row.check = record_frames(peer, workload.name, threads, peer.rgb_nhwc(first))
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


STARTED = time.perf_counter()


def log(message: str) -> None:
    """Progress line on stderr, stamped with seconds since start."""
    print(f"[{time.perf_counter() - STARTED:6.1f}s] {message}", file=sys.stderr, flush=True)


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
    """Compares each peer's frames with the first frames recorded for the same workload, at any
    thread count (decoding threads must not change frames).

    Peers run in the order ours exact, TorchCodec exact, ..., at the first thread count first, so
    the reference is ours at that count when it works, and TorchCodec's otherwise.
    """

    def __init__(self) -> None:
        self._reference: dict[str, tuple[str, Any]] = {}

    def __call__(self, peer: Peer, workload: str, threads: int, frames: Any) -> dict[str, Any]:
        import numpy as np

        frames = frames.load() if isinstance(frames, SavedFrames) else np.asarray(frames)
        if workload not in self._reference:
            self._reference[workload] = (f"{peer.name} threads={threads}", np.ascontiguousarray(frames))
            return {"verdict": "reference", "reference": self._reference[workload][0]}
        name, reference = self._reference[workload]
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
