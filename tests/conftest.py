"""Shared fixtures: the generated media corpus (tools/make_media.py) and ffmpeg CLI references."""
from __future__ import annotations

import os
import pathlib
import shutil
import sys
import tempfile

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))

from corpus import make_media  # noqa: E402

# The index cache is on (as for users) but in a directory of this run's own, never ~/.cache: the first
# open of each file runs the probe and scan and later opens read them back, so the suite checks
# both paths against the same references. TORCHCODEC_INDEX_CACHE set outside (e.g. "0") wins.
_INDEX_CACHE_DIR = None
if "TORCHCODEC_INDEX_CACHE" not in os.environ:
    _INDEX_CACHE_DIR = tempfile.mkdtemp(prefix="torchcodec-test-index-")
    os.environ["TORCHCODEC_INDEX_CACHE"] = _INDEX_CACHE_DIR


def pytest_unconfigure(config):
    if _INDEX_CACHE_DIR is not None:
        shutil.rmtree(_INDEX_CACHE_DIR, ignore_errors=True)


@pytest.fixture(scope="session")
def media() -> dict[str, pathlib.Path]:
    """{name: path} of every (non-benchmark) corpus file, generated once and cached."""
    return make_media.ensure_media()


@pytest.fixture(scope="session")
def engine_probe(tmp_path_factory):
    """tests/engine_probe.pyx, built against the installed package: the engine's internals that
    tests check (the scaler's comparisons with swscale, IndexBuilder by hand, the early drain off)."""
    sys.path.insert(0, str(REPO / "tests" / "cuda_stubs"))
    from stub_build import CC, build_helper
    if CC is None or shutil.which("pkg-config") is None:
        pytest.skip("no C compiler or pkg-config to build tests/engine_probe.pyx")
    directory = build_helper("engine_probe", tmp_path_factory.mktemp("engine_probe"), REPO / "tests")
    sys.path.insert(0, str(directory))
    import engine_probe
    return engine_probe


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
