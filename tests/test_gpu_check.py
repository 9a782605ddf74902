"""tools/gpu_check.py in its dry run (--device cpu), and tools/gpu_bundle.sh's FFmpeg configuration.

The dry run compares the CPU decoder with itself, so every difference must be 0: that checks the
comparison, the race bookkeeping and the table, which on a GPU machine report real differences.
The bundle's configure line is read from the script (nothing is built) and checked against what
the corpus holds, as ffprobe reports it, and against what the NVDEC input's bitstream filters are.
"""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest
import reference

REPO = pathlib.Path(__file__).resolve().parent.parent
GPU_CHECK = REPO / "tools" / "gpu_check.py"
GPU_BUNDLE = REPO / "tools" / "gpu_bundle.sh"
FILES = ("h264_bframes.mp4", "hevc_bframes.mp4")


def run_gpu_check(media, out: pathlib.Path, *args: str) -> subprocess.CompletedProcess:
    media_dir = media["h264_bframes.mp4"].parent
    return subprocess.run(
        [sys.executable, "-P", str(GPU_CHECK), "--device", "cpu", "--quick", "--media", str(media_dir),
         "--out", str(out), *args],
        capture_output=True, text=True, timeout=300, check=False)


def table_rows(stdout: str) -> list[list[str]]:
    """The cells of the summary table's body rows, as printed."""
    lines = [line for line in stdout.splitlines() if line.startswith("| ")]
    assert lines[0] == "| check | subject | result | status |"
    assert lines[1] == "| --- | --- | --- | --- |"
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines[2:]]


@pytest.fixture(scope="module")
def dry_run(media, tmp_path_factory):
    """(process, report JSON) of a quick dry run on two corpus files, benchmarking one of them."""
    out = tmp_path_factory.mktemp("gpu_check")
    proc = run_gpu_check(media, out, "--files", ",".join(FILES), "--bench-clips", "h264_25fps_2s.mp4")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc, json.loads((out / "gpu_check.json").read_text())


def test_dry_run_prints_one_table_with_the_rows_of_the_report(dry_run):
    proc, report = dry_run
    printed = table_rows(proc.stdout)
    assert [[r["check"], r["subject"], r["status"]] for r in report["rows"]] == \
        [[cells[0], cells[1], cells[3]] for cells in printed]
    races = 4 if importlib.util.find_spec("torch") else 3    # torch, cupy's stand-in, DLPack (2, or 1 skipped)
    assert [cells[0] for cells in printed] == ["frames"] * 2 + ["race"] * races + ["bench"] * 4
    assert report["device"] == "cpu" and report["failed"] == 0


def test_dry_run_finds_no_difference_between_cpu_and_cpu(dry_run):
    _, report = dry_run
    frames = [r for r in report["rows"] if r["check"] == "frames"]
    assert [r["subject"] for r in frames] == list(FILES)
    for row in frames:
        assert row["status"] == "ok"
        assert row["numbers"]["frames"] == 30                     # --quick: the first 30
        assert row["numbers"]["max_abs_diff"] == 0
        assert row["numbers"]["mean_abs_diff"] == 0
        assert row["numbers"]["fraction_differing"] == 0
        assert row["numbers"]["cpu_fallback"] == ""


def test_dry_run_races_read_every_round_correctly(dry_run):
    _, report = dry_run
    races = {r["subject"]: r for r in report["rows"] if r["check"] == "race"}
    stand_in = races["numpy: decode + read on one non-default stream"]
    assert stand_in["status"] == "ok"
    assert stand_in["numbers"] == {"rounds": 4, "bad_sums": 0, "bad_pixels": 0}
    torch_row = races["torch: decode + read on one non-default stream"]
    dlpack = [r for subject, r in races.items() if "DLPack" in subject]
    if torch_row["status"] == "skipped":       # torch is not installed in this environment
        assert "torch is not installed" in torch_row["result"]
        assert [r["status"] for r in dlpack] == ["skipped"]
    else:
        assert torch_row["numbers"] == {"rounds": 4, "bad_sums": 0, "bad_pixels": 0}
        assert [r["status"] for r in dlpack] == ["ok", "ok"]


def test_dry_run_benchmarks_every_contender(dry_run):
    _, report = dry_run
    bench = [r for r in report["rows"] if r["check"] == "bench"]
    assert [r["subject"] for r in bench] == [
        "h264_25fps_2s: sequential (32 frames max)", "h264_25fps_2s: open + 10 random frames",
        "h264_25fps_2s: 1 decoder(s) in 1 thread(s)", "h264_25fps_2s: 2 decoder(s) in 2 thread(s)"]
    for row in bench:
        numbers = row["numbers"]
        assert row["status"] == "info" and numbers["errors"] == []
        values = [numbers[label] for label in ("cpu(dry run)", "cpu t0", "cpu t1")]
        assert all(v > 0 for v in values), row
        # speed-ups of the device under test: fps ratios, or time ratios inverted
        forward = numbers["unit"] == "fps"
        for label in ("cpu t0", "cpu t1"):
            expected = values[0] / numbers[label] if forward else numbers[label] / values[0]
            assert numbers[f"speed-up vs {label}"] == pytest.approx(expected)


def test_one_failing_file_does_not_stop_the_others(media, tmp_path):
    proc = run_gpu_check(media, tmp_path, "--files", "missing.mp4,h264_25fps_2s.mp4", "--only", "frames")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = json.loads((tmp_path / "gpu_check.json").read_text())["rows"]
    assert [(r["subject"], r["status"]) for r in rows] == [("missing.mp4", "ERROR"), ("h264_25fps_2s.mp4", "ok")]
    assert "missing.mp4" in rows[0]["result"] and "Error" in rows[0]["result"]
    assert "1 of 2 rows failed" in proc.stdout


def test_rows_past_the_deadline_are_skipped_and_still_tabled(media, tmp_path):
    proc = run_gpu_check(media, tmp_path, "--files", "h264_25fps_2s.mp4", "--bench-clips", "h264_25fps_2s.mp4",
                         "--deadline", "0")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    statuses = {r["status"] for r in json.loads((tmp_path / "gpu_check.json").read_text())["rows"]}
    assert statuses == {"skipped"}
    assert "not run: --deadline reached" in proc.stdout


def load_gpu_check():
    spec = importlib.util.spec_from_file_location("gpu_check", GPU_CHECK)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = module                 # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_frame_differences_counts_what_differs():
    gpu_check = load_gpu_check()
    expected = np.full((2, 4, 5, 3), 100, np.uint8)
    actual = expected.copy()
    actual[0, 1, 2, 0] = 103           # +3
    actual[1, 3, 4, 2] = 99            # -1 (no uint8 wrap-around)
    found = gpu_check.frame_differences(actual, expected)
    assert found == {"max_abs_diff": 3.0, "mean_abs_diff": 4 / expected.size,
                     "fraction_differing": 2 / expected.size}
    with pytest.raises(ValueError, match="shape"):
        gpu_check.frame_differences(actual[:1], expected)
    with pytest.raises(ValueError, match="dtype"):
        gpu_check.frame_differences(actual.astype(np.float32), expected)


# --------------------------------------------------------------------------------------------
# gpu_bundle.sh: the FFmpeg it configures


def configure_args() -> list[str]:
    """The configure arguments gpu_bundle.sh would pass (its function, run in bash)."""
    proc = subprocess.run(["bash", "-c", f'source "{GPU_BUNDLE}" && ffmpeg_configure_args'],
                          capture_output=True, text=True, check=True, env={**os.environ, "PYTHON": "true"})
    return proc.stdout.splitlines()


def enabled(kind: str) -> set[str]:
    """The components of one kind (decoder, demuxer, ...) that the configure line enables."""
    names: set[str] = set()
    for arg in configure_args():
        if arg.startswith(f"--enable-{kind}="):
            names.update(arg.split("=", 1)[1].split(","))
    return names


def is_enabled(name: str, kind: str) -> bool:
    return any(name == pattern or (pattern.endswith("*") and name.startswith(pattern[:-1]))
               for pattern in enabled(kind))


# ffprobe's format_name -> the name of FFmpeg's demuxer (configure's name) where they differ
DEMUXER_NAMES = {"mov,mp4,m4a,3gp,3g2,mj2": "mov", "matroska,webm": "matroska", "mpeg": "mpegps"}
# codec -> its parser where the names differ
PARSER_NAMES = {"mpeg4": "mpeg4video", "mpeg1video": "mpegvideo", "mpeg2video": "mpegvideo",
                "mp3": "mpegaudio", "mp2": "mpegaudio"}


def test_bundle_configures_a_minimal_shared_ffmpeg_with_the_cuda_hwaccel():
    args = configure_args()
    for flag in ("--disable-everything", "--disable-autodetect", "--enable-shared", "--disable-static",
                 "--enable-ffnvcodec", "--enable-nvdec", "--enable-cuvid", "--enable-libdav1d",
                 "--enable-swscale", "--enable-swresample", "--enable-avfilter"):
        assert flag in args
    assert {"h264_nvdec", "hevc_nvdec", "vp9_nvdec", "av1_nvdec"} <= enabled("hwaccel")
    assert {"file", "pipe"} <= enabled("protocol")


def test_bundle_ffmpeg_decodes_and_demuxes_the_whole_corpus(media):
    for name, path in media.items():
        fmt = reference.ffprobe_format(path)["format_name"]
        assert is_enabled(DEMUXER_NAMES.get(fmt, fmt), "demuxer"), (name, fmt)
        for stream in reference.ffprobe_streams(path):
            codec = stream["codec_name"]
            assert is_enabled(codec, "decoder"), (name, codec)
            if stream["codec_type"] == "video" and not codec.startswith("pcm_"):
                assert is_enabled(PARSER_NAMES.get(codec, codec), "parser"), (name, codec)


def test_bundle_ffmpeg_has_what_the_tests_and_the_nvdec_input_use():
    # the NVDEC input's bitstream filters (torchcodec/_core/_nvdec_input.pyx, choose_bsf)
    assert {"h264_mp4toannexb", "hevc_mp4toannexb", "mpeg4_unpack_bframes", "null"} <= enabled("bsf")
    # tests/reference.py and the tests' own ffmpeg commands
    assert {"format", "scale", "crop", "aresample", "transpose", "hflip", "vflip", "testsrc", "testsrc2"} \
        <= enabled("filter")
    assert {"rawvideo", "pcm_f32le", "null", "nut", "ivf", "matroska", "mpegts"} <= enabled("muxer")
    assert is_enabled("pcm_f32le", "encoder") and {"rawvideo", "mpeg4", "wrapped_avframe"} <= enabled("encoder")
    assert "lavfi" in enabled("indev")
