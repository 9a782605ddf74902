"""decode_jpeg(device="cuda") and JpegEncoder of CUDA images without a GPU: the public API over the
stub libcuda.so.1 (tests/cuda_stubs/libcuda_stub.c: "device" memory is host memory, kernels/*.cu run
on the CPU) and the stub libnvjpeg.so.12 (tests/cuda_stubs/libnvjpeg_stub.c: nvJPEG's entry points
over libjpeg-turbo, with a hardware backend that takes baseline streams when STUB_NVJPEG_HARDWARE=1).

What this proves: the Python and Cython path (headers first, the hardware batch per output format,
the image-by-image path for the rest and after a failed batch, the alpha planes, the EXIF turn and the
uint16 widening by the copy kernel, the outputs allocated by the bridge's library and written on its
stream, the errors naming the image, the encoder's three input layouts) gives, through the stub,
libjpeg-turbo's pixels, which the CPU decoder (the same library) gives as well; numpy models the EXIF
orientations independently. The pixels of the real nvJPEG are checked on a GPU by
tools/gpu/jpeg_check.py. The library search and its messages are in test_nvjpeg_loader.py.
"""
from __future__ import annotations

import io
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "cuda_stubs"))
from stub_build import HOST_READ, build_emulating_libcuda, build_nvjpeg_stub, run_python  # noqa: E402

PIL = pytest.importorskip("PIL.Image")
STAND_INS = str(pathlib.Path(__file__).resolve().parent / "cuda_stubs" / "stand_ins")


@pytest.fixture(scope="module")
def stubs(tmp_path_factory):
    from torchcodec._cuda import _build_config
    from torchcodec._image import available
    if not (_build_config.CUDA_DRIVER and _build_config.CUDA_KERNELS):
        pytest.skip("this build has no CUDA driver loader or no kernels")
    if not available()["jpeg"]:
        pytest.skip("this build has no JPEG codec (the CPU reference)")
    directory = tmp_path_factory.mktemp("nvjpeg_stubs")
    build_emulating_libcuda(directory)
    build_nvjpeg_stub(directory)
    return directory


def pattern(height: int, width: int) -> np.ndarray:
    """An RGB image whose every row and column differs (so that any turn or flip shows)."""
    y, x = np.mgrid[0:height, 0:width]
    return np.stack([(x * 255 // max(width - 1, 1)), (y * 255 // max(height - 1, 1)), (x * y) % 256],
                    axis=-1).astype(np.uint8)


def jpeg(array: np.ndarray, *, progressive: bool = False, orientation: int = 0, mode: str | None = None) -> bytes:
    image = PIL.fromarray(array)
    if mode is not None:
        image = image.convert(mode)
    options = {"quality": 92, "progressive": progressive}
    if orientation:
        exif = PIL.Exif()
        exif[0x0112] = orientation
        options["exif"] = exif.tobytes()
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", **options)
    return buffer.getvalue()


def corrupt_later_scan(data: bytes) -> bytes:
    """A progressive JPEG whose second scan names a component that does not exist: the header
    reads fine, decoding fails (libjpeg: "Invalid component ID")."""
    first = data.index(b"\xff\xda")
    second = data.index(b"\xff\xda", first + 2)
    broken = bytearray(data)
    broken[second + 5] = 9
    return bytes(broken)


@pytest.fixture(scope="module")
def images(tmp_path_factory):
    """The test JPEGs, written to files the subprocesses read."""
    directory = tmp_path_factory.mktemp("nvjpeg_images")
    colour = pattern(24, 40)
    made = {
        "colour": jpeg(colour),
        "gray": jpeg(colour, mode="L"),
        "progressive": jpeg(colour, progressive=True),
        "cmyk": jpeg(colour, mode="CMYK"),
    }
    made["corrupt"] = corrupt_later_scan(made["progressive"])
    made["bad_header"] = made["colour"][:2] + b"\xff\xdb\x00\x03" + made["colour"][2:]
    made["truncated"] = made["colour"][: len(made["colour"]) * 2 // 3]
    for orientation in range(1, 9):
        made[f"oriented{orientation}"] = jpeg(colour, orientation=orientation)
    paths = {}
    for name, data in made.items():
        paths[name] = directory / f"{name}.jpg"
        paths[name].write_bytes(data)
    return {name: str(path) for name, path in paths.items()}


PRELUDE = """
import ctypes, gc, json, sys
import numpy as np
import torchcodec
from torchcodec.decoders import decode_jpeg
from torchcodec.encoders import JpegEncoder
torchcodec.set_bridge("numpy")
cuda = ctypes.CDLL("libcuda.so.1")
nvjpeg = ctypes.CDLL("libnvjpeg.so.12")
nvjpeg.stub_nvjpeg_log.restype = ctypes.c_char_p
cuda.stub_call_log.restype = ctypes.c_char_p
""" + HOST_READ + """
def log():
    return nvjpeg.stub_nvjpeg_log().decode()

def count(name):
    return ctypes.c_int.in_dll(nvjpeg, "stub_nvjpeg_" + name).value

def outcome(call):
    try:
        call()
        return None
    except Exception as error:
        return f"{type(error).__name__}: {error}"

def finish(out):
    gc.collect()
    out["no_context"] = count("no_context")
    out["live_bytes"] = ctypes.c_longlong.in_dll(cuda, "stub_live_bytes").value
    out["depth"] = ctypes.c_int.in_dll(cuda, "stub_stack_depth").value
    print(json.dumps(out))
"""


def run(stubs, code: str, images: dict, **env: str) -> dict:
    env = {"TORCHCODEC_NVJPEG_LIBRARY": str(stubs / "libnvjpeg.so.12"), **env}
    return run_python(PRELUDE + f"paths = {images!r}\n" + code, stubs, **env)


def assert_clean(out: dict) -> None:
    assert out["no_context"] == 0, "an nvJPEG call ran without the device's context current"
    assert out["depth"] == 0, "a context was left pushed"


MODES = """
out = {"same": {}, "types": set(), "contiguous": True}
for name in ("colour", "gray"):
    for mode in ("RGB", "GRAY", "UNCHANGED", "RGB_ALPHA", "GRAY_ALPHA"):
        for dtype in (None, np.uint16):
            gpu = decode_jpeg(paths[name], mode=mode, output_dtype=dtype, device="cuda")
            cpu = decode_jpeg(paths[name], mode=mode, output_dtype=dtype)
            pixels = host(gpu)
            out["types"].add(type(gpu).__name__)
            out["contiguous"] &= gpu.__cuda_array_interface__["strides"] in (None, tuple(
                int(np.prod(gpu.shape[k + 1:])) * pixels.itemsize for k in range(3)))
            out["same"][f"{name} {mode} {dtype}"] = [list(pixels.shape), str(pixels.dtype), list(cpu.shape),
                                                      str(cpu.dtype), bool((pixels == cpu).all())]
out["types"] = sorted(out["types"])
finish(out)
"""


def test_every_mode_and_dtype_gives_the_cpu_decoders_pixels(stubs, images):
    out = run(stubs, MODES, images)
    assert out["types"] == ["DeviceBuffer"] and out["contiguous"]
    for case, (shape, dtype, cpu_shape, cpu_dtype, same) in out["same"].items():
        assert shape == cpu_shape and dtype == cpu_dtype and same, case
    assert out["same"]["gray UNCHANGED None"][0][0] == 1 and out["same"]["colour UNCHANGED None"][0][0] == 3
    assert out["same"]["colour GRAY_ALPHA <class 'numpy.uint16'>"][0][0] == 2
    assert out["live_bytes"] > 0            # the outputs are alive until the end
    assert_clean(out)


BATCH = """
names = ["colour", "gray", "progressive", "colour"]
batch = decode_jpeg([paths[n] for n in names], mode="UNCHANGED", device="cuda")
same = [bool((host(b) == decode_jpeg(paths[n], mode="UNCHANGED")).all()) for b, n in zip(batch, names)]
out = {"log": log(), "same": same,
       "channels": [b.shape[0] for b in batch], "type": type(batch).__name__,
       "batched": count("batched_images"), "single": count("single_images")}
single = decode_jpeg(paths["colour"], device="cuda")
listed = decode_jpeg([paths["colour"]], device="cuda")
out["single_type"], out["listed"] = type(single).__name__, [type(listed).__name__, len(listed)]
out["single_same"] = bool((host(single) == host(listed[0])).all())
finish(out)
"""


def test_a_batch_goes_to_the_jpeg_engines_once_per_output_format(stubs, images):
    out = run(stubs, BATCH, images, STUB_NVJPEG_HARDWARE="1")
    assert out["same"] == [True] * 4 and out["channels"] == [3, 1, 3, 3] and out["type"] == "list"
    lines = out["log"].splitlines()
    assert "nvjpegCreateEx(backend=3)" in lines and "nvjpegCreateEx(backend=0)" not in lines
    assert lines.count("nvjpegDecodeBatched(n=1, format=2, stream=0x1)") == 1          # the gray image
    assert lines.count("nvjpegDecodeBatched(n=2, format=3, stream=0x1)") == 1          # both baseline colour
    assert lines.count("nvjpegDecode(format=3, stream=0x1)") == 1                      # the progressive one
    assert out["batched"] == 3 and out["single"] == 1
    assert out["single_type"] == "DeviceBuffer" and out["listed"] == ["list", 1] and out["single_same"]
    assert_clean(out)


def test_without_jpeg_engines_every_image_is_decoded_on_its_own(stubs, images):
    out = run(stubs, BATCH, images)
    assert out["same"] == [True] * 4
    lines = out["log"].splitlines()
    assert lines[:2] == ["nvjpegCreateEx(backend=3)", "nvjpegCreateEx(backend=0)"]
    assert not any(line.startswith("nvjpegDecodeBatched") for line in lines)
    assert out["batched"] == 0 and out["single"] == 4
    assert_clean(out)


def test_a_batch_that_nvjpeg_refuses_is_decoded_again_image_by_image(stubs, images):
    out = run(stubs, BATCH, images, STUB_NVJPEG_HARDWARE="1", STUB_NVJPEG_FAIL="nvjpegDecodeBatched")
    assert out["same"] == [True] * 4
    assert out["batched"] == 0 and out["single"] == 4
    assert_clean(out)


ERRORS = """
good = paths["colour"]
out = {}
for name in ("corrupt", "bad_header", "truncated", "cmyk"):
    out[name] = outcome(lambda: decode_jpeg([good, good, paths[name], good], device="cuda"))
    out[name + "_allocs"] = ctypes.c_int.in_dll(cuda, "stub_allocs").value
out["single"] = outcome(lambda: decode_jpeg(paths["corrupt"], device="cuda"))
allocs = ctypes.c_int.in_dll(cuda, "stub_allocs").value
torchcodec.decoders.set_max_image_pixels(24 * 40 - 1)
out["too_large"] = outcome(lambda: decode_jpeg([good, good], device="cuda"))
out["too_large_allocs"] = ctypes.c_int.in_dll(cuda, "stub_allocs").value - allocs
torchcodec.decoders.set_max_image_pixels(None)
out["empty"] = outcome(lambda: decode_jpeg([], device="cuda"))
out["cuda_bytes"] = outcome(lambda: decode_jpeg(torchcodec._cuda._device_buffer.DeviceBuffer.empty(
    torchcodec._cuda._driver.load_driver().context(0), (10,), "uint8", 1), device="cuda"))
out["device"] = outcome(lambda: decode_jpeg(good, device="gpu"))
out["after"] = bool((host(decode_jpeg(good, device="cuda")) == decode_jpeg(good)).all())
finish(out)
"""


@pytest.mark.parametrize("hardware", ["0", "1"], ids=["one-at-a-time", "jpeg-engines"])
def test_a_bad_image_in_a_batch_is_named_by_its_index(stubs, images, hardware):
    code = "import torchcodec._cuda._device_buffer, torchcodec._cuda._driver\n" + ERRORS
    out = run(stubs, code, images, STUB_NVJPEG_HARDWARE=hardware)
    assert out["corrupt"] == ("RuntimeError: decode_jpeg: image 2 of the batch: nvjpegDecode failed: "
                              "NVJPEG_STATUS_BAD_JPEG (3)")
    assert out["bad_header"] == ("NvjpegError: decode_jpeg: image 2 of the batch: nvjpegGetImageInfo failed: "
                                 "NVJPEG_STATUS_BAD_JPEG (3)")
    assert out["truncated"] == "RuntimeError: decode_jpeg: image 2 of the batch: Image is incomplete or truncated."
    assert out["cmyk"].startswith("RuntimeError: decode_jpeg: image 2 of the batch: Unknown chroma subsampling")
    # header errors come before any output is allocated
    assert out["bad_header_allocs"] == out["corrupt_allocs"]
    assert out["truncated_allocs"] == out["bad_header_allocs"] == out["cmyk_allocs"]
    assert out["single"] == "RuntimeError: decode_jpeg: nvjpegDecode failed: NVJPEG_STATUS_BAD_JPEG (3)"
    assert out["too_large"].startswith("ImageTooLargeError: decode_jpeg: image 0 of the batch: the image declares "
                                       "40x24 pixels, more than the limit of 959 pixels")
    assert out["too_large_allocs"] == 0
    assert "Expected at least one image to decode" in out["empty"]
    assert "must be on the CPU" in out["cuda_bytes"]
    assert out["device"].startswith("InvalidArgumentError: Invalid device 'gpu'")
    assert out["after"], "the decoder is usable after the failures"
    assert_clean(out)


ORIENTED = """
out = {}
for orientation in range(1, 9):
    name = f"oriented{orientation}"
    out[name] = [host(decode_jpeg(paths[name], device="cuda")).tolist(),
                 decode_jpeg(paths[name]).tolist()]
wide = decode_jpeg(paths["oriented6"], mode="RGB_ALPHA", output_dtype=np.uint16, device="cuda")
out["wide"] = bool((host(wide) == decode_jpeg(paths["oriented6"], mode="RGB_ALPHA", output_dtype=np.uint16)).all())
out["wide_shape"] = list(wide.shape)
out["base"] = decode_jpeg(paths["oriented1"]).tolist()
out["kernels"] = cuda.stub_call_log().decode().count("cuLaunchKernel(tc_copy_strided")
finish(out)
"""

# EXIF orientation -> the displayed (H, W, C) image, from the stored one, in numpy
TURNS = {
    1: lambda a: a,
    2: lambda a: a[:, ::-1],
    3: lambda a: a[::-1, ::-1],
    4: lambda a: a[::-1],
    5: lambda a: a.transpose(1, 0, 2),
    6: lambda a: np.rot90(a, -1),
    7: lambda a: a[::-1, ::-1].transpose(1, 0, 2),
    8: lambda a: np.rot90(a, 1),
}


def test_exif_orientation_turns_the_output_as_numpy_turns_the_image(stubs, images):
    out = run(stubs, ORIENTED, images, STUB_NVJPEG_HARDWARE="1")
    stored = np.array(out["base"], np.uint8).transpose(1, 2, 0)       # orientation 1: as stored
    for orientation, turn in TURNS.items():
        gpu, cpu = (np.array(image, np.uint8) for image in out[f"oriented{orientation}"])
        expected = np.ascontiguousarray(turn(stored)).transpose(2, 0, 1)
        assert gpu.shape == expected.shape and (gpu == expected).all(), orientation
        assert (gpu == cpu).all(), orientation
    assert out["wide"] and out["wide_shape"] == [4, 40, 24]
    # 7 turned images x 3 planes, then 3 planes x 2 bytes for the uint16 one
    assert out["kernels"] == 7 * 3 + 3 * 2
    assert_clean(out)


STREAMS = """
import cupy
torchcodec.set_bridge("cupy")
out = {}
alpha = decode_jpeg(paths["oriented8"], mode="RGB_ALPHA", device="cuda")
out["type"] = type(alpha).__module__ + "." + type(alpha).__name__
with torchcodec.bridge("numpy"):
    out["same"] = bool((alpha.get() == decode_jpeg(paths["oriented8"], mode="RGB_ALPHA")).all())
out["nvjpeg"] = log()
out["cuda"] = cuda.stub_call_log().decode()
out["cupy"] = [list(map(str, call)) for call in cupy.calls]
finish(out)
"""


def test_outputs_are_the_bridges_arrays_written_on_its_current_stream(stubs, images):
    out = run(stubs, STREAMS, images, STUB_NVJPEG_HARDWARE="1", PYTHONPATH=STAND_INS)
    assert out["type"] == "cupy.ndarray" and out["same"]
    assert ["empty", "(4, 40, 24)", "uint8"] in out["cupy"] and ["stream"] in out["cupy"]
    decodes = [line for line in out["nvjpeg"].splitlines() if "stream=" in line]
    assert decodes == ["nvjpegDecodeBatched(n=1, format=3, stream=0x5151)"]
    launches = [line for line in out["cuda"].splitlines() if line.startswith(("cuLaunchKernel", "cuMemsetD8Async"))]
    assert launches and all("stream=0x5151" in line for line in launches)
    assert sum(line.startswith("cuMemsetD8Async(960,") for line in launches) == 1      # the alpha plane
    assert_clean(out)


ENCODE = """
from torchcodec._cuda import _device_buffer, _driver
context = _driver.load_driver().context(0)
image = decode_jpeg(paths["colour"], device="cuda")
out = {"planar": JpegEncoder(image).to_file_like.__name__}
import io
def encoded(img, quality=83):
    buffer = io.BytesIO()
    JpegEncoder(img).to_file_like(buffer, quality=quality)
    return buffer.getvalue()
out["planar"] = encoded(image).hex()
hwc = _device_buffer.DeviceBuffer.empty(context, (24, 40, 3), "uint8", 1)
interleaved = np.ascontiguousarray(host(image).transpose(1, 2, 0))
ctypes.memmove(hwc.__cuda_array_interface__["data"][0], interleaved.ctypes.data, interleaved.nbytes)
out["interleaved"] = encoded(hwc.permuted((2, 0, 1))).hex()
flipped = image.as_strided((3, 24, 40), (24 * 40, -40, 1), offset=23 * 40)
out["flipped"] = encoded(flipped).hex()
out["pixels"] = host(image).tolist()
device_bytes = JpegEncoder(image).to_tensor(quality=83)
out["to_tensor"] = [type(device_bytes).__name__, host(device_bytes).tobytes().hex()]
JpegEncoder(image).to_file(paths["colour"] + ".out.jpg", quality=83)
out["to_file"] = open(paths["colour"] + ".out.jpg", "rb").read().hex()
out["gray"] = outcome(lambda: encoded(decode_jpeg(paths["gray"], mode="GRAY", device="cuda")))
out["quality"] = outcome(lambda: encoded(image, 101))
out["log"] = log()
finish(out)
"""


def test_jpeg_encoder_of_cuda_images_reads_planar_interleaved_and_strided_memory(stubs, images, tmp_path):
    out = run(stubs, ENCODE, images)
    pixels = np.array(out["pixels"], np.uint8).transpose(1, 2, 0)
    from torchcodec.decoders import decode_jpeg

    def reference(array: np.ndarray) -> np.ndarray:
        # libjpeg-turbo through Pillow, 4:4:4 at the same quality (nvJPEG's CUDA settings)
        buffer = io.BytesIO()
        PIL.fromarray(array).save(buffer, "JPEG", quality=83, subsampling=0)
        return decode_jpeg(buffer.getvalue())

    def decoded(hex_bytes: str) -> np.ndarray:
        return decode_jpeg(bytes.fromhex(hex_bytes))

    assert (decoded(out["planar"]) == reference(pixels)).all()
    assert out["interleaved"] == out["planar"]
    assert (decoded(out["flipped"]) == reference(np.ascontiguousarray(pixels[::-1]))).all()
    assert out["to_tensor"][0] == "DeviceBuffer" and out["to_tensor"][1] == out["planar"] == out["to_file"]
    lines = out["log"].splitlines()
    encodes = [line for line in lines if line.startswith("nvjpegEncodeImage")]
    assert encodes[0] == "nvjpegEncodeImage(format=3, 40x24, quality=83, subsampling=0, stream=0x1)"
    assert encodes[1].startswith("nvjpegEncodeImage(format=5, 40x24")         # interleaved, read in place
    assert encodes[2].startswith("nvjpegEncodeImage(format=3, 40x24")         # gathered into planes
    assert "number of channels should be 3 (RGB) for JPEG encoding on GPU, got: 1" in out["gray"]
    assert "between 1 and 100" in out["quality"]
    assert_clean(out)


CLEANUP = """
out = {}
decode_jpeg([paths["colour"], paths["progressive"]], device="cuda")
JpegEncoder(decode_jpeg(paths["colour"], device="cuda")).to_tensor()
import threading
errors = []
def work():
    try:
        for _ in range(3):
            decode_jpeg([paths["colour"], paths["gray"]], device="cuda")
    except Exception as error:
        errors.append(repr(error))
threads = [threading.Thread(target=work) for _ in range(4)]
for thread in threads: thread.start()
for thread in threads: thread.join()
out["errors"] = errors
finish(out)
"""


def test_every_nvjpeg_object_is_destroyed_before_the_context_is_released(stubs, images, tmp_path):
    nvjpeg_report, cuda_report = tmp_path / "nvjpeg.txt", tmp_path / "cuda.txt"
    out = run(stubs, CLEANUP, images, STUB_NVJPEG_HARDWARE="1", STUB_NVJPEG_REPORT=str(nvjpeg_report),
              STUB_REPORT=str(cuda_report))
    assert out["errors"] == []
    nvjpeg = dict(item.split("=") for item in nvjpeg_report.read_text().split())
    for kind in ("handles", "states", "streams", "encoders", "params"):
        assert nvjpeg[kind] == nvjpeg[kind + "_destroyed"] != "0", kind
    assert nvjpeg["no_context"] == "0"
    cuda = dict(item.split("=") for item in cuda_report.read_text().split())
    assert cuda["pushes"] == cuda["pops"] and cuda["live_bytes"] == "0"
    assert cuda["events_created"] == cuda["events_destroyed"]


BENCHMARK = """
import contextlib, io
sys.path.insert(0, {tools!r})
from bench import nvjpeg
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    status = nvjpeg.main(["--count", "6", "--batch", "4", "--repeats", "1", "--size", "160x90", "--threads", "2",
                                "--corpus", {corpus!r}, "--tc-python", "/nonexistent"])
print(json.dumps({{"status": status, "printed": printed.getvalue()}}))
"""


def test_the_nvjpeg_benchmark_runs_against_the_stubs(stubs, images, tmp_path):
    tools = str(pathlib.Path(__file__).resolve().parent.parent / "tools")
    code = BENCHMARK.format(tools=tools, corpus=str(tmp_path / "corpus"))
    out = run(stubs, code, images, STUB_NVJPEG_HARDWARE="1")
    assert out["status"] == 0
    printed = out["printed"]
    assert "JPEG engines: yes (4 images: 4 by the engines, 0 one at a time)" in printed
    rows = [line for line in printed.splitlines() if line.startswith("| nvJPEG") or line.startswith("| libjpeg")]
    assert len(rows) == 4 and rows[-1].endswith("| 1.00x |")


GPU_CHECK = """
sys.path.insert(0, {tools!r})
import contextlib, io
if {inputs!r}:           # the JPEGs from a folder: Pillow must not be needed then
    sys.modules["PIL"] = None
from gpu import jpeg_check
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    status = jpeg_check.main(["--quick", "--out", {out!r}, "--only", "library,pixels,batch,orientation,errors,encode,"
                              "streams,bench", *(["--inputs", {inputs!r}] if {inputs!r} else [])])
print(json.dumps({{"status": status}}))
"""


@pytest.mark.parametrize("engines", ["1", "0"], ids=["engines", "no-engines"])
@pytest.mark.parametrize("inputs", [False, True], ids=["pillow", "carried-inputs"])
def test_the_gpu_jpeg_check_passes_against_the_stubs(stubs, images, tmp_path, inputs, engines):
    """The check's rows against the stubs, its JPEGs made by Pillow or read from a folder that
    --write-inputs wrote (as tools/gpu_bundle.sh does for the GPU machine, which has no Pillow: the
    run has no PIL module then), on a GPU with JPEG engines and on one without (a hardware limit)."""
    tools = pathlib.Path(__file__).resolve().parent.parent / "tools"
    folder = ""
    if inputs:
        folder = str(tmp_path / "inputs")
        subprocess.run([sys.executable, "-P", str(tools / "gpu" / "jpeg_check.py"), "--write-inputs", folder],
                       check=True)
        sys.path.insert(0, str(tools))
        from gpu import jpeg_check
        assert sorted(p.name for p in pathlib.Path(folder).iterdir()) == sorted(
            jpeg_check.file_name(name) for name in jpeg_check.RECIPES)
    out = run(stubs, GPU_CHECK.format(tools=str(tools), out=str(tmp_path), inputs=folder), images,
              STUB_NVJPEG_HARDWARE=engines)
    rows = [json.loads(line) for line in (tmp_path / "gpu_jpeg_check.jsonl").read_text().splitlines()]
    assert out["status"] == 0
    assert {row["step"] for row in rows} == {"library", "pixels", "batch", "orientation", "errors", "encode",
                                             "streams", "bench"}
    device = next(row for row in rows if row["check"] == "device")
    limits = ["limit: no JPEG engines"] if engines == "0" else []
    assert [row["status"] for row in rows if row["status"].startswith("limit:")] == limits
    assert device["status"] == (limits[0] if limits else "info")
    assert all(row["status"] in ("ok", "info", "skipped", *limits) for row in rows), rows
    # the stub decodes with libjpeg-turbo: every difference the tolerances allow is 0 here
    assert all(row["result"].startswith("max 0, mean 0.000") for row in rows if row["check"].startswith("RGB"))
    assert len([row for row in rows if row["step"] == "orientation"]) == 8
