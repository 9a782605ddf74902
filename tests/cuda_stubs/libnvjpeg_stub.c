/* A stand-in for nvJPEG's libnvjpeg.so.N, built by tests/cuda_stubs/stub_build.py, whose entry points
 * decode and encode with libjpeg-turbo (TurboJPEG) on the CPU into the stub libcuda's "device"
 * memory (host memory), so that torchcodec's nvJPEG path runs end to end without a GPU.
 *
 * Modelled: a hardware backend (NVJPEG_BACKEND_HARDWARE is refused with NVJPEG_STATUS_ARCH_MISMATCH
 * unless STUB_NVJPEG_HARDWARE=1) that accepts baseline (SOF0/SOF1) streams of 1 or 3 components
 * but not progressive ones or 4:1:1 (nvjpegDecodeBatchedSupported answers 0 for "supported");
 * nvjpegGetImageInfo's NVJPEG_CSS_UNKNOWN for 4-component (CMYK) streams; planar Y / RGB outputs
 * (luma of a colour JPEG, gray replicated for RGB of a gray JPEG); nvjpegDecodeBatched failing as a
 * whole when one image fails; encoding of planar or interleaved RGB at the parameters' quality and
 * chroma subsampling. STUB_NVJPEG_FAIL=nvjpegDecodeBatched,... makes the named functions fail with
 * NVJPEG_STATUS_EXECUTION_FAILED. Every call is appended to a text log (stub_nvjpeg_log()) with its
 * stream; calls made while no CUDA context is current on the thread (the stub libcuda's context
 * stack) are counted in stub_nvjpeg_no_context. Handles, states, streams and encoder objects are
 * counted as created and destroyed; the counts are written to $STUB_NVJPEG_REPORT at unload.
 * -DSTUB_WITHOUT_nvjpegEncodeRetrieveBitstream leaves that function out (an incomplete library).
 */
#include <dlfcn.h>

#include <turbojpeg.h>

#include "stub_log.h"

enum {
    SUCCESS = 0, NOT_INITIALIZED = 1, INVALID_PARAMETER = 2, BAD_JPEG = 3, JPEG_NOT_SUPPORTED = 4,
    EXECUTION_FAILED = 6, ARCH_MISMATCH = 7,
};
enum { BACKEND_DEFAULT = 0, BACKEND_HARDWARE = 3 };
enum { CSS_444 = 0, CSS_422 = 1, CSS_420 = 2, CSS_440 = 3, CSS_411 = 4, CSS_GRAY = 6, CSS_UNKNOWN = -1 };
enum { OUTPUT_Y = 2, OUTPUT_RGB = 3, INPUT_RGB = 3, INPUT_RGBI = 5 };

typedef struct { unsigned char *channel[4]; size_t pitch[4]; } image_t;
typedef struct { int backend; } handle_t;
typedef struct { int batch_size, format; } state_t;
typedef struct { int supported; } stream_t;
typedef struct { int quality, subsampling; } params_t;
typedef struct { unsigned char *data; unsigned long size; } encoder_t;

int stub_nvjpeg_handles, stub_nvjpeg_handles_destroyed, stub_nvjpeg_states, stub_nvjpeg_states_destroyed;
int stub_nvjpeg_streams, stub_nvjpeg_streams_destroyed, stub_nvjpeg_encoders, stub_nvjpeg_encoders_destroyed;
int stub_nvjpeg_params, stub_nvjpeg_params_destroyed, stub_nvjpeg_no_context;
int stub_nvjpeg_batched_images, stub_nvjpeg_single_images;

const char *stub_nvjpeg_log(void) { return call_log; }
void stub_nvjpeg_clear_log(void) { clear_call_log(); }

static int failing(const char *name) { return listed_in("STUB_NVJPEG_FAIL", name); }

/* Counts a call made without a current CUDA context (the stub libcuda's stack, when it is loaded). */
static void need_context(void)
{
    void *cuda = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_NOLOAD);
    int *depth = cuda ? (int *)dlsym(cuda, "stub_stack_depth") : NULL;
    if (!depth || *depth == 0)
        stub_nvjpeg_no_context++;
    if (cuda)
        dlclose(cuda);
}

int nvjpegGetProperty(int type, int *value)
{
    *value = type == 0 ? 12 : type == 1 ? 4 : 0;
    return SUCCESS;
}

int nvjpegCreateEx(int backend, void *device_allocator, void *pinned_allocator, unsigned flags, handle_t **handle)
{
    const char *hardware = getenv("STUB_NVJPEG_HARDWARE");
    (void)device_allocator; (void)pinned_allocator; (void)flags;
    need_context();
    log_call("nvjpegCreateEx(backend=%d)\n", backend);
    if (backend == BACKEND_HARDWARE && !(hardware && atoi(hardware)))
        return ARCH_MISMATCH;
    if (backend != BACKEND_HARDWARE && backend != BACKEND_DEFAULT)
        return INVALID_PARAMETER;
    *handle = calloc(1, sizeof(handle_t));
    (*handle)->backend = backend;
    stub_nvjpeg_handles++;
    return SUCCESS;
}

int nvjpegDestroy(handle_t *handle)
{
    need_context();
    free(handle);
    stub_nvjpeg_handles_destroyed++;
    return SUCCESS;
}

int nvjpegJpegStateCreate(handle_t *handle, state_t **state)
{
    (void)handle;
    need_context();
    *state = calloc(1, sizeof(state_t));
    stub_nvjpeg_states++;
    return SUCCESS;
}

int nvjpegJpegStateDestroy(state_t *state)
{
    free(state);
    stub_nvjpeg_states_destroyed++;
    return SUCCESS;
}

int nvjpegJpegStreamCreate(handle_t *handle, stream_t **stream)
{
    (void)handle;
    *stream = calloc(1, sizeof(stream_t));
    stub_nvjpeg_streams++;
    return SUCCESS;
}

int nvjpegJpegStreamDestroy(stream_t *stream)
{
    free(stream);
    stub_nvjpeg_streams_destroyed++;
    return SUCCESS;
}

/* The SOF marker of a stream (0xC0 baseline, 0xC1 extended, 0xC2 progressive), or 0. */
static int frame_marker(const unsigned char *data, size_t length)
{
    size_t pos = 2;
    while (pos + 4 <= length && data[pos] == 0xFF) {
        unsigned char marker = data[pos + 1];
        size_t size = ((size_t)data[pos + 2] << 8) | data[pos + 3];
        if (marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC)
            return marker;
        if (marker == 0xDA || marker == 0xD9)
            return 0;
        pos += 2 + size;
    }
    return 0;
}

static int header(const unsigned char *data, size_t length, int *width, int *height, int *subsampling,
                  int *colorspace)
{
    tjhandle tj = tjInitDecompress();
    int ret = tjDecompressHeader3(tj, data, (unsigned long)length, width, height, subsampling, colorspace);
    tjDestroy(tj);
    return ret == 0 && *width > 0 && *height > 0 ? SUCCESS : BAD_JPEG;
}

int nvjpegGetImageInfo(handle_t *handle, const unsigned char *data, size_t length, int *components, int *subsampling,
                       int *widths, int *heights)
{
    int width, height, samp, colorspace, c;
    static const int css[] = {CSS_444, CSS_422, CSS_420, CSS_GRAY, CSS_440, CSS_411};
    static const int shift_x[] = {0, 1, 1, 0, 0, 2}, shift_y[] = {0, 0, 1, 0, 1, 0};
    (void)handle;
    if (header(data, length, &width, &height, &samp, &colorspace) != SUCCESS)
        return BAD_JPEG;
    *components = colorspace == TJCS_GRAY ? 1 : (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK) ? 4 : 3;
    *subsampling = *components == 4 || samp < 0 || samp > 5 ? CSS_UNKNOWN : css[samp];
    for (c = 0; c < 4; c++)
        widths[c] = heights[c] = 0;
    widths[0] = width;
    heights[0] = height;
    for (c = 1; c < *components && samp >= 0 && samp <= 5; c++) {
        widths[c] = (width + (1 << shift_x[samp]) - 1) >> shift_x[samp];
        heights[c] = (height + (1 << shift_y[samp]) - 1) >> shift_y[samp];
    }
    return SUCCESS;
}

int nvjpegJpegStreamParseHeader(handle_t *handle, const unsigned char *data, size_t length, stream_t *stream)
{
    int width, height, samp, colorspace, marker;
    (void)handle;
    if (header(data, length, &width, &height, &samp, &colorspace) != SUCCESS)
        return BAD_JPEG;
    marker = frame_marker(data, length);
    stream->supported = (marker == 0xC0 || marker == 0xC1) && samp != TJSAMP_411 && colorspace != TJCS_CMYK
                        && colorspace != TJCS_YCCK;
    return SUCCESS;
}

int nvjpegDecodeBatchedSupported(handle_t *handle, stream_t *stream, int *is_supported)
{
    (void)handle;
    *is_supported = stream->supported ? 0 : 1;
    return SUCCESS;
}

/* Decode one stream into planar Y or RGB at the destination's planes and pitches. */
static int decode_one(const unsigned char *data, size_t length, int format, const image_t *destination)
{
    int width, height, samp, colorspace, planes = format == OUTPUT_Y ? 1 : 3, ret;
    unsigned char *pixels;
    tjhandle tj;
    if (format != OUTPUT_Y && format != OUTPUT_RGB)
        return INVALID_PARAMETER;
    if (header(data, length, &width, &height, &samp, &colorspace) != SUCCESS)
        return BAD_JPEG;
    if (colorspace == TJCS_CMYK || colorspace == TJCS_YCCK)
        return JPEG_NOT_SUPPORTED;
    pixels = malloc((size_t)width * height * planes);
    tj = tjInitDecompress();
    ret = tjDecompress2(tj, data, (unsigned long)length, pixels, width, width * planes, height,
                        planes == 1 ? TJPF_GRAY : TJPF_RGB, 0);
    if (ret != 0 && tjGetErrorCode(tj) != TJERR_WARNING) {
        tjDestroy(tj);
        free(pixels);
        return BAD_JPEG;
    }
    tjDestroy(tj);
    for (int c = 0; c < planes; c++)
        for (int y = 0; y < height; y++)
            for (int x = 0; x < width; x++)
                destination->channel[c][y * destination->pitch[c] + x] = pixels[((size_t)y * width + x) * planes + c];
    free(pixels);
    return SUCCESS;
}

int nvjpegDecode(handle_t *handle, state_t *state, const unsigned char *data, size_t length, int format,
                 image_t *destination, void *stream)
{
    int ret;
    (void)handle; (void)state;
    need_context();
    log_call("nvjpegDecode(format=%d, stream=%p)\n", format, stream);
    if (failing("nvjpegDecode"))
        return EXECUTION_FAILED;
    ret = decode_one(data, length, format, destination);
    stub_nvjpeg_single_images += ret == SUCCESS;
    return ret;
}

int nvjpegDecodeBatchedInitialize(handle_t *handle, state_t *state, int batch_size, int max_cpu_threads, int format)
{
    (void)max_cpu_threads;
    log_call("nvjpegDecodeBatchedInitialize(n=%d, format=%d)\n", batch_size, format);
    if (handle->backend != BACKEND_HARDWARE || batch_size <= 0)
        return INVALID_PARAMETER;
    state->batch_size = batch_size;
    state->format = format;
    return SUCCESS;
}

int nvjpegDecodeBatched(handle_t *handle, state_t *state, const unsigned char *const *data, const size_t *lengths,
                        image_t *destinations, void *stream)
{
    (void)handle;
    need_context();
    log_call("nvjpegDecodeBatched(n=%d, format=%d, stream=%p)\n", state->batch_size, state->format, stream);
    if (failing("nvjpegDecodeBatched"))
        return EXECUTION_FAILED;
    for (int i = 0; i < state->batch_size; i++)
        if (decode_one(data[i], lengths[i], state->format, &destinations[i]) != SUCCESS)
            return BAD_JPEG;     /* the batch fails as a whole */
    stub_nvjpeg_batched_images += state->batch_size;
    return SUCCESS;
}

int nvjpegEncoderStateCreate(handle_t *handle, encoder_t **state, void *stream)
{
    (void)handle; (void)stream;
    need_context();
    *state = calloc(1, sizeof(encoder_t));
    stub_nvjpeg_encoders++;
    return SUCCESS;
}

int nvjpegEncoderStateDestroy(encoder_t *state)
{
    if (state->data)
        tjFree(state->data);
    free(state);
    stub_nvjpeg_encoders_destroyed++;
    return SUCCESS;
}

int nvjpegEncoderParamsCreate(handle_t *handle, params_t **params, void *stream)
{
    (void)handle; (void)stream;
    *params = calloc(1, sizeof(params_t));
    (*params)->quality = 70;
    (*params)->subsampling = CSS_420;
    stub_nvjpeg_params++;
    return SUCCESS;
}

int nvjpegEncoderParamsDestroy(params_t *params)
{
    free(params);
    stub_nvjpeg_params_destroyed++;
    return SUCCESS;
}

int nvjpegEncoderParamsSetQuality(params_t *params, int quality, void *stream)
{
    (void)stream;
    if (quality < 1 || quality > 100)
        return INVALID_PARAMETER;
    params->quality = quality;
    return SUCCESS;
}

int nvjpegEncoderParamsSetSamplingFactors(params_t *params, int subsampling, void *stream)
{
    (void)stream;
    params->subsampling = subsampling;
    return SUCCESS;
}

int nvjpegEncodeImage(handle_t *handle, encoder_t *state, params_t *params, const image_t *source, int format,
                      int width, int height, void *stream)
{
    unsigned char *pixels;
    int samp, ret;
    tjhandle tj;
    (void)handle;
    need_context();
    log_call("nvjpegEncodeImage(format=%d, %dx%d, quality=%d, subsampling=%d, stream=%p)\n", format, width, height,
             params->quality, params->subsampling, stream);
    if ((format != INPUT_RGB && format != INPUT_RGBI) || width <= 0 || height <= 0)
        return INVALID_PARAMETER;
    samp = params->subsampling == CSS_444 ? TJSAMP_444 : params->subsampling == CSS_422 ? TJSAMP_422 : TJSAMP_420;
    pixels = malloc((size_t)width * height * 3);
    for (int y = 0; y < height; y++)
        for (int x = 0; x < width; x++)
            for (int c = 0; c < 3; c++)
                pixels[((size_t)y * width + x) * 3 + c] = format == INPUT_RGBI
                    ? source->channel[0][y * source->pitch[0] + (size_t)x * 3 + c]
                    : source->channel[c][y * source->pitch[c] + x];
    if (state->data)
        tjFree(state->data);
    state->data = NULL;
    state->size = 0;
    tj = tjInitCompress();
    ret = tjCompress2(tj, pixels, width, width * 3, height, TJPF_RGB, &state->data, &state->size, samp,
                      params->quality, TJFLAG_ACCURATEDCT);
    tjDestroy(tj);
    free(pixels);
    return ret == 0 ? SUCCESS : EXECUTION_FAILED;
}

#ifndef STUB_WITHOUT_nvjpegEncodeRetrieveBitstream
int nvjpegEncodeRetrieveBitstream(handle_t *handle, encoder_t *state, unsigned char *data, size_t *length,
                                  void *stream)
{
    (void)handle;
    log_call("nvjpegEncodeRetrieveBitstream(%s, stream=%p)\n", data ? "data" : "size", stream);
    if (!state->data)
        return INVALID_PARAMETER;
    if (data) {
        if (*length < state->size)
            return INVALID_PARAMETER;
        memcpy(data, state->data, state->size);
    }
    *length = state->size;
    return SUCCESS;
}
#endif

__attribute__((destructor)) static void stub_nvjpeg_report(void)
{
    const char *path = getenv("STUB_NVJPEG_REPORT");
    FILE *file;
    if (!path || !(file = fopen(path, "w")))
        return;
    fprintf(file, "handles=%d handles_destroyed=%d states=%d states_destroyed=%d streams=%d streams_destroyed=%d "
            "encoders=%d encoders_destroyed=%d params=%d params_destroyed=%d no_context=%d\n",
            stub_nvjpeg_handles, stub_nvjpeg_handles_destroyed, stub_nvjpeg_states, stub_nvjpeg_states_destroyed,
            stub_nvjpeg_streams, stub_nvjpeg_streams_destroyed, stub_nvjpeg_encoders, stub_nvjpeg_encoders_destroyed,
            stub_nvjpeg_params, stub_nvjpeg_params_destroyed, stub_nvjpeg_no_context);
    fclose(file);
}
