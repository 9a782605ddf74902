/* torchcodec: 8-bit 4:2:0 and 4:2:2 YUV -> RGB24 with libswscale's x86 arithmetic, 32 pixels a step.
 *
 * For these frames (even height, the CLI's flags) swscale runs its unscaled converter, on x86 the
 * SSSE3 code of x86/yuv2rgb_template.c: 8 pixels a step in 16-bit lanes, each pixel taking the
 * chroma sample of its pair (and, for 4:2:0, of its pair of rows). colour.h's tc_yuv8_to_rgb8 is
 * that arithmetic for one pixel. This file runs it on AVX2 lanes, 32 pixels a step, computing each
 * chroma term once per sample rather than once per pixel, and writes exactly `width` pixels a row
 * (swscale writes whole blocks of 8 past the row's end, so that a tight destination needs a copy).
 *
 * A large output (a batch that does not fit in the caches) can be written with non-temporal
 * stores (`streaming`): the bytes go to memory without the read-for-ownership of each cache line
 * that a plain store of a line not in the cache costs, and without evicting what the decoder
 * uses. The caller ends such a conversion with tc_stream_fence() before the output is read.
 *
 * Nothing here is trusted blindly: as for hbd_rgb.h, torchcodec compares it with swscale on a frame
 * of random samples of each geometry, format and matrix before using it, and keeps swscale where
 * they differ (another FFmpeg release, another CPU). Without AVX2 it is not used: the plain C rows,
 * the reference and the rows' tails, are slower than swscale's SIMD.
 *
 * Plain C99 (the AVX2 rows use GCC/Clang target attributes), no libc beyond memcpy.
 */
#ifndef TORCHCODEC_YUV8_RGB_H
#define TORCHCODEC_YUV8_RGB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "torchcodec/colour.h"
#include "torchcodec/cpu.h"

/* Pixels [x0, width) of one row: pixel x takes chroma sample x / 2 of `u` and `v`. */
static inline void tc_yuv8_row_c(const tc_colour_coeffs *c, const uint8_t *y, const uint8_t *u, const uint8_t *v,
                                 int x0, int width, uint8_t *out)
{
    int x;
    for (x = x0; x < width; x++)
        tc_yuv8_to_rgb8(c, y[x], u[x / 2], v[x / 2], out + 3 * x, out + 3 * x + 1, out + 3 * x + 2);
}

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define TC_YUV8_AVX2 1
#include <immintrin.h>

/* colour.h's coefficients in 16-bit lanes. */
typedef struct tc_yuv8_lanes {
    __m256i y_offset, y_coeff, v2r, u2b, u2g, v2g;
} tc_yuv8_lanes;

__attribute__((target("avx2"))) static inline tc_yuv8_lanes tc_yuv8_lanes_for(const tc_colour_coeffs *c)
{
    tc_yuv8_lanes k;
    k.y_offset = _mm256_set1_epi16((int16_t)c->y_offset);
    k.y_coeff = _mm256_set1_epi16((int16_t)c->y_coeff);
    k.v2r = _mm256_set1_epi16((int16_t)c->v2r);
    k.u2b = _mm256_set1_epi16((int16_t)c->u2b);
    k.u2g = _mm256_set1_epi16((int16_t)c->u2g);
    k.v2g = _mm256_set1_epi16((int16_t)c->v2g);
    return k;
}

/* The luma term of 16 samples (16-bit lanes holding 0..255): psubw wraps, pmulhw floors. */
__attribute__((target("avx2"))) static inline __m256i tc_yuv8_luma16(const tc_yuv8_lanes *k, __m256i y)
{
    return _mm256_mulhi_epi16(_mm256_sub_epi16(_mm256_slli_epi16(y, 3), k->y_offset), k->y_coeff);
}

/* The red, green and blue chroma terms of 16 chroma samples (16-bit lanes holding 0..255); green's
 * two products are added with saturation, as paddsw does. */
__attribute__((target("avx2"))) static inline void tc_yuv8_chroma16(const tc_yuv8_lanes *k, __m256i u, __m256i v,
                                                                   __m256i *r, __m256i *g, __m256i *b)
{
    const __m256i centre = _mm256_set1_epi16(1024);
    const __m256i uu = _mm256_sub_epi16(_mm256_slli_epi16(u, 3), centre);
    const __m256i vv = _mm256_sub_epi16(_mm256_slli_epi16(v, 3), centre);
    *r = _mm256_mulhi_epi16(vv, k->v2r);
    *g = _mm256_adds_epi16(_mm256_mulhi_epi16(uu, k->u2g), _mm256_mulhi_epi16(vv, k->v2g));
    *b = _mm256_mulhi_epi16(uu, k->u2b);
}

/* The 16-byte block `k` (0, 1, 2) of the RGB24 bytes of each 128-bit lane's 16 pixels. */
__attribute__((target("avx2"))) static inline __m256i tc_rgb24_block(__m256i r, __m256i g, __m256i b, int k)
{
    static const int8_t take[3][3][16] = {
        {{0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1, 5},
         {-1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1, -1},
         {-1, -1, 0, -1, -1, 1, -1, -1, 2, -1, -1, 3, -1, -1, 4, -1}},
        {{-1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10, -1},
         {5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1, 10},
         {-1, 5, -1, -1, 6, -1, -1, 7, -1, -1, 8, -1, -1, 9, -1, -1}},
        {{-1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1, -1},
         {-1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15, -1},
         {10, -1, -1, 11, -1, -1, 12, -1, -1, 13, -1, -1, 14, -1, -1, 15}}};
    const __m256i take_r = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)take[k][0]));
    const __m256i take_g = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)take[k][1]));
    const __m256i take_b = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)take[k][2]));
    return _mm256_or_si256(_mm256_or_si256(_mm256_shuffle_epi8(r, take_r), _mm256_shuffle_epi8(g, take_g)),
                           _mm256_shuffle_epi8(b, take_b));
}

/* 32 R, G, B bytes in pixel order interleaved into 96 bytes of RGB24: each lane's 16 pixels make
 * three 16-byte blocks, which two lane swaps put in order. `streaming` (out 32-byte aligned):
 * non-temporal stores. */
__attribute__((target("avx2"))) static inline void tc_store_rgb96(uint8_t *out, __m256i r, __m256i g, __m256i b,
                                                                 int streaming)
{
    const __m256i block0 = tc_rgb24_block(r, g, b, 0), block1 = tc_rgb24_block(r, g, b, 1);
    const __m256i block2 = tc_rgb24_block(r, g, b, 2);
    const __m256i first = _mm256_permute2x128_si256(block0, block1, 0x20);
    const __m256i second = _mm256_permute2x128_si256(block2, block0, 0x30);
    const __m256i third = _mm256_permute2x128_si256(block1, block2, 0x31);
    if (streaming) {
        _mm256_stream_si256((__m256i *)out, first);
        _mm256_stream_si256((__m256i *)(out + 32), second);
        _mm256_stream_si256((__m256i *)(out + 64), third);
    } else {
        _mm256_storeu_si256((__m256i *)out, first);
        _mm256_storeu_si256((__m256i *)(out + 32), second);
        _mm256_storeu_si256((__m256i *)(out + 64), third);
    }
}

/* Whether the 96-byte blocks of a row at `out` can be streamed: its start is 32-byte aligned. */
static inline int tc_can_stream(const uint8_t *out)
{
    return ((uintptr_t)out & 31) == 0;
}

/* One channel of 32 pixels as bytes in pixel order, from the luma terms of pixels 0-7 | 16-23
 * (`luma_a`, 16-bit lanes as unpacklo_epi8 leaves them) and 8-15 | 24-31 (`luma_b`) and the chroma
 * term of their 16 pairs (pairs 0-7 | 8-15): unpacking the term with itself gives each pixel its
 * pair's term in the lanes of luma_a and luma_b. The sums saturate (paddsw); packus clamps them to
 * 0..255 and puts pixels 0-15 in the low lane, 16-31 in the high one. */
__attribute__((target("avx2"))) static inline __m256i tc_yuv8_channel32(__m256i term, __m256i luma_a, __m256i luma_b)
{
    return _mm256_packus_epi16(_mm256_adds_epi16(luma_a, _mm256_unpacklo_epi16(term, term)),
                               _mm256_adds_epi16(luma_b, _mm256_unpackhi_epi16(term, term)));
}

/* 32 pixels from 32 luma and 16 chroma samples at y, u, v into 96 bytes at out (tc_store_rgb96's
 * `streaming`). */
__attribute__((target("avx2"))) static inline void tc_yuv8_block32(const tc_yuv8_lanes *k, const uint8_t *y,
                                                                  const uint8_t *u, const uint8_t *v, uint8_t *out,
                                                                  int streaming)
{
    const __m256i zero = _mm256_setzero_si256();
    const __m256i luma = _mm256_loadu_si256((const __m256i *)y);
    const __m256i luma_a = tc_yuv8_luma16(k, _mm256_unpacklo_epi8(luma, zero));
    const __m256i luma_b = tc_yuv8_luma16(k, _mm256_unpackhi_epi8(luma, zero));
    __m256i r_term, g_term, b_term;
    tc_yuv8_chroma16(k, _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)u)),
                     _mm256_cvtepu8_epi16(_mm_loadu_si128((const __m128i *)v)), &r_term, &g_term, &b_term);
    tc_store_rgb96(out, tc_yuv8_channel32(r_term, luma_a, luma_b), tc_yuv8_channel32(g_term, luma_a, luma_b),
                   tc_yuv8_channel32(b_term, luma_a, luma_b), streaming);
}

/* tc_yuv8_row_c for pixels [0, width), 32 at a time (streamed when `streaming` and the row is
 * aligned); the last, partial block goes through local copies of its samples and pixels, so that
 * nothing outside the row is read or written. */
__attribute__((target("avx2"))) static void tc_yuv8_row_avx2(const tc_yuv8_lanes *k, const uint8_t *y,
                                                             const uint8_t *u, const uint8_t *v, int width,
                                                             uint8_t *out, int streaming)
{
    uint8_t tail_y[32] = {0}, tail_u[16] = {0}, tail_v[16] = {0}, tail_out[96];
    int x = 0, rest;
    if (streaming && tc_can_stream(out)) {
        for (; x + 32 <= width; x += 32)
            tc_yuv8_block32(k, y + x, u + x / 2, v + x / 2, out + 3 * x, 1);
    }
    for (; x + 32 <= width; x += 32)
        tc_yuv8_block32(k, y + x, u + x / 2, v + x / 2, out + 3 * x, 0);
    rest = width - x;
    if (rest > 0) {
        memcpy(tail_y, y + x, (size_t)rest);
        memcpy(tail_u, u + x / 2, (size_t)(rest + 1) / 2);
        memcpy(tail_v, v + x / 2, (size_t)(rest + 1) / 2);
        tc_yuv8_block32(k, tail_y, tail_u, tail_v, tail_out, 0);
        memcpy(out + 3 * x, tail_out, (size_t)rest * 3);
    }
}

/* tc_yuv8_convert_rows with the AVX2 rows. */
__attribute__((target("avx2"))) static void tc_yuv8_rows_avx2(const tc_colour_coeffs *c, int chroma_shift,
                                                              const uint8_t *const src[3], const int src_stride[3],
                                                              int width, uint8_t *dst, ptrdiff_t dst_stride,
                                                              int row_begin, int row_end, int streaming)
{
    const tc_yuv8_lanes k = tc_yuv8_lanes_for(c);
    int r;
    for (r = row_begin; r < row_end; r++)
        tc_yuv8_row_avx2(&k, src[0] + (ptrdiff_t)r * src_stride[0],
                         src[1] + (ptrdiff_t)(r >> chroma_shift) * src_stride[1],
                         src[2] + (ptrdiff_t)(r >> chroma_shift) * src_stride[2], width,
                         dst + (ptrdiff_t)r * dst_stride, streaming);
}
#endif

/* Orders the non-temporal stores of a streamed conversion before whatever the thread does next
 * (another thread may read the output once it is told the frame is done). */
static inline void tc_stream_fence(void)
{
#ifdef TC_YUV8_AVX2
    _mm_sfence();
#endif
}

static int tc_yuv8_vector_code = 1;     /* 0: the plain C rows everywhere (tests compare both) */

/* Whether the rows run as AVX2 code (torchcodec takes this conversion only where they do). */
static inline int tc_yuv8_vectors(void)
{
#ifdef TC_YUV8_AVX2
    return tc_yuv8_vector_code && tc_cpu_has_avx2();
#else
    return 0;
#endif
}

/* Rows [row_begin, row_end) of a width-pixel frame of 8-bit planes (strides in bytes; row r's chroma
 * is row r >> chroma_shift: 1 for 4:2:0, 0 for 4:2:2) into packed RGB24 at dst (its stride in bytes),
 * exactly `width` pixels a row; `streaming`: with non-temporal stores where the rows allow (then
 * tc_stream_fence() after the conversion). */
static inline void tc_yuv8_convert_rows(const tc_colour_coeffs *c, int chroma_shift, const uint8_t *const src[3],
                                        const int src_stride[3], int width, uint8_t *dst, ptrdiff_t dst_stride,
                                        int row_begin, int row_end, int streaming)
{
    int r;
#ifdef TC_YUV8_AVX2
    if (tc_yuv8_vectors()) {
        tc_yuv8_rows_avx2(c, chroma_shift, src, src_stride, width, dst, dst_stride, row_begin, row_end, streaming);
        return;
    }
#endif
    (void)streaming;
    for (r = row_begin; r < row_end; r++)
        tc_yuv8_row_c(c, src[0] + (ptrdiff_t)r * src_stride[0], src[1] + (ptrdiff_t)(r >> chroma_shift) * src_stride[1],
                      src[2] + (ptrdiff_t)(r >> chroma_shift) * src_stride[2], 0, width,
                      dst + (ptrdiff_t)r * dst_stride);
}

#endif /* TORCHCODEC_YUV8_RGB_H */
