"""The GPU check's benchmark: the device against the CPU decoder on 1080p clips (bench)."""
from __future__ import annotations

import dataclasses
import pathlib
import statistics
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

from gpu.outputs import round_indices
from gpu.rows import (ArrayLib, BATCH, RANDOM_FRAMES, Row, Settings, bridge, error_text, open_decoder,
                      out_of_time_row, output_lib)


# --------------------------------------------------------------------------------------------
# 5. bench: device vs CPU decoder on 1080p clips


@dataclasses.dataclass(frozen=True)
class Contender:
    label: str
    device: str
    threads: int                # num_ffmpeg_threads


def contenders(settings: Settings) -> list[Contender]:
    under_test = "cpu(dry run)" if settings.dry_run else f"nvdec({settings.cuda_backend})"
    return [Contender(under_test, settings.device, 0 if settings.dry_run else 1),
            Contender("cpu t0", "cpu", 0), Contender("cpu t1", "cpu", 1)]


def decode_sequentially(decoder: Any, count: int, lib: ArrayLib) -> None:
    for start in range(0, count, BATCH):
        decoder.get_frames_in_range(start, min(start + BATCH, count))
    lib.synchronize()


def sequential_fps(path: pathlib.Path, who: Contender, lib: ArrayLib, settings: Settings) -> float:
    """Frames per second decoding from the start in batches (the decoder opened beforehand)."""
    with bridge(lib.bridge):
        decoder = open_decoder(path, who.device, settings, num_ffmpeg_threads=who.threads)
        count = min(len(decoder), settings.bench_frames)
        start = time.perf_counter()
        decode_sequentially(decoder, count, lib)
        return count / (time.perf_counter() - start)


def random_frames_seconds(path: pathlib.Path, who: Contender, lib: ArrayLib, settings: Settings) -> float:
    """Median time to open a decoder and get 10 frames at random sorted indices (new draws each
    repetition, the same draws for every contender)."""
    times = []
    with bridge(lib.bridge):
        for repeat in range(settings.repeats):
            start = time.perf_counter()
            decoder = open_decoder(path, who.device, settings, num_ffmpeg_threads=who.threads)
            indices = round_indices(repeat, len(decoder), RANDOM_FRAMES)
            decoder.get_frames_at(indices)
            lib.synchronize()
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def parallel_fps(path: pathlib.Path, who: Contender, lib: ArrayLib, settings: Settings,
                 num_threads: int) -> float:
    """Total frames per second of ``num_threads`` decoders, one per thread and stream, each decoding
    the same frames from the start (decoders opened before the clock starts)."""
    def open_one() -> Any:
        return open_decoder(path, who.device, settings, num_ffmpeg_threads=who.threads)

    with bridge(lib.bridge):
        decoders = [open_one() for _ in range(num_threads)]
    count = min(len(decoders[0]), settings.bench_frames)
    ready = threading.Barrier(num_threads + 1)
    errors: list[BaseException] = []

    def work(decoder: Any) -> None:
        stream = lib.new_stream()    # each thread its own stream, as a data loader's workers would
        ready.wait()
        try:
            # the bridge is per thread (a ContextVar)
            with bridge(lib.bridge), lib.on_stream(stream):
                decode_sequentially(decoder, count, lib)
        except BaseException as error:   # noqa: BLE001  (re-raised in the calling thread)
            errors.append(error)

    workers = [threading.Thread(target=work, args=(d,)) for d in decoders]
    for worker in workers:
        worker.start()
    ready.wait()
    start = time.perf_counter()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return num_threads * count / elapsed


def bench_measure(subject: str, measure: Callable[[Contender], float], settings: Settings,
                  unit: str, higher_is_better: bool) -> Row:
    """One benchmark row: every contender measured, then the device under test's ratio to each CPU
    setting (> 1 means the device is faster)."""
    values: dict[str, Any] = {}
    errors = []
    if settings.out_of_time():
        return out_of_time_row("bench", subject)
    for who in contenders(settings):
        try:
            values[who.label] = measure(who)
        except Exception as error:   # noqa: BLE001
            errors.append(f"{who.label}: {error_text(error)}")
    under_test = contenders(settings)[0].label
    ratios = {}
    for label in ("cpu t0", "cpu t1"):
        if under_test in values and label in values and values[label] and values[under_test]:
            ratio = values[under_test] / values[label]
            ratios[f"speed-up vs {label}"] = ratio if higher_is_better else 1 / ratio
    fmt = (lambda v: f"{v:.0f} {unit}") if unit == "fps" else (lambda v: f"{1000 * v:.1f} ms")
    parts = [f"{label} {fmt(value)}" for label, value in values.items()]
    parts += [f"{name} {ratio:.2f}x" for name, ratio in ratios.items()]
    result = ", ".join(parts + errors)
    status = "ERROR" if errors else "info"
    return Row("bench", subject, result, status, {"unit": unit, **values, **ratios, "errors": errors})


def check_bench(settings: Settings) -> Iterator[Row]:
    try:
        lib = output_lib(settings)
    except Exception as error:   # noqa: BLE001
        yield Row("bench", "setup", error_text(error), "ERROR")
        return
    for clip in settings.bench_clips:
        path = settings.media / clip
        short = pathlib.Path(clip).stem.removeprefix("bench_")
        yield bench_measure(
            f"{short}: sequential ({settings.bench_frames} frames max)",
            lambda who, path=path: sequential_fps(path, who, lib, settings), settings, "fps", True)
        yield bench_measure(
            f"{short}: open + {RANDOM_FRAMES} random frames",
            lambda who, path=path: random_frames_seconds(path, who, lib, settings), settings, "s", False)
        for num_threads in settings.thread_counts:
            yield bench_measure(
                f"{short}: {num_threads} decoder(s) in {num_threads} thread(s)",
                lambda who, path=path, n=num_threads: parallel_fps(path, who, lib, settings, n),
                settings, "fps", True)
