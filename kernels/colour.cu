// YUV -> RGB conversion kernels, giving the CPU path's bytes (swscale's routes: include/torchcodec/
// swscale_rgb.h), and RGB -> NV12 for encoding (colour.h). Parameters and launch shape:
// include/torchcodec/kernels.h and docs/cuda_kernels.md.
#include <stdint.h>

#include <torchcodec/colour.h>
#include <torchcodec/kernels.h>

namespace {

// One plane of frame z as converted: sample (x, y) at origin + x * x_step + y * y_step, the stored
// word shifted right by `shift` (16-bit kernels). Offsets within a plane are 32-bit: a plane spans
// less than 2 GiB.
template <typename T>
struct Plane {
    const char *origin;
    int32_t x_step, y_step;
    int shift;

    __device__ __forceinline__ Plane(const tc_yuv_to_rgb_params &p, int k, int z)
        : origin((const char *)p.planes[k] + (int64_t)z * p.src_batch_stride), x_step((int32_t)p.x_steps[k]),
          y_step((int32_t)p.y_steps[k]), shift(sizeof(T) == 1 ? 0 : p.sample_shift)
    {
    }

    __device__ __forceinline__ int32_t at(int x, int y) const
    {
        return (int32_t)(*(const T *)(origin + x * x_step + y * y_step) >> shift);
    }
};

// The general routes' chroma (swscale's horizontal then vertical filters) and luma intermediates.
template <typename T>
struct General {
    const tc_yuv_to_rgb_params &p;
    int shift;
    int32_t top;
    const int32_t *v_first, *h_first;
    const int16_t *v_coeff, *h_coeff;

    __device__ __forceinline__ General(const tc_yuv_to_rgb_params &params)
        : p(params), shift(tc_sws_shift(params.sample_bits, params.route)), top(tc_sws_top(params.route))
    {
        const tc_sws_filter_layout l = tc_sws_filter_layout_for(p.width, p.height, p.v_taps, p.h_taps);
        const char *table = (const char *)p.filters;
        v_first = (const int32_t *)(table + l.v_rows);
        v_coeff = (const int16_t *)(table + l.v_coeffs);
        h_first = (const int32_t *)(table + l.h_columns);
        h_coeff = (const int16_t *)(table + l.h_coeffs);
    }

    __device__ __forceinline__ int32_t luma(const Plane<T> &plane, int x, int y) const
    {
        return tc_sws_intermediate(plane.at(x, y) << 14, shift, top);
    }

    // The intermediate of chroma row r at column cx: the sample's, or the horizontal filter's.
    __device__ __forceinline__ int32_t chroma(const Plane<T> &plane, int cx, int r) const
    {
        if (!p.h_taps)
            return tc_sws_intermediate(plane.at(cx, r) << 14, shift, top);
        const int first = h_first[cx];
        const int16_t *c = h_coeff + (int64_t)cx * p.h_taps;
        uint32_t acc = 0;
        for (int k = 0; k < p.h_taps; k++)
            acc += (uint32_t)plane.at(first + k, r) * (uint32_t)(int32_t)c[k];
        return tc_sws_intermediate((int32_t)acc, shift, top);
    }

    // The vertical filter's sum for output row y at column cx (wrapping in 32 bits, as swscale's).
    __device__ __forceinline__ int32_t sum(const Plane<T> &plane, int cx, int y) const
    {
        if (p.chroma == TC_CHROMA_444)
            return (int32_t)((uint32_t)chroma(plane, cx, y) * 4096u);
        const int first = v_first[y];
        const int16_t *c = v_coeff + (int64_t)y * p.v_taps;
        uint32_t acc = 0;
        for (int j = 0; j < p.v_taps; j++)
            acc += (uint32_t)chroma(plane, cx, first + j) * (uint32_t)(int32_t)c[j];
        return (int32_t)acc;
    }
};

template <typename Out>
__device__ __forceinline__ void store(Out *px, int64_t chan_stride, const int32_t rgb[3])
{
    for (int k = 0; k < 3; k++) {
        if constexpr (sizeof(Out) == 1)
            px[k * chan_stride] = (Out)rgb[k];
        else                        // RGB48 / 65535, as the CPU path divides it
            px[k * chan_stride] = (float)rgb[k] / 65535.0f;
    }
}

// The pair of pixels (2 tx, y), (2 tx + 1, y) of frame blockIdx.z, or the last one alone. In is the
// sample type (uint8_t, uint16_t), Out the output's (uint8_t: RGB24 routes, float: RGB48 routes).
template <typename In, typename Out>
__device__ __forceinline__ void convert(const tc_yuv_to_rgb_params &p)
{
    const int tx = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    const int x0 = 2 * tx, z = blockIdx.z;
    if (x0 >= p.width || y >= p.height)
        return;
    const int count = x0 + 1 < p.width ? 2 : 1;
    const Plane<In> luma(p, 0, z), cb(p, 1, z), cr(p, 2, z);
    Out *out = (Out *)p.dst + z * p.dst_batch_stride + y * p.dst_row_stride + x0 * p.dst_col_stride;
    int32_t rgb[3];
    if constexpr (sizeof(In) == 1) {
        if (p.route == TC_ROUTE_X86_RGB24 || p.route == TC_ROUTE_TABLE_RGB48) {
            // yuv420p of even height: the chroma sample of the pixels' 2x2 block.
            const int32_t u = cb.at(tx, y >> 1), v = cr.at(tx, y >> 1);
            for (int k = 0; k < count; k++) {
                const int32_t s = luma.at(x0 + k, y);
                if constexpr (sizeof(Out) == 1) {      // TC_ROUTE_X86_RGB24
                    uint8_t r, g, b;
                    tc_yuv8_to_rgb8(&p.coeffs.x86, s, u, v, &r, &g, &b);
                    rgb[0] = r;
                    rgb[1] = g;
                    rgb[2] = b;
                } else {                                // TC_ROUTE_TABLE_RGB48
                    tc_sws_table_rgb(&p.coeffs, s, u, v, rgb);
                    for (int c = 0; c < 3; c++)
                        rgb[c] *= 257;
                }
                store(out + k * p.dst_col_stride, p.dst_chan_stride, rgb);
            }
            return;
        }
    }
    // The general scaler: RGB24 routes for uint8 output, TC_ROUTE_RGB48 for float32.
    const General<In> g(p);
    const bool per_pixel = tc_sws_full_chroma(p.route, p.chroma == TC_CHROMA_420, p.width);
    int32_t u_sum = 0, v_sum = 0;
    for (int k = 0; k < count; k++) {
        if (k == 0 || per_pixel) {
            const int cx = per_pixel ? x0 + k : tx;
            u_sum = g.sum(cb, cx, y);
            v_sum = g.sum(cr, cx, y);
        }
        const int32_t l = g.luma(luma, x0 + k, y);
        if constexpr (sizeof(Out) == 1) {
            if (p.route == TC_ROUTE_PACKED_RGB24)
                tc_sws_packed_rgb24(&p.coeffs, l, u_sum, v_sum, rgb);
            else
                tc_sws_full_rgb24(&p.coeffs, l, u_sum, v_sum, rgb);
        } else {
            tc_sws_rgb48(&p.coeffs, l, u_sum, v_sum, rgb);
        }
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
