# The CUDA driver API as ffnvcodec's loader exposes it: a table of function pointers (CudaFunctions)
# filled by cuda_load_functions from libcuda.so.1, opened with dlopen. C names kept; only what is used.
# torchcodec/cuda_loader.h includes ffnvcodec/dynlink_loader.h with the loader's messages captured.

cdef extern from "torchcodec/cuda_loader.h" nogil:
    ctypedef struct tc_loader_log:
        char text[256]

    # ffnvcodec/dynlink_cuda.h
    ctypedef int CUresult
    ctypedef int CUdevice
    ctypedef unsigned long long CUdeviceptr
    ctypedef struct CUctx_st
    ctypedef CUctx_st *CUcontext
    ctypedef struct CUstream_st
    ctypedef CUstream_st *CUstream
    ctypedef struct CUevent_st
    ctypedef CUevent_st *CUevent
    ctypedef struct CUfunc_st
    ctypedef CUfunc_st *CUfunction
    ctypedef struct CUmod_st
    ctypedef CUmod_st *CUmodule

    enum:
        CUDA_SUCCESS
        CU_EVENT_DISABLE_TIMING

    ctypedef enum CUmemorytype:
        CU_MEMORYTYPE_HOST
        CU_MEMORYTYPE_DEVICE
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

    # ffnvcodec/dynlink_loader.h
    ctypedef struct CudaFunctions:
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

    int cuda_load_functions(CudaFunctions **functions, void *logctx)
    void cuda_free_functions(CudaFunctions **functions)


# Driver functions that the loader's table lacks, looked up with dlsym on the same libcuda handle.
ctypedef CUresult (*tcuStreamWaitEvent)(CUstream hStream, CUevent hEvent, unsigned int flags) noexcept nogil
ctypedef CUresult (*tcuMemAllocAsync)(CUdeviceptr *dptr, size_t bytesize, CUstream hStream) noexcept nogil
ctypedef CUresult (*tcuMemFreeAsync)(CUdeviceptr dptr, CUstream hStream) noexcept nogil
ctypedef CUresult (*tcuDriverGetVersion)(int *version) noexcept nogil
ctypedef CUresult (*tcuCtxSynchronize)() noexcept nogil


# Values of cuda.h that ffnvcodec's header leaves out.
cdef enum:
    TC_STREAM_LEGACY = 1            # CU_STREAM_LEGACY: the legacy default stream's handle
    TC_STREAM_PER_THREAD = 2        # CU_STREAM_PER_THREAD: the per-thread default stream's handle
    TC_STREAM_NON_BLOCKING = 1      # CU_STREAM_NON_BLOCKING, a cuStreamCreate flag
    TC_CUDA_ERROR_NOT_READY = 600   # CUDA_ERROR_NOT_READY: cuEventQuery's "not yet"
