"""The building blocks on CUDA, end to end without a GPU: ``stream.make_decoder(device="cuda")``,
its RawFrames in device memory, ``ColorConverter(device="cuda")``.

Against the stub libcuda.so.1 (tests/cuda_stubs/libcuda_stub.c: "device" memory is host memory,
kernel_emulation.cpp runs the real kernels on the CPU) and the stub libnvcuvid.so.1 (a parser whose
surfaces hold luma 16 + timestamp % 219 and chroma 128), each test in a subprocess. NVDEC's frames
are checked against what the stub wrote and against a CUDA VideoDecoder; the CPU fallback (the
stub's caps refusing the codec, or a 4:2:2 stream torchcodec refuses itself) and the "ffmpeg"
backend (whose hwaccel cannot start on the stub: FFmpeg decodes on the CPU) decode real pixels, so
their device planes are compared with the CPU decoder's RawFrames and their RGB with the CPU
ColorConverter's, within tools/gpu/gpu_tolerances.py's table (the GPU check compares the same on a real
GPU: tools/gpu/check.py's "blocks" rows).
"""
from __future__ import annotations

import os
import pathlib
import sys

import pytest

from torchcodec._cuda import _build_config

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "cuda_stubs"))
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent / "tools"))
from stub_build import HOST_READ, build_decoding_stubs, build_helper, run_python  # noqa: E402
from gpu import gpu_tolerances  # noqa: E402


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    return build_decoding_stubs(tmp_path_factory.mktemp("cuda_blocks"))


@pytest.fixture(scope="module")
def decoding_helpers(stubs):
    """The stubs' directory with tests/cuda_stubs/device_frames.pyx built into it (device frames as
    only a GPU decoder makes them, handed to a FrameUploader)."""
    return build_helper("device_frames", stubs)


PRELUDE = """
import ctypes, gc, json
import numpy as np
import torchcodec
from torchcodec.decoders import (ColorConverter, Demuxer, RawFrame, VideoDecoder, VideoPacketDecoder,
                                 set_cuda_backend)
torchcodec.set_bridge("numpy")
cuda = ctypes.CDLL("libcuda.so.1")
nvcuvid = ctypes.CDLL("libnvcuvid.so.1")
""" + HOST_READ + """
def stub(name, library=cuda):
    return ctypes.c_int.in_dll(library, name).value

def waits():
    return {name: stub("stub_" + name) for name in ("event_syncs", "stream_syncs", "ctx_syncs")}

def decode_all(decoder, demuxer, keep=None):
    frames = []
    for packet in demuxer:
        frames += decoder.decode(packet)
    return frames + decoder.drain()

def fields(frame):
    return {name: getattr(frame, name) for name in ("pixel_format", "bit_depth", "width", "height", "color_space",
                                                    "color_range", "color_primaries",
                                                    "color_transfer_characteristic", "rotation", "device")}

def finish(out):
    gc.collect()
    torchcodec.decoders.set_nvdec_cache_capacity(0)
    gc.collect()
    out["counters"] = {"pushes": stub("stub_pushes"), "pops": stub("stub_pops"), "depth": stub("stub_stack_depth"),
                       "live_bytes": ctypes.c_longlong.in_dll(cuda, "stub_live_bytes").value,
                       "events": stub("stub_events_created") - stub("stub_events_destroyed"),
                       "maps": stub("stub_nvdec_maps", nvcuvid), "unmaps": stub("stub_nvdec_unmaps", nvcuvid),
                       "map_failures": stub("stub_nvdec_map_failures", nvcuvid),
                       "max_mapped": stub("stub_nvdec_max_mapped", nvcuvid),
                       "decoders": stub("stub_nvdec_decoders_created", nvcuvid)
                                   - stub("stub_nvdec_decoders_destroyed", nvcuvid)}
    print(json.dumps(out))
"""


def run(stubs, code: str, **env: str) -> dict:
    return run_python(PRELUDE + code, stubs, **env)


def assert_balanced(counters: dict) -> None:
    assert counters["pushes"] == counters["pops"] > 0 and counters["depth"] == 0
    assert counters["maps"] == counters["unmaps"] and counters["map_failures"] == 0
    assert counters["decoders"] == 0
    assert counters["live_bytes"] == 0, "device memory left allocated"
    assert counters["events"] == 0, "events left undestroyed"


NVDEC_FRAMES = """
path = {path!r}
demuxer = Demuxer(path)
decoder = demuxer.streams[0].make_decoder(device="cuda")
out = {{"type": type(decoder).__name__, "is_packet_decoder": isinstance(decoder, VideoPacketDecoder),
        "device": decoder.device}}
before = waits()
frames = decode_all(decoder, demuxer)
out["waits"] = {{k: v - before[k] for k, v in waits().items()}}
out["max_mapped"] = stub("stub_nvdec_max_mapped", nvcuvid)
cpu_demuxer = Demuxer(path)
cpu = decode_all(cpu_demuxer.streams[0].make_decoder(), cpu_demuxer)
out["pts"] = [f.pts_seconds for f in frames]
out["cpu_pts"] = [f.pts_seconds for f in cpu]
out["durations"] = [f.duration_seconds for f in frames] == [f.duration_seconds for f in cpu]
out["fields"] = fields(frames[0])
out["cpu_fields"] = fields(cpu[0])
out["storage"] = type(frames[0].storage_cuda).__name__
planes = frames[7].planes
out["plane_types"] = [type(p).__name__ for p in planes]
out["plane_shapes"] = [list(p.shape) for p in planes]
out["plane_strides"] = [list(p.strides) for p in planes]
out["inside_storage"] = all(frames[7].storage_cuda.ptr <= p.ptr < frames[7].storage_cuda.ptr + frames[7].storage_cuda.nbytes
                            for p in planes)
tb = {tb}
out["samples"] = [[sorted(set(host(p).ravel().tolist())) for p in f.planes] for f in frames]
out["ticks"] = [round(f.pts_seconds / tb) for f in frames]
del frames, planes, decoder
finish(out)
"""


def test_make_decoder_on_cuda_gives_nvdec_raw_frames_in_device_memory_of_their_own(stubs, media):
    path = media["h264_bframes.mp4"]
    out = run(stubs, NVDEC_FRAMES.format(path=os.fspath(path), tb=1 / 15360))
    assert out["type"] == "NvdecDecoder" and out["is_packet_decoder"] and out["device"] == "cuda:0"
    assert out["pts"] == out["cpu_pts"] and len(out["pts"]) == 90 and out["durations"]
    cpu_fields = dict(out["cpu_fields"], pixel_format="nv12", device="cuda:0")
    assert out["fields"] == cpu_fields, "the surface format; colour fields and rotation as on the CPU"
    assert out["storage"] == "DeviceBuffer"
    assert out["plane_types"] == ["DeviceBuffer"] * 3
    assert out["plane_shapes"] == [[240, 320], [120, 160], [120, 160]]
    assert out["plane_strides"][0][1] == 1 and out["plane_strides"][1][1] == out["plane_strides"][2][1] == 2, \
        "nv12: u and v are interleaved views of one plane"
    assert out["inside_storage"], "the planes view the frame's own storage, without a copy"
    assert out["samples"] == [[[16 + t % 219], [128], [128]] for t in out["ticks"]]
    assert out["waits"] == {"event_syncs": 0, "stream_syncs": 0, "ctx_syncs": 0}, "no host wait while decoding"
    assert out["max_mapped"] <= 2, "each picture is copied and its surface released at once"
    assert_balanced(out["counters"])


HOLD = """
demuxer = Demuxer({path!r})
decoder = demuxer.streams[0].make_decoder(device="cuda")
held = []
before = waits()
packets = iter(demuxer)
while len(held) < 10:
    held += decoder.decode(next(packets))
after = waits()
out = {{"held": len(held), "waits": {{k: after[k] - before[k] for k in after}},
        "max_mapped": stub("stub_nvdec_max_mapped", nvcuvid)}}
more = []
while len(more) < 20:
    more += decoder.decode(next(packets))
tb = {tb}
out["intact"] = all(sorted(set(host(f.planes[0]).ravel().tolist())) == [16 + round(f.pts_seconds / tb) % 219]
                    for f in held)
del held, more, decoder, packets
finish(out)
"""


def test_held_raw_frames_pin_no_nvdec_surface_and_cost_no_host_wait(stubs, media):
    """Ten RawFrames kept alive (NVDEC has 4 output surfaces): no error, no host wait, and each
    frame's samples stay its own while thirty more pictures go through the same surfaces."""
    out = run(stubs, HOLD.format(path=os.fspath(media["h264_bframes.mp4"]), tb=1 / 15360))
    assert out["held"] >= 10
    assert out["waits"] == {"event_syncs": 0, "stream_syncs": 0, "ctx_syncs": 0}
    assert out["max_mapped"] <= 2
    assert out["intact"]
    assert_balanced(out["counters"])


SEEK_RESET = """
path = {path!r}
demuxer = Demuxer(path)
decoder = demuxer.streams[0].make_decoder(device="cuda")
first = []
packets = iter(demuxer)
while len(first) < 5:
    first += decoder.decode(next(packets))
demuxer.seek({seconds})
fresh = next(iter(demuxer))
out = {{}}
try:
    decoder.decode(fresh)
except RuntimeError as error:
    out["stale"] = str(error)
decoder.reset()
after = decoder.decode(fresh) + decode_all(decoder, demuxer)
cpu_demuxer = Demuxer(path)
cpu_decoder = cpu_demuxer.streams[0].make_decoder()
cpu_demuxer.seek({seconds})
cpu_after = decode_all(cpu_decoder, cpu_demuxer)
out["after"] = [f.pts_seconds for f in after]
out["cpu_after"] = [f.pts_seconds for f in cpu_after]
try:
    decoder.decode(next(iter(demuxer)))
except (RuntimeError, StopIteration) as error:
    out["after_drain"] = type(error).__name__ + ": " + str(error)
demuxer.seek(0)
decoder.reset()
again = decode_all(decoder, demuxer)
out["again"] = [f.pts_seconds for f in again][:5]
out["first"] = [f.pts_seconds for f in first][:5]
tb = {tb}
out["samples_ok"] = all(sorted(set(host(f.planes[0]).ravel().tolist())) == [16 + round(f.pts_seconds / tb) % 219]
                        for f in after)
del first, after, again, decoder
finish(out)
"""


def test_seek_and_reset_restart_the_nvdec_decoder_at_the_key_frame(stubs, media):
    out = run(stubs, SEEK_RESET.format(path=os.fspath(media["h264_bframes.mp4"]), seconds=2.2, tb=1 / 15360))
    assert "Call reset() on every decoder fed by that demuxer after a seek" in out["stale"]
    assert out["after"] == out["cpu_after"] and out["after"][0] <= 2.2 < out["after"][-1]
    assert out["samples_ok"]
    assert out["again"] == out["first"]
    assert_balanced(out["counters"])


FALLBACK_PLANES = """
path = {path!r}
with set_cuda_backend({backend!r}):
    demuxer = Demuxer(path)
    decoder = demuxer.streams[0].make_decoder(device="cuda")
frames = decode_all(decoder, demuxer)[:{count}]
cpu_demuxer = Demuxer(path)
cpu = decode_all(cpu_demuxer.streams[0].make_decoder(), cpu_demuxer)[:{count}]
out = {{"type": type(decoder).__name__, "device": decoder.device, "fields": fields(frames[0]),
        "cpu_fields": fields(cpu[0]), "pts": [f.pts_seconds for f in frames] == [f.pts_seconds for f in cpu],
        "plane_dtypes": [p.dtype for p in frames[0].planes], "storage": type(frames[0].storage_cuda).__name__}}
def planes_equal(shift):
    for frame, reference in zip(frames, cpu):
        for got, want in zip(frame.planes, reference.planes):
            want = np.asarray(want).astype(np.uint16) << shift if shift else np.asarray(want)
            if not np.array_equal(host(got), want):
                return False
    return True
out["planes_equal"] = planes_equal({shift})
del frames, decoder
finish(out)
"""


@pytest.mark.parametrize("name, env, surface, depth, shift", [
    ("h264_bframes.mp4", {"STUB_NVDEC_UNSUPPORTED": "h264"}, "nv12", 8, 0),
    ("h264_10bit.mp4", {"STUB_NVDEC_UNSUPPORTED": "h264"}, "p010le", 10, 6),
    ("h264_yuv444.mp4", {"STUB_NVDEC_UNSUPPORTED": "h264"}, "yuv444p", 8, 0),
    ("h264_yuv422.mp4", {}, "yuv422p", 8, 0),
])
def test_cpu_fallback_frames_are_uploaded_into_a_surface_format(stubs, media, name, env, surface, depth, shift):
    """A stream NVDEC does not take is decoded on the CPU and each frame uploaded: 4:2:0 as nv12 /
    p010le (chroma interleaved, deep samples MSB-aligned), 4:4:4 as yuv444p; 4:2:2, which a surface
    format cannot hold without changing samples, as it is. Every sample is the CPU decoder's."""
    out = run(stubs, FALLBACK_PLANES.format(path=os.fspath(media[name]), backend="nvdec", count=6, shift=shift), **env)
    assert out["type"] == "VideoPacketDecoder" and out["device"] == "cuda:0"
    assert out["fields"] == dict(out["cpu_fields"], pixel_format=surface, bit_depth=depth, device="cuda:0")
    assert out["plane_dtypes"] == ["uint8" if depth == 8 else "uint16"] * 3
    assert out["pts"] and out["planes_equal"]
    assert_balanced(out["counters"])


def test_the_ffmpeg_backends_frames_are_uploaded_too(stubs, media):
    """The stub cannot start FFmpeg's hwaccel, so FFmpeg decodes on the CPU: the frames still come
    out on the device, as the CPU decoder's samples."""
    out = run(stubs, FALLBACK_PLANES.format(path=os.fspath(media["h264_bframes.mp4"]), backend="ffmpeg", count=4,
                                            shift=0))
    assert out["type"] == "VideoPacketDecoder" and out["device"] == "cuda:0"
    assert out["fields"]["pixel_format"] == "nv12" and out["planes_equal"]
    assert_balanced(out["counters"])


CONVERT = """
path = {path!r}
dtype = {dtype!r}
demuxer = Demuxer(path)
decoder = demuxer.streams[0].make_decoder(device="cuda")
raw = decode_all(decoder, demuxer)[:{count}]
converter = ColorConverter(device="cuda", output_dtype=dtype)
before = waits()
converted = [converter.convert(frame) for frame in raw]
out = {{"waits": {{k: v - before[k] for k, v in waits().items()}}, "type": type(converted[0].data).__name__,
        "shape": list(converted[0].data.shape), "pts": [f.pts_seconds for f in converted] == [f.pts_seconds for f in raw]}}
gpu = np.stack([host(f.data) for f in converted])
whole = VideoDecoder(path, device="cuda", output_dtype=dtype).get_frames_in_range(0, len(raw))
out["equals_video_decoder"] = bool(np.array_equal(gpu, host(whole.data)))
cpu_demuxer = Demuxer(path)
cpu_converter = ColorConverter(output_dtype=dtype)
cpu = np.stack([np.asarray(cpu_converter.convert(f).data)
                for f in decode_all(cpu_demuxer.streams[0].make_decoder(), cpu_demuxer)[:len(raw)]])
difference = np.abs(gpu.astype(np.float64) - cpu.astype(np.float64))
out["max_abs"], out["mean_abs"] = float(difference.max()), float(difference.mean())
out["cpu_shape"] = list(cpu.shape[1:])
del raw, converted, decoder, whole, converter
finish(out)
"""


@pytest.mark.parametrize("name, env, dtype", [
    ("h264_bframes.mp4", {"STUB_NVDEC_UNSUPPORTED": "h264"}, "uint8"),
    ("h264_bframes.mp4", {"STUB_NVDEC_UNSUPPORTED": "h264"}, "float32"),
    ("h264_rotate90.mp4", {"STUB_NVDEC_UNSUPPORTED": "h264"}, "uint8"),
    ("h264_10bit.mp4", {"STUB_NVDEC_UNSUPPORTED": "h264"}, "uint8"),
    ("h264_bt709_fullrange_yuv444.mp4", {"STUB_NVDEC_UNSUPPORTED": "h264"}, "uint8"),
    ("h264_yuv422.mp4", {}, "uint8"),
    ("hevc_bt2020_10bit.mp4", {"STUB_NVDEC_UNSUPPORTED": "hevc"}, "uint8"),
])
def test_color_converter_on_cuda_gives_the_cuda_video_decoders_frames(stubs, media, name, env, dtype):
    """ColorConverter(device="cuda") turns device RawFrames into RGB (3, H, W) device arrays, rotation
    applied, equal to what a CUDA VideoDecoder gives for the same frames, and as close to the CPU
    ColorConverter's as tools/gpu/gpu_tolerances.py allows the GPU to be (float32: docs/cuda_kernels.md's
    bound); no host wait (except for a
    format the kernels cannot read, 4:2:2, which goes back to the Scaler)."""
    out = run(stubs, CONVERT.format(path=os.fspath(media[name]), dtype=dtype, count=5), **env)
    assert out["type"] == "DeviceBuffer" and out["pts"]
    assert out["shape"] == out["cpu_shape"]
    assert out["equals_video_decoder"]
    if dtype == "uint8":
        tolerance = gpu_tolerances.tolerance(name)
        assert out["max_abs"] <= tolerance.max_abs and out["mean_abs"] <= tolerance.mean_abs
    else:       # docs/cuda_kernels.md: the CPU's float32 is swscale's RGB48 / 65535 (8-bit 4:2:0: max 0.012)
        assert out["max_abs"] <= 0.015 and out["mean_abs"] <= 0.005
    if name != "h264_yuv422.mp4":
        assert out["waits"] == {"event_syncs": 0, "stream_syncs": 0, "ctx_syncs": 0}
    assert_balanced(out["counters"])


def test_color_converter_on_cuda_converts_nvdec_frames_as_the_video_decoder_does(stubs, media):
    out = run(stubs, CONVERT.format(path=os.fspath(media["h264_bframes.mp4"]), dtype="uint8", count=8))
    assert out["equals_video_decoder"] and out["shape"] == [3, 240, 320]
    assert out["waits"] == {"event_syncs": 0, "stream_syncs": 0, "ctx_syncs": 0}
    assert_balanced(out["counters"])


MISMATCH = """
path = {path!r}
cpu_demuxer = Demuxer(path)
cpu_frame = decode_all(cpu_demuxer.streams[0].make_decoder(), cpu_demuxer)[0]
demuxer = Demuxer(path)
cuda_frame = decode_all(demuxer.streams[0].make_decoder(device="cuda:0"), demuxer)[0]
out = {{}}
for name, converter, frame in (("cpu_on_cuda", ColorConverter(device="cuda"), cpu_frame),
                               ("cuda_on_cpu", ColorConverter(device="cpu"), cuda_frame),
                               ("cuda0_on_cuda1", ColorConverter(device="cuda:1"), cuda_frame)):
    try:
        converter.convert(frame)
        out[name] = "converted"
    except RuntimeError as error:
        out[name] = str(error)
try:
    cuda_frame.host_planes()
except RuntimeError as error:
    out["host_planes"] = str(error)
del cuda_frame, converter, frame
finish(out)
"""


def test_a_frame_on_another_device_is_refused(stubs, media):
    out = run(stubs, MISMATCH.format(path=os.fspath(media["h264_bframes.mp4"])), STUB_DEVICE_COUNT="2")
    assert out["cpu_on_cuda"].startswith("the frame is on cpu and this ColorConverter converts on cuda:0")
    assert out["cuda_on_cpu"].startswith("the frame is on cuda:0 and this ColorConverter converts on cpu")
    assert out["cuda0_on_cuda1"].startswith("the frame is on cuda:0 and this ColorConverter converts on cuda:1")
    assert "samples are on cuda:0" in out["host_planes"]
    assert_balanced(out["counters"])


# A stand-in for cupy over host memory (tests/cuda_stubs/stand_ins/cupy.py), which records what
# torchcodec asks of it.
STAND_INS = str(pathlib.Path(__file__).resolve().parent / "cuda_stubs" / "stand_ins")

CUPY_BLOCKS = """
import sys
sys.path.insert(0, {fake!r})
import cupy
torchcodec.set_bridge("cupy")
demuxer = Demuxer({path!r})
decoder = demuxer.streams[0].make_decoder(device="cuda")
frames = decode_all(decoder, demuxer)[:3]
y, u, v = frames[1].planes
tb = {tb}
out = {{"storage": type(frames[1].storage_cuda).__module__, "planes": [type(p).__module__ for p in (y, u, v)],
        "calls": [list(call[:3]) for call in cupy.calls if call[0] == "empty"][:1], "views": [list(call[1:]) for call in cupy.calls if call[0] == "view"][:3],
        "base": frames[1].storage_cuda.data.ptr,
        "luma": sorted(set(y.get().ravel().tolist())), "chroma": sorted(set(u.get().ravel().tolist()) | set(v.get().ravel().tolist())),
        "tick": round(frames[1].pts_seconds / tb)}}
rgb = ColorConverter(device="cuda").convert(frames[1]).data
out["rgb_shape"] = list(rgb.shape)
out["rgb"] = sorted(set(np.asarray(rgb).ravel().tolist()))       # the stand-in's transpose: a numpy view
torchcodec.set_bridge("numpy")
sys.path.remove({fake!r})
del sys.modules["cupy"]                  # torchcodec's own buffers again
out["expected_rgb"] = sorted(set(host(ColorConverter(device="cuda").convert(frames[1]).data).ravel().tolist()))
del frames, y, u, v, decoder, rgb
finish(out)
"""


def test_with_the_cupy_bridge_storage_planes_and_rgb_are_cupy_arrays(stubs, media):
    """cupy (a stand-in over the stub's host "device" memory): the frame's storage from cupy.empty
    (uint8), its planes cupy arrays over that memory at the planes' offsets and strides, and the
    converter's RGB a cupy array viewed as (3, H, W)."""
    out = run(stubs, CUPY_BLOCKS.format(fake=STAND_INS, path=os.fspath(media["h264_bframes.mp4"]), tb=1 / 15360))
    assert out["storage"] == "cupy" and out["planes"] == ["cupy"] * 3
    assert out["calls"][0][0] == "empty" and out["calls"][0][2] == "uint8"
    (luma_shape, _, luma_ptr, luma_strides), (u_shape, _, u_ptr, u_strides), (_, _, v_ptr, _) = out["views"]
    assert luma_shape == [240, 320] and luma_ptr == out["base"] and luma_strides[1] == 1
    assert u_shape == [120, 160] and u_strides[1] == 2 and v_ptr == u_ptr + 1, "nv12: Cb and Cr interleaved"
    assert out["luma"] == [16 + out["tick"] % 219] and out["chroma"] == [128]
    assert out["rgb_shape"] == [3, 240, 320] and out["rgb"] == out["expected_rgb"] and len(out["rgb"]) == 1
    assert_balanced(out["counters"])


UPLOAD_ORDER = """
import sys
sys.path.insert(0, ".")
sys.path.insert(0, {fake!r})
import cupy, device_frames
from torchcodec._cuda import _driver
from torchcodec._cuda._device_frame import FrameUploader
torchcodec.set_bridge("cupy")                       # the stand-in's current stream: 0x5151
cuda.stub_call_log.restype = ctypes.c_char_p
context = _driver.load_driver().context(0)
uploader = FrameUploader(context)
primary = ctypes.c_void_p()
cuda.cuDevicePrimaryCtxRetain(ctypes.byref(primary), 0)

def device(array):
    # the array's bytes in memory from the stub's cuMemAlloc (host memory underneath)
    pointer = ctypes.c_ulonglong()
    cuda.cuCtxPushCurrent_v2(primary)
    cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(array.nbytes))
    cuda.cuCtxPopCurrent_v2(None)
    ctypes.memmove(pointer.value, array.ctypes.data, array.nbytes)
    return pointer.value

def ordering():
    return [line for line in cuda.stub_call_log().decode().splitlines()
            if line.startswith(("cuEventRecord", "cuStreamWaitEvent", "cuMemcpy2DAsync"))]

rng = np.random.default_rng(1)
luma = rng.integers(0, 256, (32, 64), dtype=np.uint8)
cbcr = rng.integers(0, 256, (16, 64), dtype=np.uint8)
cuda.stub_clear_log()
raw = device_frames.upload_device_frame(uploader, "nv12", [device(luma), device(cbcr)], [64, 64], 64, 32, hwaccel=True)
out = {{"hw_calls": ordering(), "hw_format": raw.pixel_format, "hw_size": [raw.width, raw.height],
        "hw_equal": bool(np.array_equal(raw.planes[0].get(), luma) and np.array_equal(raw.planes[1].get(), cbcr[:, 0::2])
                         and np.array_equal(raw.planes[2].get(), cbcr[:, 1::2]))}}
# NVDEC: a P016 surface of 10-bit content, 80x40 coded, the 64x32 display area at (8, 4)
surface_luma = rng.integers(0, 1024, (40, 80), dtype=np.uint16) << 6
surface_cbcr = rng.integers(0, 1024, (20, 80), dtype=np.uint16) << 6
ready, done = ctypes.c_void_p(), ctypes.c_void_p()
cuda.cuCtxPushCurrent_v2(primary)
cuda.cuEventCreate(ctypes.byref(ready), 0)
cuda.cuEventCreate(ctypes.byref(done), 0)
cuda.cuEventRecord(ready, ctypes.c_void_p(0x6000))
cuda.cuEventRecord(done, ctypes.c_void_p(0x6000))
cuda.cuCtxPopCurrent_v2(None)
sync = device_frames.Sync(ready.value, done.value, bits=10)
cuda.stub_clear_log()
raw2 = device_frames.upload_device_frame(uploader, "p016le", [device(surface_luma), device(surface_cbcr)], [160, 160],
                                         64, 32, crop_left=8, crop_top=4, sync=sync)
calls = cuda.stub_call_log().decode().splitlines()
out["nvdec_calls"] = [line.split("(")[0] + ("(ready)" if hex(ready.value) in line else "(done)" if hex(done.value) in line
                      else "") + (" 0x5151" if "0x5151" in line else "") for line in calls
                      if line.startswith(("cuEventRecord", "cuStreamWaitEvent", "cuMemcpy2DAsync"))]
out["readers"], out["done_stream"] = sync.readers, hex(sync.done_stream)
out["nvdec_format"], out["bits"] = raw2.pixel_format, raw2.bit_depth
y2, u2, v2 = (plane.get() for plane in raw2.planes)
out["nvdec_equal"] = bool(np.array_equal(y2, surface_luma[4:36, 8:72]) and np.array_equal(u2, surface_cbcr[2:18, 8:72:2])
                          and np.array_equal(v2, surface_cbcr[2:18, 9:73:2]))
del raw, raw2, uploader
torchcodec.set_bridge("numpy")
finish(out)
"""


def test_the_copy_is_issued_between_driver_waits_and_records_on_the_output_stream(stubs, decoding_helpers):
    """The driver calls that order the copy into a RawFrame's own memory, in the order the stub
    driver logs them (the stub runs everything at once, so it shows the calls and their streams,
    not the device's ordering, which only a GPU run exercises). The copies are enqueued on the
    output library's current stream (here a stand-in cupy's, 0x5151). An FFmpeg hwaccel frame:
    after a wait for an event recorded on FFmpeg's legacy stream, and before an event that stream
    waits for. An NVDEC frame: after a wait for the map's `ready`, with `done` recorded after the
    copy (the slot is unmapped once it has passed), its display area cropped out of the coded
    surface; a P016 surface of 10-bit content becomes p010le. No host wait in either."""
    out = run(decoding_helpers, UPLOAD_ORDER.format(fake=STAND_INS))
    kinds = [line.split("(")[0] for line in out["hw_calls"]]
    assert kinds == ["cuEventRecord", "cuStreamWaitEvent", "cuMemcpy2DAsync", "cuMemcpy2DAsync", "cuEventRecord",
                     "cuStreamWaitEvent", "cuEventRecord", "cuEventRecord"]
    assert "stream=0x1)" in out["hw_calls"][0] and "stream=0x5151" in out["hw_calls"][1]
    assert all("stream=0x5151)" in line for line in out["hw_calls"][2:5])
    assert "stream=0x1," in out["hw_calls"][5], "FFmpeg's legacy stream waits for the copy"
    assert out["hw_format"] == "nv12" and out["hw_size"] == [64, 32] and out["hw_equal"]
    assert out["nvdec_calls"] == ["cuStreamWaitEvent(ready) 0x5151", "cuMemcpy2DAsync 0x5151", "cuMemcpy2DAsync 0x5151",
                                  "cuEventRecord(done) 0x5151", "cuEventRecord 0x5151", "cuEventRecord 0x5151"]
    assert out["readers"] == 1 and out["done_stream"] == "0x5151"
    assert (out["nvdec_format"], out["bits"]) == ("p010le", 10) and out["nvdec_equal"]
    assert out["counters"]["pushes"] == out["counters"]["pops"] and out["counters"]["depth"] == 0


# ---- on a GPU (the cuda marker; tools/gpu_check.sh's "blocks" step runs them) --------------------

@pytest.fixture(scope="module")
def gpu():
    """A skip without a usable NVIDIA GPU (with NVDEC: its absence fails, as in test_nvdec.py)."""
    import torchcodec
    if not (_build_config.CUDA_DRIVER and _build_config.CUDA_KERNELS) or not torchcodec.cuda_available():
        pytest.skip("no usable NVIDIA GPU")
    from torchcodec._cuda import _driver
    try:
        _driver.load_nvcuvid()
    except _driver.CudaUnavailableError as error:
        pytest.fail(f"a GPU without NVDEC: {error}")


def device_to_numpy(array):
    """A device array of any library (torch, cupy, or a strided DeviceBuffer) copied to the host."""
    module = type(array).__module__.split(".")[0]
    if module == "torch":
        import torch
        if array.dtype == torch.uint16:
            return array.view(torch.int16).cpu().numpy().view("<u2")
        return array.cpu().numpy()
    if module == "cupy":
        import cupy
        return cupy.asnumpy(array)
    import numpy as np
    from nvdec_frames import DeviceMemory
    memory = DeviceMemory()
    try:
        itemsize = array.itemsize
        rows, columns = array.shape[0], array.shape[1] if len(array.shape) > 1 else 1
        row_stride, step = array.strides[0], array.strides[1] if len(array.shape) > 1 else itemsize
        raw = memory.plane(array.ptr, row_stride, rows, (columns - 1) * step + itemsize)
        return np.lib.stride_tricks.as_strided(raw.view(f"<u{itemsize}"), (rows, columns), (row_stride, step)).copy()
    finally:
        memory.close()


def rgb_to_numpy(data):
    """A (3, H, W) RGB view of any library on the device as an (H, W, 3) numpy array."""
    if type(data).__module__.split(".")[0] in ("torch", "cupy"):
        return device_to_numpy(data).transpose(1, 2, 0)
    height, width = data.shape[1], data.shape[2]
    return device_to_numpy(data.permuted((1, 2, 0)).reshape((height, width * 3))).reshape(height, width, 3)


@pytest.mark.cuda
@pytest.mark.parametrize("bridge", ["torch", "cupy", "numpy"])
def test_on_the_gpu_block_frames_live_in_the_bridges_library_and_convert_as_the_video_decoder(gpu, media, bridge):
    """90 RawFrames of an NVDEC stream held at once (4 output surfaces), their storage and planes
    in the bridge's library, luma equal to the CPU decoder's, and ColorConverter(cuda) equal to the
    CUDA VideoDecoder's frames, read after the library's current stream (no synchronisation of ours)."""
    import importlib.util

    import numpy as np
    import torchcodec
    from torchcodec.decoders import ColorConverter, Demuxer, VideoDecoder
    if bridge != "numpy" and importlib.util.find_spec(bridge) is None:
        pytest.skip(f"{bridge} is not installed")
    path = media["h264_bframes.mp4"]
    cpu_demuxer = Demuxer(path)
    cpu_decoder = cpu_demuxer.streams[0].make_decoder()
    cpu = [frame for packet in cpu_demuxer for frame in cpu_decoder.decode(packet)] + cpu_decoder.drain()
    with torchcodec.bridge(bridge):
        demuxer = Demuxer(path)
        decoder = demuxer.streams[0].make_decoder(device="cuda")
        assert type(decoder).__name__ == "NvdecDecoder"
        frames = [frame for packet in demuxer for frame in decoder.decode(packet)] + decoder.drain()
        assert [f.pts_seconds for f in frames] == [f.pts_seconds for f in cpu]
        assert {f.pixel_format for f in frames} == {"nv12"} and {f.device for f in frames} == {"cuda:0"}
        kind = {"torch": "Tensor", "cupy": "ndarray", "numpy": "DeviceBuffer" if importlib.util.find_spec("cupy") is None
                else "ndarray"}[bridge]
        assert type(frames[0].storage_cuda).__name__ == kind
        for index in (0, 45, 89):
            np.testing.assert_array_equal(device_to_numpy(frames[index].planes[0]), np.asarray(cpu[index].planes[0]))
        converter = ColorConverter(device="cuda")
        converted = [rgb_to_numpy(converter.convert(frames[k]).data) for k in (3, 60)]
        expected = VideoDecoder(path, device="cuda").get_frames_at([3, 60]).data
        for k, got in enumerate(converted):
            np.testing.assert_array_equal(got, rgb_to_numpy(expected[k]))
