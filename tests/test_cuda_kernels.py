"""The CUDA kernels (kernels/*.cu): built by nvcc, embedded, linked to nothing from CUDA.

Without a GPU these tests read the embedded fatbins: their container header, the architectures
(SASS from sm_75 up to the newest the build's nvcc knows, PTX of the newest), the kernel names
in every image, and the dynamic section of every extension module (no libcuda, libcudart or
libnvcuvid). The tests marked ``cuda`` launch the kernels on a GPU, through libcuda loaded with
ctypes, and compare with colour.h run on the CPU (tests/colour_probe.py) and with the numpy model
of swscale's arithmetic (tests/swscale_model.py). With the stub libcuda of tests/cuda_stubs on the
library path they run here too, the kernels emulated on the CPU (tests/test_cuda_exact.py does).
"""
from __future__ import annotations

import ctypes
import importlib
import importlib.util
import os
import pathlib
import pkgutil
import re
import shutil
import struct
import subprocess
import sys
import sysconfig

import numpy as np
import pytest

import colour_probe
import swscale_model
import torchcodec
import torchcodec._core
from torchcodec._cuda import _build_config

KERNEL_SOURCES = pathlib.Path(__file__).resolve().parent.parent / "kernels"
FATBIN_MAGIC = 0xBA55ED50
ENTRY_PTX, ENTRY_ELF = 1, 2
CUDA_LIBRARIES = ("libcuda.so", "libcudart.so", "libnvcuvid.so", "libnvidia-")


# ------------------------------------------------------------------------------------------------
# Build configuration


def test_build_config_says_whether_the_kernels_module_exists():
    exists = importlib.util.find_spec("torchcodec._cuda._kernels") is not None
    assert _build_config.CUDA_KERNELS is exists
    assert _build_config.CUDA_OPTION in ("auto", "enabled", "disabled")
    if _build_config.CUDA_OPTION == "disabled":
        assert not exists


def test_kernels_are_built_wherever_nvcc_is_found():
    """-Dcuda=auto (the default) builds the kernels on any machine with nvcc, CI included."""
    if _build_config.CUDA_OPTION == "disabled":
        pytest.skip("built with -Dcuda=disabled")
    if shutil.which("nvcc") is None:
        pytest.skip("no nvcc on PATH")
    assert _build_config.CUDA_KERNELS, "nvcc is on PATH but the build did not compile kernels/*.cu"


@pytest.fixture(scope="module")
def kernels():
    if not _build_config.CUDA_KERNELS:
        pytest.skip("this build has no CUDA kernels (no nvcc, or -Dcuda=disabled)")
    return importlib.import_module("torchcodec._cuda._kernels")


# ------------------------------------------------------------------------------------------------
# The fatbin container (what cuModuleLoadData reads), parsed without CUDA tools


def parse_fatbin(data: bytes) -> list[dict]:
    """Entries of a fatbin: kind ("elf"/"ptx"), arch (75 for sm_75), payload bytes."""
    magic, version, header_size, body_size = struct.unpack_from("<IHHQ", data, 0)
    assert magic == FATBIN_MAGIC, f"not a fatbin (magic {magic:#x})"
    assert version == 1 and header_size == 16
    assert header_size + body_size == len(data), "fatbin size field does not match the image"
    entries, offset = [], header_size
    while offset < len(data):
        kind, _, entry_header, payload_size = struct.unpack_from("<HHIQ", data, offset)
        arch, = struct.unpack_from("<I", data, offset + 28)
        payload = data[offset + entry_header:offset + entry_header + payload_size]
        assert len(payload) == payload_size
        entries.append({"kind": {ENTRY_PTX: "ptx", ENTRY_ELF: "elf"}[kind], "arch": arch, "payload": payload})
        offset += entry_header + payload_size
    return entries


def test_every_fatbin_has_sass_from_sm75_to_the_newest_arch_and_ptx_of_the_newest(kernels):
    assert kernels.ARCHS[0] == 75 and list(kernels.ARCHS) == sorted(set(kernels.ARCHS))
    assert {80, 86, 89, 90} <= set(kernels.ARCHS)
    assert kernels.PTX_ARCH == kernels.ARCHS[-1]
    for name in kernels.KERNELS:
        image = kernels.fatbin(name)
        assert len(image) > 1000
        entries = parse_fatbin(image)
        assert sorted(e["arch"] for e in entries if e["kind"] == "elf") == list(kernels.ARCHS), name
        assert [e["arch"] for e in entries if e["kind"] == "ptx"] == [kernels.PTX_ARCH], name


def test_every_image_holds_every_kernel_of_its_fatbin(kernels):
    for name, functions in kernels.KERNELS.items():
        for entry in parse_fatbin(kernels.fatbin(name)):
            payload = entry["payload"]
            if entry["kind"] == "elf":
                assert payload.startswith(b"\x7fELF"), f"{name} sm_{entry['arch']} is compressed or not ELF"
                for function in functions:
                    assert b".text." + function.encode() + b"\0" in payload, (name, entry["arch"], function)
            else:
                ptx = payload.rstrip(b"\0").decode()
                assert f".target sm_{entry['arch']}" in ptx
                for function in functions:
                    assert re.search(rf"\.entry {function}\s*\(", ptx), (name, function)


def test_kernel_list_matches_the_sources(kernels):
    if not KERNEL_SOURCES.is_dir():
        pytest.skip("kernels/ sources are not beside the tests")
    for name, functions in kernels.KERNELS.items():
        source = (KERNEL_SOURCES / f"{name}.cu").read_text()
        assert sorted(re.findall(r'extern "C" __global__ void (\w+)', source)) == sorted(functions)


def test_cuobjdump_lists_the_same_architectures(kernels, tmp_path):
    cuobjdump = shutil.which("cuobjdump")
    if cuobjdump is None:
        pytest.skip("cuobjdump is not installed (the fatbin header is parsed by the tests above)")
    for name in kernels.KERNELS:
        path = tmp_path / f"{name}.fatbin"
        path.write_bytes(kernels.fatbin(name))
        elf = subprocess.run([cuobjdump, "--list-elf", str(path)], capture_output=True, text=True, check=True)
        ptx = subprocess.run([cuobjdump, "--list-ptx", str(path)], capture_output=True, text=True, check=True)
        assert sorted(int(a) for a in re.findall(r"sm_(\d+)", elf.stdout)) == list(kernels.ARCHS)
        assert [int(a) for a in re.findall(r"sm_(\d+)", ptx.stdout)] == [kernels.PTX_ARCH]


def test_fatbin_rejects_unknown_names(kernels):
    with pytest.raises(KeyError, match="colour"):
        kernels.fatbin("nope")


# ------------------------------------------------------------------------------------------------
# Nothing links CUDA


def extension_modules() -> list[pathlib.Path]:
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    found = []
    for package in (torchcodec, torchcodec._core):
        for info in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            spec = importlib.util.find_spec(info.name)
            if spec is not None and spec.origin and spec.origin.endswith(suffix):
                found.append(pathlib.Path(spec.origin))
    return found


def test_no_extension_module_needs_a_cuda_library():
    readelf = shutil.which("readelf")
    if readelf is None:
        pytest.skip("readelf (binutils) is not installed")
    modules = extension_modules()
    assert len(modules) >= 10
    for module in modules:
        dynamic = subprocess.run([readelf, "-d", str(module)], capture_output=True, text=True, check=True).stdout
        needed = re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic)
        assert needed, f"{module}: no NEEDED entries parsed from readelf -d"
        assert not [lib for lib in needed if lib.startswith(CUDA_LIBRARIES)], (module.name, needed)


def test_importing_the_kernels_loads_no_cuda_library(kernels, tmp_path):
    code = ("import torchcodec._cuda._kernels as k, sys; k.fatbin('colour');"
            "maps = open('/proc/self/maps').read();"
            "print([l for l in ('libcuda', 'libcudart', 'libnvcuvid') if l in maps])")
    if not os.path.exists("/proc/self/maps"):
        pytest.skip("needs /proc")
    # From an empty folder: the interpreter must import the built package, not the source tree.
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=tmp_path).stdout
    assert out.strip() == "[]"


# ------------------------------------------------------------------------------------------------
# On a GPU: the kernels against swscale's arithmetic on the CPU (libcuda through ctypes; test code
# only, the package's own loader comes with the NVDEC decoder). The launch parameters come from
# include/torchcodec/swscale_rgb.h's host code (tests/swscale_probe.c), as the converter makes them.

TC_CHROMA_420, TC_CHROMA_444 = 1, 2
ROUTES = {"x86": 0, "table": 1, "packed": 2, "full": 3, "rgb48": 4}     # TC_ROUTE_* of swscale_rgb.h


class YuvToRgbParams(ctypes.Structure):   # tc_yuv_to_rgb_params (include/torchcodec/kernels.h)
    _fields_ = [("planes", ctypes.c_uint64 * 3), ("x_steps", ctypes.c_int64 * 3), ("y_steps", ctypes.c_int64 * 3),
                ("src_batch_stride", ctypes.c_int64), ("dst", ctypes.c_uint64),
                ("dst_row_stride", ctypes.c_int64), ("dst_col_stride", ctypes.c_int64),
                ("dst_chan_stride", ctypes.c_int64), ("dst_batch_stride", ctypes.c_int64),
                ("filters", ctypes.c_uint64), ("width", ctypes.c_int32), ("height", ctypes.c_int32),
                ("chroma", ctypes.c_int32), ("route", ctypes.c_int32), ("sample_shift", ctypes.c_int32),
                ("sample_bits", ctypes.c_int32), ("v_taps", ctypes.c_int32), ("h_taps", ctypes.c_int32),
                ("coeffs", ctypes.c_uint8 * 112)]   # tc_sws_coeffs, filled by probe_coeffs


class CopyParams(ctypes.Structure):   # tc_copy_params
    _fields_ = [("src", ctypes.c_uint64), ("dst", ctypes.c_uint64),
                ("src_pitch", ctypes.c_int64), ("dst_pitch", ctypes.c_int64),
                ("src_batch_stride", ctypes.c_int64), ("dst_batch_stride", ctypes.c_int64),
                ("row_bytes", ctypes.c_int64), ("rows", ctypes.c_int32), ("count", ctypes.c_int32)]


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    """tests/swscale_probe.c, compiled against the torchcodec under test's headers."""
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        pytest.skip("no C compiler for tests/swscale_probe.c")
    library = tmp_path_factory.mktemp("swscale_probe") / "swscale_probe.so"
    subprocess.run([cc, "-O2", "-std=c11", "-Wall", "-Werror", "-shared", "-fPIC", "-I", torchcodec.get_include(),
                    "-o", str(library), str(pathlib.Path(__file__).resolve().parent / "swscale_probe.c")], check=True)
    lib = ctypes.CDLL(str(library))
    lib.probe_filter_table.restype = ctypes.c_int64
    lib.probe_filter_table.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_int64,
                                       ctypes.POINTER(ctypes.c_int), ctypes.POINTER(ctypes.c_int)]
    return lib


def test_ctypes_mirrors_of_the_launch_structs_have_the_c_layout(probe):
    assert ctypes.sizeof(YuvToRgbParams) == probe.probe_params_size() == 272
    assert YuvToRgbParams.coeffs.offset == probe.probe_coeffs_offset()
    assert ctypes.sizeof(CopyParams) == 64


class Gpu:
    """The primary context of device 0 and the embedded modules, through the driver API."""

    def __init__(self, kernels) -> None:
        try:
            self.cu = ctypes.CDLL("libcuda.so.1")
        except OSError:
            pytest.skip("no CUDA driver (libcuda.so.1)")
        if self.cu.cuInit(0) != 0:
            pytest.skip("cuInit failed: no usable GPU")
        count = ctypes.c_int()
        self.check(self.cu.cuDeviceGetCount(ctypes.byref(count)), "cuDeviceGetCount")
        if count.value == 0:
            pytest.skip("no CUDA device")
        self.device = ctypes.c_int()
        self.check(self.cu.cuDeviceGet(ctypes.byref(self.device), 0), "cuDeviceGet")
        self.ctx = ctypes.c_void_p()
        self.check(self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), self.device), "retain")
        self.check(self.cu.cuCtxPushCurrent_v2(self.ctx), "cuCtxPushCurrent")
        self.functions = {}
        for name, functions in kernels.KERNELS.items():
            module = ctypes.c_void_p()
            image = kernels.fatbin(name)
            self.check(self.cu.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(image)), "cuModuleLoadData")
            for function in functions:
                handle = ctypes.c_void_p()
                self.check(self.cu.cuModuleGetFunction(ctypes.byref(handle), module, function.encode()), function)
                self.functions[function] = handle
        self.allocations: list[int] = []

    def check(self, status: int, what: str) -> None:
        assert status == 0, f"{what} failed with CUresult {status}"

    def upload(self, array: np.ndarray) -> int:
        array = np.ascontiguousarray(array)
        pointer = ctypes.c_uint64()
        self.check(self.cu.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(max(array.nbytes, 1))), "cuMemAlloc")
        self.allocations.append(pointer.value)
        self.check(self.cu.cuMemcpyHtoD_v2(pointer, array.ctypes.data_as(ctypes.c_void_p),
                                           ctypes.c_size_t(array.nbytes)), "cuMemcpyHtoD")
        return pointer.value

    def download(self, pointer: int, like: np.ndarray) -> np.ndarray:
        out = np.empty_like(like)
        self.check(self.cu.cuMemcpyDtoH_v2(out.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint64(pointer),
                                           ctypes.c_size_t(out.nbytes)), "cuMemcpyDtoH")
        return out

    def launch(self, function: str, params: ctypes.Structure, grid: tuple[int, int, int],
               block: tuple[int, int, int] = (32, 8, 1)) -> None:
        args = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(params), ctypes.c_void_p))
        self.check(self.cu.cuLaunchKernel(self.functions[function], *[ctypes.c_uint(v) for v in grid],
                                          *[ctypes.c_uint(v) for v in block], ctypes.c_uint(0),
                                          ctypes.c_void_p(0), args, ctypes.c_void_p(0)), function)
        self.check(self.cu.cuCtxSynchronize(), f"{function} (synchronize)")

    def close(self) -> None:
        for pointer in self.allocations:
            self.cu.cuMemFree_v2(ctypes.c_uint64(pointer))
        popped = ctypes.c_void_p()
        self.cu.cuCtxPopCurrent_v2(ctypes.byref(popped))
        self.cu.cuDevicePrimaryCtxRelease_v2(self.device)


@pytest.fixture(scope="module")
def gpu(kernels):
    g = Gpu(kernels)
    yield g
    g.close()


@pytest.fixture(scope="module")
def formula(tmp_path_factory) -> colour_probe.Formula:
    return colour_probe.build(tmp_path_factory.mktemp("colour_probe"))


def convert_on_gpu(gpu: Gpu, probe, planes: list[np.ndarray], bits: int, matrix: int, full_range: bool, *,
                   interleaved=False, crop=(0, 0), size=None, shift: int = 0, planar_out=False, as_float=False,
                   planar_source=True) -> np.ndarray:
    """One frame through the kernel its samples and output call for, launched as the converter
    launches it. ``planes``: Y, Cb, Cr (or Y and Cb Cr pairs when ``interleaved``), 2-D, holding
    ``bits``-bit samples << ``shift``; the frame is the ``size`` (width, height) window at ``crop``."""
    subsampled = planes[1].shape[0] != planes[0].shape[0]
    wide = planes[0].dtype == np.uint16
    width, height = size or (planes[0].shape[1] - crop[0], planes[0].shape[0] - crop[1])
    params = YuvToRgbParams()
    sample = planes[0].itemsize
    addresses = [gpu.upload(p) for p in planes]
    for k in range(3):
        source = 1 if k and interleaved else k
        sub = 1 if k and subsampled else 0
        step = sample * (2 if source == 1 and interleaved else 1)
        params.planes[k] = (addresses[source] + (crop[0] >> sub) * step + (crop[1] >> sub) * planes[source].strides[0]
                            + (sample if k == 2 and interleaved else 0))
        params.x_steps[k], params.y_steps[k] = step, planes[source].strides[0]
    shape = (3, height, width) if planar_out else (height, width, 3)
    out = np.zeros(shape, np.float32 if as_float else np.uint8)
    params.dst = gpu.upload(out)
    if planar_out:
        params.dst_chan_stride, params.dst_row_stride, params.dst_col_stride = height * width, width, 1
    else:
        params.dst_chan_stride, params.dst_row_stride, params.dst_col_stride = 1, width * 3, 3
    params.width, params.height = width, height
    params.chroma = TC_CHROMA_420 if subsampled else TC_CHROMA_444
    params.sample_bits, params.sample_shift = bits, shift
    params.route = probe.probe_route(bits, int(subsampled), int(planar_source), width, height, int(as_float))
    probe.probe_coeffs(matrix, int(full_range), params.coeffs)
    if subsampled and params.route not in (ROUTES["x86"], ROUTES["table"]):
        table = np.zeros(1 << 20, np.uint8)
        v_taps, h_taps = ctypes.c_int(), ctypes.c_int()
        size = probe.probe_filter_table(width, height, table.ctypes.data, table.nbytes, ctypes.byref(v_taps),
                                        ctypes.byref(h_taps))
        assert size > 0
        params.filters, params.v_taps, params.h_taps = gpu.upload(table[:size]), v_taps.value, h_taps.value
    function = f"tc_convert_yuv{16 if wide else 8}_to_rgb{'f' if as_float else '8'}"
    gpu.launch(function, params, (((width + 1) // 2 + 31) // 32, (height + 7) // 8, 1))
    result = gpu.download(params.dst, out)
    return result.transpose(1, 2, 0) if planar_out else result


def chroma_420(plane: np.ndarray, height: int, width: int) -> np.ndarray:
    return np.repeat(np.repeat(plane, 2, axis=0), 2, axis=1)[:height, :width]


@pytest.mark.cuda
@pytest.mark.parametrize("full_range", [False, True])
@pytest.mark.parametrize("matrix", [6, 1, 9])
def test_nv12_kernel_gives_the_cpu_formula_for_every_8bit_triple(gpu, probe, formula, matrix, full_range):
    """yuv420p of even height: swscale's x86 converter, colour.h's formula (on the CPU, 2^24 triples)."""
    side = 4096
    half = side // 2
    k = np.arange(half * half, dtype=np.int64).reshape(half, half)
    u, v = ((k % 65536) >> 8).astype(np.uint8), (k & 255).astype(np.uint8)
    y = np.empty((side, side), np.uint8)
    for dy in range(2):
        for dx in range(2):
            y[dy::2, dx::2] = (k // 65536) * 4 + dy * 2 + dx
    uv = np.stack([u, v], axis=-1).reshape(half, side)

    rgb = convert_on_gpu(gpu, probe, [y, uv], 8, matrix, full_range, interleaved=True)

    expected = formula.rgb8(matrix, full_range, y, chroma_420(u, side, side), chroma_420(v, side, side))
    np.testing.assert_array_equal(rgb, expected)


@pytest.mark.cuda
@pytest.mark.parametrize("full_range", [False, True])
@pytest.mark.parametrize("planar_out", [False, True], ids=["hwc", "chw"])
@pytest.mark.parametrize("as_float", [False, True], ids=["uint8", "float32"])
def test_kernels_give_swscales_bytes_on_odd_sized_crops_of_every_layout(gpu, probe, planar_out, as_float, full_range):
    """Every layout (NV12 / P016 / planar 4:2:0, 4:4:4; 8, 10, 12 and 16 bits) on a 161 x 121 window
    of a larger frame (odd sizes: the general scaler's chroma filters in both directions), against
    tests/swscale_model.py (itself checked against the ffmpeg CLI)."""
    rng = np.random.default_rng(5)
    coded_w, coded_h, crop, width, height = 180, 130, (4, 2), 161, 121
    window = np.s_[crop[1]:crop[1] + height, crop[0]:crop[0] + width]
    chroma_window = np.s_[crop[1] // 2:(crop[1] + height + 1) // 2, crop[0] // 2:(crop[0] + width + 1) // 2]
    for bits in (8, 10, 12, 16):
        dtype = np.uint8 if bits == 8 else np.uint16
        y = rng.integers(0, 1 << bits, (coded_h, coded_w)).astype(dtype)
        u420, v420 = (rng.integers(0, 1 << bits, (coded_h // 2, coded_w // 2)).astype(dtype) for _ in range(2))
        u444, v444 = (rng.integers(0, 1 << bits, (coded_h, coded_w)).astype(dtype) for _ in range(2))
        msb = 16 - bits if bits > 8 else 0
        cases = [   # (planes as stored, interleaved, right shift, the model's planes)
            ([y, u420, v420], False, 0, (y[window], u420[chroma_window], v420[chroma_window])),
            ([y << msb, np.stack([u420, v420], -1).reshape(coded_h // 2, coded_w) << msb], True, msb,
             (y[window], u420[chroma_window], v420[chroma_window])),
            ([y, u444, v444], False, 0, (y[window], u444[window], v444[window])),
        ]
        for planes, interleaved, shift, model_planes in cases:
            got = convert_on_gpu(gpu, probe, planes, bits, 1, full_range, interleaved=interleaved, crop=crop,
                                 size=(width, height), shift=shift, planar_out=planar_out, as_float=as_float)
            expected = swscale_model.convert(*model_planes, bits, 1, full_range, as_float)
            if as_float:
                expected = expected / np.float32(65535)
            np.testing.assert_array_equal(got, expected, err_msg=f"{bits} bits, interleaved {interleaved}")


@pytest.mark.cuda
@pytest.mark.parametrize("aligned", [True, False])
def test_copy_kernel_copies_strided_batches(gpu, aligned):
    rng = np.random.default_rng(1)
    count, rows, row_bytes = 3, 37, 320 if aligned else 317
    src = rng.integers(0, 256, (count, rows, 512), dtype=np.uint8)
    dst = np.zeros((count, rows + 1, 384), np.uint8)
    params = CopyParams(src=gpu.upload(src), dst=gpu.upload(dst), src_pitch=512, dst_pitch=384,
                        src_batch_stride=rows * 512, dst_batch_stride=(rows + 1) * 384,
                        row_bytes=row_bytes, rows=rows, count=count)
    gpu.launch("tc_copy_strided", params, (4, (rows + 7) // 8, count))
    got = gpu.download(params.dst, dst)
    np.testing.assert_array_equal(got[:, :rows, :row_bytes], src[:, :, :row_bytes])
    assert not got[:, :rows, row_bytes:].any() and not got[:, rows].any()
