"""The CUDA frame converter (torchcodec._cuda._converter) and FFmpeg's CUDA hwaccel backend,
tested without a GPU.

The stub libcuda.so.1 (tests/cuda_stubs/libcuda_stub.c) is linked here with
tests/cuda_stubs/kernel_emulation.cpp, which runs the real kernels/colour.cu and kernels/copy.cu on
the CPU when cuLaunchKernel is called; its "device memory" is host memory. So the pixels that the
converter's launches produce are real and are compared with the CPU decoder's (VideoDecoder on the
CPU: swscale): equal, in uint8 and float32. The stub's call log gives the order of
launches, copies, event records and stream waits. Device frames (NVDEC's, FFmpeg hwaccel's) come
from tests/cuda_stubs/device_frames.pyx, a small extension built here against the package's .pxd.
Every test runs Python in a subprocess whose library path starts with the stub's directory.
"""
from __future__ import annotations

import pathlib
import re
import subprocess
import sys

import pytest

from torchcodec._cuda import _build_config

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "cuda_stubs"))
from stub_build import build_converting_stub, run_python  # noqa: E402
from corpus import make_media  # noqa: E402

MEDIA = make_media.MEDIA_DIR


@pytest.fixture(scope="module")
def stub(tmp_path_factory, media):
    """Directory of the stub libcuda.so.1 running the kernels on the CPU, and the device_frames helper."""
    return build_converting_stub(tmp_path_factory.mktemp("cuda_convert"))


# Prologue of every subprocess: the stub's counters and log, device memory from the stub's
# cuMemAlloc (host memory underneath, read back as numpy arrays), and the CPU decoder's frames.
PROLOGUE = """
import ctypes, json, sys
import numpy as np
import torchcodec
from torchcodec._cuda import _driver
from torchcodec._cuda._converter import CudaConverter
from torchcodec._core._packet_decoder import make_video_decoder
from torchcodec._core._demuxer import Demuxer
from torchcodec._core._color_converter import converter_over
from torchcodec._core._video_reader import VideoReader
from torchcodec._core._source import open_source
from torchcodec.decoders import VideoDecoder
sys.path.insert(0, ".")
import device_frames

torchcodec.set_bridge("numpy")
stub = ctypes.CDLL("libcuda.so.1")
stub.stub_call_log.restype = ctypes.c_char_p
context = _driver.load_driver().context(0)
primary = ctypes.c_void_p()
assert stub.cuDevicePrimaryCtxRetain(ctypes.byref(primary), 0) == 0

def counter(name, kind=ctypes.c_int):
    return kind.in_dll(stub, name).value

def log():
    return stub.stub_call_log().decode().splitlines()

class DeviceArray:
    '''A numpy view of `shape` `dtype` elements allocated with the stub's cuMemAlloc.'''
    def __init__(self, shape, dtype):
        self.array = np.empty(shape, dtype)
        self.pointer = ctypes.c_ulonglong()
        assert stub.cuCtxPushCurrent_v2(primary) == 0
        assert stub.cuMemAlloc_v2(ctypes.byref(self.pointer), ctypes.c_size_t(self.array.nbytes)) == 0
        assert stub.cuCtxPopCurrent_v2(None) == 0
        self.address = self.pointer.value
        buffer = (ctypes.c_uint8 * self.array.nbytes).from_address(self.address)
        self.array = np.frombuffer(buffer, dtype).reshape(shape)
        self.array[...] = 0
    def free(self):
        assert stub.cuCtxPushCurrent_v2(primary) == 0
        assert stub.cuMemFree_v2(self.pointer) == 0
        assert stub.cuCtxPopCurrent_v2(None) == 0

def engine(path, converter, rotation=0, decoder=None):
    demuxer = Demuxer(path)
    index = demuxer._scan(0)
    return VideoReader(demuxer, 0, index, rotation, False, decoder, converter_over(converter, 'cuda:0')), index

def decode(stream, index, indices, height, width, as_float=False):
    '''Frames `indices` decoded by `stream` into device memory; returns them as a numpy copy.'''
    out = DeviceArray((len(indices), height, width, 3), np.float32 if as_float else np.uint8)
    targets = np.array([index.pts(i) for i in indices], np.int64)
    stream.decode_at(targets, 0, out.address, out.array.strides[0], out.array.strides[1], height, width,
                     as_float, np.zeros(len(indices)), np.zeros(len(indices)))
    frames = out.array.copy()
    out.free()
    return frames

def cpu_frames(path, indices, as_float=False):
    decoder = VideoDecoder(str(path), dimension_order="NHWC", output_dtype="float32" if as_float else "uint8")
    return decoder.get_frames_at(indices).data

def decoded_planes(path, k, pix_fmt="yuv420p"):
    '''Frame k of a 4:2:0 file as libavcodec decodes it (8-bit, or yuv420p10le): its Y, Cb and Cr
    planes (ffmpeg CLI).'''
    import subprocess
    info = VideoDecoder(path).metadata
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-vf", f"select=eq(n\\,{k})", "-frames:v", "1",
                          "-f", "rawvideo", "-pix_fmt", pix_fmt, "-"], capture_output=True, check=True).stdout
    dtype = np.dtype("<u2") if pix_fmt == "yuv420p10le" else np.dtype(np.uint8)
    w, h = info.width, info.height
    y = np.frombuffer(raw, dtype, w * h).reshape(h, w)
    u = np.frombuffer(raw, dtype, w * h // 4, w * h * dtype.itemsize).reshape(h // 2, w // 2)
    v = np.frombuffer(raw, dtype, w * h // 4, w * h * 5 // 4 * dtype.itemsize).reshape(h // 2, w // 2)
    return y, u, v

def finish(out):
    out.update(pushes=counter("stub_pushes"), pops=counter("stub_pops"), depth=counter("stub_stack_depth"))
    print(json.dumps(out))
"""


def run(code: str, stub: pathlib.Path, **env: str) -> dict:
    return run_python(PROLOGUE + code, stub, **env)


def frame_comparison(name: str, as_float: bool) -> str:
    return f"""
path = {str(MEDIA / name)!r}
first = VideoDecoder(path)
n = len(first)
indices = [0, n // 2, n - 1]
converter = CudaConverter(context)
stream, index = engine(path, converter)
height, width = first.metadata.height, first.metadata.width
gpu = decode(stream, index, indices, height, width, {as_float}).astype(np.float64)
cpu = cpu_frames(path, indices, {as_float}).astype(np.float64)
diff = np.abs(gpu - cpu)
finish({{"max": float(diff.max()), "mean": float(diff.mean()), "shape": list(gpu.shape),
        "cpu_mean": float(cpu.mean()), "kernels": [line.split(",")[0] for line in log() if "cuLaunchKernel" in line]}})
"""


# (file, pixel format): every route of swscale_rgb.h on real streams (8-bit of even height: the x86
# and table converters; 4:4:4, 10-bit, odd sizes: the general scaler's). The kernels give the CPU
# decoder's bytes, uint8 and float32 (tests/test_cuda_exact.py does the same on random frames).
CORPUS = [
    ("h264_25fps_2s.mp4", "yuv420p BT.601 limited"),
    ("h264_bt709.mp4", "yuv420p BT.709 limited"),
    ("h264_fullrange.mp4", "yuv420p BT.601 full"),
    ("h264_yuv444.mp4", "yuv444p"),
    ("h264_yuv444_161x121.mp4", "yuv444p odd size"),
    ("h264_10bit.mp4", "yuv420p10le"),
    ("hevc_10bit.mp4", "yuv420p10le"),
    ("hevc_bt2020_10bit_fullrange.mp4", "yuv420p10le BT.2020 full"),
    ("vp9_161x121.webm", "yuv420p odd size"),
]


@pytest.mark.parametrize("as_float", [False, True], ids=["uint8", "float32"])
@pytest.mark.parametrize("name, what", CORPUS, ids=[c[0] for c in CORPUS])
def test_host_frames_converted_by_the_kernels_match_the_cpu_decoder(stub, name, what, as_float):
    out = run(frame_comparison(name, as_float), stub)
    assert out["cpu_mean"] > (0.1 if as_float else 20), "the reference frames are not blank"
    assert out["max"] == 0, (what, out)
    expected = "tc_convert_yuv16_to_rgb" if "10" in what else "tc_convert_yuv8_to_rgb"
    assert out["kernels"] and all(k.endswith(expected + ("f" if as_float else "8")) for k in out["kernels"])
    assert out["pushes"] == out["pops"] and out["depth"] == 0


# Host formats that no corpus file decodes to, as 96x64 rawvideo in NUT. NV12 goes through swscale's
# general scaler (its unscaled converters take planar 4:2:0 only), as the kernels know.
RAW_FORMATS = ["nv12", "yuv420p12le", "yuv444p12le", "yuv444p16le"]


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> dict[str, pathlib.Path]:
    """Small clips made with the ffmpeg CLI: RAW_FORMATS as rawvideo, and H.264 yuv422p."""
    directory = tmp_path_factory.mktemp("generated")
    source = ["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=96x64:rate=10:duration=1"]
    made = {}
    for name in RAW_FORMATS:
        made[name] = directory / f"{name}.nut"
        subprocess.run([*source, "-frames:v", "3", "-c:v", "rawvideo", "-pix_fmt", name, str(made[name])], check=True)
    made["yuv422p"] = directory / "yuv422p.mp4"
    subprocess.run([*source, "-c:v", "libx264", "-pix_fmt", "yuv422p", str(made["yuv422p"])], check=True)
    return made


@pytest.mark.parametrize("name", RAW_FORMATS)
def test_other_host_formats_are_uploaded_and_converted_by_the_kernels(stub, generated, name):
    code = f"""
path = {str(generated[name])!r}
out = {{}}
for as_float in (False, True):
    stream, index = engine(path, CudaConverter(context))
    stub.stub_clear_log()
    diff = np.abs(decode(stream, index, [0, 2], 64, 96, as_float).astype(float) -
                  cpu_frames(path, [0, 2], as_float).astype(float))
    out[str(as_float)] = [float(diff.max()),
                          [line.split(",")[0] for line in log() if line.startswith("cuLaunchKernel")]]
finish(out)
"""
    out = run(code, stub)
    wide = name != "nv12"
    for as_float in ("False", "True"):
        worst, kernels = out[as_float]
        assert worst == 0, (as_float, out)
        expected = f"cuLaunchKernel(tc_convert_yuv{16 if wide else 8}_to_rgb{'f' if as_float == 'True' else '8'}"
        assert kernels == [expected] * 2


def test_a_format_the_kernels_do_not_read_is_converted_by_the_scaler_and_uploaded(stub, generated):
    path = generated["yuv422p"]
    code = f"""
path = {str(path)!r}
out = {{}}
for as_float in (False, True):
    stream, index = engine(path, CudaConverter(context))
    gpu = decode(stream, index, [0, 5], 64, 96, as_float)
    out[str(as_float)] = bool(np.array_equal(gpu, cpu_frames(path, [0, 5], as_float)))
out["launches"] = counter("stub_launches")
out["uploads"] = [line for line in log() if line.startswith("cuMemcpy2DAsync")]
finish(out)
"""
    out = run(code, stub)
    assert out["False"] and out["True"], "the Scaler's RGB, uploaded, is the CPU decoder's"
    assert out["launches"] == 0
    # One 2-D upload of RGB rows per frame (96 pixels x 3 bytes, or x 12 for float32).
    assert out["uploads"] == ["cuMemcpy2DAsync(1->2, 288x64, stream=(nil))"] * 2 + \
                             ["cuMemcpy2DAsync(1->2, 1152x64, stream=(nil))"] * 2


@pytest.mark.parametrize("rotation", [90, 180, 270])
def test_rotation_is_applied_through_the_source_steps(stub, rotation):
    code = f"""
path = {str(MEDIA / "h264_25fps_2s.mp4")!r}
stream, index = engine(path, CudaConverter(context), rotation={rotation})
h, w = (320, 240) if {rotation} != 180 else (240, 320)
gpu = decode(stream, index, [3, 40], h, w)
expected = np.rot90(cpu_frames(path, [3, 40]), k=-{rotation} // 90, axes=(1, 2))
finish({{"equal": bool(np.array_equal(gpu, expected)), "shape": list(gpu.shape)}})
"""
    out = run(code, stub)
    assert out["equal"], out
    assert out["pushes"] == out["pops"]


def test_rotated_output_equals_the_cpu_decoders_rotated_file(stub):
    code = f"""
path = {str(MEDIA / "h264_rotate90.mp4")!r}
cpu = cpu_frames(path, [0, 7])
rotation = VideoDecoder(path)._engine.rotation
stream, index = engine(path, CudaConverter(context), rotation=rotation)
finish({{"rotation": rotation, "equal": bool(np.array_equal(decode(stream, index, [0, 7], *cpu.shape[1:3]), cpu))}})
"""
    out = run(code, stub)
    assert out["rotation"] in (90, 270) and out["equal"]


def test_repeated_targets_are_copied_on_the_device_and_the_launches_use_the_stream_set(stub):
    code = f"""
path = {str(MEDIA / "h264_25fps_2s.mp4")!r}
converter = CudaConverter(context)
converter.set_stream(0x5000)
stream, index = engine(path, converter)
gpu = decode(stream, index, [4, 4, 9], 240, 320)
float_out = decode(stream, index, [9, 9], 240, 320, as_float=True)
finish({{"repeat_equal": bool(np.array_equal(gpu[0], gpu[1])),
        "matches_cpu": bool(np.array_equal(gpu, cpu_frames(path, [4, 4, 9]))),
        "float_repeat_equal": bool(np.array_equal(float_out[0], float_out[1])) and float(float_out[0].max()) > 0.5,
        "device_calls": [line for line in log() if line.startswith(("cuLaunchKernel", "cuMemcpy2DAsync", "cuEvent"))]}})
"""
    out = run(code, stub)
    assert out["repeat_equal"] and out["matches_cpu"] and out["float_repeat_equal"]
    calls = out["device_calls"]
    copies = [line for line in calls if "tc_copy_strided" in line]
    # uint8: 320 * 3 = 960 bytes a row -> 2 blocks of 32 threads x 16 bytes; float32: 3840 -> 8.
    assert copies == ["cuLaunchKernel(tc_copy_strided, grid=2x30x1, block=32x8x1, stream=0x5000)",
                      "cuLaunchKernel(tc_copy_strided, grid=8x30x1, block=32x8x1, stream=0x5000)"]
    launches = [line for line in calls if line.startswith("cuLaunchKernel")]
    assert len(launches) == 5 and all(line.endswith("stream=0x5000)") for line in launches)
    # One thread per pixel pair: 160 pairs a row -> 5 blocks of 32.
    assert "cuLaunchKernel(tc_convert_yuv8_to_rgb8, grid=5x30x1, block=32x8x1, stream=0x5000)" in launches
    uploads = [line for line in calls if line.startswith("cuMemcpy2DAsync")]
    assert len(uploads) == 9 and all(line.endswith("stream=0x5000)") for line in uploads), \
        "three planes uploaded for each of the three converted frames, on the stream set"


def test_an_nvdec_frame_waits_for_ready_and_every_reader_is_kept_in_done(stub):
    """An NVDEC frame: the stream waits on the device for the slot's `ready` event, the kernel reads,
    `done` is recorded after it. Converted again on a second stream, that stream first waits for
    `done` as the first stream recorded it, so the new `done` covers both reads (the decoder unmaps
    the surface only when both have passed); again on the same stream, no wait is needed."""
    code = f"""
path = {str(MEDIA / "h264_25fps_2s.mp4")!r}
y, u, v = decoded_planes(path, 12)
reference = cpu_frames(path, [12])[0]
height, width = y.shape
# NVDEC's NV12 surface: Y rows then interleaved CbCr rows, with a pitch and 8 rows of padding
# above the display area (crop_top = 8), as a decoder allocating at the coded size would hand it.
pitch, top = 512, 8
surface = DeviceArray(((height + top) * 3 // 2 + 8, pitch), np.uint8)
surface.array[top:top + height, :width] = y
chroma = surface.array[height + top + 4:]
chroma[top // 2:top // 2 + height // 2, 0:width:2] = u
chroma[top // 2:top // 2 + height // 2, 1:width:2] = v
ready, done = ctypes.c_void_p(), ctypes.c_void_p()
assert stub.cuCtxPushCurrent_v2(primary) == 0
assert stub.cuEventCreate(ctypes.byref(ready), 0) == 0 and stub.cuEventCreate(ctypes.byref(done), 0) == 0
# the decoder's map: both events recorded on its stream after the post-processing
assert stub.cuEventRecord(ready, ctypes.c_void_p(0x6000)) == 0 and stub.cuEventRecord(done, ctypes.c_void_p(0x6000)) == 0
stub.cuCtxPopCurrent_v2(None)
sync = device_frames.Sync(ready.value, done.value)
stub.stub_event_covers.restype = ctypes.c_ulonglong
stub.stub_stream_bit.restype = ctypes.c_ulonglong
bits = {{hex(s): stub.stub_stream_bit(ctypes.c_void_p(s)) for s in (0x6000, 0x7000, 0x8000)}}
out = DeviceArray((height, width, 3), np.uint8)
converter = CudaConverter(context)
result = {{"ready": hex(ready.value), "done": hex(done.value), "equal": [], "calls": [], "covers": []}}
for stream in (0x7000, 0x8000, 0x8000):
    converter.set_stream(stream)
    out.array[...] = 0
    stub.stub_clear_log()
    device_frames.convert_device_frame(converter, "nv12", [surface.address, surface.address + (height + top + 4) * pitch],
                                       [pitch, pitch], width, height, out.address, width * 3, crop_top=top,
                                       colorspace=2, color_range=1, sync=sync)
    result["calls"].append(log())
    result["equal"].append(bool(np.array_equal(out.array, reference)))
    covers = stub.stub_event_covers(done)
    result["covers"].append(sorted(name for name, bit in bits.items() if covers & bit))
result["readers"], result["done_stream"] = sync.readers, hex(sync.done_stream)
finish(result)
"""
    out = run(code, stub)
    assert out["equal"] == [True] * 3, "NVDEC's NV12 layout, cropped, gives the CPU decoder's pixels"
    ready, done = out["ready"], out["done"]
    launch = "cuLaunchKernel(tc_convert_yuv8_to_rgb8, grid=5x30x1, block=32x8x1, stream={})"
    assert out["calls"][0] == [f"cuStreamWaitEvent(stream=0x7000, {ready})", launch.format("0x7000"),
                               f"cuEventRecord({done}, stream=0x7000)"]
    assert out["calls"][1] == [f"cuStreamWaitEvent(stream=0x8000, {ready})", launch.format("0x8000"),
                               f"cuStreamWaitEvent(stream=0x8000, {done})", f"cuEventRecord({done}, stream=0x8000)"]
    assert out["calls"][2] == [f"cuStreamWaitEvent(stream=0x8000, {ready})", launch.format("0x8000"),
                               f"cuEventRecord({done}, stream=0x8000)"], "the same stream: ordered already"
    assert out["covers"][0] == ["0x6000", "0x7000"]
    assert out["covers"][1] == out["covers"][2] == ["0x6000", "0x7000", "0x8000"], "done gates on both reads"
    assert out["readers"] == 3 and out["done_stream"] == "0x8000"
    assert out["pushes"] == out["pops"] and out["depth"] == 0


@pytest.mark.parametrize("stream", [0, 0x9000], ids=["legacy-stream", "own-stream"])
def test_an_ffmpeg_hwaccel_frame_is_ordered_against_the_legacy_stream(stub, stream):
    code = f"""
path = {str(MEDIA / "hevc_10bit.mp4")!r}
y, u, v = decoded_planes(path, 30, "yuv420p10le")
reference = cpu_frames(path, [30], as_float=True)[0]
height, width = y.shape
# FFmpeg's P010 hwaccel surface: the 10-bit samples MSB-aligned in 16-bit words.
luma = DeviceArray((height, width), np.uint16)
luma.array[...] = y << 6
cbcr = DeviceArray((height // 2, width), np.uint16)
cbcr.array[:, 0::2] = u << 6
cbcr.array[:, 1::2] = v << 6
out = DeviceArray((height, width, 3), np.float32)
converter = CudaConverter(context)
converter.set_stream({stream})
stub.stub_clear_log()
device_frames.convert_device_frame(converter, "p010le", [luma.address, cbcr.address], [width * 2, width * 2],
                                   width, height, out.address, width * 12, hwaccel=True, as_float=True)
finish({{"max": float(np.abs(out.array - reference).max()), "calls": log()}})
"""
    out = run(code, stub)
    assert out["max"] == 0, "the CPU decoder's float32 pixels"
    calls = [" ".join(re.match(r"(\w+)\(.*stream=(\(nil\)|0x[0-9a-f]+)", line).groups()) for line in out["calls"]
             if "stream=" in line]
    # The chroma filters of the frame's geometry are uploaded once, before the first launch, on the
    # stream; filters_read is recorded after each launch that reads them.
    if stream == 0:
        assert calls == ["cuMemcpy2DAsync (nil)", "cuLaunchKernel (nil)", "cuEventRecord (nil)"], \
            "on the legacy stream itself nothing needs ordering"
    else:
        assert calls == ["cuMemcpy2DAsync 0x9000",
                         "cuEventRecord 0x1",           # FFmpeg's writes, on the legacy stream
                         "cuStreamWaitEvent 0x9000",    # our stream waits for them
                         "cuLaunchKernel 0x9000",
                         "cuEventRecord 0x9000",        # the filters' last reader
                         "cuEventRecord 0x9000",
                         "cuStreamWaitEvent 0x1"]       # FFmpeg reuses the surface after the kernel


def test_errors_are_python_exceptions_and_leave_the_context_stack_balanced(stub):
    code = f"""
path = {str(MEDIA / "h264_25fps_2s.mp4")!r}
out = {{}}
converter = CudaConverter(context)
stream, index = engine(path, converter)
try:
    decode(stream, index, [0], 200, 320)
except ValueError as error:
    out["size"] = str(error)
stream, index = engine(path, converter)
try:
    decode(stream, index, [0], 240, 320)
except _driver.CudaError as error:
    out["launch"] = str(error)
surface = DeviceArray((16, 64), np.uint8)
try:
    device_frames.convert_device_frame(converter, "yuv422p", [surface.address] * 3, [64] * 3, 8, 8,
                                       surface.address, 64, sync=device_frames.Sync(1, 1))
except RuntimeError as error:
    out["format"] = str(error)
surface.free()
finish(out)
"""
    out = run(code, stub, STUB_LAUNCH_RESULT="1")
    assert "cannot fill a 320x200 output (it does not resize without transforms)" in out["size"]
    assert out["launch"].startswith("cuLaunchKernel failed: CUDA_ERROR_INVALID_VALUE")
    assert "cannot convert yuv422p frames in device memory" in out["format"]
    assert out["pushes"] == out["pops"] and out["depth"] == 0


def test_modules_load_once_per_context_and_the_staging_buffer_is_freed(stub):
    code = f"""
path = {str(MEDIA / "h264_yuv444.mp4")!r}
first, second = CudaConverter(context), CudaConverter(context)
stream, index = engine(path, first)
decode(stream, index, [0, 1], 240, 320)
staging = first.staging_bytes
del stream, first, second
import gc; gc.collect()
finish({{"loads": counter("stub_loads"), "staging": staging, "live": counter("stub_live_bytes", ctypes.c_longlong),
        "events": [counter("stub_events_created"), counter("stub_events_destroyed")]}})
"""
    out = run(code, stub)
    assert out["loads"] == 2, "colour and copy, once for the context, shared by both converters"
    assert out["staging"] == 3 * 240 * 512, "three 320-byte planes of 240 rows, pitch 512"
    assert out["live"] == 0
    assert out["events"] == [8, 8]


# ---- FFmpeg's CUDA hwaccel (make_video_decoder(cuda_device=N)) ----------------------------------------

def test_this_ffmpeg_build_has_the_cuda_hwaccel_as_ffmpeg_hwaccels_says():
    from torchcodec._core._packet_decoder import cuda_hwaccel_unavailable_reason
    listed = subprocess.run(["ffmpeg", "-hide_banner", "-hwaccels"], capture_output=True, text=True,
                            check=True).stdout.split()
    reason = cuda_hwaccel_unavailable_reason()
    assert (reason is None) == ("cuda" in listed), reason
    if reason is not None:
        assert "has no CUDA hwaccel" in reason


HWACCEL = """
import json
import numpy as np
import torchcodec
from torchcodec._cuda import _driver
from torchcodec._core._packet_decoder import cuda_hwaccel_unavailable_reason, make_video_decoder
from torchcodec._core._demuxer import Demuxer
from torchcodec._core._color_converter import converter_over
from torchcodec._core._video_reader import VideoReader
from torchcodec._core._source import open_source
from torchcodec.decoders import VideoDecoder
torchcodec.set_bridge("numpy")
out = {"reason": cuda_hwaccel_unavailable_reason()}
path = %r
# The package retains (activates) the primary context first, as torch or the NVDEC backend would.
context = _driver.load_driver().context(0)
try:
    make_video_decoder(Demuxer(path), 0, 1, 0, 0)
except ValueError as error:
    out["no_context"] = str(error)
demuxer = Demuxer(path)
index = demuxer._scan(0)
decoder = make_video_decoder(demuxer, 0, 1, 0, context.handle)
out["before"] = decoder.hwaccel_used
stream = VideoReader(demuxer, 0, index, 0, False, decoder)
frames = np.zeros((2, 240, 320, 3), np.uint8)
stream.decode_at(np.array([index.pts(0), index.pts(33)], np.int64), 0, frames.ctypes.data, frames.strides[0],
                 frames.strides[1], 240, 320, False, np.zeros(2), np.zeros(2))
out["after"] = decoder.hwaccel_used
cpu = VideoDecoder(path, dimension_order="NHWC").get_frames_at([0, 33]).data
out["equal"] = bool(np.array_equal(frames, cpu))
print(json.dumps(out))
""" % str(MEDIA / "h264_25fps_2s.mp4")


def test_the_hwaccel_backend_uses_the_packages_primary_context_and_falls_back_to_software_decoding(stub):
    """FFmpeg's CUDA device is given the primary context the package retained (FFmpeg's own
    primary_ctx=1 route refuses a context that torch or the package activated first). With the stub
    its NVDEC hwaccel then fails to start (no libnvcuvid), and libavcodec decodes on the CPU:
    hwaccel_used says so and the frames are the CPU decoder's."""
    out = run_python(HWACCEL, stub)
    if out["reason"] is not None:
        pytest.skip(out["reason"])
    assert "needs the device's CUDA context" in out["no_context"]
    assert out["before"] is None and out["after"] is False and out["equal"]


# ---- on a real GPU (tools/gpu_check.sh) -----------------------------------------------------------

GPU_PROLOGUE = """
import ctypes, json
import numpy as np
import torchcodec
from torchcodec._cuda import _driver
from torchcodec._cuda._converter import CudaConverter
from torchcodec._core._packet_decoder import make_video_decoder
from torchcodec._core._demuxer import Demuxer
from torchcodec._core._color_converter import converter_over
from torchcodec._core._video_reader import VideoReader
from torchcodec._core._source import open_source
from torchcodec.decoders import VideoDecoder

torchcodec.set_bridge("numpy")
cu = ctypes.CDLL("libcuda.so.1")
primary = ctypes.c_void_p()

def check(ret, what):
    assert ret == 0, f"{what} failed: CUresult {ret}"

def decode_on_gpu(path, indices, as_float=False, rotation=0, cuda_device=-1):
    '''Frames `indices` of `path` converted by a CudaConverter on its own (non-blocking) stream, in
    device memory, downloaded; and whether FFmpeg's hwaccel decoded them (cuda_device >= 0).'''
    demuxer = Demuxer(path)
    index = demuxer._scan(0)
    context = _driver.load_driver().context(0)
    decoder = make_video_decoder(demuxer, 0, 1, cuda_device, context.handle) if cuda_device >= 0 else None
    converter = CudaConverter(context)
    info = VideoDecoder(path).metadata
    height, width = (info.width, info.height) if rotation in (90, 270) else (info.height, info.width)
    shape = (len(indices), height, width, 3)
    host = np.zeros(shape, np.float32 if as_float else np.uint8)
    if not primary.value:
        check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(primary), 0), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxPushCurrent_v2(primary), "cuCtxPushCurrent")
    stream, memory = ctypes.c_void_p(), ctypes.c_uint64()
    check(cu.cuStreamCreate(ctypes.byref(stream), 1), "cuStreamCreate")
    check(cu.cuMemAlloc_v2(ctypes.byref(memory), ctypes.c_size_t(host.nbytes)), "cuMemAlloc")
    converter.set_stream(stream.value)
    engine = VideoReader(demuxer, 0, index, rotation, False, decoder, converter_over(converter, 'cuda:0'))
    targets = np.array([index.pts(i) for i in indices], np.int64)
    engine.decode_at(targets, 0, memory.value, host.strides[0], host.strides[1], height, width, as_float,
                     np.zeros(len(indices)), np.zeros(len(indices)))
    check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize")
    check(cu.cuMemcpyDtoH_v2(host.ctypes.data_as(ctypes.c_void_p), memory, ctypes.c_size_t(host.nbytes)), "cuMemcpyDtoH")
    check(cu.cuMemFree_v2(memory), "cuMemFree")
    check(cu.cuStreamDestroy_v2(stream), "cuStreamDestroy")
    check(cu.cuCtxPopCurrent_v2(None), "cuCtxPopCurrent")
    return host, (decoder.hwaccel_used if decoder is not None else None)

def cpu_frames(path, indices, as_float=False, rotation=0):
    frames = VideoDecoder(path, dimension_order="NHWC", output_dtype="float32" if as_float else "uint8")
    return np.rot90(frames.get_frames_at(indices).data, k=-rotation // 90, axes=(1, 2))

def compare(gpu, cpu):
    diff = np.abs(gpu.astype(np.float64) - cpu.astype(np.float64))
    return [float(diff.max()), float(diff.mean())]
"""


@pytest.fixture(scope="module")
def real_gpu(tmp_path_factory):
    """A directory to run subprocesses in with the real driver (skips without a usable GPU)."""
    import torchcodec
    if not _build_config.CUDA_KERNELS or not torchcodec.cuda_available():
        pytest.skip("no CUDA device, or a build without kernels")
    return tmp_path_factory.mktemp("real_gpu")


@pytest.mark.cuda
def test_on_a_gpu_host_frames_are_converted_as_on_the_stub(real_gpu, media):
    code = GPU_PROLOGUE + f"""
out = {{}}
for name in ("h264_25fps_2s.mp4", "h264_bt709.mp4", "h264_yuv444.mp4", "h264_10bit.mp4"):
    path = {str(MEDIA)!r} + "/" + name
    for as_float in (False, True):
        out[name + str(as_float)] = compare(decode_on_gpu(path, [0, 20, 40], as_float)[0], cpu_frames(path, [0, 20, 40], as_float))
path = {str(MEDIA)!r} + "/h264_25fps_2s.mp4"
out["rotated"] = compare(decode_on_gpu(path, [5, 5, 6], rotation=90)[0], cpu_frames(path, [5, 5, 6], rotation=90))
print(json.dumps(out))
"""
    out = run_python(code, real_gpu)
    assert all(difference == [0.0, 0.0] for difference in out.values()), out


@pytest.mark.cuda
def test_on_a_gpu_ffmpegs_hwaccel_frames_are_converted_on_another_stream(real_gpu, media):
    code = GPU_PROLOGUE + f"""
from torchcodec._core._packet_decoder import cuda_hwaccel_unavailable_reason
out = {{"reason": cuda_hwaccel_unavailable_reason()}}
if out["reason"] is None:
    for name in ("h264_25fps_2s.mp4", "hevc_10bit.mp4"):
        path = {str(MEDIA)!r} + "/" + name
        frames, used = decode_on_gpu(path, [0, 1, 30, 31], cuda_device=0)
        out[name] = [used] + compare(frames, cpu_frames(path, [0, 1, 30, 31]))
print(json.dumps(out))
"""
    out = run_python(code, real_gpu)
    if out["reason"] is not None:
        pytest.skip(out["reason"])
    # NVDEC decodes H.264 and HEVC bit-exactly: its NV12 / P010 through the kernels is the CPU decoder's RGB.
    assert out["h264_25fps_2s.mp4"] == [True, 0.0, 0.0], out
    assert out["hevc_10bit.mp4"] == [True, 0.0, 0.0], out
