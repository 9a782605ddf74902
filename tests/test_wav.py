"""WavDecoder: the same samples and metadata as AudioDecoder (and so as the ffmpeg CLI), read
without FFmpeg's demuxer; WAV variants (RF64, extensible, odd chunks) and hostile headers."""
from __future__ import annotations

import io
import struct
import subprocess

import numpy as np
import pytest

import reference as ref
from torchcodec.decoders import AudioDecoder, UnsupportedWavError, WavDecoder
from test_media_corpus import AUDIO

WAVS = sorted(name for name in AUDIO if name.endswith(".wav"))


@pytest.mark.parametrize("name", WAVS)
def test_same_samples_and_metadata_as_audio_decoder(media, name):
    path = media[name]
    wav, audio = WavDecoder(path), AudioDecoder(path)
    assert wav.metadata == audio.metadata
    assert wav.stream_index == 0
    samples = wav.get_all_samples()
    np.testing.assert_array_equal(samples.data, ref.ffmpeg_audio_samples(path))
    assert (samples.pts_seconds, samples.sample_rate) == (0.0, audio.metadata.sample_rate)
    for start, stop in [(0.25, 0.5), (0.0, 0.001), (0.9, None), (0.5, 0.5), (-3.0, 0.1), (0.3, 50.0)]:
        got, expected = wav.get_samples_played_in_range(start, stop), audio.get_samples_played_in_range(start, stop)
        np.testing.assert_array_equal(got.data, expected.data)
        assert got.data.flags.c_contiguous
        assert (got.pts_seconds, got.duration_seconds) == (expected.pts_seconds, expected.duration_seconds)
    with pytest.raises(RuntimeError, match="No samples to decode"):
        wav.get_samples_played_in_range(100.0, 101.0)


def test_every_source_kind(media):
    path = media["wav_s24_5.1_48000.wav"]
    expected = WavDecoder(path).get_samples_played_in_range(0.1, 0.6).data
    raw = path.read_bytes()
    for source in [str(path), raw, np.frombuffer(raw, np.uint8), io.BytesIO(raw), open(path, "rb")]:
        np.testing.assert_array_equal(WavDecoder(source).get_samples_played_in_range(0.1, 0.6).data, expected)


def _ffmpeg_wav(tmp_path, name, *args):
    out = tmp_path / name
    subprocess.run([ref.FFMPEG, "-v", "error", "-y", "-f", "lavfi", "-i",
                    "aevalsrc=exprs='0.4*sin(2*PI*440*t)|0.3*sin(2*PI*660*t)':s=22050:d=0.5", *args, str(out)],
                   check=True)
    return out


def test_rf64_and_extra_chunks(tmp_path):
    rf64 = _ffmpeg_wav(tmp_path, "rf64.wav", "-c:a", "pcm_s16le", "-rf64", "always")
    assert rf64.read_bytes()[:4] == b"RF64"
    listed = _ffmpeg_wav(tmp_path, "list.wav", "-c:a", "pcm_f32le", "-metadata", "title=a LIST chunk")
    for path in [rf64, listed]:
        np.testing.assert_array_equal(WavDecoder(path).get_all_samples().data, ref.ffmpeg_audio_samples(path))


def test_unsupported_encodings_point_to_audio_decoder(tmp_path):
    mulaw = _ffmpeg_wav(tmp_path, "mulaw.wav", "-c:a", "pcm_mulaw")
    with pytest.raises(UnsupportedWavError, match="use AudioDecoder"):
        WavDecoder(mulaw)
    assert AudioDecoder(mulaw).get_all_samples().data.shape == (2, 11025)
    with pytest.raises(ValueError, match="not a WAV file"):
        WavDecoder(ref.FFMPEG and (tmp_path / "mulaw.wav").read_bytes()[4:])


def _wav_bytes(*, channels=2, rate=8000, bits=16, tag=1, block_align=None, data_size=None, frames=100,
               fmt_size=16):
    block_align = channels * bits // 8 if block_align is None else block_align
    payload = bytes(range(256)) * (frames * max(block_align, 1) // 256 + 1)
    payload = payload[:frames * max(block_align, 0)]
    fmt = struct.pack("<HHIIHH", tag, channels, rate, rate * max(block_align, 0), block_align, bits)
    fmt += b"\0" * (fmt_size - 16)
    size = len(payload) if data_size is None else data_size
    body = b"WAVE" + b"fmt " + struct.pack("<I", fmt_size) + fmt + b"data" + struct.pack("<I", size) + payload
    return b"RIFF" + struct.pack("<I", len(body)) + body


def test_hand_made_header_decodes_to_hand_computed_values():
    raw = _wav_bytes(channels=2, bits=16, frames=4)
    samples = WavDecoder(raw).get_all_samples().data
    ints = np.frombuffer(raw[44:], "<i2").reshape(4, 2).T
    np.testing.assert_array_equal(samples, ints.astype(np.float32) / 32768)


@pytest.mark.parametrize("raw,message", [
    (b"RIFF\x10\0\0\0WAVEfmt ", "header ends early"),
    (b"OggS" + b"\0" * 60, "not a WAV file"),
    (_wav_bytes(channels=0), "0 channels"),
    (_wav_bytes(rate=0), "0 Hz"),
    (_wav_bytes(block_align=3), "block align"),
    (_wav_bytes(bits=12), "12 bits"),
    (_wav_bytes(tag=2), "format tag 2"),
    (_wav_bytes(fmt_size=16)[:36] + b"LIST\xff\xff\xff\x7f", "runs past the end"),
])
def test_hostile_headers_raise_clear_errors(raw, message):
    with pytest.raises(ValueError, match=message):
        WavDecoder(raw)


def test_data_size_larger_than_the_file_is_clamped():
    raw = _wav_bytes(frames=50, data_size=0x7FFFFFF0)
    decoder = WavDecoder(raw)
    assert decoder.get_all_samples().data.shape == (2, 50)
    assert decoder.metadata.duration_seconds == 50 / 8000


@pytest.mark.parametrize("fraction", [0.3, 0.77])
def test_truncated_file_gives_the_samples_before_the_cut(media, fraction):
    raw = media["wav_s16_stereo_44100.wav"].read_bytes()
    cut = raw[:int(len(raw) * fraction)]
    samples = WavDecoder(cut).get_all_samples().data
    whole = WavDecoder(raw).get_all_samples().data
    assert samples.shape[1] == (len(cut) - 44) // 4
    np.testing.assert_array_equal(samples, whole[:, :samples.shape[1]])
