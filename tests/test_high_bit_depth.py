"""The one-pass conversion of 9- to 12-bit 4:2:0 frames to RGB24 (include/torchcodec/hbd_rgb.h).

It must give exactly the bytes swscale gives (and so the ffmpeg CLI's): on random samples for each
geometry, format, matrix and range it applies to; on real streams, against the CLI; and where it
does not apply, or where the comparison with swscale failed, swscale must do the conversion.
"""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

import reference
from fast_conversion import MATRICES, RANGES, check_a_recorded_difference_keeps_swscale, raw_frames
from torchcodec.decoders import ColorConverter, VideoDecoder
from torchcodec.transforms import CenterCrop

SIZES = [(320, 240), (34, 17), (66, 9), (1280, 720), (2, 64), (46, 30), (94, 20)]  # tails of 0 to 30 pixels
TEN_BIT_FILES = ["h264_10bit.mp4", "hevc_10bit.mp4", "h264_bt601_10bit_fullrange.mp4", "hevc_bt2020_10bit.mp4",
                 "hevc_bt2020_10bit_fullrange.mp4"]


@pytest.mark.parametrize("vector_code", [True, False], ids=["vector", "plain"])
@pytest.mark.parametrize("pixel_format", ["yuv420p9le", "yuv420p10le", "yuv420p12le"])
@pytest.mark.parametrize("width,height", SIZES)
def test_it_gives_swscales_bytes_for_every_matrix_and_range(pixel_format, width, height, vector_code, engine_probe):
    """Both versions of the rows: AVX2 (32 pixels at a time, where the CPU has it) and plain C."""
    for matrix in MATRICES:
        for colour_range in RANGES:
            agrees = engine_probe.fast_path_agrees(width, height, pixel_format, matrix, colour_range, vector_code)
            assert agrees is True, (pixel_format, width, height, matrix, colour_range)


@pytest.mark.parametrize("width,height,pixel_format", [
    (321, 240, "yuv420p10le"),     # odd width: swscale interpolates chroma per pixel then
    (64, 8, "yuv420p10le"),        # 4 chroma rows: a 2-tap vertical filter, another output function
    (320, 240, "yuv444p"),         # 8 bits (4:2:0 and 4:2:2 have a one-pass conversion of their own)
    (320, 240, "yuv422p10le"),     # no vertical chroma filter
    (320, 240, "yuv444p10le"),
    (320, 240, "yuv420p14le"),     # swscale's intermediates differ above 12 bits
    (320, 240, "yuv420p16le"),
    (320, 240, "yuv420p10be"),
    (320, 240, "p010le"),          # semi-planar
])
def test_where_it_does_not_apply_it_says_so(width, height, pixel_format, engine_probe):
    assert engine_probe.fast_path_agrees(width, height, pixel_format, 1, 1) is None


@pytest.mark.parametrize("name", TEN_BIT_FILES)
def test_ten_bit_streams_take_it_and_give_the_cli_pixels(media, name, engine_probe):
    expected = reference.ffmpeg_rgb_frames(media[name])
    converter = ColorConverter()
    frames = [converter.convert(raw_frame) for raw_frame in raw_frames(media[name])]
    assert engine_probe.fast_path_active(converter.impl)
    assert len(frames) == len(expected)
    for i, frame in enumerate(frames):
        np.testing.assert_array_equal(np.asarray(frame.data).transpose(1, 2, 0), expected[i], err_msg=f"frame {i}")


def test_a_twelve_bit_stream_gives_the_cli_pixels(tmp_path, engine_probe):
    path = tmp_path / "hevc_12bit.mp4"
    subprocess.run([reference.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-f", "lavfi",
                    "-i", "testsrc2=size=320x240:rate=30", "-t", "0.5", "-c:v", "libx265",
                    "-pix_fmt", "yuv420p12le", "-x265-params", "log-level=error", str(path)], check=True)
    assert reference.ffprobe_streams(path)[0]["pix_fmt"] == "yuv420p12le"
    expected = reference.ffmpeg_rgb_frames(path)
    converter = ColorConverter()
    frames = [converter.convert(raw_frame) for raw_frame in raw_frames(path)]
    assert engine_probe.fast_path_active(converter.impl)
    np.testing.assert_array_equal(np.stack([np.asarray(f.data) for f in frames]).transpose(0, 2, 3, 1), expected)


def test_a_crop_of_a_ten_bit_frame_is_the_window_of_the_clis_whole_frame(media):
    """Transforms crop the RGB image of the whole frame (as TorchCodec does); only a region around
    the crop is converted, a geometry of its own for the fast conversion."""
    path = media["hevc_10bit.mp4"]
    expected = reference.ffmpeg_rgb_frames(path)[:, 80:160, 110:210]
    decoder = VideoDecoder(path, dimension_order="NHWC", transforms=[CenterCrop((80, 100))])
    np.testing.assert_array_equal(decoder.get_frames_in_range(0, len(decoder)).data, expected)


def test_a_geometry_where_it_differed_from_swscale_is_converted_by_swscale(media, monkeypatch, engine_probe):
    """The verdict of the comparison with swscale decides: a recorded difference keeps swscale."""
    check_a_recorded_difference_keeps_swscale(media["h264_10bit.mp4"], monkeypatch, engine_probe)
