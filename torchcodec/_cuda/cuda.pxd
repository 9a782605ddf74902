# The CUDA driver API as torchcodec uses it, declared here from NVIDIA's documentation without any
# header: what a downstream extension's C gets from these declarations (handles, CUresult, the
# tables as pointers) needs neither cuda.h nor ffnvcodec's headers (ARCHITECTURE decision 7).
# C names kept; only what is used.
#
# The driver is reached through ffnvcodec's dlopen loader: CudaFunctions is its table of function
# pointers, filled by cuda_load_functions from libcuda.so.1. Its members are declared below for
# Cython; their C definition comes from ffnvcodec's dynlink_loader.h, which only torchcodec's own
# modules include (torchcodec/_cuda/ffnvcodec.pxd, not installed). A downstream extension holds the
# tables as pointers to incomplete structs; reading their members needs ffnvcodec's headers.

cdef extern from *:
    # The driver's opaque objects, by their C struct tags (cuda.h and ffnvcodec name them alike), so
    # that pointers to handles are the very types the loader's functions take.
    struct CUctx_st
    struct CUstream_st
    struct CUevent_st
    struct CUfunc_st
    struct CUmod_st

ctypedef int CUresult                    # CUDA_SUCCESS or a CUDA_ERROR_* code
ctypedef int CUdevice
ctypedef unsigned long long CUdeviceptr
ctypedef CUctx_st *CUcontext
ctypedef CUstream_st *CUstream
ctypedef CUevent_st *CUevent
ctypedef CUfunc_st *CUfunction
ctypedef CUmod_st *CUmodule
ctypedef int CUmemorytype

cdef extern from *:
    # The driver's values that torchcodec uses, as plain numbers in C (no header defines them there).
    enum:
        CUDA_SUCCESS "0"
        CU_EVENT_DISABLE_TIMING "2"     # a cuEventCreate flag
        CU_MEMORYTYPE_HOST "1"          # CUmemorytype
        CU_MEMORYTYPE_DEVICE "2"
        TC_STREAM_LEGACY "1"            # CU_STREAM_LEGACY: the legacy default stream's handle
        TC_STREAM_PER_THREAD "2"        # CU_STREAM_PER_THREAD: the per-thread default stream's handle
        TC_STREAM_NON_BLOCKING "1"      # CU_STREAM_NON_BLOCKING, a cuStreamCreate flag
        TC_CUDA_ERROR_NOT_READY "600"   # CUDA_ERROR_NOT_READY: cuEventQuery's "not yet"

cdef extern from *:
    # The driver's struct of a 2-D copy (used by value, so only where ffnvcodec's header is included).
    ctypedef struct CUDA_MEMCPY2D:
        size_t srcXInBytes
        size_t srcY
        CUmemorytype srcMemoryType
        const void *srcHost
        CUdeviceptr srcDevice
        size_t srcPitch
        size_t dstXInBytes
        size_t dstY
        CUmemorytype dstMemoryType
        void *dstHost
        CUdeviceptr dstDevice
        size_t dstPitch
        size_t WidthInBytes
        size_t Height

    # ffnvcodec/dynlink_loader.h's table, by its struct tag
    struct CudaFunctions:
        CUresult (*cuInit)(unsigned int flags) noexcept nogil
        CUresult (*cuDeviceGetCount)(int *count) noexcept nogil
        CUresult (*cuDeviceGet)(CUdevice *device, int ordinal) noexcept nogil
        CUresult (*cuDeviceGetName)(char *name, int length, CUdevice dev) noexcept nogil
        CUresult (*cuDeviceComputeCapability)(int *major, int *minor, CUdevice dev) noexcept nogil
        CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *pctx, CUdevice dev) noexcept nogil
        CUresult (*cuDevicePrimaryCtxRelease)(CUdevice dev) noexcept nogil
        CUresult (*cuCtxPushCurrent)(CUcontext ctx) noexcept nogil
        CUresult (*cuCtxPopCurrent)(CUcontext *pctx) noexcept nogil
        CUresult (*cuModuleLoadData)(CUmodule *module, const void *image) noexcept nogil
        CUresult (*cuModuleUnload)(CUmodule module) noexcept nogil
        CUresult (*cuModuleGetFunction)(CUfunction *hfunc, CUmodule hmod, const char *name) noexcept nogil
        CUresult (*cuLaunchKernel)(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                   unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                                   unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                                   void **kernelParams, void **extra) noexcept nogil
        CUresult (*cuMemAlloc)(CUdeviceptr *dptr, size_t bytesize) noexcept nogil
        CUresult (*cuMemFree)(CUdeviceptr dptr) noexcept nogil
        CUresult (*cuMemsetD8Async)(CUdeviceptr dstDevice, unsigned char uc, size_t N, CUstream hStream) noexcept nogil
        CUresult (*cuMemcpy2D)(const CUDA_MEMCPY2D *pcopy) noexcept nogil
        CUresult (*cuMemcpy2DAsync)(const CUDA_MEMCPY2D *pcopy, CUstream hStream) noexcept nogil
        CUresult (*cuEventCreate)(CUevent *phEvent, unsigned int flags) noexcept nogil
        CUresult (*cuEventRecord)(CUevent hEvent, CUstream hStream) noexcept nogil
        CUresult (*cuEventSynchronize)(CUevent hEvent) noexcept nogil
        CUresult (*cuEventQuery)(CUevent hEvent) noexcept nogil
        CUresult (*cuEventDestroy)(CUevent hEvent) noexcept nogil
        CUresult (*cuStreamCreate)(CUstream *phStream, unsigned int flags) noexcept nogil
        CUresult (*cuStreamSynchronize)(CUstream hStream) noexcept nogil
        CUresult (*cuStreamDestroy)(CUstream hStream) noexcept nogil
        CUresult (*cuGetErrorName)(CUresult error, const char **pstr) noexcept nogil
        CUresult (*cuGetErrorString)(CUresult error, const char **pstr) noexcept nogil
        void *lib


# Driver functions that the loader's table lacks, looked up with dlsym on the same libcuda handle.
ctypedef CUresult (*tcuStreamWaitEvent)(CUstream hStream, CUevent hEvent, unsigned int flags) noexcept nogil
ctypedef CUresult (*tcuMemAllocAsync)(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) noexcept nogil
ctypedef CUresult (*tcuMemFreeAsync)(CUdeviceptr dptr, CUstream hStream) noexcept nogil
ctypedef CUresult (*tcuDriverGetVersion)(int *version) noexcept nogil
ctypedef CUresult (*tcuCtxSynchronize)() noexcept nogil
