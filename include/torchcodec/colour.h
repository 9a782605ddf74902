/* torchcodec: YUV -> RGB colour math, shared by the CPU tests and the CUDA kernels.
 *
 * Plain C99 and CUDA device code (every function is __host__ __device__ under nvcc). No libc beyond
 * <stdint.h>, no tables: a kernel and a C program compute the same bytes.
 *
 * Coefficients are libswscale's (sws_getCoefficients, indexed by AVColorSpace; the values are the
 * 16.16 fixed-point Cr->R, Cb->B, Cb->G, Cr->G factors for limited-range input). The torchcodec CPU
 * path gives swscale the frame's AVColorSpace and range, so using the same numbers here keeps CPU
 * and GPU on one definition of each matrix.
 *
 * 8-bit input -> uint8 RGB (tc_yuv8_to_rgb8) is integer arithmetic that reproduces libswscale's x86
 * YUV420 -> RGB24 converter bit for bit (16-bit lanes: samples scaled by 8, offset subtracted,
 * "multiply high" products, saturating adds, clamp to 0..255). That converter is what
 * `ffmpeg -vf format=rgb24` and torchcodec's CPU decoder use for 8-bit 4:2:0 frames of even height,
 * so a kernel that takes each chroma sample for its 2x2 block gives the CPU bytes exactly.
 * (libswscale's general path, used for 4:4:4 input, rounds at 30-bit precision instead: at most 3
 * apart; tests/test_colour_formula.py measures it.)
 *
 * float32 output, and any input of more than 8 bits (given MSB-aligned in 16 bits, as P010/P016
 * store it: tc_msb_align16), use the same matrix in single precision, clamped to [0, 1]. Samples of
 * more than 8 bits are put on the 8-bit scale as ITU-T H.273 defines the levels of each depth:
 * limited range by 2^(bits - 8) (black 16 << (bits - 8), white 235 << (bits - 8)), full range by the
 * true maximum (2^bits - 1 is 255, chroma centred on 2^(bits - 1)): tc_sample16_scale.
 */
#ifndef TORCHCODEC_COLOUR_H
#define TORCHCODEC_COLOUR_H

#include <stdint.h>

#ifdef __CUDACC__
#define TC_COLOUR_FN static inline __host__ __device__
#else
#define TC_COLOUR_FN static inline
#endif

/* Matrices, numbered as AVColorSpace (libavutil/pixfmt.h) so that frame->colorspace can be passed. */
enum {
    TC_MATRIX_BT709 = 1,      /* AVCOL_SPC_BT709 */
    TC_MATRIX_UNSPECIFIED = 2,/* swscale's default: BT.601 */
    TC_MATRIX_FCC = 4,
    TC_MATRIX_BT470BG = 5,    /* BT.601 625 lines */
    TC_MATRIX_BT601 = 6,      /* AVCOL_SPC_SMPTE170M, BT.601 525 lines (same matrix as 5) */
    TC_MATRIX_SMPTE240M = 7,
    TC_MATRIX_BT2020 = 9,     /* AVCOL_SPC_BT2020_NCL (non-constant luminance) */
    TC_MATRIX_BT2020_CL = 10, /* swscale converts it with the BT.2020 NCL matrix */
};

/* Everything a conversion needs, computed once per (matrix, range) by tc_colour_coeffs(). */
typedef struct tc_colour_coeffs {
    /* 8-bit integer path, in swscale's x86 units: sample * 8 - offset, then (x * coeff) >> 16. */
    int32_t y_offset, y_coeff, v2r, u2b, u2g, v2g;
    /* float path: rgb = y_scale * (Y - y_bias) + chroma terms * (C - 128), on 8-bit-scaled samples. */
    float y_bias, y_scale, fv2r, fu2b, fu2g, fv2g;
} tc_colour_coeffs;

/* libswscale's roundToInt16: a 16.16 value times 2^k, rounded to an int16 (saturated). */
TC_COLOUR_FN int32_t tc_round_to_int16(int64_t f)
{
    int64_t r = (f + (1 << 15)) >> 16;
    return (int32_t)(r < -0x8000 ? -0x8000 : r > 0x7fff ? 0x7fff : r);
}

/* libswscale's coefficients of AVColorSpace `matrix` (sws_getCoefficients): Cr->R, Cb->B, Cb->G,
 * Cr->G in 16.16 for limited-range input. Unknown matrices, and YCgCo (8), are BT.601, as there. */
TC_COLOUR_FN void tc_sws_coefficients(int matrix, int32_t inv[4])
{
    switch (matrix) {
    case 0: case TC_MATRIX_BT709:
        inv[0] = 117489; inv[1] = 138438; inv[2] = 13975; inv[3] = 34925; break;
    case TC_MATRIX_FCC:
        inv[0] = 104448; inv[1] = 132798; inv[2] = 24759; inv[3] = 53109; break;
    case TC_MATRIX_SMPTE240M:
        inv[0] = 117579; inv[1] = 136230; inv[2] = 16907; inv[3] = 35559; break;
    case TC_MATRIX_BT2020: case TC_MATRIX_BT2020_CL:
        inv[0] = 110013; inv[1] = 140363; inv[2] = 12277; inv[3] = 42626; break;
    default:
        inv[0] = 104597; inv[1] = 132201; inv[2] = 25675; inv[3] = 53279; break;
    }
}

/* ff_yuv2rgb_c_init_tables's 16.16 factors for swscale's coefficients `inv` (Cr->R, Cb->B, Cb->G,
 * Cr->G: sws_getCoefficients) and the range, at brightness 0, contrast and saturation 1 (which
 * leave them as they are): luma gain cy and offset oy, chroma gains (green's negative). */
typedef struct tc_sws_factors {
    int64_t cy, oy, crv, cbu, cgu, cgv;
} tc_sws_factors;

TC_COLOUR_FN tc_sws_factors tc_sws_factors_for(const int32_t inv[4], int full_range)
{
    tc_sws_factors f;
    f.crv = inv[0];
    f.cbu = inv[1];
    f.cgu = -(int64_t)inv[2];
    f.cgv = -(int64_t)inv[3];
    f.cy = 1 << 16;
    f.oy = 0;
    if (!full_range) {
        f.cy = f.cy * 255 / 219;
        f.oy = 16 << 16;
    } else {                        /* C division truncates towards zero, as in swscale */
        f.crv = f.crv * 224 / 255;
        f.cbu = f.cbu * 224 / 255;
        f.cgu = f.cgu * 224 / 255;
        f.cgv = f.cgv * 224 / 255;
    }
    return f;
}

/* Coefficients for the factors of a matrix and range (tc_sws_factors_for). */
TC_COLOUR_FN tc_colour_coeffs tc_colour_coeffs_from(tc_sws_factors f, int full_range)
{
    const int64_t crv = f.crv, cbu = f.cbu, cgu = f.cgu, cgv = f.cgv, cy = f.cy, oy = f.oy;
    tc_colour_coeffs c;
    c.y_offset = tc_round_to_int16(oy * (1 << 3));
    c.y_coeff = tc_round_to_int16(cy * (1 << 13));
    c.v2r = tc_round_to_int16(crv * (1 << 13));
    c.u2b = tc_round_to_int16(cbu * (1 << 13));
    c.u2g = tc_round_to_int16(cgu * (1 << 13));
    c.v2g = tc_round_to_int16(cgv * (1 << 13));
    c.y_bias = full_range ? 0.0f : 16.0f;
    c.y_scale = (float)cy / (65536.0f * 255.0f);
    c.fv2r = (float)crv / (65536.0f * 255.0f);
    c.fu2b = (float)cbu / (65536.0f * 255.0f);
    c.fu2g = (float)cgu / (65536.0f * 255.0f);
    c.fv2g = (float)cgv / (65536.0f * 255.0f);
    return c;
}

/* Coefficients for AVColorSpace `matrix` and `full_range` (nonzero for AVCOL_RANGE_JPEG). */
TC_COLOUR_FN tc_colour_coeffs tc_colour_coeffs_for(int matrix, int full_range)
{
    int32_t inv[4];
    tc_sws_coefficients(matrix, inv);
    return tc_colour_coeffs_from(tc_sws_factors_for(inv, full_range), full_range);
}

TC_COLOUR_FN int32_t tc_sat16(int32_t x)        /* saturating 16-bit lane (paddsw) */
{
    return x < -0x8000 ? -0x8000 : x > 0x7fff ? 0x7fff : x;
}

TC_COLOUR_FN uint8_t tc_clamp_u8(int32_t x)     /* packuswb */
{
    return (uint8_t)(x < 0 ? 0 : x > 255 ? 255 : x);
}

TC_COLOUR_FN int32_t tc_mulhi16(int32_t a, int32_t b)   /* pmulhw: (a * b) >> 16, floor */
{
    return (a * b) >> 16;
}

/* 8-bit Y, Cb (u), Cr (v) -> 8-bit R, G, B; bit-exact with libswscale's x86 YUV420 -> RGB24. */
TC_COLOUR_FN void tc_yuv8_to_rgb8(const tc_colour_coeffs *c, int y, int u, int v,
                                  uint8_t *r, uint8_t *g, uint8_t *b)
{
    int32_t yy = (int32_t)(int16_t)(uint16_t)((y << 3) - c->y_offset);   /* psubw wraps */
    int32_t uu = (u << 3) - 1024, vv = (v << 3) - 1024;                  /* never saturates */
    int32_t luma = tc_mulhi16(yy, c->y_coeff);
    int32_t green = tc_sat16(tc_mulhi16(uu, c->u2g) + tc_mulhi16(vv, c->v2g));
    *r = tc_clamp_u8(tc_sat16(luma + tc_mulhi16(vv, c->v2r)));
    *g = tc_clamp_u8(tc_sat16(luma + green));
    *b = tc_clamp_u8(tc_sat16(luma + tc_mulhi16(uu, c->u2b)));
}

TC_COLOUR_FN float tc_clamp01(float x)
{
    return x < 0.0f ? 0.0f : x > 1.0f ? 1.0f : x;
}

/* Samples on the 8-bit scale (Y in 0..255, chroma centred on 128; fractions allowed) -> RGB in [0, 1]. */
TC_COLOUR_FN void tc_yuvf_to_rgbf(const tc_colour_coeffs *c, float y, float u, float v,
                                  float *r, float *g, float *b)
{
    float luma = c->y_scale * (y - c->y_bias);
    u -= 128.0f;
    v -= 128.0f;
    *r = tc_clamp01(luma + c->fv2r * v);
    *g = tc_clamp01(luma + c->fu2g * u + c->fv2g * v);
    *b = tc_clamp01(luma + c->fu2b * u);
}

/* 8-bit samples -> float RGB in [0, 1]. */
TC_COLOUR_FN void tc_yuv8_to_rgbf(const tc_colour_coeffs *c, int y, int u, int v,
                                  float *r, float *g, float *b)
{
    tc_yuvf_to_rgbf(c, (float)y, (float)u, (float)v, r, g, b);
}

/* A `bits`-bit sample (9..16) MSB-aligned in 16 bits, the layout of P010/P016 surfaces. */
TC_COLOUR_FN uint16_t tc_msb_align16(uint16_t sample, int bits)
{
    return (uint16_t)(sample << (16 - bits));
}

/* The factor that puts a 16-bit MSB-aligned sample of a `bits`-bit stream (9..16) on the 8-bit scale:
 * limited range 1/256 (a shift: 235 << (bits - 8) is white); full range 255 / ((2^bits - 1) << (16 - bits)),
 * so that the largest code, 2^bits - 1, is exactly 255. */
TC_COLOUR_FN float tc_sample16_scale(int full_range, int bits)
{
    if (!full_range)
        return 1.0f / 256.0f;
    if (bits < 9 || bits > 16)
        bits = 16;
    return 255.0f / (float)((((uint32_t)1 << bits) - 1u) << (16 - bits));
}

/* 16-bit MSB-aligned samples (P010, P016, YUV444P16, or tc_msb_align16 of any depth) -> float RGB;
 * `scale` is tc_sample16_scale of the stream's range and depth. Chroma is centred on 2^15. */
TC_COLOUR_FN void tc_yuv16_to_rgbf(const tc_colour_coeffs *c, float scale, uint16_t y, uint16_t u, uint16_t v,
                                   float *r, float *g, float *b)
{
    tc_yuvf_to_rgbf(c, (float)y * scale, 128.0f + ((float)u - 32768.0f) * scale,
                    128.0f + ((float)v - 32768.0f) * scale, r, g, b);
}

/* A [0, 1] value -> uint8, rounded to nearest. */
TC_COLOUR_FN uint8_t tc_unit_to_u8(float x)
{
    return (uint8_t)(x * 255.0f + 0.5f);
}

/* 16-bit MSB-aligned samples -> 8-bit RGB (the float path, rounded). */
TC_COLOUR_FN void tc_yuv16_to_rgb8(const tc_colour_coeffs *c, float scale, uint16_t y, uint16_t u, uint16_t v,
                                   uint8_t *r, uint8_t *g, uint8_t *b)
{
    float fr, fg, fb;
    tc_yuv16_to_rgbf(c, scale, y, u, v, &fr, &fg, &fb);
    *r = tc_unit_to_u8(fr);
    *g = tc_unit_to_u8(fg);
    *b = tc_unit_to_u8(fb);
}

/* ---- RGB -> YUV (encoding on CUDA: kernels/colour.cu's tc_convert_rgb8_to_nv12) ----------------
 *
 * The forward matrix of AVColorSpace `matrix` from its luma weights Kr, Kb (Kg = 1 - Kr - Kb), the
 * ones libswscale's RGB -> YUV tables are made from (BT.709, FCC, SMPTE 240M, BT.2020; BT.601 for
 * bt470bg, smpte170m and anything else, as swscale's default), in single precision:
 *   Y = Kr R + Kg G + Kb B,  Cb = (B - Y) / (2 (1 - Kb)),  Cr = (R - Y) / (2 (1 - Kr))
 * limited range: 16 + 219/255 Y, 128 + 224/255 Cb/Cr; full range: Y, 128 + Cb/Cr. Samples are
 * rounded half up and clamped to 0..255 (tc_round_sample). Chroma of a 2x2 block is the mean of its
 * pixels' Cb/Cr (those inside the picture, at odd edges). */
typedef struct tc_rgb_to_yuv_coeffs {
    float y[3], u[3], v[3];     /* weights of R, G, B */
    float y_offset;             /* 16 (limited) or 0 (full); chroma is centred on 128 */
} tc_rgb_to_yuv_coeffs;

TC_COLOUR_FN tc_rgb_to_yuv_coeffs tc_rgb_to_yuv_coeffs_for(int matrix, int full_range)
{
    float kr, kb;
    switch (matrix) {
    case TC_MATRIX_BT709:       kr = 0.2126f; kb = 0.0722f; break;
    case TC_MATRIX_FCC:         kr = 0.30f;   kb = 0.11f;   break;
    case TC_MATRIX_SMPTE240M:   kr = 0.212f;  kb = 0.087f;  break;
    case TC_MATRIX_BT2020: case TC_MATRIX_BT2020_CL:
                                kr = 0.2627f; kb = 0.0593f; break;
    default:                    kr = 0.299f;  kb = 0.114f;  break;
    }
    const float kg = 1.0f - kr - kb;
    const float ys = full_range ? 1.0f : 219.0f / 255.0f, cs = full_range ? 1.0f : 224.0f / 255.0f;
    const float us = cs / (2.0f * (1.0f - kb)), vs = cs / (2.0f * (1.0f - kr));
    tc_rgb_to_yuv_coeffs c;
    c.y[0] = ys * kr;  c.y[1] = ys * kg;  c.y[2] = ys * kb;
    c.u[0] = -us * kr; c.u[1] = -us * kg; c.u[2] = us * (1.0f - kb);
    c.v[0] = vs * (1.0f - kr); c.v[1] = -vs * kg; c.v[2] = -vs * kb;
    c.y_offset = full_range ? 0.0f : 16.0f;
    return c;
}

/* A sample on the 8-bit scale, rounded half up and clamped to 0..255. */
TC_COLOUR_FN uint8_t tc_round_sample(float x)
{
    return (uint8_t)(x <= 0.0f ? 0 : x >= 255.0f ? 255 : (int)(x + 0.5f));
}

TC_COLOUR_FN float tc_dot3(const float w[3], float r, float g, float b)
{
    return w[0] * r + w[1] * g + w[2] * b;
}

#endif /* TORCHCODEC_COLOUR_H */
