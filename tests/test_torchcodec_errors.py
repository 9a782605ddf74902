"""Errors as TorchCodec 0.17 raises them (types that users' ``except`` clauses catch, and the phrases
its tests match), the dataclasses' shape checks, and hostile input that must fail fast and cleanly
(the memory limit, absurd arguments, NaN and infinite times, damaged headers).

Where TorchCodec raises RuntimeError and a Python library would raise ValueError or TypeError, this
package raises a class that is both: every such case is checked against both bases.
"""
from __future__ import annotations

import io
import math
import os
import re
import struct
import subprocess
import tracemalloc

import numpy as np
import pytest

import reference
import torchcodec
from torchcodec import AudioSamples, Frame, FrameBatch
from torchcodec.decoders import (AudioDecoder, VideoDecoder, WavDecoder, set_nvdec_cache_capacity,
                                 get_nvdec_cache_capacity)
from torchcodec.samplers import clips_at_random_indices, clips_at_regular_indices, clips_at_regular_timestamps

NUM_FRAMES, HEIGHT, WIDTH = 90, 240, 320        # h264_bframes.mp4: pts i / 30


@pytest.fixture
def memory_limit():
    """Set a memory limit for one test; the default comes back afterwards."""
    yield torchcodec.set_memory_limit
    torchcodec.set_memory_limit(None)


def raises_as(bases, match):
    """pytest.raises for the first base; the exception must be an instance of every base."""
    class Check:
        def __enter__(self):
            self.context = pytest.raises(bases[0], match=match)
            self.info = self.context.__enter__()
            return self.info

        def __exit__(self, *exc):
            handled = self.context.__exit__(*exc)
            for base in bases:
                assert isinstance(self.info.value, base), (type(self.info.value).__mro__, base)
            return handled

    return Check()


# ---- the dual classes ---------------------------------------------------------------------------

def test_fps_error_is_caught_by_except_value_error_and_by_except_runtime_error(decoder):
    for base in (ValueError, RuntimeError):
        try:
            decoder.get_frames_played_in_range(0.0, 1.0, fps=0)
        except base as error:           # the clause a TorchCodec user wrote, or a Python one
            assert "fps must be positive" in str(error)
        else:
            pytest.fail("no error")


def test_type_errors_are_also_runtime_errors(decoder):
    for base in (TypeError, RuntimeError):
        try:
            decoder.get_frames_at([0.5])
        except base as error:
            assert "Long but found Float" in str(error)
        else:
            pytest.fail("no error")


# ---- sources ------------------------------------------------------------------------------------

@pytest.mark.parametrize("cls", [VideoDecoder, AudioDecoder])
def test_unknown_source_type(cls):
    with pytest.raises(TypeError, match="Unknown source type"):
        cls(123)


@pytest.mark.parametrize("cls", [VideoDecoder, AudioDecoder])
def test_text_mode_file_asks_for_binary_reading(h264, cls):
    with open(h264) as f, pytest.raises(TypeError, match="binary reading"):
        cls(f)


def test_invalid_stream_index_names_it(h264):
    with pytest.raises(ValueError, match="40 is not a valid stream"):
        VideoDecoder(h264, stream_index=40)


def test_bad_device(h264):
    with raises_as((ValueError, RuntimeError), "Invalid device"):
        VideoDecoder(h264, device="bad")


def test_float_tensor_source_is_a_type_and_runtime_error():
    torch = pytest.importorskip("torch")
    with raises_as((TypeError, RuntimeError), "uint8"):
        VideoDecoder(torch.zeros(100))


# ---- frame indices --------------------------------------------------------------------------------

def test_index_errors_say_what_the_range_is(decoder):
    with pytest.raises(IndexError, match="negative indices must have an absolute value less than the number of frames"):
        decoder.get_frame_at(-10000)
    with pytest.raises(IndexError, match=f"must be less than {NUM_FRAMES}"):
        decoder.get_frame_at(10000)
    with pytest.raises(IndexError, match="negative indices must have"):
        decoder.get_frames_at([-10000])
    with pytest.raises(IndexError, match=f"Invalid frame index={NUM_FRAMES}"):
        decoder.get_frames_at([NUM_FRAMES])
    with pytest.raises(IndexError, match="negative indices must have"):
        decoder[-NUM_FRAMES - 1]


@pytest.mark.parametrize("indices, found", [([0.3], "Float"), ([True], "Bool"), ([1, "2"], "str")])
def test_non_integer_indices_in_a_list(decoder, indices, found):
    with raises_as((TypeError, RuntimeError), f"expected scalar type Long but found {found}"):
        decoder.get_frames_at(indices)


@pytest.mark.parametrize("index", [1.5, "1", None])
def test_non_integer_single_index(decoder, index):
    with raises_as((TypeError, RuntimeError), "Expected a value of type 'int'"):
        decoder.get_frame_at(index)


def test_float_arrays_of_indices_are_truncated_toward_zero(decoder, h264_frames):
    batch = decoder.get_frames_at(np.array([0.0, 10.0, 1.7, -1.5]))   # -> 0, 10, 1, -1 (= 89)
    np.testing.assert_array_equal(batch.data.transpose(0, 2, 3, 1), h264_frames[[0, 10, 1, 89]])
    np.testing.assert_allclose(batch.pts_seconds, np.array([0, 10, 1, 89]) / 30, atol=1e-9)


def test_float_tensor_of_indices(decoder, h264_frames):
    torch = pytest.importorskip("torch")
    for dtype in (torch.float32, torch.int32, torch.int64):
        batch = decoder.get_frames_at(torch.tensor([0, 10], dtype=dtype))
        np.testing.assert_array_equal(batch.data.transpose(0, 2, 3, 1), h264_frames[[0, 10]])


def test_nan_and_infinite_indices_are_index_errors(decoder):
    for value in (math.nan, math.inf, -math.inf):
        with pytest.raises(IndexError, match="Invalid frame index"):
            decoder.get_frames_at(np.array([0.0, value]))


def test_index_shapes_are_flattened_and_a_single_int_is_a_batch_of_one(decoder, h264_frames):
    assert decoder.get_frames_at(np.array([[3, 4], [5, 6]])).data.shape == (4, 3, HEIGHT, WIDTH)
    assert decoder.get_frames_at([[3, 4], [5]]).data.shape == (3, 3, HEIGHT, WIDTH)
    one = decoder.get_frames_at(7)
    np.testing.assert_array_equal(one.data.transpose(0, 2, 3, 1), h264_frames[[7]])


# ---- times ------------------------------------------------------------------------------------------

def test_frames_played_at_errors(decoder):
    with pytest.raises(RuntimeError, match="must be greater than or equal to"):
        decoder.get_frames_played_at([-1])
    with pytest.raises(RuntimeError, match="must be less than"):
        decoder.get_frames_played_at([14])
    for bad in (["bad"], [None], "1.0", [[1.0, "x"]]):
        with pytest.raises(ValueError, match="Couldn't convert timestamps input to a tensor"):
            decoder.get_frames_played_at(bad)


def test_frames_played_at_takes_numbers_arrays_and_nested_lists(decoder, h264_frames):
    # 1.0 s and 0.51 s are played by frames 30 and 15 (pts i / 30)
    for seconds in (1.0, [1.0], [[1.0]], np.array([1.0]), np.array(1.0)):
        batch = decoder.get_frames_played_at(seconds)
        np.testing.assert_array_equal(batch.data.transpose(0, 2, 3, 1), h264_frames[[30]])
    batch = decoder.get_frames_played_at(np.array([1, 0.51], dtype=np.float32))
    np.testing.assert_array_equal(batch.data.transpose(0, 2, 3, 1), h264_frames[[30, 15]])


@pytest.mark.parametrize("seconds", ["1", None, [1.0]])
def test_frame_played_at_needs_a_number(decoder, seconds):
    with raises_as((TypeError, RuntimeError), "number of seconds"):
        decoder.get_frame_played_at(seconds)


@pytest.mark.parametrize("fps, match", [(0, "fps must be positive"), (-10, "fps must be positive"),
                                        (math.nan, "fps must be positive"), (math.inf, "fps must be finite")])
def test_fps_must_be_positive_and_finite(decoder, fps, match):
    with raises_as((ValueError, RuntimeError), match):
        decoder.get_frames_played_in_range(0.0, 1.0, fps=fps)
    with raises_as((ValueError, RuntimeError), match):
        decoder.get_all_frames(fps=fps)


def test_fps_of_the_wrong_type(decoder):
    with raises_as((TypeError, RuntimeError), "fps must be a number"):
        decoder.get_frames_played_in_range(0.0, 1.0, fps="30")


def test_an_empty_range_is_empty_whatever_the_fps(decoder):
    assert decoder.get_frames_played_in_range(1.0, 1.0, fps=0).data.shape == (0, 3, HEIGHT, WIDTH)


@pytest.mark.parametrize("start, stop", [(0.0, math.nan), (math.nan, 1.0), (math.nan, math.nan)])
def test_nan_range_is_a_value_error(decoder, start, stop):
    with pytest.raises(ValueError, match="Invalid start seconds.*NaN is not a time"):
        decoder.get_frames_played_in_range(start, stop)
    with pytest.raises(ValueError, match="NaN is not a time"):
        decoder.get_frames_played_in_range(start, stop, fps=5)


def test_infinite_ranges_are_value_errors(decoder):
    with pytest.raises(ValueError, match="Invalid stop seconds: inf"):
        decoder.get_frames_played_in_range(0.0, math.inf)
    with pytest.raises(ValueError, match="Invalid start seconds: -inf"):
        decoder.get_frames_played_in_range(-math.inf, 1.0)


def test_a_frame_the_header_promised_but_the_stream_lacks(media):
    # h264_editlist.mp4: the header counts 60 frames, the edit list leaves 45 (ffprobe counts them)
    path = media["h264_editlist.mp4"]
    assert len(reference.ffprobe_frames(path, 0)) == 45
    decoder = VideoDecoder(path, seek_mode="approximate")
    assert len(decoder) == 60
    with raises_as((IndexError, RuntimeError), "Requested next frame while there are no more frames"):
        decoder.get_frame_at(59)


# ---- custom frame mappings ------------------------------------------------------------------------

@pytest.mark.parametrize("mappings, match", [
    ("{}", "The input is empty or missing the required 'frames' key."),
    ('{"valid": "json"}', "The input is empty or missing the required 'frames' key."),
    ('{"frames": [{"missing": "keys"}]}', "keys are required in the frame metadata."),
    ("invalid input", "Invalid custom frame mappings"),
    ('{"frames": [{"pts": "x", "duration": 1, "key_frame": 1}]}', "Invalid custom frame mappings"),
])
def test_custom_frame_mappings_errors(h264, mappings, match):
    with pytest.raises(ValueError, match=match):
        VideoDecoder(h264, custom_frame_mappings=mappings)
    with pytest.raises(ValueError, match=match):
        VideoDecoder(h264, custom_frame_mappings=io.StringIO(mappings))


# ---- CUDA settings (no GPU needed) ------------------------------------------------------------------

def test_nvdec_cache_capacity_errors():
    before = get_nvdec_cache_capacity()
    with raises_as((ValueError, RuntimeError), "NVDEC cache capacity must be non-negative"):
        set_nvdec_cache_capacity(-1)
    with raises_as((TypeError, RuntimeError), "must be an int"):
        set_nvdec_cache_capacity(1.5)
    assert get_nvdec_cache_capacity() == before


# ---- audio ---------------------------------------------------------------------------------------------

def test_num_channels_and_sample_rate_must_be_positive(media):
    path = media["wav_s16_stereo_44100.wav"]
    with raises_as((ValueError, RuntimeError), "num_channels must be > 0"):
        AudioDecoder(path, num_channels=0)
    with raises_as((ValueError, RuntimeError), "sample_rate must be > 0"):
        AudioDecoder(path, sample_rate=-1)
    with raises_as((TypeError, RuntimeError), "sample_rate must be an int"):
        AudioDecoder(path, sample_rate=44100.5)


@pytest.mark.parametrize("num_channels", [15, 23])
def test_a_channel_count_without_a_layout_cannot_initialize_the_resampler(media, num_channels):
    # raised when the decoder is made (it decodes the first frame then), TorchCodec's on the first read
    with raises_as((ValueError, RuntimeError), "Couldn't initialize SwrContext:"):
        AudioDecoder(media["mp3_stereo_44100.mp3"], num_channels=num_channels).get_all_samples()


def test_wav_decoder_refuses_other_files(media):
    with raises_as((ValueError, RuntimeError), "Missing RIFF header"):
        WavDecoder(media["mp3_stereo_44100.mp3"])


def test_ranges_after_the_end(media):
    audio = AudioDecoder(media["wav_s16_stereo_44100.wav"])           # 2 s
    with pytest.raises(RuntimeError, match="No audio frames were decoded"):
        audio.get_samples_played_in_range(start_seconds=9999)
    wav = WavDecoder(media["wav_s16_stereo_44100.wav"])
    for stop in (None, 12.0):
        with pytest.raises(RuntimeError,
                           match=r"No samples to decode. This is probably because start_seconds is too high\(10\)"):
            wav.get_samples_played_in_range(10.0, stop)


@pytest.mark.parametrize("start, stop", [(0.0, math.inf), (-math.inf, 1.0), (math.inf, None), (math.nan, None)])
def test_infinite_and_nan_audio_times_are_clear_errors(media, start, stop):
    for cls in (AudioDecoder, WavDecoder):
        decoder = cls(media["wav_s16_stereo_44100.wav"])
        with raises_as((ValueError, RuntimeError), "Invalid (start|stop) seconds"):
            decoder.get_samples_played_in_range(start, stop)


def test_audio_nan_stop_is_a_value_error(media):
    with pytest.raises(ValueError, match="Invalid start seconds"):
        AudioDecoder(media["wav_s16_stereo_44100.wav"]).get_samples_played_in_range(0.0, math.nan)


def test_a_range_ending_just_past_the_first_sample_is_empty(media):
    path = media["flac_offset1.5s.mka"]            # first sample at 1.5 s, 44.1 kHz
    begin, rate = 1.5, 44100
    assert float(reference.ffprobe_stream(path, 0)["start_time"]) == begin
    decoder = AudioDecoder(path)
    # no sample in the range: wholly before the stream
    for stop in (0.05, begin):
        with pytest.raises(RuntimeError, match="No audio frames were decoded"):
            decoder.get_samples_played_in_range(0.0, stop)
    # the range ends a fraction of a sample after the first one starts: no sample, no error
    empty = decoder.get_samples_played_in_range(0.0, begin + 0.1 / rate)
    assert empty.data.shape == (2, 0)
    assert (empty.pts_seconds, empty.duration_seconds, empty.sample_rate) == (begin, 0.0, rate)
    # a little more: the first samples (sample k at begin + k / rate, rounded halves up)
    whole = reference.ffmpeg_audio_samples(path)
    some = decoder.get_samples_played_in_range(0.0, begin + 8 / rate)
    np.testing.assert_array_equal(some.data, whole[:, :8])
    # a range inside the stream narrower than one sample
    inside = decoder.get_samples_played_in_range(2.0, 2.0 + 0.1 / rate)
    assert inside.data.shape == (2, 0) and inside.pts_seconds == 2.0


def test_unseekable_format_serves_ranges_by_decoding_from_the_start(tmp_path):
    # TorchCodec raises "'swf' format does not support seeking" here; this package reads from the start.
    path = tmp_path / "mp3.swf"
    subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i",
                    "aevalsrc=exprs='0.4*sin(2*PI*(200+400*t)*t)':s=44100:c=mono:d=2",
                    "-c:a", "libmp3lame", "-b:a", "64k", "-flags:a", "+bitexact", "-f", "swf", str(path)], check=True)
    whole = reference.ffmpeg_audio_samples(path)
    decoder = AudioDecoder(path)
    np.testing.assert_array_equal(decoder.get_all_samples().data, whole)
    for start, stop in [(1.0, 1.5), (0.25, 0.5), (1.2, None)]:
        first = math.floor(start * 44100 + 0.5)
        last = whole.shape[1] if stop is None else math.floor(stop * 44100 + 0.5)
        np.testing.assert_array_equal(decoder.get_samples_played_in_range(start, stop).data, whole[:, first:last])


def test_corrupt_mp3_says_invalid_data(media, tmp_path):
    data = bytearray(media["mp3_music_22050_8s.mp3"].read_bytes())
    for i in range(4000, len(data), 7):
        data[i] ^= 0xFF
    with pytest.raises(RuntimeError, match="Invalid data found"):
        AudioDecoder(bytes(data)).get_all_samples()


# ---- transforms and samplers ----------------------------------------------------------------------------

def test_torchvision_transform_phrases(h264):
    v2 = pytest.importorskip("torchvision.transforms.v2")
    with pytest.raises(ValueError, match="must have antialias enabled"):
        VideoDecoder(h264, transforms=[v2.Resize((100, 100), antialias=False)])
    with pytest.raises(ValueError, match="must have a size specified"):
        VideoDecoder(h264, transforms=[v2.Resize(size=None, max_size=100)])
    with pytest.raises(ValueError, match="padding_mode must be constant"):
        VideoDecoder(h264, transforms=[v2.RandomCrop((100, 100), padding_mode="edge")])


def test_sampler_phrases(decoder):
    for sampler in (clips_at_random_indices, clips_at_regular_indices):
        with pytest.raises(ValueError, match="beyond the number of frames"):
            sampler(decoder, num_frames_per_clip=10, sampling_range_start=-1, sampling_range_end=1000, policy="error")
        with pytest.raises(ValueError, match=f"We determined that sampling_range_end should be {NUM_FRAMES - 9} "):
            sampler(decoder, num_frames_per_clip=10, sampling_range_start=NUM_FRAMES - 1)
    with pytest.raises(ValueError, match="beyond the number of frames"):
        clips_at_regular_timestamps(decoder, seconds_between_clip_starts=0.1, num_frames_per_clip=10,
                                    sampling_range_start=2.9, sampling_range_end=1000, policy="error")


# ---- Frame, FrameBatch, AudioSamples ----------------------------------------------------------------------

def test_frame_data_must_be_3d():
    Frame(np.zeros((3, 4, 5)), 1, 2)
    for shape in ((1, 2), (1, 2, 3, 4)):
        with pytest.raises(ValueError, match="data must be 3-dimensional"):
            Frame(np.zeros(shape), 1, 1)
    with pytest.raises(TypeError, match="array or tensor"):
        Frame([[[0]]], 1, 1)


def test_frame_batch_shapes_must_agree():
    FrameBatch(np.zeros((2, 3, 4, 5)), np.zeros(2), np.zeros(2))
    FrameBatch(np.zeros((2, 7, 3, 4, 5)), np.zeros((2, 7)), np.zeros((2, 7)))
    FrameBatch(np.zeros((3, 4, 5)), np.float64(0.5), np.float64(0.1))        # one frame: 0-d timestamps
    with pytest.raises(ValueError, match="data must be at least 3-dimensional"):
        FrameBatch(np.zeros((2, 3)), np.zeros(1), np.zeros(1))
    for pts, duration in [(np.zeros(1), np.zeros(1)), (np.zeros(2), np.zeros(3)), (np.zeros((2, 1)), np.zeros(2))]:
        with pytest.raises(ValueError, match="leading dimensions of the inputs do not match"):
            FrameBatch(np.zeros((2, 3, 4, 5)), pts, duration)


def test_frame_batch_indexing_still_builds_valid_batches(decoder):
    batch = decoder.get_frames_at([1, 2, 3])
    assert batch[0].data.shape == (3, HEIGHT, WIDTH) and np.shape(batch[0].pts_seconds) == ()
    assert [b.data.shape for b in batch] == [(3, HEIGHT, WIDTH)] * 3
    assert batch[1:].data.shape == (2, 3, HEIGHT, WIDTH)


def test_audio_samples_data_must_be_2d():
    AudioSamples(np.zeros((2, 4)), 0, 0, 16000)
    for shape in ((4,), (1, 2, 3)):
        with pytest.raises(ValueError, match="data must be 2-dimensional"):
            AudioSamples(np.zeros(shape, np.float32), 0, 0, 16000)


# ---- the memory limit ----------------------------------------------------------------------------------

def _refused(call):
    """Run ``call`` expecting a MemoryError (also a RuntimeError); return it and the peak memory
    that Python and numpy allocated meanwhile."""
    tracemalloc.start()
    try:
        with raises_as((MemoryError, RuntimeError), "memory limit") as info:
            call()
        return info.value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_absurd_thread_count_is_refused_before_opening_the_codec(h264, memory_limit):
    memory_limit(1 << 30)
    error, peak = _refused(lambda: VideoDecoder(h264, num_ffmpeg_threads=10**6))
    # each thread: an 8 MiB stack and two 320x240 RGB frames
    assert f"({10**6 * (8 * 2**20 + 2 * HEIGHT * WIDTH * 3)} bytes)" in str(error)
    assert "num_ffmpeg_threads=1000000" in str(error)
    assert peak < 1 << 20


def test_absurd_fps_is_refused_before_planning(decoder, memory_limit):
    memory_limit(1 << 30)
    error, peak = _refused(lambda: decoder.get_frames_played_in_range(0.0, 1.0, fps=1e9))
    assert "1000000000 frames of 240x320" in str(error)
    assert f"({10**9 * (HEIGHT * WIDTH * 3 + 64)} bytes)" in str(error)
    assert peak < 1 << 20


def test_absurd_audio_sample_rate_is_refused_before_allocating(media, memory_limit):
    memory_limit(1 << 30)
    decoder = AudioDecoder(media["wav_s16_stereo_44100.wav"], sample_rate=10**9)
    error, peak = _refused(decoder.get_all_samples)
    assert "2 channels at 1000000000 Hz" in str(error)
    assert peak < 1 << 20
    error, peak = _refused(lambda: decoder.get_samples_played_in_range(0.5, 1.0))
    assert f"({10**9 // 2 * 2 * 4} bytes)" in str(error)          # 0.5 s x 2 channels x float32


def _wav_bytes(sample_rate: int, samples: np.ndarray) -> bytes:
    """A 16-bit PCM WAV (channels, samples) whose header says ``sample_rate``, written by hand."""
    channels = samples.shape[0]
    data = np.round(samples.T * 32767).astype("<i2").tobytes()
    fmt = struct.pack("<HHIIHH", 1, channels, sample_rate, sample_rate * 2 * channels, 2 * channels, 16)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def test_hostile_sample_rate_filter_bank_is_refused_before_swr_init(memory_limit):
    # A header's odd rate of 44,600,009 Hz resampled to 8 kHz: libswresample's defaults (filter_size 32,
    # cutoff 0.97) give ceil(32 / (8000 * 0.97 / 44600009)) = 183918 taps, aligned to 183920, and
    # 8000/44600009 does not reduce below 1024 phases, so its bank is 183920 x 1025 float32 coefficients
    # = 754,072,000 bytes (strace shows that mmap without the check), plus (2 x 183918 + 1) x 4 bytes of
    # history for the one channel.
    wav = _wav_bytes(44600009, np.zeros((1, 4000), np.float32))
    memory_limit(256 << 20)
    error, peak = _refused(lambda: AudioDecoder(wav, sample_rate=8000).get_all_samples())
    assert "resampling 44600009 Hz to 8000 Hz" in str(error)
    assert "183918 taps x 1025 phases x 4 bytes" in str(error) and "(754072000 bytes)" in str(error)
    assert f"({754072000 + (2 * 183918 + 1) * 4} bytes)" in str(error)
    assert peak < 1 << 20


def test_implausible_sample_rate_is_refused_whatever_the_limit():
    # 300,000,007 Hz to 8 kHz: 1,237,114 taps x 1025 phases x 4 bytes = 5,072,192,000 bytes (and about
    # 80 s of computing coefficients), beyond the fixed 1 GiB for a resampling filter even when the
    # machine has that much memory available.
    wav = _wav_bytes(300000007, np.zeros((2, 100), np.float32))
    with raises_as((MemoryError, RuntimeError), "allowed for a resampling filter") as info:
        AudioDecoder(wav, sample_rate=8000).get_all_samples()
    assert "(5072192000 bytes)" in str(info.value) and "300000007 Hz" in str(info.value)
    # without resampling the same file decodes
    assert AudioDecoder(wav).get_all_samples().data.shape == (2, 100)


@pytest.mark.parametrize("in_rate, out_rate", [(44100, 16000), (22050, 44100), (48000, 44100)])
def test_ordinary_resampling_is_not_refused_and_matches_ffmpeg(tmp_path, memory_limit, in_rate, out_rate):
    memory_limit(64 << 20)                       # their filter banks: 62 KB, 384 bytes, 24 KB
    t = np.arange(in_rate // 2) / in_rate
    path = tmp_path / f"tone_{in_rate}.wav"
    path.write_bytes(_wav_bytes(in_rate, np.stack([0.5 * np.sin(2 * np.pi * 440 * t), 0.25 * np.sin(2 * np.pi * 1000 * t)])))
    samples = AudioDecoder(path, sample_rate=out_rate).get_all_samples()
    expected = reference.ffmpeg_audio_samples(path, sample_rate=out_rate)
    assert samples.sample_rate == out_rate
    np.testing.assert_array_equal(np.asarray(samples.data), expected)


def test_absurd_clip_counts_are_refused_before_drawing_starts(decoder, memory_limit):
    memory_limit(1 << 30)
    for call, clips in [(lambda: clips_at_random_indices(decoder, num_clips=10**9), 10**9),
                        (lambda: clips_at_regular_timestamps(decoder, seconds_between_clip_starts=1e-9), 3 * 10**9)]:
        error, peak = _refused(call)
        assert f"{clips} clips of 1 frames" in str(error)
        assert peak < 1 << 20


def test_a_small_limit_refuses_a_batch_and_names_its_size(decoder, memory_limit, h264_frames):
    memory_limit(1 << 20)
    error, _ = _refused(lambda: decoder.get_frames_at(range(NUM_FRAMES)))
    assert f"({NUM_FRAMES * (HEIGHT * WIDTH * 3 + 64)} bytes)" in str(error)
    assert "set by torchcodec.set_memory_limit()" in str(error)
    np.testing.assert_array_equal(decoder[5].transpose(1, 2, 0), h264_frames[5])     # one frame fits
    memory_limit(None)
    assert decoder.get_frames_at(range(NUM_FRAMES)).data.shape == (NUM_FRAMES, 3, HEIGHT, WIDTH)


def test_float32_output_counts_four_bytes_per_value(h264, memory_limit):
    decoder = VideoDecoder(h264, output_dtype="float32")
    memory_limit(HEIGHT * WIDTH * 3 * 4 + 64)            # exactly one float32 frame
    decoder.get_frames_at([0])
    with pytest.raises(MemoryError, match=re.escape(f"({2 * (HEIGHT * WIDTH * 3 * 4 + 64)} bytes)")):
        decoder.get_frames_at([0, 1])


@pytest.mark.skipif(not os.path.exists("/proc/meminfo"), reason="reads MemTotal from /proc/meminfo")
def test_memory_limit_settings(monkeypatch, memory_limit):
    monkeypatch.delenv("TORCHCODEC_MEMORY_LIMIT", raising=False)
    available = torchcodec.get_memory_limit()
    with open("/proc/meminfo") as f:
        total = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemTotal:"))
    assert available is not None and 0 < available <= total
    monkeypatch.setenv("TORCHCODEC_MEMORY_LIMIT", "3M")
    assert torchcodec.get_memory_limit() == 3 << 20
    monkeypatch.setenv("TORCHCODEC_MEMORY_LIMIT", "1GiB")
    assert torchcodec.get_memory_limit() == 1 << 30
    memory_limit(12345)                                  # the setting wins over the environment
    assert torchcodec.get_memory_limit() == 12345
    memory_limit(None)
    monkeypatch.setenv("TORCHCODEC_MEMORY_LIMIT", "lots")
    with pytest.warns(RuntimeWarning, match="TORCHCODEC_MEMORY_LIMIT"):
        assert 0 < torchcodec.get_memory_limit() <= total
    for bad in (0, -1, 1.5, "1G", True):
        with pytest.raises(ValueError, match="memory limit"):
            torchcodec.set_memory_limit(bad)


def test_environment_limit_applies(decoder, monkeypatch):
    monkeypatch.setenv("TORCHCODEC_MEMORY_LIMIT", "1K")
    with pytest.raises(MemoryError, match="set by TORCHCODEC_MEMORY_LIMIT"):
        decoder.get_frames_at([0])


# ---- damaged headers -----------------------------------------------------------------------------------

def _zero_stts_deltas(data: bytearray) -> bytearray:
    """The mp4's sample durations (stts deltas) set to 0: FFmpeg then has no frame rate for the stream."""
    at = data.find(b"stts")
    entries = struct.unpack(">I", data[at + 8:at + 12])[0]
    for k in range(entries):
        data[at + 12 + 8 * k + 4:at + 12 + 8 * k + 8] = bytes(4)
    return data


def test_approximate_mode_without_a_frame_rate_is_a_clear_error(media, tmp_path):
    path = tmp_path / "no_rate.mp4"
    path.write_bytes(_zero_stts_deltas(bytearray(media["h264_25fps_2s.mp4"].read_bytes())))
    rate = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=r_frame_rate",
                           "-of", "csv=p=0", str(path)], check=True, capture_output=True, text=True).stdout.strip()
    assert rate in ("0/0", "1/0")              # FFmpeg finds no frame rate
    with raises_as((ValueError, RuntimeError), "Cannot use approximate mode.*seek_mode='exact'"):
        VideoDecoder(path, seek_mode="approximate")
    assert len(VideoDecoder(path)) == 50          # exact mode reads the timestamps from the packets


def test_stream_without_a_frame_size_says_so(tmp_path):
    # The video starts 10 s into the file, after FFmpeg's probe (5 s) ends: it has no frame size.
    path = tmp_path / "late_video.ts"
    subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=12",
                    "-itsoffset", "10", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10:duration=1",
                    "-map", "1:v", "-map", "0:a", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "mp2",
                    str(path)], check=True)
    assert (reference.ffprobe_stream(path, 0)["width"], reference.ffprobe_stream(path, 0)["height"]) in ((0, 0), ("0", "0"))
    for mode in ("exact", "approximate"):
        decoder = VideoDecoder(path, seek_mode=mode)
        assert (decoder.metadata.width, decoder.metadata.height) == (0, 0)
        with pytest.raises(RuntimeError, match="has no frame size") as info:
            decoder.get_frame_at(0)
        assert "output memory" not in str(info.value)
