"""tools/bench/targets.py: the verdicts it prints must follow from the measurements, by hand-computed
ratios (a wrong direction or peer would call a missed target met), and its memory probe must
measure the process that decodes."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
from bench import targets as bench_targets  # noqa: E402
from bench.targets import CLI, OURS, TORCHCODEC, SpeedTarget, Verdict  # noqa: E402
from bench.workloads import WORKLOADS, Measurement  # noqa: E402


def row(workload, threads, peer, *times, status="ok"):
    return Measurement(workload, threads, peer, times_s=list(times), status=status)


ROWS = [
    row("random10", 1, OURS, 0.52, 0.50, 0.61),
    row("random10", 1, TORCHCODEC, 0.85, 0.80),
    row("random10", 0, OURS, 0.10),                      # another thread count: never compared
    row("sequential", 1, OURS, 2.20, 2.15),
    row("sequential", 1, CLI, 2.00, 2.10),
    row("batch", 1, OURS, 2.40),
    row("batch", 1, CLI, 2.00),
    row("reopen", 1, OURS, 0.001),
    row("reopen", 1, TORCHCODEC, status="error"),
]


def test_a_ratio_against_torchcodec_is_their_best_over_ours():
    target = SpeedTarget("random", "1080p", "random10", 1, TORCHCODEC, 1.6)
    assert target.value(ROWS) == pytest.approx(0.80 / 0.50)
    assert target.met(target.value(ROWS))
    assert not SpeedTarget("random", "1080p", "random10", 1, TORCHCODEC, 1.61).met(target.value(ROWS))


def test_a_bound_against_the_cli_is_ours_over_theirs_and_an_upper_bound():
    sequential = SpeedTarget("seq", "1080p", "sequential", 1, CLI, 1.02)
    assert sequential.value(ROWS) == pytest.approx(2.15 / 2.00)
    assert not sequential.met(sequential.value(ROWS))            # 1.075 > 1.02
    batch = SpeedTarget("batch", "1080p", "batch", 1, CLI, 1.10)
    assert batch.value(ROWS) == pytest.approx(1.2)
    assert not batch.met(batch.value(ROWS))
    assert SpeedTarget("batch", "1080p", "batch", 1, CLI, 1.25).met(batch.value(ROWS))


def test_a_target_without_both_measurements_is_not_measured_and_fails_strict_mode():
    verdicts = bench_targets.speed_verdicts({"1080p": ROWS, "10bit": []})
    by_title = {v.title: v for v in verdicts}
    reopen = by_title["open + metadata, a file opened before (threads=1)"]
    assert (reopen.met, reopen.word, reopen.measured) == (None, "n/a", "n/a")     # TorchCodec's row failed
    random10 = by_title["10 frames at random indices, exact (threads=1)"]
    assert (random10.met, random10.measured) == (True, "1.60x")
    assert by_title["10-bit 720p, every frame (threads=0)"].met is None
    text = bench_targets.format_verdicts(verdicts)
    assert f"{sum(v.met is True for v in verdicts)} of {len(bench_targets.SPEED_TARGETS)} targets met" in text
    assert "NOT MET" in text                                       # the sequential row above


def test_every_target_names_a_workload_its_run_measures():
    for target in bench_targets.SPEED_TARGETS:
        run = bench_targets.BENCH_RUNS[target.run]
        workloads = run[run.index("--workloads") + 1:run.index("--threads")]
        threads = [int(t) for t in run[run.index("--threads") + 1:]]
        assert target.workload in workloads and target.workload in WORKLOADS
        assert target.threads in threads
        assert target.against_threads is None or target.against_threads in threads
        if "approx" in target.peer + target.against:
            assert "approximate" in bench_targets.SEEK_MODES.get(target.run, [])


APPROX = bench_targets.OURS_APPROX
SPREAD_ROWS = [
    row("uniform10", 1, OURS, 0.50),
    row("uniform10", 1, APPROX, 0.54),
    row("uniform32", 1, OURS, 3.0),
    row("uniform32", 0, OURS, 1.6),
    row("uniform32", 0, TORCHCODEC, 3.1),
]
SPREAD_ROWS[3].check = {"verdict": "identical"}
SPREAD_ROWS[4].check = {"verdict": "close"}


def test_approximate_mode_is_held_to_our_exact_mode_from_above():
    target = SpeedTarget("approx", "1080p", "uniform10", 1, OURS, 1.05, peer=APPROX, at_most=True)
    assert target.value(SPREAD_ROWS) == pytest.approx(0.54 / 0.50)
    assert not target.met(target.value(SPREAD_ROWS))                  # 1.08 > 1.05
    assert target.describe_bound() == "<= 1.05x ours exact"


def test_gop_parallel_is_ours_at_one_thread_over_ours_at_zero_with_the_same_frames():
    target = SpeedTarget("spread", "long", "uniform32", 0, OURS, 1.8, against_threads=1, same_frames=True)
    assert target.value(SPREAD_ROWS) == pytest.approx(3.0 / 1.6)
    assert target.frames_identical(SPREAD_ROWS) is True
    other = SpeedTarget("spread", "long", "uniform32", 0, OURS, 1.8, peer=TORCHCODEC, against_threads=1,
                        same_frames=True)
    assert other.frames_identical(SPREAD_ROWS) is False               # "close" is not the same frames


def test_a_same_frames_target_with_other_frames_is_missed(monkeypatch):
    monkeypatch.setattr(bench_targets, "SPEED_TARGETS", [
        SpeedTarget("spread", "long", "uniform32", 0, OURS, 1.8, against_threads=1, same_frames=True)])
    rows = [row("uniform32", 1, OURS, 3.0), row("uniform32", 0, OURS, 1.0)]
    rows[1].check = {"verdict": "DIFFERENT FRAMES?"}
    verdict, = bench_targets.speed_verdicts({"long": rows})
    assert verdict.measured == "3.00x, OTHER frames" and verdict.met is False


def test_the_memory_probe_counts_the_decoded_batch(media):
    """The probe measures the process that decodes: holding a batch of 32 frames raises its peak over
    decoding one frame at a time by about the batch's size."""
    path = media["h264_bt709.mp4"]
    from torchcodec.decoders import VideoDecoder
    decoder = VideoDecoder(path)
    batch_bytes = min(32, len(decoder)) * decoder.metadata.width * decoder.metadata.height * 3
    batch_peak = bench_targets.peak_rss_mb(Path(path), "batch", runs=1)
    sequential_peak = bench_targets.peak_rss_mb(Path(path), "sequential", runs=1)
    assert (batch_peak - sequential_peak) * 2**20 > batch_bytes / 2
    assert 0 < sequential_peak < 1000


def test_a_verdict_word_says_met_missed_or_unmeasured():
    assert [Verdict("t", "1x", "b", met).word for met in (True, False, None)] == ["met", "NOT MET", "n/a"]


def test_decode_work_groups_targets_by_the_key_frame_that_starts_them():
    """tools/bench/decode_work.py seeks once per key frame: each target goes with the last key frame at
    or before it, in display order, whatever the order of the request."""
    from bench import decode_work as bench_decode_work

    all_pts = [0, 10, 20, 30, 40, 50, 60, 70]
    key_pts = [0, 40]
    groups = bench_decode_work.group_by_key_frame([6, 1, 4, 3, 1], all_pts, key_pts)
    assert groups == {0: [10, 30], 40: [40, 60]}
