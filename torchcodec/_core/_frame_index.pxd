# The frame index: pts, duration and key flag of every frame of one stream, in presentation order.
from libc.math cimport round
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
    cdef readonly int64_t time_base_num   # seconds per pts tick = num / den
    cdef readonly int64_t time_base_den
    cdef readonly bint pts_from_dts  # some packets had no pts: their dts stood in for it
    cdef double *ends_so_far        # running max of each frame's end (seconds): index_at's search
    cdef dict arrays                # (name, bridge) -> the public arrays, made when first asked for

    cdef int append(self, int64_t pts, int64_t duration, bint is_key, int64_t pos=*) except -1 nogil
    cdef void finish(self) noexcept nogil
    cdef Py_ssize_t find_pts(self, int64_t pts) noexcept nogil
    cdef Py_ssize_t last_at_or_before(self, int64_t pts) noexcept nogil
    cdef Py_ssize_t _check(self, Py_ssize_t i) except -1
    cdef object cached(self, str which)
    cdef int compute_ends(self) except -1
    cdef Py_ssize_t index_at_seconds(self, double seconds) noexcept nogil
    cdef double key_frame_seconds(self, double seconds) noexcept nogil
    cdef int grew(self) except -1
    cdef inline double seconds(self, int64_t pts) noexcept nogil:
        return ticks_to_seconds(pts, self.time_base_num, self.time_base_den)


cdef class IndexBuilder:
    # A scan's packets, turned into a FrameIndex in presentation order as they come (see the class).
    cdef readonly FrameIndex index  # the entries known final, in presentation order
    cdef FrameEntry *pending        # the others: a min-heap (compare_entries) while ``ordered``
    cdef Py_ssize_t pending_size
    cdef Py_ssize_t pending_capacity
    cdef int64_t final_below        # an entry whose pts is below this is final (the last packet's dts)
    cdef int64_t last_dts
    cdef Py_ssize_t last_key        # the index's last key frame (-1: none yet)
    cdef readonly int64_t end_ticks # the largest pts + duration among the final entries
    cdef readonly bint ordered      # every packet so far had pts >= dts, dts not decreasing
    cdef readonly bint ended        # the scan reached the end: every entry is in the index
    cdef readonly bint prefix_changed   # ending out of order moved entries once thought final

    cdef int add(self, int64_t pts, int64_t dts, int64_t duration, bint is_key, int64_t pos) except -1 nogil
    cdef int end(self) except -1 nogil
    cdef int commit(self, const FrameEntry *entry) except -1 nogil
    cdef void reach(self, const FrameEntry *entry) noexcept nogil
    cdef int push(self, const FrameEntry *entry) except -1 nogil
    cdef void pop(self, FrameEntry *top) noexcept nogil


cdef inline double ticks_to_seconds(int64_t ticks, int64_t num, int64_t den) noexcept nogil:
    """Seconds of ``ticks`` of a num/den time base, computed as TorchCodec does (pts * num / den),
    so that 700 ticks of 1/1000 s are 0.7 exactly, not 700 * 0.001 = 0.7000000000000001."""
    return <double>ticks * num / den


cdef inline int64_t closest_ticks(double seconds, int64_t num, int64_t den) noexcept nogil:
    """The timestamp closest to ``seconds`` in a num/den time base, rounded half away from zero,
    computed as TorchCodec does (seconds * den / num)."""
    return <int64_t>round(seconds * den / num)
