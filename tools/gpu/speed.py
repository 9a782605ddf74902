"""The GPU check's benchmark (bench): NVDEC's throughput as a user would measure it.

Every decoder is opened, and its first frame decoded (which makes the NVDEC session), before the
clock starts; the clock covers the rest of the whole file, and stops once the output library's
stream is synchronised. Measured for each clip, each output and 1, 2, 4, 8, 16 decoders at once:

- in threads of this process (each thread its own decoder and its own stream of the output
  library), and in processes (a pool of workers started once, spawn, with the output library and
  its CUDA context initialised before anything is timed);
- to RGB (VideoDecoder, batches of get_frames_in_range) and to NV12 (the blocks: Demuxer and
  make_decoder, RawFrames in the NVDEC surface format, no conversion);
- with PyNvVideoCodec beside torchcodec when it is importable (threads).

Beside frames/s each row says what the run used (tools/gpu/usage.py): NVDEC utilisation (NVML),
host CPU cores, and the NVDEC decoders' own counters (decode and output surfaces per decoder, host
waits for an output surface, pictures mapped early): what tells a saturated engine from a host-bound
run when more decoders give fewer frames/s (docs/gpu_check.md, "Reading the benchmark"). Two rows
per clip compare with the CPU decoder: one decoder to RGB, and opening a decoder and getting 10
random frames (a fresh decoder each time: that time includes the open and the file's scan).
"""
from __future__ import annotations

import contextlib
import dataclasses
import importlib
import importlib.util
import multiprocessing
import pathlib
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, Optional

from gpu.outputs import round_indices
from gpu.rows import (ArrayLib, BATCH, RANDOM_FRAMES, Row, Settings, backend_context, bridge, error_text,
                      load_lib, open_decoder, out_of_time_row, output_lib)
from gpu.usage import Nvml, Usage, describe


# --------------------------------------------------------------------------------------------
# One decoder of one workload: opened and warmed before the clock, then the rest of the file


@dataclasses.dataclass(frozen=True)
class Workload:
    path: pathlib.Path
    output: str                 # "rgb" or "nv12"
    library: str                # "torchcodec" or "PyNvVideoCodec"
    device: str


class Job:
    """One decoder of a workload. ``warm()`` (before the clock) opens it and decodes the first
    frame; ``run()`` decodes the rest of the file and returns how many frames it gave;
    ``counters()`` what the decoder counted."""

    def warm(self) -> None:
        raise NotImplementedError

    def run(self) -> int:
        raise NotImplementedError

    def counters(self) -> dict[str, Any]:
        return {}


def nvdec_counters(decoder: Any) -> dict[str, Any]:
    """An NvdecDecoder's diagnostics (torchcodec._cuda._nvdec), {} for any other packet decoder."""
    if not hasattr(decoder, "host_waits"):
        return {}
    surfaces = decoder.surface_counts
    return {"host_waits": decoder.host_waits, "early_maps": decoder.early_maps,
            "surfaces": list(surfaces) if surfaces else None}


class RgbJob(Job):
    def __init__(self, workload: Workload, settings: Settings, threads: int = 1) -> None:
        self.workload, self.settings, self.threads = workload, settings, threads

    def warm(self) -> None:
        self.decoder = open_decoder(self.workload.path, self.workload.device, self.settings,
                                    num_ffmpeg_threads=self.threads)
        self.decoder.get_frame_at(0)

    def run(self) -> int:
        count = len(self.decoder)
        for start in range(1, count, BATCH):
            self.decoder.get_frames_in_range(start, min(start + BATCH, count))
        return count - 1

    def counters(self) -> dict[str, Any]:
        return nvdec_counters(getattr(self.decoder._engine, "decoder", None))


class Nv12Job(Job):
    """The blocks: packets into make_decoder's packet decoder, RawFrames (copies in the output
    library's memory, in the surface format) dropped as they come."""

    def __init__(self, workload: Workload, settings: Settings) -> None:
        self.workload, self.settings = workload, settings

    def warm(self) -> None:
        blocks = importlib.import_module("torchcodec.decoders")
        with backend_context(self.settings) if self.workload.device != "cpu" else contextlib.nullcontext():
            self.demuxer = blocks.Demuxer(self.workload.path)
            self.decoder = self.demuxer.streams[0].make_decoder(device=self.workload.device)
        self.packets = iter(self.demuxer)
        for packet in self.packets:
            if self.decoder.decode(packet):
                return

    def run(self) -> int:
        count = 0
        for packet in self.packets:
            count += len(self.decoder.decode(packet))
        return count + len(self.decoder.drain())

    def counters(self) -> dict[str, Any]:
        return nvdec_counters(self.decoder)


class PyNvJob(Job):
    """PyNvVideoCodec's own demuxer and decoder (device memory), NV12 or its RGB output."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload

    def warm(self) -> None:
        import PyNvVideoCodec as nvc
        index = int(self.workload.device.partition(":")[2] or 0)
        self.demuxer = nvc.CreateDemuxer(filename=str(self.workload.path))
        options: dict[str, Any] = {}
        if self.workload.output == "rgb":
            options["outputColorType"] = nvc.OutputColorType.RGB
        self.decoder = nvc.CreateDecoder(gpuid=index, codec=self.demuxer.GetNvCodecId(), cudacontext=0,
                                         cudastream=0, usedevicememory=True, **options)
        self.packets, self.extra = iter(self.demuxer), 0
        for packet in self.packets:
            frames = list(self.decoder.Decode(packet))
            if frames:
                self.extra = len(frames) - 1
                return

    def run(self) -> int:
        count = self.extra
        for packet in self.packets:
            count += len(list(self.decoder.Decode(packet)))
        return count


def make_job(workload: Workload, settings: Settings) -> Job:
    if workload.library == "PyNvVideoCodec":
        return PyNvJob(workload)
    return RgbJob(workload, settings) if workload.output == "rgb" else Nv12Job(workload, settings)


def merged_counters(all_counters: list[dict[str, Any]]) -> dict[str, Any]:
    """The decoders' counters of one run: host waits and early maps summed, the surface counts seen."""
    found = [c for c in all_counters if c]
    if not found:
        return {}
    return {"host_waits": sum(c["host_waits"] for c in found), "early_maps": sum(c["early_maps"] for c in found),
            "surfaces": sorted({tuple(c["surfaces"]) for c in found if c["surfaces"]})}


# --------------------------------------------------------------------------------------------
# Runs: N decoders in threads, or in the processes of a pool


@dataclasses.dataclass
class Run:
    frames: int
    seconds: float
    numbers: dict[str, Any]

    @property
    def fps(self) -> float:
        return self.frames / self.seconds if self.seconds > 0 else 0.0


def run_threads(workload: Workload, count: int, lib: ArrayLib, settings: Settings, nvml: Optional[Nvml]) -> Run:
    """``count`` decoders, one per thread and per stream of ``lib``, opened and warmed in their
    thread; the clock runs from the moment all are ready until the last has synchronised."""
    ready, go = threading.Barrier(count + 1), threading.Event()
    frames, ends, counters, errors = [0] * count, [0.0] * count, [{}] * count, []

    def work(k: int) -> None:
        try:
            stream = lib.new_stream()
            with bridge(lib.bridge), lib.on_stream(stream):      # the bridge is per thread (a ContextVar)
                job = make_job(workload, settings)
                job.warm()
                lib.synchronize(stream)
                ready.wait()
                go.wait()
                frames[k] = job.run()
                lib.synchronize(stream)
                ends[k] = time.perf_counter()
                counters[k] = job.counters()
        except BaseException as error:   # noqa: BLE001  (re-raised in the calling thread)
            errors.append(error)
            ready.abort()

    workers = [threading.Thread(target=work, args=(k,)) for k in range(count)]
    for worker in workers:
        worker.start()
    try:
        ready.wait()
    except threading.BrokenBarrierError:
        pass
    with Usage(nvml) as usage:
        start = time.perf_counter()
        go.set()
        for worker in workers:
            worker.join()
    if errors:
        raise errors[0]
    return Run(sum(frames), max(ends) - start, {**usage.numbers(), **merged_counters(counters)})


def process_worker(connection: Any, settings: Settings, lib_name: str) -> None:
    """A pool worker (spawned): the output library and its CUDA context made first, then jobs from
    ``connection``: a Workload to open and warm ("ready"), then "go" to run it, answered with
    (frames, end time on the system-wide monotonic clock, CPU seconds, counters) or an error text."""
    import resource
    try:
        lib = load_lib(lib_name, settings) if lib_name in ("torch", "cupy") else output_lib(settings)
        stream = lib.new_stream()
        connection.send(("started", None))
    except BaseException as error:   # noqa: BLE001
        connection.send(("error", error_text(error)))
        return
    while True:
        message = connection.recv()
        if message is None:
            return
        try:
            with bridge(lib.bridge), lib.on_stream(stream):
                job = make_job(message, settings)
                job.warm()
                lib.synchronize(stream)
                connection.send(("ready", None))
                connection.recv()                            # "go"
                usage = resource.getrusage(resource.RUSAGE_SELF)
                cpu = usage.ru_utime + usage.ru_stime
                frames = job.run()
                lib.synchronize(stream)
                end = time.monotonic()
                usage = resource.getrusage(resource.RUSAGE_SELF)
                connection.send(("done", (frames, end, usage.ru_utime + usage.ru_stime - cpu, job.counters())))
        except BaseException as error:   # noqa: BLE001
            connection.send(("error", error_text(error)))


class ProcessPool:
    """``size`` spawned workers (process_worker), started once and shut down by close()."""

    def __init__(self, size: int, settings: Settings, lib: ArrayLib) -> None:
        context = multiprocessing.get_context("spawn")
        self.connections, self.processes, self.closed = [], [], False
        for _ in range(size):
            mine, theirs = context.Pipe()
            process = context.Process(target=process_worker, args=(theirs, settings, lib.name), daemon=True)
            process.start()
            self.connections.append(mine)
            self.processes.append(process)
        for connection in self.connections:
            self._expect(connection, "started")

    @staticmethod
    def _expect(connection: Any, what: str) -> Any:
        if not connection.poll(300):
            raise TimeoutError(f"a benchmark process did not answer {what!r} in 300 s")
        kind, value = connection.recv()
        if kind == "error":
            raise RuntimeError(f"in a benchmark process: {value}")
        if kind != what:
            raise RuntimeError(f"a benchmark process answered {kind!r}, not {what!r}")
        return value

    def run(self, workload: Workload, count: int, nvml: Optional[Nvml]) -> Run:
        """``count`` workers decode ``workload`` at once; after a failure the pool is closed (its
        workers may be mid-job) and a new one must be made."""
        if self.closed:
            raise RuntimeError("the process pool was closed after an earlier failure")
        used = self.connections[:count]
        try:
            for connection in used:
                connection.send(workload)
            for connection in used:
                self._expect(connection, "ready")
            usage = Usage(nvml)
            with usage:
                start = time.monotonic()
                for connection in used:
                    connection.send("go")
                results = [self._expect(connection, "done") for connection in used]
        except BaseException:
            self.close()
            raise
        usage.child_cpu_seconds = sum(result[2] for result in results)
        return Run(sum(result[0] for result in results), max(result[1] for result in results) - start,
                   {**usage.numbers(), **merged_counters([result[3] for result in results])})

    def close(self) -> None:
        self.closed = True
        for connection in self.connections:
            with contextlib.suppress(OSError):
                connection.send(None)
        for process in self.processes:
            process.join(10)
            if process.is_alive():
                process.kill()


# --------------------------------------------------------------------------------------------
# Rows


def scaling_row(subject: str, measure: Callable[[int], Run], settings: Settings, ours: bool) -> Row:
    """One row per workload and mode: every decoder count measured in turn (until the deadline),
    with frames/s and what the run used. An exception of a third-party library is reported in the
    row as information; one of torchcodec's is an ERROR."""
    parts, numbers, error = [], {}, ""
    for count in settings.decoder_counts:
        if settings.out_of_time():
            parts.append(f"{count}: not run (deadline)")
            continue
        try:
            run = measure(count)
        except Exception as failure:   # noqa: BLE001
            error = error_text(failure)
            break
        numbers[str(count)] = {"fps": run.fps, "frames": run.frames, "seconds": run.seconds, **run.numbers}
        counters = ""
        if "host_waits" in run.numbers:
            counters = (f", surfaces {'/'.join('x'.join(map(str, s)) for s in run.numbers['surfaces']) or '?'}, "
                        f"host waits {run.numbers['host_waits']}, early maps {run.numbers['early_maps']}")
        parts.append(f"{count}: {run.fps:.0f} fps ({describe(run.numbers)}{counters})")
    if error:
        parts.append(f"stopped: {error}")
    status = "ERROR" if error and ours else "info"
    return Row("bench", subject, "; ".join(parts), status, {"runs": numbers, "error": error})


def under_test(settings: Settings) -> str:
    return "cpu(dry run)" if settings.dry_run else f"nvdec({settings.cuda_backend})"


def cpu_reference_row(name: str, path: pathlib.Path, lib: ArrayLib, settings: Settings,
                      nvml: Optional[Nvml]) -> Row:
    """One decoder of the device under test against the CPU decoder (FFmpeg's threads: auto), the
    whole file to RGB, opened and warmed before the clock."""
    subject = f"{name}: 1 decoder vs the CPU decoder, RGB"
    values, parts = {}, []
    for label, device, threads in ((under_test(settings), settings.device, 1), ("cpu t0", "cpu", 0)):
        try:
            job = RgbJob(Workload(path, "rgb", "torchcodec", device), settings, threads)
            with bridge(lib.bridge):
                job.warm()
                lib.synchronize()
                with Usage(nvml if device != "cpu" else None) as usage:
                    frames = job.run()
                    lib.synchronize()
            values[label] = frames / usage.wall
            parts.append(f"{label} {values[label]:.0f} fps ({describe(usage.numbers())})")
        except Exception as error:   # noqa: BLE001
            return Row("bench", subject, f"{label}: {error_text(error)}", "ERROR")
    ratio = values[under_test(settings)] / values["cpu t0"] if values["cpu t0"] else 0.0
    return Row("bench", subject, ", ".join(parts) + f"; {ratio:.2f}x", "info", {**values, "ratio": ratio})


def random_frames_row(name: str, path: pathlib.Path, lib: ArrayLib, settings: Settings) -> Row:
    """Median time to open a decoder and get 10 frames at random sorted indices (new draws each
    repetition, the same for both), the device under test against the CPU decoder."""
    subject = f"{name}: open + {RANDOM_FRAMES} random frames"
    values = {}
    for label, device, threads in ((under_test(settings), settings.device, 1), ("cpu t0", "cpu", 0)):
        times = []
        try:
            with bridge(lib.bridge):
                for repeat in range(settings.repeats):
                    start = time.perf_counter()
                    decoder = open_decoder(path, device, settings, num_ffmpeg_threads=threads)
                    decoder.get_frames_at(round_indices(repeat, len(decoder), RANDOM_FRAMES))
                    lib.synchronize()
                    times.append(time.perf_counter() - start)
        except Exception as error:   # noqa: BLE001
            return Row("bench", subject, f"{label}: {error_text(error)}", "ERROR")
        values[label] = statistics.median(times)
    text = ", ".join(f"{label} {1000 * seconds:.1f} ms" for label, seconds in values.items())
    return Row("bench", subject, text, "info", values)


def pynvvideocodec_available(settings: Settings) -> str:
    """"" when PyNvVideoCodec can be compared here, else why not."""
    if settings.dry_run:
        return "a dry run has no GPU"
    if importlib.util.find_spec("PyNvVideoCodec") is None:
        return "not installed (pip install pynvvideocodec; a wheel can be carried to the GPU machine)"
    return ""


def check_bench(settings: Settings) -> Iterator[Row]:
    if settings.out_of_time():
        yield out_of_time_row("bench", "the benchmark")
        return
    try:
        lib = output_lib(settings)
    except Exception as error:   # noqa: BLE001
        yield Row("bench", "setup", error_text(error), "ERROR")
        return
    nvml, why = None, ""
    if not settings.dry_run:
        try:
            nvml = Nvml(int(settings.device.partition(":")[2] or 0))
        except Exception as error:   # noqa: BLE001
            why = error_text(error)
    yield Row("bench", "NVDEC utilisation", "NVML's decoder utilisation, all engines averaged" if nvml else
              f"not measured: {why or 'a dry run has no GPU'}", "info")
    why_not = pynvvideocodec_available(settings)
    if why_not:
        yield Row("bench", "PyNvVideoCodec", f"not compared: {why_not}", "info")
    pool: Optional[ProcessPool] = None
    try:
        for clip in settings.bench_clips:
            path = settings.media / clip
            name = pathlib.Path(clip).stem.removeprefix("bench_")
            yield (cpu_reference_row(name, path, lib, settings, nvml) if not settings.out_of_time()
                   else out_of_time_row("bench", f"{name}: 1 decoder vs the CPU decoder, RGB"))
            yield (random_frames_row(name, path, lib, settings) if not settings.out_of_time()
                   else out_of_time_row("bench", f"{name}: open + {RANDOM_FRAMES} random frames"))
            for output in ("rgb", "nv12"):
                workload = Workload(path, output, "torchcodec", settings.device)
                yield scaling_row(f"{name}: {LABELS[output]}, decoders in threads",
                                  lambda n, w=workload: run_threads(w, n, lib, settings, nvml), settings, True)
            for output in ("rgb", "nv12"):
                subject = f"{name}: {LABELS[output]}, decoders in processes"
                if settings.out_of_time():
                    yield out_of_time_row("bench", subject)
                    continue
                if pool is None or pool.closed:
                    try:
                        pool = ProcessPool(max(settings.decoder_counts), settings, lib)
                    except Exception as error:   # noqa: BLE001
                        yield Row("bench", subject, f"the process pool did not start: {error_text(error)}", "ERROR")
                        continue
                workload = Workload(path, output, "torchcodec", settings.device)
                yield scaling_row(subject, lambda n, w=workload, p=pool: p.run(w, n, nvml), settings, True)
            for output in ("nv12", "rgb") if not why_not else ():
                workload = Workload(path, output, "PyNvVideoCodec", settings.device)
                yield scaling_row(f"{name}: PyNvVideoCodec {output.upper()}, decoders in threads",
                                  lambda n, w=workload: run_threads(w, n, lib, settings, nvml), settings, False)
    finally:
        if pool is not None:
            pool.close()


LABELS = {"rgb": "RGB", "nv12": "NV12 (blocks)"}
