"""The one-pass conversion of 8-bit 4:2:0 and 4:2:2 frames to RGB24 (include/torchcodec/yuv8_rgb.h).

It must give exactly the bytes swscale gives (and so the ffmpeg CLI's): on random samples for each
geometry, format, matrix and range it applies to, with the AVX2 rows and the plain C ones; on real
streams, against the CLI; and where it does not apply, or where the comparison with swscale
failed, swscale must do the conversion.
"""
from __future__ import annotations

import numpy as np
import pytest

import reference
from fast_conversion import MATRICES, RANGES, check_a_recorded_difference_keeps_swscale, raw_frames
from torchcodec.decoders import ColorConverter, VideoDecoder
from torchcodec.transforms import CenterCrop

# Widths with every remainder class of the 32-pixel blocks that matters: none, odd, one short of a
# block, a lone pixel, under one block.
SIZES = [(320, 240), (350, 198), (161, 120), (63, 4), (33, 2), (1, 2), (1920, 1080), (94, 20)]
EIGHT_BIT_FILES = ["h264_bt709.mp4", "h264_fullrange.mp4", "h264_bt709_fullrange.mp4", "h264_350x198.mp4",
                   "vp9.webm", "av1.mp4", "mpeg2_mp2.mpg", "h264_yuv422.mp4"]


@pytest.mark.parametrize("vector_code", [True, False], ids=["vector", "plain"])
@pytest.mark.parametrize("pixel_format", ["yuv420p", "yuvj420p", "yuv422p", "yuvj422p"])
@pytest.mark.parametrize("width,height", SIZES)
def test_it_gives_swscales_bytes_for_every_matrix_and_range(pixel_format, width, height, vector_code, engine_probe):
    for matrix in MATRICES:
        for colour_range in RANGES:
            agrees = engine_probe.fast_path_agrees(width, height, pixel_format, matrix, colour_range, vector_code)
            assert agrees is True, (pixel_format, width, height, matrix, colour_range)


@pytest.mark.parametrize("width,height,pixel_format", [
    (320, 241, "yuv420p"),         # odd height: swscale's general scaler
    (161, 121, "yuv420p"),
    (320, 240, "yuv444p"),
    (320, 240, "yuva420p"),
    (320, 240, "nv12"),
    (320, 240, "gray"),
])
def test_where_it_does_not_apply_it_says_so(width, height, pixel_format, engine_probe):
    assert engine_probe.fast_path_agrees(width, height, pixel_format, 1, 1) is None


def avx2() -> bool:
    with open("/proc/cpuinfo") as f:
        return " avx2" in f.read()


@pytest.mark.parametrize("name", EIGHT_BIT_FILES)
def test_eight_bit_streams_give_the_cli_pixels(media, name, engine_probe):
    expected = reference.ffmpeg_rgb_frames(media[name])
    converter = ColorConverter()
    frames = [converter.convert(raw_frame) for raw_frame in raw_frames(media[name])]
    # The 8-bit rows are taken only as AVX2 code (their plain C form is slower than swscale).
    assert engine_probe.fast_path_active(converter.impl) == avx2()
    assert len(frames) == len(expected)
    for i, frame in enumerate(frames):
        np.testing.assert_array_equal(np.asarray(frame.data).transpose(1, 2, 0), expected[i], err_msg=f"frame {i}")


def test_a_batch_of_a_width_not_a_multiple_of_32_is_written_row_by_row_in_place(media):
    """350 pixels a row: the rows of a tight NHWC batch follow each other with no room between
    them, and the last row of the last frame ends the batch's memory."""
    path = media["h264_350x198.mp4"]
    decoder = VideoDecoder(path, dimension_order="NHWC")
    np.testing.assert_array_equal(decoder.get_frames_in_range(0, len(decoder)).data,
                                  reference.ffmpeg_rgb_frames(path))


def test_a_crop_is_the_window_of_the_clis_whole_frame(media):
    """A crop converts a region around it, a geometry of its own for the fast conversion."""
    path = media["h264_bt709.mp4"]
    expected = reference.ffmpeg_rgb_frames(path)[:, 80:160, 110:210]
    decoder = VideoDecoder(path, dimension_order="NHWC", transforms=[CenterCrop((80, 100))])
    np.testing.assert_array_equal(decoder.get_frames_in_range(0, len(decoder)).data, expected)


def test_a_geometry_where_it_differed_from_swscale_is_converted_by_swscale(media, monkeypatch, engine_probe):
    """The verdict of the comparison with swscale decides: a recorded difference keeps swscale."""
    if not avx2():
        pytest.skip("the 8-bit rows run only as AVX2 code")
    check_a_recorded_difference_keeps_swscale(media["h264_bt709.mp4"], monkeypatch, engine_probe)
