"""Each generated media file has the property it is made for (checked with ffprobe/ffmpeg only).

These tests never import torchcodec: they prove that the corpus and the CLI references in
``reference.py`` are sound, so that the package's tests can rely on both.
"""

from __future__ import annotations

import itertools
import json
import pathlib
import sys
from fractions import Fraction

import numpy as np
import pytest

import reference as ref

from corpus import load as _load_make_media, make_media  # noqa: E402



@pytest.fixture(scope="session")
def corpus(media) -> dict[str, pathlib.Path]:
    return media


# name -> (codec_name, pix_fmt(s), (width, height) before rotation, number of decoded frames)
VIDEO = {
    "h264_25fps_2s.mp4": ("h264", "yuv420p", (320, 240), 50),
    "h264_bframes.mp4": ("h264", "yuv420p", (320, 240), 90),
    "h264_editlist.mp4": ("h264", "yuv420p", (320, 240), 45),
    "h264_10bit.mp4": ("h264", "yuv420p10le", (320, 240), 60),
    "h264_yuv444.mp4": ("h264", "yuv444p", (320, 240), 60),
    "h264_yuv422.mp4": ("h264", "yuv422p", (320, 240), 60),
    "h264_yuv444_161x121.mp4": ("h264", "yuv444p", (161, 121), 60),
    "h264_sar4_3.mp4": ("h264", "yuv420p", (240, 240), 30),
    "h264_rotate90.mp4": ("h264", "yuv420p", (320, 240), 50),
    "h264_rotate180.mp4": ("h264", "yuv420p", (320, 240), 50),
    "h264_rotate270.mp4": ("h264", "yuv420p", (320, 240), 50),
    "h264_vfr.mkv": ("h264", "yuv420p", (320, 240), 63),
    "h264_offset2.5s.mkv": ("h264", "yuv420p", (320, 240), 60),
    "h264_offset2.5s.mp4": ("h264", "yuv420p", (320, 240), 60),
    "h264_bframes.ts": ("h264", "yuv420p", (320, 240), 60),
    "h264_fullrange.mp4": ("h264", ("yuvj420p", "yuv420p"), (320, 240), 60),
    "h264_bt709.mp4": ("h264", "yuv420p", (320, 240), 60),
    "h264_bt709_fullrange.mp4": ("h264", "yuvj420p", (320, 240), 60),
    "h264_bt709_fullrange_yuv444.mp4": ("h264", "yuvj444p", (320, 240), 60),
    "h264_bt601_10bit_fullrange.mp4": ("h264", "yuv420p10le", (320, 240), 60),
    "hevc_bt709_fullrange.mp4": ("hevc", "yuvj420p", (320, 240), 60),
    "hevc_bt2020_10bit.mp4": ("hevc", "yuv420p10le", (320, 240), 60),
    "hevc_bt2020_10bit_fullrange.mp4": ("hevc", "yuv420p10le", (320, 240), 60),
    "h264_aac.mp4": ("h264", "yuv420p", (320, 240), 60),
    "h264_aac_audio_first.mp4": ("h264", "yuv420p", (320, 240), 60),
    "two_video_streams.mkv": ("h264", "yuv420p", (320, 240), 60),
    "h264_1080p.mp4": ("h264", "yuv420p", (1920, 1080), 30),
    "hevc_1080p.mp4": ("hevc", "yuv420p", (1920, 1080), 30),
    "h264_350x198.mp4": ("h264", "yuv420p", (350, 198), 60),
    "h264_interlaced.mp4": ("h264", "yuv420p", (320, 240), 60),
    "hevc_bframes.mp4": ("hevc", "yuv420p", (320, 240), 60),
    "hevc_10bit.mp4": ("hevc", "yuv420p10le", (320, 240), 60),
    "hevc_temporal_layers.mp4": ("hevc", "yuv420p", (320, 240), 60),
    "vp9.webm": ("vp9", "yuv420p", (320, 240), 60),
    "vp9_161x121.webm": ("vp9", "yuv420p", (161, 121), 60),
    "vp9_161x120.webm": ("vp9", "yuv420p", (161, 120), 15),
    "vp8.webm": ("vp8", "yuv420p", (320, 240), 60),
    "av1.mp4": ("av1", "yuv420p", (320, 240), 60),
    "mpeg4_bframes.avi": ("mpeg4", "yuv420p", (320, 240), 60),
    "mpeg2_mp2.mpg": ("mpeg2video", "yuv420p", (320, 240), 60),
}

# name -> (codec_name, sample_fmt, channels, sample_rate, duration in seconds)
AUDIO = {
    "wav_u8_mono_8000.wav": ("pcm_u8", "u8", 1, 8000, 1),
    "wav_s16_stereo_44100.wav": ("pcm_s16le", "s16", 2, 44100, 2),
    "wav_s24_5.1_48000.wav": ("pcm_s24le", "s32", 6, 48000, 1),
    "wav_s32_stereo_22050.wav": ("pcm_s32le", "s32", 2, 22050, 2),
    "wav_f32_16ch_16000.wav": ("pcm_f32le", "flt", 16, 16000, 1),
    "wav_f64_mono_96000.wav": ("pcm_f64le", "dbl", 1, 96000, 1),
    "aac_stereo_48000.m4a": ("aac", "fltp", 2, 48000, 2),
    "mp3_stereo_44100.mp3": ("mp3", "fltp", 2, 44100, 2),
    "flac_s24_stereo_88200.flac": ("flac", "s32", 2, 88200, 2),
    "opus_stereo_48000.ogg": ("opus", "fltp", 2, 48000, 2),
    "vorbis_mono_11025.ogg": ("vorbis", "fltp", 1, 11025, 2),
    "flac_offset1.5s.mka": ("flac", "s16", 2, 44100, 2),
    "h264_aac.mp4": ("aac", "fltp", 2, 44100, 2),
    "h264_aac_audio_first.mp4": ("aac", "fltp", 2, 48000, 2),
    "mpeg2_mp2.mpg": ("mp2", "s16p", 2, 32000, 2),
    "aac_music_44100_8s.m4a": ("aac", "fltp", 2, 44100, 8),
    "mp3_music_22050_8s.mp3": ("mp3", "fltp", 1, 22050, 8),
    "aac_adts_48000_8s.aac": ("aac", "fltp", 2, 48000, 8),
    "opus_music_48000_8s.webm": ("opus", "fltp", 2, 48000, 8),
    "vorbis_music_44100_8s.ogg": ("vorbis", "fltp", 2, 44100, 8),
}
MUSIC = {"aac_music_44100_8s.m4a", "mp3_music_22050_8s.mp3", "aac_adts_48000_8s.aac",
         "opus_music_48000_8s.webm", "vorbis_music_44100_8s.ogg"}   # chirps and noise, not tones
LOSSLESS = {n for n, (codec, *_) in AUDIO.items() if codec.startswith("pcm") or codec == "flac"}


def _video_index(path: pathlib.Path) -> int:
    return ref.best_stream(path, "video")


def _key_frame_indices(frames: list[dict]) -> list[int]:
    return [i for i, f in enumerate(frames) if f["key_frame"]]


# ------------------------------------------------------------------------------------------------
# The registry and the cache


def test_registry_covers_the_tables():
    defaults = set(make_media.default_names())
    assert set(VIDEO) | set(AUDIO) == defaults
    assert not any(make_media.MEDIA[n].bench for n in defaults)
    assert {"bench_1080p_h264.mp4", "bench_1080p_hevc.mp4"} <= set(make_media.MEDIA)
    for name, spec in make_media.MEDIA.items():
        assert spec.description and "\n" not in spec.description, name


def test_every_file_is_made_with_a_current_sidecar(corpus):
    for name, path in corpus.items():
        assert path.name == name
        assert path.stat().st_size > 1000, name
        assert make_media.is_current(name, path.parent), name
    leftovers = [p.name for p in next(iter(corpus.values())).parent.glob(".*tmp*")]
    assert leftovers == []


def test_media_dir_honours_environment(monkeypatch):
    monkeypatch.setenv("TORCHCODEC_MEDIA_DIR", "/somewhere/else")
    monkeypatch.delitem(sys.modules, "make_media_env", raising=False)
    fresh = _load_make_media("make_media_env")
    monkeypatch.delitem(sys.modules, "make_media_env")
    assert fresh.MEDIA_DIR == pathlib.Path("/somewhere/else")
    assert make_media.MEDIA_DIR != fresh.MEDIA_DIR


def test_ensure_media_reuses_cached_files(corpus):
    before = {n: p.stat().st_mtime_ns for n, p in corpus.items()}
    again = make_media.ensure_media()
    assert again == corpus
    assert {n: p.stat().st_mtime_ns for n, p in again.items()} == before


def test_recipe_hash_follows_arguments_and_inputs():
    registry = dict(make_media.MEDIA)
    base = make_media.recipe_hash("h264_editlist.mp4", registry)
    assert base == make_media.recipe_hash("h264_editlist.mp4", registry)
    source = registry["h264_bframes.mp4"]
    registry["h264_bframes.mp4"] = make_media.Spec(source.description, (*source.args, "-an"))
    # a change to the input's recipe changes the derived file's hash too
    assert make_media.recipe_hash("h264_editlist.mp4", registry) != base
    assert make_media.recipe_hash("h264_bframes.mp4", registry) != make_media.recipe_hash(
        "h264_bframes.mp4"
    )


def test_stale_or_missing_sidecar_remakes_the_file(tmp_path):
    name = "wav_u8_mono_8000.wav"
    path = make_media.ensure_media([name], tmp_path)[name]
    sidecar = path.with_name(path.name + ".recipe.json")
    record = json.loads(sidecar.read_text())
    assert record["hash"] == make_media.recipe_hash(name)

    path.write_bytes(b"garbage")
    sidecar.write_text(json.dumps({**record, "hash": "0" * 16}))
    make_media.ensure_media([name], tmp_path)
    assert path.read_bytes()[:4] == b"RIFF"
    assert make_media.is_current(name, tmp_path)

    sidecar.unlink()
    assert not make_media.is_current(name, tmp_path)
    make_media.ensure_media([name], tmp_path)
    assert make_media.is_current(name, tmp_path)


def test_unknown_name_is_a_key_error(tmp_path):
    with pytest.raises(KeyError, match="no_such_file"):
        make_media.ensure_media(["no_such_file.mp4"], tmp_path)


def test_failing_recipe_raises_with_ffmpeg_stderr_and_leaves_nothing(tmp_path):
    registry = {"broken.mp4": make_media.Spec("broken", ("-f", "lavfi", "-i", "nosuchsource"))}
    with pytest.raises(make_media.MediaError, match="nosuchsource"):
        make_media.ensure_media(["broken.mp4"], tmp_path, registry=registry)
    assert [p.name for p in tmp_path.iterdir() if p.name != ".lock"] == []


@pytest.mark.parametrize("name", ["h264_25fps_2s.mp4", "hevc_bframes.mp4", "h264_editlist.mp4"])
def test_generation_is_deterministic(corpus, tmp_path, name):
    fresh = make_media.ensure_media([name], tmp_path)[name]
    assert fresh.read_bytes() == corpus[name].read_bytes()


# ------------------------------------------------------------------------------------------------
# Video: every file


@pytest.mark.parametrize("name", sorted(VIDEO))
def test_video_stream_has_codec_format_size_and_frame_count(corpus, name):
    codec, pix_fmts, (width, height), num_frames = VIDEO[name]
    path = corpus[name]
    stream = ref.ffprobe_stream(path, _video_index(path))
    assert stream["codec_name"] == codec
    assert stream["pix_fmt"] in ((pix_fmts,) if isinstance(pix_fmts, str) else pix_fmts)
    assert (stream["width"], stream["height"]) == (width, height)
    assert len(ref.ffprobe_frames(path, stream["index"])) == num_frames


@pytest.mark.parametrize("name", sorted(VIDEO))
def test_rgb_frames_match_ffprobe_frames(corpus, name):
    path = corpus[name]
    index = _video_index(path)
    stream = ref.ffprobe_stream(path, index)
    frames = ref.ffprobe_frames(path, index)
    rgb = ref.ffmpeg_rgb_frames(path)
    assert rgb.dtype == np.uint8
    assert rgb.shape == (len(frames), *ref.output_size(stream), 3)
    assert rgb.std() > 10  # real pictures, not a blank decode
    assert not np.array_equal(rgb[0], rgb[-1])  # the source moves


@pytest.mark.parametrize("name", sorted(VIDEO))
def test_frame_timestamps_increase_and_match_time_base(corpus, name):
    path = corpus[name]
    index = _video_index(path)
    time_base = ref.ffprobe_stream(path, index)["time_base"]
    frames = ref.ffprobe_frames(path, index)
    pts = [f["pts"] for f in frames]
    assert all(b > a for a, b in itertools.pairwise(pts))
    # the edit list hides the keyframe its first shown frame depends on
    assert frames[0]["key_frame"] == (name != "h264_editlist.mp4")
    for f in frames:
        assert f["duration"] > 0
        assert f["pts_seconds"] == float(f["pts"] * time_base)
        assert f["duration_seconds"] == float(f["duration"] * time_base)
    assert sum(f["pts_missing"] for f in frames) == (1 if name.endswith(".avi") else 0)


# ------------------------------------------------------------------------------------------------
# Video: the property each file is made for


def test_baseline_is_exactly_2s_at_25fps_without_b_frames(corpus):
    path = corpus["h264_25fps_2s.mp4"]
    stream = ref.ffprobe_stream(path, 0)
    assert stream["r_frame_rate"] == stream["avg_frame_rate"] == Fraction(25)
    assert stream["nb_frames"] == 50
    assert stream["duration"] == pytest.approx(2.0)
    frames = ref.ffprobe_frames(path, 0)
    assert [f["pts_seconds"] for f in frames] == pytest.approx([i / 25 for i in range(50)])
    assert [f["duration_seconds"] for f in frames] == pytest.approx([0.04] * 50)
    assert {f["pict_type"] for f in frames} <= {"I", "P"}
    assert all(p["pts"] == p["dts"] for p in ref.ffprobe_packets(path, 0))
    assert _key_frame_indices(frames) == [0, 25]


@pytest.mark.parametrize(
    "name", ["h264_bframes.mp4", "hevc_bframes.mp4", "h264_bframes.ts", "h264_10bit.mp4"]
)
def test_b_frames_make_pts_differ_from_dts(corpus, name):
    packets = ref.ffprobe_packets(corpus[name], 0)
    assert sum(p["pts"] != p["dts"] for p in packets) > len(packets) // 2
    frames = ref.ffprobe_frames(corpus[name], 0)
    assert "B" in {f["pict_type"] for f in frames}


@pytest.mark.parametrize("name", ["mpeg4_bframes.avi", "mpeg2_mp2.mpg", "vp9.webm", "av1.mp4"])
def test_other_codecs_have_inter_frames(corpus, name):
    types = [f["pict_type"] for f in ref.ffprobe_frames(corpus[name], 0)]
    assert types.count("I") < len(types) // 4
    if name in ("mpeg4_bframes.avi", "mpeg2_mp2.mpg"):
        assert "B" in types


def test_hevc_has_an_open_gop_with_a_leading_frame(corpus):
    path = corpus["hevc_bframes.mp4"]
    packets = ref.ffprobe_packets(path, 0)
    keys = [i for i, p in enumerate(packets) if p["key"]]
    assert len(keys) == 2
    cra = packets[keys[1]]
    assert cra["pts"] == 30 * 512
    # decoded after the keyframe, shown before it: frame 29 depends on the previous GOP
    assert packets[keys[1] + 1]["pts"] == 29 * 512
    frames = ref.ffprobe_frames(path, 0)
    assert _key_frame_indices(frames) == [0, 30]


def test_h264_bframes_has_three_gops(corpus):
    frames = ref.ffprobe_frames(corpus["h264_bframes.mp4"], 0)
    assert _key_frame_indices(frames) == [0, 30, 60]


def test_hevc_and_h264_10bit_keep_more_than_8_bits(corpus):
    for name in ("h264_10bit.mp4", "hevc_10bit.mp4"):
        rgb = ref.ffmpeg_rgb_frames(corpus[name], pix_fmt="rgb48le")
        assert rgb.dtype == np.uint16
        assert rgb.max() > 255
        # 8-bit data widened to 16 bits would be multiples of 257
        assert np.mean(rgb % 257 != 0) > 0.5


def test_edit_list_discards_the_frames_before_the_cut(corpus):
    path = corpus["h264_editlist.mp4"]
    packets = ref.ffprobe_packets(path, 0)
    discarded = [p for p in packets if p["discard"]]
    assert len(discarded) == 15
    assert packets[0]["key"] and packets[0]["discard"]  # starts at the keyframe at 1.0 s
    frames = ref.ffprobe_frames(path, 0)
    assert len(frames) == len(packets) - len(discarded) == 45
    assert frames[0]["pts_seconds"] == 0.0
    assert not frames[0]["key_frame"]  # the first shown frame is not the keyframe
    assert ref.ffprobe_stream(path, 0)["nb_frames"] == 60  # the header counts the packets
    # same bitstream: the shown frames are frames 45.. of the source
    source = ref.ffmpeg_rgb_frames(corpus["h264_bframes.mp4"])
    np.testing.assert_array_equal(ref.ffmpeg_rgb_frames(path), source[45:])


@pytest.mark.parametrize("degrees", [90, 180, 270])
def test_rotation_files_carry_a_display_matrix(corpus, degrees):
    path = corpus[f"h264_rotate{degrees}.mp4"]
    stream = ref.ffprobe_stream(path, 0)
    assert stream["rotation"] % 360 == degrees
    height, width = ref.output_size(stream)
    assert (height, width) == ((320, 240) if degrees % 180 else (240, 320))
    # ffprobe's rotation is counter-clockwise: the CLI shows numpy.rot90(frame, degrees // 90)
    base = ref.ffmpeg_rgb_frames(corpus["h264_25fps_2s.mp4"])
    rotated = ref.ffmpeg_rgb_frames(path)
    np.testing.assert_array_equal(rotated, np.rot90(base, degrees // 90, axes=(1, 2)))


def test_unrotated_file_has_no_display_matrix(corpus):
    assert ref.ffprobe_stream(corpus["h264_25fps_2s.mp4"], 0)["rotation"] is None


def test_vfr_file_has_irregular_frame_gaps(corpus):
    frames = ref.ffprobe_frames(corpus["h264_vfr.mkv"], 0)
    kept = [n for n in range(90) if n % 7 != 3 and n % 11 not in (5, 6)]
    assert [f["pts_seconds"] for f in frames] == pytest.approx([n / 30 for n in kept], abs=1e-3)
    gaps = np.diff([f["pts_seconds"] for f in frames])
    assert gaps.max() > 2.5 * gaps.min()
    assert set(np.round(gaps * 30)) == {1, 2, 3, 4}  # gaps of 1 to 4 source frame periods


@pytest.mark.parametrize("name", ["h264_offset2.5s.mkv", "h264_offset2.5s.mp4"])
def test_offset_files_start_at_2_5_seconds(corpus, name):
    path = corpus[name]
    assert ref.ffprobe_stream(path, 0)["start_time"] == pytest.approx(2.5)
    assert ref.ffprobe_format(path)["start_time"] == pytest.approx(2.5)
    frames = ref.ffprobe_frames(path, 0)
    assert frames[0]["pts_seconds"] == pytest.approx(2.5)
    assert frames[-1]["pts_seconds"] == pytest.approx(2.5 + 59 / 30, abs=1e-3)


def test_mpegts_starts_near_1_4_seconds_without_a_frame_count(corpus):
    path = corpus["h264_bframes.ts"]
    stream = ref.ffprobe_stream(path, 0)
    assert 1.3 <= stream["start_time"] <= 1.6
    assert stream["nb_frames"] is None
    assert stream["time_base"] == Fraction(1, 90000)
    assert ref.ffprobe_frames(path, 0)[0]["pts_seconds"] == pytest.approx(stream["start_time"])


def test_two_video_streams_best_is_the_larger_second_one(corpus):
    path = corpus["two_video_streams.mkv"]
    streams = ref.ffprobe_streams(path)
    assert [s["codec_type"] for s in streams] == ["video", "video"]
    assert [(s["width"], s["height"]) for s in streams] == [(160, 120), (320, 240)]
    assert [s["disposition"]["default"] for s in streams] == [0, 1]
    assert ref.best_stream(path) == 1
    assert ref.ffmpeg_rgb_frames(path).shape == (60, 240, 320, 3)
    small = ref.ffmpeg_rgb_frames(path, stream_index=0)
    assert small.shape == (60, 120, 160, 3)


@pytest.mark.parametrize(
    ("name", "types"),
    [("h264_aac.mp4", ["video", "audio"]), ("h264_aac_audio_first.mp4", ["audio", "video"])],
)
def test_audio_and_video_stream_order(corpus, name, types):
    path = corpus[name]
    assert [s["codec_type"] for s in ref.ffprobe_streams(path)] == types
    assert ref.best_stream(path, "video") == types.index("video")
    assert ref.best_stream(path, "audio") == types.index("audio")
    with pytest.raises(ValueError, match="not video"):
        ref.ffmpeg_rgb_frames(path, stream_index=types.index("audio"))


@pytest.mark.parametrize("name", ["h264_yuv444_161x121.mp4", "vp9_161x121.webm"])
def test_odd_size_files_are_odd(corpus, name):
    stream = ref.ffprobe_stream(corpus[name], 0)
    assert stream["width"] % 2 == 1 and stream["height"] % 2 == 1
    assert ref.ffmpeg_rgb_frames(corpus[name]).shape[1:] == (121, 161, 3)


def test_full_range_file_is_tagged_and_uses_the_full_range(corpus):
    stream = ref.ffprobe_stream(corpus["h264_fullrange.mp4"], 0)
    assert stream["color_range"] == "pc"

    def luma_spread(name: str) -> float:
        # the luma plane as coded (no conversion): the first W*H bytes of each 4:2:0 frame
        raw = ref.ffmpeg_raw_video(corpus[name])
        luma = np.frombuffer(raw, np.uint8).reshape(-1, 320 * 240 * 3 // 2)[:, : 320 * 240]
        low, high = np.percentile(luma, [0.5, 99.5])
        return high - low

    # same picture, luma stretched by 255/219 when full range
    assert luma_spread("h264_fullrange.mp4") > 1.1 * luma_spread("h264_bframes.mp4")


def test_bt709_file_is_tagged_and_converted_with_bt709(corpus):
    stream = ref.ffprobe_stream(corpus["h264_bt709.mp4"], 0)
    assert stream["color_space"] == "bt709"
    assert stream["color_primaries"] == "bt709"
    assert stream["color_transfer"] == "bt709"
    assert stream["color_range"] == "tv"
    assert "color_space" not in ref.ffprobe_stream(corpus["h264_bframes.mp4"], 0)
    # decoded with its tags, it shows the same colours as the untagged (BT.601) file
    bt709 = ref.ffmpeg_rgb_frames(corpus["h264_bt709.mp4"]).astype(np.int16)
    bt601 = ref.ffmpeg_rgb_frames(corpus["h264_bframes.mp4"])[:60].astype(np.int16)
    assert np.abs(bt709 - bt601).mean() < 4


# ------------------------------------------------------------------------------------------------
# Audio


@pytest.mark.parametrize("name", sorted(AUDIO))
def test_audio_stream_has_the_stated_format(corpus, name):
    codec, sample_fmt, channels, sample_rate, _ = AUDIO[name]
    path = corpus[name]
    stream = ref.ffprobe_stream(path, ref.best_stream(path, "audio"))
    assert stream["codec_name"] == codec
    assert stream["sample_fmt"] == sample_fmt
    assert stream["channels"] == channels
    assert stream["sample_rate"] == sample_rate
    if name.startswith("flac_s24"):
        assert stream["bits_per_raw_sample"] == 24


@pytest.mark.parametrize("name", sorted(MUSIC))
def test_music_files_are_loud_and_long(corpus, name):
    _, _, channels, sample_rate, duration = AUDIO[name]
    samples = ref.ffmpeg_audio_samples(corpus[name])
    assert samples.shape[0] == channels
    assert sample_rate * duration <= samples.shape[1] <= sample_rate * duration + 4096
    second = samples[:, sample_rate:2 * sample_rate]
    assert (np.sqrt(np.mean(np.square(second, dtype=np.float64), axis=1)) > 0.15).all()


@pytest.mark.parametrize("name", sorted(set(AUDIO) - MUSIC))
def test_audio_samples_are_per_channel_tones(corpus, name):
    _, _, channels, sample_rate, duration = AUDIO[name]
    samples = ref.ffmpeg_audio_samples(corpus[name])
    assert samples.dtype == np.float32 and samples.flags.c_contiguous
    assert samples.shape[0] == channels
    # lossy codecs add up to a few frames of padding
    slack = 0 if name in LOSSLESS else 4096
    assert sample_rate * duration <= samples.shape[1] <= sample_rate * duration + slack
    # sines of amplitude 0.5 (RMS 0.5 / sqrt(2)); lossy codecs overshoot, so not their peaks
    middle = samples[:, sample_rate // 4 : sample_rate // 4 + sample_rate // 2]
    rms = np.sqrt(np.mean(np.square(middle, dtype=np.float64), axis=1))
    assert rms == pytest.approx(np.full(channels, 0.5 / np.sqrt(2)), abs=0.03)
    if name in LOSSLESS:
        assert np.abs(middle).max(axis=1) == pytest.approx(np.full(channels, 0.5), abs=0.01)
    # channel c carries a sine at 220 + 110 * c Hz
    spectrum = np.abs(np.fft.rfft(middle, axis=1))
    frequencies = np.fft.rfftfreq(middle.shape[1], 1 / sample_rate)
    dominant = frequencies[spectrum.argmax(axis=1)]
    np.testing.assert_allclose(dominant, 220 + 110 * np.arange(channels), atol=2.5)


def test_audio_resample_and_remix(corpus):
    samples = ref.ffmpeg_audio_samples(corpus["opus_stereo_48000.ogg"], sample_rate=16000,
                                       num_channels=1)
    assert samples.shape == (1, 32000)


def test_audio_file_with_nonzero_start(corpus):
    path = corpus["flac_offset1.5s.mka"]
    assert ref.ffprobe_stream(path, 0)["start_time"] == pytest.approx(1.5)
    frames = ref.ffprobe_frames(path, 0)
    assert frames[0]["pts_seconds"] == pytest.approx(1.5)
    assert sum(f["nb_samples"] for f in frames) == 88200


def test_sample_rates_span_8_to_96_khz():
    rates = {rate for _, _, _, rate, _ in AUDIO.values()}
    assert min(rates) == 8000 and max(rates) == 96000
    assert len(rates) >= 8


# ------------------------------------------------------------------------------------------------
# reference.py itself


def test_ffmpeg_version_is_reported():
    version = ref.ffmpeg_version()
    assert version and version == make_media.ffmpeg_version()
    assert ref.ffmpeg_major_version() == 0 or ref.ffmpeg_major_version() >= 4


def test_reference_errors_carry_stderr(corpus, tmp_path):
    missing = tmp_path / "missing.mp4"
    with pytest.raises(ref.CLIError, match="No such file"):
        ref.ffprobe_format(missing)
    with pytest.raises(IndexError, match="no stream 3"):
        ref.ffprobe_stream(corpus["wav_u8_mono_8000.wav"], 3)
    with pytest.raises(ValueError, match="no video stream"):
        ref.ffmpeg_rgb_frames(corpus["wav_u8_mono_8000.wav"])
    with pytest.raises(ValueError, match="pix_fmt"):
        ref.ffmpeg_rgb_frames(missing, pix_fmt="yuv420p")
