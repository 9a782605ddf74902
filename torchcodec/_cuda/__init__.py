"""Everything CUDA: the driver loader, device buffers, kernels, the CUDA converter, NVDEC (its
input, capabilities, decoder cache and decoder) and the CUDA decoding backends.

This module is the one gate: :func:`available` and :func:`reason` say whether CUDA can be used here
and why not, without raising. Code that needs a CUDA module asks the gate first, then imports it
normally. Importing this package loads nothing: the first question opens libcuda.so.1 (once per
process); the compiled modules exist only in builds that had ffnvcodec's loader header (and nvcc,
for the kernels), which ``_build_config`` records.
"""
from __future__ import annotations

from typing import Optional

from torchcodec._cuda import _build_config

NO_CUDA_BUILD = ("this build of torchcodec has no CUDA support (it was built with -Dcuda=disabled or "
                 "without ffnvcodec's headers, libffmpeg-nvenc-dev / ffnvcodec-headers)")
NO_KERNELS = "this build of torchcodec has no CUDA kernels (it was built without nvcc)"


def reason() -> Optional[str]:
    """``None`` when CUDA can be used here, else a sentence saying why not. Never raises.

    The reasons: the build has no CUDA support (built without ffnvcodec's headers or with
    ``-Dcuda=disabled``), or no CUDA kernels (built without nvcc); no libcuda.so.1 (no NVIDIA
    driver), a libcuda.so.1 lacking a needed function (named), or a driver that finds no device.
    """
    if not _build_config.CUDA_DRIVER:
        return NO_CUDA_BUILD
    if not _build_config.CUDA_KERNELS:
        return NO_KERNELS
    from torchcodec._cuda import _driver
    try:
        _driver.load_driver()
    except Exception as error:   # CudaUnavailableError, or anything unforeseen: never raise from here
        return str(error)
    return None


def available() -> bool:
    """Whether CUDA decoding can be used: a CUDA build whose driver loads and finds a device."""
    return reason() is None


def cuda_available() -> bool:
    """Whether the NVIDIA driver can be loaded and finds at least one CUDA device, in a build with
    CUDA support (``torchcodec.cuda_available``). Never raises; :func:`reason` says why not."""
    return available()


def parse_cuda_index(name: str) -> Optional[int]:
    """The device index of "cuda" (0) or "cuda:N" (N); None for anything else."""
    if name == "cuda":
        return 0
    prefix, _, number = name.partition(":")
    if prefix == "cuda" and number.isdigit():
        return int(number)
    return None
