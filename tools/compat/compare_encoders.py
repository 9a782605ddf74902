#!/usr/bin/env python3
"""Encode the same frames and samples with the same settings through TorchCodec 0.17 and through this
package, and compare what comes out.

    .venv/bin/python -P tools/compat/compare_encoders.py [--tc-python /work/tcvenv/bin/python] [-v]

TorchCodec has our import name, so its side runs in its own venv, in a subprocess started from a
directory outside this repository with ``--side torchcodec`` (inputs as .npy files, cases as JSON
on stdin, encoded files written beside the inputs). Both sides run each case in a fresh process:
libx264's macroblock-tree rate control (on by default, off with ``preset="ultrafast"`` or
``x264-params=mbtree=0``) reads memory it has not written, so within a long-lived process its
output varies with what the heap held before (TorchCodec, PyAV and this package alike), while a
fresh process, like the ffmpeg CLI, gives the same bytes every time. Each case is compared three ways:

- bytes: the two encoded files are identical;
- decoded: the ffmpeg CLI decodes both (video to rgb24, audio to f32le, at the stream's own
  colour matrix and range): identical, or the largest difference and the PSNR/SNR between them;
- streams: what ffprobe says about each stream (codec, pixel format, colour matrix and range,
  frame rate, frame count, sample format and rate, channels, duration) and the differences.

The expected differences are this package's deliberate ones (docs/encoders.md): video streams
carry their colour matrix and range (TorchCodec leaves them unspecified, which decoders read as the
same BT.601 limited range it used), and multi-stream files end with packets interleaved by time.
Exit status 0 when every case decodes to identical frames and samples.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent.parent
DEFAULT_TC_PYTHON = Path("/work/tcvenv/bin/python")


def video_cases() -> list[dict[str, Any]]:
    return [
        dict(name="mp4 default", input="clip", format="mp4"),
        dict(name="mp4 yuv444p crf 0", input="clip", format="mp4", kwargs=dict(pixel_format="yuv444p", crf=0)),
        dict(name="mp4 crf 30 ultrafast", input="clip", format="mp4", kwargs=dict(crf=30, preset="ultrafast")),
        dict(name="mkv default", input="clip", format="mkv"),
        dict(name="mov 29.97 fps", input="clip", format="mov", frame_rate=29.97),
        dict(name="avi mpeg4", input="clip", format="avi"),
        dict(name="webm vp9", input="small", format="webm"),
        dict(name="mp4 hevc", input="small", format="mp4", kwargs=dict(codec="hevc")),
        dict(name="mkv ffv1", input="clip", format="mkv", kwargs=dict(codec="ffv1")),
        dict(name="mkv av1 (libaom)", input="small", format="mkv", kwargs=dict(codec="av1", crf=40,
                                                                                 extra_options={"cpu-used": 8})),
        dict(name="gif", input="small", format="gif"),
        dict(name="mp4 bt709 pc", input="clip", format="mp4",
             kwargs=dict(extra_options={"colorspace": "bt709", "color_range": "pc"})),
        dict(name="mp4 channels-last input (ours)", input="clip", format="mp4", ours_layout="channels_last",
             kwargs=dict(pixel_format="yuv444p", crf=0)),
        dict(name="mp4 odd size yuv444p", input="odd", format="mp4", kwargs=dict(pixel_format="yuv444p")),
    ]


def audio_cases() -> list[dict[str, Any]]:
    return [
        dict(name="wav", format="wav"),
        dict(name="flac", format="flac"),
        dict(name="mp3", format="mp3"),
        dict(name="mp3 64 kb/s mono", format="mp3", kwargs=dict(bit_rate=64_000, num_channels=1)),
        dict(name="aac in mp4", format="mp4"),
        dict(name="vorbis in ogg", format="ogg"),
        dict(name="opus 48 kHz", format="opus", kwargs=dict(sample_rate=48_000)),
        dict(name="flac 16 kHz", format="flac", kwargs=dict(sample_rate=16_000)),
        dict(name="wav strided input (ours)", format="wav", ours_layout="interleaved"),
    ]


def make_inputs(directory: Path) -> None:
    import numpy as np
    width, height, count = 320, 240, 30
    raw = subprocess.run(["ffmpeg", "-v", "error", "-f", "lavfi", "-i", f"testsrc2=s={width}x{height}:r=30",
                          "-frames:v", str(count), "-pix_fmt", "rgb24", "-f", "rawvideo", "-"],
                         capture_output=True, check=True).stdout
    clip = np.frombuffer(raw, np.uint8).reshape(count, height, width, 3).transpose(0, 3, 1, 2).copy()
    np.save(directory / "clip.npy", clip)
    np.save(directory / "small.npy", np.ascontiguousarray(clip[:10, :, ::2, ::2]))
    np.save(directory / "odd.npy", np.ascontiguousarray(clip[:10, :, :121, :161]))
    t = np.arange(3 * 44_100) / 44_100
    samples = np.stack([0.5 * np.sin(2 * np.pi * 440 * t), 0.3 * np.sin(2 * np.pi * 660 * t + 1)]).astype(np.float32)
    np.save(directory / "audio.npy", samples)


def encode_side(side: str, directory: Path, cases: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Encode every case with one package (the one ``import torchcodec`` finds) into ``directory``."""
    import numpy as np
    from torchcodec.encoders import AudioEncoder, Encoder, VideoEncoder
    if side == "ours":
        import torchcodec
        torchcodec.set_bridge("numpy")
    else:
        import torch
    results = []
    for case in cases:
        out = directory / f"{side}-{case['id']}.{case['format']}"
        try:
            if case["kind"] == "video":
                data = np.load(directory / f"{case['input']}.npy")
                if side == "ours" and case.get("ours_layout") == "channels_last":
                    data = np.ascontiguousarray(data.transpose(0, 2, 3, 1)).transpose(0, 3, 1, 2)
                frames = data if side == "ours" else torch.from_numpy(data)
                VideoEncoder(frames, frame_rate=case.get("frame_rate", 30)).to_file(str(out), **case.get("kwargs", {}))
            elif case["kind"] == "audio":
                data = np.load(directory / "audio.npy")
                if side == "ours" and case.get("ours_layout") == "interleaved":
                    data = np.ascontiguousarray(data.T).T
                samples = data if side == "ours" else torch.from_numpy(data)
                AudioEncoder(samples, sample_rate=44_100).to_file(str(out), **case.get("kwargs", {}))
            else:                                       # video + audio, many small calls
                clip = np.load(directory / "clip.npy")
                audio = np.load(directory / "audio.npy")
                convert = (lambda a: a) if side == "ours" else torch.from_numpy
                encoder = Encoder()
                video = encoder.add_video(height=clip.shape[2], width=clip.shape[3], frame_rate=30)
                sound = encoder.add_audio(sample_rate=44_100, num_channels=2)
                with encoder.open_file(str(out)):
                    for i in range(clip.shape[0]):
                        video.add_frames(convert(clip[i:i + 1]))
                        sound.add_samples(convert(np.ascontiguousarray(audio[:, i * 1470:(i + 1) * 1470])))
            results.append(dict(id=case["id"], path=str(out)))
        except Exception as error:            # noqa: BLE001 - reported as the case's outcome
            results.append(dict(id=case["id"], error=f"{type(error).__name__}: {error}"))
    return results


def probe(path: str) -> list[dict[str, Any]]:
    keys = ("codec_name", "pix_fmt", "color_space", "color_range", "r_frame_rate", "nb_frames", "sample_fmt",
            "sample_rate", "channels", "duration", "time_base")
    out = subprocess.run(["ffprobe", "-v", "error", "-count_frames", "-show_entries",
                          "stream=" + ",".join(keys + ("nb_read_frames",)), "-of", "json", path],
                         capture_output=True, text=True, check=True).stdout
    return [{k: v for k, v in s.items() if k in keys + ("nb_read_frames",)} for s in json.loads(out)["streams"]]


def decode(path: str, kind: str) -> Any:
    import numpy as np
    if kind == "audio":
        raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-map", "0:a:0", "-f", "f32le", "-"],
                             capture_output=True, check=True).stdout
        return np.frombuffer(raw, np.float32)
    raw = subprocess.run(["ffmpeg", "-v", "error", "-i", path, "-map", "0:v:0", "-pix_fmt", "rgb24", "-f", "rawvideo",
                          "-"], capture_output=True, check=True).stdout
    return np.frombuffer(raw, np.uint8)


def compare_decoded(a: Any, b: Any, kind: str) -> str:
    import numpy as np
    if a.shape != b.shape:
        return f"different lengths ({a.size} vs {b.size} values)"
    if np.array_equal(a, b):
        return "identical"
    diff = a.astype(np.float64) - b.astype(np.float64)
    if kind == "audio":
        snr = 10 * math.log10(float(np.mean(b.astype(np.float64) ** 2)) / max(float(np.mean(diff ** 2)), 1e-30))
        return f"max |diff| {np.abs(diff).max():.3g}, SNR {snr:.1f} dB"
    mse = float(np.mean(diff ** 2))
    return f"max |diff| {np.abs(diff).max():.0f}, PSNR {10 * math.log10(255 ** 2 / mse):.1f} dB"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tc-python", type=Path, default=DEFAULT_TC_PYTHON, help="TorchCodec 0.17's Python")
    parser.add_argument("--side", choices=("torchcodec", "ours"), help=argparse.SUPPRESS)
    parser.add_argument("--dir", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("-v", "--verbose", action="store_true", help="print ffprobe's view of every stream")
    parser.add_argument("--only", help="run only the cases whose name contains this text")
    args = parser.parse_args()
    if args.side:
        cases = json.loads(sys.stdin.read())
        print(json.dumps(encode_side(args.side, args.dir, cases)))
        return 0

    cases = ([dict(c, kind="video") for c in video_cases()] + [dict(c, kind="audio") for c in audio_cases()]
             + [dict(name="mp4 video + audio, 30 small calls each", kind="both", format="mp4")])
    cases = [case for case in cases if args.only is None or args.only in case["name"]]
    for i, case in enumerate(cases):
        case["id"] = f"case{i:02d}"
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        make_inputs(directory)
        their_results, our_results = {}, {}
        sides = (("torchcodec", [str(args.tc_python)], tempfile.gettempdir(), their_results),
                 ("ours", [sys.executable, "-P"], str(REPO), our_results))
        for case in cases:
            for side, python, cwd, results in sides:
                run = subprocess.run([*python, str(Path(__file__).resolve()), "--side", side, "--dir", str(directory)],
                                     input=json.dumps([case]), capture_output=True, text=True, cwd=cwd,
                                     env=dict(os.environ, PYTHONPATH=""))
                if run.returncode != 0:
                    print(run.stderr)
                    return 2
                results.update({r["id"]: r for r in json.loads(run.stdout.strip().splitlines()[-1])})
        failures = 0
        print(f"{'case':40s} {'bytes':10s} {'decoded':28s} streams")
        for case in cases:
            ours, tc = our_results[case["id"]], their_results[case["id"]]
            if "error" in ours or "error" in tc:
                same = ("error" in ours) == ("error" in tc)
                failures += not same
                print(f"{case['name']:40s} errors: ours {ours.get('error', '-')!s:.60} | TorchCodec "
                      f"{tc.get('error', '-')!s:.60}")
                continue
            same_bytes = Path(ours["path"]).read_bytes() == Path(tc["path"]).read_bytes()
            kinds = ("video", "audio") if case["kind"] == "both" else (case["kind"],)
            decoded = "; ".join(compare_decoded(decode(ours["path"], k), decode(tc["path"], k), k) for k in kinds)
            failures += any(part != "identical" for part in decoded.split("; "))
            ours_probe, tc_probe = probe(ours["path"]), probe(tc["path"])
            differences = [f"stream {i}: {k} {tc_s.get(k)} -> {o_s.get(k)}" for i, (o_s, tc_s)
                           in enumerate(zip(ours_probe, tc_probe)) for k in sorted(set(o_s) | set(tc_s))
                           if o_s.get(k) != tc_s.get(k)]
            print(f"{case['name']:40s} {'identical' if same_bytes else 'differ':10s} {decoded:28s} "
                  f"{'same' if not differences else '; '.join(differences)}")
            if args.verbose:
                print(f"    ours: {ours_probe}\n    TorchCodec: {tc_probe}")
        print(f"\n{len(cases)} cases, {failures} with different decoded frames/samples or outcomes")
        return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
