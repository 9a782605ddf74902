"""Opening a source for a decoder: the stream chosen and followed, the demuxer to read from, and
the frame index of exact mode (given by the index cache, scanned whole, or scanned lazily).

These are the Demuxer's steps that VideoDecoder and AudioDecoder share; their factory
(torchcodec/decoders/_factory.py) composes them with the index cache and the device's parts.
"""
from __future__ import annotations

import numbers
from typing import Any, Optional

from torchcodec._core._demuxer import Demuxer, IndexScan, unselected_demuxer
from torchcodec._core._frame_index import FrameIndex


def open_stream(source: Any, stream_index: Optional[int], kind: str,
                probe: Optional[list] = None) -> tuple[Demuxer, int, dict]:
    """``(demuxer, stream index, header)``: ``source`` opened (skipping the probe with a ``probe``
    state from an earlier open), following its ``kind`` ("video"/"audio") stream ``stream_index``
    (None: FFmpeg's best one), and that stream's header (``Demuxer._stream_header``). ValueError
    for a stream index that is not a stream of that kind."""
    demuxer = unselected_demuxer(source, probe=probe)
    index = _choose_stream(demuxer, stream_index, kind)
    demuxer._follow(index)
    return demuxer, index, stream_header(demuxer, index)


def _choose_stream(demuxer: Demuxer, stream_index: Optional[int], kind: str) -> int:
    """``stream_index`` checked to be a ``kind`` stream, or FFmpeg's best one."""
    if stream_index is None:
        best = demuxer._best_stream(kind)
        if best is None:
            raise ValueError(f"No valid stream found in input file: it has no {kind} stream")
        return best
    if (isinstance(stream_index, bool) or not isinstance(stream_index, numbers.Integral)
            or not 0 <= stream_index < demuxer._num_streams):
        raise ValueError(f"The stream index {stream_index} is not a valid stream "
                         f"(the file has {demuxer._num_streams} stream(s)).")
    found = demuxer._media_type(int(stream_index))
    if found != kind:
        raise ValueError(f"The stream at index {stream_index} is not {'an' if kind == 'audio' else 'a'} "
                         f"{kind} stream (it is {found}).")
    return int(stream_index)


def exact_index(demuxer: Demuxer, stream_index: int, lazy: bool) -> tuple[FrameIndex, Optional[IndexScan]]:
    """Exact mode's index of ``stream_index``, scanned, and its IndexScan when it is read lazily:
    a lazy scan (``lazy``) reads the file only as far as requests need, for a file the index cache
    can store (it has a probe state, and was not opened from one); other files are scanned whole
    now."""
    if lazy and demuxer._probe_state() is not None and not demuxer.probe_skipped:
        scan = IndexScan(demuxer, stream_index)
        return scan.index, scan
    return demuxer._scan(stream_index), None


def reading_demuxer(opened: Demuxer, scanned: bool) -> Demuxer:
    """The demuxer a decoder reads from, given the one it opened (and ``scanned``, when the exact-mode
    scan read it): ``opened`` while it has read no packet (its probe skipped, from the index cache,
    and no scan), else the same file opened again from its probe state (``Demuxer._unread``).

    Some demuxers index the packets they read, the probe's included, and seek by that index
    afterwards (Matroska without cues, AVI, fragmented mp4), so where a seek lands can depend on
    what was read before it. Reading from a demuxer that has read nothing makes a first open and a
    reopen from the cache decode alike (the fuzzer found damaged AVI and Matroska files where they
    did not). Formats without a probe state (``_probe_state`` None), URLs and file objects, which
    the cache never holds, are read from ``opened``, as TorchCodec reads them.
    """
    if opened.probe_skipped and not scanned:
        return opened
    return opened._unread() or opened


def stream_header(demuxer: Demuxer, stream_index: int) -> dict:
    """What the container header says about a stream the demuxer follows (the metadata's fields)."""
    return demuxer._stream_header(stream_index)


def source_size(demuxer: Demuxer) -> Optional[int]:
    """The source's size in bytes; None when unknown."""
    return demuxer._size


def index_completed(scan: IndexScan, reader: Any) -> bool:
    """A lazy scan reached the end: have ``reader`` (the VideoReader over its index, or its
    GopParallel) take the index again where it ended out of order (entries taken as final moved, or
    frames are matched by position). True when frames were decoded before, from the index as it was."""
    builder = scan.builder
    if not builder.ordered and (builder.prefix_changed or scan.index.pts_from_dts):
        return reader._index_reordered()
    return False
