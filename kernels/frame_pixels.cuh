// Reading the pixels of a decoded frame as the CPU path converts them (swscale's routes:
// include/torchcodec/swscale_rgb.h), for the kernels of colour.cu (pairs of pixels) and resize.cu
// (any pixel). The frame is described by a tc_yuv_to_rgb_params (include/torchcodec/kernels.h).
#ifndef TORCHCODEC_FRAME_PIXELS_CUH
#define TORCHCODEC_FRAME_PIXELS_CUH

#include <stdint.h>

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

    static constexpr bool may_be_8bit = sizeof(T) == 1;
};

// A plane whose sample size is known at run time only (8-bit when the frame's sample_bits is 8,
// else 16-bit words): one kernel for both, where their arithmetic is a small part of the work.
struct AnyPlane {
    const char *origin;
    int32_t x_step, y_step;
    int shift;
    bool wide;

    __device__ __forceinline__ AnyPlane(const tc_yuv_to_rgb_params &p, int k, int z)
        : origin((const char *)p.planes[k] + (int64_t)z * p.src_batch_stride), x_step((int32_t)p.x_steps[k]),
          y_step((int32_t)p.y_steps[k]), shift(p.sample_shift), wide(p.sample_bits > 8)
    {
    }

    __device__ __forceinline__ int32_t at(int x, int y) const
    {
        const char *sample = origin + x * x_step + y * y_step;
        return wide ? (int32_t)(*(const uint16_t *)sample >> shift) : (int32_t)*(const uint8_t *)sample;
    }

    static constexpr bool may_be_8bit = true;
};

// The general routes' chroma (swscale's horizontal then vertical filters) and luma intermediates,
// from planes of type P (Plane<T>, AnyPlane).
template <typename P>
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

    __device__ __forceinline__ int32_t luma(const P &plane, int x, int y) const
    {
        return tc_sws_intermediate(plane.at(x, y) << 14, shift, top);
    }

    // The intermediate of chroma row r at column cx: the sample's, or the horizontal filter's.
    __device__ __forceinline__ int32_t chroma(const P &plane, int cx, int r) const
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
    __device__ __forceinline__ int32_t sum(const P &plane, int cx, int y) const
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

// The frame z of a tc_yuv_to_rgb_params, pixel by pixel: RGB24 values for the uint8 routes, RGB48
// values for the float32 ones. P is the planes' type (Plane<uint8_t>, Plane<uint16_t>, AnyPlane). A
// pixel is its chroma (`chroma`: the chroma samples of its 2x2 block on the unscaled routes, the
// filters' sums on the general ones; shared by a pixel pair unless `per_pixel`) and then its RGB
// (`rgb`).
template <typename P>
struct FrameReader {
    const tc_yuv_to_rgb_params &p;
    const P luma, cb, cr;
    const General<P> general;
    const bool unscaled;        // TC_ROUTE_X86_RGB24, TC_ROUTE_TABLE_RGB48 (8-bit samples only)
    const bool per_pixel;       // each pixel has its own chroma (else one per pair 2k, 2k + 1)

    __device__ __forceinline__ FrameReader(const tc_yuv_to_rgb_params &params, int z)
        : p(params), luma(params, 0, z), cb(params, 1, z), cr(params, 2, z), general(params),
          unscaled(P::may_be_8bit && params.sample_bits == 8
                   && (params.route == TC_ROUTE_X86_RGB24 || params.route == TC_ROUTE_TABLE_RGB48)),
          per_pixel(!unscaled && tc_sws_full_chroma(params.route, params.chroma == TC_CHROMA_420, params.width))
    {
    }

    __device__ __forceinline__ void chroma(int x, int y, int32_t *u, int32_t *v) const
    {
        if (unscaled) {
            *u = cb.at(x >> 1, y >> 1);
            *v = cr.at(x >> 1, y >> 1);
        } else {
            const int cx = per_pixel ? x : x >> 1;
            *u = general.sum(cb, cx, y);
            *v = general.sum(cr, cx, y);
        }
    }

    __device__ __forceinline__ void rgb(int x, int y, int32_t u, int32_t v, int32_t out[3]) const
    {
        if (unscaled) {
            const int32_t s = luma.at(x, y);
            if (p.route == TC_ROUTE_X86_RGB24) {
                uint8_t r, g, b;
                tc_yuv8_to_rgb8(&p.coeffs.x86, s, u, v, &r, &g, &b);
                out[0] = r;
                out[1] = g;
                out[2] = b;
            } else {                                    // the table's 8-bit values written twice
                tc_sws_table_rgb(&p.coeffs, s, u, v, out);
                for (int c = 0; c < 3; c++)
                    out[c] *= 257;
            }
            return;
        }
        const int32_t l = general.luma(luma, x, y);
        if (p.route == TC_ROUTE_PACKED_RGB24)
            tc_sws_packed_rgb24(&p.coeffs, l, u, v, out);
        else if (p.route == TC_ROUTE_FULL_RGB24)
            tc_sws_full_rgb24(&p.coeffs, l, u, v, out);
        else
            tc_sws_rgb48(&p.coeffs, l, u, v, out);
    }

    __device__ __forceinline__ void pixel(int x, int y, int32_t out[3]) const
    {
        int32_t u, v;
        chroma(x, y, &u, &v);
        rgb(x, y, u, v, out);
    }
};

// Write RGB values at px (channels chan_stride elements apart): uint8_t and uint16_t as they are,
// float as RGB48 / 65535, as the CPU path divides it.
template <typename Out>
__device__ __forceinline__ void store(Out *px, int64_t chan_stride, const int32_t rgb[3])
{
    for (int k = 0; k < 3; k++) {
        if constexpr (sizeof(Out) == 4)
            px[k * chan_stride] = (float)rgb[k] / 65535.0f;
        else
            px[k * chan_stride] = (Out)rgb[k];
    }
}

}  // namespace

#endif  // TORCHCODEC_FRAME_PIXELS_CUH
