"""The command line (python -m torchcodec / the torchcodec console script): each command's output
against the ffmpeg/ffprobe CLI, images read back by ffmpeg, exit codes."""
from __future__ import annotations

import io
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

import reference
from torchcodec import _cli


def run_cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-P", "-m", "torchcodec", *args], capture_output=True, text=True)


def _codecs_of_the_ffmpeg_cli(kind: str = "decoders") -> set[str]:
    text = subprocess.run([reference.FFMPEG, "-hide_banner", f"-{kind}"], capture_output=True, text=True,
                          check=True).stdout
    names = set()
    for line in text.split("------", 1)[1].splitlines():
        fields = line.split()
        if len(fields) >= 2:
            names.add(fields[1])
    return names


def test_info_json_reports_the_ffmpeg_build_and_its_decoders():
    result = run_cli("info", "--json")
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    import torchcodec
    assert info["torchcodec"] == torchcodec.__version__ and info["distribution"] == "torchcodec-cython"
    assert info["torchcodec_api"] == ".".join(torchcodec.__version__.split(".")[:2])
    assert info["ffmpeg"]["ffmpeg"] == reference.ffmpeg_version()
    cli_decoders = _codecs_of_the_ffmpeg_cli("decoders")
    assert info["decoders"] == {name: name in cli_decoders for name in _cli._DECODERS}
    assert info["decoders"]["h264"] is True
    cli_encoders = _codecs_of_the_ffmpeg_cli("encoders")
    assert info["encoders"] == {name: name in cli_encoders for name in _cli._ENCODERS}
    licence = subprocess.run([reference.FFMPEG, "-hide_banner", "-L"], capture_output=True, text=True,
                             check=True).stdout
    # "LGPL version 2.1 or later" <-> the CLI's "GNU Lesser General Public License ... version 2.1"
    kind, _, version = info["ffmpeg_license"].split()[:3]
    licence = " ".join(licence.split())
    assert {"LGPL": "GNU Lesser General Public License", "GPL": "GNU General Public License"}[kind] in licence
    assert f"version {version} of the License" in licence, (info["ffmpeg_license"], licence[:300])
    from torchcodec import _image
    assert info["image_codecs"] == {name: None if built else _image.LIBRARIES[name][1]
                                    for name, built in _image.available().items()}
    cuda = info["cuda"]
    assert (cuda["reason"] is None) == cuda["available"], "a reason exactly when unavailable"
    assert (cuda["nvdec_reason"] is None) == cuda["nvdec_available"]
    assert cuda["available"] or cuda["nvdec_available"] is False


def test_info_table_says_why_cuda_is_unavailable():
    result = run_cli("info")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "torchcodec" and "torchcodec-cython" in lines[1]
    cuda = next(line for line in lines if line.strip().startswith("CUDA ") and "available" in line)
    assert cuda.split()[1] in ("available", "unavailable:")
    if "unavailable" in cuda:
        assert len(cuda.split("unavailable:", 1)[1].strip()) > 10, "the reason is given"


def test_console_script_runs_the_same_command_line():
    script = shutil.which("torchcodec", path=os.path.dirname(sys.executable))
    if script is None:
        pytest.skip("the console script is not installed beside this Python")
    result = subprocess.run([script, "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "contact-sheet" in result.stdout


def test_probe_json_matches_ffprobe(media, capsys):
    path = media["h264_aac.mp4"]
    assert _cli.main(["probe", str(path), "--json"]) == 0
    probed = json.loads(capsys.readouterr().out)
    streams = reference.ffprobe_streams(path)
    assert probed["num_streams"] == len(streams) == len(probed["streams"])
    for ours, theirs in zip(probed["streams"], streams):
        assert ours["stream_index"] == theirs["index"]
        assert ours["media_type"] == theirs["codec_type"]
        assert ours["codec"] == theirs["codec_name"]
        if theirs["codec_type"] == "video":
            assert (ours["width"], ours["height"]) == (int(theirs["width"]), int(theirs["height"]))
            assert ours["num_frames_from_content"] is None, "header values unless --exact"
        else:
            assert ours["sample_rate"] == int(theirs["sample_rate"])
            assert ours["num_channels"] == int(theirs["channels"])
    assert probed["best_video_stream"] == reference.best_stream(path, "video")
    assert probed["best_audio_stream"] == reference.best_stream(path, "audio")


def test_probe_exact_counts_the_frames_and_prints_a_table(media, capsys):
    path = media["h264_vfr.mkv"]
    assert _cli.main(["probe", str(path), "--exact"]) == 0
    table = capsys.readouterr().out
    index = reference.best_stream(path, "video")
    frames = reference.ffprobe_frames(path, index)
    assert f"stream {index} (video)" in table
    row = next(line for line in table.splitlines() if line.split()[:1] == ["num_frames_from_content"])
    assert int(row.split()[1]) == len(frames)


def _frame_played_at(frames: list[dict], t: float) -> int:
    return next(i for i, f in enumerate(frames) if f["pts_seconds"] <= t < f["pts_seconds"] + f["duration_seconds"])


def _read_png(path: pathlib.Path) -> np.ndarray:
    """An image file decoded by the ffmpeg CLI, (H, W, 3) uint8."""
    with open(path, "rb") as file:
        assert file.read(8) == b"\x89PNG\r\n\x1a\n"
    stream = reference.ffprobe_streams(path)[0]
    assert stream["codec_name"] == "png" and stream["pix_fmt"] == "rgb24"
    width, height = int(stream["width"]), int(stream["height"])
    return reference.ffmpeg_rgb_frames(path, size=(height, width), filters="null")[0]


def test_frames_at_times_are_the_frames_the_ffmpeg_cli_decodes(media, tmp_path, capsys):
    path = media["h264_bframes.mp4"]
    times = [0.0, 1.01, 2.99]
    assert _cli.main(["frames", str(path), "--at", *map(str, times), "-o", str(tmp_path), "--no-progress"]) == 0
    assert capsys.readouterr().out == f"wrote 3 frames to {tmp_path}\n"
    written = sorted(tmp_path.iterdir())
    assert [p.name for p in written] == ["frame_00000_0.000s.png", "frame_00001_1.010s.png", "frame_00002_2.990s.png"]
    frames = reference.ffprobe_frames(path, reference.best_stream(path))
    expected = reference.ffmpeg_rgb_frames(path)
    for file, t in zip(written, times):
        np.testing.assert_array_equal(_read_png(file), expected[_frame_played_at(frames, t)])


def test_frames_every_covers_the_stream(media, tmp_path):
    path = media["h264_bframes.mp4"]                 # 3 s from 0: times 0, 0.7, 1.4, 2.1, 2.8
    result = run_cli("frames", str(path), "--every", "0.7", "-o", str(tmp_path / "out"))
    assert result.returncode == 0, result.stderr
    assert result.stderr == "", "no progress bar when stderr is not a terminal"
    names = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert names == [f"frame_{k:05d}_{k * 0.7:.3f}s.png" for k in range(5)]


def test_contact_sheet_tiles_resized_frames(media, tmp_path, capsys):
    path = media["h264_bframes.mp4"]                 # 320x240, 3 s
    out = tmp_path / "sheet.png"
    assert _cli.main(["contact-sheet", str(path), "-o", str(out), "--columns", "3", "--rows", "2",
                      "--width", "150", "--no-progress"]) == 0
    assert "3x2 frames of 150x112" in capsys.readouterr().out      # 150 * 240 / 320 = 112.5 -> even 112
    sheet = _read_png(out)
    gap = 4
    assert sheet.shape == (2 * (112 + gap) + gap, 3 * (150 + gap) + gap, 3)
    frames = reference.ffprobe_frames(path, 0)
    resized = reference.ffmpeg_rgb_frames(path, filters="format=rgb24,scale=150:112:flags=bilinear", size=(112, 150))
    for k, t in [(0, 0.25), (5, 2.75)]:              # the middle of each sixth of [0, 3)
        row, column = divmod(k, 3)
        y, x = gap + row * (112 + gap), gap + column * (150 + gap)
        np.testing.assert_array_equal(sheet[y:y + 112, x:x + 150], resized[_frame_played_at(frames, t)])
    assert not sheet[:gap].any() and not sheet[:, :gap].any(), "black gaps"


def test_exit_codes_and_one_line_errors(media, tmp_path):
    missing = run_cli("probe", str(tmp_path / "missing.mp4"))
    assert missing.returncode == 1
    assert missing.stderr.startswith("torchcodec: error: ") and missing.stderr.count("\n") == 1
    assert "missing.mp4" in missing.stderr
    outside = run_cli("frames", str(media["h264_bframes.mp4"]), "--at", "3.5", "-o", str(tmp_path))
    assert outside.returncode == 1 and "outside the stream [0.0, 3.0)" in outside.stderr
    usage = run_cli("frames", str(media["h264_bframes.mp4"]), "-o", str(tmp_path))
    assert usage.returncode == 2 and "one of the arguments --at --every is required" in usage.stderr
    assert run_cli().returncode == 2
    assert _cli.main(["frames", str(media["h264_bframes.mp4"]), "--every", "0", "-o", str(tmp_path)]) == 1


def test_version_names_this_package_its_api_and_ffmpeg():
    import torchcodec
    result = run_cli("--version")
    assert result.returncode == 0, result.stderr
    assert result.stdout == (f"torchcodec {torchcodec.__version__} (torchcodec-cython, TorchCodec "
                             f"{'.'.join(torchcodec.__version__.split('.')[:2])} API) with FFmpeg "
                             f"{reference.ffmpeg_version()}\n")


@pytest.mark.parametrize("name, magic", [("sheet.png", b"\x89PNG\r\n\x1a\n"), ("sheet.JPG", b"\xff\xd8\xff"),
                                         ("sheet.jpeg", b"\xff\xd8\xff")])
def test_contact_sheet_format_follows_the_extension(media, tmp_path, name, magic):
    result = run_cli("contact-sheet", str(media["h264_bframes.mp4"]), "-o", str(tmp_path / name), "--rows", "1")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / name).read_bytes()[:len(magic)] == magic


@pytest.mark.parametrize("name", ["sheet.gif", "sheet.webp", "sheet"])
def test_contact_sheet_refuses_a_format_it_cannot_write_before_decoding(media, tmp_path, name):
    result = run_cli("contact-sheet", str(media["h264_bframes.mp4"]), "-o", str(tmp_path / name))
    assert result.returncode == 1 and result.stderr.count("\n") == 1
    assert "use .png or .jpg" in result.stderr and name in result.stderr
    assert not (tmp_path / name).exists()


def test_an_existing_output_is_kept_unless_forced(media, tmp_path):
    out = tmp_path / "sheet.png"
    out.write_bytes(b"mine")
    refused = run_cli("contact-sheet", str(media["h264_bframes.mp4"]), "-o", str(out), "--rows", "1")
    assert refused.returncode == 1 and f"{out} exists" in refused.stderr and "--force" in refused.stderr
    assert out.read_bytes() == b"mine"
    forced = run_cli("contact-sheet", str(media["h264_bframes.mp4"]), "-o", str(out), "--rows", "1", "--force")
    assert forced.returncode == 0, forced.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    frames_out = tmp_path / "frames"
    assert run_cli("frames", str(media["h264_bframes.mp4"]), "--at", "1", "-o", str(frames_out)).returncode == 0
    again = run_cli("frames", str(media["h264_bframes.mp4"]), "--at", "1", "-o", str(frames_out))
    assert again.returncode == 1 and "exists" in again.stderr and "--force" in again.stderr
    assert run_cli("frames", str(media["h264_bframes.mp4"]), "--at", "1", "-o", str(frames_out),
                   "--force").returncode == 0
    not_a_folder = run_cli("frames", str(media["h264_bframes.mp4"]), "--at", "1", "-o", str(out))
    assert not_a_folder.returncode == 1 and "not a directory" in not_a_folder.stderr


# AVERROR_INVALIDDATA: FFERRTAG('I', 'N', 'D', 'A'), negated (libavutil/error.h)
INVALIDDATA = -(ord("I") | ord("N") << 8 | ord("D") << 16 | ord("A") << 24)


def test_a_file_that_is_not_media_is_said_so_in_words(tmp_path):
    # (JSON: no demuxer claims it; a .txt file is ANSI art to a full FFmpeg's tty demuxer)
    text = tmp_path / "notes.json"
    text.write_text('{"these are": ["words", "not frames"]}\n' * 20)
    result = run_cli("probe", str(text))
    assert result.returncode == 1
    assert result.stderr.startswith(f"torchcodec: error: Could not open input file: '{text}': not a media file "
                                    f"FFmpeg can read (avformat_open_input: ")
    assert result.stderr.endswith(f", FFmpeg error {INVALIDDATA})\n"), "the number comes last, if at all"
    from torchcodec.decoders import AudioDecoder, VideoDecoder
    for decoder in (VideoDecoder, AudioDecoder):
        with pytest.raises(RuntimeError, match="Could not open input file: .*: not a media file FFmpeg can read"):
            decoder(str(text))
        with pytest.raises(RuntimeError, match="Could not open input buffer: .*: not a media file FFmpeg can read"):
            decoder(text.read_bytes())


def test_png_writer_round_trips_through_ffmpeg(tmp_path):
    rgb = np.random.default_rng(0).integers(0, 256, (7, 13, 3), dtype=np.uint8)
    _cli.write_image(str(tmp_path / "x.png"), rgb, "png")
    np.testing.assert_array_equal(_read_png(tmp_path / "x.png"), rgb)


def test_jpeg_files_are_jpeg_of_the_frame(tmp_path):
    rgb = np.full((16, 24, 3), (200, 40, 90), np.uint8)
    _cli.write_image(str(tmp_path / "x.jpg"), rgb, "jpg")
    assert (tmp_path / "x.jpg").read_bytes()[:3] == b"\xff\xd8\xff"
    decoded = reference.ffmpeg_rgb_frames(tmp_path / "x.jpg", size=(16, 24), filters="null")[0]
    # lossy (quality 95), but a flat colour survives within the YCbCr round trip's rounding
    assert np.abs(decoded.astype(int) - rgb).max() <= 1


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_plain_counter_on_a_terminal_and_nothing_elsewhere(monkeypatch):
    monkeypatch.setattr(_cli.importlib_util, "find_spec", lambda name: None)      # as without tqdm
    terminal = _Terminal()
    bar = _cli.progress(3, "frames", stream=terminal)
    bar.update(2)
    bar.update(1)
    bar.close()
    assert terminal.getvalue() == "\rframes: 0/3\rframes: 2/3\rframes: 3/3\n"
    for stream, enabled in [(io.StringIO(), True), (_Terminal(), False)]:
        _cli.progress(3, "frames", enabled=enabled, stream=stream).update(3)
        assert stream.getvalue() == ""


def test_progress_uses_tqdm_when_installed():
    tqdm = pytest.importorskip("tqdm")
    bar = _cli.progress(3, "frames", stream=_Terminal())
    assert isinstance(bar, tqdm.tqdm)
    bar.close()
