/* A stand-in for libnvcuvid.so.1 (NVDEC), built by tests/cuda_stubs/stub_build.py, good enough to
 * drive torchcodec._cuda._nvdec without a GPU. It parses nothing: the test tells it the stream's
 * format through environment variables, and it treats every packet that carries a timestamp as one
 * picture.
 *
 * cuvidGetDecoderCaps: 4:2:0 and 4:4:4 at 8 to 12 bits are supported, except the codecs listed in
 *   STUB_NVDEC_UNSUPPORTED ("hevc,av1": names as torchcodec spells them); sizes from
 *   STUB_NVDEC_MIN_WIDTH/HEIGHT (default 16), STUB_NVDEC_MAX_WIDTH/HEIGHT (default 4096),
 *   STUB_NVDEC_MAX_MB (default 65536).
 * cuvidParseVideoData: the first data after parser creation or after a discontinuity calls the
 *   sequence callback with STUB_NVDEC_CODED ("WxH", default 320x240), STUB_NVDEC_DISPLAY
 *   ("left,top,right,bottom", default the coded area), STUB_NVDEC_CHROMA (cudaVideoChromaFormat,
 *   default 1 = 4:2:0), STUB_NVDEC_DEPTH (default 8), STUB_NVDEC_INTERLACED (default 0),
 *   min_num_decode_surfaces = REORDER + 1; the number it returns is the decode surface count.
 *   Each packet with CUVID_PKT_TIMESTAMP is decoded (decode callback, picture index round-robin
 *   over the surfaces not in the window, or the lowest such index with STUB_NVDEC_ALLOC=lowest: a
 *   parser that reuses a displayed picture's surface at once) and enters a reorder window of
 *   REORDER pictures; beyond it the smallest timestamp is displayed. STUB_NVDEC_UNTIMED=1 ignores
 *   the packets' timestamps, as for a stream without them: picture k (in decode order; no B-frames)
 *   gets the parser's interpolated timestamp k * clock / STUB_NVDEC_FPS (default 25), clock being
 *   ulClockRate, or 10 MHz when it is 0. ENDOFSTREAM or DISCONTINUITY displays the whole window
 *   in timestamp order; ENDOFSTREAM then calls the display callback with NULL.
 *   STUB_NVDEC_CHANGE_AT="N:WxH" changes the coded size before picture N (a new sequence, the
 *   window displayed first). Every call is logged (stub_nvcuvid_log()), with the first bytes of
 *   its data.
 * cuvidMapVideoFrame64: a host buffer per output slot (malloc), luma filled with
 *   16 + (timestamp % 219) and chroma with 128 (MSB-aligned for 16-bit surfaces), pitch rounded up
 *   to 256 bytes. It fails with CUDA_ERROR_MAP_FAILED when the picture's surface was decoded into
 *   again after the picture was displayed (the caller did not read it in time), or when more than
 *   ulNumOutputSurfaces are mapped at once. Calls that need a context fail without one (the libcuda
 *   stub's stack, found with dlopen(RTLD_NOLOAD)).
 * Counters (exported ints, read with ctypes): stub_nvdec_*; at unload they are written to the file
 * named by STUB_NVDEC_REPORT, with the calls made while the current context was a primary context
 * already released (stub_nvdec_after_release, from the libcuda stub). -DSTUB_WITHOUT_cuvidCreateVideoParser
 * leaves that required symbol out, -DSTUB_WITHOUT_cuvidGetDecoderCaps the optional one (old
 * drivers).
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ffnvcodec/dynlink_cuda.h>
#include <ffnvcodec/dynlink_nvcuvid.h>

#define STUB_LOG_SIZE (1 << 18)
#include "stub_log.h"

#define REORDER 4
#define MAX_SURFACES 32
#define MAX_OUTPUT 16
#define ERROR_INVALID_VALUE 1
#define ERROR_INVALID_CONTEXT 201
#define ERROR_MAP_FAILED 205
#define ERROR_NOT_SUPPORTED 801

int stub_nvcuvid = 1;
int stub_nvdec_caps_queries, stub_nvdec_parsers_created, stub_nvdec_parsers_destroyed;
int stub_nvdec_decoders_created, stub_nvdec_decoders_destroyed, stub_nvdec_sequences, stub_nvdec_decodes;
int stub_nvdec_displays, stub_nvdec_maps, stub_nvdec_unmaps, stub_nvdec_map_failures, stub_nvdec_max_mapped;
int stub_nvdec_no_context, stub_nvdec_destroyed_while_mapped, stub_nvdec_after_release;
int stub_nvdec_last_decode_surfaces, stub_nvdec_last_output_surfaces, stub_nvdec_last_output_format;
int stub_nvdec_last_width, stub_nvdec_last_height;

const char *stub_nvcuvid_log(void) { return call_log; }
void stub_nvcuvid_clear_log(void) { clear_call_log(); }

static int env_int(const char *name, int fallback)
{
    const char *value = getenv(name);
    return value && *value ? atoi(value) : fallback;
}

/* Whether the libcuda stub has a context pushed on its stack (as the real driver requires); a
 * released primary context is counted in stub_nvdec_after_release. */
static int context_current(void)
{
    static int *depth;
    static int (*released)(void);
    if (!depth) {
        void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
        depth = cuda ? dlsym(cuda, "stub_stack_depth") : NULL;
        released = cuda ? (int (*)(void))dlsym(cuda, "stub_current_context_released") : NULL;
        if (!depth)
            return 1;   /* no libcuda stub in this process: nothing to check */
    }
    if (*depth > 0) {
        if (released && released())
            stub_nvdec_after_release++;
        return 1;
    }
    stub_nvdec_no_context++;
    return 0;
}

static const char *codec_name(cudaVideoCodec codec)
{
    switch (codec) {
    case cudaVideoCodec_MPEG1: return "mpeg1";
    case cudaVideoCodec_MPEG2: return "mpeg2";
    case cudaVideoCodec_MPEG4: return "mpeg4";
    case cudaVideoCodec_H264: return "h264";
    case cudaVideoCodec_HEVC: return "hevc";
    case cudaVideoCodec_VP8: return "vp8";
    case cudaVideoCodec_VP9: return "vp9";
    case cudaVideoCodec_AV1: return "av1";
    default: return "other";
    }
}

static int listed(const char *list, const char *name)
{
    size_t length = strlen(name);
    for (const char *p = list; p && *p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (strncmp(p, name, length) == 0 && (p[length] == ',' || p[length] == 0))
            return 1;
    return 0;
}

#ifndef STUB_WITHOUT_cuvidGetDecoderCaps
CUresult cuvidGetDecoderCaps(CUVIDDECODECAPS *caps)
{
    int supported;
    stub_nvdec_caps_queries++;
    if (!context_current())
        return ERROR_INVALID_CONTEXT;
    supported = !listed(getenv("STUB_NVDEC_UNSUPPORTED"), codec_name(caps->eCodecType))
                && (caps->eChromaFormat == cudaVideoChromaFormat_420 || caps->eChromaFormat == cudaVideoChromaFormat_444)
                && caps->nBitDepthMinus8 <= 4;
    caps->bIsSupported = (unsigned char)supported;
    caps->nNumNVDECs = 1;
    caps->nOutputFormatMask = !supported ? 0
        : caps->eChromaFormat == cudaVideoChromaFormat_444
            ? (1 << cudaVideoSurfaceFormat_YUV444) | (1 << cudaVideoSurfaceFormat_YUV444_16Bit)
            : (1 << cudaVideoSurfaceFormat_NV12) | (1 << cudaVideoSurfaceFormat_P016);
    caps->nMaxWidth = supported ? (unsigned)env_int("STUB_NVDEC_MAX_WIDTH", 4096) : 0;
    caps->nMaxHeight = supported ? (unsigned)env_int("STUB_NVDEC_MAX_HEIGHT", 4096) : 0;
    caps->nMaxMBCount = supported ? (unsigned)env_int("STUB_NVDEC_MAX_MB", 65536) : 0;
    caps->nMinWidth = (unsigned short)env_int("STUB_NVDEC_MIN_WIDTH", 16);
    caps->nMinHeight = (unsigned short)env_int("STUB_NVDEC_MIN_HEIGHT", 16);
    log_call("caps(%s, chroma=%d, depth=%u) -> %d\n", codec_name(caps->eCodecType), caps->eChromaFormat,
             caps->nBitDepthMinus8 + 8, supported);
    return CUDA_SUCCESS;
}
#endif

/* ---- decoders ------------------------------------------------------------------------------- */

enum surface_state { FREE, IN_WINDOW, DISPLAYED, OVERWRITTEN_AFTER_DISPLAY, READ };

typedef struct stub_decoder {
    CUVIDDECODECREATEINFO info;
    long long timestamp[MAX_SURFACES];     /* of the picture decoded into each surface */
    int state[MAX_SURFACES];
    unsigned char *output[MAX_OUTPUT];     /* per output slot, NULL when not mapped */
    unsigned int pitch;
    size_t output_size;
} stub_decoder;

static int bytes_per_sample(const CUVIDDECODECREATEINFO *info)
{
    return info->OutputFormat == cudaVideoSurfaceFormat_P016 || info->OutputFormat == cudaVideoSurfaceFormat_YUV444_16Bit
           ? 2 : 1;
}

CUresult cuvidCreateDecoder(CUvideodecoder *decoder, CUVIDDECODECREATEINFO *info)
{
    stub_decoder *d;
    int is444 = info->ChromaFormat == cudaVideoChromaFormat_444, deep = info->bitDepthMinus8 > 0;
    cudaVideoSurfaceFormat expected = is444 ? (deep ? cudaVideoSurfaceFormat_YUV444_16Bit : cudaVideoSurfaceFormat_YUV444)
                                            : (deep ? cudaVideoSurfaceFormat_P016 : cudaVideoSurfaceFormat_NV12);
    if (!context_current())
        return ERROR_INVALID_CONTEXT;
    if (info->ulNumDecodeSurfaces < 1 || info->ulNumDecodeSurfaces > MAX_SURFACES || info->ulNumOutputSurfaces < 1
        || info->ulNumOutputSurfaces > MAX_OUTPUT || info->ulWidth == 0 || info->ulHeight == 0
        || info->ulTargetWidth == 0 || info->ulTargetHeight == 0 || info->OutputFormat != expected
        || info->display_area.right <= info->display_area.left || info->display_area.bottom <= info->display_area.top)
        return ERROR_INVALID_VALUE;
    d = calloc(1, sizeof(*d));
    d->info = *info;
    d->pitch = (unsigned)((info->ulTargetWidth * (unsigned long)bytes_per_sample(info) + 255) & ~255UL);
    d->output_size = (size_t)d->pitch * ((info->ulTargetHeight + 1) & ~1UL) * (is444 ? 3 : 2);
    stub_nvdec_decoders_created++;
    stub_nvdec_last_decode_surfaces = (int)info->ulNumDecodeSurfaces;
    stub_nvdec_last_output_surfaces = (int)info->ulNumOutputSurfaces;
    stub_nvdec_last_output_format = info->OutputFormat;
    stub_nvdec_last_width = (int)info->ulWidth;
    stub_nvdec_last_height = (int)info->ulHeight;
    log_call("create(%s, %lux%lu, surfaces=%lu, outputs=%lu, format=%d, target=%lux%lu, display=%d,%d,%d,%d, "
             "flags=%lu, deinterlace=%d) -> %p\n", codec_name(info->CodecType), info->ulWidth, info->ulHeight,
             info->ulNumDecodeSurfaces, info->ulNumOutputSurfaces, info->OutputFormat, info->ulTargetWidth,
             info->ulTargetHeight, info->display_area.left, info->display_area.top, info->display_area.right,
             info->display_area.bottom, info->ulCreationFlags, info->DeinterlaceMode, (void *)d);
    *decoder = d;
    return CUDA_SUCCESS;
}

CUresult cuvidDestroyDecoder(CUvideodecoder decoder)
{
    stub_decoder *d = decoder;
    if (!d)
        return ERROR_INVALID_VALUE;
    if (!context_current())
        return ERROR_INVALID_CONTEXT;
    for (int i = 0; i < MAX_OUTPUT; i++) {
        if (d->output[i]) {
            stub_nvdec_destroyed_while_mapped++;
            free(d->output[i]);
        }
    }
    stub_nvdec_decoders_destroyed++;
    log_call("destroy(%p)\n", decoder);
    free(d);
    return CUDA_SUCCESS;
}

/* The parser hands the packet's timestamp to the decoder it calls back (a real decoder knows the
 * picture, the stub only its timestamp), and learns which decoder decoded it. */
static long long decoding_timestamp;
static stub_decoder *last_decoder;

CUresult cuvidDecodePicture(CUvideodecoder decoder, CUVIDPICPARAMS *picture)
{
    stub_decoder *d = decoder;
    int index;
    if (!d || !picture || picture->CurrPicIdx < 0 || picture->CurrPicIdx >= (int)d->info.ulNumDecodeSurfaces)
        return ERROR_INVALID_VALUE;
    if (!context_current())
        return ERROR_INVALID_CONTEXT;
    index = picture->CurrPicIdx;
    d->state[index] = d->state[index] == DISPLAYED || d->state[index] == OVERWRITTEN_AFTER_DISPLAY
                      ? OVERWRITTEN_AFTER_DISPLAY : IN_WINDOW;
    d->timestamp[index] = decoding_timestamp;
    last_decoder = d;
    stub_nvdec_decodes++;
    return CUDA_SUCCESS;
}

static void fill(unsigned char *plane, size_t rows, unsigned pitch, unsigned width, int bps, unsigned value)
{
    for (size_t row = 0; row < rows; row++) {
        unsigned char *line = plane + row * pitch;
        for (unsigned x = 0; x < width; x++) {
            if (bps == 1) {
                line[x] = (unsigned char)value;
            } else {
                line[2 * x] = 0;                          /* MSB-aligned: value << 8, little endian */
                line[2 * x + 1] = (unsigned char)value;
            }
        }
    }
}

CUresult cuvidMapVideoFrame64(CUvideodecoder decoder, int index, unsigned long long *pointer, unsigned int *pitch,
                              CUVIDPROCPARAMS *params)
{
    stub_decoder *d = decoder;
    int slot = -1, mapped = 0, bps;
    size_t rows;
    unsigned width;
    if (!d || !pointer || !pitch || !params || index < 0 || index >= (int)d->info.ulNumDecodeSurfaces)
        return ERROR_INVALID_VALUE;
    if (!context_current())
        return ERROR_INVALID_CONTEXT;
    for (int i = 0; i < (int)d->info.ulNumOutputSurfaces; i++) {
        if (d->output[i])
            mapped++;
        else if (slot < 0)
            slot = i;
    }
    if (slot < 0 || d->state[index] == OVERWRITTEN_AFTER_DISPLAY || d->state[index] == IN_WINDOW) {
        stub_nvdec_map_failures++;
        log_call("map(%d) failed: %s\n", index, slot < 0 ? "all output surfaces mapped" : "surface reused before read");
        return ERROR_MAP_FAILED;
    }
    d->output[slot] = malloc(d->output_size);
    bps = bytes_per_sample(&d->info);
    rows = (d->info.ulTargetHeight + 1) & ~1UL;
    width = (unsigned)d->info.ulTargetWidth;
    fill(d->output[slot], rows, d->pitch, width, bps, 16 + (unsigned)(d->timestamp[index] % 219));
    if (d->info.ChromaFormat == cudaVideoChromaFormat_444)
        fill(d->output[slot] + rows * d->pitch, 2 * rows, d->pitch, width, bps, 128);
    else
        fill(d->output[slot] + rows * d->pitch, rows / 2, d->pitch, 2 * ((width + 1) / 2), bps, 128);
    d->state[index] = READ;
    stub_nvdec_maps++;
    if (mapped + 1 > stub_nvdec_max_mapped)
        stub_nvdec_max_mapped = mapped + 1;
    *pointer = (unsigned long long)(uintptr_t)d->output[slot];
    *pitch = d->pitch;
    log_call("map(%d, ts=%lld, progressive=%d) -> slot %d\n", index, d->timestamp[index], params->progressive_frame, slot);
    return CUDA_SUCCESS;
}

CUresult cuvidUnmapVideoFrame64(CUvideodecoder decoder, unsigned long long pointer)
{
    stub_decoder *d = decoder;
    if (!d)
        return ERROR_INVALID_VALUE;
    if (!context_current())
        return ERROR_INVALID_CONTEXT;
    for (int i = 0; i < MAX_OUTPUT; i++) {
        if (d->output[i] && (unsigned long long)(uintptr_t)d->output[i] == pointer) {
            free(d->output[i]);
            d->output[i] = NULL;
            stub_nvdec_unmaps++;
            return CUDA_SUCCESS;
        }
    }
    return ERROR_INVALID_VALUE;
}

/* ---- parser --------------------------------------------------------------------------------- */

typedef struct stub_parser {
    CUVIDPARSERPARAMS params;
    int need_sequence;
    int surfaces;                        /* from the sequence callback */
    int next_index;
    stub_decoder *decoder;               /* the one the decode callback used last (surface states) */
    struct { int index; long long timestamp; } window[MAX_SURFACES];
    int window_count;
    int decoded;                         /* pictures decoded since creation */
    long long untimed;                   /* STUB_NVDEC_UNTIMED: pictures given interpolated timestamps */
    unsigned changed_width, changed_height;   /* the coded size after STUB_NVDEC_CHANGE_AT, 0 before */
} stub_parser;

#ifndef STUB_WITHOUT_cuvidCreateVideoParser
CUresult cuvidCreateVideoParser(CUvideoparser *parser, CUVIDPARSERPARAMS *params)
{
    stub_parser *p;
    if (!parser || !params || !params->pfnSequenceCallback || !params->pfnDecodePicture || !params->pfnDisplayPicture)
        return ERROR_INVALID_VALUE;
    p = calloc(1, sizeof(*p));
    p->params = *params;
    p->need_sequence = 1;
    p->surfaces = params->ulMaxNumDecodeSurfaces;
    stub_nvdec_parsers_created++;
    log_call("parser(%s, surfaces=%u, delay=%u, clock=%u)\n", codec_name(params->CodecType),
             params->ulMaxNumDecodeSurfaces, params->ulMaxDisplayDelay, params->ulClockRate);
    *parser = p;
    return CUDA_SUCCESS;
}
#endif

CUresult cuvidDestroyVideoParser(CUvideoparser parser)
{
    if (!parser)
        return ERROR_INVALID_VALUE;
    stub_nvdec_parsers_destroyed++;
    free(parser);
    return CUDA_SUCCESS;
}

static int sequence(stub_parser *p)
{
    CUVIDEOFORMAT format;
    const char *coded = getenv("STUB_NVDEC_CODED"), *display = getenv("STUB_NVDEC_DISPLAY");
    unsigned width = 320, height = 240;
    int left = 0, top = 0, right, bottom, result;
    if (coded)
        sscanf(coded, "%ux%u", &width, &height);
    if (p->changed_width) {
        width = p->changed_width;
        height = p->changed_height;
        display = NULL;
    }
    right = (int)width;
    bottom = (int)height;
    if (display)
        sscanf(display, "%d,%d,%d,%d", &left, &top, &right, &bottom);
    memset(&format, 0, sizeof(format));
    format.codec = p->params.CodecType;
    format.progressive_sequence = (unsigned char)!env_int("STUB_NVDEC_INTERLACED", 0);
    format.bit_depth_luma_minus8 = format.bit_depth_chroma_minus8 = (unsigned char)(env_int("STUB_NVDEC_DEPTH", 8) - 8);
    format.min_num_decode_surfaces = REORDER + 1;
    format.coded_width = width;
    format.coded_height = height;
    format.display_area.left = left;
    format.display_area.top = top;
    format.display_area.right = right;
    format.display_area.bottom = bottom;
    format.chroma_format = (cudaVideoChromaFormat)env_int("STUB_NVDEC_CHROMA", cudaVideoChromaFormat_420);
    stub_nvdec_sequences++;
    result = p->params.pfnSequenceCallback(p->params.pUserData, &format);
    log_call("sequence(%ux%u) -> %d\n", width, height, result);
    if (result == 0)
        return 0;
    p->surfaces = result > 1 ? result : (int)p->params.ulMaxNumDecodeSurfaces;
    if (p->surfaces > MAX_SURFACES)
        p->surfaces = MAX_SURFACES;
    p->need_sequence = 0;
    p->next_index = 0;
    return 1;
}

static int in_window(stub_parser *p, int index)
{
    for (int i = 0; i < p->window_count; i++)
        if (p->window[i].index == index)
            return 1;
    return 0;
}

static void display_smallest(stub_parser *p)
{
    CUVIDPARSERDISPINFO info;
    int best = 0;
    for (int i = 1; i < p->window_count; i++)
        if (p->window[i].timestamp < p->window[best].timestamp)
            best = i;
    memset(&info, 0, sizeof(info));
    info.picture_index = p->window[best].index;
    info.progressive_frame = !env_int("STUB_NVDEC_INTERLACED", 0);
    info.top_field_first = 1;
    info.timestamp = p->window[best].timestamp;
    p->window[best] = p->window[--p->window_count];
    if (p->decoder)
        p->decoder->state[info.picture_index] = DISPLAYED;
    stub_nvdec_displays++;
    p->params.pfnDisplayPicture(p->params.pUserData, &info);
}

/* STUB_NVDEC_CHANGE_AT="N:WxH": before decoding picture N, the stream changes to a coded size of WxH
 * (a new sequence header at a key frame): the window is displayed, then the sequence callback runs. */
static int change_format(stub_parser *p)
{
    const char *change = getenv("STUB_NVDEC_CHANGE_AT");
    int at = -1;
    unsigned width = 0, height = 0;
    if (!change || sscanf(change, "%d:%ux%u", &at, &width, &height) != 3 || at != p->decoded)
        return 1;
    while (p->window_count > 0)
        display_smallest(p);
    p->changed_width = width;
    p->changed_height = height;
    return sequence(p);
}

static CUresult decode(stub_parser *p, const CUVIDSOURCEDATAPACKET *packet)
{
    CUVIDPICPARAMS *picture;
    int index = -1;
    if (!change_format(p))
        return ERROR_INVALID_VALUE;
    p->decoded++;
    const char *alloc = getenv("STUB_NVDEC_ALLOC");
    int lowest = alloc && strcmp(alloc, "lowest") == 0;
    long long timestamp = packet->timestamp;
    for (int tries = 0; tries < p->surfaces; tries++) {
        int candidate = lowest ? tries : (p->next_index + tries) % p->surfaces;
        if (!in_window(p, candidate)) {
            index = candidate;
            break;
        }
    }
    if (env_int("STUB_NVDEC_UNTIMED", 0)) {
        long long clock = p->params.ulClockRate ? p->params.ulClockRate : 10000000;
        timestamp = p->untimed++ * clock / env_int("STUB_NVDEC_FPS", 25);
    }
    if (index < 0)
        return ERROR_INVALID_VALUE;   /* more pictures held than surfaces: the surface count is too small */
    p->next_index = (index + 1) % p->surfaces;
    picture = calloc(1, sizeof(*picture));
    picture->CurrPicIdx = index;
    picture->pBitstreamData = packet->payload;
    picture->nBitstreamDataLen = (unsigned)packet->payload_size;
    decoding_timestamp = timestamp;
    last_decoder = NULL;
    p->params.pfnDecodePicture(p->params.pUserData, picture);
    free(picture);
    if (last_decoder)
        p->decoder = last_decoder;
    p->window[p->window_count].index = index;
    p->window[p->window_count].timestamp = timestamp;
    p->window_count++;
    if (p->window_count > REORDER)
        display_smallest(p);
    return CUDA_SUCCESS;
}

CUresult cuvidParseVideoData(CUvideoparser parser, CUVIDSOURCEDATAPACKET *packet)
{
    stub_parser *p = parser;
    CUresult ret = CUDA_SUCCESS;
    char head[17] = "";
    if (!p || !packet)
        return ERROR_INVALID_VALUE;
    for (unsigned long i = 0; i < packet->payload_size && i < 8; i++)
        snprintf(head + 2 * i, 3, "%02x", packet->payload[i]);
    log_call("parse(size=%lu, flags=%lu, ts=%lld, head=%s)\n", packet->payload_size, packet->flags,
             (packet->flags & CUVID_PKT_TIMESTAMP) ? packet->timestamp : -1LL, head);
    if (packet->payload_size > 0 && p->need_sequence && !sequence(p))
        return ERROR_INVALID_VALUE;
    if (packet->payload_size > 0 && (packet->flags & CUVID_PKT_TIMESTAMP))
        ret = decode(p, packet);
    if (packet->flags & (CUVID_PKT_ENDOFSTREAM | CUVID_PKT_DISCONTINUITY)) {
        while (p->window_count > 0)
            display_smallest(p);
        p->need_sequence = 1;
    }
    if (packet->flags & CUVID_PKT_ENDOFSTREAM)
        p->params.pfnDisplayPicture(p->params.pUserData, NULL);
    return ret;
}

__attribute__((destructor)) static void stub_nvdec_report(void)
{
    const char *path = getenv("STUB_NVDEC_REPORT");
    FILE *file;
    if (!path || !(file = fopen(path, "w")))
        return;
    fprintf(file, "decoders_created=%d decoders_destroyed=%d maps=%d unmaps=%d parsers_created=%d "
            "parsers_destroyed=%d after_release=%d no_context=%d destroyed_while_mapped=%d\n",
            stub_nvdec_decoders_created, stub_nvdec_decoders_destroyed, stub_nvdec_maps, stub_nvdec_unmaps,
            stub_nvdec_parsers_created, stub_nvdec_parsers_destroyed, stub_nvdec_after_release,
            stub_nvdec_no_context, stub_nvdec_destroyed_while_mapped);
    fclose(file);
}
