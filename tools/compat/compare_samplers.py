#!/usr/bin/env python3
"""Run the same sampler calls through TorchCodec 0.17 and through this package, and compare clips.

For each case both sides call ``torch.manual_seed(seed)`` and then the sampler with the same
arguments (ours under the torch bridge with ``generator=None``), so matching clip timestamps show
that our random draws are TorchCodec's, in the same order. Errors are compared by type.

    python tools/compat/compare_samplers.py               # this package's venv (with torch)
    python tools/compat/compare_samplers.py --tc-venv DIR # TorchCodec's venv (default: bench's)

TorchCodec has our import name, so its side runs in its own venv, in a subprocess started with
``--side torchcodec`` (cases as JSON on stdin, results as JSON on stdout, frames as raw files).
Each side also records the indices or times that the sampler hands to ``get_frames_at`` /
``get_frames_played_at``: that request is the samplers' whole job, and must be identical, bit for
bit. What the decoders return for the same request is classified apart: the same frames (timestamps
to 1e-9 s, pixels within 2), the same frames with pts rounded differently (the packages convert pts
to seconds with different rounding), or other frames (a sampling time on a frame boundary, where
that rounding decides; seek_mode="approximate" on variable frame rate, where both guess).
Exit status 0 when every request is identical and the outcomes (clips or error types) agree.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).resolve().parent.parent
DEFAULT_TC_VENV = Path.home() / ".cache" / "torchcodec-bench" / "tc-venv"
FILES = ("h264_bframes.mp4", "h264_offset2.5s.mp4", "h264_vfr.mkv", "h264_25fps_2s.mp4")


def cases() -> list[dict[str, Any]]:
    """(file, seek_mode, sampler, kwargs, seed): every parameter and policy, errors included."""
    index_kwargs = [
        dict(num_clips=5, num_frames_per_clip=4),
        dict(num_clips=3, num_frames_per_clip=6, num_indices_between_frames=3),
        dict(num_clips=7, num_frames_per_clip=5, num_indices_between_frames=2, sampling_range_start=-20,
             sampling_range_end=None, policy="wrap"),
        dict(num_clips=4, num_frames_per_clip=8, sampling_range_start=10, sampling_range_end=-1,
             policy="repeat_last"),
        dict(num_clips=4, num_frames_per_clip=8, sampling_range_end=10_000, policy="wrap"),
        dict(num_clips=120, num_frames_per_clip=2),
        dict(num_clips=3, num_frames_per_clip=8, sampling_range_start=-3, sampling_range_end=10_000, policy="error"),
        dict(num_clips=1, num_frames_per_clip=150),
        dict(num_clips=0),
    ]
    time_kwargs = [
        dict(num_frames_per_clip=4),
        dict(num_frames_per_clip=3, seconds_between_frames=0.25),
        dict(num_frames_per_clip=6, seconds_between_frames=0.1, sampling_range_start=1.0, sampling_range_end=1e9,
             policy="wrap"),
        dict(num_frames_per_clip=6, seconds_between_frames=0.1, sampling_range_end=1e9, policy="repeat_last"),
        dict(num_frames_per_clip=5, sampling_range_start=0.5, sampling_range_end=1.5),
        dict(num_frames_per_clip=5, sampling_range_end=1e9, policy="error"),
        dict(num_frames_per_clip=2, sampling_range_start=-1.0),
        dict(num_frames_per_clip=2, seconds_between_frames=0.0),
    ]
    out: list[dict[str, Any]] = []
    for name in FILES:
        for mode in ("exact", "approximate"):
            for seed in (0, 1, 1234):
                for kw in index_kwargs:
                    out.append(dict(file=name, seek_mode=mode, sampler="clips_at_random_indices", kwargs=kw, seed=seed))
                for kw in time_kwargs:
                    out.append(dict(file=name, seek_mode=mode, sampler="clips_at_random_timestamps",
                                    kwargs=dict(kw, num_clips=6), seed=seed))
            for kw in index_kwargs:
                out.append(dict(file=name, seek_mode=mode, sampler="clips_at_regular_indices", kwargs=kw, seed=0))
            for between_starts in (0.1, 0.7, 1 / 3, 0.25, 1.1):
                for kw in time_kwargs:
                    out.append(dict(file=name, seek_mode=mode, sampler="clips_at_regular_timestamps",
                                    kwargs=dict(kw, seconds_between_clip_starts=between_starts), seed=0))
    return out


def run_side(media: Path, frames_dir: Path, todo: list[dict[str, Any]], ours: bool) -> list[dict[str, Any]]:
    """Run the cases with the torchcodec importable here (ours under the torch bridge, or TorchCodec)."""
    import torch
    import torchcodec
    from torchcodec import samplers
    from torchcodec.decoders import VideoDecoder

    if ours:
        torchcodec.set_bridge("torch")
    elif hasattr(torchcodec, "set_bridge"):
        raise SystemExit(f"{torchcodec.__file__} is this repository's package, not TorchCodec")
    results = []
    for number, case in enumerate(todo):
        decoder = VideoDecoder(str(media / case["file"]), seek_mode=case["seek_mode"])
        requests = spy_on_batch_requests(decoder)
        torch.manual_seed(case["seed"])
        try:
            batch = getattr(samplers, case["sampler"])(decoder, **case["kwargs"])
        except Exception as exc:
            results.append({"error": type(exc).__name__, "message": str(exc)[:200], "requests": requests})
            continue
        path = frames_dir / f"{'ours' if ours else 'tc'}-{number}.rgb"
        data = batch.data.contiguous()
        path.write_bytes(ctypes.string_at(data.data_ptr(), data.numel()))
        results.append({"requests": requests, "pts": batch.pts_seconds.tolist(), "duration": batch.duration_seconds.tolist(),
                        "shape": list(data.shape), "frames": str(path),
                        "after": torch.rand(1, dtype=torch.float64).item()})   # the generator's state after
    return results


def max_pixel_diff(ours: str, theirs: str) -> int:
    import numpy as np

    return int(np.abs(np.fromfile(ours, dtype=np.uint8).astype(np.int16) - np.fromfile(theirs, dtype=np.uint8)).max())


def same_frames(a: list[list[float]], b: list[list[float]]) -> bool:
    """The same frames: timestamps equal to 1e-9 s (pts-to-seconds conversions may round differently)."""
    return all(abs(x - y) < 1e-9 for row_a, row_b in zip(a, b) for x, y in zip(row_a, row_b))


def spy_on_batch_requests(decoder: Any) -> list[list[float]]:
    """Record the indices or times that the sampler asks ``decoder`` for (a list that fills up)."""
    requests: list[list[float]] = []
    for name in ("get_frames_at", "get_frames_played_at"):
        def spy(*args: Any, _method: Any = getattr(decoder, name), **kwargs: Any) -> Any:
            wanted = args[0] if args else next(iter(kwargs.values()))
            requests.append([float(x) for x in wanted])
            return _method(*args, **kwargs)
        setattr(decoder, name, spy)
    return requests


def compare(todo: list[dict[str, Any]], ours: list[dict[str, Any]], theirs: list[dict[str, Any]]) -> int:
    """Print every difference and a summary; 1 when some case picks other clips or other errors."""
    counts = dict.fromkeys(("identical", "same error", "same request, pts rounded differently",
                            "same request, decoder returns other frames", "TorchCodec fails, ours decodes",
                            "DIFFERENT"), 0)
    for case, a, b in zip(todo, ours, theirs):
        what = f"{case['file']} {case['seek_mode']} {case['sampler']} seed={case['seed']} {case['kwargs']}"
        if a["requests"] != b["requests"]:
            verdict = "DIFFERENT"
            print(f"DIFFERENT request {what}:\n  ours {a['requests']}\n  TC   {b['requests']}")
        elif "error" in a or "error" in b:
            if a.get("error") == b.get("error"):
                verdict = "same error"
            elif b.get("error") == "RuntimeError" and "error" not in a:
                verdict = "TorchCodec fails, ours decodes"
                print(f"{verdict}: {what}: {b['message']}")
            else:
                verdict = "DIFFERENT"
                print(f"DIFFERENT {what}: ours {a.get('error', 'ok')} ({a.get('message', '')}), "
                      f"TorchCodec {b.get('error', 'ok')} ({b.get('message', '')})")
        elif a["shape"] != b["shape"] or a["after"] != b["after"]:
            verdict = "DIFFERENT"
            print(f"DIFFERENT {what}: shape {a['shape']} / {b['shape']}, generator after {a['after']} / {b['after']}")
        elif not (same_frames(a["pts"], b["pts"]) and same_frames(a["duration"], b["duration"])):
            verdict = "same request, decoder returns other frames"
            print(f"{verdict}: {what}\n  ours {a['pts']}\n  TC   {b['pts']}")
        elif max_pixel_diff(a["frames"], b["frames"]) > 2:
            verdict = "DIFFERENT"
            print(f"DIFFERENT pixels {what}")
        elif a["pts"] != b["pts"] or a["duration"] != b["duration"]:
            verdict = "same request, pts rounded differently"
        else:
            verdict = "identical"
        counts[verdict] += 1
    print(f"{len(todo)} cases: " + ", ".join(f"{n} {k}" for k, n in counts.items()))
    return 1 if counts["DIFFERENT"] else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tc-venv", type=Path, default=DEFAULT_TC_VENV)
    parser.add_argument("--media", type=Path, help="folder of tools/make_media.py's files (default: made now)")
    parser.add_argument("--side", choices=("torchcodec",), help=argparse.SUPPRESS)
    parser.add_argument("--frames-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side == "torchcodec":          # in TorchCodec's venv: cases on stdin, results on stdout
        todo = json.load(sys.stdin)
        json.dump(run_side(args.media, args.frames_dir, todo, ours=False), sys.stdout)
        return 0
    if args.media is None:
        sys.path.insert(0, str(TOOLS))
        import make_media
        args.media = Path(make_media.ensure_media(list(FILES))[FILES[0]]).parent
    todo = cases()
    with tempfile.TemporaryDirectory() as scratch:
        tc = subprocess.run([str(args.tc_venv / "bin" / "python"), "-P", str(Path(__file__).resolve()), "--side",
                             "torchcodec", "--media", str(args.media.resolve()), "--frames-dir", scratch],
                            input=json.dumps(todo), capture_output=True, text=True, cwd=scratch)
        if tc.returncode:
            print(tc.stderr, file=sys.stderr)
            raise SystemExit("the TorchCodec side failed")
        theirs = json.loads(tc.stdout)
        ours = run_side(args.media.resolve(), Path(scratch), todo, ours=True)
        return compare(todo, ours, theirs)


if __name__ == "__main__":
    sys.exit(main())
