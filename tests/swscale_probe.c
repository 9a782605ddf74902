/* The host side of include/torchcodec/swscale_rgb.h and the launch struct of kernels.h, compiled by
 * tests/test_cuda_kernels.py with the system C compiler and loaded with ctypes: what a caller of the
 * colour kernels computes before launching them (the converter does the same in Cython). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <torchcodec/kernels.h>

int probe_params_size(void) { return (int)sizeof(tc_yuv_to_rgb_params); }

int probe_coeffs_offset(void) { return (int)offsetof(tc_yuv_to_rgb_params, coeffs); }

void probe_coeffs(int matrix, int full_range, tc_sws_coeffs *out) { *out = tc_sws_coeffs_for(matrix, full_range); }

int probe_route(int bits, int subsampled, int planar, int width, int height, int to_rgb48)
{
    return tc_sws_route(bits, subsampled, planar, width, height, to_rgb48);
}

/* The chroma filter table of a width x height 4:2:0 frame into out (capacity bytes): its size, or
 * -1 (no memory, or too small a buffer). */
int64_t probe_filter_table(int width, int height, void *out, int64_t capacity, int *v_taps, int *h_taps)
{
    void *table;
    int64_t bytes;
    if (tc_sws_filter_table(width, height, &table, &bytes, v_taps, h_taps) < 0)
        return -1;
    if (bytes <= capacity)
        memcpy(out, table, (size_t)bytes);
    free(table);
    return bytes <= capacity ? bytes : -1;
}
