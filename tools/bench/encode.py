#!/usr/bin/env python3
"""Encoding speed against TorchCodec 0.17, PyAV and the ffmpeg CLI, with the same settings.

    .venv/bin/python -P tools/bench/encode.py [--repeats 5] [--only video|audio] [--match TEXT] [--frames 300]
    .venv/bin/python -P tools/bench.py encode [same options]

Workloads (each the best of ``--repeats`` wall-clock runs, writing a file in a scratch folder; the
contenders take turns, one run each per round, so that all see the same changes of load):

- video: 300 1920x1080 RGB frames (30 distinct testsrc2 frames, fed 10 times, 30 at a time) to
  H.264 (libx264, yuv420p, crf 23) in mp4, with preset ultrafast and medium; once with one x264
  thread (TorchCodec's default, and what the others are told: ``threads=1``), once with FFmpeg's
  automatic thread count (``threads=0``, the CLI's default);
- audio: 60 s of stereo float32 at 48 kHz to AAC (m4a) and to FLAC.

Contenders: this package (in this process, numpy inputs), TorchCodec 0.17 (its venv, one
subprocess per workload started outside this repository, timing its own calls), PyAV (in this
process; its wheel carries its own FFmpeg and x264 builds, so it is the same work but not the same
code) and the ffmpeg CLI reading raw rgb24 / f32le from a pipe (``-f rawvideo -pix_fmt rgb24 -i -``).
The table gives each time and our ratio to each contender (below 1: we are faster). The load of
the machine (``os.getloadavg``) is printed before and after: other work on the machine skews every
number, so compare ratios from the same run.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

DEFAULT_TC_PYTHON = Path("/work/tcvenv/bin/python")
WIDTH, HEIGHT, DISTINCT = 1920, 1080, 30
AUDIO_RATE, AUDIO_SECONDS = 48_000, 60


def make_inputs(directory: Path) -> None:
    import numpy as np
    raw = subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"testsrc2=s={WIDTH}x{HEIGHT}:r=30",
                          "-frames:v", str(DISTINCT), "-pix_fmt", "rgb24", "-f", "rawvideo", "-"],
                         capture_output=True, check=True).stdout
    np.save(directory / "frames.npy", np.frombuffer(raw, np.uint8).reshape(DISTINCT, HEIGHT, WIDTH, 3))
    rng = np.random.default_rng(0)
    t = np.arange(AUDIO_RATE * AUDIO_SECONDS) / AUDIO_RATE
    music = np.stack([0.4 * np.sin(2 * np.pi * 440 * t) + 0.05 * rng.standard_normal(t.size),
                      0.3 * np.sin(2 * np.pi * 554 * t + 1) + 0.05 * rng.standard_normal(t.size)])
    np.save(directory / "audio.npy", music.astype(np.float32))


def workloads(frames: int) -> list[dict[str, Any]]:
    out = []
    for preset in ("ultrafast", "medium"):
        for threads in ("1", "0"):
            out.append(dict(kind="video", name=f"{frames} x 1080p H.264 {preset}, threads={threads}",
                            preset=preset, threads=threads, frames=frames, ext="mp4"))
    out.append(dict(kind="audio", name=f"{AUDIO_SECONDS} s stereo 48 kHz to AAC", ext="m4a", codec="aac"))
    out.append(dict(kind="audio", name=f"{AUDIO_SECONDS} s stereo 48 kHz to FLAC", ext="flac", codec="flac"))
    return out


def best_of(repeats: int, run: Callable[[int], None]) -> float:
    times = []
    for i in range(repeats):
        start = time.perf_counter()
        run(i)
        times.append(time.perf_counter() - start)
    return min(times)


def interleaved(repeats: int, contenders: dict[str, Callable[[], float]]) -> dict[str, float]:
    """The best time of each contender over ``repeats`` rounds, each round running every contender once."""
    best = {name: float("inf") for name in contenders}
    for _ in range(repeats):
        for name, run in contenders.items():
            best[name] = min(best[name], run())
    return best


# ---- contenders -----------------------------------------------------------------------------------

def run_torchcodec_like(package: str, directory: Path, work: dict[str, Any], repeats: int) -> float:
    """This package (``package="ours"``) or TorchCodec (run inside its venv): the Encoder API, fed
    30 frames at a time (video) or everything at once (audio)."""
    import numpy as np
    from torchcodec.encoders import AudioEncoder, Encoder
    if package == "ours":
        import torchcodec
        torchcodec.set_bridge("numpy")
        convert = np.ascontiguousarray
    else:
        import torch

        def convert(a):
            return torch.from_numpy(np.ascontiguousarray(a))
    if work["kind"] == "video":
        batch = convert(np.load(directory / "frames.npy").transpose(0, 3, 1, 2))

        def run(i):
            encoder = Encoder()
            stream = encoder.add_video(height=HEIGHT, width=WIDTH, frame_rate=30, pixel_format="yuv420p",
                                       preset=work["preset"], extra_options={"threads": work["threads"]})
            with encoder.open_file(str(directory / f"{package}-{i}.mp4")):
                for _ in range(work["frames"] // DISTINCT):
                    stream.add_frames(batch)
    else:
        samples = convert(np.load(directory / "audio.npy"))

        def run(i):
            AudioEncoder(samples, sample_rate=AUDIO_RATE).to_file(str(directory / f"{package}-{i}.{work['ext']}"))
    return best_of(repeats, run)


def run_pyav(directory: Path, work: dict[str, Any], repeats: int) -> float:
    import av
    import numpy as np
    if work["kind"] == "video":
        frames = np.load(directory / "frames.npy")

        def run(i):
            with av.open(str(directory / f"pyav-{i}.mp4"), "w") as container:
                stream = container.add_stream("libx264", rate=30)
                stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
                stream.codec_context.thread_count = int(work["threads"])
                stream.options = {"preset": work["preset"]}
                for k in range(work["frames"]):
                    frame = av.VideoFrame.from_ndarray(frames[k % DISTINCT], format="rgb24")
                    container.mux(stream.encode(frame))
                container.mux(stream.encode(None))
    else:
        samples = np.load(directory / "audio.npy")

        def run(i):
            with av.open(str(directory / f"pyav-{i}.{work['ext']}"), "w") as container:
                stream = container.add_stream(work["codec"], rate=AUDIO_RATE, layout="stereo")
                chunk = 4096
                for start in range(0, samples.shape[1], chunk):
                    frame = av.AudioFrame.from_ndarray(np.ascontiguousarray(samples[:, start:start + chunk]),
                                                       format="fltp", layout="stereo")
                    frame.sample_rate = AUDIO_RATE
                    container.mux(stream.encode(frame))
                container.mux(stream.encode(None))
    return best_of(repeats, run)


def run_cli(directory: Path, work: dict[str, Any], repeats: int) -> float:
    import numpy as np
    if work["kind"] == "video":
        data = np.load(directory / "frames.npy").tobytes()
        command = ["ffmpeg", "-v", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", f"{WIDTH}x{HEIGHT}",
                   "-r", "30", "-i", "-", "-c:v", "libx264", "-preset", work["preset"], "-threads", work["threads"],
                   "-pix_fmt", "yuv420p"]
        feeds = work["frames"] // DISTINCT
    else:
        data = np.ascontiguousarray(np.load(directory / "audio.npy").T).tobytes()
        command = ["ffmpeg", "-v", "error", "-y", "-f", "f32le", "-ar", str(AUDIO_RATE), "-ac", "2", "-i", "-",
                   "-c:a", work["codec"]]
        feeds = 1

    def run(i):
        process = subprocess.Popen(command + [str(directory / f"cli-{i}.{work['ext']}")], stdin=subprocess.PIPE)
        for _ in range(feeds):
            process.stdin.write(data)
        process.stdin.close()
        if process.wait() != 0:
            raise RuntimeError(f"ffmpeg failed: {' '.join(command)}")
    return best_of(repeats, run)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--frames", type=int, default=300, help="video frames (a multiple of 30)")
    parser.add_argument("--only", choices=("video", "audio"))
    parser.add_argument("--match", default="", help="only the workloads whose name contains this text")
    parser.add_argument("--tc-python", type=Path, default=DEFAULT_TC_PYTHON)
    parser.add_argument("--side", help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.side:                                   # inside TorchCodec's venv
        work = json.loads(sys.stdin.read())
        print(json.dumps(run_torchcodec_like("torchcodec", args.dir, work, args.repeats)))
        return 0

    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} / {os.getloadavg()[1]:.1f} "
          f"(1 / 5 min) at start", flush=True)
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        make_inputs(directory)
        for work in workloads(args.frames):
            if (args.only and work["kind"] != args.only) or args.match not in work["name"]:
                continue
            def torchcodec_once(work=work) -> float:
                theirs = subprocess.run([str(args.tc_python), str(Path(__file__).resolve()), "--side", "torchcodec",
                                         "--dir", str(directory), "--repeats", "1"],
                                        input=json.dumps(work), capture_output=True, text=True,
                                        cwd=tempfile.gettempdir(), env=dict(os.environ, PYTHONPATH=""))
                if theirs.returncode != 0:
                    print(theirs.stderr[-2000:], file=sys.stderr)
                    return float("nan")
                return float(theirs.stdout.strip().splitlines()[-1])

            def pyav_once(work=work) -> float:
                try:
                    return run_pyav(directory, work, 1)
                except ImportError:
                    return float("nan")

            times = interleaved(args.repeats, {
                "ours": lambda work=work: run_torchcodec_like("ours", directory, work, 1),
                "TorchCodec": torchcodec_once,
                "PyAV": pyav_once,
                "ffmpeg CLI": lambda work=work: run_cli(directory, work, 1),
            })
            rows.append((work["name"], times))
            print(f"{work['name']}: " + ", ".join(f"{k} {v:.2f} s" for k, v in times.items()), flush=True)
    print(f"\nload average {os.getloadavg()[0]:.1f} / {os.getloadavg()[1]:.1f} (1 / 5 min) at the end\n")
    print("| workload | ours (s) | TorchCodec (s) | PyAV (s) | ffmpeg CLI (s) | ours/TorchCodec | ours/PyAV "
          "| ours/CLI |")
    print("|---|---|---|---|---|---|---|---|")
    for name, t in rows:
        print(f"| {name} | {t['ours']:.2f} | {t['TorchCodec']:.2f} | {t['PyAV']:.2f} | {t['ffmpeg CLI']:.2f} | "
              f"{t['ours'] / t['TorchCodec']:.3f} | {t['ours'] / t['PyAV']:.3f} | {t['ours'] / t['ffmpeg CLI']:.3f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
