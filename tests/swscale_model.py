"""A numpy model of libswscale's YUV -> RGB24 / RGB48 conversion (FFmpeg 5.1, x86-64), written apart
from include/torchcodec/swscale_rgb.h from the same reading of swscale: the reference that the
tests check against swscale's own bytes (the ffmpeg CLI) and hold the CUDA kernels to.

``convert(y, u, v, bits, matrix, full_range, rgb48)`` takes planes of ``bits``-bit samples (4:2:0 or
4:4:4, as the chroma planes' shape says) and gives what ``-vf scale=...,format=rgb24`` (uint8) or
``format=rgb48le`` (uint16) gives. The routes (see swscale_rgb.h's header comment):

- yuv420p of even height: the x86 converter (RGB24) or the C table converter (RGB48, its 8-bit
  values times 257), each chroma sample for its 2x2 block; RGB48 leaves the last column of odd
  widths unwritten in swscale (the model gives the table's value there);
- everything else: the general scaler: 15-bit (RGB24) or 19-bit (RGB48) intermediates, the chroma
  filters of utils.c's initFilter (bicubic; horizontal too for odd-width 4:2:0, which swscale then
  interpolates to every pixel), and the output functions of output.c.
"""
from __future__ import annotations

import numpy as np

# sws_getCoefficients, by AVColorSpace (others: BT.601): Cr->R, Cb->B, Cb->G, Cr->G for limited range.
_COEFFICIENTS = {0: (117489, 138438, 13975, 34925), 1: (117489, 138438, 13975, 34925),
                 4: (104448, 132798, 24759, 53109), 7: (117579, 136230, 16907, 35559),
                 9: (110013, 140363, 12277, 42626), 10: (110013, 140363, 12277, 42626)}
_BT601 = (104597, 132201, 25675, 53279)


def _tdiv(a: int, b: int) -> int:
    """C's integer division (truncation towards zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _int16(f: int) -> int:
    """swscale's roundToInt16."""
    r = (f + (1 << 15)) >> 16
    return max(-0x8000, min(0x7FFF, r))


def _wrap32(a):
    """Two's complement int32 of an int64 array (or int): what C's int arithmetic wraps to."""
    return ((np.asarray(a, np.int64) + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def coefficients(matrix: int, full_range: bool) -> dict[str, int]:
    """ff_yuv2rgb_c_init_tables's numbers (brightness 0, contrast and saturation 1)."""
    crv, cbu, cgu, cgv = _COEFFICIENTS.get(matrix, _BT601)
    cgu, cgv = -cgu, -cgv
    cy, oy = 1 << 16, 0
    if full_range:
        crv, cbu, cgu, cgv = (_tdiv(c * 224, 255) for c in (crv, cbu, cgu, cgv))
    else:
        cy, oy = _tdiv(cy * 255, 219), 16 << 16
    c = {"y_offset": _int16(oy << 9), "y_coeff": _int16(cy << 13), "v2r": _int16(crv << 13),
         "v2g": _int16(cgv << 13), "u2g": _int16(cgu << 13), "u2b": _int16(cbu << 13),
         # colour.h's x86 units (the MMX/SSSE3 converter)
         "x_offset": _int16(oy << 3), "x_coeff": _int16(cy << 13), "x_v2r": _int16(crv << 13),
         "x_u2b": _int16(cbu << 13), "x_u2g": _int16(cgu << 13), "x_v2g": _int16(cgv << 13)}
    # the RGB table: luma entries and per-chroma offsets (yuv2rgb.c's fill_table / fill_gv_table)
    scaled = {k: _tdiv((f << 16) + 0x8000, cy) for k, f in (("rv", crv), ("bu", cbu), ("gu", cgu), ("gv", cgv))}
    yoffs = (384 if full_range else 326) + 512
    index = np.arange(2048, dtype=np.int64)
    c["table"] = np.clip((-(384 << 16) - 512 * cy - oy + index * cy + 0x8000) >> 16, 0, 255)
    chroma = np.arange(256, dtype=np.int64)
    c["r_off"] = yoffs - (scaled["rv"] >> 9) + ((chroma * scaled["rv"]) >> 16)
    c["gu_off"] = yoffs - (scaled["gu"] >> 9) + ((chroma * scaled["gu"]) >> 16)
    c["gv_off"] = -(scaled["gv"] >> 9) + ((chroma * scaled["gv"]) >> 16)
    c["b_off"] = yoffs - (scaled["bu"] >> 9) + ((chroma * scaled["bu"]) >> 16)
    return c


def init_filter(src_n: int, dst_n: int, align: int, one: int, kind: str = "bicubic") -> tuple[np.ndarray, np.ndarray]:
    """utils.c's initFilter (``kind``: "bicubic", SWS_BICUBIC with B = 0, C = 0.6, the CLI's
    conversion; "bilinear", SWS_BILINEAR, TorchCodec's Resize) from src_n to dst_n samples at the
    default positions: (first source sample, coefficients) per output sample."""
    x_inc = ((src_n << 16) + (dst_n >> 1)) // dst_n
    ratio = max(src_n // dst_n, 1)
    fone = 1 << (54 - min(ratio.bit_length() - 1, 8))
    cutoff = 0.002 * fone
    if abs(x_inc - 0x10000) < 10:
        size, pos, filt = 1, list(range(dst_n)), [[fone] for _ in range(dst_n)]
    else:
        b, c_param = 0, int(0.6 * (1 << 24))
        support = 2 if kind == "bilinear" else 4
        size = 1 + support if x_inc <= 1 << 16 else 1 + (support * src_n + dst_n - 1) // dst_n
        size = max(1, min(size, src_n - 2))
        pos, filt = [], []
        centre = ((128 * x_inc) >> 7) - ((128 * 0x10000) >> 7)
        for _ in range(dst_n):
            xx = _tdiv(centre - (size - 2) * (1 << 16), 1 << 17)
            pos.append(xx)
            row = []
            for _j in range(size):
                d = abs(xx * (1 << 17) - centre) << 13
                if x_inc > 1 << 16:
                    d = _tdiv(d * dst_n, src_n)
                if kind == "bilinear":
                    coeff = max((1 << 30) - d, 0) * (fone >> 30)
                elif d >= 1 << 31:
                    coeff = 0
                else:
                    dd = (d * d) >> 30
                    ddd = (dd * d) >> 30
                    if d < 1 << 30:
                        coeff = ((12 * (1 << 24) - 9 * b - 6 * c_param) * ddd
                                 + (-18 * (1 << 24) + 12 * b + 6 * c_param) * dd + (6 * (1 << 24) - 2 * b) * (1 << 30))
                    else:
                        coeff = ((-b - 6 * c_param) * ddd + (6 * b + 30 * c_param) * dd
                                 + (-12 * b - 48 * c_param) * d + (8 * b + 24 * c_param) * (1 << 30))
                row.append(coeff if kind == "bilinear" else _tdiv(coeff, (1 << 54) // fone))
                xx += 1
            filt.append(row)
            centre += 2 * x_inc
    # drop near-zero taps: on the left by shifting, on the right by counting
    min_size = 0
    for i in range(dst_n - 1, -1, -1):
        row, keep, cut = filt[i], size, 0
        for _j in range(size):
            cut += abs(row[0])
            if cut > cutoff or (i < dst_n - 1 and pos[i] >= pos[i + 1]):
                break
            row[:] = row[1:] + [0]
            pos[i] += 1
        cut = 0
        for j in range(size - 1, 0, -1):
            cut += abs(row[j])
            if cut > cutoff:
                break
            keep -= 1
        min_size = max(min_size, keep)
    if min_size == 1 and align == 2:
        align = 1
    new_size = (min_size + align - 1) // align * align
    filt = [(row + [0] * new_size)[:new_size] for row in filt]
    size = new_size
    for i in range(dst_n):                   # fold taps outside the source onto its edges
        row = filt[i]
        if pos[i] < 0:
            for j in range(1, size):
                left = max(j + pos[i], 0)
                row[left] += row[j]
                row[j] = 0
            pos[i] = 0
        if pos[i] + size > src_n:
            shift = pos[i] + min(size - src_n, 0)
            acc = 0
            for j in range(size - 1, -1, -1):
                if pos[i] + j >= src_n:
                    acc += row[j]
                    row[j] = 0
            row[:] = [0 if j < shift else row[j - shift] for j in range(size)]
            pos[i] -= shift
            row[src_n - 1 - pos[i]] += acc
    if size > src_n:        # aligned filters of tiny frames: the taps past the last sample are 0
        assert all(pos[i] == 0 and not any(row[src_n:]) for i, row in enumerate(filt))
        filt, size = [row[:src_n] for row in filt], src_n
    coeffs = np.zeros((dst_n, size), np.int64)
    for i, row in enumerate(filt):           # normalise, carrying each tap's rounding error on
        total = max((sum(row) + one // 2) // one, 1)
        error = 0
        for j, value in enumerate(row):
            v = value + error
            q = _tdiv(v + (total >> 1) if v >= 0 else v - (total >> 1), total)
            coeffs[i, j] = q
            error = v - q * total
    return np.array(pos, np.int64), coeffs


def route(bits: int, subsampled: bool, planar: bool, width: int, height: int, rgb48: bool) -> str:
    """Which of swscale's conversions runs: "x86", "table" (the unscaled ones), "packed", "full", "rgb48"."""
    if bits == 8 and subsampled and planar and height % 2 == 0:
        return "table" if rgb48 else "x86"
    if rgb48:
        return "rgb48"
    return "packed" if subsampled and width % 2 == 0 else "full"


def _table_rgb(c, y_index, u, v):
    t = c["table"]
    return np.stack([t[y_index + c["r_off"][v]], t[y_index + c["gu_off"][u] + c["gv_off"][v]],
                     t[y_index + c["b_off"][u]]], axis=-1)


def _x86_rgb(c, y, u, v):
    """The SSSE3 converter in 16-bit lanes: pmulhw products, saturating adds."""
    def mulhi(a, b):
        return (a * b) >> 16

    def sat(a):
        return np.clip(a, -0x8000, 0x7FFF)

    yy = ((y << 3) - c["x_offset"] + 0x8000) % 0x10000 - 0x8000         # psubw wraps
    uu, vv = (u << 3) - 1024, (v << 3) - 1024
    luma = mulhi(yy, c["x_coeff"])
    green = sat(mulhi(uu, c["x_u2g"]) + mulhi(vv, c["x_v2g"]))
    return np.clip(np.stack([sat(luma + mulhi(vv, c["x_v2r"])), sat(luma + green),
                             sat(luma + mulhi(uu, c["x_u2b"]))], axis=-1), 0, 255)


def _clip_bits(a, p):
    """av_clip_uintp2."""
    return np.where(a & ~((1 << p) - 1), (~a >> 31) & ((1 << p) - 1), a)


def convert(y: np.ndarray, u: np.ndarray, v: np.ndarray, bits: int, matrix: int, full_range: bool, rgb48: bool,
            planar: bool = True) -> np.ndarray:
    """swscale's RGB24 (uint8) or RGB48 (uint16) of a frame: (H, W, 3)."""
    y, u, v = (np.asarray(p).astype(np.int64) for p in (y, u, v))
    height, width = y.shape
    subsampled = u.shape != y.shape
    c = coefficients(matrix, full_range)
    kind = route(bits, subsampled, planar, width, height, rgb48)
    if kind in ("x86", "table"):
        cu = np.repeat(np.repeat(u, 2, 0), 2, 1)[:height, :width]
        cv = np.repeat(np.repeat(v, 2, 0), 2, 1)[:height, :width]
        if kind == "x86":
            return _x86_rgb(c, y, cu, cv).astype(np.uint8)
        return (_table_rgb(c, y, cu, cv) * 257).astype(np.uint16)
    ib = 19 if kind == "rgb48" else 15
    shift, top = bits + 14 - ib, (1 << ib) - 1
    luma = np.minimum((y << 14) >> shift, top)
    per_pixel = not subsampled or width % 2 == 1
    sums = []
    for plane in (u, v):
        if subsampled and per_pixel:         # horizontal bicubic to every pixel
            first, coeffs = init_filter(plane.shape[1], width, 4, 1 << 14)
            acc = sum(plane[:, first + k] * coeffs[:, k] for k in range(coeffs.shape[1]))
            inter = np.minimum(_wrap32(acc) >> shift, top)
        else:
            inter = np.minimum((plane << 14) >> shift, top)
        if subsampled:                       # vertical bicubic from the chroma rows
            first, coeffs = init_filter(plane.shape[0], height, 2, 1 << 12)
            if coeffs.shape[1] == 2:         # swscale's "1" output functions (vscale.c)
                simple = (coeffs.sum(axis=1) == 4096) & (coeffs[:, 1] >= 0) & (coeffs[:, 1] <= 4096)
                coeffs[simple] = np.where(coeffs[simple, 1:] < 2048, [4096, 0], [2048, 2048])
            total = sum(inter[first + j] * coeffs[:, j:j + 1] for j in range(coeffs.shape[1]))
        else:
            total = inter * 4096
        total = _wrap32(total)
        if not per_pixel:
            total = np.repeat(total, 2, axis=1)[:, :width]
        sums.append(total)
    u_sum, v_sum = sums
    if kind == "packed":
        cu = np.clip(((1 << 18) + u_sum) >> 19, 0, 255)
        cv = np.clip(((1 << 18) + v_sum) >> 19, 0, 255)
        return _table_rgb(c, (luma + 64) >> 7, cu, cv).astype(np.uint8)
    if kind == "full":
        cu = ((1 << 9) - (128 << 19) + u_sum) >> 10
        cv = ((1 << 9) - (128 << 19) + v_sum) >> 10
        yv = (luma * 4 - c["y_offset"]) * c["y_coeff"] + (1 << 21)
        rgb = _wrap32(np.stack([yv + cv * c["v2r"], yv + cv * c["v2g"] + cu * c["u2g"], yv + cu * c["u2b"]], axis=-1))
        rgb = np.where((np.bitwise_or.reduce(rgb, axis=-1, keepdims=True) & 0xC0000000) != 0, _clip_bits(rgb, 30), rgb)
        return (rgb >> 22).astype(np.uint8)
    cu = _wrap32(u_sum - (1 << 30)) >> 14
    cv = _wrap32(v_sum - (1 << 30)) >> 14
    yv = ((luma >> 2) - c["y_offset"]) * c["y_coeff"] + (1 << 13) - (1 << 29)
    rgb = _wrap32(np.stack([yv + cv * c["v2r"], yv + cv * c["v2g"] + cu * c["u2g"], yv + cu * c["u2b"]], axis=-1))
    return _clip_bits((rgb >> 14) + (1 << 15), 16).astype(np.uint16)
