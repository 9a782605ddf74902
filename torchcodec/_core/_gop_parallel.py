"""GOP-parallel decoding: one exact-mode request spread over several readers of the same stream.

A request for frames in many GOPs is decoded by ``VideoReader.decode_at`` as a chain of runs, each
beginning with a seek to a key frame (``VideoReader.runs`` says where). Frame threading cannot
overlap the runs (each seek drains its threads), but separate readers can: ``GopParallel`` splits
the runs into contiguous groups of about equal decoding work and hands each group to a sibling
reader on a thread of its own, every reader writing its frames into their own slots of the one
output. Each run still begins at its key frame, so the frames are those of the serial decode, byte
for byte.

Siblings are opened once per decoder, when a request first needs them, from the stream's cached
state: the demuxer's probe state (``Demuxer._unread``: no second probe) and the same frame index
(read only while they decode). They decode with one thread each, and there are at most ``workers``
of them, so memory stays bounded by that many decoders. Requests of one run, and decoders without
a probe state (URLs, file objects, formats whose probe cannot be skipped), take the serial path.
"""
from __future__ import annotations

import array
import os
import threading
from typing import Any, Optional, Sequence

from torchcodec._core._packet_decoder import make_video_decoder
from torchcodec._core._video_reader import VideoReader

MAX_WORKERS = 16            # FFmpeg's own cap on the threads it starts for num_ffmpeg_threads=0


def worker_count(num_threads: int) -> int:
    """Readers one request may use: ``num_threads``, or for 0 the cores this process may run on."""
    if num_threads == 0:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
        return max(1, min(cores, MAX_WORKERS))
    return max(1, min(num_threads, MAX_WORKERS))


def split_runs(costs: Sequence[int], groups: int) -> list[int]:
    """Where to cut runs of decoding work ``costs`` (in order) into at most ``groups`` contiguous
    groups of about equal work: the index of each group's first run, the first being 0."""
    total = sum(costs)
    starts = [0]
    done = 0
    for k, cost in enumerate(costs):
        # Cut before run k when its middle lies past the end of the current group's share.
        if k > 0 and len(starts) < groups and done + cost / 2 >= total * len(starts) / groups:
            starts.append(k)
        done += cost
    return starts


class GopParallel:
    """Sibling readers of ``reader``'s stream, which decode one exact-mode request together (see the
    module's documentation). ``workers``: how many readers a request may use (``worker_count``)."""

    def __init__(self, reader: VideoReader, demuxer: Any, workers: int) -> None:
        self.reader = reader
        self.demuxer = demuxer
        self.workers = workers
        self.siblings: list[VideoReader] = []
        self.transforms: tuple = ((), False)     # as VideoReader.set_transforms takes them
        self.usable = workers > 1 and reader.index is not None

    def set_transforms(self, stages: Sequence[tuple], single_resize: bool = False) -> None:
        """The transform plan of every reader (the stream's, and the siblings')."""
        self.reader.set_transforms(stages, single_resize)
        self.transforms = (tuple(stages), single_resize)
        for sibling in self.siblings:
            sibling.set_transforms(*self.transforms)

    def _index_reordered(self) -> bool:
        """A lazy index was sorted again (VideoReader._index_reordered): the siblings, which took
        what depends on it when they were opened, are closed; the stream's reader takes it again."""
        self.siblings.clear()
        return self.reader._index_reordered()

    def _sibling(self, k: int) -> Optional[VideoReader]:
        """Sibling ``k``, opened when first needed; None where the source cannot be opened again
        without a probe (then no request is spread)."""
        while len(self.siblings) <= k:
            demuxer = self.demuxer._unread()
            if demuxer is None:
                self.usable = False
                return None
            stream = self.reader.stream_index
            sibling = VideoReader(demuxer, stream, self.reader.index, self.reader.rotation, True,
                                  make_video_decoder(demuxer, stream, 1), None)
            sibling.set_transforms(*self.transforms)
            self.siblings.append(sibling)
        return self.siblings[k]

    def decode_at(self, targets: array.array, match: int, address: int, frame_stride: int, row_stride: int,
                  height: int, width: int, as_float: bool, pts_out: Any, duration_out: Any) -> None:
        """``VideoReader.decode_at`` of the stream's reader, its runs spread over the siblings when
        there are several."""
        groups = self._plan(targets)
        if groups is None:
            self.reader.decode_at(targets, match, address, frame_stride, row_stride, height, width, as_float,
                                  pts_out, duration_out)
            return
        memory = (address, frame_stride, row_stride, height, width, as_float, pts_out, duration_out)
        failures: list[Optional[BaseException]] = [None] * len(groups)

        def decode(k: int) -> None:
            reader, wanted, slots = groups[k]
            try:
                reader.decode_at(wanted, match, *memory, slots)
            except BaseException as exc:            # raised by the caller's thread, below
                failures[k] = exc

        threads = [threading.Thread(target=decode, args=(k,), name=f"torchcodec GOP reader {k}")
                   for k in range(1, len(groups))]
        for thread in threads:
            thread.start()
        decode(0)
        for thread in threads:
            thread.join()
        for failure in failures:
            if failure is not None:
                raise failure

    def _plan(self, targets: array.array) -> Optional[list[tuple[VideoReader, array.array, array.array]]]:
        """The readers of a request and, for each, its targets and their output slots; None for the
        serial path (one run, or no siblings)."""
        if not self.usable or len(targets) < 2 or self.reader.index.pts_from_dts:
            return None             # (frames matched by position: each reader's count starts at its seek)
        distinct = sorted(set(targets))
        runs = self.reader.runs(array.array("q", distinct))
        if len(runs) < 2:
            return None
        starts = split_runs([frames for _, frames in runs], min(self.workers, len(runs)))
        # The first distinct target of each group, in timestamps; a target belongs to the last group
        # that starts at or before it.
        first_of_run = [0]
        for count, _ in runs:
            first_of_run.append(first_of_run[-1] + count)
        firsts = [distinct[first_of_run[start]] for start in starts]
        readers = [self._sibling(k) for k in range(len(starts))]
        if None in readers:
            return None
        wanted = [array.array("q") for _ in starts]
        slots = [array.array("q") for _ in starts]
        group = 0
        for slot in sorted(range(len(targets)), key=targets.__getitem__):
            while group + 1 < len(firsts) and targets[slot] >= firsts[group + 1]:
                group += 1
            wanted[group].append(targets[slot])
            slots[group].append(slot)
        return list(zip(readers, wanted, slots))
