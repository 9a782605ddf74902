"""The building blocks (torchcodec.decoders.Demuxer, the packet decoders, the converters), checked
against the ffmpeg/ffprobe CLI and against the decoders built from them.

TorchCodec 0.17's own block outputs are compared by tools/compat/compare_blocks.py (both
packages in one run); these tests pin the behaviour with independent references."""
from __future__ import annotations

import pickle
import subprocess
import threading

import numpy as np
import pytest

import reference
from gil_probe import assert_releases_the_gil
import torchcodec
from torchcodec.decoders import (AudioConverter, AudioDecoder, AudioPacketDecoder, AudioStream,
                                 AudioStreamHeaderMetadata, ColorConverter, ContainerMetadata, Demuxer,
                                 DemuxerMetadata, FrameIndex, Packet, RawAudioSamples, RawFrame, StreamMetadata,
                                 VideoDecoder, VideoPacketDecoder, VideoStream, VideoStreamHeaderMetadata,
                                 get_container_metadata)


def decode_all(demuxer: Demuxer, decoder=None) -> list[RawFrame]:
    """Every frame of the demuxer's first stream: each packet decoded, then the decoder drained."""
    decoder = decoder or demuxer.streams[0].make_decoder()
    frames = []
    for packet in demuxer:
        if packet.stream_index == decoder.stream_index:
            frames += decoder.decode(packet)
    return frames + decoder.drain()


# ---- Demuxer ---------------------------------------------------------------------------------------

def test_demuxer_follows_the_best_video_stream_by_default(media):
    path = media["h264_aac.mp4"]
    demuxer = Demuxer(path)
    assert [type(s) for s in demuxer.streams] == [VideoStream]
    assert demuxer.streams[0].index == reference.best_stream(path, "video")
    assert repr(demuxer.streams[0]) == f"VideoStream(index={demuxer.streams[0].index})"


def test_demuxer_streams_follow_the_order_they_are_named_in(media):
    path = media["h264_aac.mp4"]
    demuxer = Demuxer(path, streams=("audio", 0))
    assert [(type(s), s.index) for s in demuxer.streams] == [(AudioStream, 1), (VideoStream, 0)]
    assert [(type(s), s.index) for s in Demuxer(path, streams="all").streams] == [(VideoStream, 0), (AudioStream, 1)]


@pytest.mark.parametrize("streams, phrase", [
    ((), "streams is empty"), ("bogus", "Invalid stream selector"), (1.5, "Invalid stream selector"),
    (True, "Invalid stream selector"), (("all", 0), "can only be used on its own"), (99, "is not a valid stream"),
    ((0, 0), "selected twice"),
])
def test_bad_stream_selections_are_value_errors(media, streams, phrase):
    with pytest.raises(ValueError, match=phrase):
        Demuxer(media["h264_aac.mp4"], streams=streams)


def test_a_missing_stream_type_says_so(media):
    with pytest.raises(ValueError, match="No valid video stream found in input file"):
        Demuxer(media["mp3_stereo_44100.mp3"])
    with pytest.raises(RuntimeError, match="No valid audio stream found in input file"):
        Demuxer(media["h264_bframes.mp4"], streams="audio")


@pytest.fixture(scope="module")
def with_subtitles(media, tmp_path_factory):
    """The workhorse video with a subtitle stream (index 1), muxed by the CLI."""
    folder = tmp_path_factory.mktemp("subtitles")
    (folder / "subs.srt").write_text("1\n00:00:00,000 --> 00:00:01,000\nhello\n")
    path = folder / "with_subtitles.mkv"
    subprocess.run([reference.FFMPEG, "-v", "error", "-i", str(media["h264_bframes.mp4"]), "-i", str(folder / "subs.srt"),
                    "-map", "0:v", "-map", "1", "-c:v", "copy", str(path)], check=True)
    return path


def test_a_stream_that_is_neither_video_nor_audio_is_refused_but_described(with_subtitles):
    assert reference.ffprobe_stream(with_subtitles, 1)["codec_type"] == "subtitle"
    with pytest.raises(ValueError, match="is not a video stream nor an audio stream"):
        Demuxer(with_subtitles, streams=1)
    assert [type(s) for s in Demuxer(with_subtitles, streams="all").streams] == [VideoStream]
    streams = get_container_metadata(with_subtitles).streams
    assert type(streams[1]) is StreamMetadata and streams[1].media_type == "subtitle"
    assert streams[1].codec == reference.ffprobe_stream(with_subtitles, 1)["codec_name"]


def test_packets_are_those_ffprobe_lists_in_file_order(media):
    path = media["h264_aac.mp4"]
    expected = {i: reference.ffprobe_packets(path, i) for i in (0, 1)}
    packets = list(Demuxer(path, streams="all"))
    assert all(isinstance(p, Packet) for p in packets)
    for index in (0, 1):
        mine = [p for p in packets if p.stream_index == index]
        assert [p.size for p in mine] == [p["size"] for p in expected[index]]
        assert [p.is_key_frame for p in mine] == [p["key"] for p in expected[index]]
        time_base = reference.ffprobe_stream(path, index)["time_base"]
        assert [p.pts_seconds for p in mine] == [float(p["pts"] * time_base) for p in expected[index]]


def test_packets_of_streams_not_followed_never_come(media):
    packets = list(Demuxer(media["h264_aac.mp4"], streams="audio"))
    assert packets and {p.stream_index for p in packets} == {1}


def test_discarded_packets_come_too_so_that_the_decoder_can_prime(media):
    """An edit list discards the first packets: they are still demuxed (the decoder needs them as
    references) and their frames are dropped by the decoder, as the CLI drops them."""
    path = media["h264_editlist.mp4"]
    packets = reference.ffprobe_packets(path, 0)
    assert any(p["discard"] for p in packets)
    demuxer = Demuxer(path)
    frames = decode_all(demuxer)
    assert sum(1 for _ in Demuxer(path)) == len(packets)
    expected = reference.ffprobe_frames(path, 0)
    assert [f.pts_seconds for f in frames] == [f["pts_seconds"] for f in expected]


def test_container_metadata_is_the_header_ffprobe_reads(media):
    path = media["h264_aac.mp4"]
    fmt = reference.ffprobe_format(path)
    metadata = get_container_metadata(path)
    assert isinstance(metadata, ContainerMetadata) and isinstance(metadata, DemuxerMetadata)
    assert metadata.duration_seconds_from_header == pytest.approx(fmt["duration"], abs=1e-6)
    assert metadata.bit_rate_from_header == fmt["bit_rate"]
    assert (metadata.best_video_stream_index, metadata.best_audio_stream_index) == (0, 1)
    video, audio = metadata.streams
    assert isinstance(video, VideoStreamHeaderMetadata) and isinstance(audio, AudioStreamHeaderMetadata)
    stream = reference.ffprobe_stream(path, 0)
    assert (video.width, video.height, video.codec, video.pixel_format) == (
        int(stream["width"]), int(stream["height"]), stream["codec_name"], stream["pix_fmt"])
    assert video.num_frames_from_header == stream["nb_frames"]
    assert audio.sample_rate == reference.ffprobe_stream(path, 1)["sample_rate"]
    assert Demuxer(path).metadata == DemuxerMetadata(*[getattr(metadata, f) for f in (
        "duration_seconds_from_header", "bit_rate_from_header", "best_video_stream_index", "best_audio_stream_index")])
    assert repr(metadata).startswith("ContainerMetadata(duration_seconds_from_header=")


def test_stream_metadata_is_the_decoders_header_part(media):
    for name in ("h264_rotate90.mp4", "hevc_bt2020_10bit.mp4", "vp9.webm"):
        header = Demuxer(media[name]).streams[0].metadata
        full = VideoDecoder(media[name], seek_mode="approximate").metadata
        for field in ("width", "height", "rotation", "codec", "pixel_format", "color_space", "color_primaries",
                      "average_fps_from_header", "num_frames_from_header", "duration_seconds_from_header"):
            assert getattr(header, field) == getattr(full, field), (name, field)
    assert type(get_container_metadata(media["two_video_streams.mkv"]).streams[0]) is VideoStreamHeaderMetadata


# ---- scan / FrameIndex -------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["h264_bframes.mp4", "h264_vfr.mkv", "h264_editlist.mp4", "h264_bframes.ts"])
def test_the_scan_gives_every_frame_as_ffprobe_sees_it(media, name):
    path = media[name]
    expected = reference.ffprobe_frames(path, 0)
    index = Demuxer(path).streams[0].scan()
    assert isinstance(index, FrameIndex) and len(index) == len(expected)
    np.testing.assert_array_equal(index.pts_seconds, [f["pts_seconds"] for f in expected])
    assert index.pts_seconds.dtype == np.float64 and index.is_key_frame.dtype == np.bool_
    np.testing.assert_array_equal(index.key_frame_indices, [i for i, f in enumerate(expected) if f["key_frame"]])
    assert index.key_frame_indices.dtype == np.int64
    assert index.num_frames_from_content == len(expected)
    assert index.begin_stream_seconds_from_content == expected[0]["pts_seconds"]
    ends = [f["pts"] + f["duration"] for f in expected]
    time_base = reference.ffprobe_stream(path, 0)["time_base"]
    assert index.end_stream_seconds_from_content == float(max(ends) * time_base)
    assert index.average_fps_from_content == pytest.approx(
        len(expected) / (index.end_stream_seconds_from_content - index.begin_stream_seconds_from_content))


def test_index_at_is_the_frame_on_screen_and_clamps_outside_the_stream(media):
    index = Demuxer(media["h264_bframes.mp4"]).streams[0].scan()
    pts, durations = index.pts_seconds, index.duration_seconds
    for i in (0, 1, 45, len(index) - 1):
        assert index.index_at(pts[i]) == i
        assert index.index_at(pts[i] + durations[i] / 2) == i
    assert index.index_at(-5.0) == 0 and index.index_at(1e9) == len(index) - 1
    times = np.array([[pts[3], pts[7]], [-1.0, 1e9]])
    np.testing.assert_array_equal(index.index_at(times), [[3, 7], [0, len(index) - 1]])


def test_key_frame_seconds_for_is_the_last_key_frame_at_or_before(media):
    index = Demuxer(media["h264_bframes.mp4"]).streams[0].scan()
    keys = [float(index.pts_seconds[k]) for k in index.key_frame_indices]
    assert len(keys) == 3
    assert index.key_frame_seconds_for(keys[1]) == keys[1]
    assert index.key_frame_seconds_for(np.nextafter(keys[1], 0)) == keys[0]
    assert index.key_frame_seconds_for(1e9) == keys[-1]
    assert index.key_frame_seconds_for(-1.0) == float(index.pts_seconds[0])


def test_an_exact_seek_built_from_the_index_reaches_every_frame(media, h264_frames):
    """The FrameIndex recipe of TorchCodec's docs: seek to the key frame before the target, decode
    forward, keep the target. Equal to the CLI's frame, for every frame."""
    demuxer = Demuxer(media["h264_bframes.mp4"])
    stream = demuxer.streams[0]
    index = stream.scan()
    decoder, converter = stream.make_decoder(), ColorConverter()
    for i in (0, 45, 44, 89, 30, 29):
        target = float(index.pts_seconds[i])
        demuxer.seek(index.key_frame_seconds_for(target))
        decoder.reset()
        found = None
        for packet in demuxer:
            found = next((f for f in decoder.decode(packet) if f.pts_seconds == target), None)
            if found is not None:
                break
        else:
            found = next(f for f in decoder.drain() if f.pts_seconds == target)
        np.testing.assert_array_equal(converter.convert(found).data.transpose(1, 2, 0), h264_frames[i])


def test_a_frame_index_pickles_and_a_scan_is_done_once(media):
    demuxer = Demuxer(media["h264_aac.mp4"], streams="all")
    index = demuxer.streams[0].scan()
    assert demuxer.streams[0].scan() is index
    copy = pickle.loads(pickle.dumps(index))
    np.testing.assert_array_equal(copy.pts_seconds, index.pts_seconds)
    np.testing.assert_array_equal(copy.key_frame_indices, index.key_frame_indices)


def test_after_a_scan_the_demuxer_is_back_at_the_first_packet(media):
    for name in ("h264_bframes.ts", "h264_offset2.5s.mkv", "mpeg2_mp2.mpg", "h264_aac_audio_first.mp4"):
        fresh = [(p.stream_index, p.pts_seconds) for p in Demuxer(media[name])][:5]
        demuxer = Demuxer(media[name])
        demuxer.streams[0].scan()
        assert [(p.stream_index, p.pts_seconds) for p in demuxer][:5] == fresh, name


# ---- VideoPacketDecoder / RawFrame -------------------------------------------------------------------

def test_decoded_frames_are_ffprobes_frames_in_presentation_order(media):
    path = media["hevc_bframes.mp4"]
    frames = decode_all(Demuxer(path))
    expected = reference.ffprobe_frames(path, 0)
    assert [f.pts_seconds for f in frames] == [f["pts_seconds"] for f in expected]
    assert [f.duration_seconds for f in frames] == [f["duration_seconds"] for f in expected]


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "h264_yuv444_161x121.mp4", "h264_10bit.mp4", "h264_yuv422.mp4"])
def test_planes_are_the_decoders_samples_byte_for_byte(media, name):
    """The planes against the CLI's raw, unconverted output (-c:v rawvideo)."""
    path = media[name]
    stream = reference.ffprobe_stream(path, 0)
    raw = reference.ffmpeg_raw_video(path)
    frames = decode_all(Demuxer(path))
    assert frames[0].pixel_format == stream["pix_fmt"]
    planes = frames[0].planes
    frame_bytes = sum(p.size * p.itemsize for p in planes)
    assert len(raw) == frame_bytes * len(frames)
    for k in (0, len(frames) // 2, len(frames) - 1):
        data = frames[k].planes
        expected = np.frombuffer(raw, np.uint8, frame_bytes, k * frame_bytes)
        assert np.concatenate([np.ascontiguousarray(p).view(np.uint8).reshape(-1) for p in data]).tobytes() == \
            expected.tobytes()
        assert data[0].shape == (frames[k].height, frames[k].width)


def test_planes_view_the_frames_memory_and_keep_it_alive(media):
    frame = decode_all(Demuxer(media["h264_bframes.mp4"]))[5]
    y, u, v = frame.planes
    assert not y.flags.owndata and y.strides[1] == 1 and y.strides[0] >= frame.width
    first = y.copy()
    del frame
    np.testing.assert_array_equal(y, first)            # the AVFrame lives while a plane does
    assert (u.shape, v.shape) == ((120, 160), (120, 160))


def test_frame_fields_name_ffmpegs_colour_properties(media):
    path = media["hevc_bt2020_10bit.mp4"]
    stream = reference.ffprobe_stream(path, 0)
    frame = decode_all(Demuxer(path))[0]
    assert frame.pixel_format == "yuv420p10le" and frame.bit_depth == 10
    assert (frame.color_space, frame.color_primaries, frame.color_transfer_characteristic, frame.color_range) == (
        stream["color_space"], stream["color_primaries"], stream["color_transfer"], stream["color_range"])
    assert all(p.dtype == np.uint16 for p in frame.planes)
    assert int(frame.planes[0].max()) < 1024
    plain = decode_all(Demuxer(media["h264_bframes.mp4"]))[0]
    assert (plain.color_space, plain.color_range) == ("unknown", "unknown")


def test_rotation_is_reported_not_applied_to_the_raw_frame(media):
    frame = decode_all(Demuxer(media["h264_rotate90.mp4"]))[0]
    assert (frame.width, frame.height, frame.rotation) == (320, 240, 90.0)
    assert frame.planes[0].shape == (240, 320)


def test_a_drained_decoder_refuses_packets_until_reset(media):
    demuxer = Demuxer(media["h264_bframes.mp4"])
    decoder = demuxer.streams[0].make_decoder()
    frames = decode_all(demuxer, decoder)
    with pytest.raises(RuntimeError, match="drained"):
        decoder.decode(next(iter(Demuxer(media["h264_bframes.mp4"]))))
    demuxer.seek(0.0)
    decoder.reset()
    assert decode_all(demuxer, decoder)[0].pts_seconds == frames[0].pts_seconds


def test_a_packet_from_before_a_seek_is_refused_after_it(media):
    demuxer = Demuxer(media["h264_bframes.mp4"])
    decoder = demuxer.streams[0].make_decoder()
    stale = next(demuxer)
    decoder.decode(stale)
    demuxer.seek(1.0)
    with pytest.raises(RuntimeError, match="reset"):
        decoder.decode(next(demuxer))
    decoder.reset()
    decoder.decode(next(demuxer))
    with pytest.raises(RuntimeError, match="reset"):
        decoder.decode(stale)


def test_a_packet_of_another_stream_is_refused(media):
    demuxer = Demuxer(media["h264_aac.mp4"], streams="all")
    video = demuxer.streams[0].make_decoder()
    audio_packet = next(p for p in demuxer if p.stream_index == 1)
    with pytest.raises(ValueError, match="stream 1"):
        video.decode(audio_packet)


def test_blocks_cannot_be_built_directly_or_pickled(media):
    demuxer = Demuxer(media["h264_bframes.mp4"])
    decoder = demuxer.streams[0].make_decoder()
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        VideoPacketDecoder()
    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        AudioPacketDecoder(demuxer)
    with pytest.raises(TypeError):
        RawFrame()
    frame = decode_all(demuxer, decoder)[0]
    for thing in (demuxer, decoder, next(iter(Demuxer(media["h264_bframes.mp4"]))), frame, demuxer.streams[0],
                  ColorConverter(), AudioConverter()):
        with pytest.raises(TypeError, match="cannot be pickled"):
            pickle.dumps(thing)


def test_num_ffmpeg_threads_decodes_the_same_frames(media):
    path = media["h264_bframes.mp4"]
    one = decode_all(Demuxer(path))
    demuxer = Demuxer(path)
    many = decode_all(demuxer, demuxer.streams[0].make_decoder(num_ffmpeg_threads=4))
    assert [f.pts_seconds for f in many] == [f.pts_seconds for f in one]
    np.testing.assert_array_equal(many[40].planes[0], one[40].planes[0])
    with pytest.raises(ValueError):
        Demuxer(path).streams[0].make_decoder(num_ffmpeg_threads=-1)
    with pytest.raises(ValueError, match="Invalid device"):
        Demuxer(path).streams[0].make_decoder(device="tpu")


# ---- ColorConverter ------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["h264_bframes.mp4", "h264_rotate90.mp4", "h264_rotate270.mp4", "h264_bt709_fullrange.mp4",
                                  "hevc_bt2020_10bit.mp4", "vp9_161x121.webm"])
def test_converted_frames_are_the_clis_rgb24(media, name):
    path = media[name]
    expected = reference.ffmpeg_rgb_frames(path)
    converter = ColorConverter()
    frames = decode_all(Demuxer(path))
    assert len(frames) == len(expected)
    for k in range(0, len(frames), 7):
        frame = converter.convert(frames[k])
        assert frame.data.shape == (3, *expected.shape[1:3]) and frame.data.dtype == np.uint8
        np.testing.assert_array_equal(frame.data.transpose(1, 2, 0), expected[k])
        assert frame.pts_seconds == frames[k].pts_seconds


def test_float32_and_auto_are_the_video_decoders(media):
    path = media["hevc_bt2020_10bit.mp4"]
    raw = decode_all(Demuxer(path))[3]
    expected = VideoDecoder(path, output_dtype="float32")[3]
    np.testing.assert_array_equal(ColorConverter(output_dtype="float32").convert(raw).data, expected)
    assert ColorConverter(output_dtype="auto").convert(raw).data.dtype == np.float32      # 10-bit
    eight_bit = decode_all(Demuxer(media["h264_bframes.mp4"]))[0]
    assert ColorConverter(output_dtype="auto").convert(eight_bit).data.dtype == np.uint8
    with pytest.raises(ValueError, match="Invalid output_dtype"):
        ColorConverter(output_dtype="uint16")


def test_one_converter_converts_frames_of_different_videos(media):
    converter = ColorConverter()
    for name in ("h264_bframes.mp4", "h264_yuv444_161x121.mp4", "h264_rotate90.mp4"):
        frame = decode_all(Demuxer(media[name]))[0]
        np.testing.assert_array_equal(converter.convert(frame).data.transpose(1, 2, 0),
                                      reference.ffmpeg_rgb_frames(media[name])[0])


def test_the_converter_gives_the_bridges_arrays(media):
    torch = pytest.importorskip("torch")
    frame = decode_all(Demuxer(media["h264_bframes.mp4"]))[0]
    with torchcodec.bridge("torch"):
        rgb = ColorConverter().convert(frame)
        planes = frame.planes
    assert isinstance(rgb.data, torch.Tensor) and rgb.data.shape == (3, 240, 320)
    assert isinstance(planes[0], torch.Tensor) and planes[0].dtype == torch.uint8
    np.testing.assert_array_equal(planes[0].numpy(), frame.planes[0])


# ---- audio -------------------------------------------------------------------------------------------

def audio_pipeline(path, **options):
    demuxer = Demuxer(path, streams="audio")
    decoder = demuxer.streams[0].make_decoder()
    converter = AudioConverter(**options)
    raws, chunks = [], []
    for packet in demuxer:
        for raw in decoder.decode(packet):
            raws.append(raw)
            chunks.append(converter.convert(raw))
    for raw in decoder.drain():
        raws.append(raw)
        chunks.append(converter.convert(raw))
    chunks.append(converter.drain())
    return raws, chunks


@pytest.mark.parametrize("name", ["aac_stereo_48000.m4a", "mp3_stereo_44100.mp3", "flac_s24_stereo_88200.flac",
                                  "wav_s24_5.1_48000.wav", "vorbis_mono_11025.ogg"])
@pytest.mark.parametrize("options", [{}, {"sample_rate": 16000}, {"sample_rate": 22050, "num_channels": 1}])
def test_converted_audio_is_the_audio_decoders(media, name, options):
    raws, chunks = audio_pipeline(media[name], **options)
    samples = np.concatenate([c.data for c in chunks], axis=1)
    expected = AudioDecoder(media[name], **options).get_all_samples()
    np.testing.assert_array_equal(samples, expected.data)
    assert chunks[0].pts_seconds == raws[0].pts_seconds == expected.pts_seconds
    rate = options.get("sample_rate") or raws[0].sample_rate
    position = 0
    for chunk in chunks:                                  # each chunk's pts continues the last one's
        assert chunk.pts_seconds == pytest.approx(raws[0].pts_seconds + position / rate, abs=1e-12)
        assert chunk.sample_rate == rate and chunk.duration_seconds == chunk.data.shape[1] / rate
        position += chunk.data.shape[1]


def test_raw_samples_are_the_codecs_in_their_own_type(media):
    raws, _ = audio_pipeline(media["wav_s16_stereo_44100.wav"])
    assert {r.data.dtype for r in raws} == {np.dtype(np.int16)}
    samples = np.concatenate([r.data for r in raws], axis=1)
    expected = reference.ffmpeg_audio_samples(media["wav_s16_stereo_44100.wav"])
    np.testing.assert_array_equal(samples / 32768.0, expected)
    assert all(r.data.flags.c_contiguous and r.data.shape == (r.num_channels, r.num_samples) for r in raws)
    assert isinstance(raws[0], RawAudioSamples) and raws[0].sample_format == "s16"
    raws, _ = audio_pipeline(media["aac_stereo_48000.m4a"])
    assert raws[0].data.dtype == np.float32 and raws[0].sample_format == "fltp"


def test_samples_changed_in_place_are_converted_as_changed(media):
    demuxer = Demuxer(media["wav_s16_stereo_44100.wav"], streams="audio")
    decoder = demuxer.streams[0].make_decoder()
    raw = decoder.decode(next(demuxer))[0]
    raw.data[...] = raw.data // 2
    converted = AudioConverter().convert(raw)
    np.testing.assert_array_equal(converted.data, raw.data / 32768.0)


def test_audio_converter_misuse_is_refused(media):
    with pytest.raises(RuntimeError, match="nothing to drain"):
        AudioConverter().drain()
    with pytest.raises(ValueError):
        AudioConverter(sample_rate=0)
    demuxer = Demuxer(media["aac_stereo_48000.m4a"], streams="audio")
    decoder = demuxer.streams[0].make_decoder()
    converter = AudioConverter()
    raw = next(r for p in demuxer for r in decoder.decode(p))
    converter.convert(raw)
    converter.drain()
    with pytest.raises(RuntimeError, match="drained"):
        converter.convert(raw)
    converter.reset()
    converter.convert(raw)
    demuxer.seek(0.5)
    decoder.reset()
    after = next(r for p in demuxer for r in decoder.decode(p))
    with pytest.raises(RuntimeError, match="reset"):
        converter.convert(after)


# ---- threads -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("stage", ["demux", "decode", "convert"])
def test_each_stage_releases_the_gil(media, tmp_path, stage):
    """Reading packets, decoding and converting on one thread each leave another thread free to run
    while they are in progress (tests/gil_probe.py: only its ticks inside one call count). Each call
    lasts tens of milliseconds: 60,000 packets read (a packet takes well under a microsecond, so
    the corpus's files are too short), 20 packets of 1080p HEVC decoded, 18 frames converted."""
    path = media["hevc_1080p.mp4"]
    packets = list(Demuxer(path))

    def decode():
        decoder = Demuxer(path).streams[0].make_decoder()
        return [frame for packet in packets[:20] for frame in decoder.decode(packet)]

    def read():
        demuxer = Demuxer(many)                 # opening takes ~1 ms of the call
        return sum(1 for _ in demuxer)

    if stage == "demux":                        # 60,000 frames of 8x8 grey, stored as they are
        many = tmp_path / "many_packets.nut"
        subprocess.run([reference.FFMPEG, "-v", "error", "-f", "rawvideo", "-pix_fmt", "gray", "-s", "8x8",
                        "-r", "10000", "-i", "-", "-c", "copy", str(many)], input=bytes(64 * 60_000), check=True)
        assert read() == 60_000
    frames, converter = decode(), ColorConverter()
    work = {"demux": read, "decode": decode, "convert": lambda: [converter.convert(frame) for frame in frames]}[stage]
    assert_releases_the_gil(work)


def test_a_three_thread_pipeline_gives_the_one_call_decoders_frames(media, h264_frames):
    """Demux on one thread, decode on another, convert on a third, connected by queues."""
    import queue
    demuxer = Demuxer(media["h264_bframes.mp4"])
    decoder, converter = demuxer.streams[0].make_decoder(), ColorConverter()
    packets: queue.Queue = queue.Queue(8)
    raws: queue.Queue = queue.Queue(8)
    out = []

    def demux():
        for packet in demuxer:
            packets.put(packet)
        packets.put(None)

    def decode():
        while (packet := packets.get()) is not None:
            for frame in decoder.decode(packet):
                raws.put(frame)
        for frame in decoder.drain():
            raws.put(frame)
        raws.put(None)

    def convert():
        while (frame := raws.get()) is not None:
            out.append(converter.convert(frame).data)

    threads = [threading.Thread(target=f) for f in (demux, decode, convert)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    np.testing.assert_array_equal(np.stack(out).transpose(0, 2, 3, 1), h264_frames)
