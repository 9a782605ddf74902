# The Scaler owns a SwsContext: decoded frames to RGB in caller-provided memory, rotation applied,
# then the decoder's transforms (crops and resizes), planned once as a short list of stages.
from libc.stdint cimport uint8_t, uint16_t
from torchcodec._core._device_converter cimport DeviceConverter
from torchcodec._ffmpeg.avutil cimport AVFrame, AVPixelFormat
from torchcodec._ffmpeg cimport swscale as sws
from torchcodec._ffmpeg.swscale cimport SwsContext


# The flags the ffmpeg CLI gives swscale (fftools: sws_flags=bicubic), for every swscale context of
# the package that converts pixel formats (decoding's YUV->RGB, encoding's RGB->YUV).
cdef inline int cli_sws_flags() noexcept nogil:
    return sws.SWS_BICUBIC

cdef enum:
    MAX_STAGES = 8          # transform stages one Scaler runs per frame
    NUM_BUFFERS = 8         # scratch buffers (see Scaler.get_buffer)
    PLANE_SLICE_ROWS = 32   # rows of one slice of a resize through 14-bit planes (see rgb_planes.h)


cdef struct Stage:
    # One stage of a transform plan: crop the stage's input to (x, y, crop_w, crop_h), then, when
    # ``resize`` is set, resize (bilinear) to out_w x out_h; otherwise out = crop. Every stage works
    # on RGB: stage 0 on the decoded (rotated) frame's conversion, each later one on the output of
    # the one before.
    int x
    int y
    int crop_w
    int crop_h
    int out_w
    int out_h
    bint resize


cdef struct ContextKey:
    # What a swscale context was made for: sizes, formats, flags, and the colour matrix and range
    # given to it (sws_setColorspaceDetails). A context is reused only for an equal key.
    int src_w
    int src_h
    int src_format
    int dst_w
    int dst_h
    int dst_format
    int flags
    int colorspace
    int color_range


cdef extern from "torchcodec/colour.h" nogil:
    # The YUV -> RGB matrices in libswscale's x86 units (see the header).
    ctypedef struct tc_colour_coeffs:
        pass
    tc_colour_coeffs tc_colour_coeffs_for(int matrix, int full_range)


cdef extern from "torchcodec/swscale_rgb.h" nogil:
    # libswscale's YUV -> RGB arithmetic per route, shared with the CUDA kernels (see the header).
    ctypedef struct tc_sws_coeffs:
        pass
    tc_sws_coeffs tc_sws_coeffs_from(const int *inv, int full_range)
    void tc_sws_table_rgb(const tc_sws_coeffs *c, int y, int u, int v, int rgb[3])


cdef extern from "torchcodec/yuv8_rgb.h" nogil:
    # libswscale's 8-bit 4:2:0 and 4:2:2 -> RGB24 converter (x86), reproduced with AVX2 (see the header).
    int tc_yuv8_vector_code
    int tc_yuv8_vectors()
    void tc_yuv8_convert_rows(const tc_colour_coeffs *c, int chroma_shift, const uint8_t *const *src,
                              const int *src_stride, int width, uint8_t *dst, Py_ssize_t dst_stride, int row_begin,
                              int row_end, int streaming)
    void tc_stream_fence()


cdef extern from "torchcodec/hbd_rgb.h" nogil:
    # libswscale's 9- to 12-bit 4:2:0 -> RGB24 conversion, reproduced in one pass (see the header).
    ctypedef struct tc_hbd_plan:
        int width
        int height
        int bits
        int taps
        int has_vector_form
    tc_hbd_plan *tc_hbd_plan_new(int width, int height, int bits, const int *inv_table, int full_range)
    void tc_hbd_plan_free(tc_hbd_plan *plan)
    int tc_hbd_vector_code
    void tc_hbd_convert_rows(const tc_hbd_plan *plan, const uint8_t *const *src, const int *src_stride,
                             uint8_t *dst, Py_ssize_t dst_stride, int row_begin, int row_end, uint8_t *scratch,
                             int streaming)


cdef struct FastPath:
    # A one-pass conversion to RGB24 that gives swscale's bytes (see fast_path_for): hbd_rgb.h's plan
    # for 9- to 12-bit 4:2:0 frames, or yuv8_rgb.h's rows for 8-bit 4:2:0 and 4:2:2 frames.
    tc_hbd_plan *hbd            # the high-bit-depth plan, or NULL
    int chroma_shift            # yuv8_rgb.h's rows: 1 (4:2:0) or 0 (4:2:2); -1: not these
    tc_colour_coeffs coeffs     # their matrix
    int width
    int height
    int bits                    # the samples' depth


cdef struct FusedKey:
    # A resize of a whole decoded frame: the frame's conversion to RGB24 (the key scale() gives its
    # swscale context) and the RGB-to-RGB resize after it. A resize straight from the YUV planes
    # (rgb_planes.h's tc_yuv420_to_planes) is decided for an equal key.
    ContextKey frame
    ContextKey resize


cdef extern from "torchcodec/rgb_planes.h" nogil:
    # libswscale's first step of an RGB24 resize (its 14-bit Y, U, V of the rows), reproduced.
    ctypedef struct tc_rgb_matrix:
        int has_vector_form
    void tc_rgb_matrix_init(tc_rgb_matrix *m, const int *table)
    int tc_rgb_planes_vector_code
    void tc_rgb_to_planes(const tc_rgb_matrix *m, const uint8_t *src, Py_ssize_t src_stride, int width, int rows,
                          uint16_t *y, Py_ssize_t y_stride, uint16_t *u, uint16_t *v, Py_ssize_t c_stride)
    int tc_rgb_planes_vectors(const tc_rgb_matrix *m)
    void tc_yuv420_to_planes(const tc_rgb_matrix *m, const tc_colour_coeffs *c, const uint8_t *const *src,
                             const int *src_stride, int first, int rows, int width, uint8_t *rgb, uint16_t *y,
                             Py_ssize_t y_stride, uint16_t *u, uint16_t *v, Py_ssize_t c_stride)


cdef class Scaler(DeviceConverter):
    cdef SwsContext *ptr                        # decoded frames to RGB
    cdef ContextKey key                         # what ptr was made for
    cdef SwsContext *stage_ctx[MAX_STAGES]      # resizes of the stages: RGB, or 14-bit planes, to RGB
    cdef ContextKey stage_key[MAX_STAGES]
    cdef AVFrame *rotated           # the frame's planes turned by the display rotation
    cdef AVFrame *view              # a crop of a frame: its planes, offset (borrowed, no buffers)
    cdef uint8_t *buffers[NUM_BUFFERS]
    cdef size_t buffer_sizes[NUM_BUFFERS]
    cdef Stage stages[MAX_STAGES]
    cdef readonly int num_stages    # 0: no transforms
    cdef bint single_resize         # the plan is one Resize and nothing else (see set_stages)
    cdef FastPath fast              # swscale's conversion for fast_key, reproduced (when fast_active)
    cdef ContextKey fast_key        # what fast was decided for
    cdef bint fast_decided          # fast_key holds a decision
    cdef bint fast_active           # the decision: frames of fast_key take fast
    cdef FusedKey fused_key         # what fused_verdict was decided for
    cdef int fused_verdict          # 1: resize frames of fused_key from their YUV planes; 0: not; -1: undecided

    cdef uint8_t *get_buffer(self, int which, size_t size) except NULL nogil
    cdef const FastPath *fast_plan(self, const ContextKey *want, SwsContext *ctx) noexcept nogil
    cdef const AVFrame *rotate_frame(self, const AVFrame *frame, int rotation) except NULL nogil
    cdef const AVFrame *crop_frame(self, const AVFrame *frame, const Stage *stage) except NULL nogil
    cdef uint8_t *padded_output(self, Py_ssize_t *stride, int width, int height, int bpp) except NULL nogil
    cdef int scale(self, const AVFrame *frame, uint8_t *dst, Py_ssize_t row_stride, int width, int height,
                   AVPixelFormat dst_format, bint padded) except -1 nogil
    cdef int scale_rgb(self, int k, const uint8_t *src, Py_ssize_t src_stride, const AVFrame *yuv, uint8_t *dst,
                       Py_ssize_t dst_stride, AVPixelFormat rgb_format, int colorspace, bint padded) except -1 nogil
    cdef int to_rgb(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                    int width, int height, AVPixelFormat rgb_format, bint padded) except -1 nogil
    cdef const uint8_t *converted_crop(self, const AVFrame *frame, int rotation, const Stage *stage,
                                       Py_ssize_t *stride, AVPixelFormat rgb_format) except NULL nogil
    cdef bint fused_applies(self, const AVFrame *frame, int rotation, const Stage *stage, AVPixelFormat rgb_format,
                            int matrix) noexcept nogil
    cdef int run_stages(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                        AVPixelFormat rgb_format, bint padded) except -1 nogil
    cdef int convert(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                     int width, int height, bint as_float) except -1 nogil


# The comparisons with swscale that decide where the one-pass conversions and the planes route run
# (tests/engine_probe.pyx calls them too, for geometries of its own).
cdef SwsContext *context_for(SwsContext **slot, ContextKey *have, const ContextKey *want) except NULL nogil
cdef bint fast_path_for(const ContextKey *want, FastPath *path) noexcept nogil
cdef void fast_path_free(FastPath *path) noexcept nogil
cdef bint agrees_with_swscale(const FastPath *path, SwsContext *ctx, int pixel_format) noexcept nogil
cdef bint takes_planes_route(const ContextKey *want) noexcept nogil
cdef void resize_key(const Stage *stage, int rgb_format, int colorspace, ContextKey *key) noexcept nogil
cdef bint same_resize(const ContextKey *resize, const ContextKey *frame) noexcept nogil
cdef int vector_rows(int enabled) noexcept nogil

# The transform plan, for every converter that runs one (the Scaler, the CUDA converter).
cdef int parse_stages(stages, Stage *plan) except -1
cdef bint stage_resizes(const Stage *stage) noexcept nogil
cdef int resize_matrix(bint single_resize, int rotation, int frame_width, const Stage *stage) noexcept nogil
