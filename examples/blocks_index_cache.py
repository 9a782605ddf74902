#!/usr/bin/env python3
"""Scan a video once, keep its frame index, and use it for exact random access later.

    python examples/blocks_index_cache.py video.mp4 --index video.index --at 1.5 0.2 3.0

The scan (``VideoStream.scan()``) reads every packet of the file to learn the exact timestamp and
key flag of every frame: the expensive part of exact seeking. A FrameIndex pickles, so the first
run saves it beside the video and later runs load it instead of scanning again. With it, each
requested time is reached exactly: find the frame shown then (``index_at``), seek to the key
frame before it (``key_frame_seconds_for``), decode forward to it. Prints, per time, the frame's
index and pts; ``--output DIR`` also writes the frames as PNG.
"""
from __future__ import annotations

import argparse
import os
import pathlib
import pickle
from typing import Any, Optional

from torchcodec.decoders import ColorConverter, Demuxer, FrameIndex
from torchcodec.encoders import PngEncoder


def load_or_scan(demuxer: Demuxer, index_path: pathlib.Path, video: str) -> tuple[FrameIndex, bool]:
    """The stream's FrameIndex from ``index_path`` when it was saved for this very file (same size
    and modification time), else from a scan, saved there. Returns (index, whether it was loaded)."""
    identity = (os.path.getsize(video), os.stat(video).st_mtime_ns)
    if index_path.exists():
        saved_identity, index = pickle.loads(index_path.read_bytes())
        if saved_identity == identity:
            return index, True
    index = demuxer.streams[0].scan()
    index_path.write_bytes(pickle.dumps((identity, index)))
    return index, False


def frame_at(demuxer: Demuxer, decoder: Any, index: FrameIndex, seconds: float) -> tuple[int, Any]:
    """(frame index, RawFrame) of the frame shown at ``seconds``: an exact seek built from the index."""
    i = index.index_at(seconds)
    target = float(index.pts_seconds[i])
    demuxer.seek(index.key_frame_seconds_for(target))
    decoder.reset()
    for packet in demuxer:
        found = _first_at(decoder.decode(packet), target)
        if found is not None:
            return i, found
    return i, _first_at(decoder.drain(), target)


def _first_at(frames: list[Any], target: float) -> Optional[Any]:
    return next((frame for frame in frames if frame.pts_seconds == target), None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("video")
    parser.add_argument("--index", type=pathlib.Path, required=True, help="where the frame index is kept")
    parser.add_argument("--at", type=float, nargs="+", required=True, help="times in seconds")
    parser.add_argument("-o", "--output", type=pathlib.Path, help="also write the frames here, as PNG")
    args = parser.parse_args()
    demuxer = Demuxer(args.video)
    index, loaded = load_or_scan(demuxer, args.index, args.video)
    print(f"index of {len(index)} frames {'loaded from' if loaded else 'scanned, saved to'} {args.index}")
    decoder, converter = demuxer.streams[0].make_decoder(), ColorConverter()
    for seconds in args.at:
        i, raw_frame = frame_at(demuxer, decoder, index, seconds)
        print(f"{seconds:g} s: frame {i}, pts {raw_frame.pts_seconds:.6f} s")
        if args.output is not None:
            args.output.mkdir(parents=True, exist_ok=True)
            PngEncoder(converter.convert(raw_frame).data).to_file(str(args.output / f"frame_{i:05d}.png"))


if __name__ == "__main__":
    main()
