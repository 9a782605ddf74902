"""Decode a folder of videos with dask: a bag of clips per video, and a dask array of frames.

    python examples/dask_job.py VIDEO_DIR [--clips 2] [--frames 4] [--chunk 16] [--workers 2]

1. A **dask bag** with one element per video path, mapped on ``--workers`` worker processes
   (dask's multiprocessing scheduler): each worker opens its videos itself and summarises
   ``--clips`` random clips of ``--frames`` frames (``clips_at_random_indices`` with a seed per
   video, so the result depends on the seed only): their start times and mean pixel values.
2. A **dask array** of every frame of the first video, (frames, H, W, 3) uint8, with one chunk per
   ``--chunk`` frames: each chunk is one ``get_frames_in_range`` call, run when dask computes it,
   on threads (the decoder releases the GIL). The job reduces it to the mean brightness of each frame.

Frames are numpy arrays (the numpy bridge); neither torch nor a GPU is needed.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import zlib

import dask
import dask.array as da
import dask.bag as db
import numpy as np

import torchcodec
from torchcodec.decoders import VideoDecoder
from torchcodec.samplers import clips_at_random_indices

VIDEO_SUFFIXES = {".mp4", ".mkv", ".webm", ".mov", ".avi", ".ts"}


def summarise_clips(path: str, num_clips: int, num_frames: int, seed: int) -> dict:
    """Random clips of one video: where they start and their mean pixel value (runs on a worker)."""
    with torchcodec.bridge("numpy"):
        decoder = VideoDecoder(path)
        generator = np.random.default_rng([seed, zlib.crc32(pathlib.Path(path).name.encode())])
        clips = clips_at_random_indices(decoder, num_clips=num_clips, num_frames_per_clip=num_frames,
                                        generator=generator)
    return {"path": path, "starts": clips.pts_seconds[:, 0].tolist(),
            "means": clips.data.reshape(num_clips, -1).mean(axis=1).tolist()}


def _frames_chunk(path: str, start: int, stop: int) -> np.ndarray:
    with torchcodec.bridge("numpy"):
        return VideoDecoder(path, dimension_order="NHWC").get_frames_in_range(start, stop).data


def frames_array(path: str, chunk: int) -> da.Array:
    """Every frame of ``path`` as a lazy dask array, one chunk (one decode request) per ``chunk`` frames."""
    with torchcodec.bridge("numpy"):
        decoder = VideoDecoder(path, dimension_order="NHWC")
        n, height, width = len(decoder), decoder.metadata.height, decoder.metadata.width
    blocks = [da.from_delayed(dask.delayed(_frames_chunk)(path, start, min(start + chunk, n)),
                              shape=(min(start + chunk, n) - start, height, width, 3), dtype=np.uint8)
              for start in range(0, n, chunk)]
    return da.concatenate(blocks, axis=0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=pathlib.Path)
    parser.add_argument("--clips", type=int, default=2)
    parser.add_argument("--frames", type=int, default=4)
    parser.add_argument("--chunk", type=int, default=16)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    paths = sorted(str(p) for p in args.folder.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES)
    if not paths:
        raise SystemExit(f"no video in {args.folder}")
    bag = db.from_sequence(paths, npartitions=min(len(paths), args.workers))
    summaries = bag.map(summarise_clips, args.clips, args.frames, args.seed).compute(
        scheduler="processes", num_workers=args.workers)
    for summary in summaries:
        print(f"{pathlib.Path(summary['path']).name}: clips at "
              f"{', '.join(f'{t:.3f}' for t in summary['starts'])} s, "
              f"mean {', '.join(f'{m:.2f}' for m in summary['means'])}")

    frames = frames_array(paths[0], args.chunk)
    brightness = frames.mean(axis=(1, 2, 3)).compute(scheduler="threads", num_workers=args.workers)
    print(f"{pathlib.Path(paths[0]).name}: array {frames.shape} {frames.dtype} in {frames.numblocks[0]} chunks, "
          f"brightness {brightness.min():.2f} to {brightness.max():.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
