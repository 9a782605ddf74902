"""HostArray: host memory that another object owns, described as a strided array.

The building blocks hand out the decoder's own samples without a copy (``RawFrame.planes``): each
plane is a HostArray over the frame's buffer, holding a reference to the frame so that the memory
lives as long as any array made from it. The output adapters turn it into the bridge's array type
(numpy through the buffer protocol or ``__array_interface__``; torch over its byte ``extent``,
viewed with its strides; jax through numpy), so the result is a native array viewing FFmpeg's
memory.
"""
from cpython.buffer cimport PyBUF_FORMAT, PyBUF_ND, PyBUF_STRIDES, PyBUF_WRITABLE
from libc.stdlib cimport free

cdef extern from "stdlib.h" nogil:
    int posix_memalign(void **memptr, size_t alignment, size_t size)

cdef extern from "sys/mman.h" nogil:
    int madvise(void *addr, size_t length, int advice)
    int MADV_HUGEPAGE

DTYPES = {"uint8": (b"B", 1, "|u1"), "uint16": (b"H", 2, "<u2"), "int16": (b"h", 2, "<i2"), "int32": (b"i", 4, "<i4"),
          "int64": (b"q", 8, "<i8"), "float32": (b"f", 4, "<f4"), "float64": (b"d", 8, "<f8")}


cdef HostArray host_array(object owner, char *data, int ndim, const Py_ssize_t *shape,
                          const Py_ssize_t *strides, str dtype, bint readonly):
    """A HostArray of ``ndim`` dimensions (shape, byte strides) at ``data``, kept alive by ``owner``."""
    if not 0 < ndim <= HOST_ARRAY_MAX_NDIM:
        raise ValueError(f"a HostArray has 1 to {HOST_ARRAY_MAX_NDIM} dimensions, not {ndim}")
    cdef HostArray array = HostArray.__new__(HostArray)
    cdef int i
    array.base = owner
    array.data = data
    array.ndim = ndim
    array.format, array.itemsize, _ = DTYPES[dtype]
    array.dtype = dtype
    array.readonly = readonly
    for i in range(ndim):
        array.dims[i] = shape[i]
        array.steps[i] = strides[i]
    return array


cdef class HostArray:
    """A strided view of host memory owned by another object (see the module's documentation)."""

    def __init__(self, *args, **kwargs):
        raise TypeError("HostArray objects are made by torchcodec (e.g. RawFrame.planes), not directly")

    @property
    def shape(self):
        return tuple(self.dims[i] for i in range(self.ndim))

    @property
    def strides(self):
        """Bytes between consecutive elements along each dimension."""
        return tuple(self.steps[i] for i in range(self.ndim))

    @property
    def address(self):
        return <size_t>self.data

    @property
    def owner(self):
        """The object that owns the memory."""
        return self.base

    @property
    def extent(self):
        """(low, high): the byte addresses that the elements lie within (strides may be negative)."""
        cdef Py_ssize_t low = 0, high = 0, i
        for i in range(self.ndim):
            if self.dims[i] == 0:
                return <size_t>self.data, <size_t>self.data
            if self.steps[i] < 0:
                low += (self.dims[i] - 1) * self.steps[i]
            else:
                high += (self.dims[i] - 1) * self.steps[i]
        return <size_t>(self.data + low), <size_t>(self.data + high + self.itemsize)

    def bytes_view(self):
        """A 1-D uint8 HostArray over ``extent``, kept alive by the same owner (for libraries that
        wrap flat memory, then view it with this array's strides)."""
        low, high = self.extent
        cdef Py_ssize_t size = high - low
        cdef Py_ssize_t step = 1
        return host_array(self.base, <char *><size_t>low, 1, &size, &step, "uint8", self.readonly)

    def __len__(self):
        return self.dims[0]

    def __repr__(self):
        return f"HostArray(shape={self.shape}, strides={self.strides}, dtype={self.dtype})"

    @property
    def __array_interface__(self):
        return {"version": 3, "shape": self.shape, "typestr": DTYPES[self.dtype][2],
                "data": (<size_t>self.data, bool(self.readonly)), "strides": self.strides}

    def __getbuffer__(self, Py_buffer *view, int flags):
        cdef Py_ssize_t i, expected
        if (flags & PyBUF_WRITABLE) and self.readonly:
            raise BufferError("this HostArray is read-only")
        if (flags & PyBUF_STRIDES) != PyBUF_STRIDES:
            expected = self.itemsize               # without strides, the consumer assumes C order
            for i in range(self.ndim - 1, -1, -1):
                if self.dims[i] > 1 and self.steps[i] != expected:
                    raise BufferError("this HostArray is strided: ask for a strided buffer (PyBUF_STRIDES)")
                expected *= self.dims[i]
        view.buf = self.data
        view.obj = self
        view.len = self.itemsize
        for i in range(self.ndim):
            view.len *= self.dims[i]
        view.readonly = self.readonly
        view.itemsize = self.itemsize
        view.format = <char *>self.format if (flags & PyBUF_FORMAT) else NULL
        view.ndim = self.ndim
        view.shape = self.dims if (flags & PyBUF_ND) == PyBUF_ND else NULL
        view.strides = self.steps if (flags & PyBUF_STRIDES) == PyBUF_STRIDES else NULL
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer *view):
        pass


# ---- the output pool -------------------------------------------------------------------------------
#
# glibc hands every allocation above 32 MiB to the kernel with mmap and back with munmap when it is
# freed, so each new batch of frames (32 frames of 1080p RGB: 199 MB) faults in and zeroes fresh
# pages: 35 ms per batch, against 10 ms to write memory used before (measured: a 199 MB batch
# takes 22% longer than 32 single frames, which glibc recycles). The pool keeps the memory of large
# outputs after their last array is freed and hands it to the next output of about the same size
# (an output that none fits frees the idle blocks first).
# Outputs below POOL_MIN_BYTES are left to the bridge's library (glibc recycles them itself).

cdef enum:
    POOL_SLOTS = 4                  # idle blocks kept at most
POOL_MIN_BYTES = 32 << 20           # glibc's largest mmap threshold: smaller outputs are recycled by malloc
cdef size_t POOL_ALIGN = 2 << 20    # a transparent huge page: fewer page faults on first use
cdef size_t pool_limit = 512 << 20  # idle bytes kept at most (set_output_pool)
cdef char *idle_data[POOL_SLOTS]
cdef size_t idle_size[POOL_SLOTS]
cdef int idle_count = 0
cdef size_t idle_bytes = 0
cdef unsigned long long pool_reused = 0, pool_allocated = 0


cdef char *pool_remove(int k) noexcept nogil:
    """Take idle block ``k`` out of the pool (the others keep their order, oldest first)."""
    global idle_count, idle_bytes
    cdef char *data = idle_data[k]
    cdef int i
    idle_bytes -= idle_size[k]
    for i in range(k + 1, idle_count):
        idle_data[i - 1], idle_size[i - 1] = idle_data[i], idle_size[i]
    idle_count -= 1
    return data


cdef void pool_trim(size_t keep_bytes, int keep_count) noexcept nogil:
    """Free the oldest idle blocks until at most ``keep_count`` blocks and ``keep_bytes`` remain."""
    while idle_count and (idle_count > keep_count or idle_bytes > keep_bytes):
        free(pool_remove(0))


cdef void pool_release(char *data, size_t size) noexcept nogil:
    """Keep a block whose last array is gone, the oldest idle blocks making room for it; free it
    when it is larger than the pool."""
    global idle_count, idle_bytes
    if size > pool_limit:
        free(data)
        return
    pool_trim(pool_limit - size, POOL_SLOTS - 1)
    idle_data[idle_count], idle_size[idle_count] = data, size
    idle_count += 1
    idle_bytes += size


cdef char *pool_take(size_t nbytes, size_t *size) noexcept nogil:
    """An idle block of at least ``nbytes`` and at most a quarter more (the smallest that fits; its
    size in ``size``), or a new one, allocated after the idle blocks are freed (so that they never
    add to a peak of memory); NULL when memory runs out."""
    global pool_reused, pool_allocated
    cdef int i, best = -1
    cdef char *data = NULL
    for i in range(idle_count):
        if nbytes <= idle_size[i] <= nbytes + nbytes // 4 and (best < 0 or idle_size[i] < idle_size[best]):
            best = i
    if best >= 0:
        size[0] = idle_size[best]
        pool_reused += 1
        return pool_remove(best)
    pool_trim(0, 0)
    size[0] = (nbytes + POOL_ALIGN - 1) // POOL_ALIGN * POOL_ALIGN
    if posix_memalign(<void **>&data, POOL_ALIGN, size[0]) != 0:
        return NULL
    madvise(data, size[0], MADV_HUGEPAGE)       # advice only: a kernel without THP ignores it
    pool_allocated += 1
    return data


cdef class PooledBlock:
    """Host memory from the output pool: back to the pool when the last array over it is freed."""
    cdef char *data
    cdef size_t size

    def __init__(self, *args, **kwargs):
        raise TypeError("PooledBlock objects are made by torchcodec's output allocation, not directly")

    def __dealloc__(self):
        if self.data != NULL:
            pool_release(self.data, self.size)


def pooled_array(tuple shape, str dtype):
    """A C-contiguous HostArray of ``shape`` and ``dtype`` (a name of DTYPES) in memory from the
    output pool, writable, uninitialised (as ``numpy.empty``); None when the output is smaller than
    POOL_MIN_BYTES, of a dtype a HostArray cannot hold (bool), or the pool is off. MemoryError when
    memory runs out."""
    cdef Py_ssize_t dims[HOST_ARRAY_MAX_NDIM]
    cdef Py_ssize_t steps[HOST_ARRAY_MAX_NDIM]
    cdef int ndim = len(shape), i
    if pool_limit == 0 or not 0 < ndim <= HOST_ARRAY_MAX_NDIM or dtype not in DTYPES:
        return None
    cdef Py_ssize_t nbytes = DTYPES[dtype][1]
    for i in range(ndim - 1, -1, -1):
        dims[i] = shape[i]
        steps[i] = nbytes
        nbytes *= dims[i]
    if nbytes < POOL_MIN_BYTES or nbytes > <Py_ssize_t>pool_limit:
        return None
    cdef PooledBlock block = PooledBlock.__new__(PooledBlock)
    block.data = pool_take(nbytes, &block.size)
    if block.data == NULL:
        raise MemoryError(f"cannot allocate {nbytes} bytes for an output of shape {shape}")
    return host_array(block, block.data, ndim, dims, steps, dtype, False)


def set_output_pool(size_t max_bytes):
    """Keep at most ``max_bytes`` of freed large outputs (0: none); idle blocks beyond it are freed now."""
    global pool_limit
    pool_limit = max_bytes
    pool_trim(pool_limit, POOL_SLOTS)


def output_pool_limit():
    """The idle bytes the pool may keep (``set_output_pool``)."""
    return pool_limit


def release_idle():
    """Free every idle block now (the pool stays on); the bytes freed."""
    cdef size_t freed = idle_bytes
    pool_trim(0, 0)
    return freed


def output_pool_stats():
    """(idle blocks, idle bytes, outputs that reused a block, blocks allocated): for tests and tools/bench.py."""
    return idle_count, idle_bytes, pool_reused, pool_allocated
