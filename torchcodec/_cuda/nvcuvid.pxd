# NVCUVID (NVDEC's API) as ffnvcodec's loader exposes it: CuvidFunctions, filled by
# cuvid_load_functions from libnvcuvid.so.1, and the parser / decoder types of dynlink_nvcuvid.h and
# dynlink_cuviddec.h that torchcodec._cuda._nvdec uses. C names kept; only what is used. The picture
# parameters (CUVIDPICPARAMS) are passed through from the parser to the decoder; only the surface
# they decode into (CurrPicIdx) is read.
#
# Declared without a header (as torchcodec/_cuda/cuda.pxd is): the C definitions come from
# ffnvcodec's headers, which torchcodec's own modules include (torchcodec/_cuda/ffnvcodec.pxd). A
# downstream extension gets only the pointer to CuvidFunctions from torchcodec._cuda._driver; one
# that uses these types itself (cimports torchcodec._cuda._nvdec, for example) must include
# ffnvcodec/dynlink_loader.h (Debian libffmpeg-nvenc-dev, conda-forge ffnvcodec-headers).
from torchcodec._cuda.cuda cimport CUdeviceptr, CUresult, CUstream


cdef extern from * nogil:
    # ffnvcodec/dynlink_cuviddec.h
    ctypedef void *CUvideodecoder

    ctypedef enum cudaVideoCodec:
        cudaVideoCodec_MPEG1
        cudaVideoCodec_MPEG2
        cudaVideoCodec_MPEG4
        cudaVideoCodec_H264
        cudaVideoCodec_HEVC
        cudaVideoCodec_VP8
        cudaVideoCodec_VP9
        cudaVideoCodec_AV1

    ctypedef enum cudaVideoSurfaceFormat:
        cudaVideoSurfaceFormat_NV12
        cudaVideoSurfaceFormat_P016
        cudaVideoSurfaceFormat_YUV444
        cudaVideoSurfaceFormat_YUV444_16Bit

    ctypedef enum cudaVideoDeinterlaceMode:
        cudaVideoDeinterlaceMode_Weave
        cudaVideoDeinterlaceMode_Adaptive

    ctypedef enum cudaVideoChromaFormat:
        cudaVideoChromaFormat_Monochrome
        cudaVideoChromaFormat_420
        cudaVideoChromaFormat_422
        cudaVideoChromaFormat_444

    enum:
        cudaVideoCreate_PreferCUVID

    ctypedef struct CUVIDDECODECAPS:
        cudaVideoCodec eCodecType
        cudaVideoChromaFormat eChromaFormat
        unsigned int nBitDepthMinus8
        unsigned char bIsSupported
        unsigned short nOutputFormatMask
        unsigned int nMaxWidth
        unsigned int nMaxHeight
        unsigned int nMaxMBCount
        unsigned short nMinWidth
        unsigned short nMinHeight

    ctypedef struct CUVIDRECT "struct { short left; short top; short right; short bottom; }":
        short left
        short top
        short right
        short bottom

    ctypedef struct CUVIDDECODECREATEINFO:
        unsigned long ulWidth
        unsigned long ulHeight
        unsigned long ulNumDecodeSurfaces
        cudaVideoCodec CodecType
        cudaVideoChromaFormat ChromaFormat
        unsigned long ulCreationFlags
        unsigned long bitDepthMinus8
        unsigned long ulMaxWidth
        unsigned long ulMaxHeight
        CUVIDRECT display_area
        cudaVideoSurfaceFormat OutputFormat
        cudaVideoDeinterlaceMode DeinterlaceMode
        unsigned long ulTargetWidth
        unsigned long ulTargetHeight
        unsigned long ulNumOutputSurfaces

    ctypedef struct CUVIDPICPARAMS:     # from the parser to cuvidDecodePicture
        int CurrPicIdx                  # the decode surface it writes

    ctypedef struct CUVIDPROCPARAMS:
        int progressive_frame
        int second_field
        int top_field_first
        int unpaired_field
        CUstream output_stream

    # ffnvcodec/dynlink_nvcuvid.h
    ctypedef void *CUvideoparser
    ctypedef long long CUvideotimestamp

    ctypedef struct CUVIDEOFORMAT_display_area "struct { int left; int top; int right; int bottom; }":
        int left
        int top
        int right
        int bottom

    ctypedef struct CUVIDEOFORMAT:
        cudaVideoCodec codec
        unsigned char progressive_sequence
        unsigned char bit_depth_luma_minus8
        unsigned char min_num_decode_surfaces
        unsigned int coded_width
        unsigned int coded_height
        CUVIDEOFORMAT_display_area display_area
        cudaVideoChromaFormat chroma_format

    ctypedef enum CUvideopacketflags:
        CUVID_PKT_ENDOFSTREAM
        CUVID_PKT_TIMESTAMP
        CUVID_PKT_DISCONTINUITY

    ctypedef struct CUVIDSOURCEDATAPACKET:
        unsigned long flags
        unsigned long payload_size
        const unsigned char *payload
        CUvideotimestamp timestamp

    ctypedef struct CUVIDPARSERDISPINFO:
        int picture_index
        int progressive_frame
        int top_field_first
        int repeat_first_field
        CUvideotimestamp timestamp

    ctypedef int (*PFNVIDSEQUENCECALLBACK)(void *, CUVIDEOFORMAT *) noexcept nogil
    ctypedef int (*PFNVIDDECODECALLBACK)(void *, CUVIDPICPARAMS *) noexcept nogil
    ctypedef int (*PFNVIDDISPLAYCALLBACK)(void *, CUVIDPARSERDISPINFO *) noexcept nogil

    ctypedef struct CUVIDPARSERPARAMS:
        cudaVideoCodec CodecType
        unsigned int ulMaxNumDecodeSurfaces
        unsigned int ulClockRate
        unsigned int ulErrorThreshold
        unsigned int ulMaxDisplayDelay
        void *pUserData
        PFNVIDSEQUENCECALLBACK pfnSequenceCallback
        PFNVIDDECODECALLBACK pfnDecodePicture
        PFNVIDDISPLAYCALLBACK pfnDisplayPicture

    # ffnvcodec/dynlink_loader.h's table, by its struct tag
    struct CuvidFunctions:
        CUresult (*cuvidGetDecoderCaps)(CUVIDDECODECAPS *pdc) noexcept nogil   # NULL on old drivers
        CUresult (*cuvidCreateDecoder)(CUvideodecoder *phDecoder, CUVIDDECODECREATEINFO *pdci) noexcept nogil
        CUresult (*cuvidDestroyDecoder)(CUvideodecoder hDecoder) noexcept nogil
        CUresult (*cuvidDecodePicture)(CUvideodecoder hDecoder, CUVIDPICPARAMS *pPicParams) noexcept nogil
        CUresult (*cuvidMapVideoFrame)(CUvideodecoder hDecoder, int nPicIdx, CUdeviceptr *pDevPtr,
                                       unsigned int *pPitch, CUVIDPROCPARAMS *pVPP) noexcept nogil  # ...64
        CUresult (*cuvidUnmapVideoFrame)(CUvideodecoder hDecoder, CUdeviceptr DevPtr) noexcept nogil
        CUresult (*cuvidCreateVideoParser)(CUvideoparser *pObj, CUVIDPARSERPARAMS *pParams) noexcept nogil
        CUresult (*cuvidParseVideoData)(CUvideoparser obj, CUVIDSOURCEDATAPACKET *pPacket) noexcept nogil
        CUresult (*cuvidDestroyVideoParser)(CUvideoparser obj) noexcept nogil
        void *lib
