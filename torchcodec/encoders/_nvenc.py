"""CUDA video streams (NVENC): not built yet; device="cuda" is refused with a clear error."""
from __future__ import annotations

from typing import Any

from torchcodec._core._error import InvalidArgumentError


def check_cuda_video(spec: dict[str, Any]) -> None:
    raise InvalidArgumentError(
        f"device={spec['device']!r}: encoding on CUDA (NVENC) is not available in this version of torchcodec; "
        f"encode CPU frames (frames.cpu()) instead")


def cuda_video_engine(muxer: Any, spec: dict[str, Any]) -> Any:
    check_cuda_video(spec)
