"""The frame index of one stream (exact mode, or from user-provided frame mappings).

Entries are in presentation (pts) order. They come from a packet scan (``VideoStream.scan()``),
where packets that an edit list discards are left out, or from ``FrameIndex.from_lists`` for custom
frame mappings. ``finish`` sorts them and computes, for each frame, the key frame a decoder must
start from.

The same object is TorchCodec 0.17's building-block ``FrameIndex``: per-frame arrays
(``is_key_frame``, ``pts_seconds``, ``duration_seconds``) and key frame positions
(``key_frame_indices``) of the bridge's array library, the stream's content-derived metadata, and
the two searches an exact seek is built from (``index_at``, ``key_frame_seconds_for``). Seconds are
computed as TorchCodec computes them (``pts * num / den`` in float64), so they compare equal to
the timestamps decoded frames carry.
"""
import math
import struct
from fractions import Fraction

from libc.math cimport isnan
from libc.stdint cimport INT64_MIN, int64_t, uint8_t, uint64_t
from libc.stdlib cimport free, malloc, qsort, realloc
from libc.string cimport memcpy

from torchcodec import _outputs


# _to_bytes: the header (time base num and den, pts_from_dts, frame count), then 25 bytes a frame.
SERIAL_HEADER = struct.Struct("<qq?q")

cdef enum:
    SERIAL_ENTRY_BYTES = 25


cdef inline void store_le64(unsigned char *at, int64_t value) noexcept nogil:
    cdef uint64_t bits = <uint64_t>value
    cdef int k
    for k in range(8):
        at[k] = (bits >> (8 * k)) & 0xFF


cdef inline int64_t load_le64(const unsigned char *at) noexcept nogil:
    cdef uint64_t bits = 0
    cdef int k
    for k in range(8):
        bits |= (<uint64_t>at[k]) << (8 * k)
    return <int64_t>bits


def time_base_fraction(time_base):
    """A time base given as a Fraction, a (num, den) pair or a float, as a Fraction."""
    if isinstance(time_base, tuple):
        return Fraction(*time_base)
    fraction = Fraction(time_base)
    return fraction if isinstance(time_base, Fraction) else fraction.limit_denominator(2**31 - 1)


cdef int grow_entries(FrameEntry **entries, Py_ssize_t *capacity, Py_ssize_t first) except -1 nogil:
    """Double an array of entries (``first`` entries the first time)."""
    cdef Py_ssize_t new_capacity = capacity[0] * 2 if capacity[0] else first
    cdef FrameEntry *grown = <FrameEntry *>realloc(entries[0], new_capacity * sizeof(FrameEntry))
    if grown == NULL:
        with gil:
            raise MemoryError(f"cannot grow the frame index to {new_capacity} frames")
    entries[0] = grown
    capacity[0] = new_capacity
    return 0


cdef int compare_entries(const void *a, const void *b) noexcept nogil:
    """Presentation order, ties broken by the rest of the entry: a scan's order depends on its
    packets only, not on when the entries were sorted (IndexBuilder)."""
    cdef const FrameEntry *x = <const FrameEntry *>a
    cdef const FrameEntry *y = <const FrameEntry *>b
    if x.pts != y.pts:
        return -1 if x.pts < y.pts else 1
    if x.pos != y.pos:
        return -1 if x.pos < y.pos else 1
    if x.duration != y.duration:
        return -1 if x.duration < y.duration else 1
    return <int>x.is_key - <int>y.is_key


cdef class FrameIndex:
    """What the packets of a stream say about its frames: one entry per frame, in presentation
    order (see the module's documentation). A scan makes it (``VideoStream.scan()``)::

        frame_index = video_stream.scan()
        target = frame_index.pts_seconds[frame_index.index_at(12.5)]    # the frame shown at 12.5 s
        demuxer.seek(frame_index.key_frame_seconds_for(target))
        packet_decoder.reset()
        # ... then decode forward, dropping the frames before ``target``

    Everything here comes from the stream's packets, not from the container header, so it is
    exact where the header is only a claim (the ``_from_content`` names).
    """

    def __cinit__(self, time_base):
        self.entries = NULL
        self.ends_so_far = NULL
        self.arrays = {}
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
        free(self.ends_so_far)

    def __reduce__(self):
        return (FrameIndex._from_bytes, (self._to_bytes(),))

    def _to_bytes(self):
        """The index as bytes, for pickling and the index cache (``_from_bytes`` reads them back):
        a header (``SERIAL_HEADER``: time base, pts_from_dts, frame count), then each frame's pts,
        duration and byte position (little-endian int64) and key flag (one byte), in presentation
        order."""
        cdef Py_ssize_t i
        header = SERIAL_HEADER.pack(self.time_base_num, self.time_base_den, self.pts_from_dts, self.size)
        cdef bytearray out = bytearray(len(header) + self.size * SERIAL_ENTRY_BYTES)
        out[:len(header)] = header
        cdef Py_ssize_t header_bytes = len(header)
        cdef unsigned char *at = <unsigned char *>out + header_bytes
        for i in range(self.size):
            store_le64(at, self.entries[i].pts)
            store_le64(at + 8, self.entries[i].duration)
            store_le64(at + 16, self.entries[i].pos)
            at[24] = self.entries[i].is_key
            at += SERIAL_ENTRY_BYTES
        return bytes(out)

    @staticmethod
    def _from_bytes(data):
        """The index that ``_to_bytes`` wrote. ValueError for bytes that are not such an index
        (a wrong size, flags other than 0/1, or frames out of presentation order)."""
        cdef const unsigned char[::1] view = memoryview(data).cast("B")
        cdef Py_ssize_t i, count
        if view.shape[0] < SERIAL_HEADER.size:
            raise ValueError("not a serialized FrameIndex: too short")
        num, den, pts_from_dts, count = SERIAL_HEADER.unpack_from(data)
        if count < 0 or view.shape[0] != SERIAL_HEADER.size + count * SERIAL_ENTRY_BYTES or den <= 0:
            raise ValueError("not a serialized FrameIndex: its size does not match its frame count")
        cdef FrameIndex index = FrameIndex((num, den))
        index.pts_from_dts = pts_from_dts
        cdef const unsigned char *at = NULL
        cdef Py_ssize_t header_bytes = SERIAL_HEADER.size
        if count:
            at = &view[0] + header_bytes
        for i in range(count):
            if at[24] > 1 or (i > 0 and load_le64(at) < index.entries[i - 1].pts):
                raise ValueError("not a serialized FrameIndex: a key flag is not 0/1 or the frames are out of order")
            index.append(load_le64(at), load_le64(at + 8), at[24], load_le64(at + 16))
            at += SERIAL_ENTRY_BYTES
        index.finish()
        return index

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
        if self.size == self.capacity:
            grow_entries(&self.entries, &self.capacity, 1024)
        self.entries[self.size].pts = pts
        self.entries[self.size].duration = duration
        self.entries[self.size].is_key = is_key
        self.entries[self.size].key_before = -1
        self.entries[self.size].pos = pos
        self.size += 1
        return 0

    cdef void finish(self) noexcept nogil:
        """Sort into presentation order (compare_entries: ties by the rest of the entry, so an
        index already in that order keeps it) and link every frame to its key frame. Called once,
        when the index is complete (the public arrays and searches assume it is)."""
        cdef Py_ssize_t i
        cdef int64_t last_key = -1
        if self.size > 1:                       # entries is NULL while empty: qsort must not see it
            qsort(self.entries, self.size, sizeof(FrameEntry), compare_entries)
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

    # ---- TorchCodec's building-block API ---------------------------------------------------------

    def __repr__(self):
        return (f"FrameIndex(num_frames={self.size}, key_frames={sum(self.entries[i].is_key for i in range(self.size))}, "
                f"time_base={self.time_base_num}/{self.time_base_den})")

    cdef object cached(self, str which):
        """The public array ``which`` of the current bridge, made the first time it is asked for."""
        name = _outputs.host_bridge()
        key = (which, name)
        if key in self.arrays:
            return self.arrays[key]
        cdef Py_ssize_t i, k = 0, count = self.size
        if which == "key_frame_indices":
            count = 0
            for i in range(self.size):
                count += self.entries[i].is_key
        dtype = {"is_key_frame": "bool", "key_frame_indices": "int64"}.get(which, "float64")
        memory = _outputs.allocate((count,), dtype, bridge=name)
        cdef size_t address = memory.address if count else 0
        cdef uint8_t *flags = <uint8_t *>address
        cdef int64_t *positions = <int64_t *>address
        cdef double *values = <double *>address
        if which == "is_key_frame":
            for i in range(count):
                flags[i] = self.entries[i].is_key != 0
        elif which == "key_frame_indices":
            for i in range(self.size):
                if self.entries[i].is_key:
                    positions[k] = i
                    k += 1
        elif which == "pts_seconds":
            for i in range(count):
                values[i] = self.seconds(self.entries[i].pts)
        else:
            for i in range(count):
                values[i] = self.seconds(self.entries[i].duration)
        data = memory.finish()
        self.arrays[key] = data
        return data

    @property
    def is_key_frame(self):
        """Bool array (N,): whether each frame is a key frame."""
        return self.cached("is_key_frame")

    @property
    def pts_seconds(self):
        """Float64 array (N,): each frame's presentation timestamp, in seconds."""
        return self.cached("pts_seconds")

    @property
    def duration_seconds(self):
        """Float64 array (N,): how long each frame is displayed, in seconds."""
        return self.cached("duration_seconds")

    @property
    def key_frame_indices(self):
        """Int64 array (K,): the indices (into the per-frame arrays) of the key frames."""
        return self.cached("key_frame_indices")

    @property
    def num_frames_from_content(self):
        """The number of frames in the stream."""
        return self.size

    @property
    def begin_stream_seconds_from_content(self):
        """The pts of the first frame, in seconds (IndexError when the stream has no frame)."""
        if self.size == 0:
            raise IndexError("the stream has no frames: it has no first pts")
        return self.seconds(self.entries[0].pts)

    @property
    def end_stream_seconds_from_content(self):
        """The time at which the last frame stops being displayed: the largest pts + duration over
        the stream (durations vary: the frame that ends last need not start last)."""
        self.compute_ends()
        return self.ends_so_far[self.size - 1]

    @property
    def average_fps_from_content(self):
        """The average number of frames per second over the stream."""
        return self.size / (self.end_stream_seconds_from_content - self.begin_stream_seconds_from_content)

    cdef int grew(self) except -1:
        """Entries were added after the arrays and the ends were made (a lazy scan went on): drop them."""
        free(self.ends_so_far)
        self.ends_so_far = NULL
        self.arrays.clear()
        return 0

    cdef int compute_ends(self) except -1:
        """The running maximum of the frames' ends (pts + duration, converted once), in seconds."""
        cdef Py_ssize_t i
        cdef int64_t end = 0
        if self.size == 0:
            raise IndexError("the stream has no frames")
        if self.ends_so_far != NULL:
            return 0
        self.ends_so_far = <double *>malloc(self.size * sizeof(double))
        if self.ends_so_far == NULL:
            raise MemoryError(f"cannot allocate the ends of {self.size} frames")
        for i in range(self.size):
            if i == 0 or self.entries[i].pts + self.entries[i].duration > end:
                end = self.entries[i].pts + self.entries[i].duration
            self.ends_so_far[i] = self.seconds(end)
        return 0

    cdef Py_ssize_t index_at_seconds(self, double seconds) noexcept nogil:
        """The first frame that has not finished playing by ``seconds`` (its end is after it),
        clamped to the last frame: TorchCodec's searchsorted(ends, seconds, right=True)."""
        cdef Py_ssize_t lo = 0, hi = self.size, mid
        if isnan(seconds):
            return self.size - 1                    # NaN sorts after every value
        while lo < hi:
            mid = (lo + hi) // 2
            if self.ends_so_far[mid] <= seconds:
                lo = mid + 1
            else:
                hi = mid
        return lo if lo < self.size else self.size - 1

    def index_at(self, seconds):
        """The index of the frame being displayed at ``seconds`` (the frame whose interval
        [pts, pts + duration) contains it; a time outside the stream gives the first or the last
        frame). ``seconds``: a number (gives an int), or an array/tensor of numbers (gives an int64
        array of the same shape, of the bridge's library)."""
        self.compute_ends()
        if hasattr(seconds, "shape") and hasattr(seconds, "tolist"):
            shape = tuple(seconds.shape)
            values = seconds.reshape(-1).tolist() if len(shape) != 0 else [seconds.tolist()]
            memory = _outputs.allocate(shape, "int64", bridge=_outputs.host_bridge())
            count = len(values)
            if count:
                address = memory.address
                for i in range(count):
                    (<int64_t *><size_t>address)[i] = self.index_at_seconds(float(values[i]))
            return memory.finish()
        return self.index_at_seconds(float(seconds))

    cdef double key_frame_seconds(self, double seconds) noexcept nogil:
        """The pts (seconds) of the last key frame at or before ``seconds``, else the first frame's."""
        cdef Py_ssize_t lo = 0, hi = self.size, mid, key
        while lo < hi:                              # the last frame whose pts is at or before ``seconds``
            mid = (lo + hi) // 2
            if self.seconds(self.entries[mid].pts) <= seconds:
                lo = mid + 1
            else:
                hi = mid
        key = self.entries[lo - 1].key_before if lo > 0 else -1
        return self.seconds(self.entries[key if key >= 0 else 0].pts)

    def key_frame_seconds_for(self, seconds):
        """The timestamp to ``Demuxer.seek`` to in order to reach ``seconds``: that of the last key
        frame at or before it. This is what makes a seek exact (FFmpeg resolves seeks against decode
        timestamps, so seeking to the target itself can land on a key frame displayed after it).
        When no key frame precedes it (one an edit list cut away), the first frame's timestamp. To
        reach frame ``i``, pass ``pts_seconds[i]``."""
        if self.size == 0:
            raise IndexError("the stream has no frames")
        return self.key_frame_seconds(float(seconds))





cdef class IndexBuilder:
    """Builds a stream's FrameIndex from its packets in the order a scan reads them, and knows at
    each packet which entries are final: no later packet can come before them in presentation order.

    While packets keep pts >= dts and their dts never decreases (what a decodable stream has, and
    what FFmpeg's mp4 and Matroska demuxers give), every later packet has a pts at or above the
    last dts, so the entries below it are final: they move from a heap of pending entries to
    ``index``, in order. That lets a decoder use the start of the index before the scan reaches the
    end of the file (the lazy index, VideoDecoder). A packet that breaks the rule ends that:
    ``ordered`` turns False and every later entry waits for ``end``, which then sorts all of them.
    Ties in pts are ordered by the rest of the entry (compare_entries), so an index does not depend
    on how far the scan had gone when it was asked for.

    ``end`` must be called when the packets end. A packet whose pts comes before a final entry (it
    broke the rule after the entries were taken as final) is also sorted there; ``prefix_changed``
    then says whether that moved an entry a caller may have relied on.
    """

    def __cinit__(self, time_base):
        self.index = FrameIndex(time_base)
        self.pending = NULL
        self.pending_size = 0
        self.pending_capacity = 0
        self.final_below = INT64_MIN
        self.last_dts = INT64_MIN
        self.last_key = -1
        self.end_ticks = INT64_MIN
        self.ordered = True
        self.ended = False
        self.prefix_changed = False

    def __dealloc__(self):
        free(self.pending)

    cdef int add(self, int64_t pts, int64_t dts, int64_t duration, bint is_key, int64_t pos) except -1 nogil:
        """One packet of the stream. ``pts``/``dts``: AV_NOPTS_VALUE (INT64_MIN) when the packet has
        none; a packet without pts is indexed at its dts (``index.pts_from_dts``)."""
        cdef FrameEntry entry
        cdef FrameEntry top
        cdef Py_ssize_t size = self.index.size
        entry.pts = pts if pts != INT64_MIN else dts
        entry.duration = duration
        entry.is_key = is_key
        entry.pos = pos
        entry.key_before = -1
        if pts == INT64_MIN:
            self.index.pts_from_dts = True
            self.ordered = False
        if self.ordered and dts != INT64_MIN:
            if pts < dts or dts < self.last_dts:
                self.ordered = False
            else:
                self.last_dts = self.final_below = dts
        if self.ordered and size > 0 and compare_entries(&entry, &self.index.entries[size - 1]) < 0:
            self.ordered = False
        self.push(&entry)
        while self.ordered and self.pending_size > 0 and self.pending[0].pts < self.final_below:
            self.pop(&top)
            self.commit(&top)
        return 0

    cdef int end(self) except -1 nogil:
        """The packets ended: every pending entry is final. Out of order, all entries are sorted
        again (with the final ones: a late packet may belong before them)."""
        cdef FrameEntry top
        cdef Py_ssize_t i, final_count = self.index.size
        cdef FrameEntry *final = NULL
        if self.ended:
            return 0
        self.ended = True
        if self.ordered:
            while self.pending_size > 0:
                self.pop(&top)
                self.commit(&top)
            return 0
        if final_count:                         # kept, to tell whether the sort moved them
            final = <FrameEntry *>malloc(final_count * sizeof(FrameEntry))
            if final == NULL:
                with gil:
                    raise MemoryError(f"cannot sort the frame index of {final_count} frames")
            memcpy(final, self.index.entries, final_count * sizeof(FrameEntry))
        try:
            for i in range(self.pending_size):
                self.index.append(self.pending[i].pts, self.pending[i].duration, self.pending[i].is_key, self.pending[i].pos)
            self.pending_size = 0
            self.index.finish()
            for i in range(final_count):
                if compare_entries(&final[i], &self.index.entries[i]) != 0:
                    self.prefix_changed = True
                    break
        finally:
            free(final)
        for i in range(self.index.size):
            self.reach(&self.index.entries[i])
        return 0

    cdef int commit(self, const FrameEntry *entry) except -1 nogil:
        """Append a final entry to the index, linked to its key frame."""
        self.index.append(entry.pts, entry.duration, entry.is_key, entry.pos)
        if entry.is_key:
            self.last_key = self.index.size - 1
        self.index.entries[self.index.size - 1].key_before = self.last_key
        self.reach(entry)
        return 0

    cdef void reach(self, const FrameEntry *entry) noexcept nogil:
        """Count a final entry's end in ``end_ticks``."""
        if self.end_ticks == INT64_MIN or entry.pts + entry.duration > self.end_ticks:
            self.end_ticks = entry.pts + entry.duration

    cdef int push(self, const FrameEntry *entry) except -1 nogil:
        """Add a pending entry: sifted up the heap while ordered, else only appended."""
        cdef Py_ssize_t child, parent
        if self.pending_size == self.pending_capacity:
            grow_entries(&self.pending, &self.pending_capacity, 64)
        child = self.pending_size
        self.pending_size += 1
        if self.ordered:
            while child > 0:
                parent = (child - 1) // 2
                if compare_entries(&self.pending[parent], entry) <= 0:
                    break
                self.pending[child] = self.pending[parent]
                child = parent
        self.pending[child] = entry[0]
        return 0

    cdef void pop(self, FrameEntry *top) noexcept nogil:
        """Take the heap's first entry (in compare_entries order) into ``top``."""
        cdef Py_ssize_t at = 0, child
        cdef FrameEntry last
        top[0] = self.pending[0]
        self.pending_size -= 1
        if self.pending_size == 0:
            return
        last = self.pending[self.pending_size]
        while True:
            child = 2 * at + 1
            if child >= self.pending_size:
                break
            if child + 1 < self.pending_size and compare_entries(&self.pending[child + 1], &self.pending[child]) < 0:
                child += 1
            if compare_entries(&last, &self.pending[child]) <= 0:
                break
            self.pending[at] = self.pending[child]
            at = child
        self.pending[at] = last
