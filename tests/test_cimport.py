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


# ---- the CUDA declarations, cimported without ffnvcodec's headers --------------------------------

# Inside a mount namespace: bind an empty folder over every ffnvcodec/ folder the C compiler finds
# with the helper's flags (the system's, or one that pkg-config or CPATH point at), until it finds
# none, then build tests/cimport_example/cuda_memory.pyx as tests/cuda_stubs' build_helper does.
HIDE_AND_BUILD = r'''
set -euo pipefail
empty=$1 stubs=$2 out=$3; shift 3
while path=$(printf '#include <ffnvcodec/dynlink_loader.h>\n' | "$CC" "$@" -M -x c - 2>/dev/null |
             tr ' \\' '\n\n' | grep 'ffnvcodec/dynlink_loader\.h$'); do
  mount --bind "$empty" "$(dirname "$path")"
  echo "hidden: $(dirname "$path")"
done
printf '#include <ffnvcodec/dynlink_loader.h>\n' | "$CC" "$@" -fsyntax-only -x c - 2>/dev/null &&
  { echo "ffnvcodec's headers are still found"; exit 1; }
"$PYTHON" -P -c '
import pathlib, sys
sys.path.insert(0, sys.argv[1])
from stub_build import build_helper
build_helper("cuda_memory", pathlib.Path(sys.argv[2]), pathlib.Path(sys.argv[3]), packages=())
' "$stubs" "$out" "$EXAMPLE"
echo built
'''


def mount_namespace() -> list[str]:
    """The command that runs a program in a new mount namespace where binding folders is allowed
    (as root: unshare -m; else a user namespace mapped to root: unshare -rm); skips without one."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare (util-linux) to hide ffnvcodec's headers in a mount namespace")
    for command in (["unshare", "-m"], ["unshare", "-rm"]):
        probe = subprocess.run([*command, "sh", "-c", "mount --bind / /mnt 2>/dev/null || mount --bind /tmp /tmp"],
                               capture_output=True, text=True)
        if probe.returncode == 0:
            return command
    pytest.skip(f"mount namespaces are not permitted here (unshare: {probe.stderr.strip()[:200]})")


def test_cuda_declarations_cimport_and_run_without_ffnvcodecs_headers(tmp_path):
    """ffnvcodec is a build dependency only (ARCHITECTURE decision 7): an extension cimporting the
    CUDA declarations (cuda.pxd, CudaDriver / CudaContext, DeviceBuffer) builds where no ffnvcodec
    header can be found, and its copy of the classes' layout reads the package's own objects right:
    contexts pushed and popped from C, a buffer's pointer, size and stream, events recorded."""
    from torchcodec._cuda import _build_config
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "cuda_stubs"))
    from stub_build import CC, STUBS, build_stub, run_python
    if not _build_config.CUDA_DRIVER:
        pytest.skip("this build has no CUDA driver loader (-Dcuda=disabled, or no ffnvcodec headers)")
    if CC is None or shutil.which("pkg-config") is None:
        pytest.skip("no C compiler or pkg-config to build the extension and the stub driver")
    namespace = mount_namespace()
    (tmp_path / "empty").mkdir()
    flags = ["-I", torchcodec.get_include(), "-I", sysconfig.get_paths()["include"]]
    env = dict(os.environ, CC=CC, PYTHON=sys.executable, EXAMPLE=str(EXAMPLE))
    built = subprocess.run([*namespace, "bash", "-c", HIDE_AND_BUILD, "hide_and_build", str(tmp_path / "empty"),
                            str(STUBS), str(tmp_path / "ext"), *flags], env=env, capture_output=True, text=True)
    assert built.returncode == 0 and built.stdout.endswith("built\n"), built.stdout + built.stderr
    if pathlib.Path("/usr/include/ffnvcodec/dynlink_loader.h").exists():
        assert "hidden: /usr/include/ffnvcodec" in built.stdout

    libdir = build_stub(tmp_path / "stub", "libcuda.so.1", "libcuda_stub.c", "cuda_load_functions")
    out = run_python(f"""
import ctypes, json, sys
sys.path.insert(0, {str(tmp_path / "ext")!r})
import cuda_memory
from torchcodec._cuda import _device_buffer, _driver
stub = ctypes.CDLL("libcuda.so.1")
stub.stub_call_log.restype = ctypes.c_char_p
def counter(name):
    return ctypes.c_int.in_dll(stub, name).value
context = _driver.load_driver().context(0)
pushes, pops = counter("stub_pushes"), counter("stub_pops")
handle, device = cuda_memory.enter_and_exit(0, 3)
result = {{"handle": [handle, context.handle], "device": device, "pushes": counter("stub_pushes") - pushes,
           "pops": counter("stub_pops") - pops}}
buffer = _device_buffer.DeviceBuffer.empty(context, (2, 3, 5), "uint16", 1)
result["memory"] = cuda_memory.memory_of(buffer)
result["data"] = buffer.__cuda_array_interface__["data"][0]
stub.stub_clear_log()
cuda_memory.record_and_wait(buffer, 1)
result["calls"] = stub.stub_call_log().decode().splitlines()
print(json.dumps(result))
""", libdir)
    assert out["handle"][0] == out["handle"][1] != 0 and out["device"] == 0
    assert out["pushes"] == out["pops"] == 3
    assert out["memory"] == [out["data"], 2 * 3 * 5 * 2, 1] and out["data"] != 0
    assert [call.split("(")[0] for call in out["calls"] if call.startswith("cuEvent")] == [
        "cuEventRecord", "cuEventSynchronize"]
    assert "stream=0x1)" in next(call for call in out["calls"] if call.startswith("cuEventRecord"))
