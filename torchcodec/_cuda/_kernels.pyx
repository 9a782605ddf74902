"""The CUDA kernels of kernels/*.cu, compiled by nvcc into fatbins that are embedded here.

This module exists only in builds made with nvcc (``-Dcuda=auto`` finding it, or ``enabled``). It
links nothing from CUDA: the NVDEC path hands :func:`fatbin` images to ``cuModuleLoadData``
through the driver it loads at run time. Launch parameters: include/torchcodec/kernels.h.
"""

cdef extern from *:
    """
    #include <stddef.h>
    extern const unsigned char tc_fatbin_colour[];
    extern const size_t tc_fatbin_colour_size;
    extern const unsigned char tc_fatbin_copy[];
    extern const size_t tc_fatbin_copy_size;
    extern const unsigned char tc_fatbin_resize[];
    extern const size_t tc_fatbin_resize_size;
    extern const char tc_kernels_archs[];
    extern const char tc_kernels_ptx_arch[];
    extern const char tc_kernels_nvcc_version[];
    """
    # Arrays of unknown size, seen from Cython as the pointers they decay to.
    const unsigned char *tc_fatbin_colour
    const size_t tc_fatbin_colour_size
    const unsigned char *tc_fatbin_copy
    const size_t tc_fatbin_copy_size
    const unsigned char *tc_fatbin_resize
    const size_t tc_fatbin_resize_size
    const char *tc_kernels_archs
    const char *tc_kernels_ptx_arch
    const char *tc_kernels_nvcc_version

#: Kernel (extern "C" function) names of each fatbin.
KERNELS = {
    "colour": ("tc_convert_yuv8_to_rgb8", "tc_convert_yuv8_to_rgbf",
               "tc_convert_yuv16_to_rgb8", "tc_convert_yuv16_to_rgbf", "tc_convert_rgb8_to_nv12"),
    "copy": ("tc_copy_strided",),
    "resize": ("tc_resize_frame", "tc_resize_image"),
}
#: Real architectures with SASS in every fatbin (75 for sm_75, ...).
ARCHS = tuple(int(a) for a in tc_kernels_archs.decode().split())
#: The virtual architecture whose PTX is embedded, for GPUs newer than the newest of ARCHS.
PTX_ARCH = int(tc_kernels_ptx_arch.decode())
#: Version of the nvcc that built them.
NVCC_VERSION = tc_kernels_nvcc_version.decode()


def fatbin(name: str) -> bytes:
    """The fatbin image ``name`` (a key of :data:`KERNELS`) as bytes, for ``cuModuleLoadData``."""
    if name == "colour":
        return (<const char *>tc_fatbin_colour)[:tc_fatbin_colour_size]
    if name == "copy":
        return (<const char *>tc_fatbin_copy)[:tc_fatbin_copy_size]
    if name == "resize":
        return (<const char *>tc_fatbin_resize)[:tc_fatbin_resize_size]
    raise KeyError(f"no fatbin {name!r}; the fatbins are {sorted(KERNELS)}")
