#!/usr/bin/env python3
"""Differential probe: the same public calls through TorchCodec 0.17 and through this package.

Each case opens a decoder (VideoDecoder or AudioDecoder, with options and transforms) on one file
and makes a list of calls on it, in order (so that state left by one call can change the next).
Both sides record, per call, either the exception (type and message) or what came back: pts,
durations, shapes and the data itself. The comparison prints every difference:

    frames          same pts (to 1e-9 s) and pixels: "identical", or the max difference
    timestamps      other pts (other frames picked)
    error           one side raised, or raised another type (ours counts as the same when it is
                    an instance of TorchCodec's type: our errors may be, e.g., ValueError and
                    RuntimeError at once)
    metadata        a field's value differs (the "metadata" group: every field, its type, the
                    field order and repr, of every video and audio stream of every corpus file
                    and of TorchCodec's test media; whole floats that TorchCodec gives as ints
                    count as the same, a deliberate difference)

    python tools/compat/probe.py                          # our corpus (tools/make_media.py)
    python tools/compat/probe.py --tc-checkout DIR        # also TorchCodec's test/resources
    python tools/compat/probe.py --only resize -v         # one group of cases, every verdict
    python tools/compat/probe.py --all-media              # every video file of both corpora

TorchCodec has our import name, so its side runs in its own venv (``--tc-venv``, default the
benchmark's, created by ``tools/bench.py`` if missing) in a subprocess started with ``--side``.
Ours runs under the torch bridge, so that both sides return torch tensors. Exit status: 0 when
every case agrees within the tolerance (``--max-diff``, default 0).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

TOOLS = Path(__file__).resolve().parent.parent
DEFAULT_TC_VENV = Path.home() / ".cache" / "torchcodec-bench" / "tc-venv"

# Files of tools/make_media.py and of TorchCodec's test/resources (when a checkout is given).
OUR_VIDEOS = ("h264_bframes.mp4", "h264_offset2.5s.mp4", "h264_offset2.5s.mkv", "h264_vfr.mkv", "vp9.webm",
              "vp9_161x121.webm", "hevc_bframes.mp4", "av1.mp4", "mpeg2_mp2.mpg", "h264_rotate90.mp4",
              "h264_yuv444_161x121.mp4", "h264_10bit.mp4", "h264_fullrange.mp4", "h264_editlist.mp4",
              "mpeg4_bframes.avi", "vp8.webm", "h264_bframes.ts")
TC_VIDEOS = ("nasa_13013.mp4", "h265_video.mp4", "av1_video.mkv", "bt709_full_range.mp4", "bt601_full_range.mp4",
             "bt601_limited_range.mp4", "bt2020_10bit.mp4", "h264_10bits.mp4", "h265_10bits.mp4",
             "nasa_13013_rotated.mp4", "discard_first_keyframe.mp4")
RESIZE_SIZES = ((405, 628), (135, 340), (90, 160), (240, 320), (100, 64), (17, 33), (720, 1280))


def video_cases(name: str) -> list[dict[str, Any]]:
    """Every public frame method, in both seek modes, with values at and around the ends."""
    cases = []
    for mode in ("exact", "approximate"):
        def case(group: str, calls: list, **options: Any) -> None:
            cases.append(dict(group=group, file=name, kind="video", options=dict(options, seek_mode=mode), calls=calls))

        case("index", [["get_frame_at", 0], ["get_frame_at", 3], ["get_frame_at", -1], ["getitem", 2],
                       ["get_frames_at", [5, 1, 5, -2]], ["get_frames_in_range", 0, 30],
                       ["get_frames_in_range", 3, 40, 7]])
        case("time", [["get_frame_played_at", 0.0], ["get_frame_played_at", 0.5], ["get_frame_played_at", 1.04],
                      ["get_frame_played_at", 3.0], ["get_frames_played_at", [0.1, 0.7, 1.3, 0.1]]])
        case("range", [["get_frames_played_in_range", 0.0, 1.0], ["get_frames_played_in_range", 0.3, 1.7],
                       ["get_frames_played_in_range", 0.5, 0.5], ["get_frames_played_in_range", 0.2, 1.2, 7.0],
                       ["get_frames_played_in_range", 0.0, 1.0, 30.0]])
        case("fps", [["get_all_frames", 5.0], ["get_all_frames", 12.5]])
        case("end", [["end_played_at"], ["end_played_at_many"], ["end_range"], ["end_range_fps"]])
        # Times at and next to frame boundaries (k / average_fps after the start), ranges whose frame
        # count (stop - start) * fps ends in .5, in both directions of rounding.
        case("bounds", [["frame_time", method, k, eps] for method in ("one", "many", "range")
                        for k in (1, 7, 16) for eps in (-1e-6, 0.0, 1e-6)]
             + [["range_rel", 0.0, 0.5, 5.0], ["range_rel", 0.25, 0.75, 9.0], ["range_rel", 0.1, 0.3, 12.5],
                ["range_rel", 0.0, 0.1, 25.0], ["range_rel", 0.5, 0.7, 7.5]])
        # State carried from one call to the next: index requests that follow each other decode on.
        case("sequence", [["get_frame_at", 3], ["get_frame_at", 4], ["getitem", 5], ["get_frames_in_range", 6, 9],
                          ["get_frame_at", 9], ["iter", 4], ["get_frames_at", [2, 3, 4]], ["get_frame_at", 5],
                          ["get_all_frames", 5.0], ["get_all_frames", 5.0], ["range_rel", 0.0, 0.5],
                          ["get_frame_at", 1], ["played_at_rel", 0.5], ["get_frame_at", 2]])
        for size in RESIZE_SIZES:
            case("resize", [["get_frames_at", [0, 5]]], transforms=[["Resize", list(size)]])
        case("resize", [["get_frames_at", [0, 5]]], transforms=[["Resize", [100, 160]], ["CenterCrop", [64, 96]]])
        case("resize", [["get_frames_at", [0, 5]]], transforms=[["CenterCrop", [96, 130]], ["Resize", [48, 64]]])
        case("resize", [["get_frames_at", [0, 5]]], transforms=[["Resize", [90, 160]]], output_dtype="float32")
        case("crop", [["get_frames_at", [0, 5]]], transforms=[["CenterCrop", [63, 97]]])
    return cases


NAN, INF = float("nan"), float("inf")


def error_cases(video: str, audio: str) -> list[dict[str, Any]]:
    """Bad arguments, at opening and per call: the same exception types as TorchCodec."""
    video_calls = [["get_frame_at", -100000], ["get_frame_at", 100000], ["get_frame_at", 1.5],
                   ["get_frames_at", [0.3]], ["get_frames_at", [100000]], ["get_frames_at", [-100000]],
                   ["getitem", "0"], ["get_frames_in_range", 0, 10, -1],
                   ["get_frame_played_at", -1.0], ["get_frame_played_at", NAN], ["get_frame_played_at", "1"],
                   ["get_frames_played_at", [-1.0]], ["get_frames_played_at", [100000.0]],
                   ["get_frames_played_at", ["bad"]], ["get_frames_played_at", [NAN]],
                   ["get_frames_played_in_range", 1.0, 0.0], ["get_frames_played_in_range", 0.0, NAN],
                   ["get_frames_played_in_range", NAN, 1.0], ["get_frames_played_in_range", 0.0, 100000.0],
                   ["get_frames_played_in_range", 0.0, 1.0, 0], ["get_frames_played_in_range", 0.0, 1.0, -10],
                   ["get_frames_played_in_range", 0.0, 1.0, NAN], ["get_frames_played_in_range", 1.0, 1.0, 0],
                   ["get_all_frames", 0]]
    audio_calls = [["get_samples_played_in_range", 3.0, 2.0], ["get_samples_played_in_range", 9999.0],
                   ["get_samples_played_in_range", 9999.0, 10000.0], ["get_samples_played_in_range", 0.0, NAN],
                   ["get_samples_played_in_range", NAN, 1.0], ["get_samples_played_in_range", 0.0, INF],
                   ["get_samples_played_in_range", -INF, 1.0], ["get_samples_played_in_range", "1"]]
    cases = [dict(group="errors", file=video, kind="video", options={}, calls=video_calls),
             dict(group="errors", file=audio, kind="audio", options={}, calls=audio_calls)]
    for options in ({"seek_mode": "bad"}, {"dimension_order": "bad"}, {"num_ffmpeg_threads": 1.5},
                    {"device": "bad"}, {"stream_index": 40}, {"output_dtype": "bad"},
                    {"custom_frame_mappings": "{}"}, {"custom_frame_mappings": "not json"},
                    {"custom_frame_mappings": "{}", "seek_mode": "approximate"}):
        cases.append(dict(group="errors", file=video, kind="video", options=options, calls=[["len"]]))
    for options in ({"num_channels": 0}, {"num_channels": 15}, {"sample_rate": 1.5}, {"stream_index": 40}):
        cases.append(dict(group="errors", file=audio, kind="audio", options=options, calls=[["get_all_samples"]]))
    return cases


MEDIA_SUFFIXES = (".mp4", ".mkv", ".webm", ".avi", ".mpg", ".ts", ".mov", ".mp3", ".m4a", ".aac", ".flac", ".mka",
                  ".ogg", ".opus", ".wav", ".swf")


def stream_types(path: Path) -> list[str]:
    """codec_type of every stream of ``path``, by ffprobe (empty when ffprobe cannot read it)."""
    probe = subprocess.run(["ffprobe", "-v", "error", "-of", "json", "-show_entries", "stream=codec_type", str(path)],
                           capture_output=True, text=True)
    if probe.returncode:
        return []
    return [stream.get("codec_type", "") for stream in json.loads(probe.stdout).get("streams", [])]


def metadata_cases(path: Path) -> list[dict[str, Any]]:
    """The metadata (fields, their order, types and values, and repr) of every video and audio
    stream of a file: VideoDecoder in both seek modes, AudioDecoder, and WavDecoder for WAV."""
    cases = []
    for index, kind in enumerate(stream_types(path)):
        if kind == "video":
            for mode in ("exact", "approximate"):
                cases.append(dict(group="metadata", file=path.name, kind="video",
                                  options=dict(stream_index=index, seek_mode=mode),
                                  calls=[["metadata"], ["repr"], ["len"]]))
        elif kind == "audio":
            cases.append(dict(group="metadata", file=path.name, kind="audio", options=dict(stream_index=index),
                              calls=[["metadata"], ["repr"]]))
    if path.suffix == ".wav":
        cases.append(dict(group="metadata", file=path.name, kind="wav", options={}, calls=[["metadata"], ["repr"]]))
    return cases


def audio_cases(name: str) -> list[dict[str, Any]]:
    cases = []
    for options in ({}, {"sample_rate": 16000}, {"num_channels": 1}):
        cases.append(dict(group="audio", file=name, kind="audio", options=options,
                          calls=[["metadata"], ["get_all_samples"], ["get_samples_played_in_range", 0.5, 1.5],
                                 ["get_samples_played_in_range", 0.0, None], ["audio_past_start"]]))
    return cases


# ---- one side ----------------------------------------------------------------------------------

def _transforms(spec: list) -> list:
    from torchcodec import transforms

    return [getattr(transforms, name)(size) for name, size in spec]


def _call(decoder: Any, call: list) -> Any:
    """One call of a case; the pseudo-calls probe the ends of the stream from its metadata."""
    name, args = call[0], call[1:]
    m = decoder.metadata
    if name == "metadata":
        names = [f.name for f in dataclasses.fields(m)]
        return dict({k: _plain(getattr(m, k)) for k in names}, _field_order=["list", names])
    if name == "repr":
        return {"repr": ["str", repr(m)]}
    if name == "len":
        return len(decoder)
    if name == "getitem":
        return decoder[args[0]]
    if name == "end_played_at":
        return decoder.get_frame_played_at(m.end_stream_seconds - 1e-6)
    if name == "end_played_at_many":
        return decoder.get_frames_played_at([m.end_stream_seconds - 1e-6])
    if name == "end_range":
        return decoder.get_frames_played_in_range(m.end_stream_seconds - 0.3, m.end_stream_seconds)
    if name == "end_range_fps":
        return decoder.get_frames_played_in_range(m.begin_stream_seconds, m.end_stream_seconds, fps=9)
    if name == "frame_time":           # a time k frames (at average_fps) after the start, moved by eps
        method, k, eps = args
        t = m.begin_stream_seconds + k / m.average_fps + eps
        if method == "one":
            return decoder.get_frame_played_at(t)
        if method == "many":
            return decoder.get_frames_played_at([t, t + 0.25])
        return decoder.get_frames_played_in_range(t, min(t + 0.2, m.end_stream_seconds))
    if name == "range_rel":            # a range (with fps when given) relative to the start
        return decoder.get_frames_played_in_range(m.begin_stream_seconds + args[0], m.begin_stream_seconds + args[1],
                                                  *args[2:])
    if name == "played_at_rel":
        return decoder.get_frame_played_at(m.begin_stream_seconds + args[0])
    if name == "iter":                 # the first frames by iteration (the sequence protocol)
        import itertools

        import torch
        return torch.stack(list(itertools.islice(iter(decoder), args[0])))
    if name == "audio_past_start":
        return decoder.get_samples_played_in_range(m.begin_stream_seconds + 1e-7, m.begin_stream_seconds + 0.5)
    return getattr(decoder, name)(*args)


def _plain(value: Any) -> Any:
    """A metadata value as JSON can carry it: [type name, value] (Fractions as text)."""
    return [type(value).__name__, value if isinstance(value, (int, float, str, type(None))) else str(value)]


def run_side(media: list[Path], scratch: Path, todo: list[dict[str, Any]], ours: bool) -> list[list[dict[str, Any]]]:
    """Run every case with the torchcodec importable here; frames are written under ``scratch``."""
    import torch
    import torchcodec
    from torchcodec.decoders import AudioDecoder, VideoDecoder, WavDecoder

    decoders = {"video": VideoDecoder, "audio": AudioDecoder, "wav": WavDecoder}

    if ours:
        torchcodec.set_bridge("torch")
    elif hasattr(torchcodec, "set_bridge"):
        raise SystemExit(f"{torchcodec.__file__} is this repository's package, not TorchCodec")
    results = []
    for number, case in enumerate(todo):
        path = next(str(folder / case["file"]) for folder in media if (folder / case["file"]).exists())
        options = dict(case["options"])
        if "transforms" in options:
            options["transforms"] = _transforms(options["transforms"])
        if options.get("output_dtype") == "float32":
            options["output_dtype"] = torch.float32
        outcome: list[dict[str, Any]] = []
        try:
            decoder = decoders[case["kind"]](path, **options)
        except Exception as exc:
            results.append([_error(exc)])
            continue
        for k, call in enumerate(case["calls"]):
            try:
                value = _call(decoder, call)
            except Exception as exc:
                outcome.append(_error(exc))
                continue
            outcome.append(_describe(value, scratch / f"{'ours' if ours else 'tc'}-{number}-{k}.bin"))
        results.append(outcome)
    return results


def _error(exc: Exception) -> dict[str, Any]:
    return {"error": type(exc).__name__, "bases": [c.__name__ for c in type(exc).__mro__],
            "message": str(exc)[:300]}


def _describe(value: Any, path: Path) -> dict[str, Any]:
    import torch

    if isinstance(value, (dict, int)):
        return {"value": value}
    data = value if isinstance(value, torch.Tensor) else value.data
    data = data.contiguous()
    path.write_bytes(data.numpy().tobytes())
    described = {"shape": list(data.shape), "dtype": str(data.dtype).replace("torch.", ""), "data": str(path)}
    if not isinstance(value, torch.Tensor):
        described["pts"] = torch.as_tensor(value.pts_seconds, dtype=torch.float64).flatten().tolist()
        described["duration"] = torch.as_tensor(value.duration_seconds, dtype=torch.float64).flatten().tolist()
    return described


# ---- comparison --------------------------------------------------------------------------------

def _max_diff(a: dict[str, Any], b: dict[str, Any]) -> float:
    import numpy as np

    x = np.fromfile(a["data"], dtype=a["dtype"]).astype(np.float64)
    y = np.fromfile(b["data"], dtype=b["dtype"]).astype(np.float64)
    if a["dtype"] == "float32":
        return float(np.abs(x - y).max(initial=0) * 255)
    return float(np.abs(x - y).max(initial=0))


def verdict(a: dict[str, Any], b: dict[str, Any], max_diff: float) -> tuple[str, str]:
    """(kind, detail) for one call: kind "same" or a difference."""
    if "error" in a or "error" in b:
        if "error" in a and "error" in b and b["error"] in a.get("bases", [a["error"]]):
            return "same", f"both raise {b['error']}" + (f" (ours: {a['error']})" if a["error"] != b["error"] else "")
        return "error", f"ours {a.get('error', 'returns')}: {a.get('message', '')} | TC {b.get('error', 'returns')}: {b.get('message', '')}"
    if "value" in a or "value" in b:
        if a.get("value") == b.get("value"):
            return "same", ""
        va, vb = a.get("value"), b.get("value")
        if isinstance(va, dict) and isinstance(vb, dict):
            missing = {k: [None, "<missing>"] for k in set(va) ^ set(vb)}
            va, vb = dict(missing, **va), dict(missing, **vb)
            values = [f"{k}: ours {va[k][1]!r} TC {vb[k][1]!r}" for k in va if va[k][1] != vb[k][1]]
            if values:
                return "metadata", "; ".join(values)
            # Whole seconds and rates: TorchCodec's JSON turns them into ints, ours stay floats
            # (a deliberate difference, see torchcodec/decoders/_metadata.py).
            types = [f"{k}: ours {va[k][0]} TC {vb[k][0]}" for k in va
                     if va[k][0] != vb[k][0] and (va[k][0], vb[k][0]) != ("float", "int")]
            if types:
                return "metadata-type", "; ".join(types)
            return "same", ""
        return "value", f"ours {va} TC {vb}"
    if a["shape"] != b["shape"]:
        return "shape", f"ours {a['shape']} TC {b['shape']}"
    for key in ("pts", "duration"):
        if key in a and not all(abs(x - y) < 1e-9 for x, y in zip(a[key], b[key])):
            return "timestamps", f"{key} ours {[round(x, 4) for x in a[key]]} TC {[round(x, 4) for x in b[key]]}"
    diff = _max_diff(a, b)
    if diff > max_diff:
        return "pixels", f"max difference {diff:g}"
    return "same", f"max difference {diff:g}" if diff else ""


def compare(todo: list[dict[str, Any]], ours: list, theirs: list, max_diff: float, verbose: bool) -> int:
    counts: dict[str, int] = {}
    for case, a_calls, b_calls in zip(todo, ours, theirs):
        label = f"{case['file']} {case['options']}"
        for k in range(max(len(a_calls), len(b_calls))):
            a = a_calls[k] if k < len(a_calls) else {"error": "(not reached)"}
            b = b_calls[k] if k < len(b_calls) else {"error": "(not reached)"}
            kind, detail = verdict(a, b, max_diff)
            counts[kind] = counts.get(kind, 0) + 1
            call = case["calls"][k] if k < len(case["calls"]) else ["(open)"]
            if kind != "same" or verbose:
                print(f"{kind.upper():10} {label} {call}: {detail}")
    total = sum(counts.values())
    print(f"{total} calls: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return 0 if counts.get("same", 0) == total else 1


def _video_files(folder: Path) -> list[str]:
    """Names of the files in ``folder`` that ffprobe finds a video stream in (images left out)."""
    names = []
    for path in sorted(folder.iterdir()):
        if path.suffix not in (".mp4", ".mkv", ".webm", ".avi", ".mpg", ".ts", ".mov"):
            continue
        probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v", "-show_entries", "stream=index",
                                "-of", "csv=p=0", str(path)], capture_output=True, text=True)
        if probe.returncode == 0 and probe.stdout.strip():
            names.append(path.name)
    return names


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tc-venv", type=Path, default=DEFAULT_TC_VENV)
    parser.add_argument("--tc-checkout", type=Path, help="a checkout of meta-pytorch/torchcodec: adds its test media")
    parser.add_argument("--only", help="run only this group of cases (metadata, index, time, range, fps, end, "
                                       "bounds, sequence, resize, crop, audio, errors)")
    parser.add_argument("--all-media", action="store_true",
                        help="every video file of our corpus and of TorchCodec's test/resources, not only a selection")
    parser.add_argument("--file", help="run only the cases of this file")
    parser.add_argument("--max-diff", type=float, default=0.0, help="pixel difference still counted as the same")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every call, not only differences")
    parser.add_argument("--side", choices=("torchcodec",), help=argparse.SUPPRESS)
    parser.add_argument("--media", type=Path, action="append", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.side == "torchcodec":          # in TorchCodec's venv: cases on stdin, results on stdout
        json.dump(run_side(args.media, args.scratch, json.load(sys.stdin), ours=False), sys.stdout)
        return 0
    sys.path.insert(0, str(TOOLS))
    import make_media
    media = [Path(make_media.ensure_media(list(OUR_VIDEOS))[OUR_VIDEOS[0]]).parent.resolve()]
    names = list(OUR_VIDEOS)
    audio = ["aac_music_44100_8s.m4a", "mp3_music_22050_8s.mp3", "h264_aac.mp4"]
    make_media.ensure_media(audio)
    corpus = make_media.ensure_media()       # every file of the corpus, for the metadata cases
    described = sorted(corpus.values())
    if args.tc_checkout:
        resources = (args.tc_checkout / "test" / "resources").resolve()
        media.append(resources)
        names += list(TC_VIDEOS)
        audio.append("nasa_13013.mp4.audio.mp3")
        described += sorted(p for p in resources.iterdir() if p.suffix in MEDIA_SUFFIXES)
    if args.all_media:
        names += [name for folder in media for name in _video_files(folder) if name not in names]
    todo = [c for name in names for c in video_cases(name)] + [c for name in audio for c in audio_cases(name)]
    todo += error_cases(names[0], audio[0])
    if args.only in (None, "metadata"):
        todo += [c for path in described for c in metadata_cases(path)]
    todo = [c for c in todo if (args.only is None or c["group"] == args.only) and (args.file is None or c["file"] == args.file)]
    from bench.torchcodec_venv import ensure_tc_venv

    tc_python = ensure_tc_venv(args.tc_venv)
    with tempfile.TemporaryDirectory() as scratch:
        command = [str(tc_python), "-P", str(Path(__file__).resolve()), "--side", "torchcodec", "--scratch", scratch]
        for folder in media:
            command += ["--media", str(folder)]
        tc = subprocess.run(command, input=json.dumps(todo), capture_output=True, text=True, cwd=scratch)
        if tc.returncode:
            print(tc.stderr, file=sys.stderr)
            raise SystemExit("the TorchCodec side failed")
        theirs = json.loads(tc.stdout)
        ours = run_side(media, Path(scratch), todo, ours=True)
        return compare(todo, ours, theirs, args.max_diff, args.verbose)


if __name__ == "__main__":
    sys.exit(main())
