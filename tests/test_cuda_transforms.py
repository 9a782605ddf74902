"""Decode-time transforms on CUDA (kernels/resize.cu through torchcodec._cuda._transforms) give the
CPU path's pixels, without a GPU: the stub libcuda.so.1 runs the real kernels on the CPU
(tests/cuda_stubs/kernel_emulation.cpp).

Against torchcodec's CPU Scaler with the same plan: random frames of every layout the converter
reads (host frames of 8- to 12-bit 4:2:0 and 4:4:4, NVDEC's NV12, P016 and YUV444 surfaces with a
display area inside them, FFmpeg's hwaccel P010), through plans made by torchcodec.transforms from
Resize, CenterCrop and RandomCrop chains (shrinking past half the width, growing, odd crops, a crop
after a resize, two resizes, a lone Resize on widths of 32), uint8 and float32, the four
rotations, several matrices and ranges: all equal. 1080p NVDEC frames to 224 x 224 too. Then the
public API: VideoDecoder(device="cuda", transforms=...) and the samplers equal to the CPU decoder's
frames on real streams (the "ffmpeg" backend, whose frames the stub leaves to the CPU decoder, so
that they hold real pixels), NVDEC's stub surfaces against the numpy model, ColorConverter(device=
"cuda", transforms=...) in a blocks pipeline, and what the stub's call log shows: one launch per
stage, the filters uploaded once, no full-size RGB frame in device memory, nothing left allocated.
"""
from __future__ import annotations

import json
import os
import pathlib
import sys

import numpy as np
import pytest

import test_cuda_exact
import test_cuda_stub_decoding
from test_cuda_stub_decoding import assert_balanced

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "cuda_stubs"))
from stub_build import HOST_READ, build_converting_stub, build_decoding_stubs, run_python  # noqa: E402

TESTS = pathlib.Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    return build_converting_stub(tmp_path_factory.mktemp("cuda_transforms"))


# Transform chains for a frame of h x w pixels (after rotation): each case's plan is make_plan's.
CHAINS = """
from torchcodec.transforms import CenterCrop, RandomCrop, Resize
from torchcodec.transforms._decoder_transforms import make_plan

CHAINS = [
    lambda h, w: [Resize((max(1, h // 3), max(1, w // 3)))],                   # chroma of pixel pairs
    lambda h, w: [Resize((2 * h + 1, w + 7))],                                # 2-tap rows, chroma per pixel
    lambda h, w: [CenterCrop((h - 5, w - 3))],                                # a crop alone
    lambda h, w: [RandomCrop((h // 2 + 1, w // 2 + 1), generator=7), Resize((9, 11))],
    lambda h, w: [Resize((h + 10, w - 4)), CenterCrop((h // 2, w // 2 + 1))],   # the crop: a window
    lambda h, w: [Resize((h // 2, w // 2)), Resize((h, w + 1))],              # an image between stages
    lambda h, w: [Resize((16, 32))],                                          # alone: BT.709 on widths of 32
]

def plan_for(chain, width, height):
    applied, stages, (out_h, out_w) = make_plan(CHAINS[chain](height, width), (height, width))
    single = len(applied) == 1 and isinstance(applied[0], Resize)
    scaler.set_stages(stages, single)
    converter.set_stages(stages, single)
    return stages, (out_w, out_h)
"""

COMPARE = """
def compare_plans(layout, pix_fmt, bits, sizes, combinations, control=False):
    '''Every size x chain x dtype, rotations and (matrix, range) in turn: the cases that differ.
    The control gives the kernels the frame with one chroma sample one level off.'''
    subsampled = "444" not in pix_fmt
    rng = np.random.default_rng(zlib.crc32((layout + pix_fmt + "transforms").encode()))
    failures, cases, skipped = [], 0, 0
    for s, (width, height) in enumerate(sizes):
        for chain in range(len(CHAINS)):
            for as_float in (False, True):
                rotation = (0, 90, 180, 270)[(s + chain + as_float) % 4] if chain != len(CHAINS) - 1 else 0
                matrix, full = combinations[(s + chain) % len(combinations)]
                ow, oh = (height, width) if rotation in (90, 270) else (width, height)
                planar = layout != "host" or pix_fmt not in ("nv12", "p010le")
                if as_float and bits == 8 and subsampled and planar and ow % 2 and oh % 2 == 0:
                    skipped += 1        # swscale leaves the CPU's last column unwritten (test_cuda_exact.py)
                    continue
                stages, out_size = plan_for(chain, ow, oh)
                planes = random_planes(rng, width, height, bits, subsampled)
                want = on_cpu(pix_fmt, planes, width, height, matrix, full, as_float, rotation, out_size)
                if control:
                    planes[1] = planes[1].copy()
                    planes[1][planes[1].shape[0] // 2, planes[1].shape[1] // 2] ^= 1
                crop = ((s % 3) * 2, (chain % 3) * 2)
                got = on_gpu(layout, pix_fmt, planes, bits, width, height, matrix, full, as_float, rotation, crop,
                             out_size)
                cases += 1
                difference = float(np.abs(want.astype(np.float64) - got.astype(np.float64)).max())
                if difference:
                    failures.append([width, height, chain, matrix, full, as_float, rotation, difference])
    return {"cases": cases, "skipped": skipped, "failures": failures[:20], "failed": len(failures)}
"""

SIZES = [(64, 48), (33, 18), (34, 17), (45, 37)]
COMBINATIONS = [(1, False), (5, True), (9, False), (2, True), (0, False)]


def run(stub, code: str) -> dict:
    return run_python(f"TESTS = {str(TESTS)!r}\n" + test_cuda_exact.PROLOGUE + CHAINS + COMPARE + code, stub)


@pytest.mark.parametrize("layout, pix_fmt, bits", test_cuda_exact.LAYOUTS,
                         ids=[f"{a}-{b}" for a, b, _ in test_cuda_exact.LAYOUTS])
def test_transforms_give_the_cpu_paths_pixels_on_random_frames(stub, layout, pix_fmt, bits):
    out = run(stub, f"print(json.dumps(compare_plans({layout!r}, {pix_fmt!r}, {bits}, {SIZES!r}, "
                    f"{COMBINATIONS!r})))")
    assert out["cases"] + out["skipped"] == len(SIZES) * 7 * 2 and out["cases"] >= 48
    assert out["failures"] == [], out["failures"]


def test_the_comparison_sees_one_chroma_sample_one_level_off(stub):
    """The control: with one chroma sample changed by one level, the float32 cases (RGB48 resolves
    it; a resize spreads it over several output pixels) must differ."""
    out = run(stub, """
print(json.dumps(compare_plans("p016", "yuv420p10le", 10, [(64, 48)], [(1, False)], control=True)))
""")
    assert out["cases"] == 14
    float_failures = [f for f in out["failures"] if f[5]]
    assert len(float_failures) == 7, out["failures"]


def test_1080p_nvdec_frames_resized_to_224_give_the_cpu_paths_pixels(stub):
    """The training case: 1080p NV12 and 10-bit P016 surfaces to 224 x 224 (a lone Resize, and
    Resize(256) + CenterCrop(224)), uint8 and float32."""
    out = run(stub, """
rng = np.random.default_rng(1080)
failures, cases = [], 0
for layout, pix_fmt, bits in (("nv12", "yuv420p", 8), ("p016", "yuv420p10le", 10)):
    for transforms in ([Resize((224, 224))], [Resize((256, 256)), CenterCrop((224, 224))]):
        for as_float in (False, True):
            applied, stages, _ = make_plan(transforms, (1080, 1920))
            single = len(applied) == 1
            scaler.set_stages(stages, single)
            converter.set_stages(stages, single)
            planes = random_planes(rng, 1920, 1080, bits, True)
            want = on_cpu(pix_fmt, planes, 1920, 1080, 1, False, as_float, 0, (224, 224))
            got = on_gpu(layout, pix_fmt, planes, bits, 1920, 1080, 1, False, as_float, 0, (0, 0), (224, 224))
            cases += 1
            difference = float(np.abs(want.astype(np.float64) - got.astype(np.float64)).max())
            if difference:
                failures.append([layout, len(transforms), as_float, difference])
print(json.dumps({"cases": cases, "failures": failures}))
""")
    assert out["cases"] == 8 and out["failures"] == []


def test_a_plan_that_does_not_fit_the_frame_is_refused(stub):
    """A stream that changes size under a plan made for the first one: RuntimeError, as the CPU's."""
    out = run(stub, """
out = {}
stages, _ = plan_for(2, 64, 48)
planes = random_planes(np.random.default_rng(0), 32, 24, 8, True)
for name, impl in (("cpu", scaler), ("gpu", converter)):
    try:
        on_cpu("yuv420p", planes, 32, 24, 1, False, False, 0, (61, 43)) if name == "cpu" else \\
            on_gpu("host", "yuv420p", planes, 8, 32, 24, 1, False, False, 0, (0, 0), (61, 43))
        out[name] = None
    except RuntimeError as error:
        out[name] = str(error)
print(json.dumps(out))
""")
    assert out["gpu"] is not None and "cannot crop 61x43 at (2, 2) from a 32x24 frame" in out["gpu"]
    assert out["cpu"] is not None and "cannot crop 61x43" in out["cpu"]


# ---- the public API, end to end over the stub NVDEC --------------------------------------------

@pytest.fixture(scope="module")
def stubs(tmp_path_factory, media):
    return build_decoding_stubs(tmp_path_factory.mktemp("cuda_transforms_decoding"))


# test_cuda_stub_decoding.py's prelude (the numpy bridge, host(), counters(), finish()), and more.
PRELUDE = test_cuda_stub_decoding.PRELUDE + """
import sys
from torchcodec.decoders import ColorConverter, Demuxer
from torchcodec.samplers import clips_at_random_indices, clips_at_regular_timestamps
from torchcodec.transforms import CenterCrop, RandomCrop, Resize
cuda.stub_call_log.restype = ctypes.c_char_p
sys.path.insert(0, TESTS)

def log():
    return cuda.stub_call_log().decode().splitlines()

def difference(a, b):
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())
"""


def run_decoding(stubs, code: str, **env: str) -> dict:
    return run_python(f"TESTS = {str(TESTS)!r}\n" + PRELUDE + code, stubs, **env)


DECODER_METHODS = """
path, transforms, dtype = {path!r}, {transforms}, {dtype!r}
cpu = VideoDecoder(path, transforms=transforms, output_dtype=dtype, dimension_order="NHWC")
with set_cuda_backend("ffmpeg"):
    gpu = VideoDecoder(path, device="cuda", transforms=transforms, output_dtype=dtype, dimension_order="NHWC")
out = {{"shape": list(host(gpu[0]).shape), "cpu_shape": list(cpu[0].shape), "fallback": bool(gpu.cpu_fallback)}}
n = len(cpu)
indices = [n - 1, 0, 3, 3, n // 2]
out["at"] = difference(host(gpu.get_frames_at(indices).data), cpu.get_frames_at(indices).data)
out["range"] = difference(host(gpu.get_frames_in_range(2, 9, 3).data), cpu.get_frames_in_range(2, 9, 3).data)
out["played"] = difference(host(gpu.get_frames_played_at([0.1, 1.0]).data), cpu.get_frames_played_at([0.1, 1.0]).data)
out["iterated"] = max(difference(host(g), c) for g, c, _ in zip(gpu, cpu, range(4)))
gpu_clips = clips_at_random_indices(gpu, num_clips=3, num_frames_per_clip=2, generator=5)
cpu_clips = clips_at_random_indices(cpu, num_clips=3, num_frames_per_clip=2, generator=5)
out["random_clips"] = difference(host(gpu_clips.data), cpu_clips.data)
out["clip_pts"] = bool(np.array_equal(gpu_clips.pts_seconds, cpu_clips.pts_seconds))
gpu_clips = clips_at_regular_timestamps(gpu, seconds_between_clip_starts=0.7, num_frames_per_clip=2)
cpu_clips = clips_at_regular_timestamps(cpu, seconds_between_clip_starts=0.7, num_frames_per_clip=2)
out["regular_clips"] = difference(host(gpu_clips.data), cpu_clips.data)
del gpu, gpu_clips
finish(out)
"""

DECODER_CASES = [
    ("h264_bframes.mp4", "[Resize((120, 160))]", "uint8"),
    ("h264_bframes.mp4", "[Resize((200, 300)), CenterCrop((101, 151)), Resize((64, 64))]", "uint8"),
    ("h264_bframes.mp4", "[RandomCrop((77, 93), generator=3), Resize((50, 61))]", "float32"),
    ("h264_rotate90.mp4", "[CenterCrop((200, 150)), Resize((81, 83))]", "uint8"),
    ("h264_yuv444_161x121.mp4", "[Resize((60, 80))]", "uint8"),
    ("vp9_161x121.webm", "[Resize((120, 161)), CenterCrop((60, 81)), Resize((30, 41))]", "uint8"),
    ("hevc_10bit.mp4", "[Resize((90, 64))]", "float32"),
    ("hevc_10bit.mp4", "[CenterCrop((64, 64))]", "uint8"),
    ("h264_yuv422.mp4", "[Resize((100, 120)), CenterCrop((50, 61))]", "uint8"),     # the Scaler's way, uploaded
]


@pytest.mark.parametrize("name, transforms, dtype", DECODER_CASES, ids=[f"{n}-{i}" for i, (n, _, _) in
                                                                        enumerate(DECODER_CASES)])
def test_cuda_video_decoder_and_samplers_give_the_cpu_decoders_transformed_frames(stubs, media, name, transforms,
                                                                                   dtype):
    """Every method and the samplers, through the kernels (the stub leaves decoding to the CPU on
    the "ffmpeg" backend: real pixels, uploaded), equal to the CPU decoder with the same transforms."""
    out = run_decoding(stubs, DECODER_METHODS.format(path=os.fspath(media[name]), transforms=transforms, dtype=dtype))
    assert out["fallback"] and out["shape"] == out["cpu_shape"]
    for key in ("at", "range", "played", "iterated", "random_clips", "regular_clips"):
        assert out[key] == 0, (key, out[key])
    assert out["clip_pts"]
    assert_balanced(out["counters"])


NVDEC_PLAN = """
import resize_model
path = {path!r}
decoder = VideoDecoder(path, device="cuda", transforms=[Resize((100, 130)), CenterCrop((64, 100))],
                       dimension_order="NHWC")
plain = VideoDecoder(path, device="cuda", dimension_order="NHWC")
cpu = VideoDecoder(path)
applied, stages, _ = __import__("torchcodec.transforms._decoder_transforms", fromlist=["make_plan"]).make_plan(
    [Resize((100, 130)), CenterCrop((64, 100))], (240, 320))
before = len(log())
batch = host(decoder.get_frames_at([4, 0, 30]).data)
calls = log()[before:]
out = {{"shape": list(batch.shape), "fallback": bool(decoder.cpu_fallback)}}
# The stub's surfaces are flat (luma 16 + pts % 219, chroma 128): the plan of their RGB frame.
frames = host(plain.get_frames_at([4, 0, 30]).data)
out["model"] = max(difference(b, resize_model.run_plan(f, stages)) for b, f in zip(batch, frames))
out["launches"] = sorted(set(c.split("(")[1].split(",")[0] for c in calls if c.startswith("cuLaunchKernel")))
out["launch_count"] = sum(c.startswith("cuLaunchKernel") for c in calls)
out["allocations"] = [int(c.split("(")[1].split(")")[0].split(",")[0]) for c in calls if c.startswith("cuMemAlloc")]
before = len(log())
host(decoder.get_frames_at([1, 2]).data)
out["uploads_later"] = sum("1->2" in c and c.startswith("cuMemcpy2D") for c in log()[before:])
del decoder, plain, batch
finish(out)
"""


def test_nvdec_frames_go_through_the_plan_in_one_launch_each(stubs, media):
    """NVDEC's surfaces (the stub's flat pictures) through Resize + CenterCrop: the numpy model's
    pixels, one launch of the 8-bit resize kernel per frame (the crop is its window), no device
    allocation of a full-size RGB frame, the filter table uploaded once."""
    out = run_decoding(stubs, NVDEC_PLAN.format(path=os.fspath(media["h264_bframes.mp4"])))
    assert out["fallback"] is False and out["shape"] == [3, 64, 100, 3]
    assert out["model"] == 0
    assert out["launches"] == ["tc_resize_frame"] and out["launch_count"] == 3
    # The filter table and the output batch (3 x 64 x 100 RGB), nothing of the frame's 320 x 240.
    assert sorted(out["allocations"])[-1] == 3 * 64 * 100 * 3 and sum(out["allocations"]) < 2 * 3 * 64 * 100 * 3, \
        out["allocations"]
    assert out["uploads_later"] == 0
    assert_balanced(out["counters"])


BLOCKS = """
path, transforms = {path!r}, {transforms}
demuxer = Demuxer(path)
decoder = demuxer.streams[0].make_decoder(device="cuda")
converter = ColorConverter(device="cuda", transforms=transforms)
cpu_demuxer = Demuxer(path)
cpu_decoder = cpu_demuxer.streams[0].make_decoder()
cpu_converter = ColorConverter(transforms=transforms)
frames, cpu_frames = [], []
for packet in demuxer:
    frames += [converter.convert(f) for f in decoder.decode(packet)]
    if len(frames) >= 4:
        break
for packet in cpu_demuxer:
    cpu_frames += [cpu_converter.convert(f) for f in cpu_decoder.decode(packet)]
    if len(cpu_frames) >= len(frames):
        break
n = min(len(frames), len(cpu_frames))
out = {{"shape": list(frames[0].data.shape), "cpu_shape": list(np.asarray(cpu_frames[0].data).shape),
        "difference": max(difference(host(frames[k].data), cpu_frames[k].data) for k in range(n)),
        "repr": repr(converter)}}
del frames, converter, decoder
finish(out)
"""


def test_color_converter_on_cuda_applies_the_transforms_as_the_cpu_one(stubs, media):
    """The blocks: ColorConverter(device="cuda", transforms=...) on the CUDA packet decoder's frames
    (the CPU fallback's, uploaded: the stub NVDEC refuses H.264 here) equals the CPU ColorConverter
    with the same transforms on the CPU decoder's frames."""
    out = run_decoding(stubs, BLOCKS.format(path=os.fspath(media["h264_rotate90.mp4"]),
                                            transforms="[Resize((150, 100)), CenterCrop((64, 90))]"),
                       STUB_NVDEC_UNSUPPORTED="h264")
    assert out["shape"] == out["cpu_shape"] == [3, 64, 90]
    assert out["difference"] == 0
    assert "transforms=[Resize(size=(150, 100)), CenterCrop(size=(64, 90))]" in out["repr"]
    assert_balanced(out["counters"])


# ---- the GPU check's steps and the benchmark, rehearsed on the stubs --------------------------------

TOOL = """
import contextlib, io, json, sys
sys.path.insert(0, {tools!r})
from {module} import {name}
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    status = {name}.main({argv!r})
print(json.dumps({{"status": status, "printed": printed.getvalue()}}))
"""


def test_the_gpu_check_steps_pass_against_the_stubs(stubs, media, tmp_path):
    """tools/gpu/transforms.py (the rows a GPU machine runs) on the "ffmpeg" backend, whose frames
    the stub leaves to libavcodec: every comparison exact, every step there."""
    argv = ["--quick", "--out", str(tmp_path), "--cuda-backend", "ffmpeg", "--only", "kernels,random,streams,api"]
    out = run_python(TOOL.format(tools=str(TESTS.parent / "tools"), module="gpu", name="transforms", argv=argv),
                     stubs, TORCHCODEC_MEDIA_DIR=str(media["h264_bframes.mp4"].parent))
    rows = [json.loads(line) for line in (tmp_path / "gpu_transforms.jsonl").read_text().splitlines()]
    assert out["status"] == 0
    assert {row["step"] for row in rows} == {"kernels", "random", "streams", "api"}
    assert all(row["status"] in ("ok", "skipped") for row in rows), [r for r in rows if r["status"] == "FAIL"]
    compared = [row for row in rows if row["result"].startswith("max ")]
    assert len(compared) >= 48 and all(row["result"].startswith("max 0, mean 0.0000") for row in compared)


def test_the_benchmark_runs_against_the_stubs(stubs, media):
    argv = ["--clips", "h264_1080p.mp4", "--frames", "2", "--batch", "2", "--repeats", "1", "--cuda-backend", "ffmpeg",
            "--corpus", str(media["h264_bframes.mp4"].parent)]
    out = run_python(TOOL.format(tools=str(TESTS.parent / "tools"), module="bench", name="gpu_transforms", argv=argv),
                     stubs)
    assert out["status"] == 0
    rows = [line.split("|")[1:-1] for line in out["printed"].splitlines()[2:]]
    assert [row[1].strip() for row in rows] == ["fused decode + resize", "full RGB (no resize)"]
    # Without torch, the frames each workload makes: 224 x 224 RGB (and the plan's filter table over
    # the batch), against 1920 x 1080.
    fused, full = (float(row[4].split()[0]) for row in rows)
    assert 0.150 < fused < 0.2 and full == 6.221
