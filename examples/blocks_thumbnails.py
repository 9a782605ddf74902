#!/usr/bin/env python3
"""Thumbnails of a video's key frames, never decoding any other frame.

    python examples/blocks_thumbnails.py video.mp4 -o thumbs/

A key frame decodes on its own. So the demuxer's packets are looked at, not decoded: each key
packet goes to the decoder alone (decode, then drain: its frame comes out), and the decoder is
reset for the next one; every other packet is skipped. Much less work than decoding the video to
pick frames from it (one frame of each GOP instead of all of them). Writes ``key_NNNN.png`` (the
frame's pts in the names' order) and prints one line per thumbnail.
"""
from __future__ import annotations

import argparse
import pathlib
from typing import Any, Iterator

from torchcodec.decoders import ColorConverter, Demuxer
from torchcodec.encoders import PngEncoder


def key_frames(path: str) -> Iterator[Any]:
    """The RGB Frame of every key frame of the best video stream of ``path``, in file order."""
    demuxer = Demuxer(path)
    decoder = demuxer.streams[0].make_decoder()
    converter = ColorConverter()
    for packet in demuxer:
        if not packet.is_key_frame:
            continue                                    # never sent to the decoder
        frames = decoder.decode(packet) + decoder.drain()
        decoder.reset()
        for raw_frame in frames:
            yield converter.convert(raw_frame)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("video")
    parser.add_argument("-o", "--output", type=pathlib.Path, required=True, help="the folder for the PNG files")
    args = parser.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)
    for number, frame in enumerate(key_frames(args.video)):
        target = args.output / f"key_{number:04d}.png"
        PngEncoder(frame.data).to_file(str(target))
        print(f"{target.name}: pts {frame.pts_seconds:.3f} s")


if __name__ == "__main__":
    main()
