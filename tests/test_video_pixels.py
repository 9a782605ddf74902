"""Frames and timestamps against the ffmpeg CLI of the same FFmpeg build, byte for byte."""
from __future__ import annotations

import subprocess

import numpy as np
import pytest

import reference
import swscale_model
from torchcodec.decoders import VideoDecoder

# (corpus file, stream index) for every video stream in the corpus.
VIDEO_STREAMS = [
    ("h264_25fps_2s.mp4", 0),
    ("h264_bframes.mp4", 0),
    ("h264_bframes.ts", 0),
    ("h264_editlist.mp4", 0),
    ("h264_10bit.mp4", 0),
    ("h264_yuv444.mp4", 0),
    ("h264_yuv422.mp4", 0),
    ("h264_yuv444_161x121.mp4", 0),
    ("h264_rotate90.mp4", 0),
    ("h264_rotate180.mp4", 0),
    ("h264_rotate270.mp4", 0),
    ("h264_vfr.mkv", 0),
    ("h264_offset2.5s.mkv", 0),
    ("h264_offset2.5s.mp4", 0),
    ("h264_fullrange.mp4", 0),
    ("h264_bt709.mp4", 0),
    ("h264_bt709_fullrange.mp4", 0),
    ("h264_bt709_fullrange_yuv444.mp4", 0),
    ("h264_bt601_10bit_fullrange.mp4", 0),
    ("hevc_bt709_fullrange.mp4", 0),
    ("hevc_bt2020_10bit.mp4", 0),
    ("hevc_bt2020_10bit_fullrange.mp4", 0),
    ("h264_aac.mp4", 0),
    ("h264_aac_audio_first.mp4", 1),
    ("two_video_streams.mkv", 0),
    ("two_video_streams.mkv", 1),
    ("hevc_bframes.mp4", 0),
    ("hevc_10bit.mp4", 0),
    ("hevc_temporal_layers.mp4", 0),
    ("vp9.webm", 0),
    ("vp9_161x121.webm", 0),
    ("vp8.webm", 0),
    ("av1.mp4", 0),
    ("mpeg4_bframes.avi", 0),
    ("mpeg2_mp2.mpg", 0),
]
HIGH_BIT_DEPTH = ["h264_10bit.mp4", "hevc_10bit.mp4"]


@pytest.mark.parametrize("name,stream_index", VIDEO_STREAMS)
def test_all_frames_equal_ffmpeg_rgb24(media, name, stream_index):
    expected = reference.ffmpeg_rgb_frames(media[name], stream_index=stream_index)
    decoder = VideoDecoder(media[name], stream_index=stream_index, dimension_order="NHWC")
    frames = decoder.get_all_frames().data
    assert frames.dtype == np.uint8
    assert frames.shape == expected.shape
    np.testing.assert_array_equal(frames, expected)


@pytest.mark.parametrize("name,stream_index", VIDEO_STREAMS)
def test_pts_and_durations_equal_ffprobe(media, name, stream_index):
    expected = reference.ffprobe_frames(media[name], stream_index)
    batch = VideoDecoder(media[name], stream_index=stream_index).get_all_frames()
    if any(f["pts_missing"] for f in expected):
        # Packets without pts (MPEG-4 B-frames in AVI): FFmpeg's decoder gives its frames the *next*
        # packet's dts, so its timestamps are off by one frame. We report the packets' dts, which
        # ffprobe -show_packets gives independently.
        time_base = reference.ffprobe_stream(media[name], stream_index)["time_base"]
        dts = sorted(p["dts"] for p in reference.ffprobe_packets(media[name], stream_index))
        np.testing.assert_allclose(batch.pts_seconds, [float(d * time_base) for d in dts], rtol=0, atol=1e-9)
        return
    np.testing.assert_allclose(batch.pts_seconds, [f["pts_seconds"] for f in expected], rtol=0, atol=1e-9)
    np.testing.assert_allclose(batch.duration_seconds, [f["duration_seconds"] for f in expected], rtol=0, atol=1e-9)


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "hevc_bframes.mp4", "vp9.webm", "h264_bframes.ts",
                                  "mpeg2_mp2.mpg", "h264_editlist.mp4", "h264_rotate90.mp4",
                                  "mpeg4_bframes.avi", "h264_vfr.mkv", "av1.mp4"])
def test_random_access_equals_sequential_frames(media, name):
    expected = reference.ffmpeg_rgb_frames(media[name])
    decoder = VideoDecoder(media[name], dimension_order="NHWC")
    rng = np.random.default_rng(0)
    indices = rng.integers(0, len(decoder), size=25).tolist() + [len(decoder) - 1, 0, 1]
    np.testing.assert_array_equal(decoder.get_frames_at(indices).data, expected[indices])
    for i in indices[:8]:                                # one at a time, in random order
        np.testing.assert_array_equal(decoder[i], expected[i])


SKIPPING_FILES = ["h264_bframes.mp4", "h264_bframes.ts", "h264_editlist.mp4", "h264_vfr.mkv", "h264_interlaced.mp4",
                  "h264_offset2.5s.mkv", "h264_1080p.mp4", "hevc_bframes.mp4", "hevc_1080p.mp4", "hevc_10bit.mp4"]


@pytest.mark.parametrize("threads", [1, 4])
@pytest.mark.parametrize("name", SKIPPING_FILES)
def test_frames_reached_by_leaving_out_unreferenced_ones_are_exact(media, name, threads):
    """H.264 and HEVC frames that no other frame references are not decoded on the way to a target
    (with frame threads too): targets in and across GOPs, forward and back, equal the CLI's frames."""
    expected = reference.ffmpeg_rgb_frames(media[name])
    decoder = VideoDecoder(media[name], dimension_order="NHWC", num_ffmpeg_threads=threads)
    rng = np.random.default_rng(len(name) + threads)
    indices = sorted(rng.choice(len(decoder), size=min(12, len(decoder)), replace=False).tolist())
    np.testing.assert_array_equal(decoder.get_frames_at(indices).data, expected[indices])
    for i in indices[::-1][:5] + [len(decoder) - 1]:
        np.testing.assert_array_equal(decoder[i], expected[i], err_msg=f"frame {i}")
    assert decoder._engine.decoder.packets_skippable > 0


EARLY_DRAIN_FILES = ["h264_bframes.mp4", "h264_bframes.ts", "h264_editlist.mp4", "h264_vfr.mkv", "hevc_bframes.mp4",
                     "vp9.webm", "av1.mp4", "mpeg4_bframes.avi", "mpeg2_mp2.mpg", "h264_interlaced.mp4"]


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("name", EARLY_DRAIN_FILES)
def test_draining_after_the_last_target_of_a_run_changes_no_frame(media, name, threads, engine_probe):
    """decode_at drains the decoder once the packets of a run's targets were sent, instead of
    feeding it the packets after them: the frames equal the CLI's and those decoded without it."""
    expected = reference.ffmpeg_rgb_frames(media[name])
    n = len(expected)
    rng = np.random.default_rng(len(name) * 7 + threads)
    requests = [rng.choice(n, size=min(10, n), replace=False).tolist(),
                [0, 1, 2, n // 2, n // 2 + 1, n - 2, n - 1], list(range(n))[::7], [n - 1, 0, n - 1]]
    for indices in requests:
        on = VideoDecoder(media[name], dimension_order="NHWC", num_ffmpeg_threads=threads)
        batch = on.get_frames_at(indices)
        np.testing.assert_array_equal(batch.data, expected[indices])
        off_decoder = VideoDecoder(media[name], dimension_order="NHWC", num_ffmpeg_threads=threads)
        engine_probe.without_early_drain(off_decoder._engine.decoder)
        off = off_decoder.get_frames_at(indices)
        np.testing.assert_array_equal(batch.pts_seconds, off.pts_seconds)
        np.testing.assert_array_equal(batch.duration_seconds, off.duration_seconds)
        # The decoder stays usable after a request that drained it: the next ones need a seek.
        for i in (indices[0], n // 3, n - 1):
            np.testing.assert_array_equal(on[i], expected[i], err_msg=f"frame {i} after {indices}")


def test_an_early_drain_sends_fewer_packets(media, engine_probe):
    path = media["h264_bframes.mp4"]
    counts = {}
    for drain in (True, False):
        decoder = VideoDecoder(path)
        if not drain:
            engine_probe.without_early_drain(decoder._engine.decoder)
        decoder.get_frames_at([3, 40, 71])      # three GOPs of 30 frames: three runs
        counts[drain] = (decoder._engine.decoder.packets_sent, decoder._engine.decoder.early_drains)
    # The last run is not drained: the next request may go on from it.
    assert counts[True][1] == 2 and counts[False][1] == 0
    assert counts[True][0] < counts[False][0]


@pytest.mark.parametrize("threads", [1, 3])
@pytest.mark.parametrize("name", EARLY_DRAIN_FILES)
def test_approximate_mode_draining_once_the_frame_is_known_changes_no_frame(media, name, threads, engine_probe):
    """Approximate mode drains the decoder as soon as a request's frame is known, where the next
    request seeks anyway: the frames, pts and durations equal those decoded without the drain, and
    the decoder goes on serving requests after it."""
    n = VideoDecoder(media[name], seek_mode="approximate").metadata.num_frames
    rng = np.random.default_rng(len(name) * 11 + threads)
    requests = [rng.choice(n, size=min(10, n), replace=False).tolist(), np.linspace(0, n - 1, 10).astype(int).tolist(),
                [0, 1, 2, n // 2, n // 2 + 1, n - 2, n - 1], list(range(n))[::7], [n - 1, 0, n - 1]]
    for indices in requests:
        on = VideoDecoder(media[name], seek_mode="approximate", dimension_order="NHWC", num_ffmpeg_threads=threads)
        off = VideoDecoder(media[name], seek_mode="approximate", dimension_order="NHWC", num_ffmpeg_threads=threads)
        engine_probe.without_early_drain(off._engine.decoder)
        try:
            expected = off.get_frames_at(indices)
        except Exception as error:      # (frames past the last one: TorchCodec 0.17's error)
            with pytest.raises(type(error)):
                on.get_frames_at(indices)
            continue
        batch = on.get_frames_at(indices)
        np.testing.assert_array_equal(batch.data, expected.data, err_msg=f"{indices}")
        np.testing.assert_array_equal(batch.pts_seconds, expected.pts_seconds)
        np.testing.assert_array_equal(batch.duration_seconds, expected.duration_seconds)
        assert off._engine.decoder.early_drains == 0
        for i in (indices[0], n // 3, n // 3 + 1):
            np.testing.assert_array_equal(on[i], off[i], err_msg=f"frame {i} after {indices}")


def test_approximate_mode_drains_where_the_next_request_seeks(media, engine_probe):
    """Frames in three GOPs of 30: each of the first two requests is followed by one in another
    GOP (a seek), so its decoder is drained once its frame is known; the last is not."""
    path = media["h264_bframes.mp4"]
    counts = {}
    for drain in (True, False):
        decoder = VideoDecoder(path, seek_mode="approximate")
        if not drain:
            engine_probe.without_early_drain(decoder._engine.decoder)
        decoder.get_frames_at([3, 40, 71])
        counts[drain] = (decoder._engine.decoder.packets_sent, decoder._engine.decoder.early_drains)
    assert counts[True][1] == 2 and counts[False][1] == 0
    assert counts[True][0] < counts[False][0]
    # Frames in one GOP, the next decoded on from the last: no drain.
    decoder = VideoDecoder(path, seek_mode="approximate")
    decoder.get_frames_at([3, 9, 14, 20])
    assert decoder._engine.decoder.early_drains == 0


def test_frame_after_frame_requests_do_not_seek(media):
    """decoder[i] then decoder[i + 1]: the second goes on decoding from the first (no drain, no seek)."""
    decoder = VideoDecoder(media["h264_bframes.mp4"])
    for i in range(5, 25):
        decoder[i]
    assert decoder._engine.seeks <= 1 and decoder._engine.decoder.early_drains == 0


def test_nothing_is_left_out_where_unreferenced_frames_may_be_referenced(media):
    """HEVC with two temporal sub-layers: a sub-layer non-reference picture may be a reference of
    the higher sub-layer, so random access decodes everything (and is exact)."""
    path = media["hevc_temporal_layers.mp4"]
    expected = reference.ffmpeg_rgb_frames(path)
    decoder = VideoDecoder(path, dimension_order="NHWC")
    assert not decoder._engine.decoder.can_skip_unneeded
    for i in [29, 5, 47, 59, 31]:
        np.testing.assert_array_equal(decoder[i], expected[i], err_msg=f"frame {i}")
    assert decoder._engine.decoder.packets_skippable == 0
    for name in ["h264_bframes.mp4", "hevc_bframes.mp4"]:
        assert VideoDecoder(media[name])._engine.decoder.can_skip_unneeded
    assert not VideoDecoder(media["vp9.webm"])._engine.decoder.can_skip_unneeded


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "hevc_bframes.mp4"])
def test_only_unreferenced_frames_are_left_out(media, name):
    """Reaching frame 29 of a GOP of 30 decodes every frame that something references (the frames
    ``ffprobe -skip_frame noref`` still shows) before it, and the target; none of the others."""
    path = media[name]
    pts = [f["pts"] for f in reference.ffprobe_frames(path, 0)]
    probe = subprocess.run(["ffprobe", "-v", "error", "-skip_frame", "noref", "-select_streams", "v:0",
                            "-show_entries", "frame=pts", "-of", "csv=p=0", str(path)],
                           check=True, capture_output=True, text=True).stdout
    referenced = {int(line.strip(",")) for line in probe.split()}
    assert 0 < len(referenced) < len(pts) * 0.7         # B-frames: some references, many not
    decoder = VideoDecoder(path, dimension_order="NHWC")
    np.testing.assert_array_equal(decoder[29], reference.ffmpeg_rgb_frames(path)[29])
    needed = sum(1 for p in pts[:29] if p in referenced) + 1
    assert needed <= decoder._engine.frames_decoded < 30


@pytest.mark.parametrize("name", ["h264_25fps_2s.mp4", "h264_bframes.mp4", "vp9.webm", "hevc_bframes.mp4"])
def test_approximate_mode_gives_the_same_frames_on_constant_frame_rate(media, name):
    expected = reference.ffmpeg_rgb_frames(media[name])
    decoder = VideoDecoder(media[name], seek_mode="approximate", dimension_order="NHWC")
    assert len(decoder) == len(expected)
    np.testing.assert_array_equal(decoder.get_all_frames().data, expected)
    indices = [17, 3, len(expected) - 1, 3, 0]
    np.testing.assert_array_equal(decoder.get_frames_at(indices).data, expected[indices])


@pytest.mark.parametrize("name", HIGH_BIT_DEPTH + ["h264_bframes.mp4"])
def test_float32_output_is_rgb48_divided_by_65535(media, name):
    expected = reference.ffmpeg_rgb_frames(media[name], pix_fmt="rgb48le").astype(np.float32) / np.float32(65535)
    frames = VideoDecoder(media[name], output_dtype="float32", dimension_order="NHWC").get_all_frames().data
    assert frames.dtype == np.float32
    np.testing.assert_array_equal(frames, expected)


def test_float32_last_column_of_an_odd_width_is_the_table_converters_value(media):
    """swscale converts 8-bit 4:2:0 frames of even height to RGB48 with its table converter, which
    never writes the last column of an odd width (the CLI's output there is its zeroed pool memory).
    That column is the value the converter's arithmetic gives it (tests/swscale_model.py, which the
    CUDA kernels write too), whatever frame was converted before; the others are the CLI's."""
    path = media["vp9_161x120.webm"]
    height, width = 120, 161
    raw = np.frombuffer(reference.ffmpeg_raw_video(path), np.uint8).reshape(-1, height * width * 3 // 2 + height // 2)
    cli = reference.ffmpeg_rgb_frames(path, pix_fmt="rgb48le")
    decoder = VideoDecoder(path, output_dtype="float32", dimension_order="NHWC")
    for k in (len(raw) - 1, 0, 1):          # the last frame first: its pixels stay in scratch memory
        y = raw[k, :height * width].reshape(height, width)
        u, v = raw[k, height * width:].reshape(2, height // 2, (width + 1) // 2)
        expected = swscale_model.convert(y, u, v, 8, 2, False, True).astype(np.float32) / np.float32(65535)
        got = decoder.get_frame_at(k).data
        np.testing.assert_array_equal(got[:, :-1], cli[k][:, :-1].astype(np.float32) / np.float32(65535))
        np.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("name,dtype", [("h264_10bit.mp4", np.float32), ("hevc_10bit.mp4", np.float32),
                                        ("h264_bframes.mp4", np.uint8)])
def test_auto_output_dtype_follows_bit_depth(media, name, dtype):
    assert VideoDecoder(media[name], output_dtype="auto")[0].dtype == dtype


def test_rotation_is_applied_and_reported(media):
    upright = VideoDecoder(media["h264_25fps_2s.mp4"], dimension_order="NHWC")
    for name, rotation in [("h264_rotate90.mp4", 90), ("h264_rotate180.mp4", 180), ("h264_rotate270.mp4", 270)]:
        decoder = VideoDecoder(media[name], dimension_order="NHWC")
        frame = decoder[5]
        assert round(decoder.metadata.rotation) % 360 == rotation % 360, name
        if rotation % 180:
            assert (decoder.metadata.height, decoder.metadata.width) == (upright.metadata.width, upright.metadata.height)
        assert frame.shape == (decoder.metadata.height, decoder.metadata.width, 3)
