"""What every decoder shares: choosing its stream, and opening its source again after pickling
or in a forked child."""
from __future__ import annotations

import ctypes
import numbers
import os
from typing import Any, Optional

from torchcodec._core._demuxer import Demuxer
from torchcodec._core._error import InvalidArgumentTypeError
from torchcodec._outputs import describe, is_buffer

_FORK_ORPHANS: list = []   # engines inherited through fork(), kept so that they are never freed


def choose_stream(demuxer: Demuxer, stream_index: Optional[int], kind: str) -> int:
    """``stream_index`` checked to be a ``kind`` ("video"/"audio") stream, or FFmpeg's best one."""
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


def as_seconds(name: str, value: Any) -> float:
    """A time argument as a float: a real number, or an object that converts to one (a 0-d tensor).
    Strings and other types: TypeError (also a RuntimeError, as TorchCodec raises for some)."""
    if isinstance(value, numbers.Real) or (hasattr(type(value), "__float__") and not isinstance(value, (str, bytes))):
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
    raise InvalidArgumentTypeError(f"{name} must be a number of seconds, got {type(value).__name__} ({value!r})")


def encoded_bytes(source: Any) -> bytes:
    """The bytes of an in-memory source (buffer, array or torch tensor)."""
    if not is_buffer(source):                 # a tensor (contiguous 1-D uint8: checked when opened)
        memory = describe(source, writable=False, name="the source")
        return ctypes.string_at(memory.address, memory.shape[0])
    return bytes(memoryview(source).cast("B"))


class Reopenable:
    """A decoder that pickles to its source and options, and opens them again in a forked child.

    Subclasses set ``self._reopen`` (the ``__init__`` keyword arguments, ``source`` included) and
    ``self._pid`` in ``__init__``, list their FFmpeg objects in ``_engines()``, and call
    ``self._check_fork()`` before touching them.
    """

    _reopen: dict
    _pid: int

    def _engines(self) -> tuple:
        raise NotImplementedError

    def __getstate__(self) -> dict:
        """Paths and in-memory bytes are supported (bytes travel by value); file objects are not."""
        source = self._reopen["source"]
        if not isinstance(source, (str, os.PathLike, bytes, bytearray)):
            if hasattr(source, "read"):
                raise TypeError(f"a {type(self).__name__} reading a file object cannot be pickled: "
                                f"pass a path or the file's bytes instead")
            source = encoded_bytes(source)                   # arrays, tensors, memoryviews: by value
        return dict(self._reopen, source=source)

    def __setstate__(self, state: dict) -> None:
        state = dict(state)
        self.__init__(state.pop("source"), **state)  # type: ignore[misc]

    def _check_fork(self) -> None:
        """In a forked child (e.g. a DataLoader worker), open the source again: FFmpeg's threads
        and file positions are the parent's."""
        if self._pid == os.getpid():
            return
        state = dict(self._reopen)            # the source objects were copied into this process
        # The parent's FFmpeg contexts must never be freed here: their worker threads do not exist
        # in this process, and freeing would wait for them forever. They are left alone.
        _FORK_ORPHANS.append(self._engines())
        self.__init__(state.pop("source"), **state)  # type: ignore[misc]
