"""include/torchcodec/colour.h, the YUV -> RGB arithmetic of the CUDA kernels, checked on the CPU.

tests/colour_probe.c wraps the header's inline functions in batch loops; tests/colour_probe.py
compiles it with the system C compiler against the headers of the torchcodec under test.
References come from the ffmpeg CLI (libswscale, as the CPU decoder uses it):

- every 8-bit (Y, Cb, Cr) triple, in a yuv420p frame whose chroma is constant over each 2x2 block,
  so that chroma upsampling plays no part: libswscale's x86 YUV420 -> RGB24 converter (the one
  behind ``-vf format=rgb24`` and the CPU decoder for 8-bit 4:2:0 of even height) gives exactly the
  formula's bytes, for every matrix and range;
- every triple in a yuv444p frame: libswscale's general path (30-bit rounding) is within 3;
- decoded frames of the corpus with chroma taken as the kernels take it (each 4:2:0 chroma sample
  for its 2x2 block): equal for 8-bit 4:2:0 of even size, within stated tolerances elsewhere.
"""
from __future__ import annotations

import pathlib
import platform
import subprocess

import numpy as np
import pytest

import colour_probe
import reference

# AVColorSpace numbers (what colour.h takes) of the matrices the CLI's scale filter can be told.
MATRICES = {"bt601": 6, "bt709": 1, "bt2020": 9}
RANGES = {"tv": 0, "pc": 1}
# ffprobe's color_space names -> AVColorSpace
FFPROBE_MATRICES = {"bt709": 1, "unknown": 2, "fcc": 4, "bt470bg": 5, "smpte170m": 6,
                    "smpte240m": 7, "ycgco": 8, "bt2020nc": 9, "bt2020c": 10}
X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")
# 4096 x 4096 luma samples: each of the 2^24 triples once.
SIDE = 4096


@pytest.fixture(scope="module")
def formula(tmp_path_factory) -> colour_probe.Formula:
    return colour_probe.build(tmp_path_factory.mktemp("colour_probe"))


def _swscale(raw: bytes, pix_fmt: str, width: int, height: int, matrix: str, rng: str,
             out_fmt: str = "rgb24") -> np.ndarray:
    """The ffmpeg CLI's conversion of one raw frame, with the matrix and range given explicitly."""
    proc = subprocess.run(
        [reference.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-f", "rawvideo",
         "-pix_fmt", pix_fmt, "-s", f"{width}x{height}", "-i", "-",
         "-vf", f"scale=in_color_matrix={matrix}:in_range={rng},format={out_fmt}",
         "-f", "rawvideo", "-"], input=raw, capture_output=True, check=True)
    dtype = np.uint8 if out_fmt == "rgb24" else np.dtype("<u2")
    return np.frombuffer(proc.stdout, dtype).reshape(height, width, 3)


@pytest.fixture(scope="module")
def triples_420():
    """Y (SIDE x SIDE) and U, V (SIDE/2 square): chroma constant per 2x2 block, every triple once."""
    half = SIDE // 2
    k = np.arange(half * half, dtype=np.int64).reshape(half, half)
    pair, block = k % 65536, k // 65536         # 65536 (U, V) pairs x 64 blocks of 4 luma values
    u, v = (pair >> 8).astype(np.uint8), (pair & 255).astype(np.uint8)
    y = np.empty((SIDE, SIDE), np.uint8)
    for dy in range(2):
        for dx in range(2):
            y[dy::2, dx::2] = block * 4 + dy * 2 + dx
    return y, u, v


@pytest.fixture(scope="module")
def triples_444():
    k = np.arange(SIDE * SIDE, dtype=np.int64).reshape(SIDE, SIDE)
    return (k >> 16).astype(np.uint8), ((k >> 8) & 255).astype(np.uint8), (k & 255).astype(np.uint8)


def _upsample(plane: np.ndarray, height: int, width: int) -> np.ndarray:
    """4:2:0 chroma as the kernels read it: sample (r >> 1, c >> 1) for pixel (r, c)."""
    return np.repeat(np.repeat(plane, 2, axis=0), 2, axis=1)[:height, :width]


def _report(label: str, diff: np.ndarray) -> str:
    per_pixel = diff.max(axis=-1)
    counts = np.bincount(per_pixel.ravel())
    return f"{label}: {int((per_pixel > 0).sum())} of {per_pixel.size} differ, histogram {counts.tolist()}"


def test_coefficients_are_libswscale_fixed_point(formula):
    # BT.601 limited range: swscale's x86 tables (yCoeff 9539 = 255/219 in 3.13, vrCoeff = 1.596).
    ints, floats = formula.coeffs(6, False)
    assert ints == [128, 9539, 13075, 16525, -3209, -6660]
    assert floats[0] == 16.0 and abs(floats[1] - 1 / 219) < 1e-7
    # An unknown matrix is BT.601, as sws_getCoefficients() has it.
    assert formula.coeffs(2, True) == formula.coeffs(6, True) == formula.coeffs(99, True)
    assert formula.coeffs(10, False) == formula.coeffs(9, False)


@pytest.mark.parametrize("rng", RANGES)
@pytest.mark.parametrize("matrix", MATRICES)
def test_formula_equals_swscale_yuv420_rgb24_for_every_8bit_triple(formula, triples_420, matrix, rng):
    y, u, v = triples_420
    expected = _swscale(y.tobytes() + u.tobytes() + v.tobytes(), "yuv420p", SIDE, SIDE, matrix, rng)

    ours = formula.rgb8(MATRICES[matrix], RANGES[rng], y, _upsample(u, SIDE, SIDE), _upsample(v, SIDE, SIDE))

    diff = np.abs(ours.astype(np.int16) - expected)
    print(_report(f"yuv420p {matrix} {rng}", diff))
    if X86:
        assert diff.max() == 0, _report(f"{matrix} {rng}", diff)
    else:   # other architectures have their own SIMD rounding (and the C tables): close, not equal
        assert diff.max() <= 3, _report(f"{matrix} {rng}", diff)


@pytest.mark.parametrize("rng", RANGES)
@pytest.mark.parametrize("matrix", MATRICES)
def test_formula_is_within_3_of_swscale_yuv444_rgb24_for_every_8bit_triple(formula, triples_444, matrix, rng):
    y, u, v = triples_444
    expected = _swscale(y.tobytes() + u.tobytes() + v.tobytes(), "yuv444p", SIDE, SIDE, matrix, rng)

    ours = formula.rgb8(MATRICES[matrix], RANGES[rng], y, u, v)

    diff = np.abs(ours.astype(np.int16) - expected)
    # libswscale's general path (yuv2rgb_write_full) sums Y * 2^9, Cb * 2^9 and Cr * 2^9 times the
    # same 16-bit coefficients in an int32; far out of gamut (limited range, Y >= 236 with Cb near
    # 255) blue passes 2^31, wraps negative and is clipped to 0 where the formula saturates at 255.
    ints, _ = formula.coeffs(MATRICES[matrix], RANGES[rng])
    y_offset, y_coeff, _, u2b, _, _ = ints
    blue = ((y.astype(np.int64) << 9) - y_offset * 64) * y_coeff + (1 << 21) + ((u.astype(np.int64) - 128) << 9) * u2b
    wrapped = blue >= 2**31
    print(_report(f"yuv444p {matrix} {rng}", diff), f"- swscale int32 overflow: {int(wrapped.sum())} triples")
    assert (expected[wrapped][:, 2] == 0).all() and (ours[wrapped][:, 2] == 255).all()
    if rng == "pc":
        assert not wrapped.any()
    diff[wrapped, 2] = 0
    assert diff.max() <= 3, _report(f"{matrix} {rng}", diff)


@pytest.mark.parametrize("rng", RANGES)
@pytest.mark.parametrize("matrix", MATRICES)
def test_formula_on_10bit_yuv444_sweep_is_close_to_swscale(formula, matrix, rng):
    """Every 10-bit Y with Cb, Cr in steps of 8 (and 1023): 2^24 triples, no chroma upsampling."""
    k = np.arange(SIDE * SIDE, dtype=np.int64).reshape(SIDE, SIDE)
    chroma = np.minimum(np.arange(128) * 8 + (np.arange(128) == 127) * 7, 1023)
    y = (k >> 14).astype(np.uint16)
    u, v = chroma[(k >> 7) & 127].astype(np.uint16), chroma[k & 127].astype(np.uint16)
    raw = y.tobytes() + u.tobytes() + v.tobytes()
    expected8 = _swscale(raw, "yuv444p10le", SIDE, SIDE, matrix, rng)
    expectedf = _swscale(raw, "yuv444p10le", SIDE, SIDE, matrix, rng, "rgb48le") / np.float32(65535)

    ours8 = formula.rgb8(MATRICES[matrix], RANGES[rng], y, u, v, bits=10)
    diff8 = np.abs(ours8.astype(np.int16) - expected8)
    difff = np.abs(formula.rgbf(MATRICES[matrix], RANGES[rng], y, u, v, bits=10) - expectedf)

    # swscale's int32 overflow again (see the 8-bit 4:4:4 sweep), only in its RGB24 output.
    wrapped = (expected8[..., 2] == 0) & (ours8[..., 2] == 255)
    print(_report(f"yuv444p10le {matrix} {rng} uint8", diff8),
          f"- swscale int32 overflow: {int(wrapped.sum())} triples; float32 max {difff.max():.5f}")
    assert (y[wrapped] >= 220 * 4).all() and (u[wrapped] >= 238 * 4).all()   # out of gamut only
    if rng == "pc":
        assert not wrapped.any()
    diff8[wrapped, 2] = 0
    assert diff8.max() <= 1, _report(f"{matrix} {rng}", diff8)
    assert difff.max() <= 0.004                   # measured 0.0039 (limited), 0.0010 (full range)


@pytest.mark.parametrize("bits", [10, 12, 16])
def test_full_range_deep_samples_are_scaled_by_their_true_maximum(formula, bits):
    """ITU-T H.273's full range at ``bits`` bits: code 2^bits - 1 is white and chroma is centred on
    2^(bits - 1), so a grey ramp (Cb = Cr = centre) gives Y / (2^bits - 1), and 255 exactly at the top
    (scaling by 2^(bits - 8) instead made 10-bit white 255.75 and 1000 -> 250). FFmpeg 5.1's swscale
    shifts; the sweep above bounds that difference by 1."""
    top = (1 << bits) - 1
    y = np.unique(np.linspace(0, top, 4096).round().astype(np.uint16))
    centre = np.full_like(y, 1 << (bits - 1))
    for matrix in MATRICES.values():
        rgbf = formula.rgbf(matrix, True, y, centre, centre, bits=bits)
        np.testing.assert_allclose(rgbf, np.repeat((y / top)[:, None], 3, 1), rtol=0, atol=2e-7)
        rgb8 = formula.rgb8(matrix, True, y, centre, centre, bits=bits)
        expected8 = np.floor(y.astype(np.float64) * 255 / top + 0.5)
        near_half = np.abs(y.astype(np.float64) * 255 / top % 1 - 0.5) < 1e-4
        assert (rgb8[~near_half] == expected8[~near_half, None]).all()
        assert rgb8[-1].tolist() == [255, 255, 255] and rgbf[-1].tolist() == [1.0, 1.0, 1.0]
    if bits == 10:
        assert formula.rgb8(1, True, np.array([1000], np.uint16), centre[:1], centre[:1], bits=10)[0, 0] == 249


# name -> ((lowest, highest) uint8 difference ours - swscale, its mean, bound on the mean of its
# absolute value, max |difference| of float32 output), measured with FFmpeg 5.1 on x86. Against
# swscale the formula's rounding leans one way per format, so the range and the mean are signed:
# an unsigned maximum would let a one-level error the other way pass. The signed mean may move by
# 0.1 at most. 8-bit 4:2:0 of even size is equal; float32 differs because the CPU's float output
# is swscale's RGB48 (its C table converter at 8-bit precision for these frames: measured 0.0114,
# 0.0134, 0.0060). 4:4:4 differs by the formula's rounding only (swscale's general path rounds at
# 30 bits and comes out up to 3 higher; float32 0.0039). Odd-sized and 10-bit 4:2:0 also go
# through swscale's general path, which interpolates chroma (vertically bicubic, 4 taps) where the
# kernels take the nearest sample: for these the range and the float32 maximum hold where chroma
# is constant over the 5 x 5 chroma samples around the pixel's own (the filter's reach), where only
# the arithmetic differs, and CHROMA_EDGES bounds the other pixels. The means cover every pixel
# (measured mean |difference| 4.83, 1.68, 1.51, 0.62, 0.61).
REAL_FRAMES = {
    "h264_bframes.mp4": ((0, 0), 0.0, 0.0, 0.012),
    "h264_bt709.mp4": ((0, 0), 0.0, 0.0, 0.014),
    "h264_fullrange.mp4": ((0, 0), 0.0, 0.0, 0.007),
    "vp9_161x121.webm": ((-2, 0), -0.86, 4.9, 0.004),
    "h264_10bit.mp4": ((0, 3), 0.84, 1.7, 0.004),
    "hevc_10bit.mp4": ((-1, 3), 0.66, 1.55, 0.004),
    "h264_yuv444.mp4": ((-3, 0), -0.62, 0.65, 0.004),
    "h264_yuv444_161x121.mp4": ((-3, 0), -0.61, 0.65, 0.004),
}
# name -> (max uint8, max float32 difference) where chroma changes near the pixel, as measured: a
# pixel beside one of the test pattern's sharp colour edges gets, from swscale, chroma interpolated
# between the two colours and, from the nearest sample, one of them. The difference is the
# pattern's largest chroma step times the matrix's chroma coefficient (up to 2.02 for blue), a
# property of these frames, not a rounding: it cannot be smaller while the formula takes the
# nearest chroma sample, and is 0 only for a formula that interpolates as swscale does.
CHROMA_EDGES = {
    "vp9_161x121.webm": (206, 0.808),
    "h264_10bit.mp4": (79, 0.310),
    "hevc_10bit.mp4": (80, 0.309),
}
REACH = 2       # chroma samples each side that swscale's chroma filter reads


def _chroma_constant(u: np.ndarray, v: np.ndarray, height: int, width: int) -> np.ndarray:
    """Pixels whose 4:2:0 chroma (u, v: the planes at chroma resolution) is constant over the
    (2 REACH + 1)^2 chroma samples around their own, the planes' edges repeated."""
    constant = np.ones(u.shape, bool)
    for plane in (u, v):
        padded = np.pad(plane, REACH, mode="edge")
        for dy in range(2 * REACH + 1):
            for dx in range(2 * REACH + 1):
                constant &= padded[dy:dy + plane.shape[0], dx:dx + plane.shape[1]] == plane
    return _upsample(constant, height, width)


def _planes(path: pathlib.Path, count: int):
    """The first ``count`` frames' Y, U, V planes as the decoder outputs them (chroma as the
    kernels read it), the pixel format's bit depth, and for each frame the pixels whose chroma
    is constant around them (every pixel for 4:4:4)."""
    stream = reference.ffprobe_stream(path, reference.best_stream(path))
    pix_fmt, width, height = stream["pix_fmt"], stream["width"], stream["height"]
    bits = 10 if "p10" in pix_fmt else 8
    dtype = np.dtype("<u2") if bits > 8 else np.dtype(np.uint8)
    cw, ch = ((width + 1) // 2, (height + 1) // 2) if "420" in pix_fmt else (width, height)
    frame_size = width * height + 2 * cw * ch
    data = np.frombuffer(reference.ffmpeg_raw_video(path), dtype)
    frames, constant = [], []
    for i in range(count):
        f = data[i * frame_size:(i + 1) * frame_size]
        y = f[:width * height].reshape(height, width)
        u = f[width * height:width * height + cw * ch].reshape(ch, cw)
        v = f[width * height + cw * ch:].reshape(ch, cw)
        if "420" in pix_fmt:
            constant.append(_chroma_constant(u, v, height, width))
            u, v = _upsample(u, height, width), _upsample(v, height, width)
        else:
            constant.append(np.ones((height, width), bool))
        frames.append((y, u, v))
    return stream, bits, frames, np.stack(constant)


@pytest.mark.parametrize("name", REAL_FRAMES)
def test_formula_on_decoded_frames_against_the_cli(formula, media, name):
    count = 8
    stream, bits, frames, constant = _planes(media[name], count)
    matrix = FFPROBE_MATRICES.get(stream.get("color_space", "unknown"), 2)
    full = stream.get("color_range") == "pc"
    expected8 = reference.ffmpeg_rgb_frames(media[name], pix_fmt="rgb24")[:count]
    expected16 = reference.ffmpeg_rgb_frames(media[name], pix_fmt="rgb48le")[:count]

    ours8 = np.stack([formula.rgb8(matrix, full, *planes, bits=bits) for planes in frames])
    oursf = np.stack([formula.rgbf(matrix, full, *planes, bits=bits) for planes in frames])

    signed8 = ours8.astype(np.int16) - expected8
    diff8 = np.abs(signed8)
    difff = np.abs(oursf - expected16 / np.float32(65535))
    (low8, high8), bias8, mean8, maxf = REAL_FRAMES[name]
    # the pixels the maxima judge: all, but for the rows where swscale interpolates chroma
    judged = constant if name in CHROMA_EDGES else np.ones_like(constant)
    print(_report(f"{name} uint8", diff8), f"mean {diff8.mean():.3f}, signed {signed8.mean():+.3f};",
          f"float32 max {difff.max():.5f} mean {difff.mean():.6f};",
          f"judged: {judged.mean():.3f} of the pixels, from {signed8[judged].min()} to {signed8[judged].max()},",
          f"float32 max {difff[judged].max():.5f}")
    assert diff8.mean() <= mean8 and abs(signed8.mean() - bias8) <= 0.1, _report(name, diff8)
    assert low8 <= signed8[judged].min() and signed8[judged].max() <= high8, _report(name, diff8[judged])
    assert difff[judged].max() <= maxf
    if name in CHROMA_EDGES:
        assert constant.mean() > 1 / 6, "too few pixels of constant chroma for the bound to say much"
        edge8, edgef = CHROMA_EDGES[name]
        assert diff8.max() <= edge8, _report(name, diff8)
        assert difff.max() <= edgef
