"""tools/gpu/check.py in its dry run (--device cpu) and against the stub driver, its tolerance table
(tools/gpu/gpu_tolerances.py), tools/gpu_check.sh's dry run, and the project's FFmpeg configuration
(tools/wheels/ffmpeg.sh).

The dry run compares the CPU decoder with itself, so every difference must be 0: that checks the
comparison, the race bookkeeping and the table, which on a GPU machine report real differences.
Against the stub libcuda (kernels run on the CPU) without libnvcuvid, --device cuda must FAIL: a GPU
machine without NVDEC never passes. The bundle's configure line is read from the script (nothing is
built) and checked against what the corpus holds, as ffprobe reports it, and against what the NVDEC
input's bitstream filters are.
"""
from __future__ import annotations

import importlib.util
import json
import os
import pathlib
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import reference

from torchcodec._cuda import _build_config

REPO = pathlib.Path(__file__).resolve().parent.parent
GPU_CHECK = REPO / "tools" / "gpu" / "check.py"
GPU_CHECK_SH = REPO / "tools" / "gpu_check.sh"
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(REPO / "tests" / "cuda_stubs"))
from gpu import gpu_tolerances  # noqa: E402
from stub_build import CC, CXX, build_emulating_libcuda, build_stub  # noqa: E402
FFMPEG_CONFIGURATION = REPO / "tools" / "wheels" / "ffmpeg.sh"
FILES = ("h264_bframes.mp4", "hevc_bframes.mp4")


def run_gpu_check(media, out: pathlib.Path, *args: str, device: str = "cpu", libdir: pathlib.Path | None = None,
                  **env: str) -> subprocess.CompletedProcess:
    media_dir = media["h264_bframes.mp4"].parent
    environ = dict(os.environ, **env)
    if libdir is not None:
        environ["LD_LIBRARY_PATH"] = os.pathsep.join(filter(None, [str(libdir), os.environ.get("LD_LIBRARY_PATH")]))
    return subprocess.run(
        [sys.executable, "-P", str(GPU_CHECK), "--device", device, "--quick", "--media", str(media_dir),
         "--out", str(out), *args],
        capture_output=True, text=True, timeout=300, check=False, env=environ)


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
    probe = [cells[0] for cells in printed if cells[0] == "probe"]
    assert probe in (["probe"], ["probe"] * 9), "libcuda absent (skipped), or the stubs: 2 + 7 codecs"
    assert [cells[0] for cells in printed] == probe + ["frames"] * 2 + ["blocks"] * 3 + ["nvenc"] * 3 + ["race"] * races \
        + ["interop"] * 4 + ["sanitize"] * 3 + ["bench"] * 8
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


def test_dry_run_drives_the_blocks_and_finds_them_equal_to_the_cpu(dry_run):
    """The blocks rows (the CPU as the device under test): 30 frames held per file, the luma planes,
    ColorConverter against VideoDecoder and the CPU, seek + reset: nothing may differ."""
    _, report = dry_run
    blocks = [r for r in report["rows"] if r["check"] == "blocks"]
    assert [r["subject"] for r in blocks] == ["h264_bframes.mp4", "hevc_10bit.mp4", "h264_yuv422.mp4"]
    for row in blocks:
        assert row["status"] == "ok", row["result"]
        numbers = row["numbers"]
        assert numbers["frames"] == 30 and numbers["device"] == "cpu" and numbers["luma_equal"]
        assert numbers["max_abs_diff"] == numbers["video_decoder_max_abs_diff"] == 0
        assert numbers["pts_equal"] and numbers["seek_ok"]


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


def test_dry_run_benchmarks_whole_files_in_threads_and_processes(dry_run, media):
    """The benchmark's rows: every decoder count in threads and in processes, RGB and NV12 (the
    blocks), each with frames/s and the host CPU it took; the frames counted are the whole file but
    the first frame of each decoder, which was decoded before the clock (with the decoder's open)."""
    _, report = dry_run
    bench = [r for r in report["rows"] if r["check"] == "bench"]
    assert [r["subject"] for r in bench] == [
        "NVDEC utilisation", "PyNvVideoCodec", "h264_25fps_2s: 1 decoder vs the CPU decoder, RGB",
        "h264_25fps_2s: open + 10 random frames", "h264_25fps_2s: RGB, decoders in threads",
        "h264_25fps_2s: NV12 (blocks), decoders in threads", "h264_25fps_2s: RGB, decoders in processes",
        "h264_25fps_2s: NV12 (blocks), decoders in processes"]
    assert all(r["status"] == "info" for r in bench), bench
    frames = len(reference.ffprobe_frames(media["h264_25fps_2s.mp4"], 0))
    for row in bench[4:]:
        runs = row["numbers"]["runs"]
        assert list(runs) == ["1", "2"] and row["numbers"]["error"] == ""
        for count, run in runs.items():
            assert run["frames"] == int(count) * (frames - 1), (row["subject"], run)
            assert run["fps"] == pytest.approx(run["frames"] / run["seconds"]) and run["host_cores"] > 0
            assert "nvdec_mean" not in run           # no GPU: no utilisation, no NVDEC counters
    reference_row = bench[2]["numbers"]
    assert reference_row["ratio"] == pytest.approx(reference_row["cpu(dry run)"] / reference_row["cpu t0"])
    assert set(bench[3]["numbers"]) == {"cpu(dry run)", "cpu t0"}


def test_dry_run_sanitize_step_runs_its_workload_and_says_the_sanitizer_did_not(dry_run):
    _, report = dry_run
    rows = [r for r in report["rows"] if r["check"] == "sanitize"]
    assert [r["status"] for r in rows] == ["skipped", "skipped", "ok"]
    assert all("not run: a dry run has no GPU" in r["result"] for r in rows[:2])
    assert rows[2]["numbers"]["left_out"] == ["NVENC: a dry run"] and len(rows[2]["numbers"]["ran"]) == 8


@pytest.mark.parametrize(("output", "errors"), [
    ("========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n", 0),
    ("========= Invalid __global__ read of size 1 bytes\n=========     at tc_copy_strided+0x80\n"
     "========= ERROR SUMMARY: 3 errors\n", 3),
    ("========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)\n========= ERROR SUMMARY: 1 error\n", 1),
    ("the process died\n", None)])
def test_sanitizer_summaries_are_read(output, errors):
    from gpu.sanitize import summary
    found, lines = summary(output)
    assert found == errors
    assert bool(lines) == ("Invalid" in output)


def test_interop_readers_each_keep_their_own_library():
    """The late-binding bug of the first GPU run: the torch reader, made in a loop over the
    libraries, called cupy's array .cpu() (a lambda sees the loop's last module)."""
    from gpu.outputs import dlpack_consumers

    class Imported:
        def __init__(self, library):
            self.library = library

        def cpu(self):
            assert self.library == "torch", f"{self.library}'s array asked for .cpu()"
            return self

        def numpy(self):
            return np.array([1])

        def get(self):
            assert self.library == "cupy", f"{self.library}'s array asked for .get()"
            return np.array([2])

    class Library:
        def __init__(self, name):
            self.__name__ = name

        def from_dlpack(self, view):
            return Imported(self.__name__)

    consumers = dict(dlpack_consumers({"torch": Library("torch"), "cupy": Library("cupy")}, dry_run=False))
    assert consumers["DLPack frame views -> torch"](None).tolist() == [1]
    assert consumers["DLPack frame views -> cupy"](None).tolist() == [2]
    assert dlpack_consumers({}, dry_run=False) == [("DLPack frame views -> torch", "torch is not installed"),
                                                  ("DLPack frame views -> cupy", "cupy is not installed")]


def test_another_checks_rows_join_the_table(tmp_path):
    """--rows: tools/gpu/jpeg_check.py's JSON lines as rows of the shared table, statuses kept
    (a hardware limit is not a failure; a FAIL is)."""
    rows = tmp_path / "rows.jsonl"
    lines = [{"step": "library", "check": "device", "subject": "GPU", "result": "no engines",
              "status": "limit: no JPEG engines"},
             {"step": "pixels", "check": "RGB", "subject": "gray", "result": "max 0", "status": "ok"}]
    rows.write_text("".join(json.dumps(line) + "\n" for line in lines))
    proc = subprocess.run([sys.executable, "-P", str(GPU_CHECK), "--rows", str(rows), "--out", str(tmp_path),
                           "--step", "jpeg"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    table = (tmp_path / "gpu_check.md").read_text().splitlines()
    assert table[2:] == ["| jpeg | library | device: GPU | no engines | limit: no JPEG engines |",
                         "| jpeg | pixels | RGB: gray | max 0 | ok |"]
    lines[1]["status"] = "FAIL"
    rows.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert subprocess.run([sys.executable, "-P", str(GPU_CHECK), "--rows", str(rows), "--out", str(tmp_path / "2"),
                           "--step", "jpeg"], capture_output=True).returncode == 1


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


def test_rows_are_written_as_they_come_and_a_terminated_run_keeps_them(media, tmp_path):
    """The table (gpu_check.md) and the JSON lines grow row by row: a run stopped by SIGTERM (the
    step's timeout) keeps what it found, plus a row saying it was cut short."""
    media_dir = media["h264_bframes.mp4"].parent
    proc = subprocess.Popen([sys.executable, "-P", str(GPU_CHECK), "--device", "cpu", "--quick", "--media",
                             str(media_dir), "--out", str(tmp_path), "--only", "frames,bench", "--files",
                             "h264_25fps_2s.mp4,h264_bframes.mp4", "--bench-clips", "h264_1080p.mp4"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = tmp_path / "gpu_check.jsonl"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if lines.exists() and len(lines.read_text().splitlines()) >= 2:
            break
        time.sleep(0.2)
    proc.send_signal(signal.SIGTERM)
    output = proc.communicate(timeout=120)[0]
    assert proc.returncode == 1, output
    table = (tmp_path / "gpu_check.md").read_text().splitlines()
    assert table[:2] == ["| step | check | subject | result | status |", "| --- | --- | --- | --- | --- |"]
    rows = [json.loads(line) for line in lines.read_text().splitlines()]
    assert [r["subject"] for r in rows[:2]] == ["h264_25fps_2s.mp4", "h264_bframes.mp4"]
    assert rows[-1]["result"].startswith("terminated (SIGTERM") and rows[-1]["status"] == "ERROR"
    assert len(table) == 2 + len(rows) and all(line.startswith("| gpu_check | ") for line in table[2:])


def test_the_tolerance_table_classifies_every_video_file_of_the_corpus(media):
    videos = {name for name, path in media.items() if reference.ffprobe_streams(path)
              and any(s["codec_type"] == "video" for s in reference.ffprobe_streams(path))}
    assert set(gpu_tolerances.TOLERANCES) == videos
    assert set(gpu_tolerances.CODED_SIZE_CLIPS) <= videos
    for name, entry in gpu_tolerances.TOLERANCES.items():
        assert entry.nvdec in ("required", "caps", "never") and entry.reason, name
        assert entry.exact == (entry.max_abs == 0 and entry.mean_abs == 0), name


@pytest.mark.parametrize("name, max_abs, mean_abs, fallback, verdict", [
    # one table: what the tests allow, the check allows. The kernels give swscale's bytes: 10-bit,
    # 4:4:4 and odd sizes must be equal too (what the nearest-chroma kernels once gave now fails)
    ("h264_10bit.mp4", 80, 1.7, "", "FAIL"),
    ("vp9_161x121.webm", 206, 4.8, "", "FAIL"),
    ("h264_yuv444.mp4", 3, 0.6, "", "FAIL"),
    ("h264_10bit.mp4", 0, 0.0, "", "ok"),
    ("mpeg4_bframes.avi", 12, 0.2, "", "ok"),
    ("mpeg4_bframes.avi", 12, 0.4, "", "FAIL"),
    ("mpeg2_mp2.mpg", 17, 0.1, "", "FAIL"),
    ("h264_bframes.mp4", 1, 0.001, "", "FAIL"),
    # fallbacks: libnvcuvid missing fails everywhere; a stream every NVDEC decodes must not fall back
    ("h264_bframes.mp4", 0, 0.0, "NVDEC's libnvcuvid.so.1 could not be opened", "FAIL"),
    ("vp9.webm", 0, 0.0, "NVDEC's libnvcuvid.so.1 could not be opened", "FAIL"),
    ("hevc_1080p.mp4", 0, 0.0, "NVDEC on X: hevc 4:2:0 8-bit at 1920x1080 exceeds the maximum", "FAIL"),
    ("av1.mp4", 0, 0.0, "NVDEC on X cannot decode av1 4:2:0 8-bit", "ok"),
    ("h264_yuv422.mp4", 0, 0.0, "torchcodec's CUDA colour conversion does not handle h264 4:2:2 8-bit", "ok"),
    ("h264_yuv422.mp4", 0, 0.0, "", "FAIL"),
])
def test_frames_are_judged_by_the_table_and_by_why_they_fell_back(name, max_abs, mean_abs, fallback, verdict):
    assert gpu_tolerances.judge(name, max_abs, mean_abs, fallback, on_gpu=True)[0] == verdict
    assert gpu_tolerances.judge(name, max_abs, mean_abs, fallback, on_gpu=False)[0] == \
        ("ok" if max_abs == 0 else "FAIL"), "the dry run asks for equality and ignores fallbacks"


@pytest.fixture(scope="module")
def stub_driver(tmp_path_factory):
    """(libcuda stub running the kernels on the CPU, without libnvcuvid; the same with the NVDEC stub)."""
    if not (_build_config.CUDA_DRIVER and _build_config.CUDA_KERNELS):
        pytest.skip("this build has no CUDA driver loader or no kernels")
    if CC is None or CXX is None:
        pytest.skip("no C/C++ compiler to build the stub libraries")
    root = tmp_path_factory.mktemp("gpu_check_stubs")
    no_nvdec = build_emulating_libcuda(root / "no_nvdec")
    nvdec = build_emulating_libcuda(root / "nvdec")
    build_stub(nvdec, "libnvcuvid.so.1", "libnvcuvid_stub.c", "cuvid_load_functions")
    return no_nvdec, nvdec


def test_a_gpu_machine_without_libnvcuvid_fails_the_check(media, tmp_path, stub_driver):
    """--device cuda against a driver without libnvcuvid.so.1: the probe FAILs, and every file FAILs
    although its frames are right (decoded on the CPU, converted by the kernels): NVDEC is absent."""
    proc = run_gpu_check(media, tmp_path, "--only", "probe,frames", "--bridge", "numpy", "--files",
                         "h264_bframes.mp4,h264_10bit.mp4", device="cuda", libdir=stub_driver[0])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = {r["subject"]: r for r in json.loads((tmp_path / "gpu_check.json").read_text())["rows"]}
    assert rows["libcuda.so.1"]["status"] == "ok" and "Stub GPU 0" in rows["libcuda.so.1"]["result"]
    assert rows["libnvcuvid.so.1"]["status"] == "FAIL"
    for name in ("h264_bframes.mp4", "h264_10bit.mp4"):
        assert rows[name]["status"] == "FAIL"
        assert rows[name]["result"].endswith("NVDEC is missing on a machine with a GPU (libnvcuvid.so.1)")
    assert rows["h264_bframes.mp4"]["numbers"]["max_abs_diff"] == 0
    assert rows["h264_10bit.mp4"]["numbers"]["max_abs_diff"] == 0, "the kernels give the CPU's 10-bit bytes"


def test_a_gpu_without_an_nvenc_engine_is_a_hardware_limit_not_a_failure(media, tmp_path, stub_driver):
    """The nvenc step on a GPU whose NVENC refuses sessions as an H200's does
    (NV_ENC_ERR_UNSUPPORTED_DEVICE, the stub libnvidia-encode's default): the session row and every
    encoding row say "limit: no NVENC engine", with the cause in the error, and the check passes."""
    build_stub(stub_driver[1], "libnvidia-encode.so.1", "libnvidia_encode_stub.c", "nvenc_load_functions")
    proc = run_gpu_check(media, tmp_path, "--only", "nvenc", "--bridge", "numpy", device="cuda",
                         libdir=stub_driver[1])
    (stub_driver[1] / "libnvidia-encode.so.1").unlink()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads((tmp_path / "gpu_check.json").read_text())["rows"]
    assert [r["status"] for r in rows] == ["limit: no NVENC engine"] * len(rows) and len(rows) >= 3
    assert rows[0]["result"].startswith("this GPU has no NVENC engine: cuda:0 (Stub GPU 0) refused an encode session")
    assert all(r["numbers"]["cause"] == "engine" for r in rows)
    assert all("(FFmpeg's h264_nvenc: avcodec_open2: " in r["result"] for r in rows[1:2])


def test_the_probe_asks_every_codec_and_fails_without_h264(media, tmp_path, stub_driver):
    proc = run_gpu_check(media, tmp_path, "--only", "probe", device="cuda", libdir=stub_driver[1],
                         STUB_NVDEC_UNSUPPORTED="h264,vp8")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = {r["subject"]: r for r in json.loads((tmp_path / "gpu_check.json").read_text())["rows"]}
    assert [s for s in rows if s.startswith("caps ")] == [f"caps {c}" for c in
                                                          ("h264", "hevc", "vp9", "av1", "vp8", "mpeg4", "mpeg2")]
    assert rows["caps h264"]["status"] == "FAIL" and rows["caps vp8"]["status"] == "ok", "only H.264/HEVC are required"
    assert rows["caps h264"]["result"] == "4:2:0 8-bit no; 4:2:0 10-bit no; 4:4:4 8-bit no; 4:4:4 10-bit no"
    assert rows["caps hevc"]["numbers"] == {"4:2:0 8-bit": True, "4:2:0 10-bit": True, "4:4:4 8-bit": True,
                                            "4:4:4 10-bit": True}


def test_a_pytest_report_becomes_rows_with_each_failure(tmp_path):
    report = tmp_path / "report.xml"
    report.write_text("""<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1"
 failures="1" skipped="1" tests="5" time="12.5"><testcase classname="tests.test_nvdec" name="test_a" time="1"/>
<testcase classname="tests.test_nvdec" name="test_b" time="1"><failure message="assert 1 == 2&#10;more">tb</failure>
</testcase><testcase classname="tests.test_cuda_kernels" name="test_c" time="1"><error message="fixture broke">tb
</error></testcase><testcase classname="tests.test_cuda_kernels" name="test_d" time="1"><skipped message="no GPU"/>
</testcase><testcase classname="tests.test_cuda_kernels" name="test_e" time="1"/></testsuite></testsuites>""")
    proc = subprocess.run([sys.executable, "-P", str(GPU_CHECK), "--junit", str(report), "--out", str(tmp_path),
                           "--step", "nvdec"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    rows = [json.loads(line) for line in (tmp_path / "gpu_check.jsonl").read_text().splitlines()]
    assert [(r["step"], r["subject"], r["status"]) for r in rows] == [
        ("nvdec", "test_cuda_kernels, test_nvdec", "FAIL"), ("nvdec", "test_nvdec::test_b", "FAIL"),
        ("nvdec", "test_cuda_kernels::test_c", "ERROR")]
    assert rows[0]["result"] == "2 passed, 1 failed, 1 errors, 1 skipped in 12s"
    assert rows[1]["result"] == "assert 1 == 2"


def test_gpu_check_sh_out_of_budget_still_writes_every_steps_row(tmp_path):
    """The shell script's table: with a budget too small for anything, each step still has its row
    (not run: out of time, a FAIL but for the optional benchmark), the table ends with the count of
    failed rows, and the exit status is 1."""
    assert subprocess.run(["bash", "-n", str(GPU_CHECK_SH)]).returncode == 0
    environ = dict(os.environ, OUT=str(tmp_path), PYTHON=sys.executable, GPU_CHECK_BUDGET="3")
    proc = subprocess.run(["bash", str(GPU_CHECK_SH), "--quick", "--dry-run"], capture_output=True, text=True,
                          timeout=120, env=environ)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    table = (tmp_path / "gpu_check.md").read_text().splitlines()
    assert table[0] == "| step | check | subject | result | status |"
    steps = [line.split(" | ")[2] for line in table[2:] if line.startswith("| ") and " | step | " in line]
    later = ["nvdec", "frames", "blocks", "nvenc", "jpeg", "transforms", "outputs", "sanitize", "corpus", "bench"]
    assert steps in (["setup", "probe", *later], ["setup", "probe", "build", *later])
    not_run = [line for line in table[2:] if " | step | " in line and "not run: out of time" in line]
    assert not_run and all(line.endswith("| FAIL |") for line in not_run if not line.startswith("| bench |"))
    assert table[-1].startswith(f"{sum(line.endswith('| FAIL |') for line in table)} rows FAILED or ERRORED")


def test_frame_differences_counts_what_differs():
    from gpu.decoding import frame_differences
    expected = np.full((2, 4, 5, 3), 100, np.uint8)
    actual = expected.copy()
    actual[0, 1, 2, 0] = 103           # +3
    actual[1, 3, 4, 2] = 99            # -1 (no uint8 wrap-around)
    found = frame_differences(actual, expected)
    assert found == {"max_abs_diff": 3.0, "mean_abs_diff": 4 / expected.size,
                     "fraction_differing": 2 / expected.size}
    with pytest.raises(ValueError, match="shape"):
        frame_differences(actual[:1], expected)
    with pytest.raises(ValueError, match="dtype"):
        frame_differences(actual.astype(np.float32), expected)


# --------------------------------------------------------------------------------------------
# tools/wheels/ffmpeg.sh: the FFmpeg that the wheels bundle and gpu_bundle.sh carries


def configure_args() -> list[str]:
    """The configure arguments of the project's FFmpeg (tools/wheels/ffmpeg.sh's function, run in bash)."""
    proc = subprocess.run(["bash", "-c", f'source "{FFMPEG_CONFIGURATION}" && ffmpeg_configure_args'],
                          capture_output=True, text=True, check=True, env={**os.environ, "PREFIX": "/prefix"})
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
    assert "--enable-nvenc" in args and {"h264_nvenc", "hevc_nvenc"} <= enabled("encoder")
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
    # the NVDEC input's bitstream filters (torchcodec/_cuda/_nvdec_input.pyx, choose_bsf)
    assert {"h264_mp4toannexb", "hevc_mp4toannexb", "mpeg4_unpack_bframes", "null"} <= enabled("bsf")
    # tests/reference.py and the tests' own ffmpeg commands
    assert {"format", "scale", "crop", "aresample", "transpose", "hflip", "vflip", "testsrc", "testsrc2"} \
        <= enabled("filter")
    assert {"rawvideo", "pcm_f32le", "null", "nut", "ivf", "matroska", "mpegts"} <= enabled("muxer")
    assert is_enabled("pcm_f32le", "encoder") and {"rawvideo", "mpeg4", "wrapped_avframe"} <= enabled("encoder")
    assert "lavfi" in enabled("indev")
