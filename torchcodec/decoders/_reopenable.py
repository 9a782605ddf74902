"""Reopenable: what every decoder shares, pickling to its source and options, and opening them
again in a forked child."""
from __future__ import annotations

import ctypes
import os
from typing import Any

from torchcodec._outputs import describe, is_buffer

_FORK_ORPHANS: list = []   # engines inherited through fork(), kept so that they are never freed


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
