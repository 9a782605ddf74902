"""include/torchcodec/colour.h on the CPU: tests/colour_probe.c compiled with the system C compiler
against the headers of the torchcodec under test (torchcodec.get_include()), loaded with ctypes."""
from __future__ import annotations

import ctypes
import os
import pathlib
import shutil
import subprocess
import sysconfig

import numpy as np

import torchcodec

SOURCE = pathlib.Path(__file__).resolve().parent / "colour_probe.c"

_u8 = np.ctypeslib.ndpointer(np.uint8, flags="C_CONTIGUOUS")
_u16 = np.ctypeslib.ndpointer(np.uint16, flags="C_CONTIGUOUS")
_f32 = np.ctypeslib.ndpointer(np.float32, flags="C_CONTIGUOUS")
_i32 = np.ctypeslib.ndpointer(np.int32, flags="C_CONTIGUOUS")


class Formula:
    """colour.h through ctypes, on numpy planes of equal shape."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        c_int, c_int64 = ctypes.c_int, ctypes.c_int64
        lib.probe_coeffs.argtypes = [c_int, c_int, _i32, _f32]
        lib.probe_yuv8_to_rgb8.argtypes = [c_int, c_int, _u8, _u8, _u8, c_int64, _u8]
        lib.probe_yuv8_to_rgbf.argtypes = [c_int, c_int, _u8, _u8, _u8, c_int64, _f32]
        lib.probe_yuv16_to_rgbf.argtypes = [c_int, c_int, c_int, _u16, _u16, _u16, c_int64, _f32]
        lib.probe_yuv16_to_rgb8.argtypes = [c_int, c_int, c_int, _u16, _u16, _u16, c_int64, _u8]
        self.lib = lib

    def coeffs(self, matrix: int, full_range: bool) -> tuple[list[int], list[float]]:
        ints, floats = np.zeros(6, np.int32), np.zeros(6, np.float32)
        self.lib.probe_coeffs(matrix, int(full_range), ints, floats)
        return ints.tolist(), floats.tolist()

    def _run(self, name: str, out_dtype, matrix: int, full_range: bool, y, u, v, *bits: int):
        y, u, v = (np.ascontiguousarray(p) for p in (y, u, v))
        assert y.shape == u.shape == v.shape
        out = np.empty((*y.shape, 3), out_dtype)
        getattr(self.lib, name)(matrix, int(full_range), *bits, y, u, v, y.size, out)
        return out

    def rgb8(self, matrix, full_range, y, u, v, bits: int = 8) -> np.ndarray:
        if bits == 8:
            return self._run("probe_yuv8_to_rgb8", np.uint8, matrix, full_range, y, u, v)
        return self._run("probe_yuv16_to_rgb8", np.uint8, matrix, full_range, y, u, v, bits)

    def rgbf(self, matrix, full_range, y, u, v, bits: int = 8) -> np.ndarray:
        if bits == 8:
            return self._run("probe_yuv8_to_rgbf", np.float32, matrix, full_range, y, u, v)
        return self._run("probe_yuv16_to_rgbf", np.float32, matrix, full_range, y, u, v, bits)


def build(work: pathlib.Path) -> Formula:
    """Compile tests/colour_probe.c into ``work`` and load it."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    cc = cc.split()[0]
    if shutil.which(cc) is None:
        cc = "cc"
    lib = work / "colour_probe.so"
    # -ffp-contract=off: no fused multiply-adds, so that the float path is the same on every host.
    cmd = [cc, "-O2", "-std=c11", "-Wall", "-Werror", "-ffp-contract=off", "-shared", "-fPIC",
           "-I", torchcodec.get_include(), "-o", str(lib), str(SOURCE)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{proc.stderr}")
    return Formula(ctypes.CDLL(str(lib)))
