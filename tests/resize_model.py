"""A numpy model of TorchCodec's decode-time transforms as torchcodec's CPU path computes them
(FFmpeg 5.1, x86-64), written apart from include/torchcodec/swscale_resize.h from the same reading
of swscale: the reference the tests check against the ffmpeg CLI and the CPU path, and hold the
CUDA kernels (kernels/resize.cu) to.

``resize(image, out_w, out_h, matrix, beyond)`` is swscale's bilinear RGB -> RGB resize of a uint8
(RGB24) or uint16 (RGB48) image: the image through swscale's own limited-range YUV (``matrix``'s
coefficients; chroma of pixel pairs when the output is at most half as wide), the horizontal and
vertical bilinear filters of utils.c's initFilter (swscale_model.init_filter), and the full-chroma
output functions. ``beyond`` is the column swscale reads after the row for an odd width's last pair.

``run_plan(frame, stages, single_resize, rotation, rgb48)`` applies a transform plan (the stages of
``Scaler.set_stages``) to an RGB frame as the CPU path does: crops are windows, a crop reads the
pixel after it from its image (0 past the image's edge), and the matrix is BT.601 but for a lone
Resize of an unrotated frame whose width and output width are multiples of 32 (BT.709's table).
"""
from __future__ import annotations

import numpy as np

import swscale_model
from swscale_model import _BT601, _COEFFICIENTS, _clip_bits, _tdiv, _wrap32

AVCOL_SPC_RGB = 0            # TorchCodec's own swscale resize: sws_getCoefficients(AVCOL_SPC_RGB), BT.709's
AVCOL_SPC_BT470BG = 5        # FFmpeg's scale filter on RGB frames: BT.601


def _rounded_div(a: int, b: int) -> int:
    return _tdiv(a + (b >> 1) if a >= 0 else a - (b >> 1), b)


def rgb_to_yuv_table(matrix: int) -> list[int]:
    """utils.c's fill_rgb2yuv_table (limited range): ry, gy, by, ru, gu, bu, rv, gv, bv / 2^15."""
    table = _COEFFICIENTS.get(matrix, _BT601)
    unit = 1 << 15
    if table == _BT601:                      # swscale's rounded BT.601 decimals for its default table
        weights = (0.299 * 219, 0.587 * 219, 0.114 * 219, -0.169 * 224, -0.331 * 224, 0.5 * 224, 0.5 * 224,
                   -0.419 * 224, -0.081 * 224)
        return [int(abs(w) / 255 * unit + 0.5) * (1 if w > 0 else -1) for w in weights]
    one = 1 << 16
    vr, ub, ug, vg = table[0], table[1], -table[2], -table[3]
    cy = one * 255 // 219
    w, v = _rounded_div(one * one * ug, ub), _rounded_div(one * one * vg, vr)
    z = one * one - w - v
    c_y, c_u, c_v = _rounded_div(cy * z, one), _rounded_div(ub * z, one), _rounded_div(vr * z, one)
    return [-_rounded_div(unit * v, c_y), _rounded_div(unit * one * one, c_y), -_rounded_div(unit * w, c_y),
            _rounded_div(unit * v, c_u), -_rounded_div(unit * one * one, c_u), _rounded_div(unit * (z + w), c_u),
            _rounded_div(unit * (v + z), c_v), -_rounded_div(unit * one * one, c_v), _rounded_div(unit * w, c_v)]


def _horizontal(plane: np.ndarray, n_out: int, shift: int, top: int) -> np.ndarray:
    first, coeffs = swscale_model.init_filter(plane.shape[1], n_out, 4, 1 << 14, "bilinear")
    columns = np.minimum(first[:, None] + np.arange(coeffs.shape[1]), plane.shape[1] - 1)
    return np.minimum(_wrap32((plane[:, columns] * coeffs[None]).sum(-1)) >> shift, top)


def resize(image: np.ndarray, out_w: int, out_h: int, matrix: int, beyond: np.ndarray | None = None) -> np.ndarray:
    """swscale's SWS_BILINEAR resize of ``image`` (H, W, 3), uint8 or uint16, to (out_h, out_w, 3)
    of the same dtype, with ``matrix``'s table for its internal YUV; ``beyond``: (H, 3), the pixel
    read after each row by an odd width's last chroma pair (default 0)."""
    wide = image.dtype == np.uint16
    img = image.astype(np.int64)
    height, width, _ = img.shape
    k = rgb_to_yuv_table(matrix)
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    if wide:                                                # rgb48ToY, rgb48ToUV(_half)
        y = (k[0] * r + k[1] * g + k[2] * b + (0x2001 << 14)) >> 15
    else:                                                   # rgb24ToY, rgb24ToUV(_half)
        y = (k[0] * r + k[1] * g + k[2] * b + (0x801 << 8)) >> 9
    half = out_w <= width >> 1
    if half:
        extra = np.zeros((height, 1, 3), np.int64) if beyond is None else beyond.astype(np.int64)[:, None]
        padded = np.concatenate([img, extra], axis=1) if width % 2 else img
        pairs = padded[:, 0::2] + padded[:, 1::2]
        if wide:
            r, g, b = ((pairs[..., c] + 1) >> 1 for c in range(3))
        else:
            r, g, b = (pairs[..., c] for c in range(3))
    chroma = []
    for row in (k[3:6], k[6:9]):
        dot = row[0] * r + row[1] * g + row[2] * b
        if wide:
            chroma.append(((dot + (0x10001 << 14)) >> 15) & 0xFFFF)
        elif half:
            chroma.append((dot + (256 << 15) + (1 << 9)) >> 10)
        else:
            chroma.append((dot + (0x4001 << 8)) >> 9)
    shift, top = (11, (1 << 19) - 1) if wide else (13, (1 << 15) - 1)
    mids = [_horizontal(p, out_w, shift, top) for p in (y, *chroma)]
    first, coeffs = swscale_model.init_filter(height, out_h, 2, 1 << 12, "bilinear")
    rows = np.minimum(first[:, None] + np.arange(coeffs.shape[1]), height - 1)
    sums = [_wrap32((m[rows] * coeffs[:, :, None]).sum(1)) for m in mids]
    c = swscale_model.coefficients(matrix, False)
    if wide:                                                # yuv2rgba64_full_X (its 1 and 2 forms: the same)
        ys = (_wrap32(sums[0] - (1 << 30)) >> 14) + 0x10000
        us, vs = (_wrap32(s - (1 << 30)) >> 14 for s in sums[1:])
        yv = (ys - c["y_offset"]) * c["y_coeff"] + (1 << 13) - (1 << 29)
        rgb = _wrap32(np.stack([yv + vs * c["v2r"], yv + vs * c["v2g"] + us * c["u2g"], yv + us * c["u2b"]], -1))
        return _clip_bits((rgb >> 14) + (1 << 15), 16).astype(np.uint16)
    rounding = 0 if coeffs.shape[1] == 2 else 512          # yuv2rgb24_full_2 has no rounding term
    ys = (sums[0] + rounding) >> 10
    us, vs = ((s + rounding - (128 << 19)) >> 10 for s in sums[1:])
    yv = (ys - c["y_offset"]) * c["y_coeff"] + (1 << 21)
    rgb = _wrap32(np.stack([yv + vs * c["v2r"], yv + vs * c["v2g"] + us * c["u2g"], yv + us * c["u2b"]], -1))
    rgb = np.where((np.bitwise_or.reduce(rgb, axis=-1, keepdims=True) & 0xC0000000) != 0, _clip_bits(rgb, 30), rgb)
    return (rgb >> 22).astype(np.uint8)


def resize_matrix(single_resize: bool, rotation: int, frame_width: int, out_w: int) -> int:
    """The matrix of the plan's resizes (frame_width: before rotation; out_w: stage 0's output)."""
    if single_resize and rotation == 0 and frame_width % 32 == 0 and out_w % 32 == 0:
        return AVCOL_SPC_RGB
    return AVCOL_SPC_BT470BG


def run_plan(frame: np.ndarray, stages, single_resize: bool = False, rotation: int = 0,
             frame_width: int | None = None) -> np.ndarray:
    """The plan's output for the RGB ``frame`` (H, W, 3; after rotation; uint8 or uint16 RGB48):
    each stage crops its image to (x, y, crop_w, crop_h) and resizes it to out_w x out_h when asked
    and the size changes. ``frame_width``: the frame's width before rotation (default: as given)."""
    frame_width = frame.shape[1] if frame_width is None else frame_width
    matrix = resize_matrix(single_resize, rotation, frame_width, stages[0][4])
    image = frame
    for x, y, crop_w, crop_h, out_w, out_h, resize_it in stages:
        crop = image[y:y + crop_h, x:x + crop_w]
        if resize_it and (out_w, out_h) != (crop_w, crop_h):
            after = np.zeros((crop_h, 3), image.dtype)
            if x + crop_w < image.shape[1]:
                after = image[y:y + crop_h, x + crop_w]
            image = resize(crop, out_w, out_h, matrix, after)
        else:
            image = crop
    return image
