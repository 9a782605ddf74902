"""Whether CUDA can be used here, and why not: checked through the driver loader, never raising.

Importing this module loads nothing; the first question opens libcuda.so.1 (once per process).
"""
from __future__ import annotations

import importlib


def cuda_unavailable_reason() -> str | None:
    """``None`` when a CUDA device can be used, else a sentence saying why not.

    The reasons: the build has no CUDA support (built without ffnvcodec's headers or with
    ``-Dcuda=disabled``), no libcuda.so.1 (no NVIDIA driver), a libcuda.so.1 lacking a needed
    function (named), or a driver that finds no device.
    """
    try:
        driver_module = importlib.import_module("torchcodec._core._cuda_driver")
    except ImportError:
        return ("this build of torchcodec has no CUDA support (it was built with -Dcuda=disabled or "
                "without ffnvcodec's headers, libffmpeg-nvenc-dev / ffnvcodec-headers)")
    try:
        driver_module.load_driver()
    except Exception as error:   # CudaUnavailableError, or anything unforeseen: never raise from here
        return str(error)
    return None


def cuda_available() -> bool:
    """Whether the NVIDIA driver can be loaded and finds at least one CUDA device. Never raises.

    It does not say that NVDEC decoding is implemented: in this version ``device="cuda"`` still
    raises, with :func:`cuda_unavailable_reason`'s text when CUDA itself is the problem.
    """
    return cuda_unavailable_reason() is None


def parse_cuda_index(name: str) -> int | None:
    """The device index of "cuda" (0) or "cuda:N" (N); None for anything else."""
    if name == "cuda":
        return 0
    prefix, _, number = name.partition(":")
    if prefix == "cuda" and number.isdigit():
        return int(number)
    return None
