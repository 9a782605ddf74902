# The CUDA driver, opened at run time through ffnvcodec's loader; the primary context of a device,
# pushed and popped around every entry; kernel modules loaded from the embedded fatbins.
from torchcodec._cuda cimport cuda as cu
from torchcodec._cuda cimport nvcuvid as cuvid


cdef class CudaDriver:
    cdef cu.CudaFunctions *ptr              # libcuda.so.1's functions (owned: cuda_free_functions)
    cdef cu.tcuStreamWaitEvent cuStreamWaitEvent    # the extras: NULL when this driver lacks them
    cdef cu.tcuMemAllocAsync cuMemAllocAsync
    cdef cu.tcuMemFreeAsync cuMemFreeAsync
    cdef cu.tcuDriverGetVersion cuDriverGetVersion
    cdef cu.tcuCtxSynchronize cuCtxSynchronize
    cdef readonly int device_count
    cdef dict contexts                      # index -> CudaContext, one per device
    cdef object lock
    cdef int open(self) except -1


cdef class CudaContext:
    cdef CudaDriver driver
    cdef cu.CUcontext ptr                   # the device's primary context (retained, not created)
    cdef cu.CUdevice device
    cdef readonly int index
    cdef int retain(self, CudaDriver driver, int index) except -1
    cdef int enter(self) except -1 nogil    # push ptr on this thread's context stack
    cdef int exit(self) except -1 nogil     # pop it again; call in a finally after enter()


cdef class CudaModule:
    cdef CudaContext context
    cdef cu.CUmodule ptr
    cdef readonly str name
    cdef bytes image                        # kept alive while the module is loaded
    cdef cu.CUfunction function_ptr(self, const char *name) except NULL


cdef struct FrameSync:
    # How the decoder that owns a frame's device memory and the converters that read it order their
    # work without host waits (AVFrame.opaque of an NVDEC frame points at one; docs/nvdec.md).
    cu.CUevent ready            # recorded by the producer after its last write (NVDEC: the map's
                                # post-processing); a reader's stream waits for it (cuStreamWaitEvent)
    cu.CUevent done             # recorded on the producer's stream with `ready`, then by each reader
                                # after its last read: the memory is handed back once it has passed
    cu.CUstream done_stream     # the stream `done` was last recorded on by a reader
    int readers                 # readers that recorded `done` since the frame was made
    int bits                    # bits per sample of the content (8 to 16; MSB-aligned when stored in 16)
    bint is_copy                # a device RawFrame's own copy (torchcodec._cuda._device_frame), not a
                                # decoder's surface: its memory may be read back once `ready` has passed


cdef class CuvidLibrary:
    cdef cuvid.CuvidFunctions *ptr          # libnvcuvid.so.1's functions (owned)


cdef object cuda_error(CudaDriver driver, cu.CUresult ret, const char *where)
# The ErrorStash builder (torchcodec._core._error.error_builder) of CUresults: the process's driver names them.
cdef object stashed_cuda_error(int ret, const char *where)
cdef int check_cu(CudaDriver driver, cu.CUresult ret, const char *where) except -1
cdef int check_cu_nogil(CudaDriver driver, cu.CUresult ret, const char *where) except -1 nogil
cdef int stream_wait_event(CudaDriver driver, cu.CUstream stream, cu.CUevent event) except -1 nogil
cdef int launch_kernel(CudaDriver driver, cu.CUfunction function, unsigned grid_x, unsigned grid_y,
                       cu.CUstream stream, void *params) except -1 nogil
cpdef CudaDriver load_driver()
