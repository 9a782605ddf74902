"""Clips of a folder of videos, decoded by a Ray Data ``map_batches`` pipeline on a local cluster.

    python examples/ray_data_pipeline.py VIDEO_DIR [--clips 2] [--frames 4] [--size 48 60]
                                         [--cpus 2] [--batch-size 2]

The dataset starts as one row per video path (``ray.data.from_items``). ``map_batches`` runs
:class:`DecodeClips` on Ray workers (``--cpus`` of them, on a cluster started here by
``ray.init``): each worker opens the videos of its batch itself, from their paths, and cuts
``--clips`` evenly spaced clips of ``--frames`` consecutive frames (``clips_at_regular_indices``),
resized while decoding (``Resize``) so that every row has the same shape. The result is one row
per video with its clips (uint8, (clips, frames, H, W, 3)) and their timestamps.

Frames are numpy arrays (the numpy bridge: Ray Data's tensor columns are numpy's), so the
pipeline needs neither torch nor a GPU. Ray's workers put their working directory on sys.path:
run it from a directory other than the root of a source checkout, whose ``torchcodec/`` folder
(with no compiled modules) would shadow the installed package there.
"""
from __future__ import annotations

import argparse
import logging
import pathlib
import sys

import numpy as np
import ray

import torchcodec
from torchcodec.decoders import VideoDecoder
from torchcodec.samplers import clips_at_regular_indices
from torchcodec.transforms import Resize

VIDEO_SUFFIXES = {".mp4", ".mkv", ".webm", ".mov", ".avi", ".ts"}


class DecodeClips:
    """A ``map_batches`` callable: a batch of paths in, their clips and timestamps out."""

    def __init__(self, num_clips: int, num_frames: int, size: tuple[int, int]):
        self.num_clips, self.num_frames, self.size = num_clips, num_frames, size

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        clips, pts = [], []
        with torchcodec.bridge("numpy"):
            for path in batch["path"]:
                decoder = VideoDecoder(str(path), dimension_order="NHWC", transforms=[Resize(self.size)])
                sampled = clips_at_regular_indices(decoder, num_clips=self.num_clips,
                                                   num_frames_per_clip=self.num_frames)
                clips.append(sampled.data)
                pts.append(sampled.pts_seconds)
        return {"path": batch["path"], "clips": np.stack(clips), "pts_seconds": np.stack(pts)}


def decode_folder(folder: pathlib.Path, num_clips: int, num_frames: int, size: tuple[int, int],
                  batch_size: int = 2, workers: int = 2) -> list[dict]:
    """Run the pipeline (on the Ray cluster already started) and return its rows, sorted by path."""
    paths = sorted(str(p) for p in folder.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES)
    if not paths:
        raise ValueError(f"no video in {folder} (looked for {', '.join(sorted(VIDEO_SUFFIXES))})")
    dataset = ray.data.from_items([{"path": p} for p in paths])
    clips = dataset.map_batches(DecodeClips, fn_constructor_args=(num_clips, num_frames, size),
                                batch_size=batch_size, batch_format="numpy", concurrency=workers, num_cpus=1)
    return sorted(clips.take_all(), key=lambda row: row["path"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=pathlib.Path)
    parser.add_argument("--clips", type=int, default=2)
    parser.add_argument("--frames", type=int, default=4)
    parser.add_argument("--size", type=int, nargs=2, default=(48, 60), metavar=("H", "W"))
    parser.add_argument("--cpus", type=int, default=2, help="CPUs of the local Ray cluster (and workers)")
    parser.add_argument("--batch-size", type=int, default=2)
    args = parser.parse_args(argv)

    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ray.data.DataContext.get_current().enable_progress_bars = False
    logging.getLogger("ray.data").setLevel(logging.WARNING)         # no progress lines among the results
    try:
        rows = decode_folder(args.folder, args.clips, args.frames, tuple(args.size), args.batch_size, args.cpus)
    finally:
        ray.shutdown()
    for row in rows:
        starts = ", ".join(f"{t:.3f}" for t in row["pts_seconds"][:, 0])
        print(f"{pathlib.Path(row['path']).name}: clips {tuple(row['clips'].shape)} {row['clips'].dtype}, "
              f"starting at {starts} s")
    print(f"{len(rows)} videos, {len(rows) * args.clips} clips")
    return 0


if __name__ == "__main__":
    sys.exit(main())
