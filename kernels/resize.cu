// Decode-time transforms on the GPU: one stage of a plan of crops and resizes, fused with the colour
// conversion when it reads the frame. A resize gives the bytes of swscale's bilinear RGB -> RGB
// resize of the CPU path (include/torchcodec/swscale_resize.h) of the image the CPU path resizes:
// the frame converted by its colour route (frame_pixels.cuh), or an earlier stage's output.
// Parameters and launch shape: tc_resize_params in include/torchcodec/kernels.h, and
// docs/cuda_kernels.md.
#include <stdint.h>

#include <torchcodec/kernels.h>

#include "frame_pixels.cuh"

namespace {

// The source image: the frame, pixel by pixel through its colour route (8- or 16-bit samples). The
// routes that give a pixel pair one chroma value compute it once for the pair: pixels are read
// left to right along a row, so the pair's second pixel finds it here.
struct FrameImage {
    const FrameReader<AnyPlane> frame;
    int chroma_x = -1, chroma_y = -1;       // the pair whose chroma u, v hold
    int32_t u = 0, v = 0;

    __device__ __forceinline__ FrameImage(const tc_resize_params &p) : frame(p.frame, 0) {}

    __device__ __forceinline__ void at(int x, int y, int32_t rgb[3])
    {
        if (frame.per_pixel) {
            frame.pixel(x, y, rgb);
            return;
        }
        if (x >> 1 != chroma_x || y != chroma_y) {
            frame.chroma(x, y, &u, &v);
            chroma_x = x >> 1;
            chroma_y = y;
        }
        frame.rgb(x, y, u, v, rgb);
    }
};

// The source image: packed RGB in device memory, RGB24 for the 8-bit chain, RGB48 for the other.
struct RgbImage {
    const char *base;
    int64_t stride;
    bool wide;

    __device__ __forceinline__ RgbImage(const tc_resize_params &p)
        : base((const char *)p.image), stride(p.image_row_stride), wide(p.chain == TC_RESIZE_CHAIN16)
    {
    }

    __device__ __forceinline__ void at(int x, int y, int32_t rgb[3]) const
    {
        const char *row = base + y * stride;
        for (int c = 0; c < 3; c++)
            rgb[c] = wide ? ((const uint16_t *)row)[3 * x + c] : ((const uint8_t *)row)[3 * x + c];
    }
};

// The horizontal filters' intermediates of row `row` of the crop at output column x: luma and
// the two chromas. Each pixel in the filters' reach is read once; to the right of the image it is
// 0 (only the pair of an odd width's last pixel reaches there). For a crop (no filter: h_taps 0),
// the pixel at column l_first itself.
template <typename Image>
__device__ __forceinline__ void filter_row(const tc_resize_params &p, Image &image, int chain, int row,
                                           int l_first, const int16_t *l_coeff, int c_first, const int16_t *c_coeff,
                                           int32_t mid[3])
{
    const int half = p.half_chroma;
    const int c_begin = half ? 2 * c_first : c_first, c_end = c_begin + (half ? 2 : 1) * p.c_taps;
    const int limit = half ? 2 * ((p.crop_width + 1) >> 1) : p.crop_width;   // taps past it are 0
    const int begin = l_first < c_begin ? l_first : c_begin;
    int end = l_first + p.h_taps > c_end ? l_first + p.h_taps : c_end;
    end = !p.h_taps ? l_first + 1 : end < limit ? end : limit;
    const int y = p.crop_y + row;
    uint32_t sums[3] = {0, 0, 0};
    int32_t pair[3] = {0, 0, 0};
    for (int x = begin; x < end; x++) {
        int32_t rgb[3] = {0, 0, 0};
        if (p.crop_x + x < p.image_width)
            image.at(p.crop_x + x, y, rgb);
        if (!p.h_taps) {
            mid[0] = rgb[0];
            mid[1] = rgb[1];
            mid[2] = rgb[2];
            return;
        }
        const int l = x - l_first;
        if (l >= 0 && l < p.h_taps)
            sums[0] += (uint32_t)tc_resize_luma(p.rgb2yuv, chain, rgb[0], rgb[1], rgb[2]) * (uint32_t)(int32_t)l_coeff[l];
        const int c = x - c_begin;
        if (c < 0 || x >= c_end)
            continue;
        if (!half) {
            const uint32_t w = (uint32_t)(int32_t)c_coeff[c];
            sums[1] += (uint32_t)tc_resize_chroma(p.rgb2yuv + 3, chain, rgb[0], rgb[1], rgb[2]) * w;
            sums[2] += (uint32_t)tc_resize_chroma(p.rgb2yuv + 6, chain, rgb[0], rgb[1], rgb[2]) * w;
        } else if (!(c & 1)) {
            pair[0] = rgb[0];
            pair[1] = rgb[1];
            pair[2] = rgb[2];
        } else {
            const uint32_t w = (uint32_t)(int32_t)c_coeff[c >> 1];
            const int32_t r = pair[0] + rgb[0], g = pair[1] + rgb[1], b = pair[2] + rgb[2];
            sums[1] += (uint32_t)tc_resize_chroma_pair(p.rgb2yuv + 3, chain, r, g, b) * w;
            sums[2] += (uint32_t)tc_resize_chroma_pair(p.rgb2yuv + 6, chain, r, g, b) * w;
        }
    }
    for (int k = 0; k < 3; k++)
        mid[k] = tc_resize_intermediate(chain, sums[k]);
}

// Output pixel (window_x + ox, window_y + oy) of the stage, into the window's (ox, oy): uint8_t
// for the 8-bit chain, uint16_t for the 16-bit one (float when p.float_output). A crop reads its
// one pixel through filter_row too, so that the kernel has one copy of the colour routes.
template <typename Image>
__device__ __forceinline__ void resize(const tc_resize_params &p)
{
    const int ox = blockIdx.x * blockDim.x + threadIdx.x, oy = blockIdx.y * blockDim.y + threadIdx.y;
    if (ox >= p.window_width || oy >= p.window_height)
        return;
    const int chain = p.chain;
    const int x = p.window_x + ox, y = p.window_y + oy;
    const bool crop = !p.h_taps;
    Image image(p);
    const tc_resize_filter_layout l = tc_resize_filter_layout_for(p.out_width, p.out_height, p.h_taps, p.c_taps,
                                                                  p.v_taps);
    const char *table = (const char *)p.filters;
    const int l_first = crop ? x : ((const int32_t *)(table + l.h_first))[x];
    const int c_first = crop ? x : ((const int32_t *)(table + l.c_first))[x];
    const int16_t *l_coeff = (const int16_t *)(table + l.h_coeffs) + (int64_t)x * p.h_taps;
    const int16_t *c_coeff = (const int16_t *)(table + l.c_coeffs) + (int64_t)x * p.c_taps;
    const int v_first = crop ? y : ((const int32_t *)(table + l.v_first))[y];
    const int16_t *v_coeff = (const int16_t *)(table + l.v_coeffs) + (int64_t)y * p.v_taps;
    const int v_taps = crop ? 1 : p.v_taps;
    uint32_t sums[3] = {0, 0, 0};
    int32_t rgb[3] = {0, 0, 0};
    for (int j = 0; j < v_taps; j++) {
        const uint32_t w = crop ? 1u : (uint32_t)(int32_t)v_coeff[j];
        if (!w)                 // no weight (taps past the last row of tiny images among them)
            continue;
        int32_t mid[3];
        filter_row(p, image, chain, v_first + j, l_first, l_coeff, c_first, c_coeff, mid);
        for (int k = 0; k < 3; k++) {
            rgb[k] = mid[k];
            sums[k] += (uint32_t)mid[k] * w;
        }
    }
    if (!crop)
        tc_resize_output(&p.coeffs, chain, p.rounding, sums[0], sums[1], sums[2], rgb);
    const int64_t at = oy * p.dst_row_stride + ox * p.dst_col_stride;
    if (chain == TC_RESIZE_CHAIN8)
        store((uint8_t *)p.dst + at, p.dst_chan_stride, rgb);
    else if (p.float_output)
        store((float *)p.dst + at, p.dst_chan_stride, rgb);
    else
        store((uint16_t *)p.dst + at, p.dst_chan_stride, rgb);
}

}  // namespace

extern "C" __global__ void tc_resize_frame(const tc_resize_params p) { resize<FrameImage>(p); }
extern "C" __global__ void tc_resize_image(const tc_resize_params p) { resize<RgbImage>(p); }
