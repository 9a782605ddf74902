// YUV -> RGB conversion kernels (and RGB -> NV12 for encoding): the arithmetic of include/torchcodec/colour.h, one thread per output
// pixel. Parameters and launch shape: include/torchcodec/kernels.h and docs/cuda_kernels.md.
#include <stdint.h>

#include <torchcodec/colour.h>
#include <torchcodec/kernels.h>

namespace {

struct Samples {
    int y, u, v;
};

// The samples of output pixel (x, y) of frame z: its own luma and, for 4:2:0, the chroma sample of
// its 2x2 block (as libswscale's 4:2:0 -> RGB converter takes it), without interpolation.
template <typename T>
__device__ __forceinline__ Samples load(const tc_yuv_to_rgb_params &p, int x, int y, int z)
{
    const int sx = p.crop_left + x, sy = p.crop_top + y;
    const int64_t frame = (int64_t)z * p.src_batch_stride;
    const char *luma = (const char *)p.planes[0] + frame + (int64_t)sy * p.pitches[0];
    Samples s;
    s.y = ((const T *)luma)[sx];
    if (p.chroma == TC_CHROMA_420_INTERLEAVED) {
        const T *uv = (const T *)((const char *)p.planes[1] + frame + (int64_t)(sy >> 1) * p.pitches[1]);
        s.u = uv[2 * (sx >> 1)];
        s.v = uv[2 * (sx >> 1) + 1];
    } else {
        const int cx = p.chroma == TC_CHROMA_420_PLANAR ? sx >> 1 : sx;
        const int cy = p.chroma == TC_CHROMA_420_PLANAR ? sy >> 1 : sy;
        s.u = ((const T *)((const char *)p.planes[1] + frame + (int64_t)cy * p.pitches[1]))[cx];
        s.v = ((const T *)((const char *)p.planes[2] + frame + (int64_t)cy * p.pitches[2]))[cx];
    }
    return s;
}

template <typename Out>
__device__ __forceinline__ Out *output(const tc_yuv_to_rgb_params &p, int x, int y, int z)
{
    return (Out *)p.dst + z * p.dst_batch_stride + y * p.dst_row_stride + x * p.dst_col_stride;
}

__device__ __forceinline__ bool inside(const tc_yuv_to_rgb_params &p, int *x, int *y)
{
    *x = blockIdx.x * blockDim.x + threadIdx.x;
    *y = blockIdx.y * blockDim.y + threadIdx.y;
    return *x < p.width && *y < p.height;
}

__device__ __forceinline__ uint16_t aligned16(int sample, int shift)
{
    return (uint16_t)(sample << shift);
}

// Pixel (x, y) of frame blockIdx.z: In is the sample type (uint8_t, uint16_t), Out the output's.
template <typename In, typename Out>
__device__ __forceinline__ void convert(const tc_yuv_to_rgb_params &p)
{
    int x, y;
    if (!inside(p, &x, &y))
        return;
    const tc_colour_coeffs c = tc_colour_coeffs_for(p.matrix, p.full_range);
    const Samples s = load<In>(p, x, y, blockIdx.z);
    Out *r = output<Out>(p, x, y, blockIdx.z);
    Out *g = r + p.dst_chan_stride, *b = r + 2 * p.dst_chan_stride;
    if constexpr (sizeof(In) == 1 && sizeof(Out) == 1) {
        tc_yuv8_to_rgb8(&c, s.y, s.u, s.v, r, g, b);
    } else if constexpr (sizeof(In) == 1) {
        tc_yuv8_to_rgbf(&c, s.y, s.u, s.v, r, g, b);
    } else {
        const int shift = p.sample_shift;
        const float scale = tc_sample16_scale(p.full_range, p.sample_bits);
        const uint16_t y16 = aligned16(s.y, shift), u16 = aligned16(s.u, shift), v16 = aligned16(s.v, shift);
        if constexpr (sizeof(Out) == 1)
            tc_yuv16_to_rgb8(&c, scale, y16, u16, v16, r, g, b);
        else
            tc_yuv16_to_rgbf(&c, scale, y16, u16, v16, r, g, b);
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
