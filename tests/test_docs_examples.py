"""The ```python blocks of the user guide (docs/guide/*.md) run, in order, one namespace per page.

Each page's examples are written against small generated files named as the page names them
(``video.mp4``, ``song.mp3``...), linked into a temporary working directory; they check their own
results with ``assert``. Blocks that need what the test machine lacks (a GPU, torch) are written
as ```{code-block} python, which renders the same and is not run. The numpy bridge is in use
(tests/conftest.py), as the pages say.
"""
from __future__ import annotations

import os
import pathlib
import re

import pytest

GUIDE = pathlib.Path(__file__).resolve().parent.parent / "docs" / "guide"
PAGES = sorted(GUIDE.glob("*.md"))

# The names the pages use, and the corpus files behind them (tools/make_media.py).
FILES = {
    "video.mp4": "h264_bframes.mp4",            # H.264 320x240, 30 fps, 90 frames, B-frames
    "rotated.mp4": "h264_rotate90.mp4",         # 320x240 coded, display matrix rotates by 90
    "movie.mp4": "h264_aac.mp4",                # H.264 (stream 0) + AAC stereo 44.1 kHz (stream 1), 2 s
    "song.mp3": "mp3_stereo_44100.mp3",         # MP3 stereo 44.1 kHz, 2 s
    "speech.wav": "wav_s16_stereo_44100.wav",   # 16-bit PCM stereo 44.1 kHz, 2 s
}

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def python_blocks(page: pathlib.Path) -> list[tuple[int, str]]:
    """(line number, code) of each ```python block of a Markdown page."""
    text = page.read_text()
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in _BLOCK.finditer(text)]


def test_the_guide_has_runnable_examples():
    assert {p.stem for p in PAGES} >= {"getting_started", "decoding_video", "decoding_audio", "samplers",
                                       "transforms", "outputs"}
    assert sum(len(python_blocks(p)) for p in PAGES) >= 20


RUNNABLE = [p for p in PAGES if python_blocks(p)]


@pytest.mark.parametrize("page", RUNNABLE, ids=[p.stem for p in RUNNABLE])
def test_guide_page_examples_run(page, media, tmp_path, monkeypatch):
    blocks = python_blocks(page)
    for name, corpus_name in FILES.items():
        os.symlink(media[corpus_name], tmp_path / name)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for line, code in blocks:
        # Compiled with the page's line numbers, so a failure points at the page.
        exec(compile("\n" * (line - 1) + code, str(page), "exec"), namespace)
