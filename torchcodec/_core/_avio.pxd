# Custom AVIO contexts: encoded bytes in memory or a Python file object, read by the Demuxer (sources)
# or written by the Muxer (sinks).
from libc.stdint cimport int64_t, uint8_t
from cpython.buffer cimport Py_buffer
from torchcodec._core._error cimport ErrorStash
from torchcodec._ffmpeg.avformat cimport AVIOContext


cdef struct MemoryReader:
    const uint8_t *data
    int64_t size
    int64_t pos


cdef struct MemoryWriter:
    uint8_t *data                   # malloc'd, grown by doubling
    int64_t size                    # bytes written (the furthest point written to)
    int64_t capacity
    int64_t pos


cdef class IOSource:
    """Owns an AVIOContext (``ptr``) and its buffer; the Demuxer (sources) or Muxer (sinks) borrows it."""
    cdef AVIOContext *ptr
    cdef ErrorStash errors          # what a callback raised, until the caller of FFmpeg raises it
    cdef int raise_pending(self) except -1


cdef class MemorySource(IOSource):
    """Reads a contiguous buffer (bytes, bytearray, memoryview, 1-D uint8 array) without copying it."""
    cdef Py_buffer view
    cdef bint has_view
    cdef object owner               # keeps the memory alive
    cdef MemoryReader reader


cdef class FileObjectSource(IOSource):
    """Reads a Python file-like object through its ``read``/``readinto`` and ``seek`` methods."""
    cdef object fileobj
    cdef object read
    cdef object readinto
    cdef object seek


cdef class MemorySink(IOSource):
    """Collects what a muxer writes in a growing C buffer."""
    cdef MemoryWriter writer


cdef class FileObjectSink(IOSource):
    """Writes to a Python file-like object through its ``write`` and ``seek`` methods."""
    cdef object fileobj
    cdef object write
    cdef object seek
