/* torchcodec: packed RGB24 -> the 14-bit Y, U, V planes libswscale makes of it before it scales.
 *
 * A bilinear resize from RGB24 to RGB24 (TorchCodec's Resize) runs libswscale's general scaler:
 * each source row first goes through input.c's rgb24ToY and, when the output is at most half as
 * wide as the input, rgb24ToUV_half_c, which turn it into "14-bit" YUV intermediates with the
 * matrix of fill_rgb2yuv_table (chroma at half width, from pairs of pixels); then come the
 * horizontal filters (hscale14to15), the vertical filter and the RGB output. rgb24ToUV_half_c is
 * plain C in FFmpeg 5.1 and costs about a quarter of a 1080p -> 256x256 resize.
 *
 * The same scaler started from yuv422p14le with SWS_FULL_CHR_H_INT (which swscale forces for RGB
 * input) reads such planes as they are and runs the identical filters and output, so computing
 * the planes here and handing them to that context gives the RGB-to-RGB bytes. (For wider outputs
 * swscale's full-width chroma input has SIMD already; nothing is gained there.) This file computes
 * the planes: the coefficients as utils.c's fill_rgb2yuv_table makes them (output range always
 * limited), and the rows with the input functions' rounding, in plain C and, where the CPU has it,
 * AVX2 (the plain C rows are the reference and the rows' tails: slower than swscale on their own).
 *
 * For 8-bit 4:2:0 frames the RGB rows need not exist either: tc_yuv420_to_planes converts YUV to
 * RGB with the arithmetic of libswscale's x86 YUV420 -> RGB24 converter (colour.h, which the CPU
 * decoder's swscale runs for such frames) and computes the planes from those values in registers.
 *
 * Nothing here is trusted blindly: torchcodec compares each route with swscale's own conversion
 * and RGB-to-RGB resize on a random image of each geometry, format and matrix before using it, and
 * keeps swscale where they differ (another FFmpeg release, another CPU).
 *
 * Plain C99 (the AVX2 rows use GCC/Clang target attributes), no libc.
 */
#ifndef TORCHCODEC_RGB_PLANES_H
#define TORCHCODEC_RGB_PLANES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "torchcodec/colour.h"
#include "torchcodec/cpu.h"
#include "torchcodec/swscale_resize.h"   /* fill_rgb2yuv_table */
#include "torchcodec/yuv8_rgb.h"    /* the YUV -> RGB arithmetic in AVX2 lanes */

#define TC_RGB_SHIFT 15                 /* swscale's RGB2YUV_SHIFT */

/* The nine coefficients of swscale's input_rgb2yuv_table: ry, gy, by, ru, gu, bu, rv, gv, bv. */
typedef struct tc_rgb_matrix {
    int32_t k[9];
    int has_vector_form;                /* every coefficient fits a signed 16-bit lane */
} tc_rgb_matrix;

/* fill_rgb2yuv_table for the swscale coefficients ``table`` (sws_getCoefficients: vr, ub, -ug,
 * -vg) and a limited output range, which swscale always uses for this table (swscale_resize.h). */
static inline void tc_rgb_matrix_init(tc_rgb_matrix *m, const int *table)
{
    int32_t inv[4];
    int i;
    for (i = 0; i < 4; i++)
        inv[i] = table[i];
    tc_sws_rgb2yuv_table(inv, m->k);
    m->has_vector_form = 1;
    for (i = 0; i < 9; i++)
        if (m->k[i] < -32768 || m->k[i] > 32767)
            m->has_vector_form = 0;
}

/* The rounding terms of input.c: Y shifts by 9, half-width chroma (sums of two pixels) by 10. */
#define TC_RGB_Y_BIAS ((32 << (TC_RGB_SHIFT - 1)) + (1 << (TC_RGB_SHIFT - 7)))
#define TC_RGB_HALF_BIAS ((256 << TC_RGB_SHIFT) + (1 << (TC_RGB_SHIFT - 6)))

/* Pixels [x0, width) of one row (x0 even), as rgb24ToY_c and rgb24ToUV_half_c: chroma sample i
 * sums pixels 2i and 2i + 1, up to (width + 1) / 2 samples; like swscale, an odd width reads the
 * pixel after the row. */
static inline void tc_rgb_planes_row_c(const tc_rgb_matrix *m, const uint8_t *src, int x0, int width,
                                       uint16_t *y, uint16_t *u, uint16_t *v)
{
    const int32_t *k = m->k;
    int x;
    for (x = x0; x < width; x++)
        y[x] = (uint16_t)tc_resize_luma(k, TC_RESIZE_CHAIN8, src[3 * x], src[3 * x + 1], src[3 * x + 2]);
    for (x = x0 / 2; x < (width + 1) / 2; x++) {
        const int r = src[6 * x] + src[6 * x + 3], g = src[6 * x + 1] + src[6 * x + 4];
        const int b = src[6 * x + 2] + src[6 * x + 5];
        u[x] = (uint16_t)tc_resize_chroma_pair(k + 3, TC_RESIZE_CHAIN8, r, g, b);
        v[x] = (uint16_t)tc_resize_chroma_pair(k + 6, TC_RESIZE_CHAIN8, r, g, b);
    }
}

/* Pixels [x0, width) of one row of 8-bit 4:2:0 YUV (x0 and width even; ``u`` and ``v`` the row's
 * chroma row), converted to RGB as libswscale's x86 YUV420 -> RGB24 converter does (colour.h) into
 * ``rgb`` (3 * width bytes), then to the planes as tc_rgb_planes_row_c. */
static inline void tc_yuv420_planes_row_c(const tc_rgb_matrix *m, const tc_colour_coeffs *c, const uint8_t *y,
                                          const uint8_t *u, const uint8_t *v, int x0, int width, uint8_t *rgb,
                                          uint16_t *py, uint16_t *pu, uint16_t *pv)
{
    tc_yuv8_row_c(c, y, u, v, x0, width, rgb);
    tc_rgb_planes_row_c(m, rgb, x0, width, py, pu, pv);
}

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define TC_RGB_PLANES_AVX2 1
#include <immintrin.h>

/* 8 pixels' weighted sums k_r * r + k_g * g + k_b * b (32-bit lanes, pixel order): ``rg`` holds
 * each pixel's r and g as 16-bit words, ``b`` its b as the low word of a dword. */
__attribute__((target("avx2"))) static inline __m256i tc_rgb_weigh(__m256i rg, __m256i b, __m256i k_rg,
                                                                   __m256i k_b)
{
    return _mm256_add_epi32(_mm256_madd_epi16(rg, k_rg), _mm256_madd_epi16(b, k_b));
}

__attribute__((target("avx2"))) static inline __m256i tc_rgb_pair(const tc_rgb_matrix *m, int first)
{
    return _mm256_set1_epi32((int32_t)(((uint32_t)(uint16_t)m->k[first + 1] << 16) | (uint16_t)m->k[first]));
}

/* The planes of 16 pixels given as r and g word pairs and b dwords (the madd operands), "lo"
 * holding pixels 0-3 | 8-11 (the two 128-bit lanes) and "hi" pixels 4-7 | 12-15: 16 Y and 8 U, V
 * samples, in pixel order. The integer sums are those of the C row (madd adds exact 32-bit
 * products), so the results are equal. */
__attribute__((target("avx2"))) static inline void tc_rgb_pairs_planes(const tc_rgb_matrix *m, __m256i rg_lo,
                                                                      __m256i rg_hi, __m256i b_lo, __m256i b_hi,
                                                                      uint16_t *py, uint16_t *pu, uint16_t *pv)
{
    const __m256i ky_rg = tc_rgb_pair(m, 0), ku_rg = tc_rgb_pair(m, 3), kv_rg = tc_rgb_pair(m, 6);
    const __m256i ky_b = _mm256_set1_epi32((uint16_t)m->k[2]);
    const __m256i ku_b = _mm256_set1_epi32((uint16_t)m->k[5]);
    const __m256i kv_b = _mm256_set1_epi32((uint16_t)m->k[8]);
    const __m256i y_bias = _mm256_set1_epi32(TC_RGB_Y_BIAS), c_bias = _mm256_set1_epi32(TC_RGB_HALF_BIAS);
    const __m256i y_lo = _mm256_srai_epi32(_mm256_add_epi32(tc_rgb_weigh(rg_lo, b_lo, ky_rg, ky_b), y_bias),
                                           TC_RGB_SHIFT - 6);
    const __m256i y_hi = _mm256_srai_epi32(_mm256_add_epi32(tc_rgb_weigh(rg_hi, b_hi, ky_rg, ky_b), y_bias),
                                           TC_RGB_SHIFT - 6);
    /* hadd of (lo, hi): the pair sums of pixels 0-7 | 8-15, in order. */
    const __m256i u_sums = _mm256_hadd_epi32(tc_rgb_weigh(rg_lo, b_lo, ku_rg, ku_b),
                                             tc_rgb_weigh(rg_hi, b_hi, ku_rg, ku_b));
    const __m256i v_sums = _mm256_hadd_epi32(tc_rgb_weigh(rg_lo, b_lo, kv_rg, kv_b),
                                             tc_rgb_weigh(rg_hi, b_hi, kv_rg, kv_b));
    const __m256i us = _mm256_srai_epi32(_mm256_add_epi32(u_sums, c_bias), TC_RGB_SHIFT - 5);
    const __m256i vs = _mm256_srai_epi32(_mm256_add_epi32(v_sums, c_bias), TC_RGB_SHIFT - 5);
    /* packus per lane: U 0-3, V 0-3 | U 4-7, V 4-7; qword order 0, 2, 1, 3 puts U before V. */
    const __m256i uv = _mm256_permute4x64_epi64(_mm256_packus_epi32(us, vs), 0xD8);
    _mm256_storeu_si256((__m256i *)py, _mm256_packus_epi32(y_lo, y_hi));
    _mm_storeu_si128((__m128i *)pu, _mm256_castsi256_si128(uv));
    _mm_storeu_si128((__m128i *)pv, _mm256_extracti128_si256(uv, 1));
}

/* Pixels [0, width) of one row: 16 pixels a step while the 16-byte loads stay inside the row's
 * 3 * width bytes, the rest by the C row. */
__attribute__((target("avx2"))) static void tc_rgb_planes_row_avx2(const tc_rgb_matrix *m, const uint8_t *src,
                                                                 int width, uint16_t *y, uint16_t *u, uint16_t *v)
{
    /* Per 128-bit lane, 4 pixels (12 bytes): r and g to words, b to the low word of a dword. */
    const __m256i take_rg = _mm256_setr_epi8(0, -1, 1, -1, 3, -1, 4, -1, 6, -1, 7, -1, 9, -1, 10, -1,
                                             0, -1, 1, -1, 3, -1, 4, -1, 6, -1, 7, -1, 9, -1, 10, -1);
    const __m256i take_b = _mm256_setr_epi8(2, -1, -1, -1, 5, -1, -1, -1, 8, -1, -1, -1, 11, -1, -1, -1,
                                            2, -1, -1, -1, 5, -1, -1, -1, 8, -1, -1, -1, 11, -1, -1, -1);
    int x = 0;
    /* The last load of a step starts at byte 3x + 36 and reads 16 bytes. */
    for (; x + 18 <= width; x += 16) {
        const uint8_t *p = src + 3 * x;
        const __m256i lo = _mm256_loadu2_m128i((const __m128i *)(p + 24), (const __m128i *)p);       /* 0-3 | 8-11 */
        const __m256i hi = _mm256_loadu2_m128i((const __m128i *)(p + 36), (const __m128i *)(p + 12)); /* 4-7 | 12-15 */
        tc_rgb_pairs_planes(m, _mm256_shuffle_epi8(lo, take_rg), _mm256_shuffle_epi8(hi, take_rg),
                            _mm256_shuffle_epi8(lo, take_b), _mm256_shuffle_epi8(hi, take_b), y + x, u + x / 2,
                            v + x / 2);
    }
    tc_rgb_planes_row_c(m, src, x, width, y, u, v);
}

/* The planes of 16 pixels given as 16-bit R, G, B lanes in pixel order. */
__attribute__((target("avx2"))) static inline void tc_rgb16_planes(const tc_rgb_matrix *m, __m256i r, __m256i g,
                                                                  __m256i b, uint16_t *py, uint16_t *pu,
                                                                  uint16_t *pv)
{
    const __m256i zero = _mm256_setzero_si256();
    /* unpack within 128-bit lanes: "lo" holds pixels 0-3 | 8-11, "hi" pixels 4-7 | 12-15. */
    tc_rgb_pairs_planes(m, _mm256_unpacklo_epi16(r, g), _mm256_unpackhi_epi16(r, g), _mm256_unpacklo_epi16(b, zero),
                        _mm256_unpackhi_epi16(b, zero), py, pu, pv);
}

/* tc_yuv420_planes_row_c for pixels [0, width), 16 at a time: colour.h's arithmetic in 16-bit lanes
 * (yuv8_rgb.h's, the instructions libswscale's converter uses: psubw, pmulhw, paddsw, then a clamp
 * to 0..255), the RGB kept in registers. */
__attribute__((target("avx2"))) static void tc_yuv420_planes_row_avx2(const tc_rgb_matrix *m,
                                                                    const tc_colour_coeffs *c, const uint8_t *y,
                                                                    const uint8_t *u, const uint8_t *v, int width,
                                                                    uint8_t *rgb, uint16_t *py, uint16_t *pu,
                                                                    uint16_t *pv)
{
    const tc_yuv8_lanes k = tc_yuv8_lanes_for(c);
    const __m256i top = _mm256_set1_epi16(255), zero = _mm256_setzero_si256();
    int x = 0;
    for (; x + 16 <= width; x += 16) {
        const __m128i u8 = _mm_loadl_epi64((const __m128i *)(u + x / 2));
        const __m128i v8 = _mm_loadl_epi64((const __m128i *)(v + x / 2));
        const __m256i luma = tc_yuv8_luma16(&k, _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)(y + x))));
        __m256i r, g, b;
        /* each chroma sample twice: the terms come in pixel order */
        tc_yuv8_chroma16(&k, _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(u8, u8)),
                         _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(v8, v8)), &r, &g, &b);
        r = _mm256_adds_epi16(luma, r);
        g = _mm256_adds_epi16(luma, g);
        b = _mm256_adds_epi16(luma, b);
        tc_rgb16_planes(m, _mm256_min_epi16(_mm256_max_epi16(r, zero), top),
                        _mm256_min_epi16(_mm256_max_epi16(g, zero), top),
                        _mm256_min_epi16(_mm256_max_epi16(b, zero), top), py + x, pu + x / 2, pv + x / 2);
    }
    tc_yuv420_planes_row_c(m, c, y, u, v, x, width, rgb, py, pu, pv);
}
#endif

static int tc_rgb_planes_vector_code = 1;   /* 0: the plain C rows everywhere (tests compare both) */

/* Whether the rows run as AVX2 code for matrix ``m`` (the plain C rows are slower than swscale's
 * own resize: torchcodec takes this route only where this holds). */
static inline int tc_rgb_planes_vectors(const tc_rgb_matrix *m)
{
#ifdef TC_RGB_PLANES_AVX2
    return tc_rgb_planes_vector_code && m->has_vector_form && tc_cpu_has_avx2();
#else
    (void)m;
    return 0;
#endif
}

/* Rows [0, rows) of a width-pixel RGB24 image at ``src`` (``src_stride`` bytes apart) into the
 * planes (strides in bytes): Y has width samples a row, U and V (width + 1) / 2. */
static inline void tc_rgb_to_planes(const tc_rgb_matrix *m, const uint8_t *src, ptrdiff_t src_stride,
                                    int width, int rows, uint16_t *y, ptrdiff_t y_stride, uint16_t *u, uint16_t *v,
                                    ptrdiff_t c_stride)
{
    const int vector = tc_rgb_planes_vectors(m);
    int r;
    (void)vector;                   /* unused without the AVX2 rows */
    for (r = 0; r < rows; r++) {
        const uint8_t *row = src + r * src_stride;
        uint16_t *y_row = (uint16_t *)((uint8_t *)y + r * y_stride);
        uint16_t *u_row = (uint16_t *)((uint8_t *)u + r * c_stride);
        uint16_t *v_row = (uint16_t *)((uint8_t *)v + r * c_stride);
#ifdef TC_RGB_PLANES_AVX2
        if (vector) {
            tc_rgb_planes_row_avx2(m, row, width, y_row, u_row, v_row);
            continue;
        }
#endif
        tc_rgb_planes_row_c(m, row, 0, width, y_row, u_row, v_row);
    }
}

/* Frame rows [first, first + rows) of 8-bit 4:2:0 YUV planes (row r's chroma is row r / 2; width
 * even) into rows 0.. of the planes, as tc_yuv420_planes_row_c; ``rgb`` is 3 * width bytes of
 * scratch. */
static inline void tc_yuv420_to_planes(const tc_rgb_matrix *m, const tc_colour_coeffs *c, const uint8_t *const src[3],
                                       const int src_stride[3], int first, int rows, int width, uint8_t *rgb,
                                       uint16_t *y, ptrdiff_t y_stride, uint16_t *u, uint16_t *v, ptrdiff_t c_stride)
{
    const int vector = tc_rgb_planes_vectors(m);
    int r;
    (void)vector;                   /* unused without the AVX2 rows */
    for (r = 0; r < rows; r++) {
        const int row = first + r;
        const uint8_t *y_in = src[0] + (ptrdiff_t)row * src_stride[0];
        const uint8_t *u_in = src[1] + (ptrdiff_t)(row / 2) * src_stride[1];
        const uint8_t *v_in = src[2] + (ptrdiff_t)(row / 2) * src_stride[2];
        uint16_t *y_row = (uint16_t *)((uint8_t *)y + r * y_stride);
        uint16_t *u_row = (uint16_t *)((uint8_t *)u + r * c_stride);
        uint16_t *v_row = (uint16_t *)((uint8_t *)v + r * c_stride);
#ifdef TC_RGB_PLANES_AVX2
        if (vector) {
            tc_yuv420_planes_row_avx2(m, c, y_in, u_in, v_in, width, rgb, y_row, u_row, v_row);
            continue;
        }
#endif
        tc_yuv420_planes_row_c(m, c, y_in, u_in, v_in, 0, width, rgb, y_row, u_row, v_row);
    }
}

#endif
