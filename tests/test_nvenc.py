"""NVENC encoding (torchcodec._cuda._nvenc, device="cuda" of the encoders), tested without a GPU.

What runs here: the RGB -> NV12 kernel (kernels/colour.cu, compiled as C++ by
tests/cuda_stubs/kernel_emulation.cpp into the stub libcuda.so.1, whose device memory is host
memory) on frames from FFmpeg's CUDA frame pool, against a numpy reference of the same formula
(exact) and against swscale's conversion (the CPU encoder's, through the ffmpeg CLI: tolerances
below); the engine's calls into the stub driver (the package's primary context wrapped by FFmpeg,
the writer's stream given to FFmpeg, events and waits against the producer's stream); the codec
choice and argument checks, up to avcodec_open2. NVENC itself is modelled only as far as opening an
encode session (tests/cuda_stubs/libnvidia_encode_stub.c, built once per way NVENC can be missing:
no library, a driver too old, no entry point, no NVENC engine as on an H200, a refused session), so
that each refusal is checked to name its cause; encoding itself is checked on a GPU by
tools/gpu_check.sh (step "nvenc").
"""
from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from torchcodec._cuda import _build_config

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "cuda_stubs"))
from stub_build import (CC, CXX, build_emulating_libcuda, build_helper, build_stub, loader_header,  # noqa: E402
                        run_python)


@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    """The emulating stub libcuda.so.1 and a libnvidia-encode.so.1 of a GPU without an NVENC engine
    (its sessions refused with NV_ENC_ERR_UNSUPPORTED_DEVICE, as on an H200), in one directory."""
    if not (_build_config.CUDA_DRIVER and _build_config.CUDA_KERNELS):
        pytest.skip("this build has no CUDA driver loader or no kernels (-Dcuda=disabled, no ffnvcodec, no nvcc)")
    if CC is None or CXX is None:
        pytest.skip("no C/C++ compiler to build the stub libraries")
    directory = build_emulating_libcuda(tmp_path_factory.mktemp("nvenc"))
    build_stub(directory / "nvenc", "libnvidia-encode.so.1", "libnvidia_encode_stub.c", "nvenc_load_functions")
    shutil.copy(directory / "nvenc" / "libnvidia-encode.so.1", directory)
    if shutil.which("pkg-config") is None:
        pytest.skip("no pkg-config to build the test helper nvenc_probe")
    build_helper("nvenc_probe", directory)
    return directory


PROLOGUE = """
import ctypes, json, sys, warnings
import numpy as np
import torchcodec
sys.path.insert(0, ".")
import nvenc_probe
from torchcodec._cuda import _driver
from torchcodec._cuda._nvenc import CudaFrameWriter
torchcodec.set_bridge("numpy")
stub = ctypes.CDLL("libcuda.so.1")
stub.stub_call_log.restype = ctypes.c_char_p
context = _driver.load_driver().context(0)
def counter(name):
    return ctypes.c_int.in_dll(stub, name).value
def log():
    return stub.stub_call_log().decode().splitlines()
def plane(address, pitch, rows, width):
    raw = (ctypes.c_ubyte * (pitch * rows)).from_address(address)
    return np.frombuffer(raw, np.uint8).reshape(rows, pitch)[:, :width].copy()
def nv12(writer, rgb, producer=0):
    '''rgb: (3, H, W) uint8 at any strides (host memory is the stub's device memory).'''
    written = nvenc_probe.write_frame(writer, rgb.ctypes.data, rgb.strides, producer)
    (y, uv), (y_pitch, uv_pitch) = written.planes
    h, w = rgb.shape[1:]
    return plane(y, y_pitch, h, w), plane(uv, uv_pitch, (h + 1) // 2, 2 * ((w + 1) // 2))
"""

# colour.h's RGB -> YUV in numpy, in the kernel's float32 operations and order.
def reference_nv12(rgb, matrix, full_range):
    f = np.float32
    kr, kb = {1: (0.2126, 0.0722), 4: (0.30, 0.11), 7: (0.212, 0.087), 9: (0.2627, 0.0593)}.get(matrix, (0.299, 0.114))
    kr, kb = f(kr), f(kb)
    kg = f(1) - kr - kb
    ys, cs = (f(1), f(1)) if full_range else (f(219) / f(255), f(224) / f(255))
    us, vs = cs / (f(2) * (f(1) - kb)), cs / (f(2) * (f(1) - kr))
    wy = (ys * kr, ys * kg, ys * kb)
    wu = (-us * kr, -us * kg, us * (f(1) - kb))
    wv = (vs * (f(1) - kr), -vs * kg, -vs * kb)
    r, g, b = (rgb[k].astype(np.float32) for k in range(3))

    def dot(w):
        return w[0] * r + w[1] * g + w[2] * b

    def rounded(x):
        return np.where(x <= 0, 0, np.where(x >= 255, 255, (x + f(0.5)).astype(np.int32))).astype(np.uint8)

    h, w = r.shape
    y = rounded(f(0 if full_range else 16) + dot(wy))
    u, v = dot(wu), dot(wv)
    hc, wc = (h + 1) // 2, (w + 1) // 2
    uv = np.zeros((hc, 2 * wc), np.uint8)
    for cy in range(hc):
        for cx in range(wc):
            su = sv = f(0)
            count = 0
            for yy in range(2 * cy, min(2 * cy + 2, h)):
                for xx in range(2 * cx, min(2 * cx + 2, w)):
                    su, sv, count = f(su + u[yy, xx]), f(sv + v[yy, xx]), count + 1
            uv[cy, 2 * cx] = rounded(np.array([f(128) + su / f(count)], np.float32))[0]
            uv[cy, 2 * cx + 1] = rounded(np.array([f(128) + sv / f(count)], np.float32))[0]
    return y, uv


def test_rgb_to_nv12_kernel_equals_the_formula_for_every_matrix_range_and_layout(stub):
    out = run_python(PROLOGUE + """
rng = np.random.default_rng(7)
results = []
for (h, w) in ((32, 48), (23, 37)):
    base = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    for layout in ("hwc", "chw"):
        rgb = base.transpose(2, 0, 1) if layout == "hwc" else np.ascontiguousarray(base.transpose(2, 0, 1))
        for matrix, full in ((5, 0), (6, 1), (1, 0), (1, 1), (4, 0), (7, 0), (9, 0), (9, 1)):
            writer = CudaFrameWriter(context, w, h)
            writer.matrix, writer.full_range = matrix, bool(full)
            y, uv = nv12(writer, rgb)
            results.append(dict(h=h, w=w, layout=layout, matrix=matrix, full=full, rgb=base.tolist(),
                                y=y.tolist(), uv=uv.tolist()))
print(json.dumps({"results": results, "launches": counter("stub_launches")}))
""", stub)
    assert out["launches"] == len(out["results"]) == 32
    for case in out["results"]:
        rgb = np.array(case["rgb"], np.uint8).transpose(2, 0, 1)
        y, uv = reference_nv12(rgb, case["matrix"], case["full"])
        assert np.array_equal(np.array(case["y"], np.uint8), y), case["matrix"]
        assert np.array_equal(np.array(case["uv"], np.uint8), uv), case["matrix"]


def test_rgb_to_nv12_kernel_is_near_swscale_the_cpu_encoders_conversion(stub, tmp_path):
    """Against `ffmpeg -pix_fmt nv12` (swscale, bicubic, BT.601 limited: what the CPU encoder writes
    before the codec) on a picture of gradients, a disc and noise: luma within 1, chroma (a 2x2 mean
    here, swscale's bicubic filter there) mean difference < 0.75 and 99% within 3."""
    h, w = 96, 128
    yy, xx = np.mgrid[0:h, 0:w]
    disc = ((yy - 48) ** 2 + (xx - 70) ** 2 < 30 ** 2) * 90
    noise = np.random.default_rng(3).integers(-12, 13, (h, w))
    rgb = np.stack([2 * xx, 2 * yy + disc, 255 - 2 * xx + disc // 2], -1) + noise[..., None]
    rgb = np.clip(rgb, 0, 255).astype(np.uint8)
    np.save(tmp_path / "rgb.npy", rgb)
    swscale = subprocess.run(["ffmpeg", "-v", "error", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{w}x{h}",
                              "-i", "-", "-pix_fmt", "nv12", "-f", "rawvideo", "-"],
                             input=rgb.tobytes(), capture_output=True, check=True).stdout
    out = run_python(PROLOGUE + f"""
rgb = np.load({str(tmp_path / "rgb.npy")!r}).transpose(2, 0, 1)
y, uv = nv12(CudaFrameWriter(context, rgb.shape[2], rgb.shape[1]), rgb)
np.save("y.npy", y); np.save("uv.npy", uv)
print(json.dumps({{}}))
""", stub)
    y, uv = np.load(stub / "y.npy").astype(int), np.load(stub / "uv.npy").astype(int)
    ref = np.frombuffer(swscale, np.uint8)
    ref_y = ref[:w * h].reshape(h, w).astype(int)
    ref_uv = ref[w * h:].reshape(h // 2, w).astype(int)
    assert np.abs(y - ref_y).max() <= 1
    chroma = np.abs(uv - ref_uv)
    assert chroma.mean() < 0.75 and np.percentile(chroma, 99) <= 3, (chroma.mean(), chroma.max())


def test_frames_come_from_ffmpegs_pool_on_the_package_context_ordered_both_ways(stub):
    out = run_python(PROLOGUE + """
producer = ctypes.c_void_p()
context_ptr = ctypes.c_void_p()
assert stub.cuDevicePrimaryCtxRetain(ctypes.byref(context_ptr), 0) == 0
assert stub.cuCtxPushCurrent_v2(context_ptr) == 0
assert stub.cuStreamCreate(ctypes.byref(producer), 1) == 0
assert stub.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p())) == 0
stub.stub_clear_log()
pushes, pops = counter("stub_pushes"), counter("stub_pops")
writer = CudaFrameWriter(context, 16, 8)
setup = log()
stub.stub_clear_log()
rgb = np.full((3, 8, 16), 128, np.uint8)
y, uv = nv12(writer, rgb, producer.value)
convert = log()
del writer
import gc; gc.collect()
print(json.dumps({"setup": setup, "convert": convert, "producer": hex(producer.value),
                  "balanced": counter("stub_pushes") - pushes == counter("stub_pops") - pops,
                  "streams": [counter("stub_streams_created"), counter("stub_streams_destroyed")],
                  "events": [counter("stub_events_created"), counter("stub_events_destroyed")],
                  "memory": [counter("stub_allocs"), counter("stub_frees")], "retains": counter("stub_retains"),
                  "y": int(y[0, 0]), "uv": uv[0, :2].tolist()}))
""", stub)
    setup, convert = out["setup"], out["convert"]
    assert any(line.startswith("cuDeviceGetAttribute(14") for line in setup)      # FFmpeg's frames context
    writer_stream = next(line.split("-> ")[1] for line in setup if line.startswith("cuStreamCreate"))
    producer = out["producer"]
    calls = [line for line in convert if line.startswith(("cuEventRecord", "cuStreamWaitEvent", "cuLaunchKernel"))]
    # input_ready on the producer's stream, waited for by the writer's; the launch there; then input_read
    # recorded there and waited for by the producer's stream.
    input_ready = calls[0].partition("(")[2].partition(",")[0]
    input_read = calls[3].partition("(")[2].partition(",")[0]
    assert calls == [f"cuEventRecord({input_ready}, stream={producer})",
                     f"cuStreamWaitEvent(stream={writer_stream}, {input_ready})",
                     calls[2], f"cuEventRecord({input_read}, stream={writer_stream})",
                     f"cuStreamWaitEvent(stream={producer}, {input_read})"]
    assert calls[2].startswith("cuLaunchKernel(tc_convert_rgb8_to_nv12, grid=1x1x1, block=32x8x1,")
    assert calls[2].endswith(f"stream={writer_stream})") and input_ready != input_read
    assert any(line.startswith("cuMemAlloc") for line in convert)                # av_hwframe_get_buffer's pool
    assert out["balanced"] and out["retains"] == 2     # this test's and the package's: FFmpeg retains none
    assert out["streams"] == [2, 1] and out["events"] == [2, 2]     # the producer's stream stays
    assert out["memory"][0] == out["memory"][1] and out["memory"][0] >= 1
    assert out["y"] == 126 and out["uv"] == [128, 128]        # grey 128: 16 + 219/255 * 128 = 125.9


def test_engine_opens_up_to_avcodec_open2_and_says_nvenc_is_missing(stub, tmp_path):
    dest = tmp_path / "out.mp4"
    out = run_python(PROLOGUE + f"""
from torchcodec.encoders import Encoder
from torchcodec._core._error import InvalidArgumentError
results = {{}}
def attempt(name, fmt="mp4", **kwargs):
    encoder = Encoder()
    encoder.add_video(height=48, width=64, frame_rate=30, device="cuda", **kwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            encoder.open_file({str(dest)!r}.replace(".mp4", "." + fmt))
            results[name] = ["opened", ""]
        except Exception as error:
            results[name] = [type(error).__name__, str(error), isinstance(error, ValueError)]
    results[name].append([str(w.message) for w in caught])
pushes, pops = counter("stub_pushes"), counter("stub_pops")
attempt("default")
attempt("default-mov", fmt="mov")
attempt("default-mkv", fmt="mkv")
attempt("h264", codec="h264", extra_options={{"preset": "p4", "colorspace": "bt709", "color_range": "pc"}})
attempt("hevc", codec="hevc_nvenc", crf=20)
attempt("libx264", codec="libx264")
attempt("yuv444p", pixel_format="yuv444p")
attempt("nv12", pixel_format="nv12")
attempt("unknown", extra_options={{"no_such_option": 1}})
attempt("qp", extra_options={{"qp": -10}})
attempt("ycgco", extra_options={{"colorspace": "ycgco"}})
attempt("webm", fmt="webm")
import gc; gc.collect()
results["balanced"] = counter("stub_pushes") - pushes == counter("stub_pops") - pops
results["streams"] = [counter("stub_streams_created"), counter("stub_streams_destroyed")]
results["events"] = [counter("stub_events_created"), counter("stub_events_destroyed")]
results["memory"] = [counter("stub_allocs"), counter("stub_frees")]
print(json.dumps(results))
""", stub)
    no_engine = "NVENC cannot encode: this GPU has no NVENC engine: cuda:0 ("
    for name in ("default", "default-mov", "default-mkv", "h264", "hevc", "nv12"):
        assert out[name][0] == "NvencUnavailableError" and out[name][1].startswith(no_engine), out[name]
        assert "(nvEncOpenEncodeSessionEx: NV_ENC_ERR_UNSUPPORTED_DEVICE)" in out[name][1]
    for name in ("default", "default-mov", "default-mkv", "h264", "nv12"):   # h264's for mp4, mov and mkv
        assert "(FFmpeg's h264_nvenc: avcodec_open2: " in out[name][1]
    assert "(FFmpeg's hevc_nvenc: avcodec_open2: " in out["hevc"][1]
    assert out["hevc"][3] == ["the hevc_nvenc encoder has no crf option: crf=20.000000 is ignored"]
    assert out["libx264"][:3] == ["InvalidArgumentError", "the libx264 encoder cannot encode CUDA frames: use an "
                                  "NVENC encoder (h264_nvenc, hevc_nvenc or av1_nvenc), or encode CPU frames", True]
    assert out["yuv444p"][0] == "InvalidArgumentError"
    assert "Video encoding on GPU currently only supports the nv12 pixel format" in out["yuv444p"][1]
    assert out["unknown"][0] == "InvalidArgumentError" and "unknown option no_such_option=1" in out["unknown"][1]
    assert out["qp"][0] == "InvalidArgumentError" and "qp=-10 is out of valid range" in out["qp"][1]
    assert out["ycgco"][0] == "InvalidArgumentError" and "cannot convert RGB to YUV" in out["ycgco"][1]
    assert out["webm"][0] == "InvalidArgumentError" and "(vp9) has no NVENC encoder" in out["webm"][1]
    assert not list(tmp_path.iterdir())                       # nothing written: settings come first
    assert out["balanced"] and out["streams"][0] == out["streams"][1] >= 4
    assert out["events"][0] == out["events"][1] and out["memory"][0] == out["memory"][1]


# ---- why NVENC cannot encode: each cause, from a stub libnvidia-encode.so.1 ---------------------

# name -> build_stub's (defines, omit) for tests/cuda_stubs/libnvidia_encode_stub.c; None: no library.
NVENC_VARIANTS = {
    "no-engine": ((), ()),
    "no-encode-device": (("STUB_NVENC_OPEN_STATUS=NV_ENC_ERR_NO_ENCODE_DEVICE",), ()),
    "old-driver": (("STUB_NVENC_VERSION=0x90",), ()),
    "no-entry-point": ((), ("NvEncodeAPICreateInstance",)),
    "session-refused": (("STUB_NVENC_OPEN_STATUS=NV_ENC_ERR_OUT_OF_MEMORY",), ()),
    "opens": (("STUB_NVENC_OPEN_STATUS=NV_ENC_SUCCESS",), ()),
    "no-library": None,
}


def headers_api_version() -> tuple[int, int]:
    """NVENCAPI_MAJOR_VERSION and _MINOR_VERSION of the nvEncodeAPI.h beside the loader header."""
    import re
    text = (pathlib.Path(loader_header()).parent / "nvEncodeAPI.h").read_text()
    return tuple(int(re.search(rf"#define NVENCAPI_{part}_VERSION (\d+)", text).group(1)) for part in ("MAJOR", "MINOR"))


@pytest.fixture(scope="module")
def nvenc_variants(stub, tmp_path_factory):
    """name -> a directory holding the emulating libcuda.so.1 and that variant's libnvidia-encode.so.1."""
    import ctypes
    try:
        ctypes.CDLL("libnvidia-encode.so.1")
    except OSError:
        pass
    else:
        pytest.skip("this machine has a real libnvidia-encode.so.1, which the stubs cannot stand in front of "
                    "for the 'no library' case")
    root = tmp_path_factory.mktemp("nvenc_variants")
    directories = {}
    for name, variant in NVENC_VARIANTS.items():
        directory = root / name
        if variant is None:
            directory.mkdir()
        else:
            build_stub(directory, "libnvidia-encode.so.1", "libnvidia_encode_stub.c", "nvenc_load_functions",
                       defines=variant[0], omit=variant[1])
        shutil.copy(stub / "libcuda.so.1", directory)
        directories[name] = directory
    return directories


STATUS = """
import ctypes, json
from torchcodec._cuda import _driver, _nvenc
try:      # loaded first, so that it stays loaded (with its log) when nvenc_status closes it
    nvenc = ctypes.CDLL("libnvidia-encode.so.1")
except OSError:
    nvenc = None
context = _driver.load_driver().context(0)
cause, text = _nvenc.nvenc_status(context)
result = {"cause": cause, "text": text, "context": context.handle, "gpu": context.name}
if nvenc is not None:
    nvenc.stub_nvenc_log.restype = ctypes.c_char_p
    result["log"] = nvenc.stub_nvenc_log().decode().splitlines()
    result["sessions"] = [ctypes.c_int.in_dll(nvenc, n).value for n in ("stub_nvenc_opened", "stub_nvenc_destroyed")]
print(json.dumps(result))
"""


@pytest.mark.parametrize(("variant", "cause", "phrases"), [
    ("no-engine", "engine", ["this GPU has no NVENC engine: cuda:0 (", "NV_ENC_ERR_UNSUPPORTED_DEVICE", "H200"]),
    ("no-encode-device", "engine", ["this GPU has no NVENC engine", "NV_ENC_ERR_NO_ENCODE_DEVICE"]),
    ("old-driver", "driver", ["the NVIDIA driver's NVENC API is version 9.0, older than the {api}",
                              "update the driver"]),
    ("no-entry-point", "driver", ["libnvidia-encode.so.1 was opened but lacks NVENC's entry point "
                                  "NvEncodeAPICreateInstance"]),
    ("session-refused", "session", ["refused an encode session (nvEncOpenEncodeSessionEx: NV_ENC_ERR_OUT_OF_MEMORY)",
                                    "limit of concurrent encode sessions"]),
    ("opens", None, ["an NVENC session opens on cuda:0 (", "driver NVENC API {api})"]),
    ("no-library", "library", ["libnvidia-encode.so.1 could not be opened", "NVIDIA_DRIVER_CAPABILITIES",
                               "'video'"]),
])
def test_nvenc_status_names_why_nvenc_cannot_encode(nvenc_variants, variant, cause, phrases):
    out = run_python(STATUS, nvenc_variants[variant])
    major, minor = headers_api_version()
    assert out["cause"] == cause, out
    for phrase in phrases:
        assert phrase.format(api=f"{major}.{minor}") in out["text"], out["text"]
    if variant in ("no-engine", "no-encode-device", "session-refused", "opens"):
        # one session asked for on the package's primary context, as CUDA (deviceType 1), with the
        # headers' API version and the struct version nvEncodeAPI.h defines for the parameters
        api = major | minor << 24
        opens = [line for line in out["log"] if line.startswith("nvEncOpenEncodeSessionEx")]
        assert opens == [f"nvEncOpenEncodeSessionEx(version={api | 1 << 16 | 7 << 28:#x}, deviceType=1, "
                         f"device={out['context']:#x}, apiVersion={api:#x}) -> {opens[0].rsplit(' ', 1)[1]}"]
        assert out["log"][0] == f"NvEncodeAPIGetMaxSupportedVersion() -> {major << 4 | minor:#x}"
    if variant == "opens":
        assert out["sessions"] == [1, 1]           # opened, and closed again
    if variant == "old-driver":
        assert not any(line.startswith("NvEncodeAPICreateInstance") for line in out["log"])


@pytest.mark.parametrize(("variant", "cause"), [("no-engine", "engine"), ("old-driver", "driver"),
                                                ("no-entry-point", "driver"), ("no-library", "library")])
def test_cuda_encoding_refused_by_nvenc_says_why(nvenc_variants, variant, cause, tmp_path):
    """FFmpeg's h264_nvenc fails to open (whatever its error code), and the exception carries the
    cause NVENC gives and the sentence nvenc_status says, then FFmpeg's own error."""
    out = run_python(f"""
import json
import numpy as np
from torchcodec.encoders import VideoEncoder
from torchcodec._cuda import _driver, _nvenc
class CudaFrames:      # device memory of the stub driver is host memory
    def __init__(self, array):
        self.array, self.shape, self.dtype = array, array.shape, array.dtype
        self.__cuda_array_interface__ = dict(version=3, shape=array.shape, typestr="|u1", strides=None,
                                             data=(array.ctypes.data, True), stream=1)
status = _nvenc.nvenc_status(_driver.load_driver().context(0))
try:
    VideoEncoder(CudaFrames(np.zeros((2, 3, 32, 48), np.uint8)), frame_rate=30).to_file({str(tmp_path / "out.mp4")!r})
except Exception as error:
    print(json.dumps({{"type": type(error).__name__, "runtime": isinstance(error, RuntimeError),
                      "cause": getattr(error, "cause", None), "message": str(error), "status": status}}))
""", nvenc_variants[variant])
    assert out["type"] == "NvencUnavailableError" and out["runtime"] and out["cause"] == cause
    assert out["status"][0] == cause
    assert out["message"].startswith(f"NVENC cannot encode: {out['status'][1]} (FFmpeg's h264_nvenc: avcodec_open2: ")
    assert not (tmp_path / "out.mp4").exists()


# ---- without a GPU (this process: no libcuda.so.1 or no device) -----------------------------------

class CudaArray:
    """A stand-in CUDA array: __cuda_array_interface__ v3 over host memory, read-only, on a stream."""

    def __init__(self, array, stream=0x1234):
        self.array, self.shape, self.dtype = array, array.shape, array.dtype
        self.__cuda_array_interface__ = dict(version=3, shape=array.shape, typestr="|u1", strides=array.strides,
                                             data=(array.ctypes.data, True), stream=stream)


def test_cuda_frames_are_read_in_place_with_their_stream_and_read_only_is_fine():
    from torchcodec.encoders import _inputs
    frames = np.zeros((2, 16, 16, 3), np.uint8).transpose(0, 3, 1, 2)
    memory = _inputs.frames_input(CudaArray(frames), device_index=0)
    assert (memory.address, memory.shape, memory.strides, memory.stream) == (
        frames.ctypes.data, (2, 3, 16, 16), frames.strides, 0x1234)
    with pytest.raises(ValueError, match="frame must have 3 channels"):
        _inputs.frames_input(CudaArray(np.zeros((1, 4, 8, 8), np.uint8)), device_index=0)


@pytest.mark.skipif(__import__("torchcodec")._cuda.available(), reason="a usable CUDA driver is present")
def test_without_a_driver_cuda_encoding_is_refused_saying_why():
    from torchcodec import _cuda
    from torchcodec.encoders import Encoder, VideoEncoder
    with pytest.raises(RuntimeError, match="NVENC.*no CUDA device/driver: ") as error:
        Encoder().add_video(height=16, width=16, frame_rate=30, device="cuda:0")
    assert str(error.value).split("no CUDA device/driver: ")[1].startswith(_cuda.reason())
    with pytest.raises(RuntimeError, match="no CUDA device/driver"):
        VideoEncoder(CudaArray(np.zeros((1, 3, 16, 16), np.uint8)), frame_rate=30).to_tensor("mp4")


# ---- on a GPU (tools/gpu_check.sh, step nvenc) --------------------------------------------------

@pytest.fixture(scope="module")
def gpu():
    import torchcodec
    if not (_build_config.CUDA_DRIVER and _build_config.CUDA_KERNELS) or not torchcodec.cuda_available():
        pytest.skip("no usable NVIDIA GPU")


@pytest.fixture(scope="module")
def nvenc(gpu):
    """NVENC on this GPU: skips where the GPU has no NVENC engine (a hardware limit, as on an H200);
    any other cause fails the test that needs it."""
    from torchcodec._cuda import _driver, _nvenc
    cause, text = _nvenc.nvenc_status(_driver.load_driver().context(0))
    if cause == "engine":
        pytest.skip(f"hardware limit: {text}")


def psnr(a, b):
    mse = np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2)
    return np.inf if mse == 0 else 10 * np.log10(255 ** 2 / mse)


def gradient_frames(count=12, height=240, width=320):
    yy, xx = np.mgrid[0:height, 0:width]
    frames = [np.stack([(xx + 8 * k) % 256, (yy + 4 * k) % 256, (xx + yy) // 3 % 256]) for k in range(count)]
    return np.array(frames, np.uint8)


@pytest.mark.cuda
@pytest.mark.parametrize("library", ["torch", "cupy"])
@pytest.mark.parametrize(("container", "codec"), [("mp4", None), ("mkv", "hevc_nvenc")])
def test_on_the_gpu_nvenc_encodes_cuda_frames_of_a_busy_stream(nvenc, library, container, codec):
    """Frames written on a non-default stream that is still busy (queued matrix products) when the
    encoder is called: NVENC must read them after that work (the writer's stream waits for the
    producer's), and the decoded file is within 30 dB PSNR of the input, tagged BT.601 limited."""
    import importlib.util
    import torchcodec
    from torchcodec.decoders import VideoDecoder
    from torchcodec.encoders import VideoEncoder
    if importlib.util.find_spec(library) is None:
        pytest.skip(f"{library} is not installed")
    expected = gradient_frames()
    if library == "torch":
        import torch
        stream = torch.cuda.Stream()
        with torch.cuda.stream(stream):
            busy = torch.randn(4096, 4096, device="cuda")
            for _ in range(8):
                busy = busy @ busy
            frames = torch.zeros(expected.shape, dtype=torch.uint8, device="cuda")
            frames.copy_(torch.from_numpy(expected).pin_memory(), non_blocking=True)
            encoded = VideoEncoder(frames, frame_rate=30).to_tensor(container, codec=codec)
    else:
        import cupy
        with cupy.cuda.Stream(non_blocking=True):
            busy = cupy.random.standard_normal((4096, 4096), dtype=cupy.float32)
            for _ in range(8):
                busy = busy @ busy
            frames = cupy.zeros(expected.shape, cupy.uint8)
            frames.set(expected)
            encoded = VideoEncoder(frames, frame_rate=30).to_tensor(container, codec=codec)
    with torchcodec.bridge("numpy"):
        decoder = VideoDecoder(np.asarray(encoded.cpu() if hasattr(encoded, "cpu") else encoded))
        decoded = decoder.get_frames_in_range(0, len(decoder)).data
    assert decoded.shape == expected.shape
    assert min(psnr(decoded[i], expected[i]) for i in range(len(expected))) > 30
    assert decoder.metadata.color_space == "bt470bg"
    assert decoder.metadata.codec == ("h264" if codec is None else "hevc")
