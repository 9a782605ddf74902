"""The bridge (output array library) and out=: native arrays from birth, written in place."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import threading

import numpy as np
import pytest

import reference
import torchcodec
from torchcodec.decoders import VideoDecoder

HAS_TORCH = importlib.util.find_spec("torch") is not None


@pytest.fixture(scope="module")
def expected(media):
    return reference.ffmpeg_rgb_frames(media["h264_bframes.mp4"])


def test_default_bridge_is_torch_when_installed_else_numpy():
    assert torchcodec.get_bridge() == ("torch" if HAS_TORCH else "numpy")


def test_import_never_imports_torch():
    code = "import sys, torchcodec.decoders; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-P", "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "False"


def test_unknown_bridge_is_a_value_error():
    with pytest.raises(ValueError):
        torchcodec.set_bridge("tensorflow")


@pytest.mark.skipif(importlib.util.find_spec("cupy") is not None, reason="needs cupy to be absent")
def test_bridge_whose_library_is_missing_names_the_package():
    with pytest.raises(ImportError, match="pip install cupy"):
        torchcodec.set_bridge("cupy")


def test_bridge_context_manager_restores_and_threads_are_independent():
    before = torchcodec.get_bridge()
    seen = []
    with torchcodec.bridge("numpy"):
        assert torchcodec.get_bridge() == "numpy"
        thread = threading.Thread(target=lambda: seen.append(torchcodec.get_bridge()))
        thread.start()
        thread.join()
    assert torchcodec.get_bridge() == before
    assert seen == [("torch" if HAS_TORCH else "numpy")]       # a new thread starts from the default


def test_numpy_bridge_gives_numpy_arrays(h264, expected):
    with torchcodec.bridge("numpy"):
        decoder = VideoDecoder(h264)
        batch = decoder.get_frames_at([3, 4])
        assert type(batch.data) is np.ndarray and type(batch.pts_seconds) is np.ndarray
        assert batch.pts_seconds.dtype == np.float64
        np.testing.assert_array_equal(batch.data.transpose(0, 2, 3, 1), expected[[3, 4]])
        assert type(decoder[0]) is np.ndarray


@pytest.mark.parametrize("dimension_order", ["NCHW", "NHWC"])
def test_out_numpy_is_filled_in_place(h264, expected, dimension_order):
    with torchcodec.bridge("numpy"):
        decoder = VideoDecoder(h264, dimension_order=dimension_order)
        shape = (3, 3, 240, 320) if dimension_order == "NCHW" else (3, 240, 320, 3)
        out = np.zeros(shape, np.uint8)                     # contiguous NCHW: the engine copies once
        address = out.ctypes.data
        batch = decoder.get_frames_at([5, 1, 5], out=out)
        assert batch.data is out and out.ctypes.data == address
        frames = out.transpose(0, 2, 3, 1) if dimension_order == "NCHW" else out
        np.testing.assert_array_equal(frames, expected[[5, 1, 5]])


def test_out_with_packed_layout_is_written_directly(h264, expected):
    with torchcodec.bridge("numpy"):
        decoder = VideoDecoder(h264)                        # NCHW view of NHWC memory: no copy
        memory = np.zeros((2, 240, 320, 3), np.uint8)
        out = memory.transpose(0, 3, 1, 2)
        decoder.get_frames_in_range(10, 12, out=out)
        np.testing.assert_array_equal(memory, expected[10:12])
        single = np.zeros((3, 240, 320), np.uint8)
        frame = decoder.get_frame_at(7, out=single)
        assert frame.data is single
        np.testing.assert_array_equal(single.transpose(1, 2, 0), expected[7])


@pytest.mark.parametrize("bad,error", [
    (lambda: np.zeros((2, 3, 240, 321), np.uint8), ValueError),
    (lambda: np.zeros((2, 3, 240, 320), np.float32), ValueError),
    (lambda: np.broadcast_to(np.zeros((1, 3, 240, 320), np.uint8), (2, 3, 240, 320)), ValueError),
    (lambda: "not an array", TypeError),
])
def test_bad_out_is_a_clear_error(h264, bad, error):
    with torchcodec.bridge("numpy"):
        with pytest.raises(error):
            VideoDecoder(h264).get_frames_at([0, 1], out=bad())


def test_out_float32(media):
    path = media["h264_10bit.mp4"]
    with torchcodec.bridge("numpy"):
        decoder = VideoDecoder(path, output_dtype="float32", dimension_order="NHWC")
        out = np.empty((1, 240, 320, 3), np.float32)
        decoder.get_frames_at([9], out=out)
        np.testing.assert_array_equal(out[0], decoder.get_frame_at(9).data)


# ---- torch ----------------------------------------------------------------------------------------

@pytest.fixture
def torch():
    return pytest.importorskip("torch")


def test_torch_bridge_gives_tensors_with_identical_values(torch, h264, expected):
    with torchcodec.bridge("torch"):
        decoder = VideoDecoder(h264)
        batch = decoder.get_frames_at([3, 4])
        assert type(batch.data) is torch.Tensor and batch.data.dtype == torch.uint8
        assert batch.pts_seconds.dtype == torch.float64
        np.testing.assert_array_equal(batch.data.permute(0, 2, 3, 1).numpy(), expected[[3, 4]])
        assert type(decoder[0]) is torch.Tensor


def test_out_torch_tensor_is_filled_in_place(torch, h264, expected):
    with torchcodec.bridge("torch"):
        decoder = VideoDecoder(h264, dimension_order="NHWC")
        out = torch.zeros((2, 240, 320, 3), dtype=torch.uint8)
        pointer = out.data_ptr()
        batch = decoder.get_frames_at([30, 60], out=out)
        assert batch.data is out and out.data_ptr() == pointer
        np.testing.assert_array_equal(out.numpy(), expected[[30, 60]])
        nchw = torch.zeros((1, 3, 240, 320), dtype=torch.uint8)   # contiguous NCHW: copied once
        VideoDecoder(h264).get_frames_at([2], out=nchw)
        np.testing.assert_array_equal(nchw.permute(0, 2, 3, 1).numpy(), expected[[2]])


def test_jax_bridge(h264, expected):
    jnp = pytest.importorskip("jax.numpy")
    with torchcodec.bridge("jax"):
        batch = VideoDecoder(h264, dimension_order="NHWC").get_frames_at([1])
        assert "jax" in type(batch.data).__module__
        np.testing.assert_array_equal(np.asarray(batch.data), expected[[1]])
        assert jnp.asarray(batch.pts_seconds).dtype.name in ("float64", "float32")


def test_torch_only_environment_needs_no_numpy(torch, h264):
    code = f"""
import sys
sys.modules["numpy"] = None          # any import of numpy now fails
import torchcodec, torch
from torchcodec.decoders import VideoDecoder
assert torchcodec.get_bridge() == "torch"
decoder = VideoDecoder({str(h264)!r})
batch = decoder.get_frames_at([0, 45])
out = torch.empty((3, 240, 320), dtype=torch.uint8)
decoder.get_frame_at(7, out=out)
assert type(batch.data) is torch.Tensor and batch.pts_seconds.tolist() == [0.0, 1.5]
assert int(out.sum()) > 0
print("ok")
"""
    result = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "ok", result.stderr


def test_out_in_shared_memory_tensor(torch, h264, expected):
    out = torch.empty((2, 240, 320, 3), dtype=torch.uint8).share_memory_()
    VideoDecoder(h264, dimension_order="NHWC").get_frames_at([8, 9], out=out)
    assert out.is_shared()
    np.testing.assert_array_equal(out.numpy(), expected[[8, 9]])


def test_import_never_imports_jax():
    code = "import sys, torchcodec.decoders; print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-P", "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "False"
