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
 * Plain C99, no libc beyond malloc/free.
 */
#ifndef TORCHCODEC_HBD_RGB_H
#define TORCHCODEC_HBD_RGB_H

#include <stdint.h>
#include <stdlib.h>

#define TC_HBD_TABLE_SIZE 2048      /* swscale's luma table: 1024 + 2 * YUVRGB_TABLE_LUMA_HEADROOM */

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
} tc_hbd_plan;

static inline int tc_hbd_log2(unsigned v)
{
    int n = 0;
    while (v >>= 1)
        n++;
    return n;
}

static inline int64_t tc_hbd_rounded_div(int64_t a, int64_t b)
{
    return (a >= 0 ? a + (b >> 1) : a - (b >> 1)) / b;
}

static inline uint8_t tc_hbd_clip_uint8(int64_t v)
{
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* utils.c's initFilter for SWS_BICUBIC (default parameters) without source or destination vectors:
 * src_n samples -> dst_n samples at step x_inc (16.16), positions src_pos/dst_pos in 1/256 pixels
 * (get_local_pos). Coefficients sum to `one`. Returns 0, or -1 when out of memory. */
static int tc_sws_bicubic_filter(int src_n, int dst_n, int x_inc, int src_pos, int dst_pos,
                                 int filter_align, int one,
                                 int16_t **out_coeff, int32_t **out_pos, int *out_size)
{
    const int64_t fone = 1LL << (54 - (tc_hbd_log2((unsigned)(src_n / dst_n)) < 8
                                       ? tc_hbd_log2((unsigned)(src_n / dst_n)) : 8));
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
        size = x_inc <= 1 << 16 ? 1 + 4 : 1 + (4 * src_n + dst_n - 1) / dst_n;
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
                if (d >= 1LL << 31) {
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
                }
                c /= (1LL << 54) / fone;
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
            int64_t q = tc_hbd_rounded_div(v, sum);
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

/* The RGB tables of ff_yuv2rgb_c_init_tables for 24-bit output (brightness 0, contrast and
 * saturation 1.0): `inv_table` is sws_getCoefficients(matrix). */
static void tc_hbd_tables(tc_hbd_plan *plan, const int inv_table[4], int full_range)
{
    int64_t crv = inv_table[0], cbu = inv_table[1], cgu = -inv_table[2], cgv = -inv_table[3];
    int64_t cy = 1 << 16, oy = 0, yb;
    const int64_t contrast = 1 << 16, saturation = 1 << 16;
    const int yoffs = (full_range ? 384 : 326) + 512;
    int i;
    if (!full_range) {
        cy = (cy * 255) / 219;
        oy = 16 << 16;
    } else {
        crv = (crv * 224) / 255;
        cbu = (cbu * 224) / 255;
        cgu = (cgu * 224) / 255;
        cgv = (cgv * 224) / 255;
    }
    cy = (cy * contrast) >> 16;
    crv = (crv * contrast * saturation) >> 32;
    cbu = (cbu * contrast * saturation) >> 32;
    cgu = (cgu * contrast * saturation) >> 32;
    cgv = (cgv * contrast * saturation) >> 32;
    crv = ((crv * (1 << 16)) + 0x8000) / (cy > 1 ? cy : 1);
    cbu = ((cbu * (1 << 16)) + 0x8000) / (cy > 1 ? cy : 1);
    cgu = ((cgu * (1 << 16)) + 0x8000) / (cy > 1 ? cy : 1);
    cgv = ((cgv * (1 << 16)) + 0x8000) / (cy > 1 ? cy : 1);
    yb = -(384 << 16) - 512 * cy - oy;
    for (i = 0; i < TC_HBD_TABLE_SIZE; i++) {
        plan->y_table[i] = tc_hbd_clip_uint8((yb + 0x8000) >> 16);
        yb += cy;
    }
    for (i = 0; i < 256; i++) {
        plan->r_off[i] = (int)(yoffs - (crv >> 9) + ((i * crv) >> 16));
        plan->gu_off[i] = (int)(yoffs - (cgu >> 9) + ((i * cgu) >> 16));
        plan->gv_off[i] = (int)(-(cgv >> 9) + ((i * cgv) >> 16));
        plan->b_off[i] = (int)(yoffs - (cbu >> 9) + ((i * cbu) >> 16));
    }
    plan->y_base = (int32_t)(-(384 << 16) - 512 * cy - oy + 0x8000);
    plan->cy = (int32_t)cy;
    plan->k_r = (int32_t)(yoffs - (crv >> 9));
    plan->k_g = (int32_t)(yoffs - (cgu >> 9) - (cgv >> 9));
    plan->k_b = (int32_t)(yoffs - (cbu >> 9));
    plan->c_rv = (int32_t)crv;
    plan->c_gu = (int32_t)cgu;
    plan->c_gv = (int32_t)cgv;
    plan->c_bu = (int32_t)cbu;
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
    int chroma_h = (height + 1) >> 1;
    int64_t y_inc;
    if (width < 2 || (width & 1) || height < 8 || bits < 9 || bits > 12)
        return NULL;
    plan = (tc_hbd_plan *)calloc(1, sizeof(tc_hbd_plan));
    if (!plan)
        return NULL;
    plan->width = width;
    plan->height = height;
    plan->bits = bits;
    /* chrYInc of sws_init_context; positions: get_local_pos of the default (-513) chroma position,
     * 128 for the subsampled source rows and for the output rows; vertical filters align to 2 */
    y_inc = (((int64_t)chroma_h << 16) + (height >> 1)) / height;
    if (tc_sws_bicubic_filter(chroma_h, height, (int)y_inc, 128, 128, 2, 1 << 12,
                              &plan->chroma_coeff, &plan->chroma_row, &plan->taps) < 0
            || plan->taps < 3 || plan->taps > 8) {
        tc_hbd_plan_free(plan);
        return NULL;
    }
    tc_hbd_tables(plan, inv_table, full_range);
    if (!tc_hbd_indices_fit(plan)) {
        tc_hbd_plan_free(plan);
        return NULL;
    }
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

/* One channel of 16 pixels (8 pairs): clip8((pre + y * cy) >> 16), `pre` per pair, y per pixel. */
__attribute__((target("avx2"))) static inline __m128i tc_hbd_channel16(__m256i pre, __m256i y_lo, __m256i y_hi,
                                                                       __m256i cy)
{
    const __m256i first = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
    const __m256i second = _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7);
    __m256i lo = _mm256_srai_epi32(_mm256_add_epi32(_mm256_permutevar8x32_epi32(pre, first),
                                                    _mm256_mullo_epi32(y_lo, cy)), 16);
    __m256i hi = _mm256_srai_epi32(_mm256_add_epi32(_mm256_permutevar8x32_epi32(pre, second),
                                                    _mm256_mullo_epi32(y_hi, cy)), 16);
    __m128i lo16 = _mm_packs_epi32(_mm256_castsi256_si128(lo), _mm256_extracti128_si256(lo, 1));
    __m128i hi16 = _mm_packs_epi32(_mm256_castsi256_si128(hi), _mm256_extracti128_si256(hi, 1));
    return _mm_packus_epi16(lo16, hi16);        /* unsigned saturation: the clip to 0..255 */
}

/* The luma index of 8 samples: (min(s << up, 32767) * 4096 + 2^18) >> 19, which is (that + 64) >> 7. */
__attribute__((target("avx2"))) static inline __m256i tc_hbd_luma8(const uint16_t *samples, int up)
{
    __m256i s = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)samples));
    s = _mm256_min_epi32(_mm256_sll_epi32(s, _mm_cvtsi32_si128(up)), _mm256_set1_epi32(32767));
    return _mm256_srai_epi32(_mm256_add_epi32(s, _mm256_set1_epi32(64)), 7);
}

/* The table offset of 8 pairs as a sum: y_base + (k + ((c1 * coeff1) >> 16) + ((c2 * coeff2) >> 16)) * cy. */
__attribute__((target("avx2"))) static inline __m256i tc_hbd_offset8(__m256i k, __m256i c1, __m256i coeff1, __m256i c2,
                                                                     __m256i coeff2, __m256i cy, __m256i base)
{
    __m256i sum = _mm256_add_epi32(k, _mm256_srai_epi32(_mm256_mullo_epi32(c1, coeff1), 16));
    sum = _mm256_add_epi32(sum, _mm256_srai_epi32(_mm256_mullo_epi32(c2, coeff2), 16));
    return _mm256_add_epi32(base, _mm256_mullo_epi32(sum, cy));
}

/* 16 R, G, B bytes interleaved into 48 bytes of RGB24 (three pshufb per output vector). */
__attribute__((target("avx2"))) static inline void tc_hbd_store_rgb48(uint8_t *out, __m128i r, __m128i g, __m128i b)
{
    const __m128i r0 = _mm_setr_epi8(0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1, 5);
    const __m128i g0 = _mm_setr_epi8(-1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1);
    const __m128i b0 = _mm_setr_epi8(-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1);
    const __m128i r1 = _mm_setr_epi8(-1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10, -1);
    const __m128i g1 = _mm_setr_epi8(5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10);
    const __m128i b1 = _mm_setr_epi8(-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1);
    const __m128i r2 = _mm_setr_epi8(-1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1, -1);
    const __m128i g2 = _mm_setr_epi8(-1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1);
    const __m128i b2 = _mm_setr_epi8(10, -1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15);
    _mm_storeu_si128((__m128i *)out, _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, r0), _mm_shuffle_epi8(g, g0)),
                                                  _mm_shuffle_epi8(b, b0)));
    _mm_storeu_si128((__m128i *)(out + 16), _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, r1), _mm_shuffle_epi8(g, g1)),
                                                         _mm_shuffle_epi8(b, b1)));
    _mm_storeu_si128((__m128i *)(out + 32), _mm_or_si128(_mm_or_si128(_mm_shuffle_epi8(r, r2), _mm_shuffle_epi8(g, g2)),
                                                         _mm_shuffle_epi8(b, b2)));
}

__attribute__((target("avx2"))) static void tc_hbd_rows_avx2(
    const tc_hbd_plan *plan, const uint8_t *const src[3], const int src_stride[3], uint8_t *dst,
    ptrdiff_t dst_stride, int row_begin, int row_end, uint8_t *scratch)
{
    const __m256i cy = _mm256_set1_epi32(plan->cy), base = _mm256_set1_epi32(plan->y_base);
    const __m256i k_r = _mm256_set1_epi32(plan->k_r), k_g = _mm256_set1_epi32(plan->k_g);
    const __m256i k_b = _mm256_set1_epi32(plan->k_b), c_rv = _mm256_set1_epi32(plan->c_rv);
    const __m256i c_gu = _mm256_set1_epi32(plan->c_gu), c_gv = _mm256_set1_epi32(plan->c_gv);
    const __m256i c_bu = _mm256_set1_epi32(plan->c_bu), zero = _mm256_setzero_si256();
    const int half = plan->width >> 1, up = 15 - plan->bits, blocks = half / 8;
    uint8_t *u_row = scratch, *v_row = scratch + half;
    int y, k;
    for (y = row_begin; y < row_end; y++) {
        const uint16_t *luma = (const uint16_t *)(src[0] + (ptrdiff_t)y * src_stride[0]);
        uint8_t *out = dst + (ptrdiff_t)y * dst_stride;
        tc_hbd_chroma_row(plan, src[1], src_stride[1], y, u_row);
        tc_hbd_chroma_row(plan, src[2], src_stride[2], y, v_row);
        for (k = 0; k < blocks; k++) {
            const __m256i u = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(u_row + 8 * k)));
            const __m256i v = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(v_row + 8 * k)));
            const __m256i y_lo = tc_hbd_luma8(luma + 16 * k, up), y_hi = tc_hbd_luma8(luma + 16 * k + 8, up);
            tc_hbd_store_rgb48(out + 48 * k,
                               tc_hbd_channel16(tc_hbd_offset8(k_r, v, c_rv, zero, zero, cy, base), y_lo, y_hi, cy),
                               tc_hbd_channel16(tc_hbd_offset8(k_g, u, c_gu, v, c_gv, cy, base), y_lo, y_hi, cy),
                               tc_hbd_channel16(tc_hbd_offset8(k_b, u, c_bu, zero, zero, cy, base), y_lo, y_hi, cy));
        }
        tc_hbd_pixels(plan, luma, u_row, v_row, out, 8 * blocks);
    }
}
#endif

/* Rows [row_begin, row_end) of the frame (planes y/u/v of 16-bit little-endian samples, strides in
 * bytes) into packed RGB24 at dst (its stride in bytes); `scratch`: width bytes. On x86-64 CPUs
 * with AVX2, 16 pixels at a time (the same integers, in vector lanes). */
static int tc_hbd_vector_code = 1;      /* 0: the plain C rows everywhere (tests compare both) */

static void tc_hbd_convert_rows(const tc_hbd_plan *plan, const uint8_t *const src[3], const int src_stride[3],
                                uint8_t *dst, ptrdiff_t dst_stride, int row_begin, int row_end, uint8_t *scratch)
{
#ifdef TC_HBD_AVX2
    if (tc_hbd_vector_code && __builtin_cpu_supports("avx2")) {
        tc_hbd_rows_avx2(plan, src, src_stride, dst, dst_stride, row_begin, row_end, scratch);
        return;
    }
#endif
    tc_hbd_rows_default(plan, src, src_stride, dst, dst_stride, row_begin, row_end, scratch);
}

#endif
