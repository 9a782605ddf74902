// YUV -> RGB conversion kernels, giving the CPU path's bytes (swscale's routes: include/torchcodec/
// swscale_rgb.h), and RGB -> NV12 for encoding (colour.h). Parameters and launch shape:
// include/torchcodec/kernels.h and docs/cuda_kernels.md.
#include <stdint.h>

#include <torchcodec/colour.h>
#include <torchcodec/kernels.h>

#include "frame_pixels.cuh"

namespace {

// The pair of pixels (2 tx, y), (2 tx + 1, y) of frame blockIdx.z, or the last one alone, sharing
// their chroma where the route does. In is the sample type (uint8_t, uint16_t), Out the output's
// (uint8_t: RGB24 routes, float: RGB48 routes).
template <typename In, typename Out>
__device__ __forceinline__ void convert(const tc_yuv_to_rgb_params &p)
{
    const int tx = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    const int x0 = 2 * tx, z = blockIdx.z;
    if (x0 >= p.width || y >= p.height)
        return;
    const int count = x0 + 1 < p.width ? 2 : 1;
    const FrameReader<Plane<In>> frame(p, z);
    Out *out = (Out *)p.dst + z * p.dst_batch_stride + y * p.dst_row_stride + x0 * p.dst_col_stride;
    int32_t u = 0, v = 0, rgb[3];
    for (int k = 0; k < count; k++) {
        if (k == 0 || frame.per_pixel)
            frame.chroma(x0 + k, y, &u, &v);
        frame.rgb(x0 + k, y, u, v, rgb);
        store(out + k * p.dst_col_stride, p.dst_chan_stride, rgb);
    }
}

}  // namespace

extern "C" __global__ void tc_convert_yuv8_to_rgb8(const tc_yuv_to_rgb_params p) { convert<uint8_t, uint8_t>(p); }
extern "C" __global__ void tc_convert_yuv8_to_rgbf(const tc_yuv_to_rgb_params p) { convert<uint8_t, float>(p); }
extern "C" __global__ void tc_convert_yuv16_to_rgb8(const tc_yuv_to_rgb_params p) { convert<uint16_t, uint8_t>(p); }
extern "C" __global__ void tc_convert_yuv16_to_rgbf(const tc_yuv_to_rgb_params p) { convert<uint16_t, float>(p); }

// RGB -> NV12 for NVENC: the 2x2 block at (2 bx, 2 by) of the picture, its luma samples and the mean
// of its pixels' chroma (colour.h, tc_rgb_to_yuv_coeffs_for).
extern "C" __global__ void tc_convert_rgb8_to_nv12(const tc_rgb_to_nv12_params p)
{
    const int x0 = 2 * (blockIdx.x * blockDim.x + threadIdx.x), y0 = 2 * (blockIdx.y * blockDim.y + threadIdx.y);
    if (x0 >= p.width || y0 >= p.height)
        return;
    const tc_rgb_to_yuv_coeffs c = tc_rgb_to_yuv_coeffs_for(p.matrix, p.full_range);
    float u = 0.0f, v = 0.0f;
    int count = 0;
    for (int y = y0; y < y0 + 2 && y < p.height; y++) {
        uint8_t *luma = (uint8_t *)p.planes[0] + (int64_t)y * p.pitches[0];
        for (int x = x0; x < x0 + 2 && x < p.width; x++) {
            const uint8_t *s = (const uint8_t *)p.src + (int64_t)y * p.src_row_stride + (int64_t)x * p.src_col_stride;
            const float r = s[0], g = s[p.src_chan_stride], b = s[2 * p.src_chan_stride];
            luma[x] = tc_round_sample(c.y_offset + tc_dot3(c.y, r, g, b));
            u += tc_dot3(c.u, r, g, b);
            v += tc_dot3(c.v, r, g, b);
            count++;
        }
    }
    uint8_t *uv = (uint8_t *)p.planes[1] + (int64_t)(y0 >> 1) * p.pitches[1] + x0;
    uv[0] = tc_round_sample(128.0f + u / (float)count);
    uv[1] = tc_round_sample(128.0f + v / (float)count);
}
