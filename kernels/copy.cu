// Batched strided copy of 2-D blocks (see tc_copy_params in include/torchcodec/kernels.h).
#include <stdint.h>

#include <torchcodec/kernels.h>

extern "C" __global__ void tc_copy_strided(const tc_copy_params p)
{
    const int64_t row = blockIdx.y * (int64_t)blockDim.y + threadIdx.y;
    if (row >= p.rows || (int)blockIdx.z >= p.count)
        return;
    const char *src = (const char *)p.src + blockIdx.z * p.src_batch_stride + row * p.src_pitch;
    char *dst = (char *)p.dst + blockIdx.z * p.dst_batch_stride + row * p.dst_pitch;
    const int64_t first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    const int64_t step = (int64_t)gridDim.x * blockDim.x;
    // The same choice in every thread: 16-byte units when everything is 16-byte aligned.
    const uint64_t alignment = p.src | p.dst | (uint64_t)p.src_pitch | (uint64_t)p.dst_pitch |
                               (uint64_t)p.src_batch_stride | (uint64_t)p.dst_batch_stride |
                               (uint64_t)p.row_bytes;
    if ((alignment & 15) == 0) {
        const int64_t units = p.row_bytes / 16;
        for (int64_t i = first; i < units; i += step)
            ((uint4 *)dst)[i] = ((const uint4 *)src)[i];
    } else {
        for (int64_t i = first; i < p.row_bytes; i += step)
            dst[i] = src[i];
    }
}
