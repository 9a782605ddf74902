#!/usr/bin/env python3
"""Decode a video with the building blocks on three threads: demux | decode | convert.

    python examples/blocks_pipeline.py video.mp4 [--queue 8]

Each stage runs on its own thread and hands its output to the next through a bounded queue. The
stages overlap because each call (reading a packet, decoding it, converting a frame) releases the
GIL while it works; the queues bound the memory (at most ``--queue`` packets and frames in flight).
Prints the number of frames, the first and last timestamps and the time taken.
"""
from __future__ import annotations

import argparse
import queue
import threading
import time
from typing import Any

from torchcodec.decoders import ColorConverter, Demuxer

_END = object()


def decode_pipelined(path: str, depth: int = 8) -> list[Any]:
    """Every frame of the best video stream of ``path`` as RGB Frames, in presentation order."""
    demuxer = Demuxer(path)
    decoder = demuxer.streams[0].make_decoder()
    converter = ColorConverter()
    packets: queue.Queue = queue.Queue(depth)
    raw_frames: queue.Queue = queue.Queue(depth)
    frames: list[Any] = []
    errors: list[BaseException] = []

    def stage(work: Any) -> threading.Thread:
        def run() -> None:
            try:
                work()
            except BaseException as error:      # reported by the caller; the other stages are unblocked
                errors.append(error)
                for q in (packets, raw_frames):
                    q.put(_END)
        return threading.Thread(target=run, name=work.__name__)

    def demux() -> None:
        for packet in demuxer:
            packets.put(packet)
        packets.put(_END)

    def decode() -> None:
        while (packet := packets.get()) is not _END:
            for raw_frame in decoder.decode(packet):
                raw_frames.put(raw_frame)
        for raw_frame in decoder.drain():
            raw_frames.put(raw_frame)
        raw_frames.put(_END)

    def convert() -> None:
        while (raw_frame := raw_frames.get()) is not _END:
            frames.append(converter.convert(raw_frame))

    threads = [stage(demux), stage(decode), stage(convert)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return frames


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("video")
    parser.add_argument("--queue", type=int, default=8, help="packets and frames in flight between stages")
    args = parser.parse_args()
    start = time.perf_counter()
    frames = decode_pipelined(args.video, args.queue)
    elapsed = time.perf_counter() - start
    print(f"{len(frames)} frames, {frames[0].pts_seconds:.3f} s to {frames[-1].pts_seconds:.3f} s, "
          f"shape {tuple(frames[0].data.shape)}, decoded on 3 threads in {elapsed:.2f} s")


if __name__ == "__main__":
    main()
