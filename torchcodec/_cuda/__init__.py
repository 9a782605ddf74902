"""Everything CUDA: the driver loader, device buffers, kernels, the CUDA converter, NVDEC (its
input, capabilities, decoder cache and decoder) and NVENC.

This module is the wing's one gate. Importing it registers the "cuda" device with the engine's
device registry (torchcodec._core._devices), whose parts (``_backend.CUDA``) are imported when a
CUDA decoder, converter or frame first asks for them, and loads nothing else: :func:`available`
and :func:`reason` say whether CUDA can be used here and why not, without raising (the first
question opens libcuda.so.1, once per process; the compiled modules exist only in builds that had
ffnvcodec's loader header, and nvcc for the kernels, which ``_build_config`` records). The wing's
settings live here too: the CUDA backend of new VideoDecoders and the NVDEC cache's capacity.
"""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any, Optional

from torchcodec._core._devices import register_device
from torchcodec._core._error import InvalidArgumentError, InvalidArgumentTypeError

NO_CUDA_BUILD = ("this build of torchcodec has no CUDA support (it was built with -Dcuda=disabled or "
                 "without ffnvcodec's headers, libffmpeg-nvenc-dev / ffnvcodec-headers)")
NO_KERNELS = "this build of torchcodec has no CUDA kernels (it was built without nvcc)"


def reason() -> Optional[str]:
    """``None`` when CUDA can be used here, else a sentence saying why not. Never raises.

    The reasons: the build has no CUDA support (built without ffnvcodec's headers or with
    ``-Dcuda=disabled``), or no CUDA kernels (built without nvcc); no libcuda.so.1 (no NVIDIA
    driver), a libcuda.so.1 lacking a needed function (named), or a driver that finds no device.
    """
    from torchcodec._cuda import _build_config
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


# ---- the CUDA backend of new VideoDecoders ---------------------------------------------------------

BACKENDS = ("nvdec", "ffmpeg")
_chosen_backend: contextvars.ContextVar[str] = contextvars.ContextVar("torchcodec_cuda_backend", default="nvdec")


@contextlib.contextmanager
def set_cuda_backend(backend: str) -> Iterator[None]:
    """``with set_cuda_backend("ffmpeg"):`` CUDA VideoDecoders created in the block use that backend.

    "nvdec" (the default): torchcodec drives NVDEC itself (decoder cache, exact frame control).
    "ffmpeg": FFmpeg's own CUDA hwaccel (``-hwaccel cuda``), when this FFmpeg build has it.
    ("beta" is accepted for "nvdec", as in TorchCodec.) Only creation needs to be inside the block;
    the choice is per thread and async task.
    """
    name = str(backend).lower()
    if name == "beta":
        name = "nvdec"
    if name not in BACKENDS:
        raise ValueError(f"Invalid CUDA backend ({backend}). Supported values are 'nvdec' and 'ffmpeg'.")
    token = _chosen_backend.set(name)
    try:
        yield
    finally:
        _chosen_backend.reset(token)


def current_backend() -> str:
    """The CUDA backend that a VideoDecoder created now would use."""
    return _chosen_backend.get()


# ---- the NVDEC decoder cache's capacity (the cache: _nvdec_cache) ----------------------------------

def set_nvdec_cache_capacity(capacity: int) -> None:
    """Keep at most ``capacity`` idle NVDEC decoders per GPU for reuse (default 20; 0 disables the
    cache). A decoder is reused by a later VideoDecoder of the same codec, size and format, which
    skips the decoder's creation (milliseconds). Decoders beyond it, least recently used first,
    are destroyed now. The cache and its capacity are process-wide (decoders belong to a device,
    not to a thread)."""
    if isinstance(capacity, bool) or not isinstance(capacity, int):
        raise InvalidArgumentTypeError(f"the NVDEC cache capacity must be an int, got {capacity!r}")
    if capacity < 0:
        raise InvalidArgumentError(f"NVDEC cache capacity must be non-negative, got {capacity}")
    from torchcodec._cuda import _nvdec_cache
    _nvdec_cache.cache.set_capacity(capacity)


def get_nvdec_cache_capacity() -> int:
    """The number of idle NVDEC decoders kept per GPU (see set_nvdec_cache_capacity)."""
    from torchcodec._cuda import _nvdec_cache
    return _nvdec_cache.cache.capacity


def _parts() -> Any:
    from torchcodec._cuda import _backend
    return _backend.CUDA


register_device("cuda", _parts)
