# cython: language_level=3, boundscheck=False, wraparound=False
"""frame_reader: a downstream extension that decodes video frames through torchcodec's C-level API.

It is the example of docs/cython_api.md and is built by tests/test_cimport.py against the installed
torchcodec. The engine objects are created through their Python constructors (as the Python layer
does); the frames are then decoded without the GIL by ``VideoStream.decode_into``, straight into
memory that this extension owns.
"""
from libc.stdint cimport uint8_t

from torchcodec._core._demuxer cimport Demuxer
from torchcodec._core._frame_index cimport FrameIndex
from torchcodec._core._video cimport AT_OR_AFTER, VideoStream

import numpy as np


cdef class FrameReader:
    """RGB frames, by index, of the best video stream of the file at ``path``.

    Not thread-safe: a VideoStream is used by one thread at a time, so give each thread its own
    FrameReader (or hold a lock around ``read_into``).
    """
    cdef readonly VideoStream stream
    cdef readonly int height
    cdef readonly int width

    def __init__(self, str path, int num_threads=1):
        cdef Demuxer demuxer = Demuxer(path, repr(path))
        stream_index = demuxer.best_stream("video")
        if stream_index is None:
            raise ValueError(f"{path!r} has no video stream")
        header = demuxer.stream_header(stream_index)
        # The display matrix gives a counter-clockwise angle; VideoStream turns frames clockwise.
        clockwise = (-round(header["rotation"] or 0)) % 360
        if clockwise not in (90, 180, 270):
            clockwise = 0
        cdef FrameIndex index = demuxer.scan(stream_index)   # exact mode: the pts of every frame
        # at_start=False: the scan has read the file, so the first decode seeks.
        self.stream = VideoStream(demuxer, stream_index, index, num_threads, clockwise, False)
        self.width, self.height = header["width"], header["height"]
        if clockwise in (90, 270):
            self.width, self.height = self.height, self.width
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f"{path!r}: the video stream has no valid frame size")

    def __len__(self):
        return self.stream.index.size

    def read_into(self, indices, out):
        """Decode the frames at ``indices`` (any order, repeats allowed) into ``out``; return ``out``.

        ``out``: any writable uint8 buffer of shape (len(indices), H, W, 3) whose pixels are packed
        (3 bytes apart); its rows and frames may lie further apart (e.g. a slice of a wider array).
        """
        cdef uint8_t[:, :, :, :] view = out
        cdef Py_ssize_t[::1] wanted = np.asarray(indices, dtype=np.intp).reshape(-1).copy()
        cdef Py_ssize_t n = wanted.shape[0], k
        cdef VideoStream stream = self.stream
        cdef FrameIndex index = stream.index
        # Everything is checked while the GIL is held; the loop below only decodes.
        if view.shape[0] != n or view.shape[1] != self.height or view.shape[2] != self.width or view.shape[3] != 3:
            raise ValueError(f"out must have shape ({n}, {self.height}, {self.width}, 3), got "
                             f"({view.shape[0]}, {view.shape[1]}, {view.shape[2]}, {view.shape[3]})")
        if (view.strides[3] != 1 or view.strides[2] != 3 or view.strides[1] < 3 * self.width
                or (n > 1 and view.strides[0] < self.height * view.strides[1])):
            raise ValueError("out's pixels must be packed, and its rows and frames must not overlap")
        for k in range(n):
            if not 0 <= wanted[k] < index.size:
                raise IndexError(f"frame index {wanted[k]} is out of range [0, {index.size})")
        with nogil:
            for k in range(n):
                # entries[i].pts: frame i's timestamp (presentation order); AT_OR_AFTER finds it.
                stream.decode_into(index.entries[wanted[k]].pts, AT_OR_AFTER, &view[k, 0, 0, 0],
                                   view.strides[1], self.width, self.height, False)
        return out

    def read(self, indices):
        """The frames at ``indices`` as a new uint8 array of shape (len(indices), H, W, 3)."""
        n = len(np.asarray(indices).reshape(-1))
        return self.read_into(indices, np.empty((n, self.height, self.width, 3), dtype=np.uint8))


def read_frames(path, indices):
    """The RGB frames at ``indices`` of the best video stream of ``path``, (N, H, W, 3) uint8."""
    return FrameReader(str(path)).read(indices)
