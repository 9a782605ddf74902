"""The libraries under test: the Peer interface, and the TorchCodec API peer that times this package
("ours") and, in its own venv, TorchCodec 0.17, with the same code."""
from __future__ import annotations

import contextlib
import importlib
import importlib.util
import sys
from collections.abc import Callable
from typing import Any

from bench.measure import Prepared, prepare_measurement
from bench.workloads import (FRAMES_PER_CLIP, NUM_CLIPS, BATCH_SIZE, FrameRecorder, Measurement,
                             NUM_SAMPLED_FRAMES, NotApplicable, RESIZE_SIZE, RunSettings, Task, VideoJob,
                             Workload)


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

    def uniform32(self, job: VideoJob, threads: int) -> Task:
        return lambda: self._open(job, threads).get_frames_at(job.spread_indices)

    def loader(self, job: VideoJob, threads: int) -> Task:
        """One epoch of the training loader (tools/bench/loader.py) over the job's loader clips."""
        from bench import loader

        if not job.loader_paths:
            raise NotApplicable("no loader clips in the job")
        items = loader.ClipItems(self._package.__name__, job.loader_paths, self.seek_mode, threads,
                                 with_torch=loader.has_torch())
        return lambda: loader.run_epoch(items)

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
