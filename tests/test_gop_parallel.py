"""GOP-parallel decoding (torchcodec/_core/_gop_parallel.py): with num_ffmpeg_threads other than 1, a
request over several GOPs is spread over sibling readers, each decoding whole runs from their key
frames into its own slots of the output. Frames and timestamps must be those of the serial path
and of the ffmpeg CLI, whichever reader decoded them."""
from __future__ import annotations

import array
import io

import numpy as np
import pytest

import reference
from torchcodec._core import _gop_parallel
from torchcodec.decoders import VideoDecoder
from torchcodec.samplers import clips_at_random_indices


@pytest.fixture(scope="module")
def expected(media):
    return reference.ffmpeg_rgb_frames(media["h264_bframes.mp4"])       # 90 frames, 3 GOPs of 30


def spread(h264, threads=2, **options):
    return VideoDecoder(h264, dimension_order="NHWC", num_ffmpeg_threads=threads, **options)


def siblings_used(decoder):
    return [sibling.frames_decoded for sibling in decoder._gop.siblings]


@pytest.mark.parametrize("threads", [0, 2, 3])
def test_frames_over_several_gops_are_the_clis_and_come_from_siblings(h264, expected, threads):
    decoder = spread(h264, threads)
    indices = [89, 3, 45, 3, 62, 20, 0, 88]             # 3 runs: 0-20, 45, 62-89
    batch = decoder.get_frames_at(indices)
    np.testing.assert_array_equal(batch.data, expected[indices])
    serial = VideoDecoder(h264, dimension_order="NHWC").get_frames_at(indices)
    np.testing.assert_array_equal(batch.pts_seconds, serial.pts_seconds)
    np.testing.assert_array_equal(batch.duration_seconds, serial.duration_seconds)
    used = siblings_used(decoder)
    if _gop_parallel.worker_count(threads) > 1:
        assert len(used) == min(_gop_parallel.worker_count(threads), 3) and all(used)
        assert decoder._engine.frames_decoded == 0          # the stream's own reader was not needed


def test_every_batch_method_and_the_samplers_take_the_spread_path(h264, expected):
    decoder, serial = spread(h264), VideoDecoder(h264, dimension_order="NHWC")
    np.testing.assert_array_equal(decoder.get_frames_in_range(0, 90, 7).data, expected[0:90:7])
    np.testing.assert_array_equal(decoder[5:80:9], expected[5:80:9])
    times = [2.9, 0.1, 1.55, 0.1]
    np.testing.assert_array_equal(decoder.get_frames_played_at(times).data, serial.get_frames_played_at(times).data)
    got, want = decoder.get_frames_played_in_range(0.0, 3.0, fps=4), serial.get_frames_played_in_range(0.0, 3.0, fps=4)
    np.testing.assert_array_equal(got.data, want.data)
    np.testing.assert_array_equal(got.pts_seconds, want.pts_seconds)
    clips = clips_at_random_indices(decoder, num_clips=5, num_frames_per_clip=4, generator=3)
    same = clips_at_random_indices(serial, num_clips=5, num_frames_per_clip=4, generator=3)
    np.testing.assert_array_equal(clips.data, same.data)
    np.testing.assert_array_equal(clips.pts_seconds, same.pts_seconds)
    assert len(decoder._gop.siblings) == 2


def test_float32_and_transforms_are_the_serial_paths(h264):
    from torchcodec.transforms import CenterCrop, Resize

    options = dict(output_dtype="float32", transforms=[CenterCrop((200, 300)), Resize((50, 64))])
    indices = [80, 10, 40]
    got = spread(h264, **options).get_frames_at(indices).data
    np.testing.assert_array_equal(got, VideoDecoder(h264, dimension_order="NHWC", **options).get_frames_at(indices).data)


def test_siblings_are_opened_from_the_probe_state_once_and_kept(h264):
    decoder = spread(h264)
    decoder.get_frames_at([0, 50])
    first = list(decoder._gop.siblings)
    assert all(sibling.demuxer.probe_skipped for sibling in first)      # no second probe
    decoder.get_frames_at([70, 10, 40])
    assert decoder._gop.siblings == first                               # at most `workers` decoders, reused


def test_requests_within_one_gop_and_one_thread_stay_serial(h264, expected):
    decoder = spread(h264)
    np.testing.assert_array_equal(decoder.get_frames_at([5, 1, 20]).data, expected[[5, 1, 20]])
    assert decoder._gop.siblings == []
    single = spread(h264, threads=1)
    np.testing.assert_array_equal(single.get_frames_at([5, 80]).data, expected[[5, 80]])
    assert single._gop.siblings == [] and not single._gop.usable


def test_a_file_object_is_decoded_serially(h264, expected):
    with open(h264, "rb") as f:
        decoder = VideoDecoder(io.BytesIO(f.read()), dimension_order="NHWC", num_ffmpeg_threads=2)
    np.testing.assert_array_equal(decoder.get_frames_at([80, 5]).data, expected[[80, 5]])
    with open(h264, "rb") as f:
        decoder = VideoDecoder(f, dimension_order="NHWC", num_ffmpeg_threads=2)
        np.testing.assert_array_equal(decoder.get_frames_at([80, 5]).data, expected[[80, 5]])
        assert decoder._gop.siblings == []


class Failing:
    """A sibling whose decode fails (what a corrupt run would raise)."""

    def __init__(self):
        self.calls = 0

    def decode_at(self, *args):
        self.calls += 1
        raise RuntimeError("run 2 is corrupt")


def test_an_error_in_one_group_is_raised_once_after_the_others_ended(h264):
    decoder = spread(h264)
    decoder.get_frames_at([0, 50])                       # opens both siblings
    good, failing = decoder._gop.siblings[0], Failing()
    decoder._gop.siblings[1] = failing
    before = good.frames_decoded
    with pytest.raises(RuntimeError, match="run 2 is corrupt"):
        decoder.get_frames_at([1, 85])
    assert failing.calls == 1 and good.frames_decoded > before         # the other group ran to its end


@pytest.mark.parametrize("costs,groups,starts", [
    ([10, 10, 10, 10], 2, [0, 2]),
    ([30, 1, 1, 1], 2, [0, 1]),
    ([1, 1, 1, 30], 2, [0, 3]),
    ([5, 5, 5], 4, [0, 1, 2]),
    ([7], 3, [0]),
])
def test_runs_are_cut_into_contiguous_groups_of_about_equal_work(costs, groups, starts):
    assert _gop_parallel.split_runs(costs, groups) == starts


def test_runs_follow_the_key_frames_of_the_index(h264):
    decoder = VideoDecoder(h264)
    index = decoder._engine.index
    pts = [index.pts(i) for i in (0, 5, 29, 30, 31, 75)]
    # 0, 5 and 29 in GOP 0; 30 and 31 in GOP 1, reached by decoding on from 29; 75 needs a seek
    assert decoder._engine.runs(array.array("q", pts)) == [(5, 32), (1, 16)]
    with pytest.raises(ValueError, match="sorted and distinct"):
        decoder._engine.runs(array.array("q", pts[::-1]))
