#!/usr/bin/env python3
"""Run the same building-block pipelines through TorchCodec 0.17 and through this package, and compare.

For every file of the corpus (tools/make_media.py), both sides run the same public calls of
``torchcodec.decoders``' building blocks and record what came back:

    container     get_container_metadata: every field of the container and of every stream
    demuxer       Demuxer(...).metadata, the streams followed and each stream's header metadata
    index         VideoStream.scan(): every per-frame array, the content metadata, index_at and
                  key_frame_seconds_for at times on, between and around the frames
    packets       how many packets each followed stream gives, in which order
    frames        every RawFrame of a full decode (decode + drain): pts, duration, pixel format,
                  colour fields, bit depth, size, rotation and the bytes of every plane
    rgb           ColorConverter(output_dtype=uint8 / float32 / "auto").convert of those frames
    seek          Demuxer.seek(t) + reset(): the first frames decoded after it
    audio         RawAudioSamples of a full audio decode (dtype, shape, pts, the samples), and
                  AudioConverter() / AudioConverter(sample_rate=16000, num_channels=1) over it
    errors        the exception types of bad stream selections and misuse (decode after drain,
                  a packet from before a seek, draining an unused AudioConverter)

Arrays are compared byte for byte (float arrays: the largest difference is reported when they
differ). Exception types count as the same when ours is an instance of TorchCodec's.

    python tools/compat/compare_blocks.py --tc-venv DIR     # TorchCodec 0.17's venv
    python tools/compat/compare_blocks.py --files h264_bframes.mp4 -v

TorchCodec has our import name, so its side runs in its own venv (with numpy installed), in a
subprocess started with ``--side torchcodec``. Exit status 0 when every case agrees.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

TOOLS = Path(__file__).resolve().parent.parent
DEFAULT_TC_VENV = Path.home() / ".cache" / "torchcodec-bench" / "tc-venv"
FILES = ("h264_bframes.mp4", "h264_aac.mp4", "h264_rotate90.mp4", "h264_10bit.mp4", "h264_yuv444_161x121.mp4",
         "h264_bt709_fullrange.mp4", "h264_editlist.mp4", "h264_offset2.5s.mkv", "h264_vfr.mkv", "hevc_bframes.mp4",
         "hevc_bt2020_10bit.mp4", "vp9.webm", "av1.mp4", "mpeg4_bframes.avi", "h264_bframes.ts", "mp3_stereo_44100.mp3",
         "aac_stereo_48000.m4a", "flac_s24_stereo_88200.flac", "opus_stereo_48000.ogg", "wav_s16_stereo_44100.wav",
         "vorbis_mono_11025.ogg", "two_video_streams.mkv", "wav_s24_5.1_48000.wav")


# ---- one side ---------------------------------------------------------------------------------------

class Recorder:
    """Collects a side's results: scalars as JSON, arrays as raw files named by their key."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.values: dict[str, Any] = {}

    def value(self, key: str, value: Any) -> None:
        self.values[key] = value

    def array(self, key: str, data: Any) -> None:
        import numpy as np
        data = data.cpu().numpy() if hasattr(data, "cpu") else np.asarray(data)
        data = np.ascontiguousarray(data)
        name = hashlib.sha1(key.encode()).hexdigest() + ".raw"
        (self.out / name).write_bytes(data.tobytes())
        self.values[key] = {"array": name, "dtype": str(data.dtype), "shape": list(data.shape)}

    def attempt(self, key: str, call: Callable[[], Any]) -> Any:
        """``call()``; an exception is recorded under ``key`` (its type's names, most derived first)."""
        try:
            return call()
        except Exception as error:  # noqa: BLE001 - recorded for the comparison
            self.values[key] = {"error": [klass.__name__ for klass in type(error).__mro__], "message": str(error)[:300]}
            return None


def fields(metadata: Any) -> dict[str, Any]:
    import dataclasses
    out = {}
    for field in dataclasses.fields(metadata):
        value = getattr(metadata, field.name)
        if field.name == "streams":
            value = [fields(stream) for stream in value]
        elif not isinstance(value, (int, float, str, type(None), list)):
            value = str(value)
        out[field.name] = value
    return out


def probe_times(pts: list[float], durations: list[float]) -> list[float]:
    times = [-1.0, 0.0, 1e9, float("nan")]
    for p, d in list(zip(pts, durations))[:: max(1, len(pts) // 12)]:
        times += [p, p + d / 2, p + d, math.nextafter(p, -math.inf)]
    return times


def run_file(torchcodec: Any, path: Path, rec: Recorder) -> None:
    from torchcodec import decoders as d

    rec.attempt("container", lambda: rec.value("container", fields(d.get_container_metadata(str(path)))))
    container = rec.values.get("container")
    if not isinstance(container, dict) or "error" in container:
        return
    has_video = container["best_video_stream_index"] is not None
    has_audio = container["best_audio_stream_index"] is not None
    for selector in ("video", "audio", "all", (), 99, "bogus", ("all", 0)):
        def open_demuxer(selector: Any = selector) -> Any:
            demuxer = d.Demuxer(str(path), streams=selector)
            return {"streams": [repr(s) for s in demuxer.streams], "metadata": fields(demuxer.metadata),
                    "stream_metadata": [fields(s.metadata) for s in demuxer.streams]}
        key = f"demuxer[{selector!r}]"
        result = rec.attempt(key, open_demuxer)
        if result is not None:
            rec.value(key, result)
    if has_video:
        run_video(d, path, rec)
    if has_audio:
        run_audio(d, path, rec)


def run_video(d: Any, path: Path, rec: Recorder) -> None:
    demuxer = d.Demuxer(str(path))
    stream = demuxer.streams[0]
    index = stream.scan()
    pts = [float(x) for x in index.pts_seconds.tolist()]
    durations = [float(x) for x in index.duration_seconds.tolist()]
    rec.value("index.len", len(index))
    rec.array("index.pts_seconds", index.pts_seconds)
    rec.array("index.duration_seconds", index.duration_seconds)
    rec.array("index.key_frame_indices", index.key_frame_indices)
    rec.array("index.is_key_frame", index.is_key_frame)
    for name in ("num_frames_from_content", "begin_stream_seconds_from_content", "end_stream_seconds_from_content",
                 "average_fps_from_content"):
        rec.value(f"index.{name}", getattr(index, name))
    times = probe_times(pts, durations)
    rec.value("index.index_at", [index.index_at(t) for t in times])
    rec.value("index.key_frame_seconds_for", [index.key_frame_seconds_for(t) for t in times if not math.isnan(t)])

    decoder = stream.make_decoder()
    frames = []
    packets = 0
    for packet in demuxer:
        packets += 1
        frames += decoder.decode(packet)
    frames += decoder.drain()
    rec.value("packets", packets)
    rec.value("frames.count", len(frames))
    described = []
    for k, frame in enumerate(frames):
        described.append([frame.pts_seconds, frame.duration_seconds, frame.pixel_format, frame.color_space,
                          frame.color_range, frame.color_primaries, frame.color_transfer_characteristic,
                          frame.bit_depth, frame.width, frame.height, frame.rotation])
        if k % 7 == 0 or k == len(frames) - 1:
            planes = rec.attempt(f"frames[{k}].planes", lambda frame=frame: frame.planes)
            for c, plane in enumerate(planes or ()):
                rec.array(f"frames[{k}].planes[{c}]", plane)
            for dtype in ("uint8", "float32", "auto"):
                converter = d.ColorConverter(output_dtype=_dtype(dtype))
                rgb = converter.convert(frame)
                rec.value(f"rgb[{k}][{dtype}].pts", [rgb.pts_seconds, rgb.duration_seconds])
                rec.array(f"rgb[{k}][{dtype}]", rgb.data)
    rec.value("frames", described)
    rec.value("drained.decode", rec.attempt("drained.decode", lambda: decoder.decode(packet)) and "no error")

    for target in (0.0, pts[len(pts) // 2], pts[-1], index.key_frame_seconds_for(pts[len(pts) // 3])):
        demuxer.seek(target)
        decoder.reset()
        first = []
        for packet in demuxer:
            first += [f.pts_seconds for f in decoder.decode(packet)]
            if len(first) >= 3:
                break
        rec.value(f"seek[{target}]", first[:3])
    stale = next(iter(demuxer), None)
    demuxer.seek(0.0)
    decoder.reset()
    if stale is not None:
        decoder.decode(next(iter(demuxer)))
        rec.value("stale_packet", rec.attempt("stale_packet", lambda: decoder.decode(stale)) and "no error")


def _dtype(name: str) -> Any:
    """An output dtype as each side takes it: TorchCodec wants torch's dtypes, ours takes names too."""
    try:
        import torch
    except ImportError:
        return name
    return getattr(torch, name, name)


def run_audio(d: Any, path: Path, rec: Recorder) -> None:
    import numpy as np
    for options in ({}, {"sample_rate": 16000, "num_channels": 1}):
        demuxer = d.Demuxer(str(path), streams="audio")
        decoder = demuxer.streams[0].make_decoder()
        converter = d.AudioConverter(**options)
        key = f"audio{sorted(options.items())}"
        raws, chunks = [], []
        for packet in demuxer:
            for raw in decoder.decode(packet):
                raws.append(raw)
                chunks.append(converter.convert(raw))
        for raw in decoder.drain():
            raws.append(raw)
            chunks.append(converter.convert(raw))
        chunks.append(converter.drain())
        rec.value(f"{key}.chunks", [[c.pts_seconds, c.duration_seconds, c.sample_rate, int(c.data.shape[1])]
                                   for c in chunks])
        rec.array(f"{key}.samples", np.concatenate([np.asarray(_numpy(c.data)) for c in chunks], axis=1))
        if not options:
            rec.value("audio.raw", [[r.pts_seconds, r.duration_seconds, r.sample_rate, r.num_channels, r.num_samples,
                                     str(r.data.dtype).replace("torch.", "")] for r in raws])
            rec.array("audio.raw.samples", np.concatenate([_numpy(r.data) for r in raws], axis=1))
    rec.attempt("audio.drain_unused", lambda: d.AudioConverter().drain())


def _numpy(data: Any) -> Any:
    return data.cpu().numpy() if hasattr(data, "cpu") else data


def run_side(media: Path, out: Path, files: list[str]) -> dict[str, Any]:
    import torchcodec
    results = {}
    for name in files:
        folder = out / name
        folder.mkdir(parents=True, exist_ok=True)
        rec = Recorder(folder)
        rec.attempt("file", lambda: run_file(torchcodec, media / name, rec))
        results[name] = rec.values
    return results


# ---- the comparison ---------------------------------------------------------------------------------

def same_value(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, (int, float)) or isinstance(b, float) and isinstance(a, (int, float)):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)
    return a == b


def compare_entry(key: str, ours: Any, theirs: Any, ours_dir: Path, theirs_dir: Path) -> str | None:
    """None when the two agree, else what differs."""
    import numpy as np
    if isinstance(theirs, dict) and "error" in theirs:
        if isinstance(ours, dict) and "error" in ours and theirs["error"][0] in ours["error"]:
            return None
        return f"TorchCodec raised {theirs['error'][0]} ({theirs['message'][:120]}); ours gave {str(ours)[:160]}"
    if isinstance(ours, dict) and "error" in ours:
        return f"ours raised {ours['error'][0]} ({ours['message'][:160]}); TorchCodec gave {str(theirs)[:120]}"
    if isinstance(theirs, dict) and "array" in theirs:
        if not (isinstance(ours, dict) and "array" in ours):
            return f"ours gave {ours!r}, TorchCodec an array"
        if (ours["dtype"], ours["shape"]) != (theirs["dtype"], theirs["shape"]):
            return f"dtype/shape {ours['dtype']}{ours['shape']} vs TorchCodec's {theirs['dtype']}{theirs['shape']}"
        a = np.frombuffer((ours_dir / ours["array"]).read_bytes(), dtype=ours["dtype"])
        b = np.frombuffer((theirs_dir / theirs["array"]).read_bytes(), dtype=theirs["dtype"])
        if a.tobytes() == b.tobytes():
            return None
        diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
        return f"arrays differ: max {diff.max():g} at {int(diff.argmax())}, {int((diff > 0).sum())} elements"
    return None if same_value(ours, theirs) else f"ours {str(ours)[:200]} vs TorchCodec {str(theirs)[:200]}"


def compare(files: list[str], ours: dict[str, Any], theirs: dict[str, Any], ours_out: Path, theirs_out: Path,
            verbose: bool) -> int:
    differences = 0
    counted = 0
    for name in files:
        mine, other = ours.get(name, {}), theirs.get(name, {})
        for key in sorted(set(mine) | set(other)):
            counted += 1
            if key not in mine or key not in other:
                verdict = f"only {'ours' if key in mine else 'TorchCodec'} has it: {str(mine.get(key, other.get(key)))[:160]}"
            else:
                verdict = compare_entry(key, mine[key], other[key], ours_out / name, theirs_out / name)
            if verdict is not None:
                differences += 1
                print(f"DIFF {name} {key}: {verdict}")
            elif verbose:
                print(f"same {name} {key}")
    print(f"{counted} results compared over {len(files)} files: {counted - differences} agree, {differences} differ")
    return differences


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tc-venv", type=Path, default=DEFAULT_TC_VENV, help="TorchCodec 0.17's venv (with numpy)")
    parser.add_argument("--media", type=Path, default=None, help="the corpus (default: tools/make_media.py's)")
    parser.add_argument("--files", nargs="+", default=list(FILES))
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--side", choices=("torchcodec",), help=argparse.SUPPRESS)
    parser.add_argument("-v", "--verbose", action="store_true", help="print every agreeing result too")
    args = parser.parse_args()
    if args.media is None:
        sys.path.insert(0, str(TOOLS))
        from make_media import MEDIA_DIR
        args.media = MEDIA_DIR
    if args.side == "torchcodec":
        json.dump(run_side(args.media, args.out, args.files), sys.stdout)
        return 0
    with tempfile.TemporaryDirectory() as scratch:
        theirs_out, ours_out = Path(scratch) / "torchcodec", Path(scratch) / "ours"
        tc = subprocess.run([str(args.tc_venv / "bin" / "python"), "-P", str(Path(__file__).resolve()), "--side",
                             "torchcodec", "--media", str(args.media.resolve()), "--out", str(theirs_out), "--files",
                             *args.files], capture_output=True, text=True, cwd=scratch, check=False)
        if tc.returncode != 0:
            print(tc.stderr[-4000:], file=sys.stderr)
            raise SystemExit("the TorchCodec side failed")
        theirs = json.loads(tc.stdout)
        ours = run_side(args.media.resolve(), ours_out, args.files)
        return 1 if compare(args.files, ours, theirs, ours_out, theirs_out, args.verbose) else 0


if __name__ == "__main__":
    sys.exit(main())
