/* Batch wrappers around include/torchcodec/colour.h, compiled by tests/test_colour_formula.py with
 * the system C compiler and loaded with ctypes: the header's arithmetic, run on the CPU. */
#include <stddef.h>
#include <stdint.h>
#include <torchcodec/colour.h>

void probe_coeffs(int matrix, int full_range, int32_t ints[6], float floats[6])
{
    tc_colour_coeffs c = tc_colour_coeffs_for(matrix, full_range);
    ints[0] = c.y_offset; ints[1] = c.y_coeff; ints[2] = c.v2r;
    ints[3] = c.u2b; ints[4] = c.u2g; ints[5] = c.v2g;
    floats[0] = c.y_bias; floats[1] = c.y_scale; floats[2] = c.fv2r;
    floats[3] = c.fu2b; floats[4] = c.fu2g; floats[5] = c.fv2g;
}

void probe_yuv8_to_rgb8(int matrix, int full_range, const uint8_t *y, const uint8_t *u,
                        const uint8_t *v, int64_t n, uint8_t *rgb)
{
    tc_colour_coeffs c = tc_colour_coeffs_for(matrix, full_range);
    for (int64_t i = 0; i < n; i++)
        tc_yuv8_to_rgb8(&c, y[i], u[i], v[i], &rgb[3 * i], &rgb[3 * i + 1], &rgb[3 * i + 2]);
}

void probe_yuv8_to_rgbf(int matrix, int full_range, const uint8_t *y, const uint8_t *u,
                        const uint8_t *v, int64_t n, float *rgb)
{
    tc_colour_coeffs c = tc_colour_coeffs_for(matrix, full_range);
    for (int64_t i = 0; i < n; i++)
        tc_yuv8_to_rgbf(&c, y[i], u[i], v[i], &rgb[3 * i], &rgb[3 * i + 1], &rgb[3 * i + 2]);
}

/* Samples of `bits` bits (LSB-aligned, as yuv420p10le stores them), MSB-aligned first. */
void probe_yuv16_to_rgbf(int matrix, int full_range, int bits, const uint16_t *y, const uint16_t *u,
                         const uint16_t *v, int64_t n, float *rgb)
{
    tc_colour_coeffs c = tc_colour_coeffs_for(matrix, full_range);
    for (int64_t i = 0; i < n; i++)
        tc_yuv16_to_rgbf(&c, tc_msb_align16(y[i], bits), tc_msb_align16(u[i], bits),
                         tc_msb_align16(v[i], bits), &rgb[3 * i], &rgb[3 * i + 1], &rgb[3 * i + 2]);
}

void probe_yuv16_to_rgb8(int matrix, int full_range, int bits, const uint16_t *y, const uint16_t *u,
                         const uint16_t *v, int64_t n, uint8_t *rgb)
{
    tc_colour_coeffs c = tc_colour_coeffs_for(matrix, full_range);
    for (int64_t i = 0; i < n; i++)
        tc_yuv16_to_rgb8(&c, tc_msb_align16(y[i], bits), tc_msb_align16(u[i], bits),
                         tc_msb_align16(v[i], bits), &rgb[3 * i], &rgb[3 * i + 1], &rgb[3 * i + 2]);
}
