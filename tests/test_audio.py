"""AudioDecoder: samples against the ffmpeg CLI of the same FFmpeg, range semantics, exactness of
ranges reached by seeking, resampling and remixing, sources and errors."""
from __future__ import annotations

import functools
import io
import math
import pickle
import random

import numpy as np
import pytest

import reference as ref
import torchcodec
from torchcodec.decoders import AudioDecoder, AudioStreamMetadata, _factory
from test_media_corpus import AUDIO

# Files whose seeks are exact (lossless codecs, MP3; mp4/mp3/wav/flac containers) and files that
# read forward instead (AAC: noise substitution; Opus; Vorbis in Ogg; Matroska's ms timestamps).
SEEKABLE = {"wav_s16_stereo_44100.wav", "wav_s24_5.1_48000.wav", "wav_u8_mono_8000.wav",
            "wav_s32_stereo_22050.wav", "wav_f32_16ch_16000.wav", "wav_f64_mono_96000.wav",
            "mp3_stereo_44100.mp3", "mp3_music_22050_8s.mp3", "flac_s24_stereo_88200.flac"}
RANGE_FILES = sorted(SEEKABLE | {"aac_music_44100_8s.m4a", "aac_adts_48000_8s.aac", "opus_music_48000_8s.webm",
                                 "vorbis_music_44100_8s.ogg", "flac_offset1.5s.mka", "mpeg2_mp2.mpg",
                                 "h264_aac.mp4"})


@functools.lru_cache(maxsize=None)
def cli_samples(path, sample_rate=None, num_channels=None, stream_index=None):
    return ref.ffmpeg_audio_samples(path, stream_index=stream_index, sample_rate=sample_rate,
                                    num_channels=num_channels)


def audio_index(path):
    return ref.best_stream(path, "audio")


def random_ranges(count, total, seed):
    rng = random.Random(seed)
    for _ in range(count):
        first = rng.randrange(0, total)
        yield first, min(total, first + rng.randrange(1, total // 4 + 2))


def seconds_of(decoder, position):
    """A time that _position() maps back to ``position`` (the middle of the sample's interval)."""
    return decoder._begin + position / decoder._sample_rate


# ---- whole streams against the CLI ------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(AUDIO))
def test_all_samples_equal_the_cli(media, name):
    path = media[name]
    decoder = AudioDecoder(path)
    samples = decoder.get_all_samples()
    expected = cli_samples(path)
    assert samples.data.dtype == np.float32 and samples.data.flags.c_contiguous
    assert samples.data.shape == expected.shape
    np.testing.assert_array_equal(samples.data, expected)
    assert samples.sample_rate == decoder.metadata.sample_rate
    assert samples.duration_seconds == expected.shape[1] / samples.sample_rate
    stream = ref.ffprobe_stream(path, audio_index(path))
    first_pts = ref.ffprobe_frames(path, audio_index(path))[0]["pts_seconds"]
    assert samples.pts_seconds == pytest.approx(first_pts, abs=1e-6)
    assert decoder.stream_index == stream["index"]


@pytest.mark.parametrize("name", sorted(AUDIO))
def test_metadata_matches_ffprobe(media, name):
    path = media[name]
    stream = ref.ffprobe_stream(path, audio_index(path))
    metadata = AudioDecoder(path).metadata
    assert isinstance(metadata, AudioStreamMetadata)
    codec, sample_format, channels, sample_rate, _ = AUDIO[name]
    assert (metadata.codec, metadata.sample_format, metadata.num_channels, metadata.sample_rate) == (
        codec, sample_format, channels, sample_rate)
    assert metadata.media_type == "audio" and metadata.stream_index == stream["index"]
    assert metadata.begin_stream_seconds == pytest.approx(float(stream.get("start_time") or 0.0), abs=1e-6)


@pytest.mark.parametrize("name,sample_rate,num_channels", [
    ("wav_s16_stereo_44100.wav", 16000, None),
    ("wav_s16_stereo_44100.wav", 48000, 1),
    ("wav_u8_mono_8000.wav", 44100, 2),
    ("wav_f64_mono_96000.wav", 8000, None),
    ("wav_s24_5.1_48000.wav", None, 2),
    ("wav_f32_16ch_16000.wav", 22050, 2),
    ("aac_stereo_48000.m4a", 44100, None),
    ("mp3_music_22050_8s.mp3", 48000, 2),
    ("opus_stereo_48000.ogg", 16000, 1),
    ("vorbis_mono_11025.ogg", 32000, None),
    ("flac_s24_stereo_88200.flac", 44100, None),
    ("h264_aac.mp4", 8000, 1),
])
def test_resampling_and_remixing_equal_the_cli(media, name, sample_rate, num_channels):
    path = media[name]
    samples = AudioDecoder(path, sample_rate=sample_rate, num_channels=num_channels).get_all_samples()
    expected = cli_samples(path, sample_rate, num_channels)
    assert samples.data.shape == expected.shape
    np.testing.assert_array_equal(samples.data, expected)
    assert samples.sample_rate == (sample_rate or AUDIO[name][3])


def test_audio_stream_of_a_video_and_audio_first_file(media):
    for name, index in [("h264_aac.mp4", 1), ("h264_aac_audio_first.mp4", 0)]:
        decoder = AudioDecoder(media[name])
        assert decoder.stream_index == index == audio_index(media[name])
        np.testing.assert_array_equal(AudioDecoder(media[name], stream_index=index).get_all_samples().data,
                                      cli_samples(media[name]))


# ---- ranges ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", RANGE_FILES)
def test_random_ranges_on_one_decoder_are_slices_of_the_whole(media, name):
    path = media[name]
    whole = cli_samples(path)
    decoder = AudioDecoder(path)
    total = whole.shape[1]
    for first, stop in random_ranges(25, total, seed=len(name)):
        samples = decoder.get_samples_played_in_range(seconds_of(decoder, first), seconds_of(decoder, stop))
        np.testing.assert_array_equal(samples.data, whole[:, first:stop], err_msg=f"[{first}, {stop})")
    engine = decoder._engine
    assert engine.seeks_are_exact == (name in SEEKABLE)
    assert engine.keeps_history == (name not in SEEKABLE)
    if name in SEEKABLE:
        assert engine.seeks >= 5      # backward ranges: a seek each
    else:
        assert engine.seeks == 0      # backward ranges: copied from the history, never decoded again
        assert engine.frames_decoded <= len(ref.ffprobe_packets(path, audio_index(path)))


@pytest.mark.parametrize("name,sample_rate,num_channels", [
    ("mp3_music_22050_8s.mp3", 16000, None),     # seeks: aligned resampler restarts
    ("mp3_music_22050_8s.mp3", 44100, 2),
    ("wav_s16_stereo_44100.wav", 48000, 1),
    ("flac_s24_stereo_88200.flac", 22050, None),
    ("aac_music_44100_8s.m4a", 16000, None),     # reads forward
])
def test_resampled_ranges_are_slices_of_the_resampled_whole(media, name, sample_rate, num_channels):
    path = media[name]
    whole = cli_samples(path, sample_rate, num_channels)
    decoder = AudioDecoder(path, sample_rate=sample_rate, num_channels=num_channels)
    for first, stop in random_ranges(20, whole.shape[1], seed=7):
        samples = decoder.get_samples_played_in_range(seconds_of(decoder, first), seconds_of(decoder, stop))
        np.testing.assert_array_equal(samples.data, whole[:, first:stop], err_msg=f"[{first}, {stop})")


@pytest.mark.parametrize("name,sample_rate", [("mp3_music_22050_8s.mp3", None), ("mp3_music_22050_8s.mp3", 16000),
                                              ("aac_music_44100_8s.m4a", 48000), ("opus_stereo_48000.ogg", None)])
def test_consecutive_ranges_concatenate_to_all_samples(media, name, sample_rate):
    decoder = AudioDecoder(media[name], sample_rate=sample_rate)
    whole = decoder.get_all_samples().data
    rng = random.Random(3)
    chunks, t, step_total = [], 0.0, 0
    end = decoder._begin + whole.shape[1] / decoder._sample_rate
    while t < end:
        stop = t + rng.uniform(0.001, 0.3)
        chunks.append(decoder.get_samples_played_in_range(t, stop).data)
        step_total += chunks[-1].shape[1]
        t = stop
    np.testing.assert_array_equal(np.concatenate(chunks, axis=1), whole)
    assert step_total == whole.shape[1]


def test_backward_and_forward_requests_equal_a_fresh_decoder_in_approximate_mode(media, monkeypatch):
    """In a long stream (here: any stream), approximate mode seeks even where a seek is not exact; a
    range then depends on its bounds only."""
    monkeypatch.setattr(_factory, "APPROXIMATE_AUDIO_SEEKS_AFTER_SECONDS", 0.0)
    for name in ["aac_music_44100_8s.m4a", "opus_music_48000_8s.webm", "vorbis_music_44100_8s.ogg"]:
        path = media[name]
        used = AudioDecoder(path, seek_mode="approximate")
        assert used._engine.may_seek and not used._engine.seeks_are_exact
        for start, stop in [(6.0, 6.5), (1.0, 1.2), (7.5, 7.9), (3.25, 4.0), (0.5, 0.6)]:
            got = used.get_samples_played_in_range(start, stop)
            fresh = AudioDecoder(path, seek_mode="approximate").get_samples_played_in_range(start, stop)
            np.testing.assert_array_equal(got.data, fresh.data, err_msg=f"{name} [{start}, {stop})")
            assert got.pts_seconds == fresh.pts_seconds == start
        # ... and is the exact decode's signal, up to a shift of less than a millisecond (Matroska's
        # timestamps) or a block (Ogg's derived timestamps), plus the codec's unsynchronised state
        exact = AudioDecoder(path).get_samples_played_in_range(3.0, 4.5).data[0]
        approx = AudioDecoder(path, seek_mode="approximate").get_samples_played_in_range(3.25, 4.0).data[0]
        shift = round(0.25 * AUDIO[name][3])
        best = max(np.corrcoef(approx, exact[shift + lag:shift + lag + approx.shape[0]])[0, 1]
                   for lag in range(-1100, 1100))
        assert best > 0.95, name


@pytest.mark.parametrize("name", ["aac_music_44100_8s.m4a", "opus_music_48000_8s.webm"])
def test_approximate_mode_reads_a_short_stream_as_exact_mode_does(media, name):
    """A stream of at most two minutes is read in one pass whatever the seek mode: every range is the
    whole decode's slice (the CLI's samples), backward ranges included."""
    path = media[name]
    whole = cli_samples(path)
    decoder = AudioDecoder(path, seek_mode="approximate")
    assert decoder.metadata.duration_seconds <= _factory.APPROXIMATE_AUDIO_SEEKS_AFTER_SECONDS
    assert not decoder._engine.may_seek and decoder._engine.keeps_history
    rate = decoder.metadata.sample_rate
    for start, stop in [(6.0, 6.5), (1.0, 1.2), (7.5, 7.9), (3.25, 4.0)]:
        got = decoder.get_samples_played_in_range(start, stop).data
        first = round((start - decoder._begin) * rate)
        np.testing.assert_array_equal(got, whole[:, first:first + got.shape[1]], err_msg=f"{name} [{start}, {stop})")
    assert decoder._engine.seeks == 0


def test_history_is_bounded_and_a_range_behind_it_decodes_again_from_the_start(media):
    path = media["aac_music_44100_8s.m4a"]
    whole = cli_samples(path)
    decoder = AudioDecoder(path)
    engine = decoder._engine
    engine.history_limit_bytes = 44100 * 2 * 4          # one second of stereo float32
    for first, stop in [(300000, 310000), (20000, 30000), (250000, 260000), (100, 90000), (340000, 350000)]:
        samples = decoder.get_samples_played_in_range(seconds_of(decoder, first), seconds_of(decoder, stop))
        np.testing.assert_array_equal(samples.data, whole[:, first:stop], err_msg=f"[{first}, {stop})")
    # [20000, 30000) and [100, 90000) lay behind the kept second: two new runs from the start; the
    # others were ahead of the run or inside the second kept behind it.
    assert engine.seeks == 2


def test_a_read_to_the_end_keeps_no_second_copy(media):
    path = media["aac_music_44100_8s.m4a"]
    decoder = AudioDecoder(path)
    whole = decoder.get_all_samples().data
    assert decoder._engine.seeks == 0
    middle = decoder.get_samples_played_in_range(seconds_of(decoder, 1000), seconds_of(decoder, 5000)).data
    np.testing.assert_array_equal(middle, whole[:, 1000:5000])
    assert decoder._engine.seeks == 1                   # nothing was kept: decoded again from the start
    again = decoder.get_samples_played_in_range(seconds_of(decoder, 10), seconds_of(decoder, 20)).data
    np.testing.assert_array_equal(again, whole[:, 10:20])
    assert decoder._engine.seeks == 1                   # this run keeps what it decodes


def test_exact_mode_seeks_only_where_exact(media):
    mp3 = AudioDecoder(media["mp3_music_22050_8s.mp3"])
    mp3.get_samples_played_in_range(6.0, 6.1)
    assert mp3._engine.frames_decoded < 60               # 8 s is ~300 frames of 576 samples
    aac = AudioDecoder(media["aac_music_44100_8s.m4a"])
    aac.get_samples_played_in_range(6.0, 6.1)
    assert aac._engine.frames_decoded > 6.0 * 44100 / 1024     # read forward from the start


def test_range_semantics(media):
    path = media["flac_offset1.5s.mka"]           # first sample at 1.5 s, 2 s of 44.1 kHz
    decoder = AudioDecoder(path)
    whole = cli_samples(path)
    rate, begin = 44100, 1.5
    assert decoder.get_all_samples().pts_seconds == begin
    empty = decoder.get_samples_played_in_range(2.0, 2.0)
    assert empty.data.shape == (2, 0) and empty.duration_seconds == 0.0 and empty.pts_seconds == 2.0
    with pytest.raises(ValueError, match="less than or equal"):
        decoder.get_samples_played_in_range(2.0, 1.9)
    # a start before the first sample starts there; pts is the first sample's
    early = decoder.get_samples_played_in_range(0.0, 1.6)
    np.testing.assert_array_equal(early.data, whole[:, :4410])
    assert early.pts_seconds == begin
    # a stop after the end stops there
    late = decoder.get_samples_played_in_range(3.4, 100.0)
    np.testing.assert_array_equal(late.data, whole[:, round(1.9 * rate):])
    assert late.pts_seconds == 3.4 and late.duration_seconds == late.data.shape[1] / rate
    tail = decoder.get_samples_played_in_range(3.0)
    np.testing.assert_array_equal(tail.data, whole[:, round(1.5 * rate):])
    # ranges with no sample at all, as in TorchCodec
    with pytest.raises(RuntimeError, match="No audio frames were decoded"):
        decoder.get_samples_played_in_range(3.6, 4.0)
    with pytest.raises(RuntimeError, match="No audio frames were decoded"):
        decoder.get_samples_played_in_range(0.0, 1.0)
    # half-open, rounded to the nearest sample with halves up: sample k is at begin + k / rate
    k = 1000
    just = decoder.get_samples_played_in_range(begin + (k - 0.499) / rate, begin + (k + 0.501) / rate)
    np.testing.assert_array_equal(just.data, whole[:, k:k + 1])
    below = decoder.get_samples_played_in_range(begin + (k - 0.501) / rate, begin + (k + 0.499) / rate)
    np.testing.assert_array_equal(below.data, whole[:, k - 1:k])


def test_far_stop_allocates_only_what_the_stream_holds(media):
    decoder = AudioDecoder(media["wav_s16_stereo_44100.wav"])
    samples = decoder.get_samples_played_in_range(1.0, 1e12)
    assert samples.data.shape == (2, 44100)
    assert samples.data.base is None or samples.data.base.nbytes < 2 * 4 * 100000


def test_output_grows_when_the_header_is_short(media, monkeypatch):
    decoder = AudioDecoder(media["mp3_music_22050_8s.mp3"])
    monkeypatch.setattr(decoder.metadata, "duration_seconds", 0.01)
    np.testing.assert_array_equal(decoder.get_all_samples().data, cli_samples(media["mp3_music_22050_8s.mp3"]))


def test_non_contiguous_layouts_never_leak_out(media):
    decoder = AudioDecoder(media["wav_s24_5.1_48000.wav"])
    for start, stop in [(0.1, 0.2), (0.9, None), (0.0, None)]:
        data = decoder.get_samples_played_in_range(start, stop).data
        assert data.flags.c_contiguous and data.shape[0] == 6


# ---- sources, bridge, pickling ------------------------------------------------------------------


def test_every_source_kind_gives_the_same_samples(media):
    path = media["mp3_stereo_44100.mp3"]
    expected = AudioDecoder(path).get_samples_played_in_range(0.5, 1.5).data
    raw = path.read_bytes()
    for source in [str(path), path, raw, bytearray(raw), memoryview(raw), np.frombuffer(raw, np.uint8),
                   io.BytesIO(raw), open(path, "rb")]:
        got = AudioDecoder(source).get_samples_played_in_range(0.5, 1.5).data
        np.testing.assert_array_equal(got, expected)


def test_pickled_decoder_decodes_the_same(media):
    decoder = AudioDecoder(media["mp3_music_22050_8s.mp3"], sample_rate=16000)
    copy = pickle.loads(pickle.dumps(decoder))
    np.testing.assert_array_equal(copy.get_samples_played_in_range(2, 3).data,
                                  decoder.get_samples_played_in_range(2, 3).data)
    assert copy._sample_rate == 16000


def test_torch_bridge_gives_tensors(media):
    torch = pytest.importorskip("torch")
    with torchcodec.bridge("torch"):
        samples = AudioDecoder(media["wav_s16_stereo_44100.wav"]).get_samples_played_in_range(0.5, 0.75)
    assert isinstance(samples.data, torch.Tensor) and samples.data.dtype == torch.float32
    assert samples.data.is_contiguous() and tuple(samples.data.shape) == (2, 11025)
    np.testing.assert_array_equal(samples.data.numpy(), cli_samples(media["wav_s16_stereo_44100.wav"])[:, 22050:33075])


# ---- errors ---------------------------------------------------------------------------------


def test_stream_errors(media):
    with pytest.raises(ValueError, match="no audio stream"):
        AudioDecoder(media["h264_bframes.mp4"])
    with pytest.raises(ValueError, match="not an audio stream"):
        AudioDecoder(media["h264_aac.mp4"], stream_index=0)
    with pytest.raises(ValueError, match="not a valid stream"):
        AudioDecoder(media["h264_aac.mp4"], stream_index=7)


@pytest.mark.parametrize("kwargs", [dict(sample_rate=0), dict(sample_rate=-8000), dict(sample_rate=44100.5), dict(sample_rate=2**40),
                                    dict(num_channels=0), dict(num_channels=True), dict(seek_mode="fast")])
def test_argument_errors(media, kwargs):
    with pytest.raises((ValueError, TypeError)):     # TypeError for non-int sample_rate / num_channels
        AudioDecoder(media["wav_s16_stereo_44100.wav"], **kwargs)


def test_bad_times(media):
    decoder = AudioDecoder(media["wav_s16_stereo_44100.wav"])
    with pytest.raises(TypeError):
        decoder.get_samples_played_in_range("1")
    with pytest.raises(ValueError):
        decoder.get_samples_played_in_range(math.nan)


def test_garbage_and_empty_sources_raise(media):
    with pytest.raises(RuntimeError):
        AudioDecoder(b"\x00" * 1000 + b"not audio" * 100)
    with pytest.raises(ValueError, match="empty"):
        AudioDecoder(b"")
    with pytest.raises(RuntimeError):
        AudioDecoder(media["wav_s16_stereo_44100.wav"].read_bytes()[:40])   # header only


@pytest.mark.parametrize("name", ["mp3_music_22050_8s.mp3", "aac_music_44100_8s.m4a", "flac_s24_stereo_88200.flac",
                                  "opus_music_48000_8s.webm", "wav_s16_stereo_44100.wav", "aac_adts_48000_8s.aac"])
@pytest.mark.parametrize("fraction", [0.1, 0.5, 0.9])
def test_truncated_files_decode_what_is_there(media, tmp_path, name, fraction):
    data = media[name].read_bytes()
    path = tmp_path / name
    path.write_bytes(data[:int(len(data) * fraction)])
    if name.endswith(".m4a"):               # the moov atom (the index) is at the end: nothing to decode
        with pytest.raises(RuntimeError):
            AudioDecoder(path)
        return
    decoder = AudioDecoder(path)
    samples = decoder.get_all_samples().data
    assert samples.shape[1] > 0 and np.isfinite(samples).all()
    try:
        expected = cli_samples(path)
    except ref.CLIError:
        expected = None            # the CLI gives up where we decode what is there
    if expected is not None:
        np.testing.assert_array_equal(samples, expected)
    # ranges after the damage are clipped or empty, never a crash
    middle = decoder.get_samples_played_in_range(0.0, 1.0).data
    np.testing.assert_array_equal(middle, samples[:, :middle.shape[1]])


def test_file_object_that_fails_mid_decode(media):
    raw = media["wav_s16_stereo_44100.wav"].read_bytes()    # larger than the 64 KiB read buffer

    class Failing(io.BytesIO):
        armed = False

        def readinto(self, buffer):
            if self.armed and self.tell() > len(raw) // 2:
                raise OSError("disk on fire")
            return super().readinto(buffer)

    source = Failing(raw)
    decoder = AudioDecoder(source)
    source.armed = True
    with pytest.raises(OSError, match="disk on fire"):
        decoder.get_all_samples()


def _child_samples(decoder, queue):
    queue.put(decoder.get_samples_played_in_range(2.0, 3.0).data)


def test_decoder_opened_in_parent_works_in_forked_child(media):
    import multiprocessing

    path = media["mp3_music_22050_8s.mp3"]
    decoder = AudioDecoder(path)
    decoder.get_samples_played_in_range(5.0, 6.0)        # the parent has decoded and seeked
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_samples, args=(decoder, queue))
    child.start()
    samples = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    np.testing.assert_array_equal(samples, AudioDecoder(path).get_samples_played_in_range(2.0, 3.0).data)
    np.testing.assert_array_equal(decoder.get_samples_played_in_range(1.0, 1.5).data,
                                  AudioDecoder(path).get_samples_played_in_range(1.0, 1.5).data)


def test_decoders_in_threads_agree(media):
    from concurrent.futures import ThreadPoolExecutor

    path = media["flac_s24_stereo_88200.flac"]
    whole = cli_samples(path)
    decoder = AudioDecoder(path)                  # shared: its lock serialises the requests
    ranges = [(t / 10, t / 10 + 0.3) for t in range(15)]
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda r: decoder.get_samples_played_in_range(*r).data, ranges))
    for (start, stop), data in zip(ranges, results):
        np.testing.assert_array_equal(data, whole[:, round(start * 88200):round(stop * 88200)])
