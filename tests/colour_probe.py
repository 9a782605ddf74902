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


class Formula:
    """colour.h through ctypes, on numpy planes of equal shape."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        c_int, c_void_p = ctypes.c_int, ctypes.c_void_p
        lib.probe_coeffs.argtypes = [c_int, c_int, np.ctypeslib.ndpointer(np.int32, flags="C_CONTIGUOUS"),
                                     np.ctypeslib.ndpointer(np.float32, flags="C_CONTIGUOUS")]
        lib.probe_convert.argtypes = [c_int, c_int, c_int, c_void_p, c_void_p, c_void_p, ctypes.c_int64,
                                      c_void_p, c_void_p]
        self.lib = lib

    def coeffs(self, matrix: int, full_range: bool) -> tuple[list[int], list[float]]:
        ints, floats = np.zeros(6, np.int32), np.zeros(6, np.float32)
        self.lib.probe_coeffs(matrix, int(full_range), ints, floats)
        return ints.tolist(), floats.tolist()

    def _convert(self, out_dtype, matrix: int, full_range: bool, y, u, v, bits: int) -> np.ndarray:
        sample = np.uint8 if bits == 8 else np.uint16
        y, u, v = (np.ascontiguousarray(p, dtype=sample) for p in (y, u, v))
        assert y.shape == u.shape == v.shape
        out = np.empty((*y.shape, 3), out_dtype)
        pointer = out.ctypes.data_as(ctypes.c_void_p)
        self.lib.probe_convert(matrix, int(full_range), bits, y.ctypes.data, u.ctypes.data, v.ctypes.data,
                               y.size, pointer if out_dtype == np.uint8 else None,
                               pointer if out_dtype == np.float32 else None)
        return out

    def rgb8(self, matrix: int, full_range: bool, y, u, v, bits: int = 8) -> np.ndarray:
        """uint8 RGB (..., 3) of samples of ``bits`` bits (8: uint8 planes, else uint16)."""
        return self._convert(np.uint8, matrix, full_range, y, u, v, bits)

    def rgbf(self, matrix: int, full_range: bool, y, u, v, bits: int = 8) -> np.ndarray:
        """float32 RGB (..., 3) in [0, 1]."""
        return self._convert(np.float32, matrix, full_range, y, u, v, bits)


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
