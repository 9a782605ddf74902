"""The numpy model of the transforms (tests/resize_model.py), which the CUDA kernels are held to,
against its references: swscale's RGB -> RGB bilinear resize through the ffmpeg CLI (random RGB24
and RGB48 images, every kind of geometry, both matrices TorchCodec's resizes use), and torchcodec's
CPU path (random frames of 8- and 10-bit 4:2:0, NV12 and 4:4:4 through transform plans of crops and
resizes, uint8 and float32, the four rotations). All exact.
"""
from __future__ import annotations

import pathlib
import subprocess
import sys

import numpy as np
import pytest

import resize_model
import swscale_model

SCALE_BT709 = ":in_color_matrix=bt709:out_color_matrix=bt709"    # TorchCodec's own swscale resize

# (width, height, out width, out height): downscales to at most half the width (chroma of pixel
# pairs) and less, odd widths (the pixel after the row), upscales (2-tap vertical filters), one
# direction unscaled, 1080p to 224, tiny images (aligned filters longer than the image).
GEOMETRIES = [(64, 48, 20, 15), (320, 240, 160, 120), (161, 121, 83, 81), (100, 80, 300, 200), (64, 64, 64, 30),
              (64, 64, 30, 64), (37, 23, 17, 11), (320, 240, 224, 224), (17, 9, 5, 3), (10, 10, 3, 3),
              (1920, 1080, 224, 224), (3, 2, 7, 5), (5, 1, 2, 1), (33, 40, 40, 33)]


def _cli_resize(image: np.ndarray, out_w: int, out_h: int, matrix_options: str) -> np.ndarray:
    """The CLI's ``scale=W:H:flags=bilinear`` of a raw RGB24/RGB48 image."""
    pix_fmt = "rgb48le" if image.dtype == np.uint16 else "rgb24"
    height, width, _ = image.shape
    result = subprocess.run(["ffmpeg", "-v", "error", "-f", "rawvideo", "-pix_fmt", pix_fmt, "-s", f"{width}x{height}",
                             "-i", "-", "-vf", f"scale={out_w}:{out_h}:flags=bilinear{matrix_options}", "-f",
                             "rawvideo", "-pix_fmt", pix_fmt, "-"], input=image.tobytes(), capture_output=True,
                            check=True)
    return np.frombuffer(result.stdout, image.dtype).reshape(out_h, out_w, 3)


def _after_rows(image: np.ndarray) -> np.ndarray:
    """The pixel after each row in the CLI's input (a raw frame read in place: the next row's
    first pixel, and the packet's zero padding after the last row)."""
    return np.concatenate([image[1:, 0], np.zeros((1, 3), image.dtype)])


@pytest.mark.parametrize("geometry", GEOMETRIES, ids=[f"{w}x{h}-{ow}x{oh}" for w, h, ow, oh in GEOMETRIES])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16], ids=["rgb24", "rgb48"])
def test_model_resize_equals_the_cli_on_random_images(geometry, dtype):
    width, height, out_w, out_h = geometry
    rng = np.random.default_rng(width * 1000 + height)
    image = rng.integers(0, np.iinfo(dtype).max + 1, (height, width, 3)).astype(dtype)
    for matrix, options in ((resize_model.AVCOL_SPC_BT470BG, ""), (resize_model.AVCOL_SPC_RGB, SCALE_BT709)):
        expected = _cli_resize(image, out_w, out_h, options)
        np.testing.assert_array_equal(resize_model.resize(image, out_w, out_h, matrix, _after_rows(image)), expected,
                                      err_msg=f"matrix {matrix}")


def test_the_comparison_sees_one_level_of_one_pixel():
    """The control: an RGB48 image with one pixel one level off resizes to other values."""
    rng = np.random.default_rng(7)
    image = rng.integers(0, 65536, (48, 64, 3)).astype(np.uint16)
    expected = _cli_resize(image, 30, 20, "")
    image[20, 30, 1] ^= 1
    assert not np.array_equal(resize_model.resize(image, 30, 20, resize_model.AVCOL_SPC_BT470BG), expected)


def test_two_tap_vertical_filters_leave_out_the_rounding_term():
    """yuv2rgb24_full_2 (upscaling rows) has no rounding term where the X function adds 512: both
    happen in the cases above (a model with one rule for both differs from the CLI there)."""
    first, coeffs = swscale_model.init_filter(80, 200, 2, 1 << 12, "bilinear")
    assert coeffs.shape[1] == 2 and (coeffs.sum(axis=1) == 4096).all()
    first, coeffs = swscale_model.init_filter(240, 120, 2, 1 << 12, "bilinear")
    assert coeffs.shape[1] > 2


# ---- the model of whole plans against torchcodec's CPU path --------------------------------------

# (stages, single_resize): crops alone (odd places and sizes), resizes down (pairs) and up, a crop
# then a resize, a resize then a crop (the last stage a window), two resizes, a lone Resize whose
# widths are multiples of 32 (BT.709's matrix) and the same not alone (BT.601's).
PLANS = [
    ([(3, 5, 33, 21, 33, 21, False)], False),
    ([(0, 0, 64, 48, 20, 15, True)], False),
    ([(0, 0, 64, 48, 150, 100, True)], False),
    ([(2, 3, 41, 31, 17, 11, True)], False),
    ([(0, 0, 64, 48, 30, 20, True), (3, 2, 21, 13, 21, 13, False)], False),
    ([(0, 0, 64, 48, 100, 70, True), (3, 5, 61, 41, 20, 15, True)], False),
    ([(0, 0, 64, 48, 32, 24, True)], True),
    ([(0, 0, 64, 48, 32, 24, True)], False),
]
FORMATS = [("yuv420p", 8, True), ("yuv420p10le", 10, True), ("nv12", 8, True), ("yuv444p", 8, False)]


@pytest.fixture(scope="module")
def cpu(tmp_path_factory):
    """tests/cuda_stubs/device_frames.pyx, which hands host frames of any format to the CPU Scaler."""
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "cuda_stubs"))
    from stub_build import CC, build_helper
    from torchcodec._cuda import _build_config
    if not _build_config.CUDA_DRIVER or CC is None:
        pytest.skip("the device_frames helper needs a build with the CUDA driver loader and a C compiler")
    directory = build_helper("device_frames", tmp_path_factory.mktemp("device_frames"))
    sys.path.insert(0, str(directory))
    import device_frames
    return device_frames


def _planes(rng, pix_fmt, bits, subsampled, width, height):
    cw, ch = ((width + 1) // 2, (height + 1) // 2) if subsampled else (width, height)
    dtype = np.uint8 if bits == 8 else np.uint16
    return [np.ascontiguousarray(rng.integers(0, 1 << bits, shape).astype(dtype))
            for shape in ((height, width), (ch, cw), (ch, cw))]


def _on_cpu(device_frames, pix_fmt, planes, stages, single, rotation, as_float, matrix, full):
    from torchcodec._core._scaler import Scaler
    height, width = planes[0].shape
    arrays = planes
    if pix_fmt == "nv12":
        arrays = [planes[0], np.ascontiguousarray(np.stack(planes[1:], -1).reshape(planes[1].shape[0], -1))]
    scaler = Scaler()
    scaler.set_stages(stages, single)
    out_w, out_h = stages[-1][4], stages[-1][5]
    out = np.zeros((out_h, out_w, 3), np.float32 if as_float else np.uint8)
    device_frames.convert_device_frame(scaler, pix_fmt, [a.ctypes.data for a in arrays], [a.strides[0] for a in arrays],
                                       width, height, out.ctypes.data, out.strides[0], out_width=out_w, out_height=out_h,
                                       colorspace=matrix, color_range=2 if full else 1, as_float=as_float,
                                       rotation=rotation)
    return out


@pytest.mark.parametrize("pix_fmt, bits, subsampled", FORMATS, ids=[f[0] for f in FORMATS])
def test_model_plans_equal_the_cpu_path_on_random_frames(cpu, pix_fmt, bits, subsampled):
    rng = np.random.default_rng(bits * 10 + len(pix_fmt))
    cases = 0
    for p, (stages, single) in enumerate(PLANS):
        for as_float in (False, True):
            rotation = (0, 180)[(p + as_float) % 2] if not single else 0
            matrix, full = ((1, False), (5, True), (9, False))[p % 3]
            planes = _planes(rng, pix_fmt, bits, subsampled, 64, 48)
            turned = [np.rot90(plane, k=-rotation // 90) for plane in planes]
            frame = swscale_model.convert(*turned, bits, matrix, full, as_float, planar=pix_fmt != "nv12")
            expected = resize_model.run_plan(frame, stages, single, rotation)
            if as_float:
                expected = expected / np.float32(65535)
            got = _on_cpu(cpu, pix_fmt, planes, stages, single, rotation, as_float, matrix, full)
            np.testing.assert_array_equal(got, expected.astype(got.dtype), err_msg=f"{stages} float={as_float}")
            cases += 1
    assert cases == 2 * len(PLANS)


def test_model_plans_equal_the_cpu_path_on_rotated_odd_frames(cpu):
    """Rotations by 90 and 270 degrees, odd frame sizes (swscale's general routes, and a resize
    reading the pixel after an odd-width crop, inside the frame and past its edge)."""
    rng = np.random.default_rng(3)
    plans = [[(0, 0, 37, 45, 17, 20, True)], [(1, 0, 35, 44, 16, 21, True)], [(1, 3, 20, 30, 20, 30, False)],
             [(0, 0, 37, 45, 80, 90, True), (3, 1, 41, 60, 13, 9, True)]]
    for k, stages in enumerate(plans):
        rotation = (90, 270)[k % 2]
        planes = _planes(rng, "yuv420p10le", 10, True, 45, 37)
        turned = [np.rot90(plane, k=-rotation // 90) for plane in planes]
        expected = resize_model.run_plan(swscale_model.convert(*turned, 10, 9, True, False), stages, False, rotation)
        got = _on_cpu(cpu, "yuv420p10le", planes, stages, False, rotation, False, 9, True)
        np.testing.assert_array_equal(got, expected, err_msg=str(stages))
