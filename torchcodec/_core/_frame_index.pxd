# The frame index: pts, duration and key flag of every frame of one stream, in presentation order.
from libc.stdint cimport int64_t, uint8_t


cdef struct FrameEntry:
    int64_t pts
    int64_t duration
    int64_t key_before      # index of the last key frame at or before this one (-1: none)
    int64_t pos             # byte position of the frame's packet in the file (-1: unknown)
    uint8_t is_key


cdef class FrameIndex:
    cdef FrameEntry *entries
    cdef Py_ssize_t size
    cdef Py_ssize_t capacity
    cdef double time_base           # seconds per pts tick
    cdef readonly bint pts_from_dts  # some packets had no pts: their dts stood in for it

    cdef int append(self, int64_t pts, int64_t duration, bint is_key, int64_t pos=*) except -1 nogil
    cdef void finish(self) noexcept nogil
    cdef Py_ssize_t find_pts(self, int64_t pts) noexcept nogil
    cdef Py_ssize_t last_at_or_before(self, int64_t pts) noexcept nogil
    cdef Py_ssize_t _check(self, Py_ssize_t i) except -1
