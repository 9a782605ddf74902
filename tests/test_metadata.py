"""Stream metadata (torchcodec/decoders/_metadata.py): header fields against ffprobe, the rules of
the computed fields, assignable fields, and the repr's format.

Every video and audio stream of the corpus is checked against ffprobe, which reads the same
header fields of the same FFmpeg build.
"""
from __future__ import annotations

import copy
import dataclasses
from fractions import Fraction

import pytest

import reference
import torchcodec
from torchcodec.decoders import (AudioDecoder, AudioStreamHeaderMetadata, AudioStreamMetadata, SimpleVideoDecoder,
                                 StreamMetadata, VideoDecoder, VideoStreamHeaderMetadata, VideoStreamMetadata)
from torchcodec.samplers import clips_at_random_timestamps, clips_at_regular_timestamps

# The fields of TorchCodec 0.17's classes, in its order (its documentation and repr).
STREAM_FIELDS = ["duration_seconds_from_header", "begin_stream_seconds_from_header", "bit_rate", "codec",
                 "stream_index", "media_type"]
VIDEO_FIELDS = STREAM_FIELDS + [
    "width", "height", "num_frames_from_header", "average_fps_from_header", "pixel_aspect_ratio", "rotation",
    "color_primaries", "color_space", "color_transfer_characteristic", "pixel_format",
    "begin_stream_seconds_from_content", "end_stream_seconds_from_content", "num_frames_from_content",
    "duration_seconds", "begin_stream_seconds", "end_stream_seconds", "num_frames", "average_fps"]
AUDIO_FIELDS = STREAM_FIELDS + ["sample_rate", "num_channels", "sample_format", "duration_seconds",
                                "begin_stream_seconds"]


def _streams(media, kind):
    """(path, ffprobe stream) of every ``kind`` stream of the corpus."""
    found = []
    for name in sorted(media):
        for stream in reference.ffprobe_streams(media[name]):
            if stream.get("codec_type") == kind:
                found.append((media[name], stream))
    return found


def _approx(value):
    """ffprobe prints seconds with 6 decimals."""
    return None if value is None else pytest.approx(value, abs=1e-6)


def _header_duration(stream):
    """The stream's own duration as ffprobe prints it; None when it has none (or not > 0)."""
    duration = stream["duration"]
    return duration if duration is not None and duration > 0 else None


# ---- header fields against ffprobe ----------------------------------------------------------------

def test_video_header_fields_match_ffprobe(media):
    checked = 0
    for path, stream in _streams(media, "video"):
        metadata = VideoDecoder(path, stream_index=stream["index"], seek_mode="approximate").metadata
        context = f"{path.name} stream {stream['index']}"
        # The codec parameters' sample aspect ratio as it is. ffprobe prints the container's when
        # it has one, else the codec's; in the corpus they agree where the codec's bitstream has
        # one (H.264, HEVC, MPEG-2, MPEG-4 part 2). VP8, VP9 and AV1 bitstreams have none: 0/1,
        # although WebM and mp4 say 1:1.
        if stream["codec_name"] in ("vp8", "vp9", "av1"):
            expected_sar = Fraction(0, 1)
        else:
            expected_sar = Fraction(stream["sample_aspect_ratio"].replace(":", "/"))
        assert metadata.pixel_aspect_ratio == expected_sar, context
        assert type(metadata.pixel_aspect_ratio) is Fraction, context
        # The stream's own duration and start, never the container's.
        assert metadata.duration_seconds_from_header == _approx(_header_duration(stream)), context
        assert metadata.begin_stream_seconds_from_header == _approx(stream["start_time"]), context
        assert metadata.num_frames_from_header == stream["nb_frames"], context
        assert metadata.codec == stream["codec_name"], context
        assert metadata.pixel_format == stream["pix_fmt"], context
        assert metadata.media_type == "video" and metadata.stream_index == stream["index"], context
        checked += 1
    assert checked >= 30


def test_audio_header_fields_match_ffprobe(media):
    checked = 0
    for path, stream in _streams(media, "audio"):
        metadata = AudioDecoder(path, stream_index=stream["index"]).metadata
        context = f"{path.name} stream {stream['index']}"
        assert metadata.duration_seconds_from_header == _approx(_header_duration(stream)), context
        assert metadata.begin_stream_seconds_from_header == _approx(stream["start_time"]), context
        assert (metadata.sample_rate, metadata.num_channels) == (stream["sample_rate"], stream["channels"]), context
        assert metadata.sample_format == stream["sample_fmt"] and metadata.codec == stream["codec_name"], context
        assert metadata.media_type == "audio" and metadata.stream_index == stream["index"], context
        checked += 1
    assert checked >= 15


def test_sample_aspect_ratio_by_hand(media):
    assert VideoDecoder(media["h264_sar4_3.mp4"]).metadata.pixel_aspect_ratio == Fraction(4, 3)
    assert VideoDecoder(media["h264_bframes.mp4"]).metadata.pixel_aspect_ratio == Fraction(1, 1)
    for name in ["vp9.webm", "vp8.webm", "av1.mp4"]:          # no aspect ratio in these streams
        assert VideoDecoder(media[name]).metadata.pixel_aspect_ratio == Fraction(0, 1)


# ---- computed fields --------------------------------------------------------------------------------

@pytest.mark.parametrize("seek_mode", ["exact", "approximate"])
def test_computed_video_fields_follow_the_documented_rules(media, seek_mode):
    for path, stream in _streams(media, "video"):
        m = VideoDecoder(path, stream_index=stream["index"], seek_mode=seek_mode).metadata
        context = f"{path.name} stream {stream['index']} ({seek_mode})"
        if seek_mode == "exact":
            frames = reference.ffprobe_frames(path, stream["index"])
            assert m.num_frames == m.num_frames_from_content == len(frames), context
            assert m.begin_stream_seconds == m.begin_stream_seconds_from_content, context
            assert m.end_stream_seconds == m.end_stream_seconds_from_content, context
            assert m.duration_seconds == m.end_stream_seconds - m.begin_stream_seconds, context
            assert m.average_fps == pytest.approx(m.num_frames / m.duration_seconds), context
            continue
        assert m.num_frames_from_content is None and m.end_stream_seconds_from_content is None, context
        # duration: the stream's, else frames / fps, else the container's (Matroska, WebM)
        duration = _header_duration(stream)
        if duration is None and stream["nb_frames"] and stream["r_frame_rate"]:
            duration = stream["nb_frames"] / float(stream["r_frame_rate"])
        if duration is None:
            duration = reference.ffprobe_format(path)["duration"]
        assert m.duration_seconds == _approx(duration), context
        assert m.begin_stream_seconds == _approx(stream["start_time"] or 0.0), context
        assert m.end_stream_seconds == pytest.approx(m.begin_stream_seconds + m.duration_seconds), context
        expected_frames = stream["nb_frames"] or int(float(stream["r_frame_rate"]) * m.duration_seconds)
        assert m.num_frames == expected_frames, context
        assert m.average_fps == m.average_fps_from_header == pytest.approx(float(stream["r_frame_rate"])), context


def test_matroska_stream_has_no_header_duration_but_the_container_has(media):
    for name, kind in [("h264_vfr.mkv", VideoDecoder), ("vp9.webm", VideoDecoder),
                       ("opus_music_48000_8s.webm", AudioDecoder), ("flac_offset1.5s.mka", AudioDecoder)]:
        metadata = (kind(media[name], seek_mode="approximate") if kind is VideoDecoder else kind(media[name])).metadata
        container = reference.ffprobe_format(media[name])["duration"]
        assert metadata.duration_seconds_from_header is None, name
        assert metadata.duration_seconds == _approx(container), name


def test_audio_computed_fields(media):
    for path, stream in _streams(media, "audio"):
        m = AudioDecoder(path, stream_index=stream["index"]).metadata
        context = f"{path.name} stream {stream['index']}"
        duration = _header_duration(stream) or reference.ffprobe_format(path)["duration"]
        assert m.duration_seconds == _approx(duration), context
        assert m.begin_stream_seconds == _approx(stream["start_time"] or 0.0), context


def test_whole_seconds_and_rates_stay_floats(media):
    # TorchCodec returns whole values as ints (its metadata travels as JSON); ours are floats.
    m = VideoDecoder(media["h264_25fps_2s.mp4"]).metadata
    for name in ["duration_seconds_from_header", "begin_stream_seconds_from_header", "average_fps_from_header",
                 "begin_stream_seconds_from_content", "end_stream_seconds_from_content", "duration_seconds",
                 "begin_stream_seconds", "end_stream_seconds", "average_fps"]:
        assert type(getattr(m, name)) is float, name
    assert (m.begin_stream_seconds, m.end_stream_seconds, m.average_fps) == (0.0, 2.0, 25.0)
    assert type(m.num_frames) is int and type(m.bit_rate) is int and type(m.width) is int


# ---- classes, fields, assignment ----------------------------------------------------------------------

def test_fields_and_their_order(h264, media):
    video = VideoDecoder(h264).metadata
    audio = AudioDecoder(media["mp3_music_22050_8s.mp3"]).metadata
    assert [f.name for f in dataclasses.fields(video)] == VIDEO_FIELDS
    assert [f.name for f in dataclasses.fields(audio)] == AUDIO_FIELDS
    assert isinstance(video, VideoStreamHeaderMetadata) and isinstance(video, StreamMetadata)
    assert isinstance(audio, AudioStreamHeaderMetadata) and isinstance(audio, StreamMetadata)
    assert isinstance(audio, AudioStreamMetadata) and isinstance(video, VideoStreamMetadata)


def test_computed_fields_can_be_assigned(h264):
    decoder = VideoDecoder(h264)
    metadata = decoder.metadata
    for name in ["average_fps", "begin_stream_seconds", "duration_seconds", "end_stream_seconds", "num_frames"]:
        setattr(metadata, name, None)
        assert getattr(metadata, name) is None
    assert dataclasses.replace(VideoDecoder(h264).metadata, num_frames=7).num_frames == 7


def test_samplers_read_the_assigned_values(h264):
    decoder = VideoDecoder(h264)
    original = copy.copy(decoder.metadata)
    decoder.metadata.end_stream_seconds = None
    with pytest.raises(ValueError, match="Could not infer stream end"):
        clips_at_random_timestamps(decoder, num_clips=1)
    decoder.metadata = copy.copy(original)
    decoder.metadata.average_fps = None
    with pytest.raises(ValueError, match="Could not infer average fps"):
        clips_at_regular_timestamps(decoder, seconds_between_clip_starts=1)
    decoder.metadata = original
    assert len(clips_at_random_timestamps(decoder, num_clips=2, num_frames_per_clip=2, generator=0)) == 2


def test_the_decoder_keeps_the_bounds_it_was_opened_with(h264):
    """As TorchCodec: the decoder takes begin, end and the frame count once; assigning metadata
    fields afterwards changes what samplers read, not what the decoder serves."""
    decoder = VideoDecoder(h264)
    decoder.metadata.end_stream_seconds = None
    decoder.metadata.begin_stream_seconds = 1.0
    decoder.metadata.num_frames = 3
    assert len(decoder) == 90
    assert decoder.get_frame_played_at(0.5).pts_seconds == pytest.approx(0.5)
    with pytest.raises(IndexError):
        decoder.get_frame_played_at(3.0)
    assert len(decoder.get_all_frames(fps=2)) == 6


# ---- repr ----------------------------------------------------------------------------------------------

def test_repr_format_by_hand():
    metadata = VideoStreamMetadata(
        duration_seconds_from_header=13.013, begin_stream_seconds_from_header=0.0, bit_rate=128783, codec="h264",
        stream_index=3, media_type="video", width=480, height=270, num_frames_from_header=390,
        average_fps_from_header=30000 / 1001, pixel_aspect_ratio=Fraction(1, 1), rotation=-90.0,
        color_primaries="bt709", color_space=None, color_transfer_characteristic="bt709", pixel_format="yuv420p",
        begin_stream_seconds_from_content=0.0, end_stream_seconds_from_content=13.0,
        num_frames_from_content=390, duration_seconds=13.0, begin_stream_seconds=0.0, end_stream_seconds=13.0,
        num_frames=390, average_fps=30.0)
    assert repr(metadata) == str(metadata) == (
        "VideoStreamMetadata:\n"
        "  duration_seconds_from_header: 13.013\n"
        "  begin_stream_seconds_from_header: 0\n"
        "  bit_rate: 128783\n"
        "  codec: h264\n"
        "  stream_index: 3\n"
        "  media_type: video\n"
        "  width: 480\n"
        "  height: 270\n"
        "  num_frames_from_header: 390\n"
        "  average_fps_from_header: 29.97002997002997\n"
        "  pixel_aspect_ratio: 1\n"
        "  rotation: -90.0\n"
        "  color_primaries: bt709\n"
        "  color_space: None\n"
        "  color_transfer_characteristic: bt709\n"
        "  pixel_format: yuv420p\n"
        "  begin_stream_seconds_from_content: 0\n"
        "  end_stream_seconds_from_content: 13\n"
        "  num_frames_from_content: 390\n"
        "  duration_seconds: 13\n"
        "  begin_stream_seconds: 0\n"
        "  end_stream_seconds: 13\n"
        "  num_frames: 390\n"
        "  average_fps: 30\n")
    audio = AudioStreamMetadata(
        duration_seconds_from_header=None, begin_stream_seconds_from_header=0.138125, bit_rate=64000, codec="mp3",
        stream_index=0, media_type="audio", sample_rate=8000, num_channels=2, sample_format="fltp",
        duration_seconds=8.0, begin_stream_seconds=0.138125)
    assert repr(audio) == (
        "AudioStreamMetadata:\n"
        "  duration_seconds_from_header: None\n"
        "  begin_stream_seconds_from_header: 0.138125\n"
        "  bit_rate: 64000\n"
        "  codec: mp3\n"
        "  stream_index: 0\n"
        "  media_type: audio\n"
        "  sample_rate: 8000\n"
        "  num_channels: 2\n"
        "  sample_format: fltp\n"
        "  duration_seconds: 8\n"
        "  begin_stream_seconds: 0.138125\n")


def test_repr_of_a_decoder_lists_every_field_once(h264):
    lines = repr(VideoDecoder(h264).metadata).splitlines()
    assert lines[0] == "VideoStreamMetadata:"
    assert [line.split(":")[0].strip() for line in lines[1:]] == VIDEO_FIELDS
    assert "  num_frames: 90" in lines and "  codec: h264" in lines and "  end_stream_seconds: 3" in lines


# ---- names TorchCodec has at the top of its modules --------------------------------------------------

def test_simple_video_decoder_is_video_decoder():
    assert SimpleVideoDecoder is VideoDecoder


def test_ffmpeg_major_version_is_the_loaded_ffmpegs():
    assert type(torchcodec.ffmpeg_major_version) is int
    major = reference.ffmpeg_major_version()        # the CLI of the same build (0 for a git build)
    if major:
        assert torchcodec.ffmpeg_major_version == major
