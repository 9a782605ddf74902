/* torchcodec: launch interface of the CUDA kernels in the .cu files of kernels/ (see docs/cuda_kernels.md).
 *
 * Each kernel takes one of these structs by value as its only parameter (cuLaunchKernel with
 * kernelParams = { &params }). They hold fixed-width fields only, laid out identically by a C
 * compiler and by nvcc, so host code that never includes CUDA headers (Cython, C) can fill them.
 * Device pointers are CUdeviceptr values (uint64_t).
 */
#ifndef TORCHCODEC_KERNELS_H
#define TORCHCODEC_KERNELS_H

#include <stdint.h>

#include "torchcodec/swscale_resize.h"
#include "torchcodec/swscale_rgb.h"

/* Chroma of the source (tc_yuv_to_rgb_params.chroma). */
enum {
    TC_CHROMA_420 = 1,          /* half width and height: yuv420p(10), NV12 / P010 / P016 */
    TC_CHROMA_444 = 2,          /* full size: yuv444p(16), NVDEC's YUV444 surfaces */
};

/* Kernels (extern "C" names), one thread per pair of horizontally adjacent output pixels: 2-D grid
 * over (ceil(width / 2), height), z over the batch:
 *   tc_convert_yuv8_to_rgb8    8-bit samples  -> uint8 RGB
 *   tc_convert_yuv8_to_rgbf    8-bit samples  -> float32 RGB in [0, 1]
 *   tc_convert_yuv16_to_rgb8   16-bit words   -> uint8 RGB
 *   tc_convert_yuv16_to_rgbf   16-bit words   -> float32 RGB in [0, 1]
 * each computing swscale's bytes for the route it is given (swscale_rgb.h: uint8 routes for uint8
 * output, RGB48 routes for float32, which is RGB48 / 65535 as on the CPU). The source is read
 * through per-plane steps, so that a crop, a rotation and interleaved chroma are addresses only:
 * the kernels convert the frame as the CPU converts it (rotated first). Interleaved (HWC) or planar
 * (CHW) output is a matter of the destination strides. */
typedef struct tc_yuv_to_rgb_params {
    uint64_t planes[3];        /* address of sample (0, 0) of Y, Cb, Cr of the frame as converted */
    int64_t x_steps[3];        /* bytes from sample (x, y) of each plane to (x + 1, y) */
    int64_t y_steps[3];        /* bytes from sample (x, y) of each plane to (x, y + 1) */
    int64_t src_batch_stride;  /* bytes between consecutive source frames (blockIdx.z), same for all planes */
    uint64_t dst;              /* element (0, 0, R) of the first output image */
    int64_t dst_row_stride;    /* elements (not bytes) between rows */
    int64_t dst_col_stride;    /* elements between pixels of a row (3 for HWC, 1 for CHW) */
    int64_t dst_chan_stride;   /* elements between R, G and B (1 for HWC, height*row for CHW) */
    int64_t dst_batch_stride;  /* elements between consecutive output images */
    uint64_t filters;          /* the chroma filter table (swscale_rgb.h: tc_sws_filter_table) in device
                                  memory, for the general routes of 4:2:0 frames; 0 otherwise */
    int32_t width, height;     /* the frame as converted, which is the output's size (odd sizes allowed) */
    int32_t chroma;            /* TC_CHROMA_* */
    int32_t route;             /* TC_ROUTE_* (swscale_rgb.h: tc_sws_route) */
    int32_t sample_shift;      /* 16-bit kernels: right shift from a stored word to its sample (6 for
                                  P010, 16 - bits for P016 holding bits-bit samples, 0 for yuv420p10le) */
    int32_t sample_bits;       /* bits per sample (8 for the 8-bit kernels) */
    int32_t v_taps, h_taps;    /* taps of the table's vertical and horizontal filters (0: none) */
    tc_sws_coeffs coeffs;      /* tc_sws_coeffs_for(frame->colorspace, frame->color_range == JPEG) */
} tc_yuv_to_rgb_params;

/* Kernels of resize.cu (decode-time transforms on the GPU), one thread per output pixel: 2-D grid
 * over (window_width, window_height). Each runs one stage of a transform plan: crop its source
 * image to (crop_x, crop_y, crop_width, crop_height), then resize it as swscale's bilinear RGB -> RGB
 * resize does (swscale_resize.h) to out_width x out_height, or, for a crop alone (h_taps 0), keep
 * the cropped pixels; and write the window (window_x, window_y, window_width, window_height) of that
 * output. Both kernels run both chains of swscale_resize.h (`chain`: the 8-bit one for uint8
 * output, RGB24 routes and images; the 16-bit one for float32, RGB48):
 *   tc_resize_frame   the source image is the frame of `frame` (8- or 16-bit samples), read
 *                     through its colour route as the CPU path converts it, whole
 *   tc_resize_image   the source image is a packed RGB image of an earlier stage (`image`)
 * Pixels that a stage reads to the right of its image (the pair of an odd width's last pixel) are
 * 0. */
typedef struct tc_resize_params {
    tc_yuv_to_rgb_params frame;   /* the source frame (its dst fields unused), when `image` is 0 */
    uint64_t image;               /* a packed RGB image (RGB24 bytes, RGB48 words) as the source, or 0 */
    int64_t image_row_stride;     /* bytes between its rows */
    uint64_t filters;             /* the stage's tc_resize_filter_table in device memory (0 for a crop) */
    uint64_t dst;                 /* element (0, 0, R) of the window in the output */
    int64_t dst_row_stride;       /* elements between rows */
    int64_t dst_col_stride;       /* elements between pixels of a row */
    int64_t dst_chan_stride;      /* elements between R, G and B */
    int32_t image_width, image_height;      /* the source image (the frame as converted: after rotation) */
    int32_t crop_x, crop_y, crop_width, crop_height;
    int32_t out_width, out_height;          /* the stage's output */
    int32_t window_x, window_y, window_width, window_height;   /* the part of it written */
    int32_t h_taps, c_taps, v_taps;         /* the filter table's taps; h_taps 0: a crop, no resize */
    int32_t half_chroma;                    /* chroma of pixel pairs (tc_resize_half_chroma) */
    int32_t rounding;                       /* the 8-bit chain's vertical rounding: 512, 0 for 2 taps */
    int32_t float_output;                   /* the 16-bit chain: float32 (RGB48 / 65535), else RGB48 words */
    int32_t rgb2yuv[9];                     /* tc_sws_rgb2yuv_table of the resize's matrix */
    int32_t chain;                          /* TC_RESIZE_CHAIN8 (uint8 output) or TC_RESIZE_CHAIN16 */
    tc_sws_coeffs coeffs;                   /* tc_sws_coeffs_for(the resize's matrix, 0) */
} tc_resize_params;

/* tc_copy_strided: copy `count` 2-D blocks of `rows` rows of `row_bytes` bytes, block b row r from
 * src + b * src_batch_stride + r * src_pitch to dst + b * dst_batch_stride + r * dst_pitch.
 * 2-D grid over (row, 16-byte units of a row), z over blocks; copies 16 bytes per thread when every
 * address and stride is 16-byte aligned, single bytes otherwise. */
typedef struct tc_copy_params {
    uint64_t src, dst;
    int64_t src_pitch, dst_pitch;
    int64_t src_batch_stride, dst_batch_stride;
    int64_t row_bytes;
    int32_t rows, count;
} tc_copy_params;

/* tc_convert_rgb8_to_nv12 (encoding on CUDA): uint8 RGB at any byte strides -> NV12 (a Y plane and
 * a plane of Cb Cr pairs at half width and height), the colour math of colour.h's RGB -> YUV part.
 * One thread per 2x2 block of pixels: grid over (ceil(width / 2), ceil(height / 2)); odd widths and
 * heights are allowed (the last block's chroma is the mean of the pixels it has). */
typedef struct tc_rgb_to_nv12_params {
    uint64_t src;              /* the R sample of pixel (0, 0) */
    int64_t src_row_stride;    /* bytes between rows */
    int64_t src_col_stride;    /* bytes between pixels of a row (3 for HWC, 1 for CHW) */
    int64_t src_chan_stride;   /* bytes between R, G and B (1 for HWC, height*row for CHW) */
    uint64_t planes[2];        /* Y, then interleaved Cb Cr */
    int64_t pitches[2];        /* bytes between rows of each plane */
    int32_t width, height;     /* in pixels */
    int32_t matrix;            /* AVColorSpace (colour.h: TC_MATRIX_*) */
    int32_t full_range;        /* 1 for AVCOL_RANGE_JPEG */
} tc_rgb_to_nv12_params;

/* The layouts are fixed: no padding, the same for every compiler that fills or reads them. */
#ifdef __cplusplus
#define TC_STATIC_ASSERT static_assert
#else
#define TC_STATIC_ASSERT _Static_assert
#endif
TC_STATIC_ASSERT(sizeof(tc_yuv_to_rgb_params) == 272, "tc_yuv_to_rgb_params is 272 bytes");
TC_STATIC_ASSERT(sizeof(tc_resize_params) == 552, "tc_resize_params is 552 bytes");
TC_STATIC_ASSERT(sizeof(tc_copy_params) == 64, "tc_copy_params is 64 bytes");
TC_STATIC_ASSERT(sizeof(tc_rgb_to_nv12_params) == 80, "tc_rgb_to_nv12_params is 80 bytes");

/* Suggested launch shape (any shape covering the output works; threads outside it return). */
#define TC_KERNEL_BLOCK_X 32
#define TC_KERNEL_BLOCK_Y 8

#endif /* TORCHCODEC_KERNELS_H */
