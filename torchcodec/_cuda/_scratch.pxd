# Device memory that a converter owns and its kernels read, reused from frame to frame on the
# converter's stream (which may change between frames: set_stream): before it is overwritten, the
# stream waits for the last launch that read it; before a launch on another stream reads what an
# earlier stream wrote there, that stream waits for it too. No host waits, except before it grows.
from libc.string cimport memset

from torchcodec._cuda cimport cuda as cu
from torchcodec._cuda._driver cimport CudaDriver, check_cu_nogil, stream_wait_event


cdef struct Scratch:
    cu.CUdeviceptr ptr
    size_t size
    cu.CUevent read             # recorded on read_stream after the last launch that read it
    cu.CUstream read_stream
    bint busy                   # `read` was recorded


cdef inline int scratch_init(CudaDriver driver, Scratch *s) except -1 nogil:
    """An empty Scratch with its event (call with the context pushed)."""
    s.ptr, s.size, s.read, s.read_stream, s.busy = 0, 0, NULL, NULL, False
    return check_cu_nogil(driver, driver.ptr.cuEventCreate(&s.read, cu.CU_EVENT_DISABLE_TIMING), "cuEventCreate")


cdef inline int scratch_take(CudaDriver driver, cu.CUstream stream, Scratch *s, size_t needed) except -1 nogil:
    """Make ``s`` ready to be overwritten on ``stream`` with ``needed`` bytes: the stream waits for
    the last launch that read it; when it must grow, the host waits instead and it is reallocated."""
    if s.busy:
        if needed > s.size:
            check_cu_nogil(driver, driver.ptr.cuEventSynchronize(s.read), "cuEventSynchronize")
        else:
            stream_wait_event(driver, stream, s.read)
    if needed > s.size:
        if s.ptr:
            check_cu_nogil(driver, driver.ptr.cuMemFree(s.ptr), "cuMemFree")
            s.ptr, s.size = 0, 0
        check_cu_nogil(driver, driver.ptr.cuMemAlloc(&s.ptr, needed), "cuMemAlloc")
        s.size = needed
    return 0


cdef inline int scratch_follow(CudaDriver driver, cu.CUstream stream, Scratch *s) except -1 nogil:
    """Before ``stream`` reads ``s`` as it is: wait for its last reader when that ran on another
    stream (so that what was written before that reader is there, and `read` covers both)."""
    if s.busy and s.read_stream != stream:
        stream_wait_event(driver, stream, s.read)
    return 0


cdef inline int scratch_read(CudaDriver driver, cu.CUstream stream, Scratch *s) except -1 nogil:
    """After the launches on ``stream`` that read ``s``."""
    check_cu_nogil(driver, driver.ptr.cuEventRecord(s.read, stream), "cuEventRecord")
    s.read_stream = stream
    s.busy = True
    return 0


cdef inline void scratch_free(CudaDriver driver, Scratch *s) noexcept nogil:
    """Free ``s`` once its last reader is done (call with the context pushed); never raises."""
    if s.ptr:
        if s.busy:
            driver.ptr.cuEventSynchronize(s.read)
        driver.ptr.cuMemFree(s.ptr)
        s.ptr = 0
    if s.read != NULL:
        driver.ptr.cuEventDestroy(s.read)
        s.read = NULL


cdef inline int scratch_upload(CudaDriver driver, cu.CUstream stream, Scratch *s, const void *data,
                               size_t size) except -1 nogil:
    """Overwrite ``s`` with ``size`` bytes of host memory at ``data`` on ``stream`` (scratch_take
    first). From pageable memory the copy returns once the driver has the bytes: ``data`` can be
    freed at once."""
    cdef cu.CUDA_MEMCPY2D copy
    scratch_take(driver, stream, s, size)
    memset(&copy, 0, sizeof(copy))
    copy.srcMemoryType = cu.CU_MEMORYTYPE_HOST
    copy.srcHost = data
    copy.srcPitch = size
    copy.dstMemoryType = cu.CU_MEMORYTYPE_DEVICE
    copy.dstDevice = s.ptr
    copy.dstPitch = size
    copy.WidthInBytes = size
    copy.Height = 1
    return check_cu_nogil(driver, driver.ptr.cuMemcpy2DAsync(&copy, stream), "cuMemcpy2DAsync")
