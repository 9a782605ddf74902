"""The one mechanism for errors raised inside C callbacks (torchcodec._core._error's ErrorStash): a
Python file object's read under FFmpeg's AVIO, NVDEC's parser callbacks, the NVDEC codec calls. The
callback stashes the failure and returns an error code to C; the caller raises it once the C call
returned: the exception itself, with its traceback (the callback's frames included), errno and file
name; or, for a stashed driver error, the CudaError the code names.

CPU decodes run here; CUDA decodes in subprocesses against the stub drivers (tests/cuda_stubs).
"""
from __future__ import annotations

import errno
import io
import os
import pathlib
import sys
import traceback

import pytest

from torchcodec.decoders import Demuxer, VideoDecoder

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "cuda_stubs"))
from stub_build import build_decoding_stubs, build_helper, run_python  # noqa: E402


class FailingFile(io.RawIOBase):
    """A seekable file object over ``data`` whose read raises an OSError with an errno and a file
    name once ``fail`` is set (as a network or disk file does)."""

    def __init__(self, data: bytes) -> None:
        self.file = io.BytesIO(data)
        self.fail = False

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if self.fail:
            raise OSError(errno.EIO, "the disk went away", "/mnt/videos/clip.mp4")
        return self.file.read(n)

    def seek(self, offset: int, whence: int = 0) -> int:
        return self.file.seek(offset, whence)


def assert_kept(error: OSError) -> None:
    assert (error.errno, error.strerror, error.filename) == (errno.EIO, "the disk went away", "/mnt/videos/clip.mp4")
    frames = [frame.name for frame in traceback.extract_tb(error.__traceback__)]
    assert "read" in frames, frames


def test_a_file_objects_error_during_a_cpu_decode_is_raised_with_its_traceback_errno_and_file_name(media):
    source = FailingFile(media["h264_bframes.mp4"].read_bytes())
    decoder = VideoDecoder(source)
    decoder.get_frame_at(0)
    source.fail = True
    with pytest.raises(OSError) as info:
        decoder.get_frames_at([60, 89])
    assert_kept(info.value)


def test_a_file_objects_error_while_demuxing_blocks_is_raised_the_same_way(media):
    source = FailingFile(media["h264_bframes.mp4"].read_bytes())
    demuxer = Demuxer(source)
    decoder = demuxer.streams[0].make_decoder()
    decoder.decode(next(demuxer))
    source.fail = True
    with pytest.raises(OSError) as info:
        for packet in demuxer:
            decoder.decode(packet)
    assert_kept(info.value)


# ---- CUDA, against the stub drivers ------------------------------------------------------------

@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    return build_helper("nvdec_probe", build_decoding_stubs(tmp_path_factory.mktemp("cuda_errors")))


PRELUDE = """
import ctypes, errno, io, json, sys, traceback
sys.path.insert(0, ".")
import torchcodec
from torchcodec.decoders import Demuxer, VideoDecoder
torchcodec.set_bridge("numpy")
cuda = ctypes.CDLL("libcuda.so.1")

class FailingFile(io.RawIOBase):
    def __init__(self, data):
        self.file = io.BytesIO(data)
        self.fail = False
    def readable(self):
        return True
    def seekable(self):
        return True
    def read(self, n=-1):
        if self.fail:
            raise OSError(errno.EIO, "the disk went away", "/mnt/videos/clip.mp4")
        return self.file.read(n)
    def seek(self, offset, whence=0):
        return self.file.seek(offset, whence)

def describe(error):
    return {"type": type(error).__name__, "message": str(error), "errno": getattr(error, "errno", None),
            "filename": getattr(error, "filename", None),
            "frames": [frame.name for frame in traceback.extract_tb(error.__traceback__)]}

def balanced():
    return (ctypes.c_int.in_dll(cuda, "stub_pushes").value == ctypes.c_int.in_dll(cuda, "stub_pops").value
            and ctypes.c_int.in_dll(cuda, "stub_stack_depth").value == 0)
"""


def run(stubs, code: str, **env: str) -> dict:
    return run_python(PRELUDE + code, stubs, **env)


@pytest.mark.parametrize("backend_env", [{}, {"STUB_NVDEC_UNSUPPORTED": "h264"}], ids=["nvdec", "cpu-fallback"])
def test_a_file_objects_error_during_a_cuda_decode_is_raised_with_its_traceback(stubs, media, backend_env):
    out = run(stubs, f"""
source = FailingFile(open({os.fspath(media["h264_bframes.mp4"])!r}, "rb").read())
decoder = VideoDecoder(source, device="cuda")
decoder.get_frame_at(0)
source.fail = True
out = {{"fallback": bool(decoder.cpu_fallback)}}
try:
    decoder.get_frames_at([60, 89])
except OSError as error:
    out["error"] = describe(error)
source.fail = False
source.seek(0)
demuxer = Demuxer(source)
blocks = demuxer.streams[0].make_decoder(device="cuda")
blocks.decode(next(demuxer))
source.fail = True
try:
    for packet in demuxer:
        blocks.decode(packet)
except OSError as error:
    out["blocks"] = describe(error)
del decoder, blocks
out["balanced"] = balanced()
print(json.dumps(out))
""", **backend_env)
    assert out["fallback"] == bool(backend_env)
    for error in (out["error"], out["blocks"]):
        assert (error["type"], error["errno"], error["filename"]) == ("OSError", errno.EIO, "/mnt/videos/clip.mp4")
        assert "the disk went away" in error["message"] and "read" in error["frames"]
    assert out["balanced"]


def test_an_exception_in_the_sequence_callback_is_raised_after_the_parse_call_with_its_traceback(stubs, media):
    """The parser's format (4:2:2 here) is refused inside the sequence callback, inside
    cuvidParseVideoData: the exception goes through the decoder's stash to the loop's caller, its
    traceback reaching back into the callback."""
    out = run(stubs, f"""
import nvdec_probe
from torchcodec._cuda import _driver, _nvdec, _nvdec_caps
demuxer = Demuxer({os.fspath(media["h264_bframes.mp4"])!r})
decoder = _nvdec.NvdecDecoder(demuxer, 0, _driver.load_driver().context(0))
out = {{}}
try:
    nvdec_probe.decode_frames(decoder, demuxer, 1)
except _nvdec_caps.NvdecUnsupportedError as error:
    out["error"] = describe(error)
del decoder
out["balanced"] = balanced()
print(json.dumps(out))
""", STUB_NVDEC_CHROMA="2")
    error = out["error"]
    assert error["message"] == "torchcodec's CUDA colour conversion does not handle h264 4:2:2 8-bit (only 4:2:0 and 4:4:4)"
    names = [name.rsplit(".", 1)[-1] for name in error["frames"]]     # Cython's frames: qualified names
    assert "on_sequence" in names and "decode_frames" in names, error["frames"]
    assert out["balanced"]


def test_a_driver_error_inside_a_codec_call_is_the_cuda_error_it_names(stubs, media):
    """A CUresult stashed without the GIL (the map's cuEventRecord failing) becomes the CudaError
    with the driver's name for it, raised by the loop; the context stack stays balanced."""
    out = run(stubs, f"""
from torchcodec._cuda import _driver
demuxer = Demuxer({os.fspath(media["h264_bframes.mp4"])!r})
decoder = demuxer.streams[0].make_decoder(device="cuda")
out = {{}}
try:
    for packet in demuxer:
        decoder.decode(packet)
except _driver.CudaError as error:
    out["error"] = describe(error)
    out["name"] = error.name
del decoder
out["balanced"] = balanced()
print(json.dumps(out))
""", STUB_FAIL="cuEventRecord")
    assert out["error"]["message"].startswith("cuEventRecord failed: CUDA_ERROR_INVALID_VALUE")
    assert out["name"] == "CUDA_ERROR_INVALID_VALUE"
    assert out["balanced"]
