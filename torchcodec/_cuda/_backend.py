"""CUDA decoding for VideoDecoder: the backend choice, the engine's parts, and the CPU-fallback report.

A CUDA VideoDecoder is the CPU decoder's reader (torchcodec._core._video_reader.VideoReader:
seeking, frame matching, batching) over two other blocks: the VideoPacketDecoder (NVIDIA's NVDEC
through torchcodec._cuda._nvdec, or libavcodec with FFmpeg's CUDA hwaccel, or libavcodec on the
CPU when neither can decode the stream) and a ColorConverter over the CUDA converter
(torchcodec._cuda._converter: the colour kernels, writing device memory on the output library's
stream). The building blocks' CUDA decoders and converters (``make_decoder(device="cuda")``,
``ColorConverter(device="cuda")``) come from here too. The compiled CUDA modules
are imported when a CUDA decoder is built, after the gate (torchcodec._cuda.reason) said they exist.
"""
from __future__ import annotations

import contextlib
import contextvars
import numbers
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Optional

from torchcodec import _cuda
from torchcodec._core._color_converter import converter_over
from torchcodec._core._error import InvalidArgumentError, InvalidArgumentTypeError
from torchcodec._core._packet_decoder import cuda_hwaccel_unavailable_reason, make_video_decoder
from torchcodec._logging import _LOGGER

BACKENDS = ("nvdec", "ffmpeg")
_backend: contextvars.ContextVar[str] = contextvars.ContextVar("torchcodec_cuda_backend", default="nvdec")


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


def choose_decoder(context: Any, demuxer: Any, stream_index: int, num_threads: int) -> tuple[Any, CpuFallbackStatus]:
    """The VideoPacketDecoder that decodes ``stream_index`` for cuda:``context.index`` and its
    fallback status: NVDEC's (the "nvdec" backend) or libavcodec with FFmpeg's CUDA hwaccel (the
    "ffmpeg" backend), or libavcodec on the CPU where NVDEC cannot decode the stream."""
    if current_backend() == "ffmpeg":
        reason = cuda_hwaccel_unavailable_reason()
        if reason is not None:
            raise RuntimeError(f"the 'ffmpeg' CUDA backend is unavailable: {reason}; use the default "
                               f"'nvdec' backend")
        decoder = make_video_decoder(demuxer, stream_index, num_threads, context.index, context.handle)
        return decoder, CpuFallbackStatus(status_known=False, backend="FFmpeg CUDA")
    from torchcodec._cuda import _driver, _nvdec, _nvdec_caps
    try:
        decoder, reason = _nvdec.NvdecDecoder(demuxer, stream_index, context), None
    except (_nvdec_caps.NvdecUnsupportedError, _driver.CudaUnavailableError) as error:
        decoder, reason = None, str(error)       # CudaUnavailableError: no libnvcuvid.so.1
    if decoder is None:
        _LOGGER.info("Video stream not supported by NVDEC; falling back to CPU decoding: %s", reason)
        decoder = make_video_decoder(demuxer, stream_index, num_threads)
    return decoder, CpuFallbackStatus(reason=reason, backend="NVDEC")


class CudaParts:
    """The packet decoder and colour converter of one CUDA VideoDecoder, and its fallback status."""

    def __init__(self, device_index: int, demuxer: Any, stream_index: int, num_threads: int) -> None:
        from torchcodec._cuda import _converter, _driver     # built in every CUDA build (see the gate)
        self.context = _driver.load_driver().context(device_index)
        self.frame_converter = _converter.CudaConverter(self.context)
        self.converter = converter_over(self.frame_converter, f"cuda:{device_index}")
        self.decoder, self.status = choose_decoder(self.context, demuxer, stream_index, num_threads)

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
    """None for the CPU, the index for "cuda" / "cuda:N" (``torch.device`` objects too); ValueError
    (also a RuntimeError, as in TorchCodec) for anything else. "cuda" is device 0. ``None`` is
    torch's default device (``torch.set_default_device``) when torch is in use, as in TorchCodec,
    and the CPU otherwise (torch is never imported for this)."""
    if device is None:
        torch = sys.modules.get("torch")
        get_default = getattr(torch, "get_default_device", None)
        device = get_default() if get_default is not None else "cpu"
    name = str(device)
    if name == "cpu" or (name.startswith("cpu:") and name[4:].isdigit()):
        return None
    index = _cuda.parse_cuda_index(name)
    if index is None:
        raise InvalidArgumentError(f"Invalid device {device!r}: use None, 'cpu', 'cuda' or 'cuda:N'")
    return index


def check_threads(num_ffmpeg_threads: Any) -> int:
    """``num_ffmpeg_threads`` as an int >= 0 (TypeError/ValueError, also RuntimeErrors, otherwise)."""
    if isinstance(num_ffmpeg_threads, bool) or not isinstance(num_ffmpeg_threads, numbers.Integral):
        raise InvalidArgumentTypeError(f"num_ffmpeg_threads must be an int >= 0, got {num_ffmpeg_threads!r}")
    if not 0 <= num_ffmpeg_threads < 2**31:
        raise InvalidArgumentError(f"num_ffmpeg_threads must be an int >= 0, got {num_ffmpeg_threads!r}")
    return int(num_ffmpeg_threads)


def check_cuda_usable(device: Any, has_transforms: bool) -> None:
    """Raise RuntimeError saying why when CUDA decoding cannot be used for ``device``."""
    if has_transforms:
        raise RuntimeError(f"device={str(device)!r}: Transforms are only supported for CPU devices. Decode-time "
                           f"transforms run on the CPU only in this version; decode on CUDA and transform the "
                           f"frames, or use device='cpu'")
    reason = _cuda.reason()
    if reason is not None:
        raise RuntimeError(f"device={str(device)!r}: CUDA decoding is not available: {reason}; use device='cpu'")


def open_cuda_packet_decoder(demuxer: Any, stream_index: int, device_index: int, num_threads: int) -> Any:
    """The packet decoder of a stream's ``make_decoder(device="cuda:N")``: the one a CUDA VideoDecoder
    would choose (NVDEC, FFmpeg's CUDA hwaccel, or the CPU fallback), whose RawFrames own a copy of
    their picture in device memory (torchcodec._cuda._device_frame: no NVDEC surface or FFmpeg pool
    frame stays pinned by a frame the caller keeps; CPU-fallback frames are uploaded)."""
    check_cuda_usable(f"cuda:{device_index}", False)
    from torchcodec._cuda import _device_frame, _driver
    context = _driver.load_driver().context(device_index)
    decoder, _ = choose_decoder(context, demuxer, stream_index, num_threads)
    decoder._upload_to(_device_frame.FrameUploader(context), f"cuda:{device_index}")
    return decoder


def cuda_frame_converter(device_index: int) -> Any:
    """The CUDA converter (kernels) of ``ColorConverter(device="cuda:N")``."""
    check_cuda_usable(f"cuda:{device_index}", False)
    from torchcodec._cuda import _converter, _driver
    return _converter.CudaConverter(_driver.load_driver().context(device_index))


def convert_raw_frame(converter: Any, raw_frame: Any, rotation: int, width: int, height: int, dtype: str) -> Any:
    """``ColorConverter.convert`` on CUDA: the device RawFrame turned ``rotation`` degrees clockwise,
    as a new (height, width, 3) array of the bridge's library on the converter's device, written on
    that library's current stream (the frame's copy is waited for there, on the device)."""
    from torchcodec import _outputs
    from torchcodec._cuda import _converter
    device_index = _cuda.parse_cuda_index(converter.device)
    output = _outputs.allocate((height, width, 3), dtype, device_index=device_index)
    converter.impl.set_stream(output.stream)
    _converter.convert_raw_frame(converter.impl, raw_frame, rotation, output.address, output.strides[0], width,
                                 height, dtype == "float32")
    return output.finish()
