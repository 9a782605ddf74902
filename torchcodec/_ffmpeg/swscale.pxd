# Declarations of libswscale; C names unchanged; only what torchcodec uses.
from libc.stdint cimport uint8_t
from torchcodec._ffmpeg.avutil cimport AVPixelFormat


cdef extern from "libswscale/swscale.h" nogil:
    int SWS_FAST_BILINEAR
    int SWS_BILINEAR
    int SWS_BICUBIC
    int SWS_POINT
    int SWS_AREA
    int SWS_ACCURATE_RND
    int SWS_FULL_CHR_H_INT
    int SWS_FULL_CHR_H_INP
    int SWS_CS_DEFAULT

    struct SwsContext:
        pass
    struct SwsFilter:
        pass

    SwsContext *sws_getContext(int srcW, int srcH, AVPixelFormat srcFormat, int dstW, int dstH,
                               AVPixelFormat dstFormat, int flags, SwsFilter *srcFilter, SwsFilter *dstFilter,
                               const double *param)
    void sws_freeContext(SwsContext *swsContext)
    int sws_scale(SwsContext *c, const uint8_t *const srcSlice[], const int srcStride[],
                  int srcSliceY, int srcSliceH, uint8_t *const dst[], const int dstStride[])
    const int *sws_getCoefficients(int colorspace)
    int sws_setColorspaceDetails(SwsContext *c, const int inv_table[4], int srcRange,
                                 const int table[4], int dstRange,
                                 int brightness, int contrast, int saturation)
    int sws_getColorspaceDetails(SwsContext *c, int **inv_table, int *srcRange, int **table, int *dstRange,
                                 int *brightness, int *contrast, int *saturation)
    int sws_isSupportedInput(AVPixelFormat pix_fmt)
    unsigned swscale_version()
