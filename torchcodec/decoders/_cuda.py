"""CUDA decoding for VideoDecoder: the backend choice, the engine's parts, and the CPU-fallback report.

A CUDA VideoDecoder is the CPU decoder's engine (torchcodec._core._video.VideoStream: seeking, frame
matching, batching) with two parts swapped: the FrameDecoder (NVIDIA's NVDEC through
torchcodec._core._nvdec, or libavcodec with FFmpeg's CUDA hwaccel, or libavcodec on the CPU when
neither can decode the stream) and the FrameConverter (torchcodec._core._cuda_convert: the
colour kernels, writing device memory on the output library's stream). Nothing here imports a CUDA
module before a CUDA decoder is asked for.
"""
from __future__ import annotations

import contextlib
import contextvars
import importlib
import importlib.util
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Optional

from torchcodec import _device
from torchcodec._core._error import InvalidArgumentError, InvalidArgumentTypeError
from torchcodec._logging import _LOGGER

BACKENDS = ("nvdec", "ffmpeg")
_backend: contextvars.ContextVar[str] = contextvars.ContextVar("torchcodec_cuda_backend", default="nvdec")
_DEFAULT_CACHE_CAPACITY = 20
_cache_capacity = _DEFAULT_CACHE_CAPACITY    # used until the NVDEC module is loaded, then handed to it


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
    token = _backend.set(name)
    try:
        yield
    finally:
        _backend.reset(token)


def current_backend() -> str:
    """The CUDA backend that a VideoDecoder created now would use."""
    return _backend.get()


def set_nvdec_cache_capacity(capacity: int) -> None:
    """Keep at most ``capacity`` idle NVDEC decoders per GPU for reuse (default 20; 0 disables the
    cache). A decoder is reused by a later VideoDecoder of the same codec, size and format, which
    skips the decoder's creation (milliseconds). Excess decoders are destroyed, least recently used
    first."""
    global _cache_capacity
    if isinstance(capacity, bool) or not isinstance(capacity, int):
        raise InvalidArgumentTypeError(f"the NVDEC cache capacity must be an int, got {capacity!r}")
    if capacity < 0:
        raise InvalidArgumentError(f"NVDEC cache capacity must be non-negative, got {capacity}")
    _cache_capacity = capacity
    module = _nvdec_module()
    if module is not None:
        module.set_nvdec_cache_capacity(capacity)


def get_nvdec_cache_capacity() -> int:
    """The number of idle NVDEC decoders kept per GPU (see set_nvdec_cache_capacity)."""
    module = _nvdec_module()
    return module.get_nvdec_cache_capacity() if module is not None else _cache_capacity


def _nvdec_module() -> Any:
    """torchcodec._core._nvdec once something else loaded it (None before: loading it is the
    first CUDA decoder's job, so that setting a capacity never opens the driver)."""
    import sys
    return sys.modules.get("torchcodec._core._nvdec")


@dataclass
class CpuFallbackStatus:
    """Whether a CUDA VideoDecoder decodes on the CPU instead of the GPU, and why.

    ``bool(status)`` is True when it falls back; ``str(status)`` says so with the reason;
    ``reason`` holds the reason alone (None without a fallback). ``status_known`` is False only for
    the "ffmpeg" backend before the first frame (FFmpeg decides then). A CPU decoder's status is
    "no fallback" (it decodes where it was asked to). Frames decoded on the CPU are uploaded and
    converted on the GPU by the same kernels, so outputs are CUDA arrays either way.
    """

    status_known: bool = True
    reason: Optional[str] = None
    backend: str = ""

    def __bool__(self) -> bool:
        return self.status_known and self.reason is not None

    def __str__(self) -> str:
        prefix = f"[{self.backend}] " if self.backend else ""
        if not self.status_known:
            return f"{prefix}Fallback status: Unknown (known after the first frame)"
        if self.reason is None:
            return f"{prefix}Fallback status: No fallback required"
        return f"{prefix}Fallback status: Falling back to the CPU decoder: {self.reason}"


class CudaParts:
    """The decoder and converter of one CUDA VideoDecoder, and its fallback status."""

    def __init__(self, device_index: int, demuxer: Any, stream_index: int, num_threads: int) -> None:
        driver_module = importlib.import_module("torchcodec._core._cuda_driver")
        convert_module = importlib.import_module("torchcodec._core._cuda_convert")
        decoder_module = importlib.import_module("torchcodec._core._decoder")
        self.context = driver_module.load_driver().context(device_index)
        self.converter = convert_module.CudaConverter(self.context)
        if current_backend() == "ffmpeg":
            reason = decoder_module.cuda_hwaccel_unavailable_reason()
            if reason is not None:
                raise RuntimeError(f"the 'ffmpeg' CUDA backend is unavailable: {reason}; use the default "
                                   f"'nvdec' backend")
            self.decoder = decoder_module.StreamDecoder(demuxer, stream_index, num_threads, device_index,
                                                        self.context.handle)
            self.status = CpuFallbackStatus(status_known=False, backend="FFmpeg CUDA")
            return
        self.decoder, reason = self._nvdec_decoder(demuxer, stream_index)
        if self.decoder is None:
            _LOGGER.info("Video stream not supported by NVDEC; falling back to CPU decoding: %s", reason)
            self.decoder = decoder_module.StreamDecoder(demuxer, stream_index, num_threads)
        self.status = CpuFallbackStatus(reason=reason, backend="NVDEC")

    def _nvdec_decoder(self, demuxer: Any, stream_index: int) -> tuple[Any, Optional[str]]:
        """(an NvdecDecoder, None), or (None, why NVDEC cannot decode the stream here)."""
        try:
            nvdec = importlib.import_module("torchcodec._core._nvdec")
        except ImportError as error:       # a build without the NVDEC module: never on a CUDA build
            return None, f"this build of torchcodec has no NVDEC decoder ({error})"
        if nvdec.get_nvdec_cache_capacity() != _cache_capacity:
            nvdec.set_nvdec_cache_capacity(_cache_capacity)   # set before the module was loaded
        try:
            return nvdec.NvdecDecoder(demuxer, stream_index, self.context), None
        except (nvdec.NvdecUnsupportedError, nvdec.CudaUnavailableError) as error:
            return None, str(error)       # CudaUnavailableError: no libnvcuvid.so.1

    def fallback_status(self) -> CpuFallbackStatus:
        """The status, settled for the ffmpeg backend once its first frame told whether CUDA decoded it."""
        if not self.status.status_known:            # the ffmpeg backend, before its first frame
            used = self.decoder.hwaccel_used
            if used is not None:
                self.status.status_known = True
                self.status.reason = None if used else (
                    "FFmpeg's CUDA hwaccel could not decode this stream (codec, profile, bit depth or size "
                    "unsupported by NVDEC on this GPU), so FFmpeg decoded it on the CPU")
        return self.status


def parse_device(device: Any) -> Optional[int]:
    """None for the CPU (None, "cpu", torch.device("cpu")), the index for "cuda" / "cuda:N"; ValueError
    (also a RuntimeError, as in TorchCodec) for anything else. "cuda" is device 0."""
    name = "cpu" if device is None else str(device)
    if name == "cpu":
        return None
    index = _device.parse_cuda_index(name)
    if index is None:
        raise InvalidArgumentError(f"Invalid device {device!r}: use None, 'cpu', 'cuda' or 'cuda:N'")
    return index


def check_cuda_usable(device: Any, has_transforms: bool) -> None:
    """Raise RuntimeError saying why when CUDA decoding cannot be used for ``device``."""
    if has_transforms:
        raise RuntimeError(f"device={str(device)!r}: Transforms are only supported for CPU devices. Decode-time "
                           f"transforms run on the CPU only in this version; decode on CUDA and transform the "
                           f"frames, or use device='cpu'")
    reason = _device.cuda_unavailable_reason()
    if reason is None and importlib.util.find_spec("torchcodec._core._cuda_convert") is None:
        reason = "this build of torchcodec has no CUDA kernels (it was built without nvcc)"
    if reason is not None:
        raise RuntimeError(f"device={str(device)!r}: CUDA decoding is not available: {reason}; use device='cpu'")
