"""The NVDEC decoder cache: idle CUVID decoders kept per GPU for reuse, and its capacity.

A CUVID decoder costs milliseconds to create; a later VideoDecoder of the same codec, size and
surface layout on the same GPU reuses an idle one instead. The cache knows decoders only by their
``device`` and typed ``key`` (:class:`DecoderKey`); destroying one is dropping the last reference.
Its capacity is set through the gate (torchcodec._cuda.set_nvdec_cache_capacity).
"""
from __future__ import annotations

import threading
from typing import Any, NamedTuple

DEFAULT_CAPACITY = 20


class DecoderKey(NamedTuple):
    """What a CUVID decoder was created for; a decoder is reused only for an equal key."""

    codec: int                 # cudaVideoCodec
    chroma: int                # cudaVideoChromaFormat
    bit_depth: int             # of the content
    coded_width: int
    coded_height: int
    surface_format: int        # cudaVideoSurfaceFormat
    decode_surfaces: int       # ulNumDecodeSurfaces
    output_surfaces: int       # ulNumOutputSurfaces


class DecoderCache:
    """Idle decoders per device, least recently used first, at most ``capacity`` per device.

    Decoders come back from NvdecDecoder deallocators, which may run inside a garbage collection
    while this thread holds the lock: such a return never waits for the lock, it is queued in
    ``returned`` (a list append) and filed by the next operation that holds the lock.
    """

    def __init__(self, capacity: int) -> None:
        self.lock = threading.Lock()
        self.idle: dict[int, list[Any]] = {}     # device index -> decoders, least recently used first
        self.returned: list[Any] = []            # given back while the lock was busy
        self.capacity = capacity

    def _file_returned(self) -> list[Any]:
        """(Lock held.) File the queued returns; the decoders evicted beyond the capacity."""
        while self.returned:
            decoder = self.returned.pop(0)
            self.idle.setdefault(decoder.device, []).append(decoder)
        evicted = []
        for decoders in self.idle.values():
            excess = max(0, len(decoders) - self.capacity)
            evicted += decoders[:excess]
            del decoders[:excess]
        return evicted

    def take(self, device: int, key: DecoderKey) -> Any:
        """The most recently used idle decoder of ``key`` on ``device``, or None."""
        with self.lock:
            evicted = self._file_returned()
            decoders = self.idle.get(device, [])
            for i in range(len(decoders) - 1, -1, -1):
                if decoders[i].key == key:
                    return decoders.pop(i)
        del evicted                     # destroyed outside the lock
        return None

    def give_back(self, decoder: Any) -> None:
        """Keep an idle decoder, destroying the least recently used beyond the capacity."""
        self.returned.append(decoder)
        if not self.lock.acquire(blocking=False):
            return                      # filed by the next operation
        try:
            evicted = self._file_returned()
        finally:
            self.lock.release()
        del evicted

    def set_capacity(self, capacity: int) -> None:
        with self.lock:
            self.capacity = capacity
            evicted = self._file_returned()
        del evicted

    def clear(self) -> None:
        """Destroy every idle decoder (the driver's release hook, before it releases its contexts)."""
        with self.lock:
            self._file_returned()
            evicted = list(self.idle.values())
            self.idle.clear()
        del evicted


cache = DecoderCache(DEFAULT_CAPACITY)
