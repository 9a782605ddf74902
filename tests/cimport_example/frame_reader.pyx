# cython: language_level=3, boundscheck=False, wraparound=False
"""frame_reader: a downstream extension that decodes video through torchcodec's public cimport API.

It is the example of docs/cython_api.md and is built by tests/test_cimport.py against the installed
torchcodec. It uses both public paths:

- ``torchcodec.readers``: ``FrameReader`` asks a ``VideoReader`` for frames by timestamp (the reader
  seeks and matches frames, as VideoDecoder does) and decodes them without the GIL into memory that
  this extension owns;
- ``torchcodec.blocks``: ``key_frames`` runs the building blocks itself, without the GIL: the
  Demuxer reads packets, the VideoPacketDecoder decodes only the key-frame packets, the
  ColorConverter writes RGB into the caller's array. It calls no FFmpeg function of its own.

The objects are created through their Python constructors (as the Python layer does); only the
per-frame work is C.
"""
from libc.stdint cimport uint8_t

from torchcodec.blocks cimport (ColorConverter, Demuxer, FrameIndex, Packet, RawFrame, VideoPacketDecoder,
                                clockwise_rotation)
from torchcodec.readers cimport AT_OR_AFTER, VideoReader

import numpy as np

cdef extern from "libavcodec/packet.h":
    int AV_PKT_FLAG_KEY                 # a header constant: nothing of FFmpeg is linked


cdef class FrameReader:
    """RGB frames, by index, of the best video stream of the file at ``path``.

    Not thread-safe: a VideoReader is used by one thread at a time, so give each thread its own
    FrameReader (or hold a lock around ``read_into``).
    """
    cdef readonly VideoReader reader
    cdef readonly int height
    cdef readonly int width

    def __init__(self, str path, int num_threads=1):
        cdef Demuxer demuxer = Demuxer(path)              # follows the best video stream
        stream = demuxer.streams[0]
        header = stream.metadata
        # The display matrix gives a counter-clockwise angle; the reader turns frames clockwise.
        cdef int clockwise = clockwise_rotation(header.rotation or 0.0)
        cdef FrameIndex index = stream.scan()             # exact mode: the pts of every frame
        # at_start=False: let the reader seek to the first frame it needs.
        self.reader = VideoReader(demuxer, stream.index, index, clockwise, False,
                                  stream.make_decoder(num_ffmpeg_threads=num_threads), ColorConverter())
        self.width, self.height = header.width, header.height    # the header's size is after rotation
        if self.width <= 0 or self.height <= 0:
            raise ValueError(f"{path!r}: the video stream has no valid frame size")

    def __len__(self):
        return self.reader.index.size

    def read_into(self, indices, out):
        """Decode the frames at ``indices`` (any order, repeats allowed) into ``out``; return ``out``.

        ``out``: any writable uint8 buffer of shape (len(indices), H, W, 3) whose pixels are packed
        (3 bytes apart); its rows and frames may lie further apart (e.g. a slice of a wider array).
        """
        cdef uint8_t[:, :, :, :] view = out
        cdef Py_ssize_t[::1] wanted = np.asarray(indices, dtype=np.intp).reshape(-1).copy()
        cdef Py_ssize_t n = wanted.shape[0], k
        cdef VideoReader reader = self.reader
        cdef FrameIndex index = reader.index
        # Everything is checked while the GIL is held; the loop below only decodes.
        check_layout(view, n, self.height, self.width)
        for k in range(n):
            if not 0 <= wanted[k] < index.size:
                raise IndexError(f"frame index {wanted[k]} is out of range [0, {index.size})")
        with nogil:
            for k in range(n):
                # entries[i].pts: frame i's timestamp (presentation order); AT_OR_AFTER finds it.
                reader.decode_into(index.entries[wanted[k]].pts, AT_OR_AFTER, &view[k, 0, 0, 0],
                                   view.strides[1], self.width, self.height, False)
        return out

    def read(self, indices):
        """The frames at ``indices`` as a new uint8 array of shape (len(indices), H, W, 3)."""
        n = len(np.asarray(indices).reshape(-1))
        return self.read_into(indices, np.empty((n, self.height, self.width, 3), dtype=np.uint8))


cdef int check_layout(uint8_t[:, :, :, :] view, Py_ssize_t n, int height, int width) except -1:
    if view.shape[0] != n or view.shape[1] != height or view.shape[2] != width or view.shape[3] != 3:
        raise ValueError(f"out must have shape ({n}, {height}, {width}, 3), got "
                         f"({view.shape[0]}, {view.shape[1]}, {view.shape[2]}, {view.shape[3]})")
    if (view.strides[3] != 1 or view.strides[2] != 3 or view.strides[1] < 3 * width
            or (n > 1 and view.strides[0] < height * view.strides[1])):
        raise ValueError("out's pixels must be packed, and its rows and frames must not overlap")
    return 0


def read_frames(path, indices):
    """The RGB frames at ``indices`` of the best video stream of ``path``, (N, H, W, 3) uint8."""
    return FrameReader(str(path)).read(indices)


def key_frames(path, out=None):
    """The key frames of the best video stream of ``path`` as RGB, (K, H, W, 3) uint8, decoded by
    the building blocks without the GIL: packets that are not key frames are never decoded.
    Returns (frames, pts in seconds)."""
    cdef Demuxer demuxer = Demuxer(str(path))
    stream = demuxer.streams[0]
    header = stream.metadata
    cdef FrameIndex index = stream.scan()                 # to size the output: K key frames
    cdef VideoPacketDecoder decoder = stream.make_decoder()
    cdef ColorConverter converter = ColorConverter()
    cdef int clockwise = clockwise_rotation(header.rotation or 0.0)
    cdef int width = header.width, height = header.height
    cdef Py_ssize_t count = 0, k = 0, i
    for i in range(index.size):
        count += index.entries[i].is_key
    if out is None:
        out = np.empty((count, height, width, 3), dtype=np.uint8)
    cdef uint8_t[:, :, :, :] view = out
    check_layout(view, count, height, width)
    cdef double[::1] pts = np.zeros(count)
    cdef Packet packet = Packet.__new__(Packet)           # reused for every read
    cdef RawFrame frame = RawFrame.__new__(RawFrame)      # what the decoder fills
    cdef int target = stream.index
    with nogil:
        while k < count and demuxer.read_into(packet):
            if packet.stream_index != target or not (packet.ptr.flags & AV_PKT_FLAG_KEY):
                continue                                  # skipped without decoding
            # A key frame decodes on its own: send it, end the input, take the frame, start again.
            decoder.send_packet(packet.ptr)
            decoder.send_packet(NULL)
            if decoder.receive_frame(frame.ptr):
                converter.convert_into(frame.ptr, clockwise, &view[k, 0, 0, 0], view.strides[1], width, height,
                                       False)
                pts[k] = packet.ptr.pts * index.time_base_num / <double>index.time_base_den
                k += 1
            decoder.flush()
    return np.asarray(out)[:k], np.asarray(pts)[:k]
