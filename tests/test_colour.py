"""Colour matrices and ranges on every API path, against the ffmpeg CLI, byte for byte.

The corpus has each matrix (BT.601, BT.709, BT.2020) in limited and full range, 8 and 10 bits,
4:2:0 and 4:4:4. Every path that converts a frame (one frame, batches, ranges, iteration, times,
samplers, out=, float32, crops and resizes) must give the CLI's pixels for each of them, whatever
was decoded before on the same decoder: the conversion must never keep one frame's colour details
for another (a full-range BT.709 frame converted with BT.601's matrix is off by up to 38).
"""
from __future__ import annotations

import numpy as np
import pytest

import reference
from torchcodec import samplers
from torchcodec.decoders import VideoDecoder
from torchcodec.transforms import CenterCrop, Resize

COLOUR_FILES = ["h264_bt709_fullrange.mp4", "h264_bt709_fullrange_yuv444.mp4", "h264_bt601_10bit_fullrange.mp4",
                "hevc_bt709_fullrange.mp4", "hevc_bt2020_10bit.mp4", "hevc_bt2020_10bit_fullrange.mp4",
                "h264_fullrange.mp4", "h264_bt709.mp4", "hevc_10bit.mp4"]


@pytest.fixture(scope="module")
def cli_frames(media):
    """{name: every frame as the CLI's rgb24 (NHWC)}."""
    return {name: reference.ffmpeg_rgb_frames(media[name]) for name in COLOUR_FILES}


def test_the_corpus_has_each_matrix_and_range(media):
    found = set()
    for name in COLOUR_FILES:
        stream = reference.ffprobe_streams(media[name])[0]
        found.add((stream.get("color_space"), stream.get("color_range")))
    assert {("bt709", "pc"), ("bt709", "tv"), ("bt2020nc", "pc"), ("bt2020nc", "tv"), ("smpte170m", "pc")} <= found


@pytest.mark.parametrize("name", COLOUR_FILES)
def test_every_path_on_one_decoder_gives_the_cli_pixels(media, cli_frames, name):
    """Calls in an order that changes the conversion between them (sizes, batches, seeks)."""
    expected = cli_frames[name]
    decoder = VideoDecoder(media[name], dimension_order="NHWC")
    n = len(decoder)
    np.testing.assert_array_equal(decoder.get_frames_in_range(0, n).data, expected)
    np.testing.assert_array_equal(decoder.get_frames_at([n - 1, 3, 40, 3, 0]).data, expected[[n - 1, 3, 40, 3, 0]])
    for i in (5, 1, 2, n - 2):
        np.testing.assert_array_equal(decoder[i], expected[i])
        np.testing.assert_array_equal(decoder.get_frame_at(i).data, expected[i])
    np.testing.assert_array_equal(decoder.get_frame_played_at(0.0).data, expected[0])
    np.testing.assert_array_equal(decoder.get_frames_played_at([1.5, 0.5]).data, expected[[45, 15]])
    np.testing.assert_array_equal(decoder.get_frames_played_in_range(0.2, 0.7).data, expected[6:21])
    np.testing.assert_array_equal(decoder.get_all_frames(fps=10).data, expected[::3])
    for i, frame in enumerate(decoder):
        np.testing.assert_array_equal(frame, expected[i])
    out = np.empty((3, *expected.shape[1:]), np.uint8)
    decoder.get_frames_at([7, 8, 9], out=out)
    np.testing.assert_array_equal(out, expected[7:10])


@pytest.mark.parametrize("name", COLOUR_FILES)
def test_approximate_mode_and_samplers_give_the_cli_pixels(media, cli_frames, name):
    expected = cli_frames[name]
    decoder = VideoDecoder(media[name], dimension_order="NHWC", seek_mode="approximate")
    np.testing.assert_array_equal(decoder.get_frames_at([30, 2, 59]).data, expected[[30, 2, 59]])
    clips = samplers.clips_at_regular_indices(decoder, num_clips=3, num_frames_per_clip=4,
                                              num_indices_between_frames=2)
    starts = [int(round(t * 30)) for t in clips.pts_seconds[:, 0]]
    for clip, start in zip(clips.data, starts):
        np.testing.assert_array_equal(clip, expected[start:start + 8:2])


@pytest.mark.parametrize("name", COLOUR_FILES)
def test_float32_is_the_cli_rgb48(media, name):
    expected = reference.ffmpeg_rgb_frames(media[name], pix_fmt="rgb48le")[[0, 31]]
    frames = VideoDecoder(media[name], dimension_order="NHWC", output_dtype="float32").get_frames_at([0, 31]).data
    np.testing.assert_array_equal(np.round(frames.astype(np.float64) * 65535).astype(np.uint16), expected)


@pytest.mark.parametrize("name", COLOUR_FILES)
def test_transforms_work_on_the_cli_rgb_image(media, cli_frames, name):
    """A crop is a window of the converted frame; a resize is the CLI's bilinear scale of it."""
    crop = VideoDecoder(media[name], dimension_order="NHWC", transforms=[CenterCrop((101, 151))])
    np.testing.assert_array_equal(crop.get_frames_at([0, 12]).data, cli_frames[name][[0, 12], 70:171, 84:235])
    resized = VideoDecoder(media[name], dimension_order="NHWC", transforms=[Resize((100, 150))])
    expected = reference.ffmpeg_rgb_frames(media[name], filters="format=rgb24,scale=150:100:flags=bilinear",
                                           size=(100, 150))
    np.testing.assert_array_equal(resized.get_frames_at([0, 12]).data, expected[[0, 12]])
