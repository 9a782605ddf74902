# Declarations of giflib 5 (gif_lib.h); C names unchanged; only what torchcodec uses.

cdef extern from "gif_lib.h" nogil:
    ctypedef unsigned char GifPixelType
    ctypedef unsigned char GifByteType
    ctypedef int GifWord

    ctypedef struct GifColorType:
        GifByteType Red
        GifByteType Green
        GifByteType Blue

    ctypedef struct ColorMapObject:
        int ColorCount
        GifColorType *Colors

    ctypedef struct GifImageDesc:
        GifWord Left
        GifWord Top
        GifWord Width
        GifWord Height
        bint Interlace
        ColorMapObject *ColorMap

    ctypedef struct GifFileType:
        GifWord SWidth
        GifWord SHeight
        GifWord SBackGroundColor
        ColorMapObject *SColorMap
        int ImageCount
        GifImageDesc Image
        int Error
        void *UserData

    ctypedef enum GifRecordType:
        UNDEFINED_RECORD_TYPE
        SCREEN_DESC_RECORD_TYPE
        IMAGE_DESC_RECORD_TYPE
        EXTENSION_RECORD_TYPE
        TERMINATE_RECORD_TYPE

    ctypedef struct GraphicsControlBlock:
        int DisposalMode
        bint UserInputFlag
        int DelayTime
        int TransparentColor

    ctypedef int (*InputFunc)(GifFileType *, GifByteType *, int) noexcept nogil

    int GIF_ERROR
    int GIF_OK
    int D_GIF_SUCCEEDED
    int D_GIF_ERR_READ_FAILED
    int GRAPHICS_EXT_FUNC_CODE
    int DISPOSAL_UNSPECIFIED
    int DISPOSE_DO_NOT
    int DISPOSE_BACKGROUND
    int DISPOSE_PREVIOUS
    int NO_TRANSPARENT_COLOR

    GifFileType *DGifOpen(void *userPtr, InputFunc readFunc, int *Error)
    int DGifCloseFile(GifFileType *GifFile, int *ErrorCode)
    int DGifGetRecordType(GifFileType *GifFile, GifRecordType *GifType)
    int DGifGetImageDesc(GifFileType *GifFile)
    int DGifGetLine(GifFileType *GifFile, GifPixelType *GifLine, int GifLineLen)
    int DGifGetExtension(GifFileType *GifFile, int *GifExtCode, GifByteType **GifExtension)
    int DGifGetExtensionNext(GifFileType *GifFile, GifByteType **GifExtension)
    int DGifGetCode(GifFileType *GifFile, int *GifCodeSize, GifByteType **GifCodeBlock)
    int DGifGetCodeNext(GifFileType *GifFile, GifByteType **GifCodeBlock)
    int DGifExtensionToGCB(size_t GifExtensionLength, const GifByteType *GifExtension, GraphicsControlBlock *GCB)
    void GifFreeSavedImages(GifFileType *GifFile)
    const char *GifErrorString(int ErrorCode)
