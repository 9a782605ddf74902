#!/usr/bin/env python3
"""Check torchcodec's CUDA decoding on a machine with an NVIDIA GPU, one row at a time.

    python tools/gpu/check.py [--device cuda|cuda:N|cpu] [--quick]
                              [--only probe,frames,blocks,nvenc,race,interop,sanitize,bench]
                              [--out DIR] [--step NAME] [--summary FILE] [--deadline SECONDS]
    python tools/gpu/check.py --junit REPORT.xml | --rows ROWS.jsonl --out DIR --step NAME

Each row is printed and appended to DIR/gpu_check.md (a markdown table: step, check, subject, result,
status) and DIR/gpu_check.jsonl as soon as it is known, so that a run stopped early still says
what it found; an exception is reported in its row and never stops the others. The checks:

1. probe: the driver through ctypes only (no torchcodec needed, so it runs while torchcodec builds):
   libcuda.so.1 and libnvcuvid.so.1 load, the driver version and device, and cuvidGetDecoderCaps
   for h264, hevc, vp9, av1, vp8, mpeg4 and mpeg2 at 8 and 10 bits, 4:2:0 and 4:4:4. On a GPU a
   missing libnvcuvid.so.1, or an NVDEC without H.264 / HEVC 8-bit 4:2:0, is a FAIL.
2. frames: corpus files (tools/make_media.py) decoded with the device under test and with the CPU
   decoder; per file the max and mean absolute difference of the RGB values, judged by the table of
   tools/gpu/gpu_tolerances.py (also used by tests/test_cuda_decoding.py), and the decoder's
   ``cpu_fallback``: a fallback for lack of libnvcuvid, or for a stream every NVDEC decodes, FAILs.
2b. blocks: the building blocks on the device: ``stream.make_decoder(device)`` keeping 30 RawFrames
   alive (more than NVDEC's 4 output surfaces), their pixel format (an NVDEC surface format) and
   luma planes (against the CPU decoder's), ``ColorConverter(device)`` equal to the device
   VideoDecoder's frames and judged against the CPU ColorConverter by tools/gpu/gpu_tolerances.py,
   and a seek + ``reset()`` giving the CPU blocks' pts (tools/gpu_check.sh's "blocks" step).
2c. nvenc: whether NVENC opens a session, then frames of CUDA torch tensors and cupy arrays encoded
   and decoded back (gpu/encoding.py); a GPU without an NVENC engine is a hardware limit.
3. race: frames handed over on non-default streams. torch: decode on ``torch.cuda.Stream()`` made
   current, sum on that stream at once (no synchronisation), copy to the host after
   ``synchronize()``; cupy the same on ``cupy.cuda.Stream(non_blocking=True)``; DLPack hand-offs
   torch -> cupy and cupy -> torch read on a second stream. Every other round first queues a large
   matrix product on the stream, so that output written without waiting for the stream's earlier
   work (or read before the write is done) shows as wrong sums or pixels.
4. interop: torchcodec's own device buffers (the numpy bridge on CUDA): each frame view
   ``batch[i]`` through DLPack into torch and cupy (``data`` must point at frame i, whatever the
   consumer does with ``byte_offset``), and the batch through ``__cuda_array_interface__`` v3.
4b. sanitize: compute-sanitizer memcheck and racecheck over a short workload that launches every
   kernel and decodes with NVDEC (gpu/sanitize.py).
5. bench: whole files, decoders opened and warmed before the clock, 1/2/4/8/16 decoders in threads
   and in processes, to RGB and to NV12 (the blocks), PyNvVideoCodec beside when importable, NVDEC
   utilisation and host CPU beside frames/s; one decoder against the CPU decoder; open + 10 random
   frames (gpu/speed.py).

``--device cpu`` is a dry run for machines without a GPU: the device under test is the CPU
decoder, the race rows use torch on the CPU (when installed) and numpy in cupy's place, the interop
rows numpy arrays, and the table has the same rows; every frame difference must then be 0 (the
probe runs against whatever libcuda.so.1 / libnvcuvid.so.1 the library path finds: the stubs of
tests/cuda_stubs in tools/gpu_check.sh's dry run). ``--quick`` decodes fewer frames and
repetitions (30 frames per file). The benchmark decodes whole files (in a dry run the 30-frame
1080p corpus clips, with 1 and 2 decoders).
Exit status 1 when a row failed (FAIL or ERROR: a row whose status is "limit: ..." names a hardware
limit of this GPU, such as no NVENC engine, and is neither). ``--junit`` and ``--rows`` put other
reports into the table instead of checking: a pytest JUnit XML report, or another check's rows
(tools/gpu/jpeg_check.py's JSON lines, whose statuses are these).

This file is the command line and the table; the steps live beside it in tools/gpu/: rows.py (the
settings, rows and array libraries they share), decoding.py (probe, frames, blocks), outputs.py
(race, interop), encoding.py (nvenc), sanitize.py (sanitize), speed.py and usage.py (bench); the
tolerances in gpu_tolerances.py. jpeg_check.py is nvJPEG's check, whose rows --rows imports.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import json
import pathlib
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

TOOLS = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOOLS))      # the gpu package, make_media (python -P leaves the script's folder out)

from gpu.decoding import check_blocks, check_frames, check_probe
from gpu.encoding import check_nvenc
from gpu.outputs import check_interop, check_races
from gpu.sanitize import check_sanitize
from gpu.rows import BENCH_CLIPS, DRY_RUN_BENCH_CLIPS, RACE_CLIP, Row, Settings, error_text, torchcodec_module
from gpu.speed import check_bench
import make_media
import numpy as np


# --------------------------------------------------------------------------------------------
# Environment, table, main


def versions() -> dict[str, str]:
    torchcodec = torchcodec_module()
    found = {"python": sys.version.split()[0], "torchcodec": torchcodec.__version__,
             "ffmpeg": torchcodec.ffmpeg_version(), "numpy": np.__version__,
             "cuda_available": str(torchcodec.cuda_available())}
    for name in ("torch", "cupy"):
        if importlib.util.find_spec(name) is not None:
            try:
                found[name] = importlib.import_module(name).__version__
            except Exception as error:   # noqa: BLE001
                found[name] = f"broken ({error_text(error)})"
        else:
            found[name] = "not installed"
    return found


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: Sequence[Row]) -> str:
    lines = ["| check | subject | result | status |", "| --- | --- | --- | --- |"]
    lines += [f"| {r.check} | {cell(r.subject)} | {cell(r.result)} | {r.status} |" for r in rows]
    return "\n".join(lines)


def imported_rows(path: pathlib.Path) -> Iterator[Row]:
    """Another check's rows (JSON lines with step, check, subject, result, status, as
    tools/gpu/jpeg_check.py writes them): its step becomes the check, its check goes before the subject."""
    try:
        lines = path.read_text().splitlines()
    except OSError as error:
        yield Row("rows", path.name, f"no rows: {error}", "ERROR")
        return
    for line in lines:
        row = json.loads(line)
        yield Row(row["step"], f"{row['check']}: {row['subject']}", row["result"], row["status"])
    if not lines:
        yield Row("rows", path.name, "the check wrote no row", "ERROR")


def junit_rows(path: pathlib.Path) -> Iterator[Row]:
    """A pytest JUnit XML report as rows: one with the counts, one per failed or erroring test with
    the first line of its message (the full traceback is in the step's streamed output)."""
    import xml.etree.ElementTree as ElementTree
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError) as error:
        yield Row("pytest", path.name, f"no report: {error}", "ERROR")
        return
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    seconds = 0.0
    for suite in root.iter("testsuite"):
        for key in counts:
            counts[key] += int(suite.get(key, 0))
        seconds += float(suite.get("time", 0))
    passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    bad = counts["failures"] + counts["errors"]
    files = sorted({case.get("classname", "").split(".")[-1] for case in root.iter("testcase")} - {""})
    yield Row("pytest", ", ".join(files) or path.name,
              f"{passed} passed, {counts['failures']} failed, {counts['errors']} errors, {counts['skipped']} skipped "
              f"in {seconds:.0f}s", "FAIL" if bad else ("ok" if passed else "skipped"), {**counts, "seconds": seconds})
    for case in root.iter("testcase"):
        for kind in ("failure", "error"):
            found = case.find(kind)
            if found is not None:
                message = (found.get("message") or found.text or "").strip().splitlines()
                yield Row("pytest", f"{case.get('classname', '').split('.')[-1]}::{case.get('name')}",
                          message[0][:300] if message else kind, "FAIL" if kind == "failure" else "ERROR")


TABLE_HEADER = "| step | check | subject | result | status |\n| --- | --- | --- | --- | --- |\n"


class RowLog:
    """Rows as they come: printed, and appended to OUT/gpu_check.md (one markdown table shared with
    tools/gpu_check.sh's own rows, the header written by whoever starts the file) and to
    OUT/gpu_check.jsonl (one JSON object per row), each flushed at once."""

    def __init__(self, out: pathlib.Path | None, step: str) -> None:
        self.out, self.step, self.rows = out, step, []
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            table = out / "gpu_check.md"
            if not table.exists() or table.stat().st_size == 0:
                table.write_text(TABLE_HEADER)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        print(f"  {row.check:7} {row.status:7} {row.subject}: {row.result}", flush=True)
        if self.out is None:
            return
        with open(self.out / "gpu_check.md", "a") as table:
            table.write(f"| {self.step} | {row.check} | {cell(row.subject)} | {cell(row.result)} | {row.status} |\n")
        with open(self.out / "gpu_check.jsonl", "a") as lines:
            lines.write(json.dumps({"step": self.step, **dataclasses.asdict(row)}) + "\n")


@dataclasses.dataclass
class Outputs:
    out: pathlib.Path | None
    step: str
    summary: pathlib.Path | None
    only: list[str]
    junit: pathlib.Path | None
    rows: pathlib.Path | None


def parse_args(argv: Sequence[str] | None) -> tuple[Settings, Outputs]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu for a dry run (default cuda)")
    parser.add_argument("--quick", action="store_true",
                        help="30 frames per file, fewer repetitions; the 1080p corpus clips as benchmark, 1 vs 8 decoders")
    parser.add_argument("--out", type=pathlib.Path,
                        help="append the rows to OUT/gpu_check.md and OUT/gpu_check.jsonl as they come")
    parser.add_argument("--step", default="gpu_check", help="the step name in the table's first column")
    parser.add_argument("--summary", type=pathlib.Path,
                        help="write versions, timings and rows here at the end (default OUT/<step>.json)")
    parser.add_argument("--media", type=pathlib.Path, default=make_media.MEDIA_DIR,
                        help=f"the corpus folder (default {make_media.MEDIA_DIR})")
    parser.add_argument("--files", help="comma-separated corpus files to compare (default: the whole corpus)")
    parser.add_argument("--bench-clips", default=None,
                        help=f"comma-separated clips to benchmark, whole (default {','.join(BENCH_CLIPS)}; "
                             f"in a dry run {','.join(DRY_RUN_BENCH_CLIPS)})")
    parser.add_argument("--race-clip", default=RACE_CLIP)
    parser.add_argument("--cuda-backend", default="nvdec", choices=("nvdec", "ffmpeg"))
    parser.add_argument("--bridge", default="auto", choices=("auto", "torch", "cupy", "numpy"),
                        help="the output library of the frame check and the benchmark (default: torch, else cupy, "
                             "else torchcodec's own buffers)")
    parser.add_argument("--only", default="probe,frames,blocks,nvenc,race,interop,sanitize,bench",
                        help="comma-separated checks to run")
    parser.add_argument("--deadline", type=float, default=None,
                        help="seconds after which rows not yet started are skipped (the table is still printed)")
    parser.add_argument("--junit", type=pathlib.Path,
                        help="instead of checking: put this pytest JUnit XML report into the table")
    parser.add_argument("--rows", type=pathlib.Path,
                        help="instead of checking: put another check's rows (JSON lines) into the table")
    args = parser.parse_args(argv)
    if args.device != "cpu" and not args.device.startswith("cuda"):
        parser.error(f"--device must be cuda, cuda:N or cpu, not {args.device!r}")
    files = args.files.split(",") if args.files else make_media.default_names()
    clips = args.bench_clips if args.bench_clips is not None else ",".join(
        DRY_RUN_BENCH_CLIPS if args.device == "cpu" else BENCH_CLIPS)
    settings = Settings(args.device, args.quick, args.media, tuple(files),
                        tuple(c for c in clips.split(",") if c), args.race_clip, args.cuda_backend, args.bridge,
                        time.monotonic() + (args.deadline if args.deadline is not None else float("inf")))
    summary = args.summary or (args.out / f"{args.step}.json" if args.out is not None else None)
    return settings, Outputs(args.out, args.step, summary, args.only.split(","), args.junit, args.rows)


class Terminated(BaseException):
    """SIGTERM arrived (``timeout`` ran out): stop the checks but still print the table."""


def terminated(signum: int, frame: Any) -> None:
    raise Terminated()


CHECKS: dict[str, Callable[[Settings], Iterator[Row]]] = {
    "probe": check_probe, "frames": check_frames, "blocks": check_blocks, "race": check_races,
    "interop": check_interop, "nvenc": check_nvenc, "sanitize": check_sanitize, "bench": check_bench}


def main(argv: Sequence[str] | None = None) -> int:
    settings, outputs = parse_args(argv)
    imports = {"junit": (outputs.junit, junit_rows), "rows": (outputs.rows, imported_rows)}
    for name, (path, _) in imports.items():
        if path is not None:
            outputs.only = [name]
    unknown = set(outputs.only) - set(CHECKS) - set(imports)
    if unknown:
        print(f"unknown checks {sorted(unknown)}; choose from {sorted(CHECKS)}", file=sys.stderr)
        return 2
    env = versions() if set(outputs.only) - {"probe", *imports} else {"python": sys.version.split()[0]}
    print("gpu_check: device " + settings.device + ("" if not settings.dry_run else " (dry run)") + "; "
          + ", ".join(f"{k} {v}" for k, v in env.items()), flush=True)
    log = RowLog(outputs.out, outputs.step)
    timings = {}
    signal.signal(signal.SIGTERM, terminated)
    for name in outputs.only:
        start = time.perf_counter()
        try:
            for row in (CHECKS[name](settings) if name not in imports else imports[name][1](imports[name][0])):
                log.add(row)
        except Terminated:
            log.add(Row(name, "(rest)", "terminated (SIGTERM, e.g. timeout): rows left out", "ERROR"))
            break
        finally:
            timings[name] = time.perf_counter() - start
    rows = log.rows
    failed = [r for r in rows if r.failed]
    verdict = f"{len(failed)} of {len(rows)} rows failed" if failed else f"all {len(rows)} rows passed"
    print(f"\n## gpu_check summary (device {settings.device}{', quick' if settings.quick else ''}): {verdict}\n")
    print(markdown_table(rows), flush=True)
    if outputs.summary is not None:
        outputs.summary.parent.mkdir(parents=True, exist_ok=True)
        report = {"device": settings.device, "quick": settings.quick, "step": outputs.step, "versions": env,
                  "seconds": timings, "failed": len(failed), "verdict": verdict,
                  "rows": [dataclasses.asdict(r) for r in rows]}
        outputs.summary.write_text(json.dumps(report, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
