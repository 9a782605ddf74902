#!/usr/bin/env python3
"""How much decoding a random-access request needs at least, against what this package spends on it.

    python tools/bench.py decode-work                              # bench.py's random10 request
    python tools/bench.py decode-work --file clip.mp4 --seed 3 --count 10 --repeats 9

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from bench.library_peers import pyav_scan_packets
from bench.measure import time_once
from bench.report import default_media_file, random_indices
from bench.workloads import NUM_SAMPLED_FRAMES


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
            times[name].append(time_once(task)[0])
    return {name: min(values) for name, values in times.items()}


@dataclass
class DecodeWork:
    """One measurement: the request, frames libavcodec output each way, best seconds of each task."""

    path: str
    indices: list[int]
    key_frames: int
    frames_out: dict[str, int]      # "every", "referenced"
    best_s: dict[str, float]        # "every", "referenced", "ours"
    repeats: int

    @property
    def every_over_referenced(self) -> float:
        return self.best_s["every"] / self.best_s["referenced"]

    @property
    def ours_over_referenced(self) -> float:
        return self.best_s["ours"] / self.best_s["referenced"]


def measure(path: Path, seed: int, count: int, repeats: int) -> DecodeWork:
    """The three tasks on bench.py's random draw of ``count`` frames (``seed``), best of ``repeats``."""
    import av
    from torchcodec.decoders import VideoDecoder

    name = str(path.resolve())
    with av.open(name) as container:
        all_pts, key_pts = pyav_scan_packets(container, container.streams.video[0])
    indices = random_indices(len(all_pts), count, seed)
    groups = group_by_key_frame(indices, all_pts, key_pts)
    frames_out = {way: decode_targets(name, groups, only) for way, only in (("every", False), ("referenced", True))}
    best = best_of({
        "every": lambda: decode_targets(name, groups, False),
        "referenced": lambda: decode_targets(name, groups, True),
        "ours": lambda: VideoDecoder(name, num_ffmpeg_threads=1).get_frames_at(indices),
    }, repeats)
    return DecodeWork(name, indices, len(groups), frames_out, best, repeats)


def format_work(work: DecodeWork) -> str:
    import av

    lines = [f"{work.path}: {len(work.indices)} frames at {sorted(work.indices)}, {work.key_frames} key frames to "
             f"start from; PyAV {av.__version__} (its own FFmpeg), best of {work.repeats}"]
    rows = [("every frame up to each target (libavcodec only)", "every", f"{work.frames_out['every']} frames"),
            ("referenced frames and targets only (libavcodec only)", "referenced",
             f"{work.frames_out['referenced']} frames"),
            ("this package: open + get_frames_at (RGB included)", "ours", "")]
    lines += [f"  {title:<54} {work.best_s[key] * 1e3:8.1f} ms  {note}" for title, key, note in rows]
    lines.append(f"  decode work, every frame / referenced only: {work.every_over_referenced:.2f}x; "
                 f"this package / referenced only: {work.ours_over_referenced:.2f}x")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--file", type=Path, help="video (default: bench.py's 1080p H.264 clip)")
    parser.add_argument("--seed", type=int, default=0, help="bench.py's --seed (default 0)")
    parser.add_argument("--count", type=int, default=NUM_SAMPLED_FRAMES, help="frames in the request")
    parser.add_argument("--repeats", type=int, default=9)
    args = parser.parse_args(argv)
    print(format_work(measure(args.file or default_media_file(), args.seed, args.count, args.repeats)))
    return 0
