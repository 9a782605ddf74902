# Declarations of libavif (avif/avif.h, 0.11 and 1.x); C names unchanged; only what torchcodec uses.
from libc.stdint cimport uint8_t, uint32_t


cdef extern from "avif/avif.h" nogil:
    ctypedef int avifBool
    int AVIF_TRUE
    int AVIF_FALSE

    ctypedef enum avifResult:
        AVIF_RESULT_OK

    ctypedef enum avifRGBFormat:
        AVIF_RGB_FORMAT_RGB
        AVIF_RGB_FORMAT_RGBA

    ctypedef int avifTransformFlags
    int AVIF_TRANSFORM_IROT
    int AVIF_TRANSFORM_IMIR

    ctypedef struct avifImageRotation:
        uint8_t angle

    ctypedef struct avifImage:
        uint32_t width
        uint32_t height
        uint32_t depth
        avifTransformFlags transformFlags
        avifImageRotation irot

    ctypedef struct avifRGBImage:
        uint32_t width
        uint32_t height
        uint32_t depth
        avifRGBFormat format
        avifBool ignoreAlpha
        uint8_t *pixels
        uint32_t rowBytes

    ctypedef struct avifDecoder:
        int maxThreads
        avifImage *image
        int imageCount
        avifBool alphaPresent

    const char *avifResultToString(avifResult result)
    avifDecoder *avifDecoderCreate()
    void avifDecoderDestroy(avifDecoder *decoder)
    avifResult avifDecoderSetIOMemory(avifDecoder *decoder, const uint8_t *data, size_t size)
    avifResult avifDecoderParse(avifDecoder *decoder)
    avifResult avifDecoderNextImage(avifDecoder *decoder)
    void avifRGBImageSetDefaults(avifRGBImage *rgb, const avifImage *image)
    uint32_t avifRGBImagePixelSize(const avifRGBImage *rgb)
    avifResult avifImageYUVToRGB(const avifImage *image, avifRGBImage *rgb)


cdef extern from "avifcompat.h" nogil:
    # imir's field is `mode` in libavif 0.x and `axis` in 1.x (same values: 0 = top/bottom exchanged).
    uint8_t tc_avif_imir_axis(const avifImage *image)
