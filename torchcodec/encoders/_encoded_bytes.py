"""What the one-shot encoders share: encoded bytes in memory handed over as an array of the bridge."""
from __future__ import annotations

import ctypes
from collections.abc import Callable
from typing import Any

from torchcodec import _outputs
from torchcodec._core._avio import MemorySink


def memory_to_array(sink: MemorySink) -> Any:
    """The bytes a MemorySink collected, copied once into a 1-D uint8 CPU array that the bridge's
    library allocates (a numpy array for the cupy bridge: encoded bytes live on the CPU)."""
    return _bytes_array(sink.size, sink.copy_to)


def bytes_to_array(data: bytes) -> Any:
    """``data`` copied once into a 1-D uint8 CPU array of the bridge's library (numpy for cupy)."""
    return _bytes_array(len(data), lambda address: ctypes.memmove(address, data, len(data)))


def _bytes_array(size: int, fill: Callable[[int], Any]) -> Any:
    """A new 1-D uint8 array of ``size`` bytes that ``fill(address)`` writes."""
    memory = _outputs.allocate((size,), "uint8", bridge=_outputs.host_bridge())
    if size:
        fill(memory.address)
    return memory.finish()
