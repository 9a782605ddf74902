"""Benchmark this package's video decoding against its peers, on the same file, in one run.

Peers: this package ("ours": ``import torchcodec`` in this Python), TorchCodec 0.17, PyAV, OpenCV,
decord and the ffmpeg CLI. TorchCodec has our import name, so it lives in its own venv (created on
first use, minutes: torch is large) and is measured there by ``tools/bench/torchcodec_worker.py``,
which this script drives over a pipe. Every peer is optional: one that cannot be imported shows
as "n/a (reason)". PyAV, OpenCV and decord bundle their own FFmpeg builds; the report says which.

Run from the repository root, with this package installed in the current Python::

    python tools/bench.py                        # default file, all workloads, threads 1 and 0
    python tools/bench.py --quick                # CI smoke run: no warm-up, 1 repeat
    python tools/bench.py --file clip.mkv --workloads uniform10 random10 --threads 1
    python tools/bench.py --json out/bench.json  # also save every measurement
    python tools/bench.py --no-torchcodec        # skip TorchCodec (and its venv)
    python tools/bench.py --seek-modes exact     # skip seek_mode="approximate"
    python tools/bench.py encode [--only video]  # the encoding workloads instead (tools/bench/encode.py)
    python tools/bench.py images [--only jpeg]   # the image workloads (tools/bench/images.py)
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

The bench package's modules import only the standard library at the top, so that the TorchCodec worker (whose
venv has torch but maybe not numpy) can import it and time TorchCodec with the same code.
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.library_peers import DecordPeer, FFmpegCliPeer, OpenCVPeer, PyAVPeer
from bench.measure import FrameChecker, Watchdog, STARTED, run_all
from bench.peers import Peer, TorchCodecApiPeer, load_our_package
from bench.report import (baseline_name, default_audio_file, default_media_file, format_report, machine_info,
                          plan_job)
from bench.torchcodec_venv import WorkerConnection, start_torchcodec
from bench.workloads import (DEFAULT_AUDIO_FILE_NAME, DEFAULT_FILE_NAME, DEFAULT_TC_VENV, Measurement,
                             RunSettings, VideoJob, WORKLOADS)


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


# ``bench.py NAME ...`` runs the main of the module tools/bench/NAME.py with the remaining arguments.
SUBCOMMANDS = {
    "encode": "bench.encode",                # 1080p H.264 and 60 s AAC/FLAC, vs TorchCodec, PyAV, the CLI
    "images": "bench.images",                # 1080p JPEG, PNG and WebP, single and batched
    "nvjpeg": "bench.nvjpeg",                # nvJPEG batch decode vs libjpeg-turbo's threads (a GPU machine)
    "gpu-transforms": "bench.gpu_transforms",  # 1080p to 224x224 on the GPU: fused vs resizing full RGB frames
    "targets": "bench.targets",              # the speed and memory targets, each with its verdict, in one run
    "decode-work": "bench.decode_work",      # the frames decoded for random10: ours, every frame, TorchCodec
    "threads": "bench.threads",              # decoders in parallel threads, and the output libraries
    "resize-routes": "bench.resize_routes",  # a decode-time Resize through each of its routes
}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] and argv[0] in SUBCOMMANDS:
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
                            time.perf_counter() - STARTED, interrupted))
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
