"""Resizes through 14-bit planes (include/torchcodec/rgb_planes.h), from RGB and straight from YUV.

An RGB24 resize to at most half the width computes swscale's internal 14-bit Y, U, V itself and
hands them to a yuv422p14le context (whose output is planar GBR, interleaved here, when the output
has at most half the rows). It must give exactly the bytes of swscale's own RGB-to-RGB resize: on
random images for each geometry and matrix it applies to; on real streams, against the CLI's
``scale`` of the RGB frame; and where the comparison with swscale failed, swscale's RGB-to-RGB
resize must run. A whole 8-bit 4:2:0 frame skips the RGB image too (tc_yuv420_to_planes): the
same must hold against swscale's conversion then resize.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import reference
from torchcodec._core import _scaler
from torchcodec.decoders import VideoDecoder
from torchcodec.transforms import CenterCrop, Resize
from torchcodec.transforms._decoder_transforms import _Crop

MATRICES = [0, 1, 2, 4, 5, 6, 7, 9]             # AVColorSpace: RGB, BT.709, unspecified, FCC, BT.601 x2, 240M, BT.2020
# (source w, h, output w, h): 1080p to the usual model sizes, exactly half the width and rows, odd
# source widths (the pixel past the row), vector tails of 0 to 17 pixels, slices that end
# mid-image, one-row and one-column outputs (GBR output); outputs with more than half the rows,
# as many rows, more rows (RGB24 output: one- and two-tap vertical filters).
RESIZES = [(1920, 1080, 256, 256), (1920, 1080, 224, 224), (640, 480, 320, 240), (641, 361, 320, 100),
           (19, 64, 9, 1), (64, 9, 32, 4), (1280, 720, 640, 360), (320, 240, 160, 121), (35, 18, 17, 40),
           (50, 33, 25, 33), (52, 7, 3, 70), (18, 5, 1, 5)]


@pytest.mark.parametrize("vector_code", [True, False], ids=["vector", "plain"])
@pytest.mark.parametrize("src_w,src_h,dst_w,dst_h", RESIZES)
def test_it_gives_swscales_rgb_to_rgb_bytes_for_every_matrix(src_w, src_h, dst_w, dst_h, vector_code, engine_probe):
    """Both versions of the rows: AVX2 (16 pixels at a time, where the CPU has it) and plain C."""
    for matrix in MATRICES:
        assert engine_probe.resize_route_agrees(matrix, src_w, src_h, dst_w, dst_h, vector_code) is True, matrix


@pytest.mark.parametrize("src_w,src_h,dst_w,dst_h", [(640, 480, 321, 240), (33, 10, 17, 10), (2, 2, 2, 1)])
def test_outputs_wider_than_half_the_input_do_not_take_it(src_w, src_h, dst_w, dst_h, engine_probe):
    """There swscale reads full-width chroma (its SIMD input code): the route does not apply."""
    assert engine_probe.resize_route_agrees(1, src_w, src_h, dst_w, dst_h) is None


def _cli_resize(path, size, flags):
    return reference.ffmpeg_rgb_frames(path, filters=f"format=rgb24,scale={size[1]}:{size[0]}:{flags}", size=size)


def _resized(path, transforms):
    return VideoDecoder(path, dimension_order="NHWC", transforms=transforms).get_all_frames().data


# A lone Resize of a width of 32s to a width of 32s: TorchCodec's swscale call (AVCOL_SPC_RGB's
# matrix, BT.709's coefficients); after a crop: the filter graph's (BT.601, AVCOL_SPC_BT470BG).
LONE = "flags=bilinear:in_color_matrix=bt709:out_color_matrix=bt709"
FILTER = "flags=bilinear"


def test_a_resize_after_a_crop_takes_it_and_gives_the_cli_pixels(media, monkeypatch):
    """A crop then a resize (the filter graph's matrix), with RGB24 output (more than half the rows)."""
    verdicts = {}
    monkeypatch.setattr(_scaler, "_planes_verdicts", verdicts)
    path = media["h264_bframes.mp4"]                                    # 320 x 240
    cropped = reference.ffmpeg_rgb_frames(path, filters=f"format=rgb24,crop=301:200:10:20:exact=1,scale=75:150:{FILTER}",
                                          size=(150, 75))
    np.testing.assert_array_equal(_resized(path, [_Crop((200, 301), 20, 10), Resize((150, 75))]), cropped)
    assert verdicts == {(301, 200, 75, 150, 5): 1}


def test_a_resize_to_more_than_half_the_width_does_not_ask(media, monkeypatch):
    verdicts = {}
    monkeypatch.setattr(_scaler, "_planes_verdicts", verdicts)
    path = media["h264_bframes.mp4"]
    fused = {}
    monkeypatch.setattr(_scaler, "_fused_verdicts", fused)
    np.testing.assert_array_equal(_resized(path, [Resize((96, 192))]), _cli_resize(path, (96, 192), LONE))
    assert verdicts == {} and fused == {}


def test_a_matrix_where_it_differed_from_swscale_is_resized_by_swscale(media, monkeypatch):
    """The verdict of the comparison with swscale decides: a recorded difference keeps swscale."""
    monkeypatch.setattr(_scaler, "_planes_verdicts", {(161, 121, 80, 40, 5): 0, (160, 120, 64, 30, 5): 0})
    path = media["vp9_161x121.webm"]                                    # odd width: the pixel past the row
    np.testing.assert_array_equal(_resized(path, [Resize((40, 80))]), _cli_resize(path, (40, 80), FILTER))
    np.testing.assert_array_equal(_resized(path, [CenterCrop((120, 160)), Resize((30, 64))]),
                                  reference.ffmpeg_rgb_frames(path, filters="format=rgb24,crop=160:120:0:0:exact=1,"
                                                              f"scale=64:30:{FILTER}", size=(30, 64)))


def test_an_odd_width_reads_the_pixel_past_the_row_as_swscale_does(media, monkeypatch):
    verdicts = {}
    monkeypatch.setattr(_scaler, "_planes_verdicts", verdicts)
    path = media["vp9_161x121.webm"]
    np.testing.assert_array_equal(_resized(path, [Resize((40, 80))]), _cli_resize(path, (40, 80), FILTER))
    assert verdicts == {(161, 121, 80, 40, 5): 1}


# ---- straight from 8-bit 4:2:0 YUV ----------------------------------------------------------------

# (width, height, output w, h): 1080p, vector tails of 0 to 14 pixels, GBR and RGB24 outputs.
FRAME_RESIZES = [(1920, 1080, 256, 256), (640, 480, 224, 224), (322, 240, 160, 100), (66, 34, 20, 10),
                 (64, 64, 32, 40), (18, 6, 9, 6)]
FRAME_COLOURS = [(1, 1), (5, 1), (2, 0), (9, 2), (6, 2), (4, 1), (7, 1)]     # (AVColorSpace, AVColorRange)


@pytest.mark.parametrize("vector_code", [True, False], ids=["vector", "plain"])
@pytest.mark.parametrize("pixel_format", ["yuv420p", "yuvj420p"])
@pytest.mark.parametrize("width,height,out_w,out_h", FRAME_RESIZES)
def test_frames_resized_from_yuv_give_swscales_conversion_then_resize(width, height, out_w, out_h, pixel_format,
                                                                     vector_code, engine_probe):
    for colorspace, color_range in FRAME_COLOURS:
        for resize_matrix in (0, 5):
            assert engine_probe.fused_route_agrees_for(width, height, pixel_format, colorspace, color_range, out_w,
                                                       out_h, resize_matrix, vector_code) is True, (colorspace,
                                                                                                    color_range)


@pytest.mark.parametrize("width,height,pixel_format,out_w", [
    (321, 240, "yuv420p", 100),             # odd width
    (320, 241, "yuv420p", 100),             # odd height
    (320, 240, "yuv420p10le", 100),         # not 8 bits
    (320, 240, "yuv444p", 100),
    (320, 240, "nv12", 100),
    (320, 240, "yuv420p", 161),             # wider than half
])
def test_frames_it_does_not_apply_to_say_so(width, height, pixel_format, out_w, engine_probe):
    assert engine_probe.fused_route_agrees_for(width, height, pixel_format, 1, 1, out_w, 100, 5) is None


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "h264_fullrange.mp4", "h264_bt709.mp4"])
def test_a_lone_resize_of_a_whole_frame_takes_it_and_gives_the_cli_pixels(media, monkeypatch, name):
    """yuv420p of unknown and limited range, and yuvj420p: TorchCodec's swscale matrix (widths of 32)."""
    fused = {}
    monkeypatch.setattr(_scaler, "_fused_verdicts", fused)
    path = media[name]
    np.testing.assert_array_equal(_resized(path, [Resize((96, 160))]), _cli_resize(path, (96, 160), LONE))
    assert list(fused.values()) == [1]
    # The filter graph's matrix (an output width that is not a multiple of 32), RGB24 output.
    np.testing.assert_array_equal(_resized(path, [Resize((200, 150))]), _cli_resize(path, (200, 150), FILTER))
    assert list(fused.values()) == [1, 1]


def test_a_frame_geometry_where_it_differed_is_resized_through_rgb(media, monkeypatch):
    """A recorded difference keeps the conversion to RGB (and then the planes route from RGB)."""
    path = media["h264_bframes.mp4"]
    fused = {}
    monkeypatch.setattr(_scaler, "_fused_verdicts", fused)
    _resized(path, [Resize((96, 160))])
    for recorded in list(fused):
        fused[recorded] = 0
    planes = {}
    monkeypatch.setattr(_scaler, "_planes_verdicts", planes)
    np.testing.assert_array_equal(_resized(path, [Resize((96, 160))]), _cli_resize(path, (96, 160), LONE))
    assert planes == {(320, 240, 160, 96, 0): 1}


def test_the_route_benchmark_runs_each_route(media):
    """tools/bench/resize_routes.py turns routes off through the verdict dictionaries above."""
    tool = Path(__file__).resolve().parent.parent / "tools" / "bench.py"
    result = subprocess.run([sys.executable, str(tool), "resize-routes", "--file", str(media["h264_bframes.mp4"]),
                             "--size", "96", "160", "--repeats", "1"], capture_output=True, text=True, check=True)
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines[1:]] == ["swscale", "planes", "yuv"], result.stdout
    assert lines[1].endswith("swscale/this 1.00")
