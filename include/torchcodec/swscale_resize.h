/* torchcodec: libswscale's bilinear RGB -> RGB resize (TorchCodec's Resize transform), computed per
 * output pixel, for the CUDA kernels and their tests.
 *
 * TorchCodec resizes the RGB image of a decoded frame with swscale (SWS_BILINEAR, RGB24 -> RGB24;
 * RGB48 -> RGB48 for float32 output). swscale (FFmpeg 5.1, x86-64) runs its general scaler there,
 * through a YUV image of its own, limited range, with the matrix it is given (BT.601 for FFmpeg's
 * scale filter, BT.709's table for TorchCodec's own swscale call):
 *
 *   1. input: each pixel's Y (rgb24ToY / rgb48ToY) and its chroma, from pairs of pixels when the
 *      output is at most half as wide as the input (rgb24ToUV_half: the pair's sums; rgb48ToUV_half:
 *      the pair's rounded means), else from each pixel (chroma is interpolated to every output
 *      pixel: swscale forces SWS_FULL_CHR_H_INT for RGB input). An odd width's last pair reads the
 *      pixel after the row: the next pixel of the image a crop was cut from, or 0 past its edge;
 *   2. the horizontal filters (hScale16To15 for the 14-bit values of the 8-bit chain, hScale16To19
 *      for the 16-bit chain's): luma and chroma each from their own positions, to the output width;
 *   3. the vertical filter (the same for luma and chroma) and the output function: yuv2rgb24_full_X
 *      (yuv2rgb24_full_2 for 2-tap filters, which leaves out the rounding term), yuv2rgba64_full_X
 *      (whose 1- and 2-tap forms compute the same values), with swscale_rgb.h's output arithmetic.
 *
 * The filters are utils.c's initFilter for SWS_BILINEAR (swscale_rgb.h's tc_sws_init_filter),
 * tabulated per resize geometry on the host (tc_resize_filter_table); the coefficients of the
 * internal YUV are fill_rgb2yuv_table's (tc_sws_rgb2yuv_table) and ff_yuv2rgb_c_init_tables's
 * (tc_sws_coeffs_for(matrix, 0)). tests/resize_model.py is a numpy model of the same, written apart,
 * checked against the ffmpeg CLI; the kernels are checked against torchcodec's CPU path.
 *
 * Plain C99 and CUDA device code (TC_COLOUR_FN); the table builders are host C only.
 */
#ifndef TORCHCODEC_SWSCALE_RESIZE_H
#define TORCHCODEC_SWSCALE_RESIZE_H

#include <stdint.h>

#include "torchcodec/swscale_rgb.h"

/* The two chains: 8-bit (RGB24 images, 15-bit intermediates) and 16-bit (RGB48, 19-bit). */
enum {
    TC_RESIZE_CHAIN8 = 0,
    TC_RESIZE_CHAIN16 = 1,
};

/* ---- per pixel ------------------------------------------------------------------------------- */

/* The input step: Y of a pixel, and a chroma component (kc: three coefficients of the table, its
 * U or V row) of a pixel or of a pair of pixels (the sums of their components), as swscale stores
 * them (14-bit values in the 8-bit chain, 16-bit in the other). The sums are non-negative and
 * below 2^32: computed in uint32_t, as the 16-bit chain's unsigned arithmetic does. */
TC_COLOUR_FN int32_t tc_resize_dot(const int32_t *kc, int32_t r, int32_t g, int32_t b, uint32_t bias, int shift)
{
    return (int32_t)(((uint32_t)(kc[0] * r) + (uint32_t)(kc[1] * g) + (uint32_t)(kc[2] * b) + bias) >> shift);
}

TC_COLOUR_FN int32_t tc_resize_luma(const int32_t k[9], int chain, int32_t r, int32_t g, int32_t b)
{
    if (chain == TC_RESIZE_CHAIN8)
        return tc_resize_dot(k, r, g, b, (32u << 14) + (1u << 8), 9);          /* rgb24ToY */
    return (uint16_t)tc_resize_dot(k, r, g, b, (16u << 23) + (1u << 14), 15);   /* rgb48ToY */
}

/* Chroma of one pixel (full width), kc = k + 3 (U) or k + 6 (V). */
TC_COLOUR_FN int32_t tc_resize_chroma(const int32_t *kc, int chain, int32_t r, int32_t g, int32_t b)
{
    if (chain == TC_RESIZE_CHAIN8)
        return tc_resize_dot(kc, r, g, b, (256u << 14) + (1u << 8), 9);        /* rgb24ToUV */
    return (uint16_t)tc_resize_dot(kc, r, g, b, (1u << 30) + (1u << 14), 15);   /* rgb48ToUV */
}

/* Chroma of a pair of pixels, given the sums of their components (rgb24ToUV_half: the sums as
 * they are; rgb48ToUV_half: their rounded halves). */
TC_COLOUR_FN int32_t tc_resize_chroma_pair(const int32_t *kc, int chain, int32_t r2, int32_t g2, int32_t b2)
{
    if (chain == TC_RESIZE_CHAIN8)
        return tc_resize_dot(kc, r2, g2, b2, (256u << 15) + (1u << 9), 10);
    return tc_resize_chroma(kc, chain, (r2 + 1) >> 1, (g2 + 1) >> 1, (b2 + 1) >> 1);
}

/* The horizontal filter's intermediate from its sum (hScale16To15 with swscale's shift for 8-bit
 * RGB input, hScale16To19). */
TC_COLOUR_FN int32_t tc_resize_intermediate(int chain, uint32_t sum)
{
    if (chain == TC_RESIZE_CHAIN8)
        return tc_sws_intermediate((int32_t)sum, 13, (1 << 15) - 1);
    return tc_sws_intermediate((int32_t)sum, 11, (1 << 19) - 1);
}

/* The output pixel from the vertical filter's sums (over its taps of intermediate * coefficient,
 * wrapping in 32 bits): RGB24 values (chain 8; `rounding`: 512 for yuv2rgb24_full_X, 0 for the
 * 2-tap form) or RGB48 values (chain 16). */
TC_COLOUR_FN void tc_resize_output(const tc_sws_coeffs *c, int chain, int32_t rounding, uint32_t y_sum, uint32_t u_sum,
                                   uint32_t v_sum, int32_t rgb[3])
{
    if (chain == TC_RESIZE_CHAIN8) {
        const uint32_t centre = 128u << 19;
        tc_sws_write_full(c, (int32_t)(y_sum + (uint32_t)rounding) >> 10,
                          (int32_t)(u_sum + (uint32_t)rounding - centre) >> 10,
                          (int32_t)(v_sum + (uint32_t)rounding - centre) >> 10, rgb);
    } else {
        tc_sws_write_rgb48(c, ((int32_t)(y_sum - (1u << 30)) >> 14) + 0x10000, (int32_t)(u_sum - (1u << 30)) >> 14,
                           (int32_t)(v_sum - (1u << 30)) >> 14, rgb);
    }
}

/* ---- the filter table ---------------------------------------------------------------------------
 *
 * One resize of crop_w x crop_h pixels to out_w x out_h: per output column the horizontal luma
 * filter (first pixel, int32; h_taps coefficients, int16, sum 16384) and chroma filter (first pixel
 * or pixel pair, c_taps coefficients); per output row the vertical filter (first row, v_taps
 * coefficients, sum 4096). Offsets in bytes: */
typedef struct tc_resize_filter_layout {
    int64_t h_first, h_coeffs, c_first, c_coeffs, v_first, v_coeffs, bytes;
} tc_resize_filter_layout;

TC_COLOUR_FN int64_t tc_resize_align4(int64_t offset)
{
    return (offset + 3) & ~(int64_t)3;
}

TC_COLOUR_FN tc_resize_filter_layout tc_resize_filter_layout_for(int out_w, int out_h, int h_taps, int c_taps,
                                                                 int v_taps)
{
    tc_resize_filter_layout l;
    l.h_first = 0;
    l.h_coeffs = 4 * (int64_t)out_w;
    l.c_first = tc_resize_align4(l.h_coeffs + 2 * (int64_t)out_w * h_taps);
    l.c_coeffs = l.c_first + 4 * (int64_t)out_w;
    l.v_first = tc_resize_align4(l.c_coeffs + 2 * (int64_t)out_w * c_taps);
    l.v_coeffs = l.v_first + 4 * (int64_t)out_h;
    l.bytes = tc_resize_align4(l.v_coeffs + 2 * (int64_t)out_h * v_taps);
    return l;
}

/* Whether swscale reads the chroma of pixel pairs for this resize (rgb24ToUV_half): outputs at
 * most half as wide as the input. */
TC_COLOUR_FN int tc_resize_half_chroma(int crop_w, int out_w)
{
    return out_w <= crop_w >> 1;
}

#ifndef __CUDACC__
#include <stdlib.h>
#include <string.h>

/* fill_rgb2yuv_table for swscale's coefficients `inv` (sws_getCoefficients: vr, ub, -ug, -vg) and
 * a limited output range, which swscale always uses for it: ry, gy, by, ru, gu, bu, rv, gv, bv in
 * units of 2^-15. swscale replaces the derived values by BT.601's rounded decimals when it is
 * given exactly its default (BT.601) table. */
static inline void tc_sws_rgb2yuv_table(const int32_t inv[4], int32_t k[9])
{
    static const int32_t bt601[4] = {104597, 132201, 25675, 53279};
    const int64_t one = 65536, vr = inv[0], ub = inv[1], ug = -(int64_t)inv[2], vg = -(int64_t)inv[3];
    const int64_t cy = one * 255 / 219;
    const int64_t w = tc_sws_rounded_div(one * one * ug, ub);
    const int64_t v = tc_sws_rounded_div(one * one * vg, vr);
    const int64_t z = one * one - w - v;
    const int64_t c_y = tc_sws_rounded_div(cy * z, one);
    const int64_t c_u = tc_sws_rounded_div(ub * z, one);
    const int64_t c_v = tc_sws_rounded_div(vr * z, one);
    const int64_t unit = (int64_t)1 << 15;
    k[0] = (int32_t)-tc_sws_rounded_div(unit * v, c_y);
    k[1] = (int32_t)tc_sws_rounded_div(unit * one * one, c_y);
    k[2] = (int32_t)-tc_sws_rounded_div(unit * w, c_y);
    k[3] = (int32_t)tc_sws_rounded_div(unit * v, c_u);
    k[4] = (int32_t)-tc_sws_rounded_div(unit * one * one, c_u);
    k[5] = (int32_t)tc_sws_rounded_div(unit * (z + w), c_u);
    k[6] = (int32_t)tc_sws_rounded_div(unit * (v + z), c_v);
    k[7] = (int32_t)-tc_sws_rounded_div(unit * one * one, c_v);
    k[8] = (int32_t)tc_sws_rounded_div(unit * w, c_v);
    if (memcmp(inv, bt601, sizeof(bt601)) == 0) {
        k[0] = (int32_t)(0.299 * 219 / 255 * unit + 0.5);
        k[1] = (int32_t)(0.587 * 219 / 255 * unit + 0.5);
        k[2] = (int32_t)(0.114 * 219 / 255 * unit + 0.5);
        k[3] = -(int32_t)(0.169 * 224 / 255 * unit + 0.5);
        k[4] = -(int32_t)(0.331 * 224 / 255 * unit + 0.5);
        k[5] = (int32_t)(0.500 * 224 / 255 * unit + 0.5);
        k[6] = (int32_t)(0.500 * 224 / 255 * unit + 0.5);
        k[7] = -(int32_t)(0.419 * 224 / 255 * unit + 0.5);
        k[8] = -(int32_t)(0.081 * 224 / 255 * unit + 0.5);
    }
}

/* swscale's bilinear filter from src_n to dst_n samples (its step, default positions 128), aligned
 * as on x86 (horizontal: 4 taps, normalised to 16384; vertical: 2, to 4096). Taps that would read
 * past the last sample (aligned filters of tiny sources) have coefficient 0. Returns 0, or -1 when
 * out of memory. */
static inline int tc_resize_filter(int src_n, int dst_n, int vertical, int16_t **coeff, int32_t **first, int *taps)
{
    const int64_t step = (((int64_t)src_n << 16) + (dst_n >> 1)) / dst_n;
    return tc_sws_init_filter(TC_SWS_BILINEAR, src_n, dst_n, (int)step, 128, 128, vertical ? 2 : 4,
                              vertical ? 1 << 12 : 1 << 14, coeff, first, taps);
}

/* The filter table of a resize of crop_w x crop_h pixels to out_w x out_h, in a malloc'd buffer
 * (*table, *bytes), with its taps. Returns 0, or -1 when out of memory. */
static inline int tc_resize_filter_table(int crop_w, int crop_h, int out_w, int out_h, void **table, int64_t *bytes,
                                         int *h_taps, int *c_taps, int *v_taps)
{
    int16_t *h_coeff = NULL, *c_coeff = NULL, *v_coeff = NULL;
    int32_t *h_first = NULL, *c_first = NULL, *v_first = NULL;
    const int chroma_w = tc_resize_half_chroma(crop_w, out_w) ? (crop_w + 1) >> 1 : crop_w;
    tc_resize_filter_layout l;
    uint8_t *out;
    int ok = 0;
    *table = NULL;
    if (tc_resize_filter(crop_w, out_w, 0, &h_coeff, &h_first, h_taps) < 0
            || tc_resize_filter(chroma_w, out_w, 0, &c_coeff, &c_first, c_taps) < 0
            || tc_resize_filter(crop_h, out_h, 1, &v_coeff, &v_first, v_taps) < 0)
        goto done;
    l = tc_resize_filter_layout_for(out_w, out_h, *h_taps, *c_taps, *v_taps);
    out = (uint8_t *)calloc(1, (size_t)l.bytes);
    if (!out)
        goto done;
    memcpy(out + l.h_first, h_first, 4 * (size_t)out_w);
    memcpy(out + l.h_coeffs, h_coeff, 2 * (size_t)out_w * (size_t)*h_taps);
    memcpy(out + l.c_first, c_first, 4 * (size_t)out_w);
    memcpy(out + l.c_coeffs, c_coeff, 2 * (size_t)out_w * (size_t)*c_taps);
    memcpy(out + l.v_first, v_first, 4 * (size_t)out_h);
    memcpy(out + l.v_coeffs, v_coeff, 2 * (size_t)out_h * (size_t)*v_taps);
    *table = out;
    *bytes = l.bytes;
    ok = 1;
done:
    free(h_coeff);
    free(h_first);
    free(c_coeff);
    free(c_first);
    free(v_coeff);
    free(v_first);
    return ok ? 0 : -1;
}
#endif /* !__CUDACC__ */

#endif /* TORCHCODEC_SWSCALE_RESIZE_H */
