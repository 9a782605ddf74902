#!/usr/bin/env python3
"""The performance page's figures, drawn with matplotlib from the data files in docs/_data/.

    python tools/docs_figures.py plot docs/_figures            # every figure, as SVG (build_docs.sh runs it)
    python tools/docs_figures.py data OUT/ --machine "..."     # docs/_data/cpu_benchmarks.json from
                                                               # `tools/bench.py targets --json OUT/`

Data files (JSON, each with ``date`` and ``machine``; regenerate them when re-measured):

- ``cpu_benchmarks.json``: per workload, this package's best time and each peer's best time over
  it (above 1: this package is faster), and each peer's peak resident memory; made by ``data``
  from the three bench runs of ``tools/bench.py targets --json``.
- ``gpu_throughput.json``: total frames/s of N decoders in N threads, per decoder and format.

Malformed or missing data stops with a message naming the file and the field, so that the docs
build fails rather than show a wrong figure. ``figures()`` returns the matplotlib figures with the
values they plot (tests/test_docs_figures.py reads them back against the JSON).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import textwrap
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent.parent / "docs" / "_data"
CPU_FILE, GPU_FILE = "cpu_benchmarks.json", "gpu_throughput.json"

# The bench runs' peer names, and the names the figures give them.
OURS = "ours exact"
PEERS = {"TorchCodec exact": "TorchCodec 0.17", "PyAV": "PyAV", "ffmpeg CLI +rgb24": "ffmpeg CLI (decode + rgb24)"}
# (bench run, workload, threads): the workloads the figures show, in this order.
WORKLOADS = [("1080p", "sequential", 1), ("1080p", "batch", 1), ("1080p", "uniform10", 1),
             ("1080p", "random10", 1), ("1080p", "resize256", 1), ("1080p", "reopen", 1),
             ("1080p", "audio_ranges", 1), ("1080p", "loader", 1), ("long", "uniform32", 1),
             ("long", "uniform32", 0), ("10bit", "sequential", 1), ("10bit", "sequential", 0)]
FILES = {"1080p": "1080p H.264", "long": "40 s 1080p H.264", "10bit": "720p 10-bit H.264"}
AUDIO_FILE = "60 s AAC"
# Memory: ours and PyAV are measured in the same process (the bench's), TorchCodec in its own
# (with torch): PyAV's peak would be ours again, so the memory figure shows ours and TorchCodec's.
MEMORY_PEERS = (OURS, "TorchCodec exact")


class DataError(ValueError):
    """A data file is missing, or a field of it is missing or malformed."""


# --- data ------------------------------------------------------------------------------------------

def make_cpu_data(folder: Path, machine: str, date: str, command: str) -> dict[str, Any]:
    """cpu_benchmarks.json's content from ``tools/bench.py targets --json folder``'s bench runs."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from bench.workloads import WORKLOADS as TITLES        # tools/bench (standard library only)
    runs = {name: json.loads((folder / f"bench_{name}.json").read_text()) for name in FILES}
    workloads = []
    for run, name, threads in WORKLOADS:
        rows = [r for r in runs[run]["results"] if r["workload"] == name and r["threads"] == threads
                and r["status"] == "ok" and r.get("min_s")]
        by_peer = {r["peer"]: r for r in rows}
        if OURS not in by_peer:
            continue
        ours = by_peer[OURS]
        label = TITLES[name].title
        file = AUDIO_FILE if TITLES[name].media == "audio" else FILES[run]
        workloads.append({
            "workload": name, "file": file, "threads": threads, "ours_ms": round(ours["min_s"] * 1e3, 1),
            "ratios": {PEERS[p]: round(by_peer[p]["min_s"] / ours["min_s"], 3) for p in PEERS if p in by_peer},
            "peak_rss_mb": {label_of(p): round(r["peak_rss_mb"]) for p, r in by_peer.items()
                            if r.get("peak_rss_mb") and p in MEMORY_PEERS},
            "label": label,
        })
    fresh = {v["title"]: float(v["measured"].split()[0]) for v in json.loads((folder / "targets.json").read_text())
             if v["title"].startswith("peak RSS") and v["met"] is not None}
    return {"date": date, "machine": machine, "command": command,
            "ratio": "peer's best time / this package's best time (above 1: this package is faster)",
            "peak_rss": "the benchmark process's peak resident memory during a repeat, MB (the loader: per "
                        "worker process)",
            "fresh_process_peak_rss_mb": fresh, "workloads": workloads}


def label_of(peer: str) -> str:
    return "torchcodec-cython" if peer == OURS else PEERS[peer]


def load(name: str, folder: Path = DATA) -> dict[str, Any]:
    path = folder / name
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: cannot be read as JSON ({exc})") from None
    for field in ("date", "machine"):
        if not isinstance(data.get(field), str) or not data[field]:
            raise DataError(f"{path}: no {field!r} (each data file says when and on what it was measured)")
    return data


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
        raise DataError(f"{where}: {value!r} is not a positive number")
    return float(value)


def cpu_series(data: dict[str, Any]) -> tuple[list[str], dict[str, list[float]], dict[str, list[float]]]:
    """Workload labels, speed ratios per peer and peak RSS per peer (NaN where not measured)."""
    workloads = data.get("workloads")
    if not isinstance(workloads, list) or not workloads:
        raise DataError(f"{CPU_FILE}: 'workloads' must be a non-empty list")
    labels, ratios, rss = [], {p: [] for p in PEERS.values()}, {}
    for i, w in enumerate(workloads):
        where = f"{CPU_FILE}: workloads[{i}]"
        if not isinstance(w, dict) or not isinstance(w.get("label"), str) or not isinstance(w.get("ratios"), dict):
            raise DataError(f"{where}: needs 'label' and 'ratios'")
        labels.append(f"{w['label']}, {w.get('file', '?')}, threads={w.get('threads', '?')}")
        for peer in PEERS.values():
            value = w["ratios"].get(peer)
            ratios[peer].append(math.nan if value is None else _number(value, f"{where}.ratios[{peer!r}]"))
        for peer, value in (w.get("peak_rss_mb") or {}).items():
            rss.setdefault(peer, [math.nan] * len(workloads))[i] = _number(value, f"{where}.peak_rss_mb[{peer!r}]")
    return labels, ratios, rss


def fresh_process_peaks(data: dict[str, Any]) -> dict[str, float]:
    fresh = data.get("fresh_process_peak_rss_mb", {})
    if not isinstance(fresh, dict):
        raise DataError(f"{CPU_FILE}: 'fresh_process_peak_rss_mb' must map jobs to MB")
    return {job: _number(mb, f"{CPU_FILE}: fresh_process_peak_rss_mb[{job!r}]") for job, mb in fresh.items()}


def gpu_series(data: dict[str, Any]) -> tuple[list[int], dict[str, list[float]]]:
    decoders, series = data.get("decoders"), data.get("series")
    if not isinstance(decoders, list) or not decoders or not all(isinstance(n, int) and n > 0 for n in decoders):
        raise DataError(f"{GPU_FILE}: 'decoders' must be a list of positive ints")
    if not isinstance(series, dict) or not series:
        raise DataError(f"{GPU_FILE}: 'series' must map names to frames/s")
    out = {}
    for name, values in series.items():
        if not isinstance(values, list) or len(values) != len(decoders):
            raise DataError(f"{GPU_FILE}: series {name!r} needs one value per entry of 'decoders'")
        out[name] = [_number(v, f"{GPU_FILE}: series {name!r}") for v in values]
    return decoders, out


# --- figures ---------------------------------------------------------------------------------------

def figures(folder: Path = DATA) -> dict[str, Any]:
    """{file name: matplotlib Figure} of every figure, drawn from the data files in ``folder``
    (all of them checked first: DataError before anything is drawn)."""
    cpu, gpu = load(CPU_FILE, folder), load(GPU_FILE, folder)
    labels, ratios, rss = cpu_series(cpu)
    fresh = fresh_process_peaks(cpu)
    decoders, series = gpu_series(gpu)
    try:
        import matplotlib
    except ImportError:
        raise DataError("matplotlib is needed to draw the figures (docs/requirements.txt; "
                        "tools/build_docs.sh installs it)") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.hashsalt": "torchcodec-docs", "font.size": 9})
    out = {}

    fig = _grouped_bars(plt, labels, ratios, "peer's time / torchcodec-cython's time (above 1x: torchcodec-cython "
                        "is faster)", f"CPU decoding speed against each peer\n{where(cpu)}", log=True)
    fig.axes[0].axvline(1.0, color="black", linewidth=0.8)
    out["speed_ratios.svg"] = fig
    fig = _grouped_bars(plt, labels, rss, "peak resident memory of the process during a repeat (MB)",
                        f"Memory per workload\n{where(cpu)}")
    if fresh:
        fig.text(0.01, 0.01, "A fresh process that imports torchcodec-cython and does one job: " +
                 "; ".join(f"{job.removeprefix('peak RSS, ')} {mb:g} MB" for job, mb in fresh.items()), fontsize=7)
    out["peak_rss.svg"] = fig

    fig, ax = plt.subplots(figsize=(9, 5))
    for name, values in series.items():
        ax.plot(decoders, values, marker="o", linestyle="-" if "ours" in name else "--", label=name)
    ax.set_xticks(decoders)
    ax.set_xlabel("decoders, each on its own thread")
    ax.set_ylabel("frames/s, all decoders together")
    ax.set_title(f"NVDEC throughput, {gpu.get('clips', '')}\n{where(gpu)}")
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    out["gpu_throughput.svg"] = fig
    return out


def _grouped_bars(plt: Any, labels: list[str], series: dict[str, list[float]], xlabel: str, title: str,
                  log: bool = False) -> Any:
    """Horizontal bars, one group per label, one bar per series in it (a BarContainer per series)."""
    fig, ax = plt.subplots(figsize=(11, 0.55 * len(labels) + 2.2))
    height = 0.8 / max(len(series), 1)
    base = 1.0 if log else 0.0            # ratios: bars from 1x, to the right where ours is faster
    for k, (name, values) in enumerate(series.items()):
        ax.barh([i + (k - (len(series) - 1) / 2) * height for i in range(len(labels))],
                [v - base for v in values], height, left=base, label=name)
    ax.set_yticks(range(len(labels)), [textwrap.fill(label, 48) for label in labels], fontsize=8)
    ax.invert_yaxis()
    if log:
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(lambda x, _: f"{x:g}x")
        known = [v for values in series.values() for v in values if not math.isnan(v)]
        ax.set_xlim(min(0.5, min(known) / 1.2), max(known) * 1.2)
    ax.grid(axis="x", alpha=0.3)
    ax.set_xlabel(xlabel)
    fig.suptitle(title, fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
    fig.subplots_adjust(left=0.3, right=0.78, top=1 - 1.1 / fig.get_figheight(), bottom=0.9 / fig.get_figheight())
    return fig


def where(data: dict[str, Any]) -> str:
    """A figure title's second part: the machine and the date, wrapped."""
    return textwrap.fill(f"{data['machine']}, {data['date']}", 100)


def plot(out_dir: Path, folder: Path = DATA) -> list[Path]:
    drawn = figures(folder)                       # every figure first: bad data writes none
    import matplotlib.pyplot as plt
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fig in drawn.items():
        fig.savefig(out_dir / name, format="svg", metadata={"Date": None})
        plt.close(fig)
        written.append(out_dir / name)
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="action", required=True)
    p = commands.add_parser("plot", help="draw every figure as SVG into OUT_DIR")
    p.add_argument("out_dir", type=Path)
    p.add_argument("--data", type=Path, default=DATA, help="the data files' folder (default: docs/_data)")
    d = commands.add_parser("data", help=f"write docs/_data/{CPU_FILE} from a targets --json folder")
    d.add_argument("folder", type=Path)
    d.add_argument("--machine", required=True, help="what it ran on, in words (and how loaded)")
    d.add_argument("--date", required=True)
    d.add_argument("--command", default="python tools/bench.py targets --json OUT/")
    args = parser.parse_args(argv)
    try:
        if args.action == "data":
            data = make_cpu_data(args.folder, args.machine, args.date, args.command)
            (DATA / CPU_FILE).write_text(json.dumps(data, indent=1) + "\n")
            cpu_series(data)
            print(f"wrote {DATA / CPU_FILE} ({len(data['workloads'])} workloads)")
        else:
            for path in plot(args.out_dir, args.data):
                print(f"wrote {path}")
    except DataError as exc:
        print(f"docs_figures: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
