# ffnvcodec's dlopen loader (ffnvcodec/dynlink_loader.h, through torchcodec/_cuda/ffnvcodec_loader.h,
# which keeps the loader's messages) and the part of NVENC's API (ffnvcodec/nvEncodeAPI.h) that
# torchcodec calls itself. C names kept; only what is used.
#
# Build-time only: cimported by torchcodec's own .pyx files (never by a .pxd) and not installed, so
# that ffnvcodec's headers stay out of every downstream extension (ARCHITECTURE decision 7). A .pyx
# that reads the driver's tables (CudaFunctions, CuvidFunctions) or uses NVCUVID's types by value
# cimports this module for their C definitions, even when it calls nothing declared here.
from libc.stdint cimport uint32_t

from torchcodec._cuda.cuda cimport CudaFunctions
from torchcodec._cuda.nvcuvid cimport CuvidFunctions


cdef extern from "ffnvcodec_loader.h" nogil:
    ctypedef struct tc_loader_log:
        char text[256]              # the loader's last message ("Cannot load libcuda.so.1"), "" when none

    int cuda_load_functions(CudaFunctions **functions, void *logctx)
    void cuda_free_functions(CudaFunctions **functions)
    int cuvid_load_functions(CuvidFunctions **functions, void *logctx)
    void cuvid_free_functions(CuvidFunctions **functions)

    # NVENC (nvEncodeAPI.h): libnvidia-encode.so.1's two entry points, the version they are asked
    # for, and what opening an encode session takes, so that a refusal can be told apart: the
    # library missing, a driver whose NVENC API is older than the headers', or a GPU without NVENC.
    ctypedef int NVENCSTATUS
    enum:
        NV_ENC_SUCCESS
        NV_ENC_ERR_NO_ENCODE_DEVICE         # "no encode capable devices were detected"
        NV_ENC_ERR_UNSUPPORTED_DEVICE       # "the device passed by the client is not supported"
        NV_ENC_ERR_INVALID_VERSION
        NV_ENC_ERR_OUT_OF_MEMORY            # also a consumer GPU's session limit
        NV_ENC_DEVICE_TYPE_CUDA
        NVENCAPI_MAJOR_VERSION              # the API version of the headers FFmpeg and torchcodec
        NVENCAPI_MINOR_VERSION              # were built with
        NVENCAPI_VERSION
        NV_ENCODE_API_FUNCTION_LIST_VER
        NV_ENC_OPEN_ENCODE_SESSION_EX_PARAMS_VER

    ctypedef struct NV_ENC_OPEN_ENCODE_SESSION_EX_PARAMS:
        uint32_t version
        int deviceType
        void *device                        # a CUcontext for NV_ENC_DEVICE_TYPE_CUDA
        uint32_t apiVersion

    ctypedef struct NV_ENCODE_API_FUNCTION_LIST:
        uint32_t version
        NVENCSTATUS (*nvEncOpenEncodeSessionEx)(NV_ENC_OPEN_ENCODE_SESSION_EX_PARAMS *params,
                                                void **encoder) noexcept nogil
        NVENCSTATUS (*nvEncDestroyEncoder)(void *encoder) noexcept nogil

    ctypedef struct NvencFunctions:
        NVENCSTATUS (*NvEncodeAPICreateInstance)(NV_ENCODE_API_FUNCTION_LIST *functions) noexcept nogil
        NVENCSTATUS (*NvEncodeAPIGetMaxSupportedVersion)(uint32_t *version) noexcept nogil
        void *lib

    int nvenc_load_functions(NvencFunctions **functions, void *logctx)
    void nvenc_free_functions(NvencFunctions **functions)
