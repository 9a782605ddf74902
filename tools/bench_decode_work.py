#!/usr/bin/env python3
"""How much decoding a random-access request needs at least, against what this package spends on it.

    python tools/bench_decode_work.py                              # bench.py's random10 request
    python tools/bench_decode_work.py --file clip.mp4 --seed 3 --count 10 --repeats 9

For the frames that ``tools/bench.py``'s random10 workload asks for (the same seed and draw), with
libavcodec alone (PyAV, one thread, no conversion to RGB, the same seek to each target's key frame):

- "every frame": decode every frame from the key frame up to each target, as TorchCodec and PyAV do;
- "referenced only": leave out (AVDISCARD_NONREF) the frames before a target that no other frame
  references, the least an exact decoder can decode: the targets, and what they reference.

and, interleaved with those, this package's ``VideoDecoder(...).get_frames_at(indices)`` (open,
index, decode and RGB conversion of the targets included). Their ratio is the limit of a speed-up
from decoding less: a library that decodes every frame cannot be faster than "every frame", and no
exact one faster than "referenced only". Best of ``--repeats``, repeats taken round-robin.
"""
from __future__ import annotations

import argparse
import bisect
import random
import sys
import time
from pathlib import Path
from typing import Any, Callable

import bench


def group_by_key_frame(indices: list[int], all_pts: list[int], key_pts: list[int]) -> dict[int, list[int]]:
    """{key frame pts: sorted pts of the targets it starts the decoding of}."""
    groups: dict[int, list[int]] = {}
    for index in sorted(set(indices)):
        pts = all_pts[index]
        groups.setdefault(key_pts[bisect.bisect_right(key_pts, pts) - 1], []).append(pts)
    return groups


def decode_targets(path: str, groups: dict[int, list[int]], referenced_only: bool) -> int:
    """Decode until every target came out; return how many frames libavcodec output."""
    import av

    with av.open(path) as container:
        stream = container.streams.video[0]
        codec = stream.codec_context
        codec.thread_count = 1
        out = 0
        for key_pts, wanted in groups.items():
            container.seek(key_pts, stream=stream, backward=True, any_frame=False)
            remaining = list(wanted)
            for packet in container.demux(stream):
                before_target = packet.pts is not None and packet.pts < remaining[0]
                codec.skip_frame = "NONREF" if referenced_only and before_target else "DEFAULT"
                for frame in codec.decode(packet):
                    out += 1
                    while remaining and frame.pts >= remaining[0]:
                        remaining.pop(0)
                if not remaining:
                    break
            if remaining:
                raise RuntimeError(f"targets at pts {remaining} never came out")
        return out


def best_of(tasks: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    for task in tasks.values():     # warm-up (and our index cache filled, as bench.py's rows have it)
        task()
    times: dict[str, list[float]] = {name: [] for name in tasks}
    for _ in range(repeats):
        for name, task in tasks.items():
            start = time.perf_counter()
            task()
            times[name].append(time.perf_counter() - start)
    return {name: min(values) for name, values in times.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", type=Path, help="video (default: bench.py's 1080p H.264 clip)")
    parser.add_argument("--seed", type=int, default=0, help="bench.py's --seed (default 0)")
    parser.add_argument("--count", type=int, default=bench.NUM_SAMPLED_FRAMES, help="frames in the request")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args(argv)
    import av
    from torchcodec.decoders import VideoDecoder

    path = str((args.file or bench.default_media_file()).resolve())
    with av.open(path) as container:
        all_pts, key_pts = bench.pyav_scan_packets(container, container.streams.video[0])
    indices = random.Random(args.seed).sample(range(len(all_pts)), min(args.count, len(all_pts)))
    groups = group_by_key_frame(indices, all_pts, key_pts)
    frames_out = {name: decode_targets(path, groups, only) for name, only in (("every", False), ("referenced", True))}
    best = best_of({
        "every": lambda: decode_targets(path, groups, False),
        "referenced": lambda: decode_targets(path, groups, True),
        "ours": lambda: VideoDecoder(path, num_ffmpeg_threads=1).get_frames_at(indices),
    }, args.repeats)
    print(f"{path}: {len(indices)} frames at {sorted(indices)}, {len(groups)} key frames to start from; "
          f"PyAV {av.__version__} (its own FFmpeg), best of {args.repeats}")
    rows = [("every frame up to each target (libavcodec only)", best["every"], f"{frames_out['every']} frames"),
            ("referenced frames and targets only (libavcodec only)", best["referenced"],
             f"{frames_out['referenced']} frames"),
            ("this package: open + get_frames_at (RGB included)", best["ours"], "")]
    for title, seconds, note in rows:
        print(f"  {title:<54} {seconds * 1e3:8.1f} ms  {note}")
    print(f"  decode work, every frame / referenced only: {best['every'] / best['referenced']:.2f}x; "
          f"this package / referenced only: {best['ours'] / best['referenced']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
