# nvJPEG's C API (libnvjpeg.so.N of the CUDA toolkit and of the nvidia-nvjpeg wheels), declared here
# from NVIDIA's documentation: no nvjpeg.h is needed to build. The library is opened with dlopen at
# run time (torchcodec/_cuda/_nvjpeg.pyx), so the functions are pointer types filled by dlsym into
# NvjpegFunctions; C names kept, only what is used. A cudaStream_t is a CUstream.
from torchcodec._cuda.cuda cimport CUstream

ctypedef int nvjpegStatus_t
ctypedef int nvjpegBackend_t
ctypedef int nvjpegChromaSubsampling_t
ctypedef int nvjpegOutputFormat_t
ctypedef int nvjpegInputFormat_t
ctypedef int libraryPropertyType

# Opaque handles (pointers to nvJPEG's structs), as untyped pointers.
ctypedef void *nvjpegHandle_t
ctypedef void *nvjpegJpegState_t
ctypedef void *nvjpegJpegStream_t
ctypedef void *nvjpegEncoderState_t
ctypedef void *nvjpegEncoderParams_t

cdef enum:
    NVJPEG_MAX_COMPONENT = 4
    NVJPEG_FLAGS_DEFAULT = 0

    # nvjpegStatus_t
    NVJPEG_STATUS_SUCCESS = 0
    NVJPEG_STATUS_NOT_INITIALIZED = 1
    NVJPEG_STATUS_INVALID_PARAMETER = 2
    NVJPEG_STATUS_BAD_JPEG = 3
    NVJPEG_STATUS_JPEG_NOT_SUPPORTED = 4
    NVJPEG_STATUS_ALLOCATOR_FAILURE = 5
    NVJPEG_STATUS_EXECUTION_FAILED = 6
    NVJPEG_STATUS_ARCH_MISMATCH = 7
    NVJPEG_STATUS_INTERNAL_ERROR = 8
    NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED = 9
    NVJPEG_STATUS_INCOMPLETE_BITSTREAM = 10

    # nvjpegBackend_t
    NVJPEG_BACKEND_DEFAULT = 0
    NVJPEG_BACKEND_HARDWARE = 3

    # nvjpegChromaSubsampling_t
    NVJPEG_CSS_444 = 0
    NVJPEG_CSS_GRAY = 6
    NVJPEG_CSS_UNKNOWN = -1

    # nvjpegOutputFormat_t: planar outputs, one plane per channel
    NVJPEG_OUTPUT_Y = 2
    NVJPEG_OUTPUT_RGB = 3

    # nvjpegInputFormat_t
    NVJPEG_INPUT_RGB = 3            # planar
    NVJPEG_INPUT_RGBI = 5           # interleaved, in channel[0]

    # libraryPropertyType
    MAJOR_VERSION = 0
    MINOR_VERSION = 1
    PATCH_LEVEL = 2

ctypedef struct nvjpegImage_t:
    unsigned char *channel[4]       # NVJPEG_MAX_COMPONENT device pointers
    size_t pitch[4]

ctypedef nvjpegStatus_t (*tnvjpegGetProperty)(libraryPropertyType type, int *value) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegCreateEx)(nvjpegBackend_t backend, void *dev_allocator, void *pinned_allocator,
                                           unsigned int flags, nvjpegHandle_t *handle) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegDestroy)(nvjpegHandle_t handle) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegJpegStateCreate)(nvjpegHandle_t handle, nvjpegJpegState_t *state) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegJpegStateDestroy)(nvjpegJpegState_t state) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegGetImageInfo)(nvjpegHandle_t handle, const unsigned char *data, size_t length,
                                               int *components, nvjpegChromaSubsampling_t *subsampling,
                                               int *widths, int *heights) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegDecode)(nvjpegHandle_t handle, nvjpegJpegState_t state, const unsigned char *data,
                                         size_t length, nvjpegOutputFormat_t output_format,
                                         nvjpegImage_t *destination, CUstream stream) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegDecodeBatchedInitialize)(nvjpegHandle_t handle, nvjpegJpegState_t state,
                                                          int batch_size, int max_cpu_threads,
                                                          nvjpegOutputFormat_t output_format) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegDecodeBatched)(nvjpegHandle_t handle, nvjpegJpegState_t state,
                                                const unsigned char *const *data, const size_t *lengths,
                                                nvjpegImage_t *destinations, CUstream stream) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegJpegStreamCreate)(nvjpegHandle_t handle, nvjpegJpegStream_t *stream) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegJpegStreamDestroy)(nvjpegJpegStream_t stream) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegJpegStreamParseHeader)(nvjpegHandle_t handle, const unsigned char *data,
                                                        size_t length, nvjpegJpegStream_t stream) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegDecodeBatchedSupported)(nvjpegHandle_t handle, nvjpegJpegStream_t stream,
                                                         int *is_supported) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegEncoderStateCreate)(nvjpegHandle_t handle, nvjpegEncoderState_t *state,
                                                     CUstream stream) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegEncoderStateDestroy)(nvjpegEncoderState_t state) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegEncoderParamsCreate)(nvjpegHandle_t handle, nvjpegEncoderParams_t *params,
                                                      CUstream stream) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegEncoderParamsDestroy)(nvjpegEncoderParams_t params) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegEncoderParamsSetQuality)(nvjpegEncoderParams_t params, const int quality,
                                                          CUstream stream) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegEncoderParamsSetSamplingFactors)(nvjpegEncoderParams_t params,
                                                                  const nvjpegChromaSubsampling_t subsampling,
                                                                  CUstream stream) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegEncodeImage)(nvjpegHandle_t handle, nvjpegEncoderState_t state,
                                              const nvjpegEncoderParams_t params, const nvjpegImage_t *source,
                                              nvjpegInputFormat_t input_format, int width, int height,
                                              CUstream stream) noexcept nogil
ctypedef nvjpegStatus_t (*tnvjpegEncodeRetrieveBitstream)(nvjpegHandle_t handle, nvjpegEncoderState_t state,
                                                          unsigned char *data, size_t *length,
                                                          CUstream stream) noexcept nogil

# The functions torchcodec uses, all required: _nvjpeg.FUNCTIONS names them in this order, and the
# loader fills the fields as an array of pointers.
cdef struct NvjpegFunctions:
    tnvjpegGetProperty nvjpegGetProperty
    tnvjpegCreateEx nvjpegCreateEx
    tnvjpegDestroy nvjpegDestroy
    tnvjpegJpegStateCreate nvjpegJpegStateCreate
    tnvjpegJpegStateDestroy nvjpegJpegStateDestroy
    tnvjpegGetImageInfo nvjpegGetImageInfo
    tnvjpegDecode nvjpegDecode
    tnvjpegDecodeBatchedInitialize nvjpegDecodeBatchedInitialize
    tnvjpegDecodeBatched nvjpegDecodeBatched
    tnvjpegJpegStreamCreate nvjpegJpegStreamCreate
    tnvjpegJpegStreamDestroy nvjpegJpegStreamDestroy
    tnvjpegJpegStreamParseHeader nvjpegJpegStreamParseHeader
    tnvjpegDecodeBatchedSupported nvjpegDecodeBatchedSupported
    tnvjpegEncoderStateCreate nvjpegEncoderStateCreate
    tnvjpegEncoderStateDestroy nvjpegEncoderStateDestroy
    tnvjpegEncoderParamsCreate nvjpegEncoderParamsCreate
    tnvjpegEncoderParamsDestroy nvjpegEncoderParamsDestroy
    tnvjpegEncoderParamsSetQuality nvjpegEncoderParamsSetQuality
    tnvjpegEncoderParamsSetSamplingFactors nvjpegEncoderParamsSetSamplingFactors
    tnvjpegEncodeImage nvjpegEncodeImage
    tnvjpegEncodeRetrieveBitstream nvjpegEncodeRetrieveBitstream
