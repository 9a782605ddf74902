"""The CUDA kernels (kernels/*.cu): built by nvcc, embedded, linked to nothing from CUDA.

Without a GPU these tests read the embedded fatbins: their container header, the architectures
(SASS from sm_75 up to the newest the build's nvcc knows, PTX of the newest), the kernel names
in every image, and the dynamic section of every extension module (no libcuda, libcudart or
libnvcuvid). The tests marked ``cuda`` launch the kernels on a GPU, through libcuda loaded with
ctypes, and compare with colour.h run on the CPU (tests/colour_probe.py) and with swscale.
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
import torchcodec
import torchcodec._core
from torchcodec._core import _build_config

KERNEL_SOURCES = pathlib.Path(__file__).resolve().parent.parent / "kernels"
FATBIN_MAGIC = 0xBA55ED50
ENTRY_PTX, ENTRY_ELF = 1, 2
CUDA_LIBRARIES = ("libcuda.so", "libcudart.so", "libnvcuvid.so", "libnvidia-")


# ------------------------------------------------------------------------------------------------
# Build configuration


def test_build_config_says_whether_the_kernels_module_exists():
    exists = importlib.util.find_spec("torchcodec._core._kernels") is not None
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
    return importlib.import_module("torchcodec._core._kernels")


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


def test_importing_the_kernels_loads_no_cuda_library(kernels):
    code = ("import torchcodec._core._kernels as k, sys; k.fatbin('colour');"
            "maps = open('/proc/self/maps').read();"
            "print([l for l in ('libcuda', 'libcudart', 'libnvcuvid') if l in maps])")
    if not os.path.exists("/proc/self/maps"):
        pytest.skip("needs /proc")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
