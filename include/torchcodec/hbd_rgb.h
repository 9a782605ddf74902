/* torchcodec: high-bit-depth 4:2:0 YUV -> RGB24, computed as libswscale computes it.
 *
 * libswscale has no fast path from 9- to 14-bit 4:2:0 (yuv420p10le, ...) to packed 8-bit RGB: it
 * runs its general scaler (horizontal filters to 15-bit intermediates, a 4-tap bicubic vertical
 * filter that doubles the chroma rows, then the C table lookup of output.c's yuv2rgb_X), about
 * seven times slower per pixel than its 8-bit converter. This file reproduces that arithmetic for
 * the conversion the CLI's `-vf format=rgb24` asks for (same size, SWS_BICUBIC, default chroma
 * positions, even width, no brightness/contrast/saturation change), in one pass and without the
 * intermediates:
 *
 *   - luma: the unscaled horizontal and vertical filters are identities, so the 8-bit luma index is
 *     ((s << (15 - bits)) * 4096 + 2^18) >> 19;
 *   - chroma: horizontally an identity at half width (packed RGB output shares one chroma sample
 *     between two pixels); vertically the bicubic filter (B = 0, C = 0.6) from chroma rows to luma
 *     rows, built by tc_sws_vertical_filter exactly as utils.c's initFilter builds it (fixed-point
 *     kernel, removal of near-zero taps, alignment, border folding, normalisation with error
 *     carry);
 *   - RGB: the lookup tables of yuv2rgb.c's ff_yuv2rgb_c_init_tables for 24-bit output.
 *
 * Nothing here is trusted blindly: torchcodec compares this function with swscale itself on a
 * frame of random samples of each geometry, format and matrix before it uses it, and keeps
 * swscale where they differ (another FFmpeg release, another CPU's filter alignment).
 *
 * Plain C99 (the AVX2 rows use GCC/Clang target attributes), no libc beyond malloc/free.
 */
#ifndef TORCHCODEC_HBD_RGB_H
#define TORCHCODEC_HBD_RGB_H

#include <stdint.h>
#include <stdlib.h>

#include "torchcodec/cpu.h"
#include "torchcodec/swscale_rgb.h" /* the coefficients, swscale's chroma filter */
#include "torchcodec/yuv8_rgb.h"    /* tc_store_rgb96 */

#define TC_HBD_TABLE_SIZE 2048      /* swscale's luma table: 1024 + 2 * YUVRGB_TABLE_LUMA_HEADROOM */

/* The tables' arithmetic form split at 16 bits, for the vector code (see tc_hbd_rows_avx2). */
typedef struct tc_hbd_vector {
    int16_t y_high, carry_limit, k_r, k_g, k_b;
    uint16_t cy_frac;
    int16_t c_high[4];              /* c_rv, c_gu, c_gv, c_bu: c >> 16 ... */
    uint16_t c_low[4];              /* ... and c & 0xFFFF */
} tc_hbd_vector;

typedef struct tc_hbd_plan {
    int width, height, bits;
    int taps;                       /* vertical chroma filter size */
    int32_t *chroma_row;            /* per output row: the first chroma row its filter reads */
    int16_t *chroma_coeff;          /* per output row: `taps` coefficients (sum 4096) */
    int r_off[256], gu_off[256], gv_off[256], b_off[256];   /* per (clipped) chroma value */
    uint8_t y_table[TC_HBD_TABLE_SIZE];
    /* The same tables as arithmetic, for the vector code: y_table[i] is
     * clip8((y_base + i * cy) >> 16) and each offset k + ((c * coeff) >> 16). */
    int32_t y_base, cy, k_r, k_g, k_b, c_rv, c_gu, c_gv, c_bu;
    tc_hbd_vector vector;
    int has_vector_form;            /* the split is exact for these tables (tc_hbd_vector_form) */
} tc_hbd_plan;

static inline uint8_t tc_hbd_clip_uint8(int64_t v)
{
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* The RGB tables of ff_yuv2rgb_c_init_tables for 24-bit output (brightness 0, contrast and
 * saturation 1.0): `inv_table` is sws_getCoefficients(matrix). */
static void tc_hbd_tables(tc_hbd_plan *plan, const int inv_table[4], int full_range)
{
    const int32_t inv[4] = {inv_table[0], inv_table[1], inv_table[2], inv_table[3]};
    const tc_sws_factors f = tc_sws_factors_for(inv, full_range);
    const tc_sws_coeffs c = tc_sws_coeffs_from(inv, full_range);
    const int64_t cy = f.cy;
    const int yoffs = (full_range ? 384 : 326) + 512;
    int64_t yb = -(384 << 16) - 512 * cy - f.oy;
    int i;
    for (i = 0; i < TC_HBD_TABLE_SIZE; i++) {
        plan->y_table[i] = tc_hbd_clip_uint8((yb + 0x8000) >> 16);
        yb += cy;
    }
    for (i = 0; i < 256; i++) {     /* yuv2rgb.c's fill_table and fill_gv_table */
        plan->r_off[i] = (int)(yoffs - (c.c_rv >> 9) + ((i * c.c_rv) >> 16));
        plan->gu_off[i] = (int)(yoffs - (c.c_gu >> 9) + ((i * c.c_gu) >> 16));
        plan->gv_off[i] = (int)(-(c.c_gv >> 9) + ((i * c.c_gv) >> 16));
        plan->b_off[i] = (int)(yoffs - (c.c_bu >> 9) + ((i * c.c_bu) >> 16));
    }
    plan->y_base = c.y_base;
    plan->cy = c.cy;
    plan->k_r = c.k_r;
    plan->k_g = c.k_g;
    plan->k_b = c.k_b;
    plan->c_rv = c.c_rv;
    plan->c_gu = c.c_gu;
    plan->c_gv = c.c_gv;
    plan->c_bu = c.c_bu;
}

/* Every table index the conversion can form (offsets of clipped chroma plus a luma index of
 * 0..256) lies inside y_table, and the tables equal their arithmetic form in 32-bit integers: true
 * for every matrix swscale knows, checked rather than assumed. */
static int tc_hbd_indices_fit(const tc_hbd_plan *plan)
{
    int u, v;
    for (u = 0; u < 256; u++) {
        if (plan->r_off[u] < 0 || plan->r_off[u] + 256 >= TC_HBD_TABLE_SIZE
            || plan->b_off[u] < 0 || plan->b_off[u] + 256 >= TC_HBD_TABLE_SIZE)
            return 0;
        for (v = 0; v < 256; v++)
            if (plan->gu_off[u] + plan->gv_off[v] < 0 || plan->gu_off[u] + plan->gv_off[v] + 256 >= TC_HBD_TABLE_SIZE)
                return 0;
    }
    for (u = 0; u < TC_HBD_TABLE_SIZE; u++) {    /* the vector code's form of the table */
        const int64_t value = (int64_t)plan->y_base + (int64_t)u * plan->cy;
        if (value > INT32_MAX || value < INT32_MIN || plan->y_table[u] != tc_hbd_clip_uint8(value >> 16))
            return 0;
    }
    for (u = 0; u < 256; u++)
        if (plan->r_off[u] != plan->k_r + ((u * plan->c_rv) >> 16) || plan->b_off[u] != plan->k_b + ((u * plan->c_bu) >> 16)
            || plan->gu_off[u] + plan->gv_off[0] != plan->k_g + ((u * plan->c_gu) >> 16)
            || plan->gu_off[0] + plan->gv_off[u] != plan->k_g + ((u * plan->c_gv) >> 16))
            return 0;
    return 1;
}

/* Fills plan->vector and returns 1 when the 16-bit split gives every table entry and offset term
 * exactly (true for every matrix swscale knows: cy is 2^16 to 2^17 and the coefficients' high
 * halves are small), checked on every index rather than assumed; else 0 (the plain C rows run). */
static int tc_hbd_vector_form(tc_hbd_plan *plan)
{
    const int32_t coeffs[4] = {plan->c_rv, plan->c_gu, plan->c_gv, plan->c_bu};
    const int32_t ks[3] = {plan->k_r, plan->k_g, plan->k_b};
    const int64_t y_high = (int64_t)plan->y_base >> 16, y_low = (int64_t)plan->y_base - y_high * 65536;
    const int64_t cy_frac = (int64_t)plan->cy - 65536;
    tc_hbd_vector *f = &plan->vector;
    int i, j;
    if (cy_frac < 0 || cy_frac > 65535 || y_high < -16384 || y_high > 16383)
        return 0;
    for (j = 0; j < 3; j++)
        if (ks[j] < -16384 || ks[j] > 16383)
            return 0;
    for (j = 0; j < 4; j++) {
        const int64_t high = (int64_t)coeffs[j] >> 16;
        if (high < -127 || high > 127)
            return 0;
        f->c_high[j] = (int16_t)high;
        f->c_low[j] = (uint16_t)(coeffs[j] & 0xFFFF);
        for (i = 0; i < 256; i++)
            if ((int64_t)i * high + (((int64_t)i * f->c_low[j]) >> 16) != ((int64_t)i * coeffs[j]) >> 16)
                return 0;
    }
    for (i = 0; i < TC_HBD_TABLE_SIZE; i++) {
        const int64_t product = (int64_t)i * cy_frac;
        const int64_t value = i + y_high + (product >> 16) + ((product & 0xFFFF) > 65535 - y_low);
        if (value < -32768 || value > 32767 || value != ((int64_t)plan->y_base + (int64_t)i * plan->cy) >> 16)
            return 0;
    }
    f->y_high = (int16_t)y_high;
    f->cy_frac = (uint16_t)cy_frac;
    f->carry_limit = (int16_t)(uint16_t)((65535 - y_low) ^ 0x8000);
    f->k_r = (int16_t)plan->k_r;
    f->k_g = (int16_t)plan->k_g;
    f->k_b = (int16_t)plan->k_b;
    return 1;
}

static void tc_hbd_plan_free(tc_hbd_plan *plan)
{
    if (!plan)
        return;
    free(plan->chroma_row);
    free(plan->chroma_coeff);
    free(plan);
}

/* A plan for `width` x `height` frames of `bits`-bit 4:2:0 with this matrix and range; NULL when
 * the geometry is one this file does not reproduce (odd width; frames so short that swscale's
 * vertical chroma filter has 2 taps, which it runs through another output function; depths outside
 * 9..12, whose intermediates swscale treats differently) or memory runs out. */
static tc_hbd_plan *tc_hbd_plan_new(int width, int height, int bits, const int inv_table[4], int full_range)
{
    tc_hbd_plan *plan;
    if (width < 2 || (width & 1) || height < 8 || bits < 9 || bits > 12)
        return NULL;
    plan = (tc_hbd_plan *)calloc(1, sizeof(tc_hbd_plan));
    if (!plan)
        return NULL;
    plan->width = width;
    plan->height = height;
    plan->bits = bits;
    if (tc_sws_chroma_filter((height + 1) >> 1, height, 1, &plan->chroma_coeff, &plan->chroma_row, &plan->taps) < 0
            || plan->taps < 3 || plan->taps > 8) {
        tc_hbd_plan_free(plan);
        return NULL;
    }
    tc_hbd_tables(plan, inv_table, full_range);
    if (!tc_hbd_indices_fit(plan)) {
        tc_hbd_plan_free(plan);
        return NULL;
    }
    plan->has_vector_form = tc_hbd_vector_form(plan);
    return plan;
}

/* A sample as hScale16To15 leaves it for an identity filter: 15 bits, saturated (samples above the
 * depth's maximum only come from corrupt streams, but swscale's answer is defined for them too). */
static inline int tc_hbd_sample15(unsigned sample, int up)
{
    unsigned v = sample << up;
    return v > 32767 ? 32767 : (int)v;
}

/* The vertical chroma filter of output row y over one chroma plane: clipped 8-bit values, as
 * yuv2rgb_X computes U and V before its table lookups. */
static inline void tc_hbd_chroma_row(const tc_hbd_plan *plan, const uint8_t *plane, int stride, int y,
                                     uint8_t *out)
{
    const int half = plan->width >> 1, taps = plan->taps, up = 15 - plan->bits;
    const int16_t *coeff = plan->chroma_coeff + (ptrdiff_t)y * taps;
    const uint16_t *rows[8];
    int x, j;
    for (j = 0; j < taps; j++)
        rows[j] = (const uint16_t *)(plane + (ptrdiff_t)(plan->chroma_row[y] + j) * stride);
    if (taps == 4) {            /* the usual case: unrolled so that the compiler vectorises it */
        const int c0 = coeff[0], c1 = coeff[1], c2 = coeff[2], c3 = coeff[3];
        for (x = 0; x < half; x++) {
            int v = (1 << 18) + tc_hbd_sample15(rows[0][x], up) * c0 + tc_hbd_sample15(rows[1][x], up) * c1
                    + tc_hbd_sample15(rows[2][x], up) * c2 + tc_hbd_sample15(rows[3][x], up) * c3;
            v >>= 19;
            out[x] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
        }
        return;
    }
    for (x = 0; x < half; x++) {
        int v = 1 << 18;
        for (j = 0; j < taps; j++)
            v += tc_hbd_sample15(rows[j][x], up) * coeff[j];
        v >>= 19;
        out[x] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

/* One output row's pixels from its clipped chroma (u_row, v_row: one value per pixel pair) and its
 * luma samples, from pair `from` on: the table lookups of yuv2rgb_X for RGB24. */
static inline void tc_hbd_pixels(const tc_hbd_plan *plan, const uint16_t *luma, const uint8_t *u_row,
                                 const uint8_t *v_row, uint8_t *out, int from)
{
    const int half = plan->width >> 1, up = 15 - plan->bits;
    const uint8_t *table = plan->y_table;
    int x;
    for (x = from; x < half; x++) {
        const int u = u_row[x], v = v_row[x];
        const uint8_t *r = table + plan->r_off[v];
        const uint8_t *g = table + plan->gu_off[u] + plan->gv_off[v];
        const uint8_t *b = table + plan->b_off[u];
        const int y1 = (tc_hbd_sample15(luma[2 * x], up) * 4096 + (1 << 18)) >> 19;
        const int y2 = (tc_hbd_sample15(luma[2 * x + 1], up) * 4096 + (1 << 18)) >> 19;
        out[6 * x + 0] = r[y1];
        out[6 * x + 1] = g[y1];
        out[6 * x + 2] = b[y1];
        out[6 * x + 3] = r[y2];
        out[6 * x + 4] = g[y2];
        out[6 * x + 5] = b[y2];
    }
}

static void tc_hbd_rows_default(const tc_hbd_plan *plan, const uint8_t *const src[3], const int src_stride[3],
                                uint8_t *dst, ptrdiff_t dst_stride, int row_begin, int row_end, uint8_t *scratch)
{
    uint8_t *u_row = scratch, *v_row = scratch + (plan->width >> 1);
    int y;
    for (y = row_begin; y < row_end; y++) {
        tc_hbd_chroma_row(plan, src[1], src_stride[1], y, u_row);
        tc_hbd_chroma_row(plan, src[2], src_stride[2], y, v_row);
        tc_hbd_pixels(plan, (const uint16_t *)(src[0] + (ptrdiff_t)y * src_stride[0]), u_row, v_row,
                      dst + (ptrdiff_t)y * dst_stride, 0);
    }
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define TC_HBD_AVX2 1

/* The vector code works in 16-bit lanes, 32 pixels at a time, on the tables' arithmetic form
 * split at 16 bits (tc_hbd_vector_form checks that the split is exact for the plan):
 *   - y_table[i] = clip8(i + y_high + hi(i * cy_frac) + carry(y_low + lo(i * cy_frac))), where
 *     y_base = y_high * 2^16 + y_low, cy = 2^16 + cy_frac, and hi/lo are the halves of the 32-bit
 *     product (i < 2^11 and cy_frac < 2^16: one pmulhuw and one pmullw);
 *   - (c * x) >> 16 = x * (c >> 16) + hi(x * (c & 0xFFFF)) for a chroma value x of 0..255. */

/* The table lookup of 16 indices: the split form above, clipped to 0..255 later by packus. */
__attribute__((target("avx2"))) static inline __m256i tc_hbd_lookup16(__m256i i, __m256i y_high, __m256i cy_frac,
                                                                      __m256i carry_limit)
{
    const __m256i sign = _mm256_set1_epi16((short)0x8000);
    const __m256i high = _mm256_mulhi_epu16(i, cy_frac);
    const __m256i low = _mm256_mullo_epi16(i, cy_frac);
    /* y_low + low carries exactly when low > 65535 - y_low (unsigned: compared with the sign flipped) */
    const __m256i carry = _mm256_cmpgt_epi16(_mm256_xor_si256(low, sign), carry_limit);
    return _mm256_sub_epi16(_mm256_add_epi16(_mm256_add_epi16(i, y_high), high), carry);
}

/* (c * x) >> 16 for 16 chroma values x, c given as its high and low 16 bits. */
__attribute__((target("avx2"))) static inline __m256i tc_hbd_term16(__m256i x, __m256i c_high, __m256i c_low)
{
    return _mm256_add_epi16(_mm256_mullo_epi16(x, c_high), _mm256_mulhi_epu16(x, c_low));
}

/* The luma index of 16 samples: (min(s << up, 32767) + 64) >> 7, which equals
 * (min(s, 2^bits) << up + 64) >> 7 (both give 256 from 2^bits on) without overflowing 16 bits. */
__attribute__((target("avx2"))) static inline __m256i tc_hbd_luma16(const uint16_t *samples, __m128i up, __m256i top)
{
    const __m256i s = _mm256_min_epu16(_mm256_loadu_si256((const __m256i *)samples), top);
    return _mm256_srli_epi16(_mm256_add_epi16(_mm256_sll_epi16(s, up), _mm256_set1_epi16(64)), 7);
}

/* One channel of 32 pixels in pixel order: `offset` holds the table offsets of their 16 pairs,
 * y_first and y_second the luma indices of pixels 0-15 and 16-31. */
__attribute__((target("avx2"))) static inline __m256i tc_hbd_channel32(__m256i offset, __m256i y_first, __m256i y_second,
                                                                       __m256i y_high, __m256i cy_frac,
                                                                       __m256i carry_limit)
{
    /* pairs 0-3 and 8-11 in the low lane, 4-7 and 12-15 in the high one: unpacking then doubles
     * each pair into the order of the pixels */
    const __m256i pairs = _mm256_permute4x64_epi64(offset, _MM_SHUFFLE(3, 1, 2, 0));
    const __m256i first = tc_hbd_lookup16(_mm256_add_epi16(_mm256_unpacklo_epi16(pairs, pairs), y_first),
                                          y_high, cy_frac, carry_limit);
    const __m256i second = tc_hbd_lookup16(_mm256_add_epi16(_mm256_unpackhi_epi16(pairs, pairs), y_second),
                                           y_high, cy_frac, carry_limit);
    return _mm256_permute4x64_epi64(_mm256_packus_epi16(first, second), _MM_SHUFFLE(3, 1, 2, 0));
}

/* Chroma samples as 15-bit values, min(s << up, 32767), for pmaddwd. */
__attribute__((target("avx2"))) static inline __m256i tc_hbd_chroma15(const uint16_t *samples, __m128i up, __m256i top)
{
    const __m256i s = _mm256_min_epu16(_mm256_loadu_si256((const __m256i *)samples), top);
    return _mm256_min_epu16(_mm256_sll_epi16(s, up), _mm256_set1_epi16(32767));
}

/* tc_hbd_chroma_row for the usual 4-tap filter, 16 samples at a time: each tap pair is one pmaddwd
 * (15-bit samples times 16-bit coefficients: the same 32-bit sums). */
__attribute__((target("avx2"))) static void tc_hbd_chroma_row_avx2(const tc_hbd_plan *plan, const uint8_t *plane,
                                                                   int stride, int y, uint8_t *out)
{
    const int half = plan->width >> 1, up = 15 - plan->bits;
    const int16_t *coeff = plan->chroma_coeff + (ptrdiff_t)y * 4;
    const uint16_t *row0, *row1, *row2, *row3;
    __m256i c01, c23, round, top;
    __m128i shift;
    int x;
    if (plan->taps != 4) {
        tc_hbd_chroma_row(plan, plane, stride, y, out);
        return;
    }
    row0 = (const uint16_t *)(plane + (ptrdiff_t)plan->chroma_row[y] * stride);
    row1 = (const uint16_t *)((const uint8_t *)row0 + stride);
    row2 = (const uint16_t *)((const uint8_t *)row1 + stride);
    row3 = (const uint16_t *)((const uint8_t *)row2 + stride);
    c01 = _mm256_set1_epi32((int32_t)((uint32_t)(uint16_t)coeff[0] | ((uint32_t)(uint16_t)coeff[1] << 16)));
    c23 = _mm256_set1_epi32((int32_t)((uint32_t)(uint16_t)coeff[2] | ((uint32_t)(uint16_t)coeff[3] << 16)));
    round = _mm256_set1_epi32(1 << 18);
    top = _mm256_set1_epi16((short)(1 << plan->bits));
    shift = _mm_cvtsi32_si128(up);
    for (x = 0; x + 16 <= half; x += 16) {
        const __m256i s0 = tc_hbd_chroma15(row0 + x, shift, top), s1 = tc_hbd_chroma15(row1 + x, shift, top);
        const __m256i s2 = tc_hbd_chroma15(row2 + x, shift, top), s3 = tc_hbd_chroma15(row3 + x, shift, top);
        const __m256i low = _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(_mm256_unpacklo_epi16(s0, s1), c01),
                                                              _mm256_madd_epi16(_mm256_unpacklo_epi16(s2, s3), c23)),
                                             round);
        const __m256i high = _mm256_add_epi32(_mm256_add_epi32(_mm256_madd_epi16(_mm256_unpackhi_epi16(s0, s1), c01),
                                                               _mm256_madd_epi16(_mm256_unpackhi_epi16(s2, s3), c23)),
                                              round);
        /* packs/packus saturate: the clip to 0..255 */
        const __m256i words = _mm256_packs_epi32(_mm256_srai_epi32(low, 19), _mm256_srai_epi32(high, 19));
        _mm_storeu_si128((__m128i *)(out + x), _mm_packus_epi16(_mm256_castsi256_si128(words),
                                                                _mm256_extracti128_si256(words, 1)));
    }
    for (; x < half; x++) {
        int v = (1 << 18) + tc_hbd_sample15(row0[x], up) * coeff[0] + tc_hbd_sample15(row1[x], up) * coeff[1]
                + tc_hbd_sample15(row2[x], up) * coeff[2] + tc_hbd_sample15(row3[x], up) * coeff[3];
        v >>= 19;
        out[x] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
}

__attribute__((target("avx2"))) static void tc_hbd_rows_avx2(
    const tc_hbd_plan *plan, const uint8_t *const src[3], const int src_stride[3], uint8_t *dst,
    ptrdiff_t dst_stride, int row_begin, int row_end, uint8_t *scratch, int streaming)
{
    const tc_hbd_vector *f = &plan->vector;
    const __m256i y_high = _mm256_set1_epi16(f->y_high), cy_frac = _mm256_set1_epi16((short)f->cy_frac);
    const __m256i carry_limit = _mm256_set1_epi16(f->carry_limit);
    const __m256i k_r = _mm256_set1_epi16(f->k_r), k_g = _mm256_set1_epi16(f->k_g), k_b = _mm256_set1_epi16(f->k_b);
    const __m256i rv_high = _mm256_set1_epi16(f->c_high[0]), rv_low = _mm256_set1_epi16((short)f->c_low[0]);
    const __m256i gu_high = _mm256_set1_epi16(f->c_high[1]), gu_low = _mm256_set1_epi16((short)f->c_low[1]);
    const __m256i gv_high = _mm256_set1_epi16(f->c_high[2]), gv_low = _mm256_set1_epi16((short)f->c_low[2]);
    const __m256i bu_high = _mm256_set1_epi16(f->c_high[3]), bu_low = _mm256_set1_epi16((short)f->c_low[3]);
    const __m256i top = _mm256_set1_epi16((short)(1 << plan->bits));
    const __m128i up = _mm_cvtsi32_si128(15 - plan->bits);
    const int half = plan->width >> 1, blocks = half / 16;
    uint8_t *u_row = scratch, *v_row = scratch + half;
    int y, k;
    for (y = row_begin; y < row_end; y++) {
        const uint16_t *luma = (const uint16_t *)(src[0] + (ptrdiff_t)y * src_stride[0]);
        uint8_t *out = dst + (ptrdiff_t)y * dst_stride;
        const int stream_row = streaming && tc_can_stream(out);
        tc_hbd_chroma_row_avx2(plan, src[1], src_stride[1], y, u_row);
        tc_hbd_chroma_row_avx2(plan, src[2], src_stride[2], y, v_row);
        for (k = 0; k < blocks; k++) {
            const __m256i u = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(u_row + 16 * k)));
            const __m256i v = _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(v_row + 16 * k)));
            const __m256i y_first = tc_hbd_luma16(luma + 32 * k, up, top);
            const __m256i y_second = tc_hbd_luma16(luma + 32 * k + 16, up, top);
            const __m256i off_r = _mm256_add_epi16(k_r, tc_hbd_term16(v, rv_high, rv_low));
            const __m256i off_g = _mm256_add_epi16(_mm256_add_epi16(k_g, tc_hbd_term16(u, gu_high, gu_low)),
                                                   tc_hbd_term16(v, gv_high, gv_low));
            const __m256i off_b = _mm256_add_epi16(k_b, tc_hbd_term16(u, bu_high, bu_low));
            const __m256i r = tc_hbd_channel32(off_r, y_first, y_second, y_high, cy_frac, carry_limit);
            const __m256i g = tc_hbd_channel32(off_g, y_first, y_second, y_high, cy_frac, carry_limit);
            const __m256i b = tc_hbd_channel32(off_b, y_first, y_second, y_high, cy_frac, carry_limit);
            tc_store_rgb96(out + 96 * k, r, g, b, stream_row);
        }
        tc_hbd_pixels(plan, luma, u_row, v_row, out, 16 * blocks);
    }
}
#endif

/* Rows [row_begin, row_end) of the frame (planes y/u/v of 16-bit little-endian samples, strides in
 * bytes) into packed RGB24 at dst (its stride in bytes); `scratch`: width bytes. On x86-64 CPUs
 * with AVX2, 32 pixels at a time (the same integers, in 16-bit vector lanes), with non-temporal
 * stores when `streaming` (as tc_yuv8_convert_rows). */
static int tc_hbd_vector_code = 1;      /* 0: the plain C rows everywhere (tests compare both) */

static void tc_hbd_convert_rows(const tc_hbd_plan *plan, const uint8_t *const src[3], const int src_stride[3],
                                uint8_t *dst, ptrdiff_t dst_stride, int row_begin, int row_end, uint8_t *scratch,
                                int streaming)
{
#ifdef TC_HBD_AVX2
    if (tc_hbd_vector_code && plan->has_vector_form && tc_cpu_has_avx2()) {
        tc_hbd_rows_avx2(plan, src, src_stride, dst, dst_stride, row_begin, row_end, scratch, streaming);
        return;
    }
#endif
    (void)streaming;
    tc_hbd_rows_default(plan, src, src_stride, dst, dst_stride, row_begin, row_end, scratch);
}

#endif
