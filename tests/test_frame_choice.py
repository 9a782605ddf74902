"""Which frame each request returns: TorchCodec 0.17's rules, checked against ffprobe's timestamps.

Exact mode: a time t is played by the last frame whose pts is <= t (the next frame's pts ends it),
except for ``get_frame_played_at``, which uses each frame's duration: a time in a gap between one
frame's end and the next frame's pts gets the next frame. Resampling at ``fps`` takes
``round((stop - start) * fps)`` frames, rounded half away from zero, at ``start + k * (1 / fps)``.

Approximate mode knows only the header's start and frame rate: frame i is the first decoded frame
whose pts is >= the timestamp closest to ``start + i / fps``, except that a frame index right after
the previous request's is the next frame the decoder outputs. Time requests outside the frames that
exist run off the end of the stream: RuntimeError (IndexError for ``get_frame_played_at``).
"""
from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

import reference
from torchcodec.decoders import VideoDecoder

END_OF_STREAM = "Requested next frame while there are no more frames left to decode"


def frames_of(path):
    """ffprobe's frames of the best video stream: pts (ticks), durations (ticks), time base."""
    index = reference.best_stream(path, "video")
    time_base = reference.ffprobe_stream(path, index)["time_base"]
    frames = reference.ffprobe_frames(path, index)
    return [f["pts"] for f in frames], [f["duration"] for f in frames], time_base


def seconds(ticks, time_base):
    """ticks * num / den, in the order TorchCodec computes it."""
    return float(ticks) * time_base.numerator / time_base.denominator


def shown_at(starts, t):
    """Index of the last frame that starts at or before ``t`` (the first frame for earlier times)."""
    return max(sum(1 for s in starts if s <= t) - 1, 0)


# ---- resampling ---------------------------------------------------------------------------------

@pytest.mark.parametrize("seek_mode", ["exact", "approximate"])
@pytest.mark.parametrize("start,stop,fps,count", [
    (0.0, 0.5, 5.0, 3),           # 2.5 frames: 3, where Python's round() gives 2
    (0.0, 1.0, 12.5, 13),         # 12.5: 13 (round(): 12)
    (0.25, 0.75, 9.0, 5),         # 4.5: 5 (round(): 4)
    (0.0, 0.7, 5.0, 4),           # 0.7 * 5 is 3.5 in doubles: 4 (round() agrees)
    (0.5, 0.7, 7.5, 1),           # 0.2 * 7.5 is 1.4999999999999996: 1
])
def test_resampled_frame_count_rounds_half_away_from_zero(h264, seek_mode, start, stop, fps, count):
    product = (stop - start) * fps
    expected = math.floor(product) + (product - math.floor(product) >= 0.5)
    assert expected == count
    batch = VideoDecoder(h264, seek_mode=seek_mode).get_frames_played_in_range(start, stop, fps=fps)
    assert len(batch) == count


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "vp9.webm", "h264_vfr.mkv", "hevc_bframes.mp4",
                                  "h264_offset2.5s.mp4"])
@pytest.mark.parametrize("start,stop,fps", [(0.0, 1.0, 30.0), (0.2, 1.2, 7.0), (None, None, 5.0)])
def test_resampled_frames_are_those_shown_at_start_plus_k_frame_durations(media, name, start, stop, fps):
    path = media[name]
    pts, _, time_base = frames_of(path)
    starts = [seconds(p, time_base) for p in pts]
    decoder = VideoDecoder(path, dimension_order="NHWC")
    begin = starts[0]
    if start is None:
        start, stop = begin, decoder.metadata.end_stream_seconds
    else:
        start, stop = begin + start, begin + stop
    batch = decoder.get_frames_played_in_range(start, stop, fps=fps)
    step = 1.0 / fps
    times = [start + k * step for k in range(len(batch))]
    assert list(batch.pts_seconds) == times                          # bit for bit
    np.testing.assert_array_equal(batch.duration_seconds, [step] * len(times))
    expected = reference.ffmpeg_rgb_frames(path)[[shown_at(starts, t) for t in times]]
    np.testing.assert_array_equal(batch.data, expected)


def test_a_resampled_time_just_below_a_frame_start_gets_the_frame_before(h264):
    # 30 fps, time base 1/15360: frame 23 starts at 11776 / 15360 = 23 / 30 = 0.7666666666666667,
    # and the 24th sample time, 23 * (1 / 30), is 0.7666666666666666: still frame 22.
    assert 23 * (1.0 / 30) < 11776 / 15360 == 23 / 30
    batch = VideoDecoder(h264).get_frames_played_in_range(0.0, 1.0, fps=30.0)
    frames = reference.ffmpeg_rgb_frames(h264)
    np.testing.assert_array_equal(batch.data[23].transpose(1, 2, 0), frames[22])
    np.testing.assert_array_equal(batch.data[24].transpose(1, 2, 0), frames[24])


# ---- time: next pts or duration ------------------------------------------------------------------

def gaps(path):
    """(t, frame before, frame after) for times between a frame's end (pts + duration) and the
    next frame's pts."""
    pts, durations, time_base = frames_of(path)
    found = []
    for i in range(len(pts) - 1):
        end, following = seconds(pts[i] + durations[i], time_base), seconds(pts[i + 1], time_base)
        if end < following:
            found.append(((end + following) / 2, seconds(pts[i], time_base), following))
    return found


@pytest.mark.parametrize("seek_mode", ["exact", "approximate"])
def test_get_frame_played_at_in_a_gap_gives_the_next_frame(media, seek_mode):
    # Matroska stores milliseconds: at 30 fps a frame at 33 ms lasting 33 ms ends at 66 ms, 1 ms
    # before the next one; and this file drops frames (1.0 s lasts until 1.033 s, then 1.067 s).
    found = gaps(media["h264_vfr.mkv"])
    assert len(found) > 10 and any(after - before > 0.05 for _, before, after in found)
    decoder = VideoDecoder(media["h264_vfr.mkv"], seek_mode=seek_mode)
    for t, _, after in found:
        assert decoder.get_frame_played_at(t).pts_seconds == after


def test_get_frames_played_at_in_a_gap_gives_the_frame_before(media):
    # The batch methods let a frame play until the next one starts (TorchCodec is inconsistent here).
    found = gaps(media["h264_vfr.mkv"])
    decoder = VideoDecoder(media["h264_vfr.mkv"])
    batch = decoder.get_frames_played_at([t for t, _, _ in found])
    assert list(batch.pts_seconds) == [before for _, before, _ in found]
    for t, before, after in found[:5]:
        ranged = decoder.get_frames_played_in_range(t, after + 1e-3)
        assert list(ranged.pts_seconds) == [before, after]


# ---- approximate mode ----------------------------------------------------------------------------

def test_approximate_frame_i_of_a_regular_file_is_frame_i(h264):
    # 30 fps, time base 1/15360: frame i is expected at round(i / 30 * 15360) = 512 i, where it is.
    pts, _, time_base = frames_of(h264)
    assert time_base.denominator == 15360 and pts == [512 * i for i in range(90)]
    decoder = VideoDecoder(h264, seek_mode="approximate", dimension_order="NHWC")
    indices = [45, 3, 89, 0, 61, 62, 17]
    batch = decoder.get_frames_at(indices)
    np.testing.assert_array_equal(batch.pts_seconds, [i / 30 for i in indices])
    np.testing.assert_array_equal(batch.data, reference.ffmpeg_rgb_frames(h264)[indices])


def test_approximate_frame_is_the_first_at_or_after_its_grid_time(media):
    # Header: 30 fps; the frames are irregular (milliseconds). A lone request for frame i takes the
    # first frame at or after round(i / 30 * 1000) ms.
    path = media["h264_vfr.mkv"]
    pts, _, time_base = frames_of(path)
    assert time_base == Fraction(1, 1000)
    for i in [4, 5, 11, 40]:
        cursor = math.floor(i / 30 * 1000 + 0.5)
        expected = next(p for p in pts if p >= cursor)
        frame = VideoDecoder(path, seek_mode="approximate").get_frame_at(i)
        assert frame.pts_seconds == seconds(expected, time_base)


def test_approximate_consecutive_indices_are_consecutive_frames(media):
    # Frame i + 1 right after frame i is the decoder's next frame, not the one on the grid: so a
    # batch of consecutive indices has every frame once, while frame i alone may repeat a frame.
    path = media["h264_vfr.mkv"]
    pts, _, time_base = frames_of(path)
    decoder = VideoDecoder(path, seek_mode="approximate")
    assert list(decoder.get_frames_in_range(0, 30).pts_seconds) == [seconds(p, time_base) for p in pts[:30]]
    assert [f.pts_seconds for f in (decoder.get_frame_at(i) for i in range(30, 35))] == \
        [seconds(p, time_base) for p in pts[30:35]]
    # Frames 3 and 4 alone: both at or after 100 and 133 ms, the frame at 133 ms.
    alone = [VideoDecoder(path, seek_mode="approximate").get_frame_at(i).pts_seconds for i in (3, 4)]
    assert alone == [0.133, 0.133]
    assert list(VideoDecoder(path, seek_mode="approximate").get_frames_at([4, 3]).pts_seconds) == [0.233, 0.133]


def test_approximate_range_starts_on_the_grid_and_decodes_on(media):
    path = media["h264_vfr.mkv"]
    pts, _, time_base = frames_of(path)
    start, stop = 0.3, 1.7                       # frames floor(0.3 * 30) = 9 to ceil(1.7 * 30) = 51
    batch = VideoDecoder(path, seek_mode="approximate").get_frames_played_in_range(start, stop)
    first = pts.index(next(p for p in pts if p >= 300))
    assert list(batch.pts_seconds) == [seconds(p, time_base) for p in pts[first:first + 51 - 9]]


def test_a_time_request_does_not_make_the_next_index_sequential(h264):
    # (TorchCodec 0.17 would decode on from the frame played at 1.5 s and return frame 46.)
    for seek_mode in ("exact", "approximate"):
        decoder = VideoDecoder(h264, seek_mode=seek_mode)
        decoder.get_frame_at(3)
        assert decoder.get_frame_played_at(1.5).pts_seconds == 1.5
        assert decoder.get_frame_at(4).pts_seconds == 4 / 30


# ---- end of stream -------------------------------------------------------------------------------

def test_approximate_requests_past_the_last_frame_run_off_the_end(media):
    # The Matroska header says the stream lasts until 7.0 s (start 2.5 s + the file's 4.5 s); its
    # frames end at 4.5 s. Approximate mode believes the header, and finds no frame after 4.5 s.
    path = media["h264_offset2.5s.mkv"]
    pts, durations, time_base = frames_of(path)
    last_end = seconds(pts[-1] + durations[-1], time_base)
    assert last_end == 4.5
    decoder = VideoDecoder(path, seek_mode="approximate")
    assert decoder.metadata.end_stream_seconds == 7.0
    assert decoder.get_frame_played_at(last_end - 1e-3).pts_seconds == seconds(pts[-1], time_base)
    with pytest.raises(IndexError, match=END_OF_STREAM):
        decoder.get_frame_played_at(last_end + 0.1)
    with pytest.raises(RuntimeError, match=END_OF_STREAM):
        decoder.get_frames_played_at([last_end + 0.1])
    with pytest.raises(RuntimeError, match=END_OF_STREAM):
        decoder.get_frames_played_in_range(last_end - 0.1, last_end + 0.1)
    with pytest.raises(RuntimeError, match=END_OF_STREAM):
        decoder.get_frame_at(len(decoder) - 1)   # expected at 2.5 + 134 / 30 s
    frame = decoder.get_frame_at(59)             # 2.5 + 59 / 30 = 4.4667 s: the last frame
    assert frame.pts_seconds == seconds(pts[-1], time_base)


@pytest.mark.parametrize("name", ["vp9.webm", "h264_offset2.5s.mkv", "h264_offset2.5s.mp4"])
def test_exact_end_of_stream_is_the_last_frames_end(media, name):
    pts, durations, time_base = frames_of(media[name])
    end = seconds(pts[-1] + durations[-1], time_base)
    decoder = VideoDecoder(media[name])
    assert decoder.metadata.end_stream_seconds == end
    assert decoder.get_frame_played_at(end - 1e-6).pts_seconds == seconds(pts[-1], time_base)
    assert list(decoder.get_frames_played_at([end - 1e-6]).pts_seconds) == [seconds(pts[-1], time_base)]
    assert list(decoder.get_frames_played_in_range(end - 1e-6, end).pts_seconds) == [seconds(pts[-1], time_base)]
    with pytest.raises(IndexError):
        decoder.get_frame_played_at(end)
    with pytest.raises(RuntimeError):
        decoder.get_frames_played_at([end])
    with pytest.raises(ValueError):
        decoder.get_frames_played_in_range(end - 0.1, end + 1e-6)
