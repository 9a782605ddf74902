/* torchcodec: YUV -> RGB24 / RGB48 as libswscale computes it for the CPU decoder, once for the CPU
 * tests and the CUDA kernels.
 *
 * The CPU path converts every frame with swscale (the ffmpeg CLI's flags: bicubic, the frame's
 * matrix and range given explicitly; float32 output is RGB48 / 65535). For YUV input of 8 to 16
 * bits, 4:2:0 or 4:4:4, swscale (FFmpeg 5.1 on x86-64) takes one of five routes, and this header
 * computes each of them exactly (tc_sws_route picks the route as swscale does):
 *
 *   TC_ROUTE_X86_RGB24     yuv420p of even height -> RGB24: the x86 converter (colour.h's
 *                          tc_yuv8_to_rgb8), each chroma sample for its 2x2 block;
 *   TC_ROUTE_TABLE_RGB48   the same frames -> RGB48: the C converter of yuv2rgb.c, whose 8-bit
 *                          table values are written twice (v * 257); for odd widths it leaves the
 *                          last column unwritten (the kernels write the table's value there);
 *   TC_ROUTE_PACKED_RGB24  everything else -> RGB24, 4:2:0 of even width: the general scaler with
 *                          one chroma value per pixel pair (output.c's yuv2rgb24_X, its tables);
 *   TC_ROUTE_FULL_RGB24    4:4:4, and 4:2:0 of odd width (swscale then interpolates chroma to
 *                          every pixel: SWS_FULL_CHR_H_INT) -> RGB24: yuv2rgb_write_full;
 *   TC_ROUTE_RGB48         everything else -> RGB48: yuv2rgba64(_full) (the same arithmetic for
 *                          shared and per-pixel chroma).
 *
 * The general scaler's steps, for a conversion at the same size: luma and chroma samples become
 * 15-bit (RGB24) or 19-bit (RGB48) intermediates (hScale: an identity filter, or for odd-width
 * 4:2:0 chroma the bicubic filter to full width); chroma rows are filtered vertically (bicubic, from
 * the chroma rows to the picture's: usually 4 taps, 1 for 4:4:4); then the output functions. The
 * filters are swscale's own (utils.c's initFilter, reproduced by tc_sws_init_filter on the host),
 * handed to the kernels as a table per frame geometry (tc_sws_filter_table). A 2-tap vertical
 * filter (frames of 5 to 8 rows), which swscale runs through its "1" output functions (the first
 * row alone below an alpha of 2048, else the mean of two rows), is stored as the equivalent taps
 * (4096, 0) or (2048, 2048).
 *
 * Overflows are swscale's: sums wrap in 32 bits as they do in its int arithmetic (computed here in
 * uint32_t so that C and CUDA agree on it), then clip. tests/test_swscale_rgb.py checks the routes,
 * through the kernels and a numpy model, against swscale's bytes.
 *
 * Plain C99 and CUDA device code (TC_COLOUR_FN); the filter builder at the end is host C only.
 */
#ifndef TORCHCODEC_SWSCALE_RGB_H
#define TORCHCODEC_SWSCALE_RGB_H

#include <stdint.h>

#include "torchcodec/colour.h"

enum {
    TC_ROUTE_X86_RGB24 = 0,
    TC_ROUTE_TABLE_RGB48 = 1,
    TC_ROUTE_PACKED_RGB24 = 2,
    TC_ROUTE_FULL_RGB24 = 3,
    TC_ROUTE_RGB48 = 4,
};

/* The route swscale takes for a width x height frame of `bits`-bit samples (4:2:0 when `subsampled`,
 * else 4:4:4) to RGB48 (`to_rgb48`) or RGB24. `planar`: the frame is yuv420p itself (swscale's
 * unscaled converters take planar 4:2:0 only; NV12 goes through the general scaler). */
TC_COLOUR_FN int tc_sws_route(int bits, int subsampled, int planar, int width, int height, int to_rgb48)
{
    if (bits == 8 && subsampled && planar && !(height & 1))
        return to_rgb48 ? TC_ROUTE_TABLE_RGB48 : TC_ROUTE_X86_RGB24;
    if (to_rgb48)
        return TC_ROUTE_RGB48;
    return subsampled && !(width & 1) ? TC_ROUTE_PACKED_RGB24 : TC_ROUTE_FULL_RGB24;
}

/* Whether the route gives each pixel its own chroma value (else one per pixel pair). */
TC_COLOUR_FN int tc_sws_full_chroma(int route, int subsampled, int width)
{
    return (route == TC_ROUTE_FULL_RGB24 || route == TC_ROUTE_RGB48) && (!subsampled || (width & 1));
}

/* Everything the routes need of one (matrix, range), computed once per conversion (host side). */
typedef struct tc_sws_coeffs {
    tc_colour_coeffs x86;                           /* TC_ROUTE_X86_RGB24 (colour.h) */
    int32_t y_offset, y_coeff, v2r, v2g, u2g, u2b;  /* swscale's yuv2rgb_* factors: FULL_RGB24, RGB48 */
    /* swscale's RGB tables (TABLE_RGB48, PACKED_RGB24) as arithmetic: entry i of its luma table is
     * clip8((y_base + i * cy) >> 16), and a pixel of luma index y and chroma u, v reads entry
     * y + k_r + ((v * c_rv) >> 16) for red, y + k_g + ((u * c_gu) >> 16) + ((v * c_gv) >> 16) for green,
     * y + k_b + ((u * c_bu) >> 16) for blue. */
    int32_t y_base, cy, k_r, k_g, k_b, c_rv, c_gu, c_gv, c_bu;
    int32_t reserved;
} tc_sws_coeffs;

/* The table's chroma factors: each divided by the luma gain, rounded as yuv2rgb.c does. */
TC_COLOUR_FN int64_t tc_sws_table_factor(int64_t factor, int64_t cy)
{
    return (factor * 65536 + 0x8000) / (cy > 1 ? cy : 1);
}

/* The coefficients for swscale's `inv` (sws_getCoefficients) and range. */
TC_COLOUR_FN tc_sws_coeffs tc_sws_coeffs_from(const int32_t inv[4], int full_range)
{
    tc_sws_coeffs c;
    const tc_sws_factors f = tc_sws_factors_for(inv, full_range);
    const int64_t crv = tc_sws_table_factor(f.crv, f.cy), cbu = tc_sws_table_factor(f.cbu, f.cy);
    const int64_t cgu = tc_sws_table_factor(f.cgu, f.cy), cgv = tc_sws_table_factor(f.cgv, f.cy);
    const int32_t y_offsets = (full_range ? 384 : 326) + 512;  /* 512: the table's luma headroom */
    c.x86 = tc_colour_coeffs_from(f, full_range);
    c.y_offset = tc_round_to_int16(f.oy * (1 << 9));
    c.y_coeff = tc_round_to_int16(f.cy * (1 << 13));
    c.v2r = tc_round_to_int16(f.crv * (1 << 13));
    c.v2g = tc_round_to_int16(f.cgv * (1 << 13));
    c.u2g = tc_round_to_int16(f.cgu * (1 << 13));
    c.u2b = tc_round_to_int16(f.cbu * (1 << 13));
    c.y_base = (int32_t)(-(384 << 16) - 512 * f.cy - f.oy + 0x8000);
    c.cy = (int32_t)f.cy;
    c.k_r = (int32_t)(y_offsets - (crv >> 9));
    c.k_g = (int32_t)(y_offsets - (cgu >> 9) - (cgv >> 9));
    c.k_b = (int32_t)(y_offsets - (cbu >> 9));
    c.c_rv = (int32_t)crv;
    c.c_gu = (int32_t)cgu;
    c.c_gv = (int32_t)cgv;
    c.c_bu = (int32_t)cbu;
    c.reserved = 0;
    return c;
}

/* Every coefficient of AVColorSpace `matrix` and the range (full_range nonzero: AVCOL_RANGE_JPEG). */
TC_COLOUR_FN tc_sws_coeffs tc_sws_coeffs_for(int matrix, int full_range)
{
    int32_t inv[4];
    tc_sws_coefficients(matrix, inv);
    return tc_sws_coeffs_from(inv, full_range);
}

/* ---- per pixel ------------------------------------------------------------------------------ */

/* The intermediate swscale makes of a sample (hScale with an identity filter: `acc` = sample << 14)
 * or of a horizontal filter's sum `acc`: acc >> shift, at most `top`. shift and top: tc_sws_shift,
 * tc_sws_top. */
TC_COLOUR_FN int32_t tc_sws_intermediate(int32_t acc, int shift, int32_t top)
{
    const int32_t v = acc >> shift;
    return v > top ? top : v;
}

/* Bits of the intermediates: 19 for RGB48, 15 otherwise. */
TC_COLOUR_FN int tc_sws_shift(int bits, int route)
{
    return bits + 14 - (route == TC_ROUTE_RGB48 ? 19 : 15);
}

TC_COLOUR_FN int32_t tc_sws_top(int route)
{
    return route == TC_ROUTE_RGB48 ? (1 << 19) - 1 : (1 << 15) - 1;
}

/* Entry `index` of swscale's luma table. */
TC_COLOUR_FN int32_t tc_sws_table_entry(const tc_sws_coeffs *c, int32_t index)
{
    const int32_t v = (c->y_base + index * c->cy) >> 16;
    return v < 0 ? 0 : v > 255 ? 255 : v;
}

/* The tables' R, G, B for luma index y (0..256) and chroma u, v (0..255). */
TC_COLOUR_FN void tc_sws_table_rgb(const tc_sws_coeffs *c, int32_t y, int32_t u, int32_t v, int32_t rgb[3])
{
    rgb[0] = tc_sws_table_entry(c, y + c->k_r + ((v * c->c_rv) >> 16));
    rgb[1] = tc_sws_table_entry(c, y + c->k_g + ((u * c->c_gu) >> 16) + ((v * c->c_gv) >> 16));
    rgb[2] = tc_sws_table_entry(c, y + c->k_b + ((u * c->c_bu) >> 16));
}

TC_COLOUR_FN int32_t tc_sws_clip8(int32_t v)
{
    return v < 0 ? 0 : v > 255 ? 255 : v;
}

/* av_clip_uintp2(a, p) */
TC_COLOUR_FN int32_t tc_sws_clip_bits(int32_t a, int p)
{
    return (a & ~((1 << p) - 1)) ? ((~a) >> 31) & ((1 << p) - 1) : a;
}

/* A pixel of TC_ROUTE_PACKED_RGB24 from its luma intermediate and its pair's vertical chroma sums
 * (sum over the filter's taps of intermediate * coefficient): yuv2rgb24_X. */
TC_COLOUR_FN void tc_sws_packed_rgb24(const tc_sws_coeffs *c, int32_t luma, int32_t u_sum, int32_t v_sum,
                                      int32_t rgb[3])
{
    tc_sws_table_rgb(c, (luma + 64) >> 7, tc_sws_clip8(((1 << 18) + u_sum) >> 19),
                     tc_sws_clip8(((1 << 18) + v_sum) >> 19), rgb);
}

/* yuv2rgb_write_full for RGB24: the pixel from luma Y and chroma U, V as the output functions give
 * them (after their vertical filter: yuv2rgb24_full_X's sums + rounding, >> 10). */
TC_COLOUR_FN void tc_sws_write_full(const tc_sws_coeffs *c, int32_t y, int32_t u, int32_t v, int32_t rgb[3])
{
    const uint32_t luma = (uint32_t)((y - c->y_offset) * c->y_coeff + (1 << 21));
    int32_t r = (int32_t)(luma + (uint32_t)(v * c->v2r));
    int32_t g = (int32_t)(luma + (uint32_t)(v * c->v2g) + (uint32_t)(u * c->u2g));
    int32_t b = (int32_t)(luma + (uint32_t)(u * c->u2b));
    if ((r | g | b) & (int32_t)0xC0000000) {
        r = tc_sws_clip_bits(r, 30);
        g = tc_sws_clip_bits(g, 30);
        b = tc_sws_clip_bits(b, 30);
    }
    rgb[0] = r >> 22;
    rgb[1] = g >> 22;
    rgb[2] = b >> 22;
}

/* A pixel of TC_ROUTE_FULL_RGB24: yuv2rgb24_full_X with one luma tap (4096) and the chroma sums. */
TC_COLOUR_FN void tc_sws_full_rgb24(const tc_sws_coeffs *c, int32_t luma, int32_t u_sum, int32_t v_sum,
                                    int32_t rgb[3])
{
    tc_sws_write_full(c, luma * 4, ((1 << 9) - (128 << 19) + u_sum) >> 10, ((1 << 9) - (128 << 19) + v_sum) >> 10,
                      rgb);
}

/* The RGB48 pixel (16-bit values) of yuv2rgba64_full_X from luma Y and chroma U, V after its
 * vertical filter (the sums, less their offsets, >> 14). */
TC_COLOUR_FN void tc_sws_write_rgb48(const tc_sws_coeffs *c, int32_t y, int32_t u, int32_t v, int32_t rgb[3])
{
    const uint32_t luma = (uint32_t)((y - c->y_offset) * c->y_coeff + (1 << 13) - (1 << 29));
    rgb[0] = tc_sws_clip_bits(((int32_t)(luma + (uint32_t)(v * c->v2r)) >> 14) + (1 << 15), 16);
    rgb[1] = tc_sws_clip_bits(((int32_t)(luma + (uint32_t)(v * c->v2g) + (uint32_t)(u * c->u2g)) >> 14) + (1 << 15),
                              16);
    rgb[2] = tc_sws_clip_bits(((int32_t)(luma + (uint32_t)(u * c->u2b)) >> 14) + (1 << 15), 16);
}

/* A pixel of TC_ROUTE_RGB48 (16-bit values): yuv2rgba64_X / yuv2rgba64_full_X, whose luma sum with
 * its one tap is the intermediate >> 2. The chroma sums wrap in 32 bits as swscale's unsigned
 * products do. */
TC_COLOUR_FN void tc_sws_rgb48(const tc_sws_coeffs *c, int32_t luma, int32_t u_sum, int32_t v_sum, int32_t rgb[3])
{
    tc_sws_write_rgb48(c, luma >> 2, (int32_t)((uint32_t)u_sum - (1u << 30)) >> 14,
                       (int32_t)((uint32_t)v_sum - (1u << 30)) >> 14, rgb);
}

/* ---- the chroma filter table ------------------------------------------------------------------
 *
 * Per output row, the vertical chroma filter (4:2:0 only): its first chroma row (int32) and
 * v_taps coefficients (int16, sum 4096); for odd widths, per output column, the horizontal one:
 * its first chroma column and h_taps coefficients (sum 16384). Offsets in bytes: */
typedef struct tc_sws_filter_layout {
    int64_t v_rows, v_coeffs, h_columns, h_coeffs, bytes;
} tc_sws_filter_layout;

TC_COLOUR_FN tc_sws_filter_layout tc_sws_filter_layout_for(int width, int height, int v_taps, int h_taps)
{
    tc_sws_filter_layout l;
    l.v_rows = 0;
    l.v_coeffs = 4 * (int64_t)height;
    l.h_columns = (l.v_coeffs + 2 * (int64_t)height * v_taps + 3) & ~(int64_t)3;
    l.h_coeffs = l.h_columns + (h_taps ? 4 * (int64_t)width : 0);
    l.bytes = l.h_coeffs + 2 * (int64_t)width * h_taps;
    return l;
}

#ifndef __CUDACC__
#include <stdlib.h>
#include <string.h>

static inline int tc_sws_log2(unsigned v)
{
    int n = 0;
    while (v >>= 1)
        n++;
    return n;
}

static inline int64_t tc_sws_rounded_div(int64_t a, int64_t b)
{
    return (a >= 0 ? a + (b >> 1) : a - (b >> 1)) / b;
}

/* The kinds of filter of tc_sws_init_filter: swscale's SWS_BICUBIC (default parameters: the CLI's
 * colour conversion) and SWS_BILINEAR (TorchCodec's Resize). */
enum {
    TC_SWS_BICUBIC = 0,
    TC_SWS_BILINEAR = 1,
};

/* utils.c's initFilter for `kind` without source or destination vectors: src_n samples -> dst_n
 * samples at step x_inc (16.16), positions src_pos/dst_pos in 1/256 pixels (get_local_pos).
 * Coefficients sum to `one`. Returns 0, or -1 when out of memory. */
static inline int tc_sws_init_filter(int kind, int src_n, int dst_n, int x_inc, int src_pos, int dst_pos,
                                     int filter_align, int one, int16_t **out_coeff, int32_t **out_pos, int *out_size)
{
    const int64_t fone = 1LL << (54 - (tc_sws_log2((unsigned)(src_n / dst_n)) < 8
                                       ? tc_sws_log2((unsigned)(src_n / dst_n)) : 8));
    const double cutoff_limit = 0.002 * (double)fone;      /* SWS_MAX_REDUCE_CUTOFF */
    int64_t *filter = NULL, *filter2 = NULL;
    int32_t *pos = NULL;
    int16_t *coeff = NULL;
    int size, size2, min_size, i, j, k;

    pos = (int32_t *)malloc(sizeof(int32_t) * (size_t)dst_n);
    if (!pos)
        goto fail;
    if ((x_inc - 0x10000 < 10 && 0x10000 - x_inc < 10) && src_pos == dst_pos) {   /* unscaled */
        size = 1;
        filter = (int64_t *)calloc((size_t)dst_n, sizeof(int64_t));
        if (!filter)
            goto fail;
        for (i = 0; i < dst_n; i++) {
            filter[i] = fone;
            pos[i] = i;
        }
    } else {
        const int64_t B = 0, C = (int64_t)(0.6 * (1 << 24));
        int64_t x_dst_in_src;
        const int factor = kind == TC_SWS_BILINEAR ? 2 : 4;      /* the filter's support, in samples */
        size = x_inc <= 1 << 16 ? 1 + factor : 1 + (factor * src_n + dst_n - 1) / dst_n;
        if (size > src_n - 2)
            size = src_n - 2;
        if (size < 1)
            size = 1;
        filter = (int64_t *)malloc(sizeof(int64_t) * (size_t)dst_n * (size_t)size);
        if (!filter)
            goto fail;
        x_dst_in_src = ((dst_pos * (int64_t)x_inc) >> 7) - ((src_pos * 0x10000LL) >> 7);
        for (i = 0; i < dst_n; i++) {
            int xx = (int)((x_dst_in_src - (size - 2) * (1LL << 16)) / (1 << 17));
            pos[i] = xx;
            for (j = 0; j < size; j++) {
                int64_t delta = (int64_t)xx * (1 << 17) - x_dst_in_src;
                int64_t d = (delta < 0 ? -delta : delta) << 13;
                int64_t c;
                if (x_inc > 1 << 16)
                    d = d * dst_n / src_n;
                if (kind == TC_SWS_BILINEAR) {
                    c = ((1LL << 30) - d > 0 ? (1LL << 30) - d : 0) * (fone >> 30);
                } else if (d >= 1LL << 31) {
                    c = 0;
                } else {
                    int64_t dd = (d * d) >> 30;
                    int64_t ddd = (dd * d) >> 30;
                    if (d < 1LL << 30)
                        c = (12 * (1 << 24) - 9 * B - 6 * C) * ddd + (-18 * (1 << 24) + 12 * B + 6 * C) * dd
                            + (6 * (1 << 24) - 2 * B) * (1 << 30);
                    else
                        c = (-B - 6 * C) * ddd + (6 * B + 30 * C) * dd + (-12 * B - 48 * C) * d
                            + (8 * B + 24 * C) * (1 << 30);
                    c /= (1LL << 54) / fone;
                }
                filter[i * size + j] = c;
                xx++;
            }
            x_dst_in_src += 2LL * x_inc;
        }
    }
    size2 = size;
    filter2 = filter;               /* no source/destination vectors: filter2 is the filter */
    filter = NULL;

    /* step 1: drop near-zero taps on the left (shifting), count them on the right */
    min_size = 0;
    for (i = dst_n - 1; i >= 0; i--) {
        int min = size2;
        int64_t cut = 0;
        for (j = 0; j < size2; j++) {
            cut += filter2[i * size2] < 0 ? -filter2[i * size2] : filter2[i * size2];
            if ((double)cut > cutoff_limit)
                break;
            if (i < dst_n - 1 && pos[i] >= pos[i + 1])
                break;
            for (k = 1; k < size2; k++)
                filter2[i * size2 + k - 1] = filter2[i * size2 + k];
            filter2[i * size2 + k - 1] = 0;
            pos[i]++;
        }
        cut = 0;
        for (j = size2 - 1; j > 0; j--) {
            cut += filter2[i * size2 + j] < 0 ? -filter2[i * size2 + j] : filter2[i * size2 + j];
            if ((double)cut > cutoff_limit)
                break;
            min--;
        }
        if (min > min_size)
            min_size = min;
    }
    if (min_size == 1 && filter_align == 2)     /* x86: unscaled vertical filtering */
        filter_align = 1;
    size = (min_size + (filter_align - 1)) & ~(filter_align - 1);
    filter = (int64_t *)malloc(sizeof(int64_t) * (size_t)dst_n * (size_t)size);
    if (!filter)
        goto fail;
    /* step 2: keep `size` taps */
    for (i = 0; i < dst_n; i++)
        for (j = 0; j < size; j++)
            filter[i * size + j] = j >= size2 ? 0 : filter2[i * size2 + j];

    /* fold the taps that fall outside the source into its first and last samples */
    for (i = 0; i < dst_n; i++) {
        if (pos[i] < 0) {
            for (j = 1; j < size; j++) {
                int left = j + pos[i] > 0 ? j + pos[i] : 0;
                filter[i * size + left] += filter[i * size + j];
                filter[i * size + j] = 0;
            }
            pos[i] = 0;
        }
        if (pos[i] + size > src_n) {
            int shift = pos[i] + (size - src_n < 0 ? size - src_n : 0);
            int64_t acc = 0;
            for (j = size - 1; j >= 0; j--) {
                if (pos[i] + j >= src_n) {
                    acc += filter[i * size + j];
                    filter[i * size + j] = 0;
                }
            }
            for (j = size - 1; j >= 0; j--)
                filter[i * size + j] = j < shift ? 0 : filter[i * size + j - shift];
            pos[i] -= shift;
            filter[i * size + src_n - 1 - pos[i]] += acc;
        }
        if (pos[i] < 0 || pos[i] >= src_n)
            goto fail;
    }

    /* normalise to `one`, carrying each tap's rounding error into the next */
    coeff = (int16_t *)malloc(sizeof(int16_t) * (size_t)dst_n * (size_t)size);
    if (!coeff)
        goto fail;
    for (i = 0; i < dst_n; i++) {
        int64_t error = 0, sum = 0;
        for (j = 0; j < size; j++)
            sum += filter[i * size + j];
        sum = (sum + one / 2) / one;
        if (!sum)
            sum = 1;
        for (j = 0; j < size; j++) {
            int64_t v = filter[i * size + j] + error;
            int64_t q = tc_sws_rounded_div(v, sum);
            coeff[i * size + j] = (int16_t)q;
            error = v - q * sum;
        }
    }
    free(filter);
    free(filter2);
    *out_coeff = coeff;
    *out_pos = pos;
    *out_size = size;
    return 0;
fail:
    free(filter);
    free(filter2);
    free(pos);
    free(coeff);
    return -1;
}

/* swscale's chroma filter from `chroma_n` samples to `n` pixels (its step, and the default chroma
 * positions of get_local_pos: 128 for both), as tc_sws_init_filter gives it; `vertical` filters
 * are normalised to 4096 and aligned to 2 (x86), horizontal ones to 16384. */
static inline int tc_sws_chroma_filter(int chroma_n, int n, int vertical, int16_t **coeff, int32_t **first, int *taps)
{
    const int64_t step = (((int64_t)chroma_n << 16) + (n >> 1)) / n;
    int i, j;
    if (tc_sws_init_filter(TC_SWS_BICUBIC, chroma_n, n, (int)step, 128, 128, vertical ? 2 : 4,
                           vertical ? 1 << 12 : 1 << 14, coeff, first, taps) < 0)
        return -1;
    /* More taps than samples (aligned filters of tiny frames): every filter starts at sample 0 and
     * the taps past the last sample are 0 (swscale reads them past the row); keep chroma_n. */
    if (*taps > chroma_n) {
        for (i = 0; i < n; i++)
            for (j = 0; j < *taps; j++)
                if (j < chroma_n)
                    (*coeff)[i * chroma_n + j] = (*coeff)[i * *taps + j];
        *taps = chroma_n;
    }
    return 0;
}

/* The chroma filter table of a 4:2:0 frame of width x height as converted (after rotation), in a
 * malloc'd buffer (*table, *bytes), with its taps (*h_taps 0: even width, where the chroma of pixel
 * pairs is not filtered horizontally). Returns 0, or -1 when out of memory. */
static inline int tc_sws_filter_table(int width, int height, void **table, int64_t *bytes, int *v_taps, int *h_taps)
{
    int16_t *v_coeff = NULL, *h_coeff = NULL;
    int32_t *v_first = NULL, *h_first = NULL;
    tc_sws_filter_layout layout;
    uint8_t *out;
    int y, ok = 0;
    *table = NULL;
    *h_taps = 0;
    if (tc_sws_chroma_filter((height + 1) >> 1, height, 1, &v_coeff, &v_first, v_taps) < 0)
        return -1;
    if ((width & 1) && tc_sws_chroma_filter((width + 1) >> 1, width, 0, &h_coeff, &h_first, h_taps) < 0)
        goto done;
    /* A 2-tap vertical filter runs through swscale's "1" functions (vscale.c's packed_vscale): the
     * first row when the second's weight is below 2048, else the mean (rounded as a sum, like the
     * X functions' taps 2048, 2048). */
    if (*v_taps == 2)
        for (y = 0; y < height; y++) {
            int16_t *c = v_coeff + 2 * y;
            if (c[0] + c[1] == 4096 && (unsigned)c[1] <= 4096u) {
                c[0] = c[1] < 2048 ? 4096 : 2048;
                c[1] = 4096 - c[0];
            }
        }
    layout = tc_sws_filter_layout_for(width, height, *v_taps, *h_taps);
    out = (uint8_t *)calloc(1, (size_t)layout.bytes);
    if (!out)
        goto done;
    memcpy(out + layout.v_rows, v_first, 4 * (size_t)height);
    memcpy(out + layout.v_coeffs, v_coeff, 2 * (size_t)height * (size_t)*v_taps);
    if (*h_taps) {
        memcpy(out + layout.h_columns, h_first, 4 * (size_t)width);
        memcpy(out + layout.h_coeffs, h_coeff, 2 * (size_t)width * (size_t)*h_taps);
    }
    *table = out;
    *bytes = layout.bytes;
    ok = 1;
done:
    free(v_coeff);
    free(v_first);
    free(h_coeff);
    free(h_first);
    return ok ? 0 : -1;
}
#endif /* !__CUDACC__ */

#endif /* TORCHCODEC_SWSCALE_RGB_H */
