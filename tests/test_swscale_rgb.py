"""swscale's YUV -> RGB arithmetic, as the CUDA kernels compute it (include/torchcodec/swscale_rgb.h):
tests/swscale_model.py, a numpy model of it, checked against the ffmpeg CLI's bytes on frames of
random samples (every route: 8- to 16-bit, 4:2:0 planar and semi-planar, 4:4:4, RGB24 and RGB48,
even, odd and tiny sizes, limited and full range, the matrices the CLI can be told). The kernels
are held to the CPU path on the same kind of frames in tests/test_cuda_exact.py.
"""
from __future__ import annotations

import subprocess
import zlib

import numpy as np
import pytest

import reference
import swscale_model

# The scale filter's matrix names, by AVColorSpace ("auto": the frame's, unspecified: BT.601).
CLI_MATRICES = {1: "bt709", 4: "fcc", 5: "bt470", 6: "smpte170m", 7: "smpte240m", 9: "bt2020", 2: "auto"}
COMBINATIONS = [(m, full) for m in CLI_MATRICES for full in (False, True)]
FORMATS = {   # pix_fmt: (bits, 4:2:0, semi-planar, MSB shift)
    "yuv420p": (8, True, False, 0), "yuv420p10le": (10, True, False, 0), "yuv420p12le": (12, True, False, 0),
    "yuv420p16le": (16, True, False, 0), "yuv444p": (8, False, False, 0), "yuv444p10le": (10, False, False, 0),
    "yuv444p12le": (12, False, False, 0), "nv12": (8, True, True, 0), "p010le": (10, True, True, 6),
}
# Even, odd in either direction, both odd; 5 and 7 rows: a 2-tap vertical chroma filter; 1 and 2 rows.
SIZES = [(64, 32), (33, 18), (34, 17), (33, 17), (161, 121), (10, 5), (9, 7), (5, 2), (3, 1)]


def random_planes(rng: np.random.Generator, width: int, height: int, bits: int, subsampled: bool):
    cw, ch = ((width + 1) // 2, (height + 1) // 2) if subsampled else (width, height)
    dtype = np.uint8 if bits == 8 else np.uint16
    return [rng.integers(0, 1 << bits, shape).astype(dtype) for shape in ((height, width), (ch, cw), (ch, cw))]


def raw_bytes(planes, semi_planar: bool, shift: int) -> bytes:
    y, u, v = (p.astype(p.dtype) << shift if shift else p for p in planes)
    if semi_planar:
        return y.tobytes() + np.stack([u, v], axis=-1).tobytes()
    return y.tobytes() + u.tobytes() + v.tobytes()


def cli_rgb(raw: bytes, pix_fmt: str, width: int, height: int, matrix: str, full: bool, rgb48: bool) -> np.ndarray:
    out_fmt = "rgb48le" if rgb48 else "rgb24"
    proc = subprocess.run(
        [reference.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-f", "rawvideo", "-pix_fmt", pix_fmt,
         "-s", f"{width}x{height}", "-i", "-", "-vf",
         f"scale=in_color_matrix={matrix}:in_range={'pc' if full else 'tv'},format={out_fmt}", "-f", "rawvideo", "-"],
        input=raw, capture_output=True, check=True)
    return np.frombuffer(proc.stdout, "<u2" if rgb48 else np.uint8).reshape(height, width, 3)


@pytest.mark.parametrize("rgb48", [False, True], ids=["rgb24", "rgb48"])
@pytest.mark.parametrize("width,height", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("pix_fmt", FORMATS)
def test_the_model_gives_swscales_bytes(pix_fmt, width, height, rgb48):
    bits, subsampled, semi_planar, shift = FORMATS[pix_fmt]
    rng = np.random.default_rng(zlib.crc32(repr((pix_fmt, width, height, rgb48)).encode()))
    # three of the (matrix, range) pairs per case, a different three for each size
    start = SIZES.index((width, height)) * 3
    for matrix, full in (COMBINATIONS[(start + k) % len(COMBINATIONS)] for k in range(3)):
        planes = random_planes(rng, width, height, bits, subsampled)
        expected = cli_rgb(raw_bytes(planes, semi_planar, shift), pix_fmt, width, height, CLI_MATRICES[matrix], full,
                           rgb48)
        got = swscale_model.convert(*planes, bits, matrix, full, rgb48, planar=not semi_planar)
        kind = swscale_model.route(bits, subsampled, not semi_planar, width, height, rgb48)
        if kind == "table" and width % 2:
            # swscale's C converter leaves the last column of odd widths unwritten
            expected, got = expected[:, :-1], got[:, :-1]
        diff = np.abs(got.astype(np.int64) - expected)
        assert diff.max() == 0, (pix_fmt, width, height, rgb48, matrix, full, kind, int((diff.max(axis=-1) > 0).sum()))


def test_each_route_is_taken_where_swscale_takes_it():
    assert swscale_model.route(8, True, True, 33, 18, False) == "x86"
    assert swscale_model.route(8, True, True, 33, 18, True) == "table"
    assert swscale_model.route(8, True, True, 34, 17, False) == "packed"      # odd height: the general scaler
    assert swscale_model.route(8, True, False, 34, 18, False) == "packed"     # NV12 too
    assert swscale_model.route(10, True, True, 33, 18, False) == "full"       # odd width: chroma per pixel
    assert swscale_model.route(8, False, True, 34, 18, False) == "full"       # 4:4:4
    assert swscale_model.route(12, True, True, 34, 18, True) == "rgb48"


def test_the_unscaled_rgb48_converter_leaves_the_last_odd_column_unwritten():
    """Why the comparisons skip that column: swscale's output there is whatever the memory held
    (the CLI's frame pool gives zeros; torchcodec's CPU float32 path, leftover bytes)."""
    rng = np.random.default_rng(7)
    planes = random_planes(rng, 33, 18, 8, True)
    got = cli_rgb(raw_bytes(planes, False, 0), "yuv420p", 33, 18, "bt709", False, True)
    model = swscale_model.convert(*planes, 8, 1, False, True)
    np.testing.assert_array_equal(got[:, :-1], model[:, :-1])
    assert not np.array_equal(got[:, -1], model[:, -1])


def test_the_filters_are_swscales_for_common_sizes():
    """Spot checks of initFilter's output (4:2:0 chroma of 1080 rows): 4 taps in the interior, the
    two phases of an exact 2x upscale, the borders folded onto the first and last rows."""
    first, coeffs = swscale_model.init_filter(540, 1080, 2, 1 << 12)
    assert coeffs.shape == (1080, 4) and (coeffs.sum(axis=1) == 4096).all()
    assert first[0] == 0 and first[-1] == 540 - 4
    np.testing.assert_array_equal(coeffs[10], coeffs[12])
    np.testing.assert_array_equal(coeffs[11], coeffs[13])
    np.testing.assert_array_equal(coeffs[10], coeffs[11][::-1])
    assert (np.diff(first[4:-4:2]) == 1).all()


@pytest.mark.parametrize("pix_fmt", ["yuv420p10le", "yuv420p", "yuv444p"])
def test_the_comparison_sees_one_chroma_sample_one_level_off(pix_fmt):
    """The control: the model given one chroma sample changed by one level differs from swscale
    (in RGB48, which resolves one level of any sample)."""
    bits, subsampled, _, _ = FORMATS[pix_fmt]
    planes = random_planes(np.random.default_rng(3), 34, 17, bits, subsampled)
    expected = cli_rgb(raw_bytes(planes, False, 0), pix_fmt, 34, 17, "bt709", False, True)
    np.testing.assert_array_equal(swscale_model.convert(*planes, bits, 1, False, True), expected)
    planes[1][4, 8] ^= 1
    assert not np.array_equal(swscale_model.convert(*planes, bits, 1, False, True), expected)
