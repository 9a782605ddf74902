"""Encoders (torchcodec.encoders) against independent references: the ffmpeg/ffprobe CLI of the same
FFmpeg build, and values computed here.

- Lossless settings reproduce exactly what the CLI computes: libx264 crf 0 yuv444p stores the
  CLI's own RGB->YUV conversion of the input (``ffmpeg -pix_fmt yuv444p``), ffv1/libx264rgb in
  gbrp/rgb24, wav and flac give back the input.
- Lossy settings decode (CLI and our decoders) to the same frames as the CLI's encoding of the same
  RGB with the same settings, and reach the stated PSNR/SNR against the input.
- ffprobe shows the parameters asked for (codec, pix_fmt, frame rate, colour matrix and range,
  sample rate, channels, bit rate).
"""
from __future__ import annotations

import gc
import io
import math
import os
import threading

from fractions import Fraction

import numpy as np
import pytest
import reference

import torchcodec
from torchcodec.decoders import AudioDecoder, VideoDecoder
from torchcodec.encoders import AudioEncoder, Encoder, VideoEncoder

WIDTH, HEIGHT, COUNT = 160, 120, 12
# Matroska and WebM files carry a random segment id unless written "bitexact" (a container option).
BITEXACT = {"fflags": "+bitexact"}
# libx264's macroblock-tree rate control (on by default) reads memory it has not written: within a
# long-lived process its output varies slightly with what the heap held before (the CLI, a fresh
# process, is repeatable). Tests that compare two libx264 encodes byte for byte turn it off.
NO_MBTREE = {"x264-params": "mbtree=0"}
REPEATABLE = {**BITEXACT, **NO_MBTREE}


# ---- inputs and references ----------------------------------------------------------------------

def cli_frames(width: int = WIDTH, height: int = HEIGHT, count: int = COUNT) -> np.ndarray:
    """(N, 3, H, W) uint8 RGB frames drawn by the CLI's testsrc2 (at an even size, then cropped)."""
    even_w, even_h = width + width % 2, height + height % 2
    raw = reference._run([reference.FFMPEG, "-v", "error", "-f", "lavfi", "-i", f"testsrc2=s={even_w}x{even_h}:r=30",
                          "-frames:v", str(count), "-pix_fmt", "rgb24", "-f", "rawvideo", "-"])
    rgb = np.frombuffer(raw, np.uint8).reshape(count, even_h, even_w, 3)[:, :height, :width]
    return rgb.transpose(0, 3, 1, 2).copy()


def cli_encode(frames: np.ndarray, path, *args: str, frame_rate: str = "30") -> None:
    """The CLI's encoding of the same RGB frames (raw rgb24 on stdin) with ``args``."""
    raw = np.ascontiguousarray(frames.transpose(0, 2, 3, 1)).tobytes()
    import subprocess
    subprocess.run([reference.FFMPEG, "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24",
                    "-s", f"{frames.shape[3]}x{frames.shape[2]}", "-r", frame_rate, "-i", "-", *args, str(path)],
                   input=raw, check=True, capture_output=True)


def cli_yuv(frames: np.ndarray, pix_fmt: str, *vf: str) -> bytes:
    """The CLI's conversion of RGB frames to ``pix_fmt`` (raw planes)."""
    import subprocess
    raw = np.ascontiguousarray(frames.transpose(0, 2, 3, 1)).tobytes()
    args = ["-vf", ",".join(vf)] if vf else []
    return subprocess.run([reference.FFMPEG, "-v", "error", "-f", "rawvideo", "-pix_fmt", "rgb24",
                           "-s", f"{frames.shape[3]}x{frames.shape[2]}", "-i", "-", *args, "-pix_fmt", pix_fmt,
                           "-f", "rawvideo", "-"], input=raw, check=True, capture_output=True).stdout


def as_nchw(rgb: np.ndarray) -> np.ndarray:
    return rgb.transpose(0, 3, 1, 2)


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(np.mean((a.astype(np.float64) - b.astype(np.float64)) ** 2))
    return math.inf if mse == 0 else 10 * math.log10(255 ** 2 / mse)


def snr(signal: np.ndarray, noisy: np.ndarray) -> float:
    noise = float(np.mean((signal.astype(np.float64) - noisy.astype(np.float64)) ** 2))
    return math.inf if noise == 0 else 10 * math.log10(float(np.mean(signal.astype(np.float64) ** 2)) / noise)


def tone(seconds: float = 1.0, rate: int = 44_100, channels: int = 2, quantum: float | None = None) -> np.ndarray:
    """(channels, samples) float32 sines; ``quantum``: values rounded to multiples of it."""
    t = np.arange(int(seconds * rate)) / rate
    rows = [0.5 * np.sin(2 * np.pi * (440 + 220 * c) * t + c) for c in range(channels)]
    data = np.stack(rows)
    if quantum is not None:
        data = np.round(data / quantum) * quantum
    return data.astype(np.float32)


@pytest.fixture(scope="module")
def frames() -> np.ndarray:
    return cli_frames()


# ---- video: lossless and exact -------------------------------------------------------------------

def test_x264_crf0_yuv444p_stores_the_clis_yuv_conversion(frames, tmp_path):
    path = tmp_path / "out.mp4"
    VideoEncoder(frames, frame_rate=30).to_file(path, pixel_format="yuv444p", crf=0)
    assert reference.ffmpeg_raw_video(path) == cli_yuv(frames, "yuv444p")


@pytest.mark.parametrize("layout", ["planar", "packed", "gathered"])
def test_large_frames_converted_while_the_previous_one_encodes_are_exact(tmp_path, layout):
    # Frames of 320x240 and more are converted on a helper thread while the codec encodes the one before.
    frames = cli_frames(320, 240, 8)
    given = {"planar": frames, "packed": np.ascontiguousarray(frames.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2),
             "gathered": np.repeat(frames, 2, axis=3)[:, :, :, ::2]}[layout]
    path = tmp_path / "out.mkv"
    VideoEncoder(given, frame_rate=30).to_file(path, pixel_format="yuv444p", crf=0)
    assert reference.ffmpeg_raw_video(path) == cli_yuv(frames, "yuv444p")


def test_x264_crf0_yuv420p_stores_the_clis_yuv_conversion(frames, tmp_path):
    path = tmp_path / "out.mkv"
    VideoEncoder(frames, frame_rate=30).to_file(path, pixel_format="yuv420p", crf=0)
    assert reference.ffmpeg_raw_video(path) == cli_yuv(frames, "yuv420p")


@pytest.mark.parametrize("codec,pixel_format", [("ffv1", "bgr0"), ("libx264rgb", "rgb24")])
def test_rgb_lossless_codecs_give_back_the_input_exactly(frames, tmp_path, codec, pixel_format):
    path = tmp_path / "out.mkv"
    VideoEncoder(frames, frame_rate=30).to_file(path, codec=codec, pixel_format=pixel_format, crf=0
                                                if codec == "libx264rgb" else None)
    np.testing.assert_array_equal(as_nchw(reference.ffmpeg_rgb_frames(path)), frames)
    np.testing.assert_array_equal(VideoDecoder(str(path)).get_frames_in_range(0, COUNT).data, frames)


def test_colour_options_convert_with_that_matrix_and_range(frames, tmp_path):
    path = tmp_path / "out.mp4"
    VideoEncoder(frames, frame_rate=30).to_file(path, pixel_format="yuv444p", crf=0,
                                                extra_options={"colorspace": "bt709", "color_range": "pc"})
    stream = reference.ffprobe_stream(path, 0)
    assert (stream["color_space"], stream["color_range"]) == ("bt709", "pc")
    assert reference.ffmpeg_raw_video(path) == cli_yuv(frames, "yuv444p", "scale=out_color_matrix=bt709:out_range=pc")


def test_default_stream_carries_bt601_limited_range(frames, tmp_path):
    path = tmp_path / "out.mp4"
    VideoEncoder(frames, frame_rate=30).to_file(path)
    stream = reference.ffprobe_stream(path, 0)
    assert (stream["codec_name"], stream["pix_fmt"]) == ("h264", "yuv420p")
    assert (stream["color_space"], stream["color_range"]) == ("bt470bg", "tv")
    assert stream["r_frame_rate"] == 30 and stream["nb_frames"] == COUNT
    assert (stream["width"], stream["height"]) == (WIDTH, HEIGHT)


# ---- video: lossy, against the CLI's encoding -----------------------------------------------------

@pytest.mark.parametrize("kwargs,cli_args", [
    (dict(extra_options=NO_MBTREE), ["-c:v", "libx264", "-x264-params", "mbtree=0"]),
    (dict(crf=30, preset="ultrafast"), ["-c:v", "libx264", "-crf", "30", "-preset", "ultrafast"]),
    (dict(extra_options={"tune": "film", "g": 5, **NO_MBTREE}),
     ["-c:v", "libx264", "-tune", "film", "-g", "5", "-x264-params", "mbtree=0"]),
])
def test_h264_decodes_to_the_clis_encoding_with_the_same_settings(frames, tmp_path, kwargs, cli_args):
    ours, theirs = tmp_path / "ours.mp4", tmp_path / "cli.mp4"
    VideoEncoder(frames, frame_rate=30).to_file(ours, **kwargs)
    cli_encode(frames, theirs, *cli_args, "-pix_fmt", "yuv420p")
    decoded = reference.ffmpeg_rgb_frames(ours)
    np.testing.assert_array_equal(decoded, reference.ffmpeg_rgb_frames(theirs))
    np.testing.assert_array_equal(VideoDecoder(str(ours)).get_frames_in_range(0, COUNT).data, as_nchw(decoded))
    assert psnr(as_nchw(decoded), frames) > 30


# PSNR floors under the measured values (vp9 33.9, mpeg4 32.9, h264 31.4 dB; libx264's mbtree makes
# its output vary slightly within a process, see NO_MBTREE).
@pytest.mark.parametrize("container,codec,min_psnr", [("webm", "vp9", 33), ("avi", "mpeg4", 32), ("mov", "h264", 30.5),
                                                      ("mkv", "h264", 30.5)])
def test_container_default_codecs_reach_a_psnr(frames, tmp_path, container, codec, min_psnr):
    path = tmp_path / f"out.{container}"
    VideoEncoder(frames, frame_rate=30).to_file(path)
    assert reference.ffprobe_stream(path, 0)["codec_name"] == codec
    decoded = as_nchw(reference.ffmpeg_rgb_frames(path))
    assert decoded.shape == frames.shape
    assert psnr(decoded, frames) > min_psnr


@pytest.mark.parametrize("codec,expected", [("h264", "h264"), ("libx264", "h264"), ("hevc", "hevc"),
                                            ("libx265", "hevc"), ("mpeg4", "mpeg4")])
def test_codec_names_and_encoder_names_choose_the_codec(frames, tmp_path, codec, expected):
    path = tmp_path / "out.mkv"
    VideoEncoder(frames[:3], frame_rate=30).to_file(path, codec=codec)
    assert reference.ffprobe_stream(path, 0)["codec_name"] == expected


@pytest.mark.parametrize("container,codec,options,min_psnr", [       # measured PSNR: 30.9, 34.7, 34.7 dB
    ("mp4", "libsvtav1", dict(crf=35, preset=12), 30),
    ("mkv", "libaom-av1", dict(crf=35, extra_options={"cpu-used": 8}), 34),
    ("webm", "av1", dict(crf=35, extra_options={"cpu-used": 8}), 34),
])
def test_av1_encoders_round_trip(frames, tmp_path, container, codec, options, min_psnr):
    path = tmp_path / f"out.{container}"
    VideoEncoder(frames, frame_rate=30).to_file(path, codec=codec, **options)
    stream = reference.ffprobe_stream(path, 0)
    assert (stream["codec_name"], stream["pix_fmt"]) == ("av1", "yuv420p")
    assert Fraction(stream["avg_frame_rate"]) == 30
    decoded = reference.ffmpeg_rgb_frames(path)
    assert decoded.shape == (COUNT, HEIGHT, WIDTH, 3)
    assert psnr(as_nchw(decoded), frames) > min_psnr
    np.testing.assert_array_equal(VideoDecoder(str(path)).get_frames_in_range(0, COUNT).data, as_nchw(decoded))


def test_gif_decodes_to_the_clis_encoding_of_the_same_frames(tmp_path):
    frames = cli_frames(64, 48, 4)
    ours, theirs = tmp_path / "ours.gif", tmp_path / "cli.gif"
    VideoEncoder(frames, frame_rate=10).to_file(ours)
    cli_encode(frames, theirs, frame_rate="10")
    assert reference.ffprobe_stream(ours, 0)["codec_name"] == "gif"
    decoded = reference.ffmpeg_rgb_frames(ours)
    assert decoded.shape == (4, 48, 64, 3)
    np.testing.assert_array_equal(decoded, reference.ffmpeg_rgb_frames(theirs))
    assert [f["pts_seconds"] for f in reference.ffprobe_frames(ours, 0)] == [0.0, 0.1, 0.2, 0.3]


def test_frame_timestamps_follow_the_frame_rate(frames, tmp_path):
    path = tmp_path / "out.mkv"
    VideoEncoder(frames, frame_rate=29.97).to_file(path, pixel_format="yuv444p", crf=0)
    stream = reference.ffprobe_stream(path, 0)
    assert stream["r_frame_rate"] == Fraction(2997, 100)
    pts = [f["pts_seconds"] for f in reference.ffprobe_frames(path, 0)]
    # Matroska stores milliseconds: frame n at n * 100 / 2997 s, rounded to the nearest millisecond
    np.testing.assert_allclose(pts, [round(n * 100_000 / 2997) / 1000 for n in range(COUNT)], rtol=0, atol=1e-9)


def test_odd_size_with_yuv444p(tmp_path):
    frames = cli_frames(33, 17, 3)
    path = tmp_path / "out.mp4"
    VideoEncoder(frames, frame_rate=30).to_file(path, pixel_format="yuv444p", crf=0)
    assert reference.ffmpeg_raw_video(path) == cli_yuv(frames, "yuv444p")


# ---- video: layouts, destinations, streaming ----------------------------------------------------

def encoded(frames, **kwargs) -> bytes:
    return bytes(VideoEncoder(frames, frame_rate=30).to_tensor("mp4", pixel_format="yuv444p", crf=0, **kwargs))


def test_memory_layout_does_not_change_the_bytes(frames):
    expected = encoded(frames)
    channels_last = np.ascontiguousarray(frames.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
    assert encoded(channels_last) == expected
    padded = np.zeros((COUNT, 3, HEIGHT + 3, WIDTH + 5), np.uint8)
    padded[:, :, 1:-2, 2:-3] = frames
    assert encoded(padded[:, :, 1:-2, 2:-3]) == expected                # row strides wider than the rows
    planes_reversed = np.ascontiguousarray(frames[:, ::-1])[:, ::-1]     # negative channel stride
    assert encoded(planes_reversed) == expected
    columns_flipped = np.ascontiguousarray(frames[:, :, :, ::-1])[:, :, :, ::-1]   # negative column stride
    assert encoded(columns_flipped) == expected
    doubled = np.repeat(frames, 2, axis=3)[:, :, :, ::2]                 # every other column
    assert encoded(doubled) == expected


def test_read_only_and_foreign_arrays_are_read_in_place(frames):
    expected = encoded(frames)
    read_only = frames.copy()
    read_only.flags.writeable = False
    assert encoded(read_only) == expected
    torch = pytest.importorskip("torch")
    assert encoded(torch.from_numpy(frames)) == expected
    assert encoded(torch.from_numpy(np.ascontiguousarray(frames.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2)) == expected


def test_small_calls_give_the_same_file_as_one_call(frames):
    one = io.BytesIO()
    encoder = Encoder()
    video = encoder.add_video(height=HEIGHT, width=WIDTH, frame_rate=30, extra_options=REPEATABLE)
    with encoder.open_file_like(one, format="mkv"):
        video.add_frames(frames)
    many = io.BytesIO()
    encoder = Encoder()
    video = encoder.add_video(height=HEIGHT, width=WIDTH, frame_rate=30, extra_options=REPEATABLE)
    with encoder.open_file_like(many, format="mkv"):
        for i in range(COUNT):
            video.add_frames(frames[i:i + 1])
        video.add_frames(frames[:0])
    assert many.getvalue() == one.getvalue()


@pytest.mark.parametrize("container", ["mp4", "mkv", "mov", "avi", "webm"])
def test_file_file_object_and_tensor_give_the_same_bytes(frames, tmp_path, container):
    encoder = VideoEncoder(frames[:4], frame_rate=30)
    options = REPEATABLE if container in ("mp4", "mkv", "mov") else BITEXACT
    encoder.to_file(tmp_path / f"out.{container}", extra_options=options)
    file_object = io.BytesIO()
    encoder.to_file_like(file_object, container, extra_options=options)
    data = encoder.to_tensor(container, extra_options=options)
    assert isinstance(data, np.ndarray) and data.dtype == np.uint8 and data.ndim == 1
    assert (tmp_path / f"out.{container}").read_bytes() == file_object.getvalue() == data.tobytes()


def test_to_tensor_follows_the_bridge(frames):
    torch = pytest.importorskip("torch")
    with torchcodec.bridge("torch"):
        data = VideoEncoder(frames[:2], frame_rate=30).to_tensor("mp4", extra_options=NO_MBTREE)
    assert isinstance(data, torch.Tensor) and data.dtype == torch.uint8 and data.dim() == 1
    expected = VideoEncoder(frames[:2], frame_rate=30).to_tensor("mp4", extra_options=NO_MBTREE)
    assert bytes(data.numpy()) == bytes(expected)


def test_format_names_include_extensions(frames):
    assert bytes(VideoEncoder(frames[:2], frame_rate=30).to_tensor("mkv", extra_options=REPEATABLE)) == \
        bytes(VideoEncoder(frames[:2], frame_rate=30).to_tensor("matroska", extra_options=REPEATABLE))


def test_file_objects_get_only_write_and_seek(frames):
    class Strict:
        def __init__(self):
            self.buffer = io.BytesIO()

        def write(self, data):
            assert isinstance(data, bytes)
            return self.buffer.write(data)

        def seek(self, offset, whence=0):
            return self.buffer.seek(offset, whence)

        def __getattr__(self, name):
            raise AssertionError(f"the encoder used {name}")

    target = Strict()
    VideoEncoder(frames[:3], frame_rate=30).to_file_like(target, "mp4", extra_options=NO_MBTREE)
    assert target.buffer.getvalue() == bytes(VideoEncoder(frames[:3], frame_rate=30).to_tensor(
        "mp4", extra_options=NO_MBTREE))


def test_a_file_objects_exception_is_reraised(frames):
    class Full(io.BytesIO):
        def write(self, data):
            raise OSError(28, "No space left on device")

    with pytest.raises(OSError, match="No space left"):
        VideoEncoder(frames[:3], frame_rate=30).to_file_like(Full(), "mkv")


def test_fragmented_mp4_is_readable_before_close(frames, tmp_path):
    target = io.BytesIO()
    encoder = Encoder()
    video = encoder.add_video(height=HEIGHT, width=WIDTH, frame_rate=30, pixel_format="yuv444p", crf=0,
                              extra_options={"movflags": "+frag_every_frame+empty_moov", "tune": "zerolatency"})
    encoder.open_file_like(target, format="mp4")
    video.add_frames(frames[:6])
    early_bytes = target.getvalue()
    early = VideoDecoder(early_bytes)
    n = len(early)
    assert 1 <= n <= 6
    path = tmp_path / "early.mp4"
    path.write_bytes(early_bytes)
    # The fragments written so far hold the first n input frames losslessly (the CLI's own
    # RGB -> yuv444p conversion of them), and we decode them as the CLI decodes the same bytes.
    assert reference.ffmpeg_raw_video(path) == cli_yuv(frames[:n], "yuv444p")
    np.testing.assert_array_equal(early.get_frames_in_range(0, n).data, as_nchw(reference.ffmpeg_rgb_frames(path)))
    video.add_frames(frames[6:])
    encoder.close()
    assert len(VideoDecoder(target.getvalue())) == COUNT


# ---- audio ---------------------------------------------------------------------------------------

def test_wav_gives_back_16_bit_samples_exactly(tmp_path):
    samples = tone(quantum=1 / 32768)
    path = tmp_path / "out.wav"
    AudioEncoder(samples, sample_rate=44_100).to_file(path)
    np.testing.assert_array_equal(reference.ffmpeg_audio_samples(path), samples)
    np.testing.assert_array_equal(AudioDecoder(str(path)).get_all_samples().data, samples)
    stream = reference.ffprobe_stream(path, 0)
    assert (stream["codec_name"], stream["sample_rate"], stream["channels"]) == ("pcm_s16le", 44_100, 2)


def test_flac_gives_back_the_samples_exactly(tmp_path):
    samples = tone(quantum=2.0 ** -23)
    path = tmp_path / "out.flac"
    AudioEncoder(samples, sample_rate=44_100).to_file(path)
    np.testing.assert_array_equal(reference.ffmpeg_audio_samples(path), samples)
    assert reference.ffprobe_stream(path, 0)["codec_name"] == "flac"


def cli_encode_audio(samples: np.ndarray, rate: int, path, *args: str) -> None:
    import subprocess
    subprocess.run([reference.FFMPEG, "-v", "error", "-y", "-f", "f32le", "-ar", str(rate), "-ac",
                    str(samples.shape[0]), "-i", "-", *args, str(path)],
                   input=np.ascontiguousarray(samples.T).tobytes(), check=True, capture_output=True)


@pytest.mark.parametrize("ext,kwargs,cli_args", [
    ("mp3", dict(), []),
    ("mp3", dict(bit_rate=64_000, num_channels=1), ["-b:a", "64000", "-ac", "1"]),
    ("flac", dict(sample_rate=16_000), ["-ar", "16000"]),
    ("m4a", dict(), []),
    ("ogg", dict(), []),
    ("opus", dict(sample_rate=48_000), ["-ar", "48000"]),
])
def test_audio_decodes_to_the_clis_encoding_with_the_same_settings(tmp_path, ext, kwargs, cli_args):
    samples = tone()
    ours, theirs = tmp_path / f"ours.{ext}", tmp_path / f"cli.{ext}"
    AudioEncoder(samples, sample_rate=44_100).to_file(ours, **kwargs)
    cli_encode_audio(samples, 44_100, theirs, *cli_args)
    ours_decoded, cli_decoded = reference.ffmpeg_audio_samples(ours), reference.ffmpeg_audio_samples(theirs)
    np.testing.assert_array_equal(ours_decoded, cli_decoded)
    for key in ("codec_name", "sample_rate", "channels", "sample_fmt"):
        assert reference.ffprobe_stream(ours, 0)[key] == reference.ffprobe_stream(theirs, 0)[key]


# The SNR floors sit about 1 dB under the measured values (mp3 26.0, m4a 19.5, ogg 39.2, opus 42.7 dB):
# a default bit rate or channel mapping gone wrong costs more. The decoded length is the CLI's, and
# differs from the input's by the codec's framing (m4a +128: 47 AAC frames of 1024; ogg -128).
@pytest.mark.parametrize("ext,min_snr", [("mp3", 25), ("m4a", 18.5), ("ogg", 38), ("opus", 41.5)])
def test_lossy_audio_reaches_an_snr(tmp_path, ext, min_snr):
    rate = 48_000
    samples = tone(rate=rate)
    path = tmp_path / f"out.{ext}"
    AudioEncoder(samples, sample_rate=rate).to_file(path)
    decoded = AudioDecoder(str(path)).get_all_samples().data
    assert decoded.shape == reference.ffmpeg_audio_samples(path).shape
    assert decoded.shape[0] == 2 and abs(decoded.shape[1] - samples.shape[1]) <= 128
    n = min(decoded.shape[1], samples.shape[1])
    assert snr(samples[:, 1000:n - 1000], decoded[:, 1000:n - 1000]) > min_snr


def test_mp3_bit_rate_is_the_one_asked(tmp_path):
    path = tmp_path / "out.mp3"
    AudioEncoder(tone(seconds=2), sample_rate=44_100).to_file(path, bit_rate=96_000)
    assert reference.ffprobe_stream(path, 0)["bit_rate"] == 96_000


def test_audio_layouts_and_one_dimensional_input(tmp_path):
    samples = tone(quantum=1 / 32768)
    expected = bytes(AudioEncoder(samples, sample_rate=44_100).to_tensor("wav"))
    interleaved = np.ascontiguousarray(samples.T).T
    assert bytes(AudioEncoder(interleaved, sample_rate=44_100).to_tensor("wav")) == expected
    mono = samples[0]
    assert bytes(AudioEncoder(mono, sample_rate=44_100).to_tensor("wav")) == \
        bytes(AudioEncoder(samples[:1], sample_rate=44_100).to_tensor("wav"))


@pytest.mark.parametrize("ext", ["mp3", "flac", "wav", "m4a"])
def test_samples_in_small_chunks_give_the_same_file_as_one_call(ext):
    samples = tone(seconds=0.5)
    one, many = io.BytesIO(), io.BytesIO()
    for target, chunks in ((one, [samples.shape[1]]), (many, [1, 50, 1000, 0, 25, 4097, 7000])):
        encoder = Encoder()
        audio = encoder.add_audio(sample_rate=44_100, num_channels=2)
        with encoder.open_file_like(target, format=ext):
            position = 0
            for size in chunks:
                audio.add_samples(samples[:, position:position + size])
                position += size
            audio.add_samples(samples[:, position:])
    assert many.getvalue() == one.getvalue()


def test_remixing_and_resampling_match_the_cli(tmp_path):
    samples = tone(channels=1)
    ours, theirs = tmp_path / "ours.wav", tmp_path / "cli.wav"
    AudioEncoder(samples, sample_rate=44_100).to_file(ours, num_channels=2, sample_rate=22_050)
    cli_encode_audio(samples, 44_100, theirs, "-ac", "2", "-ar", "22050")
    np.testing.assert_array_equal(reference.ffmpeg_audio_samples(ours), reference.ffmpeg_audio_samples(theirs))


# ---- several streams -----------------------------------------------------------------------------

def two_streams(target, frames, samples, video_chunk, audio_chunk) -> None:
    encoder = Encoder()
    audio = encoder.add_audio(sample_rate=44_100, num_channels=2)       # added first, stream 1 all the same
    video = encoder.add_video(height=HEIGHT, width=WIDTH, frame_rate=30, pixel_format="yuv444p", crf=0,
                              extra_options=BITEXACT)
    with encoder.open_file_like(target, format="mkv"):
        for i in range(0, COUNT, video_chunk):
            video.add_frames(frames[i:i + video_chunk])
            start = i * 1470
            for j in range(start, start + 1470 * video_chunk, audio_chunk):
                audio.add_samples(samples[:, j:min(j + audio_chunk, start + 1470 * video_chunk)])


def test_video_and_audio_in_small_calls_equal_one_shot(frames):
    samples = tone(seconds=COUNT / 30, quantum=2.0 ** -15)
    one, many = io.BytesIO(), io.BytesIO()
    two_streams(one, frames, samples, COUNT, COUNT * 1470)
    two_streams(many, frames, samples, 1, 333)
    assert many.getvalue() == one.getvalue()
    data = one.getvalue()
    video = VideoDecoder(data, stream_index=0)
    assert len(video) == COUNT
    # lossless yuv444p: only the RGB -> YUV -> RGB rounding is lost (measured 52.8 dB); the audio is
    # Matroska's default codec, lossy (measured 38.8 dB)
    assert psnr(video.get_frames_in_range(0, COUNT).data, frames) > 52
    audio = AudioDecoder(data, stream_index=1).get_all_samples()
    assert audio.data.shape[0] == 2 and snr(samples, audio.data[:, :samples.shape[1]]) > 38


def test_memory_stays_flat_over_ten_thousand_frames(tmp_path):
    frames = cli_frames(32, 32, 100)
    encoder = Encoder()
    video = encoder.add_video(height=32, width=32, frame_rate=1000, preset="ultrafast")

    def rss() -> int:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")

    with encoder.open_file(tmp_path / "long.mkv"):
        for _ in range(10):
            video.add_frames(frames)
        gc.collect()
        before = rss()
        for _ in range(90):
            video.add_frames(frames)
        gc.collect()
        grown = rss() - before
    assert len(VideoDecoder(str(tmp_path / "long.mkv"), seek_mode="approximate")) >= 9_000
    assert grown < 16 << 20, f"memory grew by {grown >> 20} MiB over 9,000 frames"


# ---- bad input: a clear error, nothing written ---------------------------------------------------

@pytest.mark.parametrize("kwargs,error", [
    (dict(codec="no_such_codec"), "Video codec no_such_codec not found"),
    (dict(codec="aac"), "aac is not a video codec"),
    (dict(pixel_format="no_such_format"), "Unknown pixel format: no_such_format"),
    (dict(pixel_format="rgb24"), "Specified pixel format rgb24 is not supported"),
    (dict(crf=-10), r"crf=-10 is out of valid range"),
    (dict(crf=-1.5), r"crf=-1.5 is out of valid range"),
    (dict(preset="fastest_please"), "avcodec_open2 failed: Invalid argument"),
    (dict(extra_options={"no_such_option": 1}), "unknown option no_such_option"),
    (dict(extra_options={"qp": ""}), "Option qp expects a numeric value but got"),
    (dict(extra_options={"colorspace": "ycgco"}), "cannot convert RGB to YUV with the colorspace"),
])
def test_bad_settings_raise_before_the_file_exists(frames, tmp_path, kwargs, error):
    path = tmp_path / "out.mp4"
    with pytest.raises(ValueError, match=error):
        VideoEncoder(frames, frame_rate=30).to_file(path, **kwargs)
    assert not path.exists()


def test_a_bad_setting_leaves_an_existing_file_alone(frames, tmp_path):
    path = tmp_path / "out.mp4"
    path.write_bytes(b"precious")
    with pytest.raises(ValueError, match="crf"):
        VideoEncoder(frames, frame_rate=30).to_file(path, crf=-10)
    assert path.read_bytes() == b"precious"


def test_named_constants_are_accepted_for_numeric_options(frames, tmp_path):
    path = tmp_path / "out.mp4"
    VideoEncoder(frames[:2], frame_rate=30).to_file(path, extra_options={"direct-pred": "spatial"})
    assert reference.ffprobe_stream(path, 0)["codec_name"] == "h264"


def test_odd_size_with_420_says_why(tmp_path):
    path = tmp_path / "out.mp4"
    with pytest.raises(ValueError, match="even"):
        VideoEncoder(cli_frames(33, 17, 2), frame_rate=30).to_file(path)
    assert not path.exists()


def test_a_codec_the_container_does_not_take(frames, tmp_path):
    with pytest.raises(ValueError, match="cannot hold"):
        VideoEncoder(frames, frame_rate=30).to_file(tmp_path / "out.webm", codec="h264")
    assert not (tmp_path / "out.webm").exists()


@pytest.mark.parametrize("dest,error,kind", [
    ("no_such_dir/out.mp4", "make sure it's a valid path", FileNotFoundError),
    ("out.no_such_extension", "check the desired extension", ValueError),
])
def test_bad_destinations(frames, tmp_path, dest, error, kind):
    with pytest.raises(kind, match=error) as info:
        VideoEncoder(frames, frame_rate=30).to_file(tmp_path / dest)
    assert isinstance(info.value, RuntimeError)          # as TorchCodec raises


def test_an_unwritable_destination_is_a_permission_error(frames, tmp_path):
    if os.geteuid() == 0:                   # root writes anywhere but into sysfs
        dest = "/sys/torchcodec_out.mp4"
    else:
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        dest = locked / "out.mp4"
    with pytest.raises(PermissionError, match="make sure it's a valid path") as info:
        VideoEncoder(frames, frame_rate=30).to_file(dest)
    assert isinstance(info.value, RuntimeError)


def test_bad_file_objects():
    frames = cli_frames(16, 16, 1)
    with pytest.raises(ValueError, match="must implement a write method"):
        VideoEncoder(frames, frame_rate=30).to_file_like(object(), "mp4")
    with pytest.raises(ValueError, match="binary mode"):
        VideoEncoder(frames, frame_rate=30).to_file_like(io.StringIO(), "mp4")
    with pytest.raises(ValueError, match="Check the desired format"):
        VideoEncoder(frames, frame_rate=30).to_file_like(io.BytesIO(), "no_such_format")
    untouched = io.BytesIO()
    with pytest.raises(ValueError, match="crf"):
        VideoEncoder(frames, frame_rate=30).to_file_like(untouched, "mp4", crf=-5)
    assert untouched.getvalue() == b""


@pytest.mark.parametrize("frames,error", [
    (np.zeros((2, 3, 16, 16), np.float32), "Expected uint8 frames"),
    (np.zeros((3, 16, 16), np.uint8), "Expected 4D frames"),
    ([[1, 2, 3]], "Expected frames to be a Tensor"),
    ("frames", "Expected frames to be a Tensor"),
])
def test_video_encoder_checks_its_frames(frames, error):
    with pytest.raises(ValueError, match=error):
        VideoEncoder(frames, frame_rate=30)


def test_video_stream_checks_each_batch(tmp_path):
    encoder = Encoder()
    video = encoder.add_video(height=16, width=16, frame_rate=30)
    with pytest.raises(RuntimeError, match=r"Call open\(\) before addFrames"):
        video.add_frames(np.zeros((1, 3, 16, 16), np.uint8))
    with encoder.open_file(tmp_path / "out.mkv"):
        for bad, error in [(np.zeros((1, 3, 16, 16), np.float32), "must have uint8 dtype"),
                           (np.zeros((3, 16, 16), np.uint8), "must have 4 dimensions"),
                           (np.zeros((1, 4, 16, 16), np.uint8), "must have 3 channels"),
                           (np.zeros((1, 3, 16, 18), np.uint8), "same dimensions")]:
            with pytest.raises(ValueError, match=error) as info:
                video.add_frames(bad)
            assert isinstance(info.value, RuntimeError)
        video.add_frames(np.zeros((1, 3, 16, 16), np.uint8))
    with pytest.raises(RuntimeError, match=r"Cannot add frames after close\(\)"):
        video.add_frames(np.zeros((1, 3, 16, 16), np.uint8))


@pytest.mark.parametrize("kwargs,error", [
    (dict(sample_rate=0, num_channels=1), "sample_rate must be > 0"),
    (dict(sample_rate=44_100, num_channels=0), "num_channels must be > 0"),
    (dict(sample_rate=44_100, num_channels=9), "Trying to encode 9 channels"),
])
def test_add_audio_checks_its_arguments(kwargs, error):
    with pytest.raises(ValueError, match=error):
        Encoder().add_audio(**kwargs)


@pytest.mark.parametrize("ext,kwargs,error", [
    ("mp3", dict(out_num_channels=3), r"Desired number of channels \(3\) is not supported"),
    ("mp3", dict(out_sample_rate=10), "invalid sample rate=10"),
    ("opus", dict(), "invalid sample rate=44100"),
    ("wav", dict(bit_rate=-1), "bit_rate=-1 must be >= 0"),
    ("gif", dict(), "no default audio codec"),
])
def test_audio_settings_are_checked_at_open(tmp_path, ext, kwargs, error):
    encoder = Encoder()
    encoder.add_audio(sample_rate=44_100, num_channels=1, **kwargs)
    with pytest.raises(ValueError, match=error):
        encoder.open_file(tmp_path / f"out.{ext}")
    assert not (tmp_path / f"out.{ext}").exists()


def test_audio_stream_checks_each_batch(tmp_path):
    encoder = Encoder()
    audio = encoder.add_audio(sample_rate=8000, num_channels=1)
    with encoder.open_file(tmp_path / "out.wav"):
        for bad, error in [(np.zeros((1, 10), np.float64), "must have float32 dtype"),
                           (np.zeros((1, 1, 10), np.float32), "must have 2 dimensions"),
                           (np.zeros(10, np.float32), "must have 2 dimensions"),
                           (np.zeros((2, 10), np.float32), "Expected 1 channels, got 2")]:
            with pytest.raises(ValueError, match=error):
                audio.add_samples(bad)


@pytest.mark.parametrize("samples,error", [
    (np.zeros((2, 2, 2), np.float32), "Expected 1D or 2D samples"),
    (np.zeros((2, 2), np.float64), "Expected float32 samples"),
    (7, "Expected samples to be a Tensor"),
])
def test_audio_encoder_checks_its_samples(samples, error):
    with pytest.raises(ValueError, match=error):
        AudioEncoder(samples, sample_rate=8000)
    with pytest.raises(ValueError, match="sample_rate = 0 must be > 0"):
        AudioEncoder(np.zeros(4, np.float32), sample_rate=0)


def test_encoder_state_errors(tmp_path):
    encoder = Encoder()
    with pytest.raises(RuntimeError, match=r"Call addVideoStream\(\) or addAudioStream\(\) before open\(\)"):
        encoder.open_file(tmp_path / "a.mp4")
    encoder.add_video(height=16, width=16, frame_rate=30)
    encoder.open_file(tmp_path / "a.mp4")
    with pytest.raises(RuntimeError, match=r"open\(\) was already called"):
        encoder.open_file(tmp_path / "b.mp4")
    with pytest.raises(RuntimeError, match="before open_file"):
        encoder.add_audio(sample_rate=8000, num_channels=1)
    encoder.close()
    encoder.close()
    with pytest.raises(RuntimeError, match=r"Cannot open after close\(\)"):
        encoder.open_file(tmp_path / "c.mp4")


def test_a_failed_open_can_be_retried(frames, tmp_path):
    encoder = Encoder()
    video = encoder.add_video(height=HEIGHT, width=WIDTH, frame_rate=30)
    with pytest.raises(FileNotFoundError):
        encoder.open_file(tmp_path / "missing" / "out.mp4")
    with encoder.open_file(tmp_path / "out.mp4"):
        video.add_frames(frames)
    assert reference.ffprobe_stream(tmp_path / "out.mp4", 0)["nb_frames"] == COUNT


def test_an_encoder_dropped_while_open_finishes_its_file(frames, tmp_path):
    encoder = Encoder()
    video = encoder.add_video(height=HEIGHT, width=WIDTH, frame_rate=30)
    encoder.open_file(tmp_path / "out.mp4")
    video.add_frames(frames)
    del encoder, video
    gc.collect()
    assert reference.ffprobe_stream(tmp_path / "out.mp4", 0)["nb_frames"] == COUNT


@pytest.mark.skipif(__import__("torchcodec")._cuda.available(), reason="a usable CUDA driver is present")
@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_cuda_encoding_without_a_driver_is_refused_clearly(device):
    with pytest.raises(RuntimeError, match="NVENC.*no CUDA device/driver"):
        Encoder().add_video(height=16, width=16, frame_rate=30, device=device)


# ---- threads -------------------------------------------------------------------------------------

def test_an_encoder_shared_between_threads_says_so(frames):
    armed, entered, release = threading.Event(), threading.Event(), threading.Event()

    class Slow(io.BytesIO):
        def write(self, data):
            if armed.is_set():                  # a write from inside the worker's add_frames
                entered.set()
                release.wait(10)
            return super().write(data)

    encoder = Encoder()
    video = encoder.add_video(height=HEIGHT, width=WIDTH, frame_rate=30,       # each packet written at once
                              extra_options={"flush_packets": 1})
    encoder.open_file_like(Slow(), format="avi")
    armed.set()
    errors = []
    worker = threading.Thread(target=lambda: video.add_frames(frames))
    worker.start()
    assert entered.wait(10)
    try:
        video.add_frames(frames)
    except RuntimeError as error:
        errors.append(str(error))
    release.set()
    worker.join()
    encoder.close()
    assert errors and "another thread" in errors[0]


def test_encoders_in_threads_give_the_same_bytes(frames):
    expected = encoded(frames)
    results = [None] * 3

    def work(i):
        results[i] = encoded(frames)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == [expected] * 3
