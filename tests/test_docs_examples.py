"""The ```python blocks of README.md and of every docs page run, in order, one namespace per page.

The pages are written against small files named as the pages name them (``video.mp4``,
``song.mp3``, ``photo.png``...): generated media (tools/make_media.py) linked into a temporary
working directory under those names, and images made from it with the ffmpeg CLI and the image
libraries' own tools. The blocks check what they claim with ``assert``, against references they
compute themselves (ffprobe, the ffmpeg CLI). A block that cannot run here (it needs a GPU, torch,
or a module the page builds) is marked on the line before it::

    <!-- fragment: needs a GPU -->

which renders as nothing on GitHub and in Sphinx; it is the only way to leave a block out, and few
blocks use it. The numpy bridge is in use (tests/conftest.py), as the pages say.
"""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md"] + sorted(p for p in (ROOT / "docs").rglob("*.md") if "_build" not in p.parts)

# The names the pages use, and the corpus files behind them (tools/make_media.py).
FILES = {
    "video.mp4": "h264_bframes.mp4",            # H.264 320x240, 30 fps, 90 frames, B-frames
    "clip.mp4": "hevc_bframes.mp4",             # HEVC 320x240, B-frames
    "rotated.mp4": "h264_rotate90.mp4",         # 320x240 coded, display matrix rotates by 90
    "movie.mp4": "h264_aac.mp4",                # H.264 (stream 0) + AAC stereo 44.1 kHz (stream 1), 2 s
    "movie.mkv": "h264_vfr.mkv",                # Matroska, variable frame rate
    "song.mp3": "mp3_stereo_44100.mp3",         # MP3 stereo 44.1 kHz, 2 s
    "speech.mp3": "mp3_music_22050_8s.mp3",     # MP3 22.05 kHz, 8 s
    "speech.wav": "wav_s16_stereo_44100.wav",   # 16-bit PCM stereo 44.1 kHz, 2 s
}
# Images, made from video.mp4: (name, command with {video} and {png} for the paths).
IMAGES = [
    ("photo.png", ["ffmpeg", "-v", "error", "-i", "{video}", "-frames:v", "1", "{out}"]),
    ("a.jpg", ["ffmpeg", "-v", "error", "-i", "{video}", "-frames:v", "1", "{out}"]),
    ("b.jpg", ["ffmpeg", "-v", "error", "-ss", "1", "-i", "{video}", "-frames:v", "1", "{out}"]),
    ("c.jpg", ["ffmpeg", "-v", "error", "-ss", "2", "-i", "{video}", "-frames:v", "1", "{out}"]),
    ("anim.gif", ["ffmpeg", "-v", "error", "-i", "{video}", "-frames:v", "5", "{out}"]),
    ("photo.heic", ["heif-enc", "-q", "90", "-o", "{out}", "{png}"]),
    ("hdr.avif", ["avifenc", "-d", "10", "{png}", "{out}"]),
]

_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
FRAGMENT = re.compile(r"<!-- fragment: [^>]+ -->\n\Z")


def python_blocks(page: pathlib.Path) -> list[tuple[int, str]]:
    """(line number, code) of each ```python block of a Markdown page that is not a fragment."""
    text = page.read_text()
    return [(text.count("\n", 0, m.start()) + 2, m.group(1)) for m in _BLOCK.finditer(text)
            if not FRAGMENT.search(text[:m.start()])]


def fragments(page: pathlib.Path) -> int:
    text = page.read_text()
    return sum(bool(FRAGMENT.search(text[:m.start()])) for m in _BLOCK.finditer(text))


def test_every_page_runs_its_examples_and_few_are_fragments():
    run = sum(len(python_blocks(p)) for p in PAGES)
    left_out = sum(fragments(p) for p in PAGES)
    assert run >= 40 and left_out <= run // 4, (run, left_out)
    # One way to leave a block out: a block Sphinx renders but the tests cannot see is not allowed.
    for page in PAGES:
        assert "```{code-block} python" not in page.read_text(), page


def test_a_fragment_marker_is_always_followed_by_a_block():
    for page in PAGES:
        text = page.read_text()
        for m in re.finditer(r"<!-- fragment: [^>]+ -->\n", text):
            assert text.startswith("```python\n", m.end()), f"{page}: a fragment marker not before a python block"


@pytest.fixture(scope="module")
def images(media, tmp_path_factory):
    """The images the pages name, in a folder; {name: tool} of those whose tool is not installed."""
    folder = tmp_path_factory.mktemp("doc_images")
    png, missing = folder / "photo.png", {}
    for name, command in IMAGES:
        if shutil.which(command[0]) is None:
            missing[name] = command[0]
            continue
        out = folder / name
        subprocess.run([c.format(video=media["h264_bframes.mp4"], png=png, out=out) for c in command],
                       check=True, capture_output=True)
    return folder, missing


RUNNABLE = [p for p in PAGES if python_blocks(p)]


@pytest.mark.parametrize("page", RUNNABLE, ids=[str(p.relative_to(ROOT)) for p in RUNNABLE])
def test_page_examples_run(page, media, images, tmp_path, monkeypatch):
    blocks = python_blocks(page)
    folder, missing = images
    needed = [f"{name} ({tool})" for name, tool in missing.items() if any(name in code for _, code in blocks)]
    if needed:
        pytest.skip(f"the tools that make {', '.join(needed)} are not installed (tools/setup.sh installs them)")
    # Copies, not links: a page may write a file of the same name (docs/encoders.md writes
    # movie.mkv), which through a link would overwrite the shared corpus file for every later test.
    for name, corpus_name in FILES.items():
        shutil.copyfile(media[corpus_name], tmp_path / name)
    for name, _ in IMAGES:
        if name not in missing:
            shutil.copyfile(folder / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    settings = process_settings()
    try:
        for line, code in blocks:
            # Compiled with the page's line numbers, so a failure points at the page.
            exec(compile("\n" * (line - 1) + code, str(page), "exec"), namespace)
    finally:
        restore(settings)


def process_settings() -> dict:
    """The process-wide settings a page may change, to restore after it (the bridge: conftest.py)."""
    import torchcodec
    return {"log_level": torchcodec.get_log_level()}


def restore(settings: dict) -> None:
    import torchcodec
    torchcodec.set_log_level(settings["log_level"])
    torchcodec.set_memory_limit(None)          # the default: the memory available at each request
