"""What the one-shot encoders share: encoded bytes in memory handed over as an array of the bridge."""
from __future__ import annotations

from typing import Any

from torchcodec import _bridge
from torchcodec._core._avio import MemorySink


def memory_to_array(sink: MemorySink) -> Any:
    """The bytes a MemorySink collected, copied once into a 1-D uint8 CPU array that the bridge's
    library allocates (a numpy array for the cupy bridge: encoded bytes live on the CPU)."""
    name = _bridge.get_bridge()
    if name == "cupy":
        name = "numpy"
    data = _bridge.empty((sink.size,), "uint8", name)
    if sink.size:
        sink.copy_to(_bridge.memory_of(data).address)
    return _bridge.finish(data, name)
