# Declarations of the kernels' launch interface (include/torchcodec/kernels.h) and of the host code
# that fills it (swscale_rgb.h: routes, coefficients and chroma filters of the colour conversion;
# swscale_resize.h: the filters and matrix of the transforms' resize). C names kept.
from libc.stdint cimport int32_t, int64_t, uint64_t


cdef extern from "torchcodec/swscale_rgb.h" nogil:
    enum:
        TC_ROUTE_X86_RGB24
        TC_ROUTE_TABLE_RGB48
    ctypedef struct tc_sws_coeffs:
        pass
    tc_sws_coeffs tc_sws_coeffs_for(int matrix, int full_range)
    int tc_sws_route(int bits, int subsampled, int planar, int width, int height, int to_rgb48)
    int tc_sws_filter_table(int width, int height, void **table, int64_t *size, int *v_taps, int *h_taps)
    void tc_sws_coefficients(int matrix, int32_t inv[4])


cdef extern from "torchcodec/swscale_resize.h" nogil:
    enum:
        TC_RESIZE_CHAIN8
        TC_RESIZE_CHAIN16
    void tc_sws_rgb2yuv_table(const int32_t inv[4], int32_t k[9])
    int tc_resize_half_chroma(int crop_w, int out_w)
    int tc_resize_filter_table(int crop_w, int crop_h, int out_w, int out_h, void **table, int64_t *size,
                               int *h_taps, int *c_taps, int *v_taps)


cdef extern from "torchcodec/kernels.h" nogil:
    enum:
        TC_CHROMA_420
        TC_CHROMA_444
        TC_KERNEL_BLOCK_X
        TC_KERNEL_BLOCK_Y
    ctypedef struct tc_yuv_to_rgb_params:
        uint64_t planes[3]
        int64_t x_steps[3]
        int64_t y_steps[3]
        int64_t src_batch_stride
        uint64_t dst
        int64_t dst_row_stride
        int64_t dst_col_stride
        int64_t dst_chan_stride
        int64_t dst_batch_stride
        uint64_t filters
        int32_t width
        int32_t height
        int32_t chroma
        int32_t route
        int32_t sample_shift
        int32_t sample_bits
        int32_t v_taps
        int32_t h_taps
        tc_sws_coeffs coeffs
    ctypedef struct tc_resize_params:
        tc_yuv_to_rgb_params frame
        uint64_t image
        int64_t image_row_stride
        uint64_t filters
        uint64_t dst
        int64_t dst_row_stride
        int64_t dst_col_stride
        int64_t dst_chan_stride
        int32_t image_width
        int32_t image_height
        int32_t crop_x
        int32_t crop_y
        int32_t crop_width
        int32_t crop_height
        int32_t out_width
        int32_t out_height
        int32_t window_x
        int32_t window_y
        int32_t window_width
        int32_t window_height
        int32_t h_taps
        int32_t c_taps
        int32_t v_taps
        int32_t half_chroma
        int32_t rounding
        int32_t float_output
        int32_t rgb2yuv[9]
        int32_t chain
        tc_sws_coeffs coeffs
    ctypedef struct tc_copy_params:
        uint64_t src
        uint64_t dst
        int64_t src_pitch
        int64_t dst_pitch
        int64_t src_batch_stride
        int64_t dst_batch_stride
        int64_t row_bytes
        int32_t rows
        int32_t count
