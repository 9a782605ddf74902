"""VideoDecoder's API: indexing, time semantics, metadata and argument errors (CONTRACT.md)."""
from __future__ import annotations

import json
import math
import subprocess

import numpy as np
import pytest

import reference
import torchcodec
from torchcodec import Frame, FrameBatch
from torchcodec.decoders import VideoDecoder, VideoStreamMetadata

FPS = 30  # h264_bframes.mp4: 90 frames at 30 fps, pts i/30, 320x240


# ---- indexing ----------------------------------------------------------------------------------

def test_len_is_the_number_of_frames(decoder):
    assert len(decoder) == 90 == decoder.metadata.num_frames


def test_getitem_returns_chw_data(decoder, h264_frames):
    frame = decoder[7]
    assert frame.shape == (3, 240, 320)
    np.testing.assert_array_equal(frame.transpose(1, 2, 0), h264_frames[7])


def test_negative_index_counts_from_the_end(decoder, h264_frames):
    np.testing.assert_array_equal(decoder[-1], decoder[89])
    assert decoder.get_frame_at(-90).pts_seconds == 0.0


@pytest.mark.parametrize("index", [90, -91, 10**18, -(10**18)])
def test_out_of_range_index_raises_index_error(decoder, index):
    with pytest.raises(IndexError):
        decoder[index]
    with pytest.raises(IndexError):
        decoder.get_frame_at(index)
    with pytest.raises(IndexError):
        decoder.get_frames_at([0, index])


def test_slice_clamps_like_python(decoder, h264_frames):
    np.testing.assert_array_equal(decoder[80:200:4].transpose(0, 2, 3, 1), h264_frames[80:200:4])
    assert decoder[5:2].shape == (0, 3, 240, 320)


def test_negative_step_raises_runtime_error(decoder):
    with pytest.raises(RuntimeError):
        decoder[::-1]
    with pytest.raises(RuntimeError):
        decoder.get_frames_in_range(0, 10, -1)


@pytest.mark.parametrize("key", ["a", 1.0, None, (1, 2)])
def test_other_key_types_raise_type_error(decoder, key):
    with pytest.raises(TypeError):
        decoder[key]


def test_iteration_yields_every_frame_in_order(decoder, h264_frames):
    frames = list(decoder)
    assert len(frames) == 90
    np.testing.assert_array_equal(np.stack(frames).transpose(0, 2, 3, 1), h264_frames)


def test_get_frame_at_returns_frame_with_float_times(decoder, h264_frames):
    frame = decoder.get_frame_at(31)
    assert isinstance(frame, Frame)
    assert type(frame.pts_seconds) is float and type(frame.duration_seconds) is float
    assert frame.pts_seconds == pytest.approx(31 / FPS)
    assert frame.duration_seconds == pytest.approx(1 / FPS)
    data, pts, duration = frame
    np.testing.assert_array_equal(data.transpose(1, 2, 0), h264_frames[31])


def test_get_frames_at_keeps_input_order_with_duplicates_and_negatives(decoder, h264_frames):
    indices = [60, 2, 60, -1, 2, 59, 0]
    batch = decoder.get_frames_at(indices)
    assert isinstance(batch, FrameBatch)
    assert batch.data.shape == (7, 3, 240, 320)
    expected = [i % 90 for i in indices]
    np.testing.assert_array_equal(batch.data.transpose(0, 2, 3, 1), h264_frames[expected])
    np.testing.assert_allclose(batch.pts_seconds, np.array(expected) / FPS)
    assert batch.pts_seconds.dtype == np.float64 and batch.duration_seconds.dtype == np.float64


def test_get_frames_at_accepts_numpy_integers(decoder, h264_frames):
    batch = decoder.get_frames_at(np.array([3, 1]))
    np.testing.assert_array_equal(batch.data.transpose(0, 2, 3, 1), h264_frames[[3, 1]])


@pytest.mark.parametrize("indices", [[0.5], ["1"], [1, None]])
def test_get_frames_at_refuses_non_integers(decoder, indices):
    with pytest.raises(TypeError):
        decoder.get_frames_at(indices)


@pytest.mark.parametrize("start,stop,step", [(0, 10, 1), (-5, 1000, 7), (85, 95, 2), (5, 1, 1), (None, None, 30)])
def test_get_frames_in_range_clamps_like_slice_indices(decoder, start, stop, step):
    expected = list(range(*slice(start, stop, step).indices(90)))
    batch = decoder.get_frames_in_range(start, stop, step)
    np.testing.assert_allclose(batch.pts_seconds, np.array(expected, dtype=float) / FPS)


def test_get_frames_in_range_step_zero_is_an_error(decoder):
    with pytest.raises(ValueError):
        decoder.get_frames_in_range(0, 10, 0)


def test_frame_batch_indexing_and_iteration(decoder):
    batch = decoder.get_frames_in_range(0, 4)
    assert len(batch) == 4
    first = batch[0]
    assert isinstance(first, FrameBatch) and first.data.shape == (3, 240, 320)
    assert [float(b.pts_seconds) for b in batch] == pytest.approx([0, 1 / 30, 2 / 30, 3 / 30])
    assert batch[1:3].data.shape == (2, 3, 240, 320)


def test_nhwc_dimension_order(h264, h264_frames):
    decoder = VideoDecoder(h264, dimension_order="NHWC")
    assert decoder[3].shape == (240, 320, 3)
    np.testing.assert_array_equal(decoder.get_frames_at([4, 5]).data, h264_frames[[4, 5]])


def test_batch_data_is_a_chw_view_of_contiguous_hwc_frames(decoder):
    data = decoder.get_frames_at([0, 1]).data
    assert data.base is not None and data.base.flags.c_contiguous and data.base.shape == (2, 240, 320, 3)


# ---- time -------------------------------------------------------------------------------------

def test_get_frame_played_at_uses_half_open_intervals(decoder):
    assert decoder.get_frame_played_at(0.0).pts_seconds == 0.0
    assert decoder.get_frame_played_at(0.51).pts_seconds == pytest.approx(0.5)
    assert decoder.get_frame_played_at(15 / FPS).pts_seconds == pytest.approx(15 / FPS)
    assert decoder.get_frame_played_at(16 / FPS - 1e-6).pts_seconds == pytest.approx(15 / FPS)
    assert decoder.get_frame_played_at(2.9999).pts_seconds == pytest.approx(89 / FPS)


@pytest.mark.parametrize("seconds", [-0.001, 3.0, 100.0])
def test_get_frame_played_at_outside_the_stream_raises_index_error(decoder, seconds):
    with pytest.raises(IndexError):
        decoder.get_frame_played_at(seconds)


def test_get_frames_played_at(decoder, h264_frames):
    batch = decoder.get_frames_played_at([2.5, 0.01, 2.5, 1.0])
    np.testing.assert_allclose(batch.pts_seconds, [2.5, 0.0, 2.5, 1.0])
    np.testing.assert_array_equal(batch.data.transpose(0, 2, 3, 1), h264_frames[[75, 0, 75, 30]])
    with pytest.raises(RuntimeError):
        decoder.get_frames_played_at([0.0, 3.0])


def test_get_frames_played_in_range_includes_frame_on_screen_at_start(decoder):
    batch = decoder.get_frames_played_in_range(0.51, 0.6)
    np.testing.assert_allclose(batch.pts_seconds, [0.5, 16 / FPS, 17 / FPS])


def test_get_frames_played_in_range_excludes_frame_at_stop(decoder):
    batch = decoder.get_frames_played_in_range(0.5, 18 / FPS)
    np.testing.assert_allclose(batch.pts_seconds, [15 / FPS, 16 / FPS, 17 / FPS])


def test_get_frames_played_in_range_empty_when_start_equals_stop(decoder):
    batch = decoder.get_frames_played_in_range(1.0, 1.0)
    assert batch.data.shape == (0, 3, 240, 320) and batch.pts_seconds.shape == (0,)


@pytest.mark.parametrize("start,stop", [(0.5, 0.4), (-1.0, 0.5), (3.0, 3.0), (0.5, 3.01)])
def test_get_frames_played_in_range_bad_bounds_raise_value_error(decoder, start, stop):
    with pytest.raises(ValueError):
        decoder.get_frames_played_in_range(start, stop)


def test_get_frames_played_in_range_with_fps_resamples(decoder, h264_frames):
    batch = decoder.get_frames_played_in_range(0.5, 1.0, fps=7)
    count = round(0.5 * 7)
    times = [0.5 + k / 7 for k in range(count)]
    np.testing.assert_allclose(batch.pts_seconds, times)
    np.testing.assert_allclose(batch.duration_seconds, [1 / 7] * count)
    expected = [math.floor(t * FPS + 1e-9) for t in times]
    np.testing.assert_array_equal(batch.data.transpose(0, 2, 3, 1), h264_frames[expected])


def test_get_all_frames(decoder, h264_frames):
    np.testing.assert_array_equal(decoder.get_all_frames().data.transpose(0, 2, 3, 1), h264_frames)
    resampled = decoder.get_all_frames(fps=7)
    assert len(resampled) == round(3.0 * 7)
    np.testing.assert_allclose(resampled.pts_seconds, [k / 7 for k in range(21)])


def test_vfr_played_at_uses_the_scanned_timestamps(media):
    path = media["h264_vfr.mkv"]
    frames = reference.ffprobe_frames(path, 0)
    decoder = VideoDecoder(path)
    for i in [5, 20, 40]:
        middle = (frames[i]["pts_seconds"] + frames[i + 1]["pts_seconds"]) / 2
        assert decoder.get_frame_played_at(middle).pts_seconds == pytest.approx(frames[i]["pts_seconds"])


# ---- metadata ---------------------------------------------------------------------------------

def test_metadata_matches_ffprobe(h264):
    stream = reference.ffprobe_stream(h264, 0)
    metadata = VideoDecoder(h264).metadata
    assert isinstance(metadata, VideoStreamMetadata)
    assert metadata.codec == stream["codec_name"] == "h264"
    assert (metadata.width, metadata.height) == (stream["width"], stream["height"])
    assert metadata.pixel_format == stream["pix_fmt"]
    assert metadata.num_frames_from_header == stream["nb_frames"]
    assert metadata.num_frames_from_content == len(reference.ffprobe_frames(h264, 0))
    assert metadata.average_fps_from_header == pytest.approx(float(stream["r_frame_rate"]))
    assert metadata.duration_seconds_from_header == pytest.approx(stream["duration"])
    assert metadata.bit_rate == int(stream["bit_rate"])
    assert metadata.stream_index == 0
    assert metadata.begin_stream_seconds_from_content == 0.0
    assert metadata.end_stream_seconds_from_content == pytest.approx(3.0)
    assert metadata.average_fps == pytest.approx(30.0)
    assert metadata.rotation is None
    assert metadata.color_space is None


def test_metadata_colour_tags(media):
    metadata = VideoDecoder(media["h264_bt709.mp4"]).metadata
    assert (metadata.color_primaries, metadata.color_space, metadata.color_transfer_characteristic) == ("bt709",) * 3


def test_metadata_of_edit_list_counts_only_kept_frames(media):
    decoder = VideoDecoder(media["h264_editlist.mp4"])
    kept = len(reference.ffprobe_frames(media["h264_editlist.mp4"], 0))
    assert kept == 45 and len(decoder) == kept
    assert decoder.metadata.num_frames_from_header == 60


def test_metadata_of_non_zero_start(media):
    for name in ["h264_offset2.5s.mp4", "h264_offset2.5s.mkv"]:
        metadata = VideoDecoder(media[name]).metadata
        assert metadata.begin_stream_seconds == pytest.approx(2.5)
        assert metadata.end_stream_seconds == pytest.approx(4.5)
        approximate = VideoDecoder(media[name], seek_mode="approximate").metadata
        assert approximate.begin_stream_seconds == pytest.approx(2.5)


def test_approximate_metadata_uses_header_values(media):
    vfr = VideoDecoder(media["h264_vfr.mkv"], seek_mode="approximate").metadata
    assert vfr.num_frames_from_content is None and vfr.begin_stream_seconds_from_content is None
    # A Matroska stream has no duration of its own: the container's is the fallback.
    assert vfr.duration_seconds_from_header is None
    assert vfr.duration_seconds == pytest.approx(reference.ffprobe_format(media["h264_vfr.mkv"])["duration"])
    assert vfr.num_frames == int(vfr.average_fps_from_header * vfr.duration_seconds)
    assert vfr.average_fps == vfr.average_fps_from_header
    exact = VideoDecoder(media["h264_vfr.mkv"]).metadata
    assert exact.num_frames == len(reference.ffprobe_frames(media["h264_vfr.mkv"], 0)) != vfr.num_frames
    assert exact.average_fps == pytest.approx(exact.num_frames / exact.duration_seconds)


def test_default_stream_is_ffmpegs_best_video_stream(media):
    assert VideoDecoder(media["h264_aac_audio_first.mp4"]).stream_index == 1
    decoder = VideoDecoder(media["two_video_streams.mkv"])
    assert decoder.stream_index == 1 and decoder.metadata.width == 320
    assert VideoDecoder(media["two_video_streams.mkv"], stream_index=0).metadata.width == 160


def test_metadata_repr_lists_fields(decoder):
    text = repr(decoder.metadata)
    assert "num_frames: 90" in text and "codec: h264" in text


# ---- arguments ---------------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs", [
    {"dimension_order": "CHW"}, {"seek_mode": "fast"}, {"num_ffmpeg_threads": -1},
    {"output_dtype": "int16"}, {"stream_index": 5}, {"device": "tpu"},
])
def test_bad_arguments_raise_value_error(h264, kwargs):
    with pytest.raises(ValueError):
        VideoDecoder(h264, **kwargs)


def test_audio_stream_index_is_not_a_video_stream(media):
    with pytest.raises(ValueError, match="not a video stream"):
        VideoDecoder(media["h264_aac.mp4"], stream_index=1)


def test_audio_only_file_has_no_video_stream(media):
    with pytest.raises(ValueError, match="video stream"):
        VideoDecoder(media["mp3_stereo_44100.mp3"])


def test_cuda_device_without_a_usable_gpu_is_refused_with_the_reason(h264):
    import torchcodec
    from torchcodec._cuda import reason as cuda_unavailable_reason
    if torchcodec.cuda_available():
        pytest.skip("this machine has a usable GPU (tests/test_cuda_api.py covers the refusal with stubs)")
    with pytest.raises(RuntimeError, match="CUDA decoding is not available") as error:
        VideoDecoder(h264, device="cuda:1")
    assert cuda_unavailable_reason() in str(error.value) and "device='cpu'" in str(error.value)


def test_objects_that_are_not_transforms_are_refused_clearly(h264):
    with pytest.raises(ValueError, match="Unsupported transform"):
        VideoDecoder(h264, transforms=[object()])


@pytest.mark.parametrize("threads", [0, 1, 3])
def test_thread_counts_give_identical_frames(h264, h264_frames, threads):
    decoder = VideoDecoder(h264, num_ffmpeg_threads=threads, dimension_order="NHWC")
    np.testing.assert_array_equal(decoder.get_frames_at([1, 45, 89]).data, h264_frames[[1, 45, 89]])


# ---- custom frame mappings ---------------------------------------------------------------------

def _ffprobe_frames_json(path) -> str:
    return subprocess.run(["ffprobe", "-v", "error", "-select_streams", "0", "-show_frames", "-show_entries",
                           "frame=pts,pkt_pts,duration,pkt_duration,key_frame", "-of", "json", str(path)],
                          check=True, capture_output=True, text=True).stdout


def test_custom_frame_mappings_give_exact_mode_results_without_a_scan(media, h264_frames):
    path = media["h264_bframes.mp4"]
    mappings = _ffprobe_frames_json(path)
    decoder = VideoDecoder(path, custom_frame_mappings=mappings, dimension_order="NHWC")
    exact = VideoDecoder(path)
    assert len(decoder) == len(exact) == 90
    assert decoder.metadata.end_stream_seconds == exact.metadata.end_stream_seconds
    np.testing.assert_array_equal(decoder.get_frames_at([70, 5, 31]).data, h264_frames[[70, 5, 31]])
    assert len(VideoDecoder(path, custom_frame_mappings=mappings.encode())) == 90


def test_custom_frame_mappings_with_approximate_mode_is_an_error(h264):
    with pytest.raises(ValueError):
        VideoDecoder(h264, custom_frame_mappings=_ffprobe_frames_json(h264), seek_mode="approximate")


@pytest.mark.parametrize("mappings", ["not json", json.dumps({"frames": [{"pts": 0}]}), json.dumps({"x": 1})])
def test_malformed_custom_frame_mappings_raise_value_error(h264, mappings):
    with pytest.raises(ValueError):
        VideoDecoder(h264, custom_frame_mappings=mappings)


# ---- package ----------------------------------------------------------------------------------

def test_import_imports_neither_torch_nor_numpy():
    code = "import sys, torchcodec, torchcodec.decoders; print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))"
    out = subprocess.run([__import__("sys").executable, "-P", "-c", code], check=True, capture_output=True, text=True)
    assert out.stdout.strip() == "[]"


def test_ffmpeg_version_is_the_clis(media):
    assert torchcodec.ffmpeg_version() == reference.ffmpeg_version()


def test_get_include_has_the_compat_header():
    import os
    assert os.path.isfile(os.path.join(torchcodec.get_include(), "torchcodec", "ffcompat.h"))


# ---- the batch plan ----------------------------------------------------------------------------

def test_duplicates_are_decoded_once(h264):
    decoder = VideoDecoder(h264)
    decoder.get_frames_at([10, 10, 10, 5, 5])
    once = VideoDecoder(h264)
    once.get_frames_at([5, 10])
    assert decoder._engine.frames_decoded == once._engine.frames_decoded <= 11   # of frames 0..10


def test_sequential_access_never_seeks_after_the_first_frame(h264):
    decoder = VideoDecoder(h264)
    for i in range(90):
        decoder.get_frame_at(i)
    assert decoder._engine.seeks <= 1 and decoder._engine.frames_decoded == 90
    batches = VideoDecoder(h264)
    for start in range(0, 90, 16):                       # batches in order: no seek either
        batches.get_frames_in_range(start, start + 16)
    assert batches._engine.seeks <= 1 and batches._engine.frames_decoded == 90


def test_far_targets_seek_to_their_key_frame_instead_of_decoding_through(h264):
    decoder = VideoDecoder(h264)                          # GOP 30: key frames at 0, 30, 60
    decoder.get_frames_at([1, 62])
    assert decoder._engine.seeks == 2
    assert decoder._engine.frames_decoded <= 2 + 3        # 0..1, then 60..62 (less unreferenced ones)


def test_approximate_mode_starts_a_key_frame_target_at_its_own_key_frame(h264):
    decoder = VideoDecoder(h264, seek_mode="approximate")   # GOP 30
    decoder.get_frame_at(60)
    assert decoder._engine.frames_decoded == 1


def test_custom_frame_mappings_from_a_file_object(h264, tmp_path):
    path = tmp_path / "frames.json"
    path.write_text(_ffprobe_frames_json(h264))
    with open(path, "rb") as f:
        assert len(VideoDecoder(h264, custom_frame_mappings=f)) == 90


def test_cpu_decoder_reports_no_cpu_fallback(decoder):
    assert not decoder.cpu_fallback


def test_time_exactly_at_a_frame_start_gives_that_frame(media):
    """Seconds are pts * num / den: 700 ticks of 1/1000 s is 0.7, not 700 * 0.001 = 0.7000000000000001."""
    path = media["h264_vfr.mkv"]
    index = reference.best_stream(path, "video")
    frames = reference.ffprobe_frames(path, index)
    time_base = reference.ffprobe_stream(path, index)["time_base"]
    decoder = VideoDecoder(path)
    starts = [frame["pts"] * time_base.numerator / time_base.denominator for frame in frames]
    batch = decoder.get_frames_played_at(starts)
    assert list(batch.pts_seconds) == starts
    assert any(repr(s) != repr(p * float(time_base)) for s, p in zip(starts, (f["pts"] for f in frames)))
