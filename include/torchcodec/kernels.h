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

/* Chroma layouts of the source (tc_yuv_to_rgb_params.chroma). */
enum {
    TC_CHROMA_420_INTERLEAVED = 0,  /* NV12 / P010 / P016: plane 1 holds Cb Cr pairs, half size */
    TC_CHROMA_420_PLANAR = 1,       /* yuv420p(10): planes 1 and 2, half width and height */
    TC_CHROMA_444_PLANAR = 2,       /* yuv444p(16), NVDEC's YUV444 surfaces: planes 1 and 2, full size */
};

/* Kernels (extern "C" names), one thread per output pixel, 2-D grid over (width, height), z over
 * the batch:
 *   tc_convert_yuv8_to_rgb8    8-bit samples  -> uint8 RGB   (bit-exact with swscale's x86 YUV420 -> RGB24)
 *   tc_convert_yuv8_to_rgbf    8-bit samples  -> float32 RGB in [0, 1]
 *   tc_convert_yuv16_to_rgb8   16-bit samples -> uint8 RGB
 *   tc_convert_yuv16_to_rgbf   16-bit samples -> float32 RGB in [0, 1]
 * Interleaved (HWC) or planar (CHW) output is a matter of the destination strides. */
typedef struct tc_yuv_to_rgb_params {
    uint64_t planes[3];        /* Y, then Cb/Cr as `chroma` says (plane 2 unused when interleaved) */
    int64_t pitches[3];        /* bytes between rows of each plane */
    int64_t src_batch_stride;  /* bytes between consecutive source frames (blockIdx.z), same for all planes */
    uint64_t dst;              /* element (0, 0, R) of the first output image */
    int64_t dst_row_stride;    /* elements (not bytes) between rows */
    int64_t dst_col_stride;    /* elements between pixels of a row (3 for HWC, 1 for CHW) */
    int64_t dst_chan_stride;   /* elements between R, G and B (1 for HWC, height*row for CHW) */
    int64_t dst_batch_stride;  /* elements between consecutive output images */
    int32_t width, height;     /* output size: the crop, in pixels (odd sizes allowed) */
    int32_t crop_left, crop_top;  /* source position of output pixel (0, 0); even for 4:2:0 */
    int32_t chroma;            /* TC_CHROMA_* */
    int32_t matrix;            /* AVColorSpace (colour.h: TC_MATRIX_*) */
    int32_t full_range;        /* 1 for AVCOL_RANGE_JPEG */
    int32_t sample_shift;      /* 16-bit kernels: left shift that MSB-aligns a sample (0 for P010/P016
                                  and NVDEC surfaces, 6 for yuv420p10le); 0 for 8-bit kernels */
    int32_t sample_bits;       /* 16-bit kernels: bits per sample of the content (9 to 16; 10 for a
                                  10-bit stream in a P016 surface): full range is scaled by its true
                                  maximum, 2^bits - 1 (colour.h, tc_sample16_scale) */
    int32_t reserved;          /* 0 */
} tc_yuv_to_rgb_params;

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
TC_STATIC_ASSERT(sizeof(tc_yuv_to_rgb_params) == 136, "tc_yuv_to_rgb_params is 136 bytes");
TC_STATIC_ASSERT(sizeof(tc_copy_params) == 64, "tc_copy_params is 64 bytes");
TC_STATIC_ASSERT(sizeof(tc_rgb_to_nv12_params) == 80, "tc_rgb_to_nv12_params is 80 bytes");

/* Suggested launch shape (any shape covering the output works; threads outside it return). */
#define TC_KERNEL_BLOCK_X 32
#define TC_KERNEL_BLOCK_Y 8

#endif /* TORCHCODEC_KERNELS_H */
