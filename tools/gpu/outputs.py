"""The GPU check's output steps: outputs on non-default streams read without synchronisation (race),
and torchcodec's own device buffers through DLPack and the CUDA Array Interface (interop)."""
from __future__ import annotations

import dataclasses
import importlib
import importlib.util
import pathlib
import random
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from gpu.rows import (ArrayLib, Row, Settings, bridge, error_text, load_lib, open_decoder, out_of_time_row,
                      video_decoder)
import numpy as np


# --------------------------------------------------------------------------------------------
# 2. race: outputs on non-default streams, read without synchronisation


def round_indices(round_number: int, num_frames: int, count: int) -> list[int]:
    """Different frames each round (so a read of a reused, not yet written buffer shows)."""
    rng = random.Random(round_number)
    return sorted(rng.sample(range(num_frames), min(count, num_frames)))


@dataclasses.dataclass
class RaceTally:
    rounds: int = 0
    bad_sums: int = 0
    bad_pixels: int = 0

    def row(self, subject: str) -> Row:
        numbers = dataclasses.asdict(self)
        bad = self.bad_sums + self.bad_pixels
        result = (f"{self.rounds} rounds: {self.bad_sums} wrong sums on the stream, "
                  f"{self.bad_pixels} wrong host copies")
        return Row("race", subject, result, "FAIL" if bad or not self.rounds else "ok", numbers)


class CpuReference:
    """The CPU decoder's frames of one file, and their sums, per set of indices."""

    def __init__(self, path: pathlib.Path) -> None:
        with bridge("numpy"):
            decoder = video_decoder(path, dimension_order="NHWC")
            self.frames = decoder.get_frames_in_range(0, len(decoder)).data

    def __len__(self) -> int:
        return len(self.frames)

    def batch(self, indices: Sequence[int]) -> np.ndarray:
        return self.frames[list(indices)]


OWN_STREAM = "decode + read on one non-default stream"


def race_on_own_stream(lib: ArrayLib, path: pathlib.Path, reference: CpuReference,
                       settings: Settings) -> Row:
    """Decode with ``lib``'s bridge on a non-default stream and read on it at once.

    Sums stay on the device until every round is queued (a later round's decode must not overwrite
    a buffer an earlier round's sum still reads); the host copies happen after ``synchronize()``."""
    tally = RaceTally()
    stream = lib.new_stream()
    pending = []
    with bridge(lib.bridge), lib.on_stream(stream):
        decoder = open_decoder(path, settings.device, settings)
        for round_number in range(settings.race_rounds):
            indices = round_indices(round_number, len(reference), 8)
            if round_number % 2 == 0:
                lib.busy()
            frames = decoder.get_frames_at(indices).data
            pending.append((indices, lib.total(frames), frames if round_number % 4 == 3 else None))
            del frames
    lib.synchronize(stream)
    for indices, total, frames in pending:
        expected = reference.batch(indices)
        tally.rounds += 1
        tally.bad_sums += int(lib.to_numpy(total)) != int(expected.sum(dtype=np.int64))
        if frames is not None:
            tally.bad_pixels += not np.array_equal(lib.to_numpy(frames), expected)
    return tally.row(f"{lib.name}: {OWN_STREAM}")


def race_through_dlpack(producer: ArrayLib, consumer: ArrayLib, path: pathlib.Path,
                        reference: CpuReference, settings: Settings) -> Row:
    """Decode with ``producer``'s bridge on its non-default stream, import the frames into
    ``consumer`` through DLPack while that stream is current (DLPack orders the consumer's current
    stream after it), then read them on another stream of the consumer's."""
    tally = RaceTally()
    producer_stream, consumer_stream = producer.new_stream(), consumer.new_stream()
    with bridge(producer.bridge):
        decoder = open_decoder(path, settings.device, settings)
    for round_number in range(settings.race_rounds):
        indices = round_indices(1000 + round_number, len(reference), 8)
        with bridge(producer.bridge), producer.on_stream(producer_stream):
            if round_number % 2 == 0:
                producer.busy()
            frames = decoder.get_frames_at(indices).data
            with consumer.on_stream(consumer_stream):
                imported = consumer.from_dlpack(frames)
                total = consumer.total(imported)
        consumer.synchronize(consumer_stream)
        expected = reference.batch(indices)
        tally.rounds += 1
        tally.bad_sums += int(consumer.to_numpy(total)) != int(expected.sum(dtype=np.int64))
        tally.bad_pixels += not np.array_equal(consumer.to_numpy(imported), expected)
        producer.synchronize(producer_stream)
    return tally.row(f"DLPack {producer.name} -> {consumer.name}, read on another stream")


def check_races(settings: Settings) -> Iterator[Row]:
    path = settings.media / settings.race_clip
    try:
        reference = CpuReference(path)
    except Exception as error:   # noqa: BLE001
        yield Row("race", settings.race_clip, error_text(error), "ERROR")
        return
    libs: dict[str, ArrayLib] = {}
    jobs: list[tuple[str, Callable[[], Row] | str]] = []     # (subject, job or why skipped)
    for name in ("torch", "cupy"):
        try:
            lib = libs[name] = load_lib(name, settings)
        except ImportError as error:
            jobs.append((f"{name}: {OWN_STREAM}", f"{name} is not installed ({error})"))
            continue
        jobs.append((f"{lib.name}: {OWN_STREAM}", lambda lib=lib: race_on_own_stream(lib, path, reference, settings)))
    if len(libs) == 2:
        torch_lib, other = libs["torch"], libs["cupy"]
        jobs += [(f"DLPack torch -> {other.name}",
                  lambda: race_through_dlpack(torch_lib, other, path, reference, settings)),
                 (f"DLPack {other.name} -> torch",
                  lambda: race_through_dlpack(other, torch_lib, path, reference, settings))]
    else:
        jobs.append(("DLPack hand-offs", "needs both torch and cupy"))
    for subject, job in jobs:
        if isinstance(job, str):
            yield Row("race", subject, job, "skipped")
            continue
        if settings.out_of_time():
            yield out_of_time_row("race", subject)
            continue
        try:
            yield job()
        except Exception as error:   # noqa: BLE001
            yield Row("race", subject, error_text(error), "ERROR", {"error": error_text(error)})


# --------------------------------------------------------------------------------------------
# 4. interop: torchcodec's own device buffers through DLPack and the CUDA Array Interface

INTEROP_FRAMES = [0, 5, 17, 42]


def own_buffer(settings: Settings, shape: tuple) -> Any:
    """Memory torchcodec allocates itself (a DeviceBuffer on the legacy default stream); numpy in a dry run."""
    if settings.dry_run:
        return np.zeros(shape, np.uint8)
    from torchcodec._cuda import _driver, _device_buffer
    context = _driver.load_driver().context(int(settings.device.partition(":")[2] or 0))
    return _device_buffer.DeviceBuffer.empty(context, shape, "uint8", 1)


def dlpack_reader(module: Any) -> Callable[[Any], np.ndarray]:
    """A view imported by ``module`` (torch or cupy) through DLPack, copied to the host. A function
    of its own, so that each reader keeps its module (a lambda in a loop would see the last one)."""
    if module.__name__ == "torch":
        return lambda view: module.from_dlpack(view).cpu().numpy()
    return lambda view: module.from_dlpack(view).get()


def dlpack_consumers(installed: dict[str, Any], dry_run: bool) -> list[tuple[str, Callable[[Any], np.ndarray] | str]]:
    """(subject, reader or why it is skipped) for each DLPack consumer of the interop check:
    ``installed`` maps "torch" / "cupy" to the module where it is installed."""
    consumers: list[tuple[str, Callable[[Any], np.ndarray] | str]] = []
    for name in ("torch", "cupy"):
        subject = f"DLPack frame views -> {name}"
        if name not in installed:
            consumers.append((subject, f"{name} is not installed"))
        elif name == "cupy" and dry_run:
            consumers.append((subject, "a dry run has no cupy device arrays"))
        else:
            consumers.append((subject, dlpack_reader(installed[name])))
    if dry_run:
        consumers.append(("DLPack frame views -> numpy (cupy's stand-in)", lambda view: np.from_dlpack(view)))
    return consumers


def check_interop(settings: Settings) -> Iterator[Row]:
    """Frames decoded into torchcodec's own buffer, then each view ``buffer[i]`` taken by torch and
    cupy through DLPack (``data`` must be frame i's address: a consumer ignoring ``byte_offset``
    reads right), and the batch through ``__cuda_array_interface__`` v3 (cupy.asarray)."""
    path = settings.media / settings.race_clip
    if settings.out_of_time():
        yield out_of_time_row("interop", "DLPack frame views and the CUDA Array Interface")
        return
    try:
        reference = CpuReference(path)
        expected = reference.batch(INTEROP_FRAMES)
        buffer = own_buffer(settings, expected.shape)
        with bridge("numpy"):
            open_decoder(path, settings.device, settings).get_frames_at(INTEROP_FRAMES, out=buffer)
    except Exception as error:   # noqa: BLE001
        yield Row("interop", "decode into an own buffer", error_text(error), "ERROR", {"error": error_text(error)})
        return
    installed = {name: importlib.import_module(name) for name in ("torch", "cupy")
                 if importlib.util.find_spec(name) is not None}
    consumers = dlpack_consumers(installed, settings.dry_run)
    for subject, read in consumers:
        if isinstance(read, str):
            yield Row("interop", subject, read, "skipped")
            continue
        try:
            wrong = [i for i, frame in enumerate(expected) if not np.array_equal(read(buffer[i]), frame)]
        except Exception as error:   # noqa: BLE001
            yield Row("interop", subject, error_text(error), "ERROR", {"error": error_text(error)})
            continue
        yield Row("interop", subject, f"{len(expected) - len(wrong)} of {len(expected)} frames read right"
                  + (f"; wrong: views {wrong}" if wrong else ""), "FAIL" if wrong else "ok", {"wrong": wrong})
    subject = "CUDA Array Interface v3 -> cupy" if not settings.dry_run else "buffer protocol -> numpy (CAI's stand-in)"
    try:
        if settings.dry_run:
            seen = np.asarray(buffer)
        else:
            if importlib.util.find_spec("cupy") is None:
                yield Row("interop", subject, "cupy is not installed", "skipped")
                return
            import cupy
            interface = buffer.__cuda_array_interface__
            if interface["version"] != 3 or interface["stream"] is not None:
                raise ValueError(f"interface {interface}")
            seen = cupy.asarray(buffer).get()
        same = bool(np.array_equal(seen, expected))
        yield Row("interop", subject, "the batch reads right" if same else "the batch differs from the CPU's",
                  "ok" if same else "FAIL")
    except Exception as error:   # noqa: BLE001
        yield Row("interop", subject, error_text(error), "ERROR", {"error": error_text(error)})
