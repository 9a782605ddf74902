"""Time a decode-time Resize through each of its routes, in one process, interleaved.

The same workload (every frame of a file, batches of 32, ``Resize(size)``) three ways, which give
the same bytes (tests/test_rgb_planes.py):

- ``swscale``: the frame to RGB, then swscale's RGB-to-RGB resize (TorchCodec's two passes);
- ``planes``: the frame to RGB, then the 14-bit planes of rgb_planes.h handed to swscale;
- ``yuv``: the planes straight from the frame's 8-bit 4:2:0 YUV (no RGB image), the default.

A route is turned off by making its comparison with swscale answer "differs" (the module's verdict
dictionaries), as a CPU or FFmpeg release where it differed would. Prints the best and median
wall time of each route and the ratios to the swscale route.

    python tools/bench.py resize-routes --file media-cache/bench_1080p_h264.mp4 --size 256 256
"""
from __future__ import annotations

import argparse
import statistics
import time

from torchcodec._core import _scaler
from torchcodec.decoders import VideoDecoder
from torchcodec.transforms import Resize

BATCH = 32


class _Differs(dict):
    """A verdict dictionary in which every comparison with swscale differed."""

    def get(self, key, default=None):
        return 0


def _route_verdicts(route: str) -> tuple[dict, dict]:
    """(_planes_verdicts, _fused_verdicts) for ``route``."""
    if route == "swscale":
        return _Differs(), _Differs()
    if route == "planes":
        return {}, _Differs()
    return {}, {}


def _decode_all(path: str, size: tuple[int, int], threads: int) -> None:
    decoder = VideoDecoder(path, num_ffmpeg_threads=threads, transforms=[Resize(size)])
    for start in range(0, len(decoder), BATCH):
        decoder.get_frames_in_range(start, min(len(decoder), start + BATCH))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", required=True)
    parser.add_argument("--size", type=int, nargs=2, default=(256, 256), metavar=("HEIGHT", "WIDTH"))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    routes = ["swscale", "planes", "yuv"]
    times: dict[str, list[float]] = {route: [] for route in routes}
    planes_verdicts, fused_verdicts = _scaler._planes_verdicts, _scaler._fused_verdicts
    try:
        for _ in range(args.repeats + 1):                  # the first round warms up
            for route in routes:
                _scaler._planes_verdicts, _scaler._fused_verdicts = _route_verdicts(route)
                start = time.perf_counter()
                _decode_all(args.file, tuple(args.size), args.threads)
                times[route].append((time.perf_counter() - start) * 1000)
    finally:
        _scaler._planes_verdicts, _scaler._fused_verdicts = planes_verdicts, fused_verdicts
    base = min(times["swscale"][1:])
    print(f"{args.file}, Resize({tuple(args.size)}), threads={args.threads}, best and median of {args.repeats}")
    for route in routes:
        runs = times[route][1:]
        print(f"  {route:8s} best {min(runs):8.1f} ms  median {statistics.median(runs):8.1f} ms  "
              f"swscale/this {base / min(runs):.2f}")
    return 0
