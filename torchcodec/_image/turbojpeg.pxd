# Declarations of libjpeg-turbo's TurboJPEG API (turbojpeg.h, 2.0 and later); C names unchanged;
# only what torchcodec uses.

cdef extern from "turbojpeg.h" nogil:
    ctypedef void *tjhandle

    enum TJSAMP:
        TJSAMP_444
        TJSAMP_422
        TJSAMP_420
        TJSAMP_GRAY
        TJSAMP_440
        TJSAMP_411

    enum TJPF:
        TJPF_RGB
        TJPF_RGBA
        TJPF_GRAY
        TJPF_CMYK

    enum TJCS:
        TJCS_RGB
        TJCS_YCbCr
        TJCS_GRAY
        TJCS_CMYK
        TJCS_YCCK

    enum TJERR:
        TJERR_WARNING
        TJERR_FATAL

    int TJFLAG_ACCURATEDCT
    int TJFLAG_LIMITSCANS

    tjhandle tjInitCompress()
    tjhandle tjInitDecompress()
    int tjDestroy(tjhandle handle)
    int tjDecompressHeader3(tjhandle handle, const unsigned char *jpegBuf, unsigned long jpegSize,
                            int *width, int *height, int *jpegSubsamp, int *jpegColorspace)
    int tjDecompress2(tjhandle handle, const unsigned char *jpegBuf, unsigned long jpegSize,
                      unsigned char *dstBuf, int width, int pitch, int height, int pixelFormat, int flags)
    int tjCompress2(tjhandle handle, const unsigned char *srcBuf, int width, int pitch, int height,
                    int pixelFormat, unsigned char **jpegBuf, unsigned long *jpegSize, int jpegSubsamp,
                    int jpegQual, int flags)
    void tjFree(unsigned char *buffer)
    char *tjGetErrorStr2(tjhandle handle)
    int tjGetErrorCode(tjhandle handle)
