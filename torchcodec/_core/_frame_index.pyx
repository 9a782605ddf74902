"""The frame index of one stream (exact mode, or from user-provided frame mappings).

Entries are in presentation (pts) order. They come from a packet scan (``Demuxer.scan``), where
packets that an edit list discards are left out, or from ``FrameIndex.from_lists`` for custom
frame mappings. ``finish`` sorts them and computes, for each frame, the key frame a decoder must
start from.
"""
from fractions import Fraction

from libc.stdint cimport int64_t
from libc.stdlib cimport free, qsort, realloc


def time_base_fraction(time_base):
    """A time base given as a Fraction, a (num, den) pair or a float, as a Fraction."""
    if isinstance(time_base, tuple):
        return Fraction(*time_base)
    fraction = Fraction(time_base)
    return fraction if isinstance(time_base, Fraction) else fraction.limit_denominator(2**31 - 1)


cdef int compare_pts(const void *a, const void *b) noexcept nogil:
    cdef int64_t pa = (<const FrameEntry *>a).pts
    cdef int64_t pb = (<const FrameEntry *>b).pts
    return (pa > pb) - (pa < pb)


cdef class FrameIndex:
    def __cinit__(self, time_base):
        self.entries = NULL
        self.size = 0
        self.capacity = 0
        fraction = time_base_fraction(time_base)
        if fraction <= 0:
            raise ValueError(f"the time base must be positive, got {time_base}")
        self.time_base_num = fraction.numerator
        self.time_base_den = fraction.denominator
        self.pts_from_dts = False

    def __dealloc__(self):
        free(self.entries)

    @staticmethod
    def from_lists(time_base, pts, durations, key_frames):
        """Build an index from Python sequences of pts, durations (ticks) and key-frame flags.

        ``time_base``: seconds per tick, as a Fraction, a (num, den) pair or a float."""
        if not (len(pts) == len(durations) == len(key_frames)):
            raise ValueError("pts, durations and key_frames must have the same length")
        cdef FrameIndex index = FrameIndex(time_base)
        for p, d, k in zip(pts, durations, key_frames):
            index.append(p, d, k)
        index.finish()
        return index

    cdef int append(self, int64_t pts, int64_t duration, bint is_key, int64_t pos=-1) except -1 nogil:
        cdef Py_ssize_t new_capacity
        cdef FrameEntry *grown
        if self.size == self.capacity:
            new_capacity = self.capacity * 2 if self.capacity else 1024
            grown = <FrameEntry *>realloc(self.entries, new_capacity * sizeof(FrameEntry))
            if grown == NULL:
                with gil:
                    raise MemoryError(f"cannot grow the frame index to {new_capacity} frames")
            self.entries = grown
            self.capacity = new_capacity
        self.entries[self.size].pts = pts
        self.entries[self.size].duration = duration
        self.entries[self.size].is_key = is_key
        self.entries[self.size].key_before = -1
        self.entries[self.size].pos = pos
        self.size += 1
        return 0

    cdef void finish(self) noexcept nogil:
        """Sort by pts (stable for equal pts is not needed) and link every frame to its key frame."""
        cdef Py_ssize_t i
        cdef int64_t last_key = -1
        if self.size > 1:                       # entries is NULL while empty: qsort must not see it
            qsort(self.entries, self.size, sizeof(FrameEntry), compare_pts)
        for i in range(self.size):
            if self.entries[i].is_key:
                last_key = i
            self.entries[i].key_before = last_key

    cdef Py_ssize_t find_pts(self, int64_t pts) noexcept nogil:
        """Index of the frame whose pts is exactly ``pts``, or -1."""
        cdef Py_ssize_t i = self.last_at_or_before(pts)
        if i >= 0 and self.entries[i].pts == pts:
            return i
        return -1

    cdef Py_ssize_t last_at_or_before(self, int64_t pts) noexcept nogil:
        """Index of the last frame with pts <= ``pts``, or -1 when every frame is later."""
        cdef Py_ssize_t lo = 0, hi = self.size, mid
        while lo < hi:
            mid = (lo + hi) // 2
            if self.entries[mid].pts <= pts:
                lo = mid + 1
            else:
                hi = mid
        return lo - 1

    def __len__(self):
        return self.size

    def pts(self, Py_ssize_t i):
        return self.entries[self._check(i)].pts

    def index_played_at(self, double seconds):
        """Index of the last frame whose pts (in seconds) is <= ``seconds``; -1 if none."""
        cdef Py_ssize_t lo = 0, hi = self.size, mid
        while lo < hi:
            mid = (lo + hi) // 2
            if self.seconds(self.entries[mid].pts) <= seconds:
                lo = mid + 1
            else:
                hi = mid
        return lo - 1

    def index_shown_at(self, double seconds):
        """Index of the frame that decoding from the key frame before ``seconds`` reaches first
        among those playing at ``seconds`` (pts <= seconds < pts + duration) or starting after it;
        -1 if none. This is TorchCodec's ``get_frame_played_at``: it uses durations, so a time in a
        gap between one frame's end and the next frame's pts gets the next frame."""
        cdef int64_t cursor = closest_ticks(seconds, self.time_base_num, self.time_base_den)
        cdef Py_ssize_t j = self.last_at_or_before(cursor)
        cdef double start
        j = self.entries[j].key_before if j >= 0 else -1
        for j in range(max(j, 0), self.size):
            start = self.seconds(self.entries[j].pts)
            if start > seconds or seconds < self.seconds(self.entries[j].pts + self.entries[j].duration):
                return j
        return -1

    def index_at_or_after(self, double seconds):
        """Index of the first frame whose pts (in seconds) is >= ``seconds`` (``len`` if none)."""
        cdef Py_ssize_t lo = 0, hi = self.size, mid
        while lo < hi:
            mid = (lo + hi) // 2
            if self.seconds(self.entries[mid].pts) < seconds:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def content_bounds(self):
        """(begin, end) in seconds: min pts and max(pts + duration); None when the index is empty."""
        if self.size == 0:
            return None
        cdef Py_ssize_t i
        cdef int64_t end = self.entries[0].pts + self.entries[0].duration
        for i in range(1, self.size):
            end = max(end, self.entries[i].pts + self.entries[i].duration)
        return self.seconds(self.entries[0].pts), self.seconds(end)

    cdef Py_ssize_t _check(self, Py_ssize_t i) except -1:
        if i < 0 or i >= self.size:
            raise IndexError(f"frame index {i} is out of range [0, {self.size})")
        return i
