"""The CUDA colour kernels give the CPU path's bytes: swscale's, through torchcodec's Scaler.

Frames of random samples (the whole range of their depth, out-of-gamut values included) go through
a CudaConverter whose launches run the real kernels on the CPU (the stub libcuda with
tests/cuda_stubs/kernel_emulation.cpp), and through the CPU Scaler, for every layout the converter
reads: host frames of 8- to 12-bit 4:2:0 (planar and semi-planar) and 4:4:4, NVDEC's surfaces (NV12,
P016 holding 10- or 12-bit samples, YUV444 and its 16-bit form) with a display area inside a larger
surface, and FFmpeg's hwaccel P010. Every matrix swscale knows (and an unknown one), both ranges,
uint8 and float32 output, even, odd and tiny sizes, the four rotations: the maximum difference is 0.
The one place swscale leaves undefined, the last column of odd-width 8-bit 4:2:0 float32 output
(tests/test_swscale_rgb.py), is held to the numpy model of swscale's arithmetic instead.
"""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest


sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "cuda_stubs"))
from stub_build import build_converting_stub, run_python  # noqa: E402

TESTS = pathlib.Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def stub(tmp_path_factory):
    return build_converting_stub(tmp_path_factory.mktemp("cuda_exact"))


PROLOGUE = """
import ctypes, json, sys, zlib
import numpy as np
from torchcodec._cuda import _driver
from torchcodec._cuda._converter import CudaConverter
from torchcodec._core._scaler import Scaler
sys.path.insert(0, ".")
sys.path.insert(0, TESTS)
import device_frames
import swscale_model

stub = ctypes.CDLL("libcuda.so.1")
context = _driver.load_driver().context(0)
primary = ctypes.c_void_p()
assert stub.cuDevicePrimaryCtxRetain(ctypes.byref(primary), 0) == 0
converter = CudaConverter(context)
scaler = Scaler()

class DeviceArray:
    '''A numpy view of `shape` `dtype` elements allocated with the stub's cuMemAlloc.'''
    def __init__(self, shape, dtype):
        nbytes = int(np.prod(shape)) * np.dtype(dtype).itemsize
        self.pointer = ctypes.c_ulonglong()
        assert stub.cuCtxPushCurrent_v2(primary) == 0
        assert stub.cuMemAlloc_v2(ctypes.byref(self.pointer), ctypes.c_size_t(nbytes)) == 0
        assert stub.cuCtxPopCurrent_v2(None) == 0
        self.address = self.pointer.value
        self.array = np.frombuffer((ctypes.c_uint8 * nbytes).from_address(self.address), dtype).reshape(shape)
        self.array[...] = 0
    def free(self):
        assert stub.cuCtxPushCurrent_v2(primary) == 0
        assert stub.cuMemFree_v2(self.pointer) == 0
        assert stub.cuCtxPopCurrent_v2(None) == 0

def event():
    handle = ctypes.c_void_p()
    assert stub.cuCtxPushCurrent_v2(primary) == 0
    assert stub.cuEventCreate(ctypes.byref(handle), 0) == 0
    assert stub.cuCtxPopCurrent_v2(None) == 0
    return handle.value

SYNC_EVENTS = (event(), event())

def random_planes(rng, width, height, bits, subsampled):
    cw, ch = ((width + 1) // 2, (height + 1) // 2) if subsampled else (width, height)
    dtype = np.uint8 if bits == 8 else np.uint16
    return [np.ascontiguousarray(rng.integers(0, 1 << bits, shape).astype(dtype))
            for shape in ((height, width), (ch, cw), (ch, cw))]

def host_frame(pix_fmt, planes):
    '''A host frame of pix_fmt holding the planes' samples: (addresses, pitches, arrays).'''
    if pix_fmt in ("nv12", "p010le"):
        shift = 6 if pix_fmt == "p010le" else 0
        arrays = [planes[0] << shift, np.ascontiguousarray(np.stack(planes[1:], axis=-1).reshape(planes[1].shape[0], -1)
                                                           << shift)]
    else:
        arrays = planes
    return [a.ctypes.data for a in arrays], [a.strides[0] for a in arrays], arrays

def on_cpu(pix_fmt, planes, width, height, matrix, full, as_float, rotation, out_size=None):
    '''The CPU path: torchcodec's Scaler on a host frame of the planes (out_size: (width, height) of
    the output, when the Scaler has a transform plan).'''
    ow, oh = out_size or ((height, width) if rotation in (90, 270) else (width, height))
    out = np.zeros((oh, ow, 3), np.float32 if as_float else np.uint8)
    addresses, pitches, arrays = host_frame(pix_fmt, planes)
    device_frames.convert_device_frame(scaler, pix_fmt, addresses, pitches, width, height, out.ctypes.data,
                                       out.strides[0], out_width=ow, out_height=oh, colorspace=matrix,
                                       color_range=2 if full else 1, as_float=as_float, rotation=rotation)
    return out

def surface(layout, planes, bits, crop):
    '''The planes as a device frame stores them: (pix_fmt, addresses, pitches, arrays), the samples
    at `crop` in a surface with spare rows and columns, MSB-aligned in 16-bit words.'''
    y = planes[0]
    height, width = y.shape
    left, top = crop
    wide = layout != "host" and bits > 8
    dtype = np.uint16 if bits > 8 else np.uint8
    shift = 16 - bits if wide else 0
    rows, columns = height + top + 3, (width + left + 5 + 63) // 64 * 64
    if layout in ("nv12", "p016", "p010"):
        luma, chroma = DeviceArray((rows, columns), dtype), DeviceArray(((rows + 1) // 2, columns), dtype)
        luma.array[top:top + height, left:left + width] = y.astype(dtype) << shift
        ch, cw = planes[1].shape
        for k in (0, 1):
            chroma.array[top // 2:top // 2 + ch, left + k:left + k + 2 * cw:2] = planes[1 + k].astype(dtype) << shift
        pix_fmt = {"nv12": "nv12", "p016": "p016le", "p010": "p010le"}[layout]
        arrays = [luma, chroma]
    else:
        arrays = []
        for k, plane in enumerate(planes):
            sub = 1 if plane.shape != y.shape else 0
            array = DeviceArray(((rows + sub) >> sub, columns), dtype)
            array.array[top >> sub:(top >> sub) + plane.shape[0], left >> sub:(left >> sub) + plane.shape[1]] = \\
                plane.astype(dtype) << shift
            arrays.append(array)
        pix_fmt = "yuv444p16le" if wide else ("yuv444p" if planes[1].shape == y.shape else None)
    return pix_fmt, [a.address for a in arrays], [a.array.strides[0] for a in arrays], arrays

def on_gpu(layout, pix_fmt, planes, bits, width, height, matrix, full, as_float, rotation, crop, out_size=None):
    '''The kernels (emulated): a host frame of the planes, or a device frame of `layout` (out_size:
    as for on_cpu).'''
    ow, oh = out_size or ((height, width) if rotation in (90, 270) else (width, height))
    out = DeviceArray((oh, ow, 3), np.float32 if as_float else np.uint8)
    kwargs = dict(colorspace=matrix, color_range=2 if full else 1, as_float=as_float, rotation=rotation)
    if layout == "host":
        addresses, pitches, arrays = host_frame(pix_fmt, planes)
        device_frames.convert_device_frame(converter, pix_fmt, addresses, pitches, width, height, out.address,
                                           out.array.strides[0], out_width=ow, out_height=oh, **kwargs)
    else:
        surface_format, addresses, pitches, arrays = surface(layout, planes, bits, crop)
        extra = dict(hwaccel=True) if layout == "p010" else dict(sync=device_frames.Sync(*SYNC_EVENTS, bits))
        if layout == "p010":    # FFmpeg crops hardware frames on the right and bottom itself
            width_, height_ = width + crop[0], height + crop[1]
        else:
            width_, height_ = width, height
        device_frames.convert_device_frame(converter, surface_format, addresses, pitches, width_, height_,
                                           out.address, out.array.strides[0], out_width=ow, out_height=oh,
                                           crop_left=crop[0], crop_top=crop[1], **extra, **kwargs)
        for array in arrays:
            array.free()
    result = out.array.copy()
    out.free()
    return result

def compare(layout, pix_fmt, bits, sizes, combinations, control=False):
    '''Every size x (matrix, range) x dtype, the rotations in turn: the cases that differ. The
    control gives the kernels the frame with one chroma sample one level off.'''
    subsampled = "444" not in pix_fmt
    rng = np.random.default_rng(zlib.crc32((layout + pix_fmt).encode()))
    failures, cases = [], 0
    for s, (width, height) in enumerate(sizes):
        for c, (matrix, full) in enumerate(combinations):
            for as_float in (False, True):
                rotation = (0, 90, 180, 270)[(s + c + as_float) % 4]
                crop = ((s % 3) * 2, (c % 3) * 2)
                planes = random_planes(rng, width, height, bits, subsampled)
                want = on_cpu(pix_fmt, planes, width, height, matrix, full, as_float, rotation)
                if control:
                    planes[1] = planes[1].copy()
                    planes[1][planes[1].shape[0] // 2, planes[1].shape[1] // 2] ^= 1
                got = on_gpu(layout, pix_fmt, planes, bits, width, height, matrix, full, as_float, rotation, crop)
                ow, oh = want.shape[1], want.shape[0]
                planar = layout != "host" or pix_fmt not in ("nv12", "p010le")
                if as_float and bits == 8 and subsampled and planar and ow % 2 and oh % 2 == 0:
                    # swscale leaves this column unwritten: the model of its table converter instead
                    turned = [np.rot90(p, k=-rotation // 90) for p in planes]
                    model = swscale_model.convert(*turned, 8, matrix, full, True)[:, -1] / np.float32(65535)
                    if not np.array_equal(got[:, -1], model.astype(np.float32)):
                        failures.append([width, height, matrix, full, as_float, rotation, "last column"])
                    want, got = want[:, :-1], got[:, :-1]
                cases += 1
                difference = float(np.abs(want.astype(np.float64) - got.astype(np.float64)).max())
                if difference:
                    failures.append([width, height, matrix, full, as_float, rotation, crop, difference])
    return {"cases": cases, "failures": failures[:20], "failed": len(failures)}
"""

MATRICES = [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 12]     # AVColorSpace; 12 has no table of its own (BT.601)
COMBINATIONS = [(m, full) for m in MATRICES for full in (False, True)]
SIZES = [(64, 32), (33, 18), (34, 17), (33, 17), (10, 5), (9, 7), (5, 2), (1, 1)]

# (layout, the CPU decoder's pixel format, bits): host frames in their own format; NVDEC surfaces
# (device frames whose CPU reference is the planar format of the same samples); FFmpeg's hwaccel.
LAYOUTS = [
    ("host", "yuv420p", 8), ("host", "yuv420p10le", 10), ("host", "yuv420p12le", 12), ("host", "nv12", 8),
    ("host", "p010le", 10), ("host", "yuv444p", 8), ("host", "yuv444p10le", 10), ("host", "yuv444p12le", 12),
    ("nv12", "yuv420p", 8), ("p016", "yuv420p10le", 10), ("p016", "yuv420p12le", 12),
    ("yuv444", "yuv444p", 8), ("yuv444", "yuv444p10le", 10), ("yuv444", "yuv444p12le", 12),
    ("p010", "yuv420p10le", 10),
]


def run(stub, code: str) -> dict:
    return run_python(f"TESTS = {str(TESTS)!r}\n" + PROLOGUE + code, stub)


@pytest.mark.parametrize("layout, pix_fmt, bits", LAYOUTS, ids=[f"{a}-{b}" for a, b, _ in LAYOUTS])
def test_kernels_give_the_cpu_paths_bytes_on_random_frames(stub, layout, pix_fmt, bits):
    out = run(stub, f"print(json.dumps(compare({layout!r}, {pix_fmt!r}, {bits}, {SIZES!r}, {COMBINATIONS!r})))")
    assert out["cases"] == len(SIZES) * len(COMBINATIONS) * 2
    assert out["failures"] == [], out["failures"]


@pytest.mark.parametrize("layout, pix_fmt, bits", [("p016", "yuv420p10le", 10), ("nv12", "yuv420p", 8)])
def test_the_comparison_sees_one_chroma_sample_one_level_off(stub, layout, pix_fmt, bits):
    """The control: the same cases, the kernels given one chroma sample changed by one level, must
    fail wherever the output is float32 (RGB48 resolves one level of any sample)."""
    out = run(stub, f"""
result = compare({layout!r}, {pix_fmt!r}, {bits}, [(64, 32), (33, 18)], [(1, False), (9, True)], control=True)
print(json.dumps(result))
""")
    assert out["cases"] == 8
    float_failures = [f for f in out["failures"] if f[4]]
    assert len(float_failures) == 4, out["failures"]


def test_kernels_give_the_cpu_paths_bytes_on_1080p_frames(stub):
    """Full-size frames: the filters' interior rows, 10-bit NVDEC and 8-bit float32 (odd-height crop)."""
    out = run(stub, """
results = []
for layout, pix_fmt, bits, size in (("p016", "yuv420p10le", 10, (1920, 1080)), ("nv12", "yuv420p", 8, (1920, 1081))):
    results.append(compare(layout, pix_fmt, bits, [size], [(9, False), (1, True)]))
print(json.dumps({"cases": sum(r["cases"] for r in results), "failures": [f for r in results for f in r["failures"]]}))
""")
    assert out["cases"] == 8 and out["failures"] == []


def test_the_kernels_gpu_tests_pass_on_the_emulated_kernels(stub):
    """tests/test_cuda_kernels.py's ``cuda`` tests launch the kernels through libcuda with ctypes;
    with the stub first on the library path they run here (all but the 2^24-triple sweep, which
    test_colour_formula.py and the tests above cover), so they are known to be right before a GPU
    runs them."""
    environ = dict(os.environ, LD_LIBRARY_PATH=os.pathsep.join(filter(None, [str(stub),
                                                                            os.environ.get("LD_LIBRARY_PATH")])))
    result = subprocess.run([sys.executable, "-P", "-m", "pytest", str(TESTS / "test_cuda_kernels.py"), "-q",
                             "-m", "cuda", "-k", "not every_8bit_triple", "-p", "no:cacheprovider"],
                            env=environ, cwd=TESTS.parent, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "10 passed" in result.stdout and "skipped" not in result.stdout, result.stdout[-2000:]
