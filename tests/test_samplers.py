"""torchcodec.samplers: which clips each sampler asks for (exact indices and timestamps for fixed
generators, derived here from the draws), policies, ranges, errors, the 5-D output, the one batch
request per call, and (with torch) TorchCodec's draws for the same torch.manual_seed."""
from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

import torchcodec
from torchcodec.decoders import VideoDecoder
from torchcodec.samplers import (clips_at_random_indices, clips_at_random_timestamps, clips_at_regular_indices,
                                 clips_at_regular_timestamps)

FPS = 30        # h264_bframes.mp4: 90 frames at 30 fps, pts i/30, 320x240, 3 s, GOP 30
NUM_FRAMES = 90
END = 3.0


def record_requests(decoder: VideoDecoder) -> list[list]:
    """The indices/times that a sampler hands to the decoder's batch methods, one list per call."""
    requests: list[list] = []
    for name in ("get_frames_at", "get_frames_played_at"):
        def spy(values, *args, _method=getattr(decoder, name), **kwargs):
            requests.append(list(values))
            return _method(values, *args, **kwargs)
        setattr(decoder, name, spy)
    return requests


def clip_indices(starts, num_frames_per_clip, step=1):
    """Expected indices of clips that fit in the video: start, start + step, ..."""
    return [[s + k * step for k in range(num_frames_per_clip)] for s in starts]


def frame_indices(batch) -> list[list[int]]:
    """Indices of the frames of a batch of h264_bframes.mp4 clips, from their pts (i / 30)."""
    return np.rint(np.asarray(batch.pts_seconds) * FPS).astype(int).tolist()


# ---- random indices -----------------------------------------------------------------------------

def test_random_indices_start_at_the_seeds_draws(decoder):
    # 4 frames, 2 apart: a clip spans 7 frames, so starts are drawn from [0, 90 - 7 + 1)
    starts = np.random.default_rng(7).integers(0, 84, size=5).tolist()
    batch = clips_at_random_indices(decoder, num_clips=5, num_frames_per_clip=4, num_indices_between_frames=2,
                                    generator=7)
    assert frame_indices(batch) == clip_indices(starts, 4, step=2)


def test_random_indices_advance_a_numpy_generator(decoder):
    twin = np.random.default_rng(11)
    first, second = twin.integers(0, 88, size=3).tolist(), twin.integers(0, 88, size=3).tolist()
    generator = np.random.default_rng(11)
    a = clips_at_random_indices(decoder, num_clips=3, num_frames_per_clip=3, generator=generator)
    b = clips_at_random_indices(decoder, num_clips=3, num_frames_per_clip=3, generator=generator)
    assert frame_indices(a) == clip_indices(first, 3)
    assert frame_indices(b) == clip_indices(second, 3)


def test_random_indices_accept_a_numpy_integer_seed(decoder):
    a = clips_at_random_indices(decoder, num_clips=4, generator=np.int64(5))
    assert frame_indices(a) == [[s] for s in np.random.default_rng(5).integers(0, 90, size=4).tolist()]


@pytest.mark.parametrize("generator", [True, "seed", 1.5, object()])
def test_random_samplers_refuse_other_generators(decoder, generator):
    with pytest.raises(TypeError, match="generator"):
        clips_at_random_indices(decoder, generator=generator)
    with pytest.raises(TypeError, match="generator"):
        clips_at_random_timestamps(decoder, generator=generator)


def test_default_range_keeps_every_clip_inside_the_video(decoder):
    # 10 frames, 3 apart: span 28, so starts lie in [0, 63) and the last frame is at most 62 + 27 = 89
    requests = record_requests(decoder)
    clips_at_random_indices(decoder, num_clips=400, num_frames_per_clip=10, num_indices_between_frames=3,
                            generator=0)
    starts = requests[0][::10]
    assert starts == np.random.default_rng(0).integers(0, 63, size=400).tolist()
    assert min(starts) == 0 and max(starts) == 62 and max(requests[0]) == 89


def test_more_random_clips_than_frames(decoder):
    batch = clips_at_random_indices(decoder, num_clips=500, num_frames_per_clip=1, generator=3)
    assert batch.data.shape == (500, 1, 3, 240, 320)
    assert frame_indices(batch) == [[s] for s in np.random.default_rng(3).integers(0, 90, size=500).tolist()]


# ---- regular indices ----------------------------------------------------------------------------

def test_regular_indices_are_evenly_spaced(decoder):
    batch = clips_at_regular_indices(decoder, num_clips=4, num_frames_per_clip=3)   # starts in [0, 88)
    assert frame_indices(batch) == clip_indices([0, 29, 58, 87], 3)


def test_regular_indices_truncate_fractional_steps(decoder):
    # [80, 88): 3 starts from 80 to 87, step 3.5 -> 80, 83 (83.5 truncated), 87
    batch = clips_at_regular_indices(decoder, num_clips=3, sampling_range_start=-10, sampling_range_end=-2)
    assert frame_indices(batch) == [[80], [83], [87]]


def test_more_regular_clips_than_frames_repeat_starts(decoder):
    requests = record_requests(decoder)
    clips_at_regular_indices(decoder, num_clips=200)
    step = 89 / 199      # first half counts up from 0, second half down from 89, truncated
    expected = [int(i * step) if i < 100 else int(89 - (199 - i) * step) for i in range(200)]
    assert requests[0] == expected
    assert expected[0] == 0 and expected[-1] == 89 and sorted(set(expected)) == list(range(90))


def test_one_regular_clip_starts_at_the_range_start(decoder):
    batch = clips_at_regular_indices(decoder, num_clips=1, num_frames_per_clip=2, sampling_range_start=40)
    assert frame_indices(batch) == [[40, 41]]


def test_sampling_range_end_past_the_video_is_clamped(decoder):
    batch = clips_at_regular_indices(decoder, num_clips=2, sampling_range_start=88, sampling_range_end=1000)
    assert frame_indices(batch) == [[88], [89]]


# ---- policies -----------------------------------------------------------------------------------

@pytest.mark.parametrize("policy, expected", [("repeat_last", [85, 87, 89, 89, 89]),
                                               ("wrap", [85, 87, 89, 85, 87])])
def test_index_policies_fill_clips_that_run_past_the_end(decoder, policy, expected):
    batch = clips_at_regular_indices(decoder, num_clips=1, num_frames_per_clip=5, num_indices_between_frames=2,
                                     sampling_range_start=85, sampling_range_end=86, policy=policy)
    assert frame_indices(batch) == [expected]


def test_error_policy_raises_for_a_clip_past_the_end(decoder):
    with pytest.raises(ValueError, match="policy='error'"):
        clips_at_regular_indices(decoder, num_clips=1, num_frames_per_clip=5, sampling_range_start=88,
                                 sampling_range_end=89, policy="error")
    inside = clips_at_regular_indices(decoder, num_clips=1, num_frames_per_clip=5, sampling_range_start=85,
                                      sampling_range_end=86, policy="error")
    assert frame_indices(inside) == [[85, 86, 87, 88, 89]]


@pytest.mark.parametrize("policy, expected", [("repeat_last", [2.9, 2.95, 2.95, 2.95]),
                                               ("wrap", [2.9, 2.95, 2.9, 2.95])])
def test_time_policies_fill_clips_that_run_past_the_end(decoder, policy, expected):
    requests = record_requests(decoder)
    clips_at_regular_timestamps(decoder, seconds_between_clip_starts=1.0, num_frames_per_clip=4,
                                seconds_between_frames=0.05, sampling_range_start=2.9, sampling_range_end=2.95,
                                policy=policy)
    assert requests[0] == pytest.approx(expected, abs=1e-12)
    assert requests[0][1] == 2.9 + 0.05


def test_time_error_policy(decoder):
    with pytest.raises(ValueError, match="policy='error'"):
        clips_at_random_timestamps(decoder, num_clips=3, num_frames_per_clip=4, sampling_range_start=2.95,
                                   sampling_range_end=10.0, policy="error", generator=0)


# ---- random timestamps --------------------------------------------------------------------------

def test_random_timestamps_are_the_seeds_draws_scaled_to_the_range(decoder):
    # 3 frames 0.25 s apart: clips start in [0, 3 - 0.5)
    u = np.random.default_rng(3).random(4).tolist()
    requests = record_requests(decoder)
    clips_at_random_timestamps(decoder, num_clips=4, num_frames_per_clip=3, seconds_between_frames=0.25,
                               generator=3)
    assert requests[0] == [x * 2.5 + 0.0 + k * 0.25 for x in u for k in range(3)]


def test_random_timestamps_default_to_the_stream_start_and_frame_duration(media):
    decoder = VideoDecoder(media["h264_offset2.5s.mp4"])        # 2.5 .. 4.5 s, 30 fps
    requests = record_requests(decoder)
    clips_at_random_timestamps(decoder, num_clips=3, num_frames_per_clip=2, generator=9)
    width = 4.5 - 1 / 30 - 2.5
    u = np.random.default_rng(9).random(3).tolist()
    assert requests[0] == [x * width + 2.5 + k * (1 / 30) for x in u for k in range(2)]


def test_random_timestamps_in_an_explicit_range(decoder):
    u = np.random.default_rng(1).random(5).tolist()
    requests = record_requests(decoder)
    batch = clips_at_random_timestamps(decoder, num_clips=5, sampling_range_start=1.0, sampling_range_end=1.5,
                                       generator=1)
    assert requests[0] == [x * 0.5 + 1.0 for x in u]
    assert all(30 <= i <= 45 for [i] in frame_indices(batch))


# ---- regular timestamps -------------------------------------------------------------------------

def test_regular_timestamps_start_every_step_before_the_range_end(decoder):
    requests = record_requests(decoder)
    batch = clips_at_regular_timestamps(decoder, seconds_between_clip_starts=0.7, num_frames_per_clip=2)
    # the last start must leave room for one more frame: below 3 - 1/30
    assert requests[0][::2] == [0.0, 0.7, 1.4, 2.0999999999999996, 2.8]
    assert requests[0][1::2] == [s + 1 / 30 for s in requests[0][::2]]
    assert batch.data.shape[:2] == (5, 2)


def test_regular_timestamps_default_range_leaves_room_for_the_whole_clip(decoder):
    # 30 frames 0.1 s apart span 2.9 s, so clips start in [0, 3 - 2.9): at 0 and 0.05
    requests = record_requests(decoder)
    clips_at_regular_timestamps(decoder, seconds_between_clip_starts=0.05, num_frames_per_clip=30,
                                seconds_between_frames=0.1)
    starts = requests[0][::30]
    assert starts == [0.0, 0.05] and all(t < END for t in requests[0])
    assert math.isclose(requests[0][29], 2.9)


@pytest.mark.parametrize("start, stop, step, expected", [
    # (1.3 - 1.0) / 0.1 = 3.0000000000000004 makes 4 values; the 4th, 1.0 + 3 * 0.1 = 1.3, is not below stop
    (1.0, 1.3, 0.1, [1.0, 1.1, 1.2]),
    # 0.3 / 0.1 = 2.9999999999999996 rounds up to 3 values, the last one below stop
    (0.0, 0.3, 0.1, [0.0, 0.1, 0.2]),
    (0.5, 2.0, 0.5, [0.5, 1.0, 1.5]),
])
def test_regular_timestamps_float_precision(decoder, start, stop, step, expected):
    requests = record_requests(decoder)
    batch = clips_at_regular_timestamps(decoder, seconds_between_clip_starts=step, sampling_range_start=start,
                                        sampling_range_end=stop)
    assert requests[0] == expected
    assert len(batch) == len(expected)


# ---- errors -------------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, match", [
    (dict(num_clips=0), "num_clips"),
    (dict(num_frames_per_clip=0), "num_frames_per_clip"),
    (dict(num_indices_between_frames=0), "num_indices_between_frames"),
    (dict(policy="loop"), "policy"),
    (dict(sampling_range_start=90), "sampling_range_start"),
    (dict(sampling_range_start=10, sampling_range_end=10), "sampling_range_start"),
    (dict(sampling_range_start=-5, sampling_range_end=-10), "sampling_range_start"),
    (dict(num_frames_per_clip=90, sampling_range_start=1), "sampling_range_end should be 1 "),
])
def test_index_samplers_refuse_bad_arguments(decoder, kwargs, match):
    for sampler in (clips_at_random_indices, clips_at_regular_indices):
        with pytest.raises(ValueError, match=match):
            sampler(decoder, **kwargs)


@pytest.mark.parametrize("kwargs, match", [
    (dict(num_frames_per_clip=0), "num_frames_per_clip"),
    (dict(policy="loop"), "policy"),
    (dict(seconds_between_frames=0.0), "seconds_between_frames"),
    (dict(sampling_range_start=-0.5), "at least 0.0"),
    (dict(sampling_range_start=3.0), "smaller than 3.0"),
    (dict(sampling_range_end=0.0), "sampling_range_end"),
    (dict(sampling_range_start=2.0, sampling_range_end=1.0), "smaller than sampling_range_end"),
    (dict(num_frames_per_clip=100), "smaller than sampling_range_end"),     # default end below 0
])
def test_time_samplers_refuse_bad_arguments(decoder, kwargs, match):
    with pytest.raises(ValueError, match=match):
        clips_at_random_timestamps(decoder, **kwargs)
    with pytest.raises(ValueError, match=match):
        clips_at_regular_timestamps(decoder, seconds_between_clip_starts=0.5, **kwargs)


def test_time_sampler_refuses_bad_counts(decoder):
    with pytest.raises(ValueError, match="num_clips"):
        clips_at_random_timestamps(decoder, num_clips=0)
    with pytest.raises(ValueError, match="seconds_between_clip_starts"):
        clips_at_regular_timestamps(decoder, seconds_between_clip_starts=0)


def test_a_range_start_before_minus_len_is_an_index_error(decoder):
    with pytest.raises(IndexError):
        clips_at_regular_indices(decoder, num_clips=2, sampling_range_start=-200, sampling_range_end=5)


# ---- output -------------------------------------------------------------------------------------

@pytest.mark.parametrize("order, frame_shape", [("NCHW", (3, 240, 320)), ("NHWC", (240, 320, 3))])
def test_output_is_a_5d_frame_batch(h264, order, frame_shape):
    decoder = VideoDecoder(h264, dimension_order=order)
    batch = clips_at_random_indices(decoder, num_clips=3, num_frames_per_clip=4, generator=0)
    assert batch.data.shape == (3, 4) + frame_shape and batch.data.dtype == np.uint8
    assert batch.pts_seconds.shape == batch.duration_seconds.shape == (3, 4)
    assert batch.pts_seconds.dtype == batch.duration_seconds.dtype == np.float64
    np.testing.assert_allclose(batch.duration_seconds, 1 / FPS)
    clip = batch[1]
    assert clip.data.shape == (4,) + frame_shape and clip.pts_seconds.shape == (4,)


def test_clips_are_the_decoders_frames(decoder):
    batch = clips_at_random_indices(decoder, num_clips=4, num_frames_per_clip=5, num_indices_between_frames=4,
                                    generator=21)
    for clip, indices in zip(batch, frame_indices(batch)):
        expected = VideoDecoder(decoder._reopen["source"]).get_frames_at(indices)
        np.testing.assert_array_equal(clip.data, expected.data)
        np.testing.assert_array_equal(clip.pts_seconds, expected.pts_seconds)
        np.testing.assert_array_equal(clip.duration_seconds, expected.duration_seconds)


def test_time_clips_are_the_frames_played_at_their_times(decoder):
    requests = record_requests(decoder)
    batch = clips_at_random_timestamps(decoder, num_clips=3, num_frames_per_clip=4, seconds_between_frames=0.3,
                                       generator=4)
    times = np.asarray(requests[0]).reshape(3, 4)
    fresh = VideoDecoder(decoder._reopen["source"])
    for c in range(3):
        for f in range(4):
            frame = fresh.get_frame_played_at(times[c, f])
            np.testing.assert_array_equal(batch.data[c, f], frame.data)
            assert batch.pts_seconds[c, f] == frame.pts_seconds
            assert frame.pts_seconds <= times[c, f] < frame.pts_seconds + frame.duration_seconds


def test_output_is_one_allocation_viewed_as_clips(h264):
    decoder = VideoDecoder(h264, dimension_order="NHWC")
    batch = clips_at_regular_indices(decoder, num_clips=3, num_frames_per_clip=2)
    assert batch.data.flags.c_contiguous and not batch.data.flags.owndata
    assert batch.data.base.shape == (6, 240, 320, 3)           # the batch array, reshaped without copying


# ---- one batch request --------------------------------------------------------------------------

def count_engine_requests(decoder: VideoDecoder) -> list[int]:
    calls: list[int] = []
    original = decoder._decode

    def spy(n, *args, **kwargs):
        calls.append(n)
        return original(n, *args, **kwargs)

    decoder._decode = spy
    return calls


@pytest.mark.parametrize("sampler, kwargs", [
    (clips_at_random_indices, dict(num_clips=8, num_frames_per_clip=16, generator=0)),
    (clips_at_regular_indices, dict(num_clips=8, num_frames_per_clip=16)),
    (clips_at_random_timestamps, dict(num_clips=8, num_frames_per_clip=16, generator=0)),
    (clips_at_regular_timestamps, dict(seconds_between_clip_starts=0.4, num_frames_per_clip=16)),
])
def test_all_clips_are_one_request_to_the_engine(decoder, sampler, kwargs):
    calls = count_engine_requests(decoder)
    batch = sampler(decoder, **kwargs)
    assert calls == [batch.data.shape[0] * 16]


def test_overlapping_clips_decode_each_frame_once(decoder):
    # starts 0, 2, 4, ..., 19: 10 clips of 8 frames = 80 requested, frames 0..26 distinct, one GOP
    batch = clips_at_regular_indices(decoder, num_clips=10, num_frames_per_clip=8, sampling_range_end=20)
    assert sorted({i for clip in frame_indices(batch) for i in clip}) == list(range(27))
    assert decoder._engine.frames_decoded == 27 and decoder._engine.seeks <= 1


def test_clips_in_different_gops_seek_instead_of_decoding_through(decoder):
    batch = clips_at_regular_indices(decoder, num_clips=3, num_frames_per_clip=4, sampling_range_end=61)
    assert frame_indices(batch) == clip_indices([0, 30, 60], 4)      # key frames at 0, 30, 60
    assert decoder._engine.frames_decoded == 12


# ---- torch: TorchCodec's draws for the same torch.manual_seed --------------------------------------

def test_samplers_import_neither_torch_nor_numpy_at_import():
    code = ("import sys, torchcodec, torchcodec.samplers; "
            "print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-P", "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"


def test_numpy_bridge_sampling_never_imports_torch(h264):
    code = ("import sys, torchcodec\nfrom torchcodec.decoders import VideoDecoder\n"
            "from torchcodec import samplers\ntorchcodec.set_bridge('numpy')\n"
            f"d = VideoDecoder({str(h264)!r})\n"
            "samplers.clips_at_random_indices(d, num_clips=2)\n"
            "samplers.clips_at_regular_indices(d, num_clips=200)\n"
            "samplers.clips_at_random_timestamps(d, num_clips=2)\n"
            "samplers.clips_at_regular_timestamps(d, seconds_between_clip_starts=0.3)\n"
            "print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-P", "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "False"


def test_torch_manual_seed_gives_torchcodecs_random_index_starts(decoder):
    torch = pytest.importorskip("torch")
    torch.manual_seed(1234)
    starts = torch.randint(0, 88, (6,)).tolist()       # TorchCodec: torch.randint(start, end, (num_clips,))
    torch.manual_seed(1234)
    with torchcodec.bridge("torch"):
        batch = clips_at_random_indices(decoder, num_clips=6, num_frames_per_clip=3)
        again = clips_at_random_indices(decoder, num_clips=6, num_frames_per_clip=3)
    assert isinstance(batch.data, torch.Tensor) and batch.data.shape == (6, 3, 3, 240, 320)
    assert frame_indices(batch) == clip_indices(starts, 3)
    torch.manual_seed(1234)
    with torchcodec.bridge("torch"):
        repeat = clips_at_random_indices(decoder, num_clips=6, num_frames_per_clip=3)
    assert torch.equal(repeat.pts_seconds, batch.pts_seconds) and torch.equal(repeat.data, batch.data)
    assert frame_indices(again) != frame_indices(batch)      # the global generator moved on


def test_torch_manual_seed_gives_torchcodecs_random_timestamps(decoder):
    torch = pytest.importorskip("torch")
    torch.manual_seed(99)
    width = (END - 1 / FPS) - 0.0                          # 2 frames per clip, default range
    starts = (torch.rand(5, dtype=torch.float64) * width + 0.0).tolist()
    torch.manual_seed(99)
    requests = record_requests(decoder)
    with torchcodec.bridge("torch"):
        clips_at_random_timestamps(decoder, num_clips=5, num_frames_per_clip=2)
    assert requests[0][::2] == starts


def test_a_torch_generator_is_used_under_any_bridge(decoder):
    torch = pytest.importorskip("torch")
    starts = torch.randint(0, 90, (4,), generator=torch.Generator().manual_seed(5)).tolist()
    batch = clips_at_random_indices(decoder, num_clips=4, generator=torch.Generator().manual_seed(5))
    assert isinstance(batch.data, np.ndarray)                # the numpy bridge (tests' default)
    assert frame_indices(batch) == [[s] for s in starts]


def test_an_int_seed_is_numpys_under_the_torch_bridge_too(decoder):
    pytest.importorskip("torch")
    with torchcodec.bridge("torch"):
        batch = clips_at_random_indices(decoder, num_clips=4, generator=8)
    assert frame_indices(batch) == [[s] for s in np.random.default_rng(8).integers(0, 90, size=4).tolist()]


def test_regular_starts_are_torchs_linspace_and_arange(decoder):
    torch = pytest.importorskip("torch")
    requests = record_requests(decoder)
    for bridge in ("torch", "numpy"):
        with torchcodec.bridge(bridge):
            clips_at_regular_indices(decoder, num_clips=200, sampling_range_start=3, sampling_range_end=77)
            clips_at_regular_timestamps(decoder, seconds_between_clip_starts=0.1, sampling_range_start=0.05,
                                        sampling_range_end=2.5)
    linspace = torch.linspace(3, 76, steps=200, dtype=torch.int).tolist()
    arange = [t for t in torch.arange(0.05, 2.5, 0.1, dtype=torch.float64).tolist() if t < 2.5]
    assert requests[0] == linspace and requests[1] == arange                 # torch bridge: torch's values
    assert requests[2] == linspace                                           # numpy bridge: same formula
    assert requests[3] == pytest.approx(arange, abs=1e-15)                   # start + k * step


def test_evenly_spaced_ints_match_torch_linspace():
    torch = pytest.importorskip("torch")
    from torchcodec.samplers._clips import evenly_spaced_ints
    for first in range(0, 30, 3):
        for last in range(first, first + 120, 7):
            for count in (1, 2, 3, 7, 16, 50, 333):
                assert evenly_spaced_ints(first, last, count) == \
                    torch.linspace(first, last, steps=count, dtype=torch.int).tolist()

