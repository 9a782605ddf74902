#!/usr/bin/env python3
"""The speed and memory targets of the performance work, each measured and judged in one run.

    python tools/bench.py targets                  # every target, then a verdict table
    python tools/bench.py targets --min-repeats 3  # a shorter run (the default is 7 repeats at least)
    python tools/bench.py targets --json out/      # also save both bench runs and the verdicts
    python tools/bench.py targets --strict         # exit 1 when a target is missed

It runs tools/bench.py three times in this process, on the files the targets name: the 1080p
H.264 benchmark clip (GOP 60, B-frames) with the 60 s AAC clip, at threads=1, in both seek modes,
with the training-loader workload (tools/bench/loader.py); the 40 s 1080p H.264 clip (25 GOPs) at
threads=1 and 0, for GOP-parallel decoding; then the 720p 10-bit H.264 clip at threads=1 and 0.
The runs print their full tables (every peer, best and median, memory, frame checks). Then it
measures peak memory in fresh processes, and prints one row per target: the value measured, the
bound, and whether it is met. Last, with PyAV installed, what bounds the random-indices ratio
(tools/bench/decode_work.py): the least decoding that request needs, against this package's time
for it and against decoding every frame.

A speed target is a ratio of best times in the same run, whose repeats bench.py takes round-robin:
another peer's best over ours (above 1: ours is faster: TorchCodec 0.17, or ours at another
thread count), or ours over a bound's reference (below 1: ours is faster: the ffmpeg CLI's
decode + ``format=rgb24``, or our own exact mode for approximate mode). A target can also require
the frames of the two rows to be identical (the bench's frame check). A memory target is the
peak resident memory (``VmHWM``) of a fresh Python process that imports this package and does that
one job, so that it counts what a user's process holds, not the benchmark's own libraries. The
loader's rows report each worker process's peak.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path

from bench import cli, decode_work, report, workloads

TEN_BIT_FILE_NAME = "bench_720p_h264_10bit.mp4"
OURS, TORCHCODEC, CLI = "ours exact", "TorchCodec exact", "ffmpeg CLI +rgb24"
OURS_APPROX, TORCHCODEC_APPROX = "ours approx", "TorchCodec approx"
FRAME_BYTES_1080P = 1920 * 1080 * 3
MEMORY_SLACK_MB = 100          # a batch may hold its output and this much more
SEQUENTIAL_PEAK_MB = 150       # sequential decoding's peak


@dataclass(frozen=True)
class SpeedTarget:
    """``against``'s best time over ``peer``'s at least ``bound`` (TorchCodec; ours at another
    thread count), or ``peer``'s over ``against``'s at most ``bound`` (``at_most``: by default for
    the CLI). ``against_threads``: the other row's thread count (default: ``threads``).
    ``same_frames``: the frame check must find ``peer``'s frames identical to the reference's."""

    title: str
    run: str          # a key of BENCH_RUNS
    workload: str
    threads: int
    against: str
    bound: float
    peer: str = OURS
    against_threads: int | None = None
    at_most: bool | None = None
    same_frames: bool = False

    @property
    def upper(self) -> bool:
        return self.at_most if self.at_most is not None else self.against == CLI

    def value(self, rows: list[workloads.Measurement]) -> float | None:
        ours = best_time(rows, self.workload, self.threads, self.peer)
        other_threads = self.threads if self.against_threads is None else self.against_threads
        theirs = best_time(rows, self.workload, other_threads, self.against)
        if ours is None or theirs is None:
            return None
        return ours / theirs if self.upper else theirs / ours

    def met(self, value: float) -> bool:
        return value <= self.bound if self.upper else value >= self.bound

    def frames_identical(self, rows: list[workloads.Measurement]) -> bool | None:
        """Whether the frame check found ``peer``'s frames identical to the reference's (None: not checked)."""
        row = report.find_row(rows, self.workload, self.threads, self.peer)
        check = row.check if row is not None else None
        if not check:
            return None
        return check.get("verdict") in ("identical", "reference")

    def describe_bound(self) -> str:
        name = {CLI: "the CLI", OURS: "ours exact"}.get(self.against, self.against)
        if self.against_threads is not None:
            name += f" threads={self.against_threads}"
        if self.upper:
            return f"<= {self.bound:g}x {name}"
        return f">= {self.bound:g}x {name}" + (", same frames" if self.same_frames else "")


SPEED_TARGETS = [
    SpeedTarget("audio: 100 random 1-s ranges, exact", "1080p", "audio_ranges", 1, TORCHCODEC, 1.5),
    SpeedTarget("10 frames at uniform indices, exact", "1080p", "uniform10", 1, TORCHCODEC, 1.6),
    SpeedTarget("10 frames at random indices, exact", "1080p", "random10", 1, TORCHCODEC, 1.6),
    SpeedTarget("audio: 100 random 1-s ranges, approximate vs exact", "1080p", "audio_ranges", 1, OURS, 1.05,
                peer=OURS_APPROX, at_most=True),
    SpeedTarget("10 frames at uniform indices, approximate vs exact", "1080p", "uniform10", 1, OURS, 1.05,
                peer=OURS_APPROX, at_most=True),
    SpeedTarget("10 frames at random indices, approximate vs exact", "1080p", "random10", 1, OURS, 1.05,
                peer=OURS_APPROX, at_most=True),
    SpeedTarget("10 frames at uniform indices, approximate", "1080p", "uniform10", 1, TORCHCODEC_APPROX, 1.5,
                peer=OURS_APPROX),
    SpeedTarget("10 frames at random indices, approximate", "1080p", "random10", 1, TORCHCODEC_APPROX, 1.5,
                peer=OURS_APPROX),
    SpeedTarget("40 s clip, 32 uniform frames, GOP-parallel", "long", "uniform32", 0, OURS, 1.8,
                against_threads=1, same_frames=True),
    SpeedTarget("40 s clip, 32 uniform frames", "long", "uniform32", 0, TORCHCODEC, 2.0, same_frames=True),
    SpeedTarget("training loader, clips/s", "1080p", "loader", 1, TORCHCODEC, 1.3),
    SpeedTarget("open + metadata, a file opened before", "1080p", "reopen", 1, TORCHCODEC, 5.0),
    SpeedTarget("10-bit 720p, every frame", "10bit", "sequential", 1, TORCHCODEC, 1.5),
    SpeedTarget("10-bit 720p, every frame", "10bit", "sequential", 0, TORCHCODEC, 2.0),
    SpeedTarget("every frame, one at a time", "1080p", "sequential", 1, CLI, 1.02),
    SpeedTarget("every frame, batches of 32", "1080p", "batch", 1, CLI, 1.10),
    SpeedTarget("batches of 32 resized to 256x256", "1080p", "resize256", 1, TORCHCODEC, 1.5),
]
BENCH_RUNS = {
    "1080p": ["--workloads", "sequential", "batch", "uniform10", "random10", "reopen", "audio_ranges",
              "resize256", "loader", "--threads", "1"],
    "long": ["--workloads", "uniform32", "--threads", "1", "0"],
    "10bit": ["--workloads", "sequential", "--threads", "1", "0"],
}
SEEK_MODES = {"1080p": ["exact", "approximate"]}     # the other runs: exact mode only

# A fresh process's job: decode every frame of argv[1] at threads=1, one at a time ("sequential") or
# as bench.py's batch workload does ("batch"); print its peak RSS in MB. The peak is VmHWM
# (measure.resident_kb), which starts anew with the process's image; ru_maxrss would not do: Linux
# keeps it across execve, so a child of a large parent reports at least the parent's size at the fork.
# argv[3]: this folder, for bench.py (which imports only the standard library).
MEMORY_PROBE = """
import sys
sys.path.insert(0, sys.argv[3])
from bench import measure, peers
from torchcodec.decoders import VideoDecoder
decoder = VideoDecoder(sys.argv[1], num_ffmpeg_threads=1)
if sys.argv[2] == "batch":
    peers.TorchCodecApiPeer._all_in_batches(decoder)
else:
    for frame in decoder:
        pass
print(measure.resident_kb()[1] / 1024)
"""


def best_time(rows: list[workloads.Measurement], workload: str, threads: int, peer: str) -> float | None:
    row = report.find_row(rows, workload, threads, peer)
    return row.min_s if row is not None else None


def peak_rss_mb(path: Path, job: str, runs: int) -> float:
    """The largest peak RSS of ``runs`` fresh processes doing ``job`` on ``path``."""
    peaks = []
    for _ in range(runs):
        tools = str(Path(__file__).resolve().parent.parent)
        done = subprocess.run([sys.executable, "-P", "-c", MEMORY_PROBE, str(path), job, tools],
                              capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
        peaks.append(float(done.stdout.strip().splitlines()[-1]))
    return max(peaks)


@dataclass
class Verdict:
    title: str
    measured: str
    bound: str
    met: bool | None     # None: not measured (a peer missing)

    @property
    def word(self) -> str:
        return "n/a" if self.met is None else "met" if self.met else "NOT MET"


def speed_verdicts(runs: dict[str, list[workloads.Measurement]]) -> list[Verdict]:
    verdicts = []
    for target in SPEED_TARGETS:
        rows = runs.get(target.run, [])
        value = target.value(rows)
        title = f"{target.title} (threads={target.threads})"
        if value is None:
            verdicts.append(Verdict(title, "n/a", target.describe_bound(), None))
            continue
        met = target.met(value)
        measured = f"{value:.2f}x"
        if target.same_frames:
            identical = target.frames_identical(rows)
            met = met and identical is True
            measured += {True: ", same", False: ", OTHER frames", None: ", unchecked"}[identical]
        verdicts.append(Verdict(title, measured, target.describe_bound(), met))
    return verdicts


def worker_memory(runs: dict[str, list[workloads.Measurement]]) -> str:
    """The loader's peak resident memory per worker process, ours and TorchCodec's."""
    parts = []
    for peer in (OURS, TORCHCODEC):
        row = report.find_row(runs.get("1080p", []), "loader", 1, peer)
        if row is not None and row.peak_rss_mb is not None:
            parts.append(f"{peer}: {row.peak_rss_mb:.0f} MB (+{row.added_rss_mb:.0f} MB decoding)")
    return "Training loader, peak RSS per worker process: " + ("; ".join(parts) if parts else "not measured")


def memory_verdicts(path: Path, runs: int) -> list[Verdict]:
    batch_output_mb = workloads.BATCH_SIZE * FRAME_BYTES_1080P / 2**20
    batch_peak = peak_rss_mb(path, "batch", runs)
    sequential_peak = peak_rss_mb(path, "sequential", runs)
    return [
        Verdict("peak RSS, batches of 32 1080p frames", f"{batch_peak:.0f} MB",
                f"<= {batch_output_mb:.0f} MB output + {MEMORY_SLACK_MB} MB",
                batch_peak <= batch_output_mb + MEMORY_SLACK_MB),
        Verdict("peak RSS, every frame one at a time", f"{sequential_peak:.0f} MB", f"<= {SEQUENTIAL_PEAK_MB} MB",
                sequential_peak <= SEQUENTIAL_PEAK_MB),
    ]


def random_access_limit(path: Path, repeats: int) -> str:
    """What bounds the random-indices ratio: the least decoding the request needs, with libavcodec
    alone, against this package's whole request and against decoding every frame (as TorchCodec
    does), timed round-robin (tools/bench/decode_work.py; needs PyAV)."""
    try:
        import av  # noqa: F401
    except ImportError as exc:
        return f"Random-access limit: not measured ({exc}; tools/bench/decode_work.py needs PyAV)"
    work = decode_work.measure(path, seed=0, count=workloads.NUM_SAMPLED_FRAMES, repeats=repeats)
    return ("Random-access limit (10 frames at random indices; tools/bench/decode_work.py):\n"
            f"  this package's whole request takes {work.ours_over_referenced:.2f}x the least decoding it needs "
            f"(libavcodec alone: {work.frames_out['referenced']} referenced frames and targets, "
            f"{work.best_s['referenced'] * 1e3:.0f} ms);\n"
            f"  decoding every frame up to the targets ({work.frames_out['every']} frames, as TorchCodec does) "
            f"takes {work.every_over_referenced:.2f}x it: so TorchCodec's ratio to ours can exceed that only by "
            f"its costs beyond decoding.")


def format_verdicts(verdicts: list[Verdict]) -> str:
    width = max(len(v.title) for v in verdicts)
    lines = ["Targets (speed: TorchCodec 0.17's best / ours, or ours / the ffmpeg CLI's decode+rgb24; "
             "memory: a fresh process's peak RSS)",
             f"{'target':<{width}}  {'measured':>9}  {'bound':<32}  verdict",
             "-" * (width + 55)]
    lines += [f"{v.title:<{width}}  {v.measured:>9}  {v.bound:<32}  {v.word}" for v in verdicts]
    met = sum(v.met is True for v in verdicts)
    lines.append(f"{met} of {len(verdicts)} targets met in this run.")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--budget", type=float, default=5.0,
                        help="seconds per measurement when bench.py chooses N (default 5: 3 to 15 repeats)")
    parser.add_argument("--min-repeats", type=int, default=7,
                        help="fewest repeats of each measurement (default 7: a best of 3 of the 2-s workloads "
                             "varies by 10 %% on a shared machine)")
    parser.add_argument("--memory-runs", type=int, default=3, help="fresh processes per memory target (default 3)")
    parser.add_argument("--tc-venv", type=Path, default=workloads.DEFAULT_TC_VENV)
    parser.add_argument("--json", type=Path, help="a folder for both runs' measurements and the verdicts")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed or not measured")
    args = parser.parse_args(argv)

    files = {"1080p": report.default_media_file(), "long": report.bench_media(workloads.LONG_FILE_NAME),
             "10bit": report.bench_media(TEN_BIT_FILE_NAME)}
    runs: dict[str, list[workloads.Measurement]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, run_args in BENCH_RUNS.items():
            saved = (args.json or Path(scratch)) / f"bench_{name}.json"
            common = ["--file", str(files[name]), "--seek-modes", *SEEK_MODES.get(name, ["exact"]),
                      "--budget", str(args.budget),
                      "--min-repeats", str(args.min_repeats),
                      "--tc-venv", str(args.tc_venv), "--json", str(saved)]
            cli.main(run_args + common)
            runs[name] = [workloads.Measurement.from_json(row) for row in json.loads(saved.read_text())["results"]]
    verdicts = speed_verdicts(runs) + memory_verdicts(files["1080p"], args.memory_runs)
    print(format_verdicts(verdicts), flush=True)
    print(worker_memory(runs), flush=True)
    print(random_access_limit(files["1080p"], args.min_repeats), flush=True)
    if args.json:
        (args.json / "targets.json").write_text(json.dumps([asdict(v) | {"verdict": v.word} for v in verdicts],
                                                           indent=1))
    return 1 if args.strict and not all(v.met for v in verdicts) else 0
