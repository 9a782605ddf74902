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
from typing import Any, Callable, Optional

from torchcodec.decoders import ColorConverter, Demuxer

_END = object()


def decode_pipelined(path: str, depth: int = 8, consume: Optional[Callable[[Any], None]] = None) -> list[Any]:
    """Every frame of the best video stream of ``path`` as an RGB Frame, in presentation order:
    handed to ``consume`` on the converting thread, or (without it) returned as a list (which holds
    every frame in memory: a 1080p frame is 6 MB)."""
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
        keep = consume if consume is not None else frames.append
        while (raw_frame := raw_frames.get()) is not _END:
            keep(converter.convert(raw_frame))

    threads = [stage(demux), stage(decode), stage(convert)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return frames


class Summary:
    """Counts the frames and keeps the first and the last (a long video does not fit in memory)."""

    def __init__(self) -> None:
        self.count, self.first, self.last = 0, None, None

    def __call__(self, frame: Any) -> None:
        self.count += 1
        self.first = self.first or frame
        self.last = frame


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("video")
    parser.add_argument("--queue", type=int, default=8, help="packets and frames in flight between stages")
    args = parser.parse_args()
    summary = Summary()
    start = time.perf_counter()
    decode_pipelined(args.video, args.queue, summary)
    elapsed = time.perf_counter() - start
    print(f"{summary.count} frames, {summary.first.pts_seconds:.3f} s to {summary.last.pts_seconds:.3f} s, "
          f"shape {tuple(summary.first.data.shape)}, decoded on 3 threads in {elapsed:.2f} s")


if __name__ == "__main__":
    main()
