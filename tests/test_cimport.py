"""The .pxd files are a C-level API: an extension built against the installed package decodes with it.

tests/cimport_example/ is a small downstream project (meson + Cython) whose extension cimports the
public paths ``torchcodec.readers`` (a VideoReader decoding frames by timestamp) and
``torchcodec.blocks`` (Demuxer, VideoPacketDecoder and ColorConverter driven at C level), and
decodes frames without the GIL into memory it owns. It is built here against the torchcodec that
this Python imports (installed or editable), like numpy's ``numpy/_core/tests/test_cython.py``,
then run on the corpus and compared with the ffmpeg CLI.
"""
from __future__ import annotations

import importlib
import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import threading

import numpy as np
import pytest

import reference
import torchcodec

EXAMPLE = pathlib.Path(__file__).resolve().parent / "cimport_example"


def _run(cmd: list[str], env: dict[str, str]) -> str:
    proc = subprocess.run([str(c) for c in cmd], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        pytest.fail(f"building the cimport example failed: {' '.join(map(str, cmd))} "
                    f"(exit {proc.returncode})\n{proc.stdout[-6000:]}\n{proc.stderr[-6000:]}", pytrace=False)
    return proc.stdout


@pytest.fixture(scope="module")
def frame_reader(tmp_path_factory):
    """The example extension, built with meson against the torchcodec that this Python imports."""
    work = tmp_path_factory.mktemp("cimport_example")
    # meson's python module must find this interpreter, whatever Python meson itself runs on.
    native = work / "native.ini"
    native.write_text(f"[binaries]\npython = '{sys.executable}'\npython3 = '{sys.executable}'\n")
    # The build tools installed beside this Python (meson, ninja, cython) come first on PATH, also
    # when its environment is not activated (CI runs .venv/bin/python directly).
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([sysconfig.get_path("scripts"), os.path.dirname(sys.executable),
                                   env.get("PATH", "")])
    meson = shutil.which("meson", path=env["PATH"])
    assert meson is not None, "meson is needed to build tests/cimport_example (pip install meson ninja cython)"
    build = work / "build"
    log = _run([meson, "setup", "--native-file", native, EXAMPLE, build], env)
    _run([meson, "compile", "-C", build], env)

    # The build used the .pxd files and headers of the package under test, not another copy.
    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(torchcodec.__file__)))
    assert f"torchcodec .pxd files under {package_parent}, C headers in {torchcodec.get_include()}" in log

    sys.path.insert(0, str(build))
    try:
        module = importlib.import_module("frame_reader")
    finally:
        sys.path.remove(str(build))
    assert pathlib.Path(module.__file__).parent == build
    yield module
    sys.modules.pop("frame_reader", None)


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "h264_rotate90.mp4", "h264_yuv444_161x121.mp4"])
def test_cimported_decode_into_gives_the_ffmpeg_cli_frames(frame_reader, media, name):
    expected = reference.ffmpeg_rgb_frames(media[name])
    n = len(expected)
    # Out of order, repeated, key frames and B-frames, backwards across GOPs, the last frame.
    indices = [0, n // 2, n // 2 - 1, n - 1, 1, 1, n // 3, n // 3 - 1, 2 * n // 3]

    frames = frame_reader.read_frames(media[name], indices)

    assert frames.dtype == np.uint8
    assert frames.shape == (len(indices), *expected.shape[1:])
    np.testing.assert_array_equal(frames, expected[indices])


def test_cimported_decoder_writes_into_caller_memory_with_padded_rows(frame_reader, media):
    path = media["h264_bframes.mp4"]
    expected = reference.ffmpeg_rgb_frames(path)
    reader = frame_reader.FrameReader(str(path))
    assert len(reader) == len(expected)
    _, height, width, _ = expected.shape
    indices = [89, 0, 31]
    # Rows 5 pixels wider than the frame: decode_into must honour the row stride it is given.
    padded = np.full((len(indices), height, width + 5, 3), 0xAB, dtype=np.uint8)

    result = reader.read_into(indices, padded[:, :, :width])

    assert np.shares_memory(result, padded)
    np.testing.assert_array_equal(padded[:, :, :width], expected[indices])
    assert (padded[:, :, width:] == 0xAB).all()


def test_cimported_decoders_run_in_parallel_threads(frame_reader, media):
    path = media["h264_bframes.mp4"]
    expected = reference.ffmpeg_rgb_frames(path)
    orders = [list(range(len(expected))), list(range(len(expected)))[::-1]]
    results: list = [None, None]
    errors: list[BaseException] = []

    def work(k: int) -> None:   # one FrameReader (one VideoStream) per thread
        try:
            results[k] = frame_reader.FrameReader(str(path)).read(orders[k])
        except BaseException as e:   # noqa: BLE001 - reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert not errors, errors
    for k in range(2):
        np.testing.assert_array_equal(results[k], expected[orders[k]])


def test_cimport_example_checks_its_arguments_before_releasing_the_gil(frame_reader, media):
    reader = frame_reader.FrameReader(str(media["h264_bframes.mp4"]))
    with pytest.raises(IndexError, match="out of range"):
        reader.read([len(reader)])
    with pytest.raises(ValueError, match="must have shape"):
        reader.read_into([0], np.empty((1, reader.height + 1, reader.width, 3), dtype=np.uint8))


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "h264_rotate90.mp4", "hevc_bframes.mp4"])
def test_cimported_blocks_decode_only_the_key_frames_as_the_cli_does(frame_reader, media, name):
    """The blocks pipeline of the example (demux, decode key packets only, convert), at C level."""
    expected = reference.ffmpeg_rgb_frames(media[name])
    keys = [i for i, frame in enumerate(reference.ffprobe_frames(media[name], 0)) if frame["key_frame"]]
    assert 1 < len(keys) < len(expected)

    frames, pts = frame_reader.key_frames(media[name])

    assert frames.shape == (len(keys), *expected.shape[1:])
    np.testing.assert_array_equal(frames, expected[keys])
    assert list(pts) == sorted(pts) and pts[0] == 0.0
