"""Shared fixtures: the generated media corpus (tools/make_media.py) and ffmpeg CLI references."""
from __future__ import annotations

import pathlib
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from corpus import make_media  # noqa: E402


@pytest.fixture(scope="session")
def media() -> dict[str, pathlib.Path]:
    """{name: path} of every (non-benchmark) corpus file, generated once and cached."""
    return make_media.ensure_media()


@pytest.fixture(scope="session")
def h264(media) -> pathlib.Path:
    """H.264 with B-frames, 320x240, 30 fps, 3 s, GOP 30: the workhorse of the API tests."""
    return media["h264_bframes.mp4"]


@pytest.fixture
def decoder(h264):
    """A fresh VideoDecoder of the workhorse file, exact mode."""
    from torchcodec.decoders import VideoDecoder
    return VideoDecoder(h264)


@pytest.fixture(scope="module")
def h264_frames(media):
    """The workhorse file's frames as the ffmpeg CLI decodes them to RGB."""
    import reference
    return reference.ffmpeg_rgb_frames(media["h264_bframes.mp4"])


@pytest.fixture(autouse=True)
def numpy_bridge(request):
    """Tests compare with numpy unless they are about the bridge (tests/test_bridge.py)."""
    import torchcodec
    if request.module.__name__.endswith("test_bridge"):
        yield
        return
    with torchcodec.bridge("numpy"):
        yield
