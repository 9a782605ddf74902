# cython: annotation_typing=False
"""The output pool: the memory of large CPU outputs, kept after their last array is freed for the
next output of about the same size (``torchcodec.set_output_pool``, ``TORCHCODEC_OUTPUT_POOL``).

``torchcodec._outputs.allocate`` takes numpy's and torch's CPU outputs of 256 KiB or more from
here (``pooled_array``: a HostArray over a pooled block); the memory limit
(torchcodec._memory) frees the idle blocks (``release_idle``) before it refuses a request.
"""
import numbers
import os
import warnings

from libc.stdlib cimport free

from torchcodec._outputs._host_array cimport HOST_ARRAY_MAX_NDIM, host_array

from torchcodec._outputs._host_array import DTYPES
from torchcodec._sizes import parse_size

cdef extern from "stdlib.h" nogil:
    int posix_memalign(void **memptr, size_t alignment, size_t size)

cdef extern from "sys/mman.h" nogil:
    int madvise(void *addr, size_t length, int advice)
    int MADV_HUGEPAGE


# Fresh memory costs page faults (2.6 us each on the project's VM): an output written into memory
# used before is cheaper than one in memory the kernel has to fault in and zero. glibc does not
# keep freed memory for the next output: it hands every allocation above 32 MiB to the kernel with
# mmap and back with munmap when it is freed, so each new batch of frames (32 frames of 1080p RGB:
# 199 MB) faults in and zeroes fresh pages (35 ms per batch, against 10 ms to write memory used
# before); and when many medium outputs are freed together (100 one-second audio ranges of 384 KB),
# the top of its heap is trimmed back to the kernel, so the next 100 fault in again (13,600 faults,
# half of the time of those 100 ranges). The pool keeps the memory of outputs after their last array
# is freed and hands it to the next output of about the same size, in two classes:
#   - large (POOL_MIN_BYTES and up): at most 4 blocks, up to the pool's size in bytes; 2 MiB aligned,
#     transparent huge pages advised; an output that no idle block fits frees the idle blocks first,
#     so that they never add to a peak of memory;
#   - medium (MEDIUM_MIN_BYTES up to POOL_MIN_BYTES): at most MEDIUM_SLOTS blocks and MEDIUM_LIMIT
#     bytes (or the pool's size, if smaller); an output that none fits gets new memory, the idle
#     blocks staying for the sizes they fit.
# Outputs below MEDIUM_MIN_BYTES are left to the bridge's library (malloc recycles them itself).

cdef enum:
    POOL_SLOTS = 4                  # idle large blocks kept at most
    MEDIUM_SLOTS = 128              # idle medium blocks kept at most
POOL_MIN_BYTES = 32 << 20           # glibc's largest mmap threshold: the large class from here
MEDIUM_MIN_BYTES = 256 << 10        # above glibc's default mmap threshold: the medium class from here
cdef size_t MEDIUM_LIMIT = 64 << 20 # idle medium bytes kept at most
cdef size_t POOL_ALIGN = 2 << 20    # a transparent huge page: fewer page faults on first use
cdef size_t MEDIUM_ALIGN = 4096     # a page: a medium block is whole pages
cdef unsigned long long pool_reused = 0, pool_allocated = 0


cdef struct Pool:
    char *data[MEDIUM_SLOTS]        # idle blocks, oldest first
    size_t size[MEDIUM_SLOTS]
    int count
    int slots                       # blocks kept at most
    size_t bytes
    size_t limit                    # idle bytes kept at most (the large class's: set_output_pool)
    size_t align
    bint large                      # huge pages advised; a miss frees the idle blocks first


cdef Pool large_pool, medium_pool     # static: no idle blocks yet
large_pool.slots, large_pool.align, large_pool.large = POOL_SLOTS, POOL_ALIGN, True
medium_pool.slots, medium_pool.align, medium_pool.large = MEDIUM_SLOTS, MEDIUM_ALIGN, False


cdef void set_limits(size_t max_bytes) noexcept nogil:
    """The pool's size: the large class's bound, and the medium class's up to MEDIUM_LIMIT."""
    large_pool.limit = max_bytes
    medium_pool.limit = min(max_bytes, MEDIUM_LIMIT)


set_limits(512 << 20)


cdef char *pool_remove(Pool *pool, int k) noexcept nogil:
    """Take idle block ``k`` out of ``pool`` (the others keep their order, oldest first)."""
    cdef char *data = pool.data[k]
    cdef int i
    pool.bytes -= pool.size[k]
    for i in range(k + 1, pool.count):
        pool.data[i - 1], pool.size[i - 1] = pool.data[i], pool.size[i]
    pool.count -= 1
    return data


cdef void pool_trim(Pool *pool, size_t keep_bytes, int keep_count) noexcept nogil:
    """Free the oldest idle blocks until at most ``keep_count`` blocks and ``keep_bytes`` remain."""
    while pool.count and (pool.count > keep_count or pool.bytes > keep_bytes):
        free(pool_remove(pool, 0))


cdef void pool_release(Pool *pool, char *data, size_t size) noexcept nogil:
    """Keep a block whose last array is gone, the oldest idle blocks making room for it; free it
    when it is larger than the pool."""
    if size > pool.limit:
        free(data)
        return
    pool_trim(pool, pool.limit - size, pool.slots - 1)
    pool.data[pool.count], pool.size[pool.count] = data, size
    pool.count += 1
    pool.bytes += size


cdef char *pool_take(Pool *pool, size_t nbytes, size_t *size) noexcept nogil:
    """An idle block of at least ``nbytes`` and at most a quarter more (the smallest that fits; its
    size in ``size``), or a new one (for the large class allocated after the idle blocks are freed,
    so that they never add to a peak of memory); NULL when memory runs out."""
    global pool_reused, pool_allocated
    cdef int i, best = -1
    cdef char *data = NULL
    for i in range(pool.count):
        if nbytes <= pool.size[i] <= nbytes + nbytes // 4 and (best < 0 or pool.size[i] < pool.size[best]):
            best = i
    if best >= 0:
        size[0] = pool.size[best]
        pool_reused += 1
        return pool_remove(pool, best)
    if pool.large:
        pool_trim(pool, 0, 0)
    size[0] = (nbytes + pool.align - 1) // pool.align * pool.align
    if posix_memalign(<void **>&data, pool.align, size[0]) != 0:
        return NULL
    if pool.large:
        madvise(data, size[0], MADV_HUGEPAGE)       # advice only: a kernel without THP ignores it
    pool_allocated += 1
    return data


cdef class PooledBlock:
    """Host memory from the output pool: back to its class of the pool when the last array over it is freed."""
    cdef char *data
    cdef size_t size
    cdef Pool *pool

    def __init__(self, *args, **kwargs):
        raise TypeError("PooledBlock objects are made by torchcodec's output allocation, not directly")

    def __dealloc__(self):
        if self.data != NULL:
            pool_release(self.pool, self.data, self.size)


cdef object take_array(tuple shape, str dtype):
    """A C-contiguous HostArray of ``shape`` and ``dtype`` (a name of DTYPES) in memory from the
    output pool, writable, uninitialised (as ``numpy.empty``); None when the output is smaller than
    MEDIUM_MIN_BYTES or larger than its class of the pool, of a dtype a HostArray cannot hold (bool),
    or the pool is off. MemoryError when memory runs out."""
    cdef Py_ssize_t dims[HOST_ARRAY_MAX_NDIM]
    cdef Py_ssize_t steps[HOST_ARRAY_MAX_NDIM]
    cdef int ndim = len(shape), i
    if large_pool.limit == 0 or not 0 < ndim <= HOST_ARRAY_MAX_NDIM or dtype not in DTYPES:
        return None
    cdef Py_ssize_t nbytes = DTYPES[dtype][1]
    for i in range(ndim - 1, -1, -1):
        dims[i] = shape[i]
        steps[i] = nbytes
        nbytes *= dims[i]
    cdef Pool *pool = &large_pool if nbytes >= POOL_MIN_BYTES else &medium_pool
    if nbytes < MEDIUM_MIN_BYTES or nbytes > <Py_ssize_t>pool.limit:
        return None
    cdef PooledBlock block = PooledBlock.__new__(PooledBlock)
    block.pool = pool
    block.data = pool_take(pool, nbytes, &block.size)
    if block.data == NULL:
        raise MemoryError(f"cannot allocate {nbytes} bytes for an output of shape {shape}")
    return host_array(block, block.data, ndim, dims, steps, dtype, False)


cdef void set_pool_size(size_t max_bytes) noexcept nogil:
    """Keep at most ``max_bytes`` of freed large outputs (0: none), and of medium ones at most
    MEDIUM_LIMIT of it; idle blocks beyond it are freed now."""
    set_limits(max_bytes)
    pool_trim(&large_pool, large_pool.limit, large_pool.slots)
    pool_trim(&medium_pool, medium_pool.limit, medium_pool.slots)


def release_idle():
    """Free every idle block now (the pool stays on); the bytes freed."""
    cdef size_t freed = large_pool.bytes + medium_pool.bytes
    pool_trim(&large_pool, 0, 0)
    pool_trim(&medium_pool, 0, 0)
    return freed


def output_pool_stats():
    """The pool's counters (docs/guide/performance.md): (idle blocks, idle bytes, outputs that
    reused a block, blocks allocated), both classes together."""
    return (large_pool.count + medium_pool.count, large_pool.bytes + medium_pool.bytes, pool_reused,
            pool_allocated)


# ---- the setting ---------------------------------------------------------------------------------

POOL_VARIABLE = "TORCHCODEC_OUTPUT_POOL"
DEFAULT_POOL_BYTES = 512 << 20
_pool_configured = False                # set_output_pool has run (or the environment was read)


def set_output_pool(nbytes: int) -> None:
    """Keep up to ``nbytes`` bytes of freed CPU outputs for reuse (process-wide; 0 turns the pool
    off and frees what it holds).

    An output of 256 KiB or more (a frame of 480p RGB and up, a second of stereo audio, a batch of
    frames) is allocated by torchcodec instead of the bridge's ``empty``, and when its last array
    is freed its memory waits for the next output of about the same size (at most a quarter
    larger), which then skips the kernel's page faults and zeroing of fresh memory. Large outputs
    (32 MiB or more: 32 frames of 1080p RGB are 199 MB): at most four blocks wait, the oldest freed
    first, and an output that none of them fits frees them all before it is allocated, so that
    idle memory never adds to a peak. Medium ones (256 KiB to 32 MiB): at most 128 blocks and
    64 MiB (or ``nbytes``, if smaller) wait, the oldest freed first. The default, 512 MiB, also
    comes from ``TORCHCODEC_OUTPUT_POOL`` (bytes, or ``"1G"``-style; ``0`` turns it off). Smaller
    outputs are the bridge's (``numpy.empty``, ``torch.empty``), whose allocator recycles them.
    Under the default memory limit (the memory available now), a request that would be refused
    first frees the idle blocks.
    """
    global _pool_configured
    if isinstance(nbytes, bool) or not isinstance(nbytes, numbers.Integral) or nbytes < 0:
        raise ValueError(f"the output pool's size must be an int >= 0 (bytes), got {nbytes!r}")
    set_pool_size(int(nbytes))
    _pool_configured = True


def get_output_pool() -> int:
    """The bytes of freed outputs the pool may keep (see ``set_output_pool``; 0: off)."""
    if not _pool_configured:
        set_output_pool(_environment_pool())
    return large_pool.limit


def pooled_array(tuple shape, str dtype):
    """A HostArray for a CPU output of ``shape`` and ``dtype`` from the pool, or None (too small, or
    off): see ``take_array``."""
    if not _pool_configured:
        set_output_pool(_environment_pool())
    return take_array(shape, dtype)


def _environment_pool() -> int:
    text = os.environ.get(POOL_VARIABLE, "").strip()
    if not text:
        return DEFAULT_POOL_BYTES
    nbytes = parse_size(text)
    if nbytes is not None:
        return nbytes
    warnings.warn(f"ignoring {POOL_VARIABLE}={text!r}: it must be a number of bytes, optionally with a K, M, G or "
                  f"T suffix (powers of 1024), e.g. '1G', or 0 to turn the pool off", RuntimeWarning, stacklevel=4)
    return DEFAULT_POOL_BYTES
