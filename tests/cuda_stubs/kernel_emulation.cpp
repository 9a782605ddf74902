// The real kernels of kernels/colour.cu and kernels/copy.cu, compiled as C++ for the CPU and run by
// the stub libcuda.so.1's cuLaunchKernel (stub_emulate_launch), so that tests check real pixels
// without a GPU. What nvcc provides is defined here: the qualifiers (empty), the built-in index
// variables (thread-local globals that the launch loop sets for every block and thread), and the
// vector type copy.cu moves 16 bytes with. "Device" pointers are the stub's host allocations.
#include <stdint.h>
#include <string.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict

namespace {
struct Dim3 {
    unsigned x, y, z;
};
struct alignas(16) uint4 {
    unsigned x, y, z, w;
};
thread_local Dim3 gridDim, blockDim, blockIdx, threadIdx;
}  // namespace

#include "../../kernels/colour.cu"
#include "../../kernels/copy.cu"
#include "../../kernels/resize.cu"

namespace {

// Run `kernel` once for every thread of every block, in order, as a sequential launch would.
template <typename Params>
int run(void (*kernel)(const Params), const unsigned grid[3], const unsigned block[3], void **params)
{
    const Params p = *static_cast<const Params *>(params[0]);
    gridDim = {grid[0], grid[1], grid[2]};
    blockDim = {block[0], block[1], block[2]};
    for (unsigned bz = 0; bz < grid[2]; bz++)
        for (unsigned by = 0; by < grid[1]; by++)
            for (unsigned bx = 0; bx < grid[0]; bx++) {
                blockIdx = {bx, by, bz};
                for (unsigned tz = 0; tz < block[2]; tz++)
                    for (unsigned ty = 0; ty < block[1]; ty++)
                        for (unsigned tx = 0; tx < block[0]; tx++) {
                            threadIdx = {tx, ty, tz};
                            kernel(p);
                        }
            }
    return 0;
}

}  // namespace

// Called by the stub's cuLaunchKernel with the kernel's name: 0 (CUDA_SUCCESS) after running it,
// 500 (CUDA_ERROR_NOT_FOUND) for a name this file does not know.
extern "C" int stub_emulate_launch(const char *name, const unsigned grid[3], const unsigned block[3], void **params)
{
    if (strcmp(name, "tc_convert_yuv8_to_rgb8") == 0)
        return run(tc_convert_yuv8_to_rgb8, grid, block, params);
    if (strcmp(name, "tc_convert_yuv8_to_rgbf") == 0)
        return run(tc_convert_yuv8_to_rgbf, grid, block, params);
    if (strcmp(name, "tc_convert_yuv16_to_rgb8") == 0)
        return run(tc_convert_yuv16_to_rgb8, grid, block, params);
    if (strcmp(name, "tc_convert_yuv16_to_rgbf") == 0)
        return run(tc_convert_yuv16_to_rgbf, grid, block, params);
    if (strcmp(name, "tc_convert_rgb8_to_nv12") == 0)
        return run(tc_convert_rgb8_to_nv12, grid, block, params);
    if (strcmp(name, "tc_copy_strided") == 0)
        return run(tc_copy_strided, grid, block, params);
    if (strcmp(name, "tc_resize_frame") == 0)
        return run(tc_resize_frame, grid, block, params);
    if (strcmp(name, "tc_resize_image") == 0)
        return run(tc_resize_image, grid, block, params);
    return 500;
}
