"""CUDA video streams: frames in device memory encoded by NVENC (torchcodec._cuda._nvenc), behind
the one CUDA gate (torchcodec._cuda.reason): without a usable driver and device, device="cuda" is
refused when the stream is added, with the reason."""
from __future__ import annotations

from typing import Any

from torchcodec import _cuda


def device_index(spec: dict[str, Any]) -> int:
    return int(spec["device"].partition(":")[2] or 0)


def check_cuda_video(spec: dict[str, Any]) -> None:
    """Refuse a CUDA video stream where CUDA cannot be used here, saying why."""
    reason = _cuda.reason()
    if reason is not None:
        raise RuntimeError(f"device={spec['device']!r}: encoding on CUDA (NVENC) is not available: no CUDA "
                           f"device/driver: {reason}; encode CPU frames (frames.cpu()) instead")


def cuda_video_engine(muxer: Any, spec: dict[str, Any]) -> Any:
    """The NVENC stream encoder of a CUDA video stream ``spec`` (Encoder.add_video's settings)."""
    check_cuda_video(spec)
    from torchcodec._cuda import _driver, _nvenc
    context = _driver.load_driver().context(device_index(spec))
    return _nvenc.NvencStreamEncoder(muxer, context, spec["width"], spec["height"], spec["frame_rate"],
                                     spec["codec"], spec["pixel_format"], spec["crf"], spec["preset"],
                                     spec["extra_options"])
