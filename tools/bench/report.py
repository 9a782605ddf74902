"""The benchmark's media and job planning, and its report (the table of times and ratios)."""
from __future__ import annotations

import importlib
import importlib.util
import json
import os
import platform
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

from bench.library_peers import ffmpeg_cli_version
from bench.measure import log
from bench.workloads import (FRAMES_PER_CLIP, NUM_CLIPS, AUDIO_RANGE_SECONDS, CACHE_DIR, DEFAULT_AUDIO_FILE_NAME,
                             DEFAULT_FILE_NAME, LONG_FILE_NAME, Measurement, NUM_AUDIO_RANGES, NUM_SAMPLED_FRAMES,
                             NUM_SPREAD_FRAMES, RunSettings, VideoJob, WORKLOADS)


# --------------------------------------------------------------------------------------------
# Media and job planning
# --------------------------------------------------------------------------------------------


def bench_media(name: str) -> Path:
    """The file ``name`` of tools/make_media.py's catalogue, made (and cached) when missing."""
    spec = importlib.util.spec_from_file_location("make_media", Path(__file__).parent.parent / "make_media.py")
    if spec is None or spec.loader is None or not Path(spec.origin or "").exists():
        raise ImportError("tools/make_media.py not found")
    make_media = importlib.util.module_from_spec(spec)
    sys.modules["make_media"] = make_media  # its dataclasses look themselves up there
    spec.loader.exec_module(make_media)
    return Path(make_media.ensure_media([name])[name])


def default_audio_file() -> Path:
    """tools/make_media.py's bench audio clip."""
    try:
        return bench_media(DEFAULT_AUDIO_FILE_NAME)
    except ImportError as exc:
        raise SystemExit(f"{exc}: pass --audio-file") from exc


def default_media_file() -> Path:
    """tools/make_media.py's bench file; or our own ffmpeg-made copy when that is unavailable."""
    try:
        return bench_media(DEFAULT_FILE_NAME)
    except Exception as exc:
        log(f"tools/make_media.py unusable ({type(exc).__name__}: {exc}); making the file with ffmpeg")
        return make_fallback_media(CACHE_DIR / DEFAULT_FILE_NAME)


def make_fallback_media(path: Path) -> Path:
    """10 s of 1080p30 H.264 (GOP 60, 3 B-frames), like make_media's bench file."""
    if path.exists():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.mp4")
    subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi",
                    "-i", "testsrc2=size=1920x1080:rate=30", "-t", "10", "-c:v", "libx264",
                    "-g", "60", "-keyint_min", "60", "-sc_threshold", "0", "-bf", "3",
                    "-pix_fmt", "yuv420p", str(tmp)], check=True)
    tmp.rename(path)
    return path


def probe_video(path: Path) -> dict[str, Any]:
    """Stream facts from ffprobe (packet count = frame count for ordinary files)."""
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-count_packets", "-show_entries",
         "stream=codec_name,width,height,avg_frame_rate,nb_read_packets,start_time,duration"
         ":format=duration", "-of", "json", str(path)],
        capture_output=True, text=True, check=True)
    data = json.loads(out.stdout)
    if not data.get("streams"):
        raise SystemExit(f"{path}: no video stream")
    stream = data["streams"][0]
    num, _, den = stream.get("avg_frame_rate", "0/1").partition("/")
    fps = float(num) / float(den) if float(den or 0) else 0.0
    duration = stream.get("duration") or data.get("format", {}).get("duration") or 0
    return {"codec": stream.get("codec_name", "?"), "width": int(stream["width"]),
            "height": int(stream["height"]), "num_frames": int(stream["nb_read_packets"]),
            "fps": fps, "begin_s": float(stream.get("start_time") or 0.0),
            "duration_s": float(duration)}


def probe_duration(path: Path) -> float:
    out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "json", str(path)],
                         capture_output=True, text=True, check=True)
    return float(json.loads(out.stdout)["format"]["duration"])


def plan_audio_ranges(path: Path, seed: int) -> list[list[float]]:
    """NUM_AUDIO_RANGES ranges of AUDIO_RANGE_SECONDS at random starts (ms-rounded), in random order."""
    last_start = max(0.0, probe_duration(path) - AUDIO_RANGE_SECONDS)
    rng = random.Random(seed + 1)
    starts = [round(rng.uniform(0.0, last_start), 3) for _ in range(NUM_AUDIO_RANGES)]
    return [[start, round(start + AUDIO_RANGE_SECONDS, 3)] for start in starts]


def random_indices(count: int, wanted: int, seed: int) -> list[int]:
    """The random10 workload's frames: ``wanted`` distinct indices of ``count``, in the order drawn."""
    return random.Random(seed).sample(range(count), min(wanted, count))


def uniform_indices(count: int, wanted: int) -> list[int]:
    """``wanted`` (at most ``count``) indices of ``count`` frames, evenly spaced from the first to the last."""
    wanted = min(wanted, count)
    return [round(k * (count - 1) / max(wanted - 1, 1)) for k in range(wanted)]


def loader_clips(path: Path) -> list[str]:
    """The loader workload's clips: ``path`` and tools/make_media.py's 40 s 1080p clip."""
    try:
        return [str(path), str(bench_media(LONG_FILE_NAME).resolve())]
    except Exception as exc:
        log(f"the loader's second clip is unavailable ({type(exc).__name__}: {exc}); using {path} alone")
        return [str(path)]


def plan_job(path: Path, workloads: list[str], threads: list[int], seed: int,
             audio_path: Path | None = None) -> VideoJob:
    info = probe_video(path)
    count = info["num_frames"]
    if count < 1:
        raise SystemExit(f"{path}: no video frames")
    uniform = uniform_indices(count, NUM_SAMPLED_FRAMES)
    wanted = len(uniform)
    randoms = random_indices(count, wanted, seed)
    # mid-file and half a frame past a frame start, so that no library hits a boundary case
    frame_s = 1.0 / info["fps"] if info["fps"] else 0.0
    timestamp = info["begin_s"] + 0.55 * info["duration_s"] + 0.5 * frame_s
    timestamp = min(timestamp, info["begin_s"] + info["duration_s"] - frame_s)
    audio = {}
    if audio_path is not None:
        audio = dict(audio_path=str(audio_path), audio_ranges=plan_audio_ranges(audio_path, seed))
    clip_seed, clip_starts = plan_clip_starts(count, seed)
    return VideoJob(path=str(path), uniform_indices=uniform, random_indices=randoms,
                    timestamp_s=round(timestamp, 6), workloads=workloads, threads=threads,
                    clip_starts=clip_starts, clip_seed=clip_seed,
                    spread_indices=uniform_indices(count, NUM_SPREAD_FRAMES),
                    loader_paths=loader_clips(path) if "loader" in workloads else [], **info, **audio)


def plan_clip_starts(count: int, seed: int) -> tuple[int | None, list[int]]:
    """(seed, starts): what clips_at_random_indices draws after torch.manual_seed(seed), i.e.
    torch.randint(0, count - FRAMES_PER_CLIP + 1, (NUM_CLIPS,)); (None, []) without torch."""
    if importlib.util.find_spec("torch") is None:
        return None, []
    import torch

    high = max(count - FRAMES_PER_CLIP + 1, 1)
    return seed, torch.randint(0, high, (NUM_CLIPS,), generator=torch.Generator().manual_seed(seed)).tolist()


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def machine_info() -> dict[str, Any]:
    cpu = platform.processor() or "?"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return {"cpu": cpu, "cores": usable, "platform": platform.platform(),
            "python": platform.python_version(), "ffmpeg_cli": ffmpeg_cli_version(),
            "load_average_1min": round(os.getloadavg()[0], 2),
            "index_cache": "off" if os.environ.get("TORCHCODEC_INDEX_CACHE", "").lower() in ("0", "off", "false", "no")
                           else "on (ours reads it in every workload but 'open')"}


def baseline_name(rows: list[Measurement]) -> str:
    """'ours' when our package produced numbers, else 'TorchCodec'."""
    if any(r.peer.startswith("ours ") and r.status == "ok" for r in rows):
        return "ours"
    return "TorchCodec"


def find_row(rows: list[Measurement], workload: str, threads: int, peer: str) -> Measurement | None:
    """The measurement of ``peer`` on ``workload`` at ``threads`` that gave numbers, or None."""
    for row in rows:
        if row.workload == workload and row.threads == threads and row.peer == peer and row.status == "ok":
            return row
    return None


def ratio_against(row: Measurement, rows: list[Measurement], baseline: str) -> str:
    if row.status != "ok":
        return ""
    mode = "approx" if row.seek_mode == "approximate" else "exact"
    other = find_row(rows, row.workload, row.threads, f"{baseline} {mode}")
    return f"{row.min_s / other.min_s:.2f}" if other is not None else "-"


def format_table(rows: list[Measurement], baseline: str) -> str:
    header = ("workload", "thr", "peer", "best ms", "median ms", "N", f"peer/{baseline}", "peak RSS MB",
              "+RSS MB", "note")
    lines: list[tuple[str, ...] | None] = []
    for workload in WORKLOADS.values():
        for threads in dict.fromkeys(r.threads for r in rows):
            group = [r for r in rows if r.workload == workload.name and r.threads == threads]
            for i, row in enumerate(group):
                lines.append(format_line(row, workload.title if i == 0 else "", rows, baseline))
            if group:
                lines.append(None)
    widths = [max(len(header[c]), *(len(line[c]) for line in lines if line))
              for c in range(len(header) - 1)]

    def render(cells: tuple[str, ...]) -> str:
        padded = [cells[c].rjust(widths[c]) if 3 <= c <= 8 else cells[c].ljust(widths[c])
                  for c in range(len(widths))]
        return "  ".join(padded + [cells[-1]]).rstrip()

    out = [render(header), "-" * (sum(widths) + 2 * len(widths) + 10)]
    out += [render(line) if line else "" for line in lines]
    return "\n".join(out).rstrip()


def format_line(row: Measurement, title: str, rows: list[Measurement], baseline: str) -> tuple[str, ...]:
    if row.status == "ok":
        times = (f"{row.min_s * 1e3:.1f}", f"{row.median_s * 1e3:.1f}", str(len(row.times_s)))
        note = row.note
    else:
        times, note = (row.status, "", ""), f"({row.note})"
    memory = (f"{row.peak_rss_mb:.0f}", f"{row.added_rss_mb:.0f}") if row.peak_rss_mb is not None else ("", "")
    return (title, str(row.threads), row.peer, *times, ratio_against(row, rows, baseline), *memory, note)


def format_checks(rows: list[Measurement]) -> str:
    checked = ", ".join(w.name for w in WORKLOADS.values() if w.check_frames)
    lines = [f"Frame check ({checked}): each peer's RGB frames vs the reference's, |difference| in 0..255"]
    for row in rows:
        if row.check is None:
            continue
        c = row.check
        detail = f"vs {c.get('reference', '?')}"
        if "max_abs_diff" in c:
            detail += (f": max {c['max_abs_diff']}, mean {c['mean_abs_diff']},"
                       f" worst frame mean {c['worst_frame_mean_abs_diff']}")
        lines.append(f"  {row.workload:<10} thr={row.threads} {row.peer:<20} {c['verdict']:<18} {detail}")
    return "\n".join(lines)


def format_report(machine: dict[str, Any], job: VideoJob, peers: dict[str, str], settings: RunSettings,
                  rows: list[Measurement], elapsed_s: float, interrupted: str | None = None) -> str:
    baseline = baseline_name(rows)
    count = (f"N={settings.repeats}" if settings.repeats is not None
             else f"N adaptive {settings.min_repeats}..{settings.max_repeats}, ~{settings.budget_s:g} s each")
    lines = [
        f"Machine: {machine['cpu']}, {machine['cores']} usable cores, {machine['platform']},"
        f" Python {machine['python']}; 1-min load average {machine['load_average_1min']} at start,"
        f" {os.getloadavg()[0]:.2f} at end",
        f"Our index cache: {machine.get('index_cache', 'on')}",
        f"File: {job.path} ({job.codec} {job.width}x{job.height}, {job.num_frames} frames,"
        f" {job.fps:g} fps, {job.duration_s:g} s)",
        f"Inputs: uniform {job.uniform_indices}; random {job.random_indices}; t = {job.timestamp_s} s;"
        f" clip starts {job.clip_starts or 'n/a (no torch)'}",
        *([f"Audio: {job.audio_path} ({len(job.audio_ranges)} ranges of {AUDIO_RANGE_SECONDS:g} s)"]
          if job.audio_path else []),
        "Peers:",
        *(f"  {name:<18} {text}" for name, text in peers.items()),
        f"Method: {'warm-up once, then ' if settings.warmup else 'no warm-up, '}best of N repeats"
        f" ({count}); every repeat opens a fresh decoder; output RGB uint8 (OpenCV: BGR);"
        " ours and TorchCodec in NCHW, the others HWC.",
        f"Ratio: peer best / {baseline} best (same workload, threads and seek mode);"
        f" > 1 means {baseline} is faster.",
        "Memory: peak RSS MB is the process's largest resident memory during a repeat (its peak is"
        " reset before each: /proc/self/clear_refs); +RSS MB is that peak less the resident memory"
        " before the repeat (what the work itself held). Blank for the CLI (another process). The loader's:"
        " the largest peak of a worker process (from its start: it includes what fork gave it), and the most"
        " a worker grew.",
    ]
    if baseline != "ours":
        lines.append("NOTE: our package produced no numbers, so ratios are against TorchCodec.")
    if interrupted:
        lines.append(f"INTERRUPTED: {interrupted} hung (over --timeout); the table stops there."
                     " Leave it out with --peers / --seek-modes / --workloads.")
    lines += ["", format_table(rows, baseline), "", format_checks(rows), "",
              f"Total bench time: {elapsed_s:.0f} s"]
    return "\n".join(lines)
