"""Shared fixtures: the generated media corpus (tools/make_media.py) and ffmpeg CLI references."""
from __future__ import annotations

import importlib.util
import pathlib
import sys

import pytest

REPO = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))


def _load_make_media():
    spec = importlib.util.spec_from_file_location("make_media", REPO / "tools" / "make_media.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["make_media"] = module
    spec.loader.exec_module(module)
    return module


make_media = _load_make_media()


@pytest.fixture(scope="session")
def media() -> dict[str, pathlib.Path]:
    """{name: path} of every (non-benchmark) corpus file, generated once and cached."""
    return make_media.ensure_media()


@pytest.fixture(scope="session")
def h264(media) -> pathlib.Path:
    """H.264 with B-frames, 320x240, 30 fps, 3 s, GOP 30: the workhorse of the API tests."""
    return media["h264_bframes.mp4"]
