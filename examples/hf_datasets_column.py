"""A Hugging Face ``datasets`` table with Video and Audio columns, decoded by this package.

    python examples/hf_datasets_column.py VIDEO_DIR AUDIO_DIR [--sampling-rate 16000] [--frames 3]

``datasets`` decodes its ``Video`` feature with ``torchcodec.decoders.VideoDecoder`` and its
``Audio`` feature with ``torchcodec.decoders.AudioDecoder`` (a subclass that adds
``row["audio"]["array"]`` and ``["sampling_rate"]``), importing them by name: with this package
installed as ``torchcodec``, a dataset's media columns are decoded by it, with no change to
``datasets`` or to the code that reads the rows. The tables are built from local files
(``Dataset.from_dict`` + ``cast_column``), so nothing is downloaded.

For each video row the example reads ``--frames`` evenly spaced frames from the decoder that
``datasets`` hands out, and ``Dataset.map`` adds a column with every video's frame count; for
each audio row it reads the samples, resampled by the ``Audio`` feature to ``--sampling-rate``.
``datasets`` calls ``.cpu().numpy()`` on the samples, so the torch bridge is used (torch is a
dependency of ``datasets``' audio decoding, as with TorchCodec).
"""
from __future__ import annotations

import argparse
import pathlib
import sys

import numpy as np
from datasets import Audio, Dataset, Video

import torchcodec

VIDEO_SUFFIXES = {".mp4", ".mkv", ".webm", ".mov", ".avi", ".ts"}
AUDIO_SUFFIXES = {".wav", ".mp3", ".flac", ".m4a", ".ogg", ".opus", ".aac"}


def files(folder: pathlib.Path, suffixes: set[str]) -> list[str]:
    found = sorted(str(p) for p in folder.iterdir() if p.suffix.lower() in suffixes)
    if not found:
        raise SystemExit(f"no file in {folder} (looked for {', '.join(sorted(suffixes))})")
    return found


def video_table(folder: pathlib.Path) -> Dataset:
    """A dataset with a ``video`` column (decoded as torchcodec VideoDecoders) and a ``name`` column."""
    paths = files(folder, VIDEO_SUFFIXES)
    table = Dataset.from_dict({"video": paths, "name": [pathlib.Path(p).name for p in paths]})
    return table.cast_column("video", Video())


def audio_table(folder: pathlib.Path, sampling_rate: int) -> Dataset:
    """A dataset with an ``audio`` column, resampled to ``sampling_rate`` when decoded."""
    paths = files(folder, AUDIO_SUFFIXES)
    table = Dataset.from_dict({"audio": paths, "name": [pathlib.Path(p).name for p in paths]})
    return table.cast_column("audio", Audio(sampling_rate=sampling_rate))


def sampled_frames(decoder, count: int):
    """``count`` evenly spaced frames of a decoder: a FrameBatch."""
    indices = np.linspace(0, len(decoder) - 1, count).round().astype(int).tolist()
    return decoder.get_frames_at(indices)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("video_folder", type=pathlib.Path)
    parser.add_argument("audio_folder", type=pathlib.Path)
    parser.add_argument("--sampling-rate", type=int, default=16_000)
    parser.add_argument("--frames", type=int, default=3)
    args = parser.parse_args(argv)
    torchcodec.set_bridge("torch")

    videos = video_table(args.video_folder)
    videos = videos.map(lambda row: {"num_frames": len(row["video"])})     # decoded inside map too
    for row in videos:
        decoder = row["video"]
        batch = sampled_frames(decoder, args.frames)
        print(f"{row['name']}: {type(decoder).__module__}.{type(decoder).__name__}, {row['num_frames']} frames, "
              f"{decoder.metadata.codec} {decoder.metadata.width}x{decoder.metadata.height}, "
              f"frames {tuple(batch.data.shape)} at {', '.join(f'{t:.3f}' for t in batch.pts_seconds.tolist())} s")

    sounds = audio_table(args.audio_folder, args.sampling_rate)
    for row in sounds:
        audio = row["audio"]
        samples = audio.get_all_samples()
        print(f"{row['name']}: {tuple(samples.data.shape)} at {audio['sampling_rate']} Hz, "
              f"array {audio['array'].shape} {audio['array'].dtype}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
