"""torchcodec: video and audio decoding for machine learning, with TorchCodec's API and PyTorch optional.

``import torchcodec`` imports neither torch nor numpy. Outputs are allocated by the bridge
(``set_bridge``/``get_bridge``/``bridge``); see docs/guide/outputs.md.
"""
from __future__ import annotations

import os

from torchcodec import _install
_install.check()   # first: mixed installations warn; a source tree or missing FFmpeg says what to do
from torchcodec._logging import get_log_level, set_log_level   # first: FFmpeg logs from the start
from torchcodec import decoders, encoders, samplers, transforms
from torchcodec._outputs import bridge, get_bridge, set_bridge
from torchcodec._core._info import ffmpeg_major_version as _ffmpeg_major_version
from torchcodec._core._info import ffmpeg_versions
from torchcodec._cuda import cuda_available
from torchcodec._frame import AudioSamples, Frame, FrameBatch
from torchcodec._index_cache import IndexCacheSettings, clear_index_cache, get_index_cache, set_index_cache
from torchcodec._memory import get_memory_limit, set_memory_limit
from torchcodec._outputs._pool import get_output_pool, set_output_pool

from torchcodec._version import version as __version__

ffmpeg_major_version: int = _ffmpeg_major_version()
"""The major version of the FFmpeg loaded at run time (5 for FFmpeg 5.1), as TorchCodec's."""


def ffmpeg_version() -> str:
    """The version string of the FFmpeg libraries loaded at run time (e.g. "5.1.6-0+deb12u1")."""
    return ffmpeg_versions()["ffmpeg"]



def get_include() -> str:
    """The directory of torchcodec's C headers (``torchcodec/ffcompat.h``), for building extensions."""
    installed = os.path.join(os.path.dirname(__file__), "include")
    if os.path.isdir(installed):
        return installed
    return os.path.join(os.path.dirname(os.path.dirname(__file__)), "include")   # editable install


__all__ = [
    "AudioSamples", "Frame", "FrameBatch", "IndexCacheSettings", "bridge", "clear_index_cache", "cuda_available",
    "decoders", "encoders", "ffmpeg_major_version", "ffmpeg_version", "ffmpeg_versions", "get_bridge",
    "get_include", "get_index_cache", "get_log_level", "get_memory_limit", "get_output_pool", "samplers",
    "set_bridge", "set_index_cache", "set_log_level", "set_memory_limit", "set_output_pool", "transforms",
]
