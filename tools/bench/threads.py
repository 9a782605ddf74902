"""Throughput of decoders in parallel threads, and the cost of each output library.

    python tools/bench.py threads [--file F] [--frames N]

1. Thread scaling: N frames decoded by 1 decoder in 1 thread, then by 2 decoders in 2 threads
   (each with num_ffmpeg_threads=1), reported as frames/s and the speed-up. The engine releases
   the GIL for all decoding work, so on 2 cores the speed-up should approach 2.
2. Output libraries: the same frames decoded with the numpy bridge and with the torch bridge
   (when torch is installed): allocation by the library is the only difference, so the times
   should agree within noise.
"""
from __future__ import annotations

import argparse
import importlib.util
import pathlib
import sys
import threading
import time

import torchcodec
from torchcodec.decoders import VideoDecoder

TOOLS = pathlib.Path(__file__).resolve().parent.parent


def default_file() -> pathlib.Path:
    sys.path.insert(0, str(TOOLS))     # tools/ (scripts run with python -P do not have it)
    import make_media
    return make_media.ensure_media(["bench_1080p_h264.mp4"])["bench_1080p_h264.mp4"]


def decode(path: pathlib.Path, frames: int) -> None:
    decoder = VideoDecoder(path, num_ffmpeg_threads=1)
    for i in range(frames):
        decoder.get_frame_at(i)


def in_threads(path: pathlib.Path, frames: int, threads: int) -> float:
    workers = [threading.Thread(target=decode, args=(path, frames)) for _ in range(threads)]
    start = time.perf_counter()
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return time.perf_counter() - start


def best(function, repeats: int = 3) -> float:
    return min(function() for _ in range(repeats))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", type=pathlib.Path)
    parser.add_argument("--frames", type=int, default=120)
    args = parser.parse_args(argv)
    path = args.file or default_file()
    print(f"file: {path}; {args.frames} frames per decoder; best of 3")
    with torchcodec.bridge("numpy"):
        one = best(lambda: in_threads(path, args.frames, 1))
        two = best(lambda: in_threads(path, args.frames, 2))
    print(f"1 decoder, 1 thread : {args.frames / one:7.1f} frames/s")
    print(f"2 decoders, 2 threads: {2 * args.frames / two:7.1f} frames/s  (speed-up {2 * one / two:.2f}x)")
    timings = {}
    for name in ("numpy", "torch"):
        if importlib.util.find_spec(name) is None:
            print(f"{name} bridge: n/a ({name} is not installed)")
            continue
        with torchcodec.bridge(name):
            timings[name] = best(lambda: _timed(lambda: decode(path, args.frames)))
        print(f"{name} bridge: {timings[name] * 1000:7.1f} ms for {args.frames} frames")
    if len(timings) == 2:
        print(f"torch / numpy time: {timings['torch'] / timings['numpy']:.3f}")
    return 0


def _timed(function) -> float:
    start = time.perf_counter()
    function()
    return time.perf_counter() - start

