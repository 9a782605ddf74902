"""What fuzzing (tools/fuzz.sh) and the sanitizer build (tools/sanitize.sh) found, kept as tests.

Inputs that made a fuzz target fail live in tests/regressions/, named ``<target>-<what>.<ext>``
after the target of tools/fuzz/targets.py that found them; each has a test here that opens it
through the public API and expects what the fix promises (a clean exception of a documented type,
or frames). tools/sanitize.sh also replays the folder through the fuzz targets under ASan and
UBSan, where findings of undefined behaviour that are silent in a normal build show.
"""
from __future__ import annotations

import io
import pathlib

import numpy as np
import pytest

import reference

import torchcodec
from torchcodec.decoders import AudioDecoder, VideoDecoder, _audio_decoder

REGRESSIONS = pathlib.Path(__file__).resolve().parent / "regressions"


class ReadOnlyRawFile(io.RawIOBase):
    """An io.RawIOBase subclass that implements read() but not readinto(), as users write them."""

    def __init__(self, data: bytes) -> None:
        self._data, self._pos = data, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        end = len(self._data) if size is None or size < 0 else self._pos + size
        chunk = self._data[self._pos:end]
        self._pos += len(chunk)
        return chunk

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._pos = (0, self._pos, len(self._data))[whence] + offset
        return self._pos


def test_raw_io_subclass_with_only_read_is_read_through_read(h264):
    # Found by the video_file target: io.RawIOBase's inherited readinto() raises
    # NotImplementedError, which used to end every decode through such a file object.
    data = h264.read_bytes()
    decoder = VideoDecoder(ReadOnlyRawFile(data))
    assert len(decoder) == 90
    np.testing.assert_array_equal(decoder.get_frames_at([0, 45, 89]).data,
                                  VideoDecoder(data).get_frames_at([0, 45, 89]).data)


def test_mp3_range_after_reading_to_the_end(media):
    # Found by UBSan on the audio target: a seek after the whole stream was read scanned from the
    # end of the file, got an empty frame index and sorted it with qsort(NULL, 0) (undefined in C).
    decoder = AudioDecoder(media["mp3_music_22050_8s.mp3"])
    everything = decoder.get_all_samples()
    part = decoder.get_samples_played_in_range(4.0, 5.0)
    first = round((4.0 - everything.pts_seconds) * everything.sample_rate)
    assert part.data.shape == (1, 22050)
    np.testing.assert_array_equal(part.data, everything.data[:, first:first + 22050])


def test_video_bytes_approximate_mode_without_frame_rate():
    # Found by the video_bytes target (11,491 runs): an H.264 stream whose header gives a frame
    # count but a frame rate of 1/0. Approximate mode places frame i at begin + i / fps, and every
    # request escaped as a TypeError (None in the division); now the decoder refuses to open in
    # that mode, as it does when the header has no frame count. Exact mode needs no rate.
    path = REGRESSIONS / "video_bytes-approximate_mode_without_frame_rate.mp4"
    with pytest.raises(ValueError, match="frame rate"):
        VideoDecoder(path.read_bytes(), seek_mode="approximate")
    decoder = VideoDecoder(path.read_bytes())
    assert decoder.metadata.average_fps_from_header is None
    assert len(decoder) == len(reference.ffprobe_packets(path, 0))      # none: the cut lost them all
    with pytest.raises(IndexError):
        decoder[0]


def test_video_reopen_avi_indexes_what_it_reads(tmp_path):
    # Found by the video_reopen target (in CI, 22 runs in): a damaged AVI whose frame 2, read after
    # the exact-mode scan, came back as a frame at 0.5 s, and read again with the index from the
    # cache (no scan) ended the stream instead. The AVI demuxer indexes the packets it reads and
    # seeks by that index, so a seek depends on what was read before it. Now a decoder reads from
    # a demuxer that has read nothing, whether its index came from a scan or the cache, and formats
    # without a probe state to open one from (AVI among them) are not cached.
    data = (REGRESSIONS / "video_reopen-avi_indexes_what_it_reads.avi").read_bytes()

    def frames():
        decoder = VideoDecoder(data)
        got = decoder.get_frames_at([0, 2])
        return len(decoder), got.data.tobytes(), got.pts_seconds.tolist()

    saved = torchcodec.get_index_cache()
    try:
        torchcodec.set_index_cache(False)
        reference = frames()
        torchcodec.set_index_cache(True, directory=tmp_path)
        assert frames() == reference and frames() == reference
    finally:
        torchcodec.set_index_cache(saved.enabled, directory=saved.directory, max_bytes=saved.max_bytes)
    assert reference[0] == 3 and not any(tmp_path.iterdir())


@pytest.fixture
def memory_limit():
    """Set a memory limit for one test; the default comes back afterwards."""
    yield torchcodec.set_memory_limit
    torchcodec.set_memory_limit(None)


def test_audio_header_claims_days(memory_limit):
    # Found by the audio target: a 205-byte mu-law WAV whose data chunk claims 4 GB (149 hours at
    # 8 kHz). get_all_samples() sized its output from that claim (16 GiB of float32), which the
    # memory limit refused and which, without a limit, reserved gigabytes for 147 samples. The
    # first allocation now believes the header only as far as the source's size allows; the
    # output grows from what is decoded.
    path = REGRESSIONS / "audio-header_claims_days.wav"
    memory_limit(16 << 20)
    decoder = AudioDecoder(path.read_bytes())
    assert decoder.metadata.duration_seconds > 100 * 3600
    expected = reference.ffmpeg_audio_samples(path)
    samples = decoder.get_all_samples()
    assert samples.data.shape == expected.shape
    np.testing.assert_array_equal(samples.data, expected)


def test_audio_output_grows_past_a_header_it_does_not_believe(media, monkeypatch, memory_limit):
    # The other side of the bound above: when a real stream holds more than the first allocation
    # (a very compressible stream, bounds made tiny here), the output grows until the end, and the
    # memory limit counts the growing buffer.
    path = media["mp3_stereo_44100.mp3"]
    expected = reference.ffmpeg_audio_samples(path)
    monkeypatch.setattr(_audio_decoder, "FIRST_BLOCK_BYTES", 4096)
    monkeypatch.setattr(_audio_decoder, "MAX_EXPANSION", 0)
    decoder = AudioDecoder(path)
    samples = decoder.get_all_samples()
    np.testing.assert_array_equal(samples.data, expected)
    part = decoder.get_samples_played_in_range(1.0, 3.0)
    first = round((1.0 - samples.pts_seconds) * 44100)
    np.testing.assert_array_equal(part.data, expected[:, first:first + part.data.shape[1]])
    memory_limit(expected.nbytes)           # the last growth needs the old and the new buffer at once
    with pytest.raises(MemoryError, match="reading samples 0 to the end"):
        decoder.get_all_samples()


def test_audio_history_before_first_growth():
    # Found by UBSan on the audio target (41 bytes of ADPCM DTK, a format whose seeks are not
    # exact): the first range recorded into the decoder's history of decoded samples copied the
    # empty history from a NULL pointer (NULL + 0: undefined in C, silent in a normal build).
    # Ranges behind the run are served from that history: they must be the slices of the whole.
    path = REGRESSIONS / "audio-history_before_first_growth.bin"
    decoder = AudioDecoder(path.read_bytes())
    everything = decoder.get_all_samples()
    expected = reference.ffmpeg_audio_samples(path)
    np.testing.assert_array_equal(everything.data, expected)
    again = decoder.get_samples_played_in_range(0.0, everything.duration_seconds / 2)
    np.testing.assert_array_equal(again.data, expected[:, :again.data.shape[1]])


def test_audio_stream_ends_before_any_frame():
    # Found by the audio target (ASan: SEGV in swr_get_out_samples): an ADTS AAC file whose frame
    # claims 46 channels. Resampling it fails to set up (a ValueError), and the next request found
    # the stream ended with no resampler context and asked the NULL context how much it holds:
    # a segfault of the whole process. Every request now fails with a documented exception.
    data = (REGRESSIONS / "audio-stream_ends_before_any_frame.aac").read_bytes()
    decoder = AudioDecoder(data, sample_rate=8000)
    with pytest.raises(ValueError, match="SwrContext"):
        decoder.get_all_samples()
    for call in (lambda: decoder.get_samples_played_in_range(0.5), decoder.get_all_samples,
                 lambda: decoder.get_samples_played_in_range(0.0, 0.1)):
        with pytest.raises((ValueError, RuntimeError)):
            call()


@pytest.mark.parametrize("mappings", [
    '{"frames": 5}',                                                            # not a list
    '{"frames": [1, 2]}',                                                       # not objects
    '{"frames": [{"pts": null, "duration": 1, "key_frame": 1}]}',               # not integers
    '{"frames": [{"pts": "x", "duration": 1, "key_frame": 1}]}',
    '{"frames": [{"pts": 0, "duration": 1e400, "key_frame": 1}]}',
    '{"frames": [{"pts": 99999999999999999999999, "duration": 1, "key_frame": 1}]}',  # beyond int64
    b'\xff\xfe{"frames": []}',                                                  # not UTF-8
], ids=["frames-int", "frames-of-ints", "null", "string", "infinity", "beyond-int64", "not-utf8"])
def test_malformed_frame_mappings_raise_value_error(h264, mappings):
    # Found while writing the frame_mappings target: JSON of another shape escaped as TypeError,
    # AttributeError or OverflowError, which the documented ValueError does not catch.
    with pytest.raises(ValueError, match="Invalid custom frame mappings"):
        VideoDecoder(h264, custom_frame_mappings=mappings)


@pytest.mark.parametrize("path", sorted(REGRESSIONS.glob("*")) if REGRESSIONS.is_dir() else [],
                         ids=lambda p: p.name)
def test_regression_inputs_are_listed_here(path):
    # Every file of tests/regressions/ is named after the target that found it and has its own
    # test here, test_<target>_<what>.
    assert path.name.split("-")[0] in {"video_bytes", "video_file", "audio", "wav", "frame_mappings", "image",
                                       "image_encode", "blocks", "video_reopen"}
    assert f"test_{path.stem.replace('-', '_')}" in globals()
