"""Clips from a folder of videos, decoded in torch DataLoader workers.

    python examples/torch_dataloader.py VIDEO_DIR [--clips 2] [--frames 8] [--size 112 112]
                                        [--batch-size 4] [--workers 2] [--seed 0]

Each item of the dataset is one video: ``--clips`` clips of ``--frames`` consecutive frames at
random places (``clips_at_random_indices``), resized while decoding (``Resize``) so that videos of
any size batch together. Items are uint8 tensors of shape (clips, frames, 3, H, W); a batch adds
the batch dimension. Decoders are opened in the worker that reads the video, and each item draws
from its own generator, so the clips depend on the seed and the index only, not on the worker.
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import torch
from torch.utils.data import DataLoader, Dataset

from torchcodec.decoders import VideoDecoder
from torchcodec.samplers import clips_at_random_indices
from torchcodec.transforms import Resize

VIDEO_SUFFIXES = {".mp4", ".mkv", ".webm", ".mov", ".avi", ".ts"}


class VideoClips(Dataset):
    """Random clips of every video in a folder."""

    def __init__(self, folder: pathlib.Path, num_clips: int, num_frames: int, size: tuple[int, int], seed: int):
        self.paths = sorted(p for p in folder.iterdir() if p.suffix.lower() in VIDEO_SUFFIXES)
        if not self.paths:
            raise ValueError(f"no video in {folder} (looked for {', '.join(sorted(VIDEO_SUFFIXES))})")
        self.num_clips, self.num_frames, self.size, self.seed = num_clips, num_frames, size, seed

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, index: int) -> torch.Tensor:
        decoder = VideoDecoder(self.paths[index], transforms=[Resize(self.size)])
        generator = torch.Generator().manual_seed(self.seed * 1_000_003 + index)
        clips = clips_at_random_indices(decoder, num_clips=self.num_clips, num_frames_per_clip=self.num_frames,
                                        generator=generator)
        return torch.as_tensor(clips.data)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", type=pathlib.Path)
    parser.add_argument("--clips", type=int, default=2)
    parser.add_argument("--frames", type=int, default=8)
    parser.add_argument("--size", type=int, nargs=2, default=(112, 112), metavar=("H", "W"))
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    dataset = VideoClips(args.folder, args.clips, args.frames, tuple(args.size), args.seed)
    loader = DataLoader(dataset, batch_size=args.batch_size, num_workers=args.workers)
    seen = 0
    for batch in loader:
        print(f"batch {tuple(batch.shape)} {batch.dtype}")
        seen += len(batch)
    print(f"{seen} videos, {seen * args.clips} clips")
    return 0


if __name__ == "__main__":
    sys.exit(main())
