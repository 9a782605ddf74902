/* Batch wrappers around include/torchcodec/colour.h, compiled by tests/colour_probe.py with the
 * system C compiler and loaded with ctypes: the header's arithmetic, run on the CPU. */
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

/* n pixels of planes y, u, v into interleaved RGB: uint8 into rgb8 when it is not NULL, else float
 * into rgbf. bits == 8: uint8_t samples; otherwise uint16_t samples of `bits` bits, LSB-aligned
 * (as yuv420p10le stores them), MSB-aligned here as the 16-bit path takes them, and scaled as a
 * `bits`-bit stream (tc_sample16_scale). */
void probe_convert(int matrix, int full_range, int bits, const void *y, const void *u, const void *v,
                   int64_t n, uint8_t *rgb8, float *rgbf)
{
    tc_colour_coeffs c = tc_colour_coeffs_for(matrix, full_range);
    float scale = tc_sample16_scale(full_range, bits);
    for (int64_t i = 0; i < n; i++) {
        uint8_t *o8 = rgb8 ? rgb8 + 3 * i : NULL;
        float *of = rgbf ? rgbf + 3 * i : NULL;
        if (bits == 8) {
            int y8 = ((const uint8_t *)y)[i], u8 = ((const uint8_t *)u)[i], v8 = ((const uint8_t *)v)[i];
            if (o8)
                tc_yuv8_to_rgb8(&c, y8, u8, v8, o8, o8 + 1, o8 + 2);
            else
                tc_yuv8_to_rgbf(&c, y8, u8, v8, of, of + 1, of + 2);
        } else {
            uint16_t y16 = tc_msb_align16(((const uint16_t *)y)[i], bits);
            uint16_t u16 = tc_msb_align16(((const uint16_t *)u)[i], bits);
            uint16_t v16 = tc_msb_align16(((const uint16_t *)v)[i], bits);
            if (o8)
                tc_yuv16_to_rgb8(&c, scale, y16, u16, v16, o8, o8 + 1, o8 + 2);
            else
                tc_yuv16_to_rgbf(&c, scale, y16, u16, v16, of, of + 1, of + 2);
        }
    }
}
