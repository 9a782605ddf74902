"""VideoDecoder(device="cuda") on a real GPU: every test here is marked ``cuda`` and skips without one
(tools/gpu_check.sh runs them). The same engine paths run without a GPU against stub libraries in
tests/test_cuda_stub_decoding.py.

References are the package's CPU decoder (itself byte-equal to the ffmpeg CLI), within the bounds of
tools/gpu/gpu_tolerances.py, the table tools/gpu/check.py judges by too: GPU frames equal CPU frames
where both take the same arithmetic (8-bit 4:2:0, even height, bit-exact codecs: H.264, HEVC,
VP8, VP9, AV1, also 1080p with its coded height of 1088, cropped sizes and interlaced H.264), and
stay within docs/cuda_kernels.md's measured tolerances elsewhere (10-bit, 4:4:4, odd sizes:
swscale interpolates chroma where the kernels take the nearest sample; MPEG-2/4: their IDCTs are
not bit-exact across decoders). Where every NVDEC decodes the stream, a CPU fallback fails the
test, and a missing libnvcuvid.so.1 fails every test: on a GPU machine NVDEC must be there.
"""
from __future__ import annotations

import importlib.util
import pathlib
import sys
import threading

import numpy as np
import pytest

import torchcodec
from torchcodec.decoders import VideoDecoder, set_cuda_backend

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tools"))
from gpu import gpu_tolerances  # noqa: E402

pytestmark = pytest.mark.cuda

HAS_TORCH = importlib.util.find_spec("torch") is not None
HAS_CUPY = importlib.util.find_spec("cupy") is not None

EXACT = sorted(name for name, entry in gpu_tolerances.TOLERANCES.items() if entry.exact)
CLOSE = sorted(name for name, entry in gpu_tolerances.TOLERANCES.items() if not entry.exact)


@pytest.fixture(scope="module", autouse=True)
def gpu():
    if not torchcodec.cuda_available():
        from torchcodec._cuda import reason as cuda_unavailable_reason
        pytest.skip(f"no usable GPU: {cuda_unavailable_reason()}")
    from torchcodec._cuda._driver import CudaUnavailableError, load_nvcuvid
    try:
        load_nvcuvid()
    except CudaUnavailableError as error:
        pytest.fail(f"a GPU without NVDEC: {error}")


def check_fallback(name: str, decoder) -> None:
    """A CPU fallback only where the GPU's caps may refuse the stream, never for lack of libnvcuvid."""
    entry = gpu_tolerances.tolerance(name)
    reason = str(decoder.cpu_fallback) if decoder.cpu_fallback else ""
    assert "libnvcuvid" not in reason, reason
    if entry.nvdec == "required":
        assert not reason, f"{name}: every NVDEC decodes it, yet {reason}"
    elif entry.nvdec == "never":
        assert reason, f"{name}: torchcodec refuses NVDEC for it, yet NVDEC decoded it"


def host(frames) -> np.ndarray:
    """A CUDA array of any supported library, copied to a numpy array (after its stream's work)."""
    module = type(frames).__module__.split(".")[0]
    if module == "torch":
        return frames.cpu().numpy()
    if module == "cupy":
        return frames.get()
    import cupy
    return cupy.from_dlpack(frames).get()


def cpu_frames(path, **kwargs) -> np.ndarray:
    with torchcodec.bridge("numpy"):
        return VideoDecoder(path, **kwargs).get_all_frames().data


def gpu_frames(path, bridge: str = "auto", **kwargs):
    with torchcodec.bridge(bridge):
        decoder = VideoDecoder(path, device="cuda", **kwargs)
        return decoder, decoder.get_all_frames()


@pytest.mark.parametrize("name", EXACT)
def test_gpu_frames_equal_cpu_frames(media, name):
    decoder, batch = gpu_frames(media[name])
    got, expected = host(batch.data), cpu_frames(media[name])
    check_fallback(name, decoder)
    assert got.shape == expected.shape
    assert np.array_equal(got, expected), (
        f"max diff {np.abs(got.astype(int) - expected).max()}, fallback: {decoder.cpu_fallback}")
    np.testing.assert_array_equal(np.asarray(batch.pts_seconds), np.asarray(
        VideoDecoder(media[name]).get_all_frames().pts_seconds))


@pytest.mark.parametrize("name", CLOSE)
def test_gpu_frames_are_close_to_cpu_frames(media, name):
    entry = gpu_tolerances.tolerance(name)
    decoder, batch = gpu_frames(media[name])
    got, expected = host(batch.data).astype(np.int32), cpu_frames(media[name]).astype(np.int32)
    check_fallback(name, decoder)
    assert got.shape == expected.shape
    diff = np.abs(got - expected)
    assert diff.mean() <= entry.mean_abs and diff.max() <= entry.max_abs, (
        f"{name}: mean diff {diff.mean():.3f} (bound {entry.mean_abs}), max {diff.max()} (bound {entry.max_abs}): "
        f"{entry.reason}; fallback: {decoder.cpu_fallback}")


def test_float32_output_matches_the_cpu_within_its_precision(media):
    path = media["h264_bframes.mp4"]
    _, batch = gpu_frames(path, output_dtype="float32")
    with torchcodec.bridge("numpy"):
        expected = VideoDecoder(path, output_dtype="float32").get_all_frames().data
    assert np.abs(host(batch.data) - expected).max() <= 0.015


@pytest.mark.parametrize("order", ["NCHW", "NHWC"])
def test_every_method_gives_the_cpu_decoders_frames(media, order):
    path = media["h264_bframes.mp4"]
    with torchcodec.bridge("numpy"):
        cpu = VideoDecoder(path, dimension_order=order)
    gpu = VideoDecoder(path, device="cuda", dimension_order=order)
    assert len(gpu) == len(cpu) and gpu.metadata == cpu.metadata and gpu.device == "cuda:0"
    begin = cpu.metadata.begin_stream_seconds
    calls = [
        lambda d: d.get_frame_at(7).data,
        lambda d: d.get_frame_at(-1).data,
        lambda d: d[12],
        lambda d: d[3:40:5],
        lambda d: d.get_frames_at([50, 3, 50, 0, 89]).data,
        lambda d: d.get_frames_in_range(10, 30, 3).data,
        lambda d: d.get_frame_played_at(begin + 1.01).data,
        lambda d: d.get_frames_played_at([begin + 0.5, begin + 0.1, begin + 2.9]).data,
        lambda d: d.get_frames_played_in_range(begin + 0.3, begin + 1.3).data,
        lambda d: d.get_frames_played_in_range(begin + 0.3, begin + 1.3, fps=7).data,
        lambda d: d.get_all_frames(fps=5).data,
    ]
    for k, call in enumerate(calls):
        assert np.array_equal(host(call(gpu)), call(cpu)), f"call {k}"
    assert np.array_equal(host(next(iter(gpu))), next(iter(cpu)))


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_torch_output_is_a_cuda_tensor_written_on_the_current_stream(media):
    import torch
    path = media["h264_bframes.mp4"]
    expected = cpu_frames(path)[:32]
    stream = torch.cuda.Stream()
    with torchcodec.bridge("torch"), torch.cuda.stream(stream):
        torch.cuda._sleep(50_000_000)            # keep the stream busy: a missing dependency would show
        frames = VideoDecoder(path, device="cuda").get_frames_in_range(0, 32).data
        total = frames.to(torch.int64).sum()     # queued on the same stream, no synchronisation
    assert frames.is_cuda and frames.device.index == 0 and frames.dtype == torch.uint8
    assert total.item() == int(expected.astype(np.int64).sum())


@pytest.mark.skipif(not HAS_TORCH, reason="needs torch")
def test_out_accepts_a_cuda_tensor_of_either_layout(media):
    import torch
    path = media["h264_bframes.mp4"]
    expected = cpu_frames(path)[[4, 9]]
    with torchcodec.bridge("torch"):
        decoder = VideoDecoder(path, device="cuda")
        out = torch.empty((2, 3, decoder.metadata.height, decoder.metadata.width), dtype=torch.uint8, device="cuda")
        assert decoder.get_frames_at([4, 9], out=out).data is out
        assert np.array_equal(out.cpu().numpy(), expected)
        wrong = torch.empty((2, 3, 8, 8), dtype=torch.uint8, device="cuda")
        with pytest.raises(ValueError, match="shape"):
            decoder.get_frames_at([4, 9], out=wrong)


@pytest.mark.skipif(not HAS_CUPY, reason="needs cupy")
def test_cupy_output_is_written_on_cupys_current_stream(media):
    import cupy
    path = media["hevc_bframes.mp4"]
    expected = cpu_frames(path)
    with torchcodec.bridge("cupy"), cupy.cuda.Stream(non_blocking=True) as stream:
        frames = VideoDecoder(path, device="cuda").get_all_frames().data
        total = int(frames.astype(cupy.int64).sum())
    assert isinstance(frames, cupy.ndarray) and stream is not None
    assert total == int(expected.astype(np.int64).sum())


def test_decoders_in_parallel_threads_give_their_own_frames(media):
    names = ["h264_bframes.mp4", "hevc_bframes.mp4", "vp9.webm", "h264_25fps_2s.mp4"]
    expected = {name: cpu_frames(media[name]) for name in names}
    results, errors = {}, []

    def work(name):
        try:
            results[name] = host(VideoDecoder(media[name], device="cuda").get_all_frames().data)
        except Exception as error:      # reported below
            errors.append(f"{name}: {error!r}")

    threads = [threading.Thread(target=work, args=(name,)) for name in names * 2]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors
    for name in names:
        assert np.array_equal(results[name], expected[name]), name


def test_a_stream_nvdec_cannot_decode_falls_back_to_the_cpu_and_says_why(media):
    path = media["h264_yuv422.mp4"]
    decoder = VideoDecoder(path, device="cuda")
    assert decoder.cpu_fallback and "4:2:2" in str(decoder.cpu_fallback)
    assert np.array_equal(host(decoder.get_all_frames().data), cpu_frames(path))


def test_the_ffmpeg_backend_decodes_the_same_frames(media):
    path = media["h264_bframes.mp4"]
    try:
        with set_cuda_backend("ffmpeg"):
            decoder = VideoDecoder(path, device="cuda")
    except RuntimeError as error:
        assert "'ffmpeg' CUDA backend is unavailable" in str(error)
        pytest.skip(str(error))
    assert not decoder.cpu_fallback.status_known
    frames = host(decoder.get_all_frames().data)
    assert decoder.cpu_fallback.status_known
    assert np.array_equal(frames, cpu_frames(path)), str(decoder.cpu_fallback)
