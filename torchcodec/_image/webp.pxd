# Declarations of libwebp (webp/decode.h) and libwebpdemux (webp/demux.h, webp/mux_types.h);
# C names unchanged; only what torchcodec uses.
from libc.stdint cimport uint8_t, uint32_t


cdef extern from "webp/decode.h" nogil:
    ctypedef enum VP8StatusCode:
        VP8_STATUS_OK

    ctypedef enum WEBP_CSP_MODE:
        MODE_RGBA

    ctypedef struct WebPBitstreamFeatures:
        int width
        int height
        int has_alpha
        int has_animation

    VP8StatusCode WebPGetFeatures(const uint8_t *data, size_t data_size, WebPBitstreamFeatures *features)
    uint8_t *WebPDecodeRGBInto(const uint8_t *data, size_t data_size, uint8_t *output_buffer,
                               size_t output_buffer_size, int output_stride)
    uint8_t *WebPDecodeRGBAInto(const uint8_t *data, size_t data_size, uint8_t *output_buffer,
                                size_t output_buffer_size, int output_stride)


cdef extern from "webp/mux_types.h" nogil:
    ctypedef struct WebPData:
        const uint8_t *bytes
        size_t size

    void WebPDataInit(WebPData *webp_data)


cdef extern from "webp/demux.h" nogil:
    ctypedef struct WebPDemuxer:
        pass

    ctypedef enum WebPFormatFeature:
        WEBP_FF_CANVAS_WIDTH
        WEBP_FF_CANVAS_HEIGHT
        WEBP_FF_FRAME_COUNT

    ctypedef struct WebPChunkIterator:
        WebPData chunk

    WebPDemuxer *WebPDemux(const WebPData *data)
    void WebPDemuxDelete(WebPDemuxer *dmux)
    uint32_t WebPDemuxGetI(const WebPDemuxer *dmux, WebPFormatFeature feature)
    int WebPDemuxGetChunk(const WebPDemuxer *dmux, const char *fourcc, int chunk_number, WebPChunkIterator *iter)
    void WebPDemuxReleaseChunkIterator(WebPChunkIterator *iter)

    ctypedef struct WebPAnimDecoder:
        pass

    ctypedef struct WebPAnimDecoderOptions:
        WEBP_CSP_MODE color_mode
        int use_threads

    ctypedef struct WebPAnimInfo:
        uint32_t canvas_width
        uint32_t canvas_height
        uint32_t frame_count

    int WebPAnimDecoderOptionsInit(WebPAnimDecoderOptions *dec_options)
    WebPAnimDecoder *WebPAnimDecoderNew(const WebPData *webp_data, const WebPAnimDecoderOptions *dec_options)
    int WebPAnimDecoderGetInfo(const WebPAnimDecoder *dec, WebPAnimInfo *info)
    int WebPAnimDecoderHasMoreFrames(const WebPAnimDecoder *dec)
    int WebPAnimDecoderGetNext(WebPAnimDecoder *dec, uint8_t **buf, int *timestamp)
    void WebPAnimDecoderDelete(WebPAnimDecoder *dec)
