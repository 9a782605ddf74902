#!/usr/bin/env python3
"""Generate the test media corpus with the ffmpeg CLI.

Every file is made from lavfi sources (testsrc2, aevalsrc, ...), so nothing is downloaded. Files are
cached in ``MEDIA_DIR`` (``$TORCHCODEC_MEDIA_DIR`` or ``<repo>/media-cache/``) next to a sidecar
``<name>.recipe.json`` that records a short hash of the recipe; a file whose recipe changed is made
again. Output is written to a temporary name and renamed, so an interrupted run never leaves a half
file behind.

Usage::

    python tools/make_media.py [--out DIR] [--bench] [--list] [names...]

As a module (tests load it by path)::

    paths = make_media.ensure_media()            # {name: pathlib.Path}
    paths = make_media.ensure_media(["h264_bframes.mp4"])
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import pathlib
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent
MEDIA_DIR = pathlib.Path(os.environ.get("TORCHCODEC_MEDIA_DIR") or REPO_ROOT / "media-cache")

# Bump to remake every file (e.g. when the command-line scaffolding below changes).
CACHE_VERSION = 1

FFMPEG = os.environ.get("FFMPEG", "ffmpeg")
FFPROBE = os.environ.get("FFPROBE", "ffprobe")

Check = Callable[[pathlib.Path], "str | None"]


@dataclasses.dataclass(frozen=True)
class Spec:
    """How to make one corpus file.

    ``args`` are the ffmpeg arguments between the global options and the output path. ``{in0}``,
    ``{in1}``... in them stand for the paths of the corpus files named in ``inputs`` (made first).
    ``alternatives`` are other argument lists tried in order when ``args`` fails or ``check``
    rejects its output (for options that differ between FFmpeg versions). ``check`` returns an
    error message, or None when the file has the property it is made for.
    """

    description: str
    args: tuple[str, ...]
    inputs: tuple[str, ...] = ()
    alternatives: tuple[tuple[str, ...], ...] = ()
    check: Check | None = dataclasses.field(default=None, compare=False)
    bench: bool = False

    @property
    def variants(self) -> tuple[tuple[str, ...], ...]:
        return (self.args, *self.alternatives)


class MediaError(RuntimeError):
    """A corpus file could not be made."""


# --------------------------------------------------------------------------------------------
# Building blocks for the recipes


def _lavfi(graph: str) -> list[str]:
    return ["-f", "lavfi", "-i", graph]


def _testsrc(size: str = "320x240", rate: int | str = 30, duration: float = 2) -> list[str]:
    return _lavfi(f"testsrc2=size={size}:rate={rate}:duration={duration}")


# testsrc2 rounds odd sizes down to even ones: odd sizes are scaled from this.
_TESTSRC_320x240 = "testsrc2=size=320x240:rate=30:duration=2"


def _tone(sample_rate: int, layout: str, num_channels: int, duration: float = 2) -> list[str]:
    """A sine per channel at a distinct frequency (220 Hz + 110 Hz * channel), amplitude 0.5."""
    exprs = "|".join(f"0.5*sin(2*PI*{220 + 110 * c}*t)" for c in range(num_channels))
    return _lavfi(f"aevalsrc=exprs='{exprs}':s={sample_rate}:c={layout}:d={duration}")


def _music(sample_rate: int, duration: float, *, mono: bool = False) -> list[str]:
    """Rising chirps plus deterministic noise: a signal whose every frame differs (for seeking)."""
    left = "0.4*sin(2*PI*(200+400*t)*t)+0.1*random(1)-0.05"
    right = "0.3*sin(2*PI*(3000-150*t)*t)+0.1*random(2)-0.05"
    exprs = left if mono else f"{left}|{right}"
    layout = "mono" if mono else "stereo"
    return _lavfi(f"aevalsrc=exprs='{exprs}':s={sample_rate}:c={layout}:d={duration}")


_VBITEXACT = ["-flags:v", "+bitexact"]
_ABITEXACT = ["-flags:a", "+bitexact"]


def _bench_x264(gop: int, pix_fmt: str = "yuv420p") -> list[str]:
    """The benchmark clips' H.264: x264's medium preset, fixed GOPs of ``gop`` frames, 3 B-frames."""
    return ["-c:v", "libx264", "-preset", "medium", "-threads", "4", "-g", str(gop), "-keyint_min", str(gop),
            "-sc_threshold", "0", "-bf", "3", "-pix_fmt", pix_fmt, *_VBITEXACT]


def _x264(*, gop: int = 30, bframes: int = 3, pix_fmt: str = "yuv420p") -> list[str]:
    args = [
        "-c:v", "libx264", "-preset", "veryfast", "-threads", "1",
        "-g", str(gop), "-keyint_min", str(gop), "-sc_threshold", "0", "-bf", str(bframes),
    ]
    if bframes:
        args += ["-x264-params", "b-adapt=0"]  # always use the B-frames asked for
    return [*args, "-pix_fmt", pix_fmt, *_VBITEXACT]


def _x265(*, gop: int = 30, pix_fmt: str = "yuv420p", extra: str = "") -> list[str]:
    params = (
        f"pools=none:frame-threads=1:keyint={gop}:min-keyint={gop}:scenecut=0"
        f":bframes=3:b-adapt=0:log-level=error{extra}"
    )
    return ["-c:v", "libx265", "-preset", "ultrafast", "-x265-params", params,
            "-pix_fmt", pix_fmt, "-tag:v", "hvc1", *_VBITEXACT]


def _aac(bit_rate: str = "128k") -> list[str]:
    return ["-c:a", "aac", "-b:a", bit_rate, *_ABITEXACT]


# --------------------------------------------------------------------------------------------
# Checks run on freshly made files (so a recipe that silently stops working fails loudly)


def _probe(path: pathlib.Path, *args: str) -> dict:
    out = _run([FFPROBE, "-v", "error", "-of", "json", *args, str(path)])
    return json.loads(out)


def _display_rotation(path: pathlib.Path) -> float | None:
    streams = _probe(path, "-select_streams", "v:0", "-show_streams")["streams"]
    side_data = streams[0].get("side_data_list", []) if streams else []
    for sd in side_data:
        if sd.get("side_data_type") == "Display Matrix" and "rotation" in sd:
            return float(sd["rotation"])
    return None


def _check_rotation(degrees: int) -> Check:
    def check(path: pathlib.Path) -> str | None:
        rotation = _display_rotation(path)
        if rotation is None or round(rotation) % 360 != degrees % 360:
            return f"display matrix rotation is {rotation}, wanted {degrees} (mod 360)"
        return None

    return check


def _check_discarded_packets(path: pathlib.Path) -> str | None:
    packets = _probe(path, "-select_streams", "v:0", "-show_entries", "packet=flags")["packets"]
    if not any("D" in p.get("flags", "") for p in packets):
        return "no packet carries the discard flag: the muxer wrote no edit list that drops frames"
    return None


def _check_interlaced(path: pathlib.Path) -> str | None:
    field_order = _probe(path, "-select_streams", "v:0", "-show_entries", "stream=field_order")["streams"][0]
    if field_order.get("field_order") not in ("tt", "tb"):
        return f"field_order is {field_order.get('field_order')}, wanted interlaced (tt or tb)"
    return None


def _check_start_time(lo: float, hi: float) -> Check:
    def check(path: pathlib.Path) -> str | None:
        start = float(_probe(path, "-show_format")["format"].get("start_time", "nan"))
        if not lo <= start <= hi:
            return f"start_time is {start}, wanted within [{lo}, {hi}]"
        return None

    return check


def _check_sample_aspect_ratio(expected: str) -> Check:
    def check(path: pathlib.Path) -> str | None:
        stream = _probe(path, "-show_streams", "-select_streams", "v:0")["streams"][0]
        found = stream.get("sample_aspect_ratio")
        return None if found == expected else f"sample_aspect_ratio is {found}, wanted {expected}"

    return check


# --------------------------------------------------------------------------------------------
# The corpus


def _rotated(degrees: int, source: str) -> Spec:
    # FFmpeg >= 6 has the per-input -display_rotation option (counter-clockwise degrees); FFmpeg
    # 5.1 writes a display matrix from the "rotate" tag when stream copying. Both are verified.
    return Spec(
        f"H.264 ({source} remuxed) with a display matrix rotating by {degrees} degrees "
        "(ffprobe side data rotation == this value mod 360)",
        ("-display_rotation:v:0", str(degrees), "-i", "{in0}", "-c", "copy"),
        inputs=(source,),
        alternatives=(
            ("-i", "{in0}", "-c", "copy", "-metadata:s:v:0", f"rotate={degrees}"),
            ("-display_rotation:v:0", str(-degrees), "-i", "{in0}", "-c", "copy"),
        ),
        check=_check_rotation(degrees),
    )


def _coloured(codec: list[str], *, matrix: str, full_range: bool, size: str = "320x240") -> list[str]:
    """testsrc2 converted with ``matrix`` (bt709, bt2020nc, smpte170m) into the given range, the
    frames and the stream tagged with it (newer CLIs take the encoder's tags from the frames)."""
    range_name = "pc" if full_range else "tv"
    primaries = {"bt709": "bt709", "bt2020nc": "bt2020", "smpte170m": "smpte170m"}[matrix]
    trc = {"bt709": "bt709", "bt2020nc": "bt2020-10", "smpte170m": "smpte170m"}[matrix]
    scale_matrix = {"bt709": "bt709", "bt2020nc": "bt2020", "smpte170m": "bt601"}[matrix]
    return [*_testsrc(size=size), "-vf",
            f"scale=out_color_matrix={scale_matrix}:out_range={'full' if full_range else 'tv'},"
            f"setparams=range={range_name}:color_primaries={primaries}:color_trc={trc}:colorspace={matrix}",
            "-colorspace", matrix, "-color_primaries", primaries, "-color_trc", trc, "-color_range", range_name,
            *codec]


def _check_colour(matrix: str, full_range: bool) -> Check:
    def check(path: pathlib.Path) -> str | None:
        stream = _probe(path, "-select_streams", "v:0", "-show_streams")["streams"][0]
        found = (stream.get("color_space"), stream.get("color_range"))
        wanted = (matrix, "pc" if full_range else "tv")
        return None if found == wanted else f"colour space and range are {found}, wanted {wanted}"

    return check


def _spec(description: str, *args: str, **kwargs: object) -> Spec:
    return Spec(description, tuple(args), **kwargs)  # type: ignore[arg-type]


MEDIA: dict[str, Spec] = {
    # --- H.264 -------------------------------------------------------------------------------
    "h264_25fps_2s.mp4": _spec(
        "H.264 320x240 yuv420p, constant 25 fps, exactly 2 s (50 frames), no B-frames, GOP 25",
        *_testsrc(rate=25, duration=2), *_x264(gop=25, bframes=0),
    ),
    "h264_sar4_3.mp4": _spec(
        "H.264 with a 4:3 sample aspect ratio (anamorphic: 240x240 coded, 320x240 shown), "
        "30 fps 1 s",
        *_testsrc(size="240x240", duration=1), "-vf", "setsar=4/3", *_x264(),
        check=_check_sample_aspect_ratio("4:3"),
    ),
    "h264_bframes.mp4": _spec(
        "H.264 320x240 yuv420p 30 fps, 3 s (90 frames), GOP 30 (3 GOPs), 3 B-frames (pts != dts)",
        *_testsrc(duration=3), *_x264(gop=30, bframes=3),
    ),
    "h264_editlist.mp4": _spec(
        "h264_bframes.mp4 cut with -ss 1.5 -c copy: starts at the keyframe at 1.0 s and the mp4 "
        "edit list discards the 15 frames before 1.5 s (packets flagged 'D'); 45 frames remain",
        "-ss", "1.5", "-i", "{in0}", "-c", "copy",
        inputs=("h264_bframes.mp4",), check=_check_discarded_packets,
    ),
    "h264_10bit.mp4": _spec(
        "H.264 High 10, yuv420p10le, 320x240 30 fps 2 s, B-frames",
        *_testsrc(), *_x264(pix_fmt="yuv420p10le"),
    ),
    "h264_yuv444.mp4": _spec(
        "H.264 High 4:4:4, yuv444p, 320x240 30 fps 2 s, B-frames",
        *_testsrc(), *_x264(pix_fmt="yuv444p"),
    ),
    "h264_yuv422.mp4": _spec(
        "H.264 High 4:2:2, yuv422p, 320x240 30 fps 2 s, B-frames (NVDEC cannot decode it: the CPU fallback)",
        *_testsrc(), *_x264(pix_fmt="yuv422p"),
    ),
    "h264_yuv444_161x121.mp4": _spec(
        "H.264 yuv444p at an odd size, 161x121, 30 fps 2 s",
        *_lavfi(f"{_TESTSRC_320x240},scale=161:121"), *_x264(pix_fmt="yuv444p"),
    ),
    "h264_rotate90.mp4": _rotated(90, "h264_25fps_2s.mp4"),
    "h264_rotate180.mp4": _rotated(180, "h264_25fps_2s.mp4"),
    "h264_rotate270.mp4": _rotated(270, "h264_25fps_2s.mp4"),
    "h264_vfr.mkv": _spec(
        "H.264 in Matroska with variable frame rate: frames of a 30 fps source dropped "
        "irregularly (gaps of 1 to 4 frame periods), 63 frames, B-frames",
        *_lavfi("testsrc2=size=320x240:rate=30:duration=3,"
                "select='not(eq(mod(n\\,7)\\,3))*not(eq(mod(n\\,11)\\,5))*not(eq(mod(n\\,11)\\,6))'"),
        "-fps_mode", "passthrough", *_x264(),
    ),
    "h264_offset2.5s.mkv": _spec(
        "H.264 in Matroska whose timestamps start at 2.5 s (-output_ts_offset), 30 fps 2 s",
        *_testsrc(), *_x264(), "-output_ts_offset", "2.5",
        check=_check_start_time(2.49, 2.51),
    ),
    "h264_offset2.5s.mp4": _spec(
        "H.264 in mp4 whose first frame is at 2.5 s (-output_ts_offset: an empty edit), 30 fps 2 s",
        *_testsrc(), *_x264(), "-output_ts_offset", "2.5",
        check=_check_start_time(2.49, 2.51),
    ),
    "h264_bframes.ts": _spec(
        "H.264 with B-frames in MPEG-TS (90 kHz, starts at ~1.4 s as the muxer offsets it, "
        "no frame count in the header), 30 fps 2 s",
        *_testsrc(), *_x264(), check=_check_start_time(1.3, 1.6),
    ),
    "h264_fullrange.mp4": _spec(
        "H.264 full range (color_range pc, luma uses 0..255), 320x240 30 fps 2 s",
        *_testsrc(), "-vf", "scale=out_range=full,setparams=range=pc", "-color_range", "pc",
        *_x264(),
    ),
    "h264_bt709.mp4": _spec(
        "H.264 tagged BT.709 (matrix, primaries, transfer) and converted with the BT.709 matrix, "
        "limited range, 320x240 30 fps 2 s",
        # setparams tags the frames: newer ffmpeg CLIs take encoder colour tags from the frames
        *_testsrc(), "-vf", "scale=out_color_matrix=bt709:out_range=tv,setparams=range=tv"
        ":color_primaries=bt709:color_trc=bt709:colorspace=bt709",
        "-colorspace", "bt709", "-color_primaries", "bt709", "-color_trc", "bt709",
        "-color_range", "tv", *_x264(),
    ),
    # Colour: every matrix and range the swscale conversion must be told about (full range with a
    # matrix other than BT.601 is what a context that forgets its colour details gets wrong).
    "h264_bt709_fullrange.mp4": _spec(
        "H.264 BT.709 full range 4:2:0 (decoded as yuvj420p), 320x240 30 fps 2 s, B-frames",
        *_coloured(_x264(), matrix="bt709", full_range=True), check=_check_colour("bt709", True),
    ),
    "h264_bt709_fullrange_yuv444.mp4": _spec(
        "H.264 BT.709 full range 4:4:4 (decoded as yuvj444p), 320x240 30 fps 2 s, B-frames",
        *_coloured(_x264(pix_fmt="yuv444p"), matrix="bt709", full_range=True), check=_check_colour("bt709", True),
    ),
    "h264_bt601_10bit_fullrange.mp4": _spec(
        "H.264 High 10 SMPTE 170M (BT.601) full range, yuv420p10le tagged pc, 320x240 30 fps 2 s",
        *_coloured(_x264(pix_fmt="yuv420p10le"), matrix="smpte170m", full_range=True),
        check=_check_colour("smpte170m", True),
    ),
    "hevc_bt709_fullrange.mp4": _spec(
        "HEVC BT.709 full range 8-bit: yuv420p tagged pc (HEVC has no yuvj formats), 320x240 30 fps 2 s",
        *_coloured(_x265(), matrix="bt709", full_range=True), check=_check_colour("bt709", True),
    ),
    "hevc_bt2020_10bit.mp4": _spec(
        "HEVC Main 10 BT.2020 (non-constant) limited range, yuv420p10le, 320x240 30 fps 2 s",
        *_coloured(_x265(pix_fmt="yuv420p10le"), matrix="bt2020nc", full_range=False),
        check=_check_colour("bt2020nc", False),
    ),
    "hevc_bt2020_10bit_fullrange.mp4": _spec(
        "HEVC Main 10 BT.2020 (non-constant) full range, yuv420p10le tagged pc, 320x240 30 fps 2 s",
        *_coloured(_x265(pix_fmt="yuv420p10le"), matrix="bt2020nc", full_range=True),
        check=_check_colour("bt2020nc", True),
    ),
    "h264_aac.mp4": _spec(
        "H.264 video (stream 0) + AAC stereo 44.1 kHz audio (stream 1), 2 s",
        *_testsrc(), *_tone(44100, "stereo", 2), "-map", "0:v", "-map", "1:a",
        *_x264(), *_aac(),
    ),
    "h264_aac_audio_first.mp4": _spec(
        "AAC stereo 48 kHz audio as stream 0 and H.264 video as stream 1, 2 s",
        *_testsrc(), *_tone(48000, "stereo", 2), "-map", "1:a", "-map", "0:v",
        *_x264(), *_aac(),
    ),
    "two_video_streams.mkv": _spec(
        "Matroska with two H.264 streams: stream 0 is 160x120 (not default), stream 1 is "
        "320x240 mandelbrot (default disposition), so the best video stream is 1",
        *_testsrc(size="160x120"), *_lavfi("mandelbrot=size=320x240:rate=30,trim=duration=2"),
        "-map", "0:v", "-map", "1:v", *_x264(),
        "-disposition:v:0", "0", "-disposition:v:1", "default",
    ),
    # --- what NVDEC sees differently: coded size != display size, interlaced coding -------------
    "h264_1080p.mp4": _spec(
        "H.264 1920x1080 yuv420p (coded 1920x1088: 8 rows cropped), 30 fps 1 s (30 frames), GOP 15, "
        "3 B-frames",
        *_testsrc(size="1920x1080", duration=1), *_x264(gop=15, bframes=3),
    ),
    "hevc_1080p.mp4": _spec(
        "HEVC 1920x1080 yuv420p, 30 fps 1 s (30 frames), GOP 15, 3 B-frames",
        *_testsrc(size="1920x1080", duration=1), *_x265(gop=15),
    ),
    "h264_350x198.mp4": _spec(
        "H.264 yuv420p at 350x198 (coded 352x208: 2 columns and 10 rows cropped), 30 fps 2 s, B-frames",
        *_lavfi(f"{_TESTSRC_320x240},scale=350:198"), *_x264(),
    ),
    "h264_interlaced.mp4": _spec(
        "H.264 interlaced (MBAFF, top field first), 320x240 yuv420p 30 fps 2 s, each frame's fields "
        "from two instants of a 60 fps source (tinterlace), B-frames",
        *_lavfi("testsrc2=size=320x240:rate=60:duration=2,tinterlace=mode=interleave_top,setfield=tff"),
        *_x264(), "-x264-params", "b-adapt=0:interlaced=1:tff=1",
        check=_check_interlaced,
    ),
    # --- other video codecs ---------------------------------------------------------------------
    "hevc_bframes.mp4": _spec(
        "HEVC (libx265, hvc1 tag) 320x240 yuv420p 30 fps 2 s, 3 B-frames, open GOP: the "
        "keyframe at frame 30 is a CRA followed in decode order by a RASL frame (frame 29)",
        *_testsrc(), *_x265(),
    ),
    "hevc_temporal_layers.mp4": _spec(
        "HEVC 320x240 30 fps 2 s with two temporal sub-layers (x265 temporal-layers, b-pyramid; "
        "hvcC numTemporalLayers 2): sub-layer non-reference pictures may be referenced by the "
        "higher sub-layer, so none may be left out on the way to a target",
        *_testsrc(), *_x265(extra=":temporal-layers=1:b-pyramid=1"),
    ),
    "hevc_10bit.mp4": _spec(
        "HEVC Main 10, yuv420p10le, 320x240 30 fps 2 s, B-frames",
        *_testsrc(), *_x265(pix_fmt="yuv420p10le"),
    ),
    "vp9.webm": _spec(
        "VP9 in WebM, 320x240 yuv420p 30 fps 2 s, hidden alt-ref frames (superframes)",
        *_testsrc(), "-c:v", "libvpx-vp9", "-deadline", "good", "-cpu-used", "5",
        "-row-mt", "0", "-threads", "1", "-b:v", "300k", "-g", "30",
        "-auto-alt-ref", "1", "-lag-in-frames", "16", *_VBITEXACT,
    ),
    "vp9_161x121.webm": _spec(
        "VP9 yuv420p at an odd size, 161x121, 30 fps 2 s",
        *_lavfi(f"{_TESTSRC_320x240},scale=161:121"), "-c:v", "libvpx-vp9", "-deadline", "realtime",
        "-cpu-used", "8", "-row-mt", "0", "-threads", "1", "-b:v", "200k", "-g", "30",
        "-pix_fmt", "yuv420p", *_VBITEXACT,
    ),
    "vp9_161x120.webm": _spec(
        "VP9 yuv420p of odd width and even height, 161x120, 30 fps 0.5 s",
        *_lavfi(f"{_TESTSRC_320x240},scale=161:120"), "-t", "0.5", "-c:v", "libvpx-vp9", "-deadline", "realtime",
        "-cpu-used", "8", "-row-mt", "0", "-threads", "1", "-b:v", "200k", "-g", "30",
        "-pix_fmt", "yuv420p", *_VBITEXACT,
    ),
    "vp8.webm": _spec(
        "VP8 in WebM, 320x240 yuv420p 30 fps 2 s",
        *_testsrc(), "-c:v", "libvpx", "-deadline", "realtime", "-cpu-used", "8",
        "-threads", "1", "-b:v", "300k", "-g", "30", *_VBITEXACT,
    ),
    "av1.mp4": _spec(
        "AV1 (libaom, realtime settings) in mp4, 320x240 yuv420p 30 fps 2 s",
        *_testsrc(), "-c:v", "libaom-av1", "-usage", "realtime", "-cpu-used", "8",
        "-row-mt", "0", "-threads", "1", "-b:v", "200k", "-g", "30", *_VBITEXACT,
    ),
    "mpeg4_bframes.avi": _spec(
        "MPEG-4 part 2 in AVI with 2 B-frames (no pts for I/P packets: decoded frames carry "
        "the next packet's dts, from 1, and the last frame has no timestamp at all)",
        *_testsrc(), "-c:v", "mpeg4", "-bf", "2", "-q:v", "4", "-g", "30", *_VBITEXACT,
    ),
    "mpeg2_mp2.mpg": _spec(
        "MPEG-PS: MPEG-2 video with B-frames + MP2 stereo 32 kHz audio, 2 s",
        *_testsrc(), *_tone(32000, "stereo", 2), "-map", "0:v", "-map", "1:a",
        "-c:v", "mpeg2video", "-bf", "2", "-q:v", "4", "-g", "15", *_VBITEXACT,
        "-c:a", "mp2", "-b:a", "192k", *_ABITEXACT,
    ),
    # --- audio ---------------------------------------------------------------------------------
    "wav_u8_mono_8000.wav": _spec(
        "WAV pcm_u8, mono, 8 kHz, 1 s", *_tone(8000, "mono", 1, 1), "-c:a", "pcm_u8",
    ),
    "wav_s16_stereo_44100.wav": _spec(
        "WAV pcm_s16le, stereo, 44.1 kHz, 2 s", *_tone(44100, "stereo", 2), "-c:a", "pcm_s16le",
    ),
    "wav_s24_5.1_48000.wav": _spec(
        "WAV pcm_s24le, 5.1 (6 channels), 48 kHz, 1 s",
        *_tone(48000, "5.1", 6, 1), "-c:a", "pcm_s24le",
    ),
    "wav_s32_stereo_22050.wav": _spec(
        "WAV pcm_s32le, stereo, 22.05 kHz, 2 s",
        *_tone(22050, "stereo", 2), "-c:a", "pcm_s32le",
    ),
    "wav_f32_16ch_16000.wav": _spec(
        "WAV pcm_f32le, 16 channels (hexadecagonal), 16 kHz, 1 s",
        *_tone(16000, "hexadecagonal", 16, 1), "-c:a", "pcm_f32le",
    ),
    "wav_f64_mono_96000.wav": _spec(
        "WAV pcm_f64le, mono, 96 kHz, 1 s", *_tone(96000, "mono", 1, 1), "-c:a", "pcm_f64le",
    ),
    "aac_stereo_48000.m4a": _spec(
        "AAC-LC in mp4 (.m4a), stereo, 48 kHz, 2 s", *_tone(48000, "stereo", 2), *_aac(),
    ),
    "mp3_stereo_44100.mp3": _spec(
        "MP3 (LAME, with a Xing/LAME gapless header), stereo, 44.1 kHz, 2 s",
        *_tone(44100, "stereo", 2), "-c:a", "libmp3lame", "-b:a", "128k", *_ABITEXACT,
    ),
    "flac_s24_stereo_88200.flac": _spec(
        "FLAC 24-bit (sample_fmt s32), stereo, 88.2 kHz, 2 s",
        *_tone(88200, "stereo", 2), "-c:a", "flac", "-sample_fmt", "s32", *_ABITEXACT,
    ),
    "opus_stereo_48000.ogg": _spec(
        "Opus in Ogg (with pre-skip), stereo, 48 kHz, 2 s",
        *_tone(48000, "stereo", 2), "-c:a", "libopus", "-b:a", "96k", *_ABITEXACT,
    ),
    "vorbis_mono_11025.ogg": _spec(
        "Vorbis in Ogg, mono, 11.025 kHz, 2 s",
        *_tone(11025, "mono", 1), "-c:a", "libvorbis", "-q:a", "4", *_ABITEXACT,
    ),
    "flac_offset1.5s.mka": _spec(
        "FLAC 16-bit stereo 44.1 kHz in Matroska whose first sample is at 1.5 s "
        "(-output_ts_offset), 2 s",
        *_tone(44100, "stereo", 2), "-c:a", "flac", "-sample_fmt", "s16", *_ABITEXACT,
        "-output_ts_offset", "1.5",
        check=_check_start_time(1.49, 1.51),
    ),
    "aac_music_44100_8s.m4a": _spec(
        "AAC-LC in mp4, stereo, 44.1 kHz, 8 s of chirps and noise (seeking and pre-roll)",
        *_music(44100, 8), *_aac("96k"),
    ),
    "mp3_music_22050_8s.mp3": _spec(
        "MP3 (LAME, 32 kb/s: a deep bit reservoir), mono, 22.05 kHz, 8 s of chirps and noise",
        *_music(22050, 8, mono=True), "-c:a", "libmp3lame", "-b:a", "32k", *_ABITEXACT,
    ),
    "aac_adts_48000_8s.aac": _spec(
        "Raw ADTS AAC (timestamps estimated after a seek), stereo, 48 kHz, 8 s",
        *_music(48000, 8), *_aac("128k"), "-f", "adts",
    ),
    "opus_music_48000_8s.webm": _spec(
        "Opus in WebM (millisecond timestamps), stereo, 48 kHz, 8 s of chirps and noise",
        *_music(48000, 8), "-c:a", "libopus", "-b:a", "64k", *_ABITEXACT,
    ),
    "vorbis_music_44100_8s.ogg": _spec(
        "Vorbis in Ogg, stereo, 44.1 kHz, 8 s of chirps and noise",
        *_music(44100, 8), "-c:a", "libvorbis", "-q:a", "3", *_ABITEXACT,
    ),
    # --- benchmark clips (only with --bench / by name) -------------------------------------------
    "bench_1080p_h264.mp4": _spec(
        "Benchmark: H.264 1920x1080 yuv420p 30 fps 10 s (300 frames), GOP 60, 3 B-frames",
        *_testsrc(size="1920x1080", duration=10),
        *_bench_x264(60),
        bench=True,
    ),
    "bench_1080p_h264_40s.mp4": _spec(
        "Benchmark: H.264 1920x1080 yuv420p 30 fps 40 s (1200 frames), 25 GOPs of 48 frames, 3 B-frames",
        *_testsrc(size="1920x1080", duration=40),
        *_bench_x264(48),
        bench=True,
    ),
    "bench_720p_h264_10bit.mp4": _spec(
        "Benchmark: H.264 High 10, yuv420p10le 1280x720 30 fps 10 s (300 frames), GOP 60, 3 B-frames",
        *_testsrc(size="1280x720", duration=10),
        *_bench_x264(60, "yuv420p10le"),
        bench=True,
    ),
    "bench_audio_aac_60s.m4a": _spec(
        "Benchmark: AAC-LC in mp4, stereo, 44.1 kHz, 60 s of chirps and noise",
        *_music(44100, 60), *_aac("128k"),
        bench=True,
    ),
    "bench_audio_mp3_60s.mp3": _spec(
        "Benchmark: MP3 (LAME 128 kb/s), stereo, 44.1 kHz, 60 s of chirps and noise",
        *_music(44100, 60), "-c:a", "libmp3lame", "-b:a", "128k", *_ABITEXACT,
        bench=True,
    ),
    "bench_1080p_hevc.mp4": _spec(
        "Benchmark: HEVC 1920x1080 yuv420p 30 fps 10 s (300 frames), GOP 60, 3 B-frames",
        *_testsrc(size="1920x1080", duration=10),
        "-c:v", "libx265", "-preset", "fast", "-tag:v", "hvc1", "-pix_fmt", "yuv420p",
        "-x265-params",
        "pools=4:frame-threads=2:keyint=60:min-keyint=60:scenecut=0:bframes=3:log-level=error",
        *_VBITEXACT,
        bench=True,
    ),
}


# --------------------------------------------------------------------------------------------
# Generation and cache


def _run(cmd: Sequence[str]) -> str:
    proc = subprocess.run(
        list(cmd), stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise MediaError(
            f"command failed (exit {proc.returncode}): {' '.join(cmd)}\n{proc.stderr.strip()}"
        )
    return proc.stdout


def recipe_hash(name: str, registry: dict[str, Spec] | None = None) -> str:
    """Short hash of everything that determines the file: its arguments and its inputs' hashes."""
    registry = MEDIA if registry is None else registry
    spec = registry[name]
    payload = {
        "version": CACHE_VERSION,
        "name": name,
        "variants": [list(v) for v in spec.variants],
        "inputs": [recipe_hash(i, registry) for i in spec.inputs],
    }
    blob = json.dumps(payload, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def _sidecar(path: pathlib.Path) -> pathlib.Path:
    return path.with_name(path.name + ".recipe.json")


def is_current(name: str, out_dir: pathlib.Path, registry: dict[str, Spec] | None = None) -> bool:
    """True when ``out_dir/name`` exists and was made by the current recipe."""
    path = out_dir / name
    try:
        recorded = json.loads(_sidecar(path).read_text())["hash"]
    except (OSError, ValueError, KeyError, TypeError):
        return False
    return path.is_file() and recorded == recipe_hash(name, registry)


def _command(
    args: Sequence[str], inputs: Sequence[pathlib.Path], output: pathlib.Path
) -> list[str]:
    subst = {f"in{i}": str(p) for i, p in enumerate(inputs)}
    return [
        FFMPEG, "-hide_banner", "-nostdin", "-loglevel", "error", "-y",
        *(a.format(**subst) if "{in" in a else a for a in args),
        "-fflags", "+bitexact", str(output),
    ]


def _make(name: str, out_dir: pathlib.Path, registry: dict[str, Spec]) -> None:
    spec = registry[name]
    final = out_dir / name
    # same suffix so ffmpeg picks the same muxer; one process makes a name at a time (_locked)
    tmp = out_dir / f".{final.stem}.tmp{os.getpid()}{final.suffix}"
    inputs = [out_dir / i for i in spec.inputs]
    failures: list[str] = []
    try:
        for args in spec.variants:
            cmd = _command(args, inputs, tmp)
            try:
                _run(cmd)
                problem = spec.check(tmp) if spec.check else None
            except MediaError as exc:
                problem = str(exc)
            if problem is None:
                os.replace(tmp, final)
                shown = _command(args, [pathlib.Path(i) for i in spec.inputs], final)
                record = {"hash": recipe_hash(name, registry), "description": spec.description,
                          "command": [*shown[:-1], name]}
                side_tmp = tmp.with_name(tmp.name + ".recipe.json")
                side_tmp.write_text(json.dumps(record, indent=1) + "\n")
                os.replace(side_tmp, _sidecar(final))
                return
            failures.append(f"- {' '.join(cmd)}\n  {problem}")
    finally:
        tmp.unlink(missing_ok=True)
    raise MediaError(f"could not make {name}:\n" + "\n".join(failures))


@contextlib.contextmanager
def _locked(out_dir: pathlib.Path) -> Iterator[None]:
    """Serialise generation between processes (e.g. pytest-xdist workers) sharing ``out_dir``."""
    try:
        import fcntl
    except ImportError:  # not on POSIX: renames alone keep files whole
        yield
        return
    with open(out_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def _closure(names: Iterable[str], registry: dict[str, Spec]) -> list[str]:
    """``names`` plus every input they need, inputs first."""
    ordered: list[str] = []

    def visit(name: str) -> None:
        if name not in registry:
            raise KeyError(f"unknown media {name!r}; known: {', '.join(sorted(registry))}")
        for dep in registry[name].inputs:
            visit(dep)
        if name not in ordered:
            ordered.append(name)

    for n in names:
        visit(n)
    return ordered


def default_names(bench: bool = False, registry: dict[str, Spec] | None = None) -> list[str]:
    """Names made when none are given: everything but the benchmark clips (unless ``bench``)."""
    registry = MEDIA if registry is None else registry
    return [n for n, s in registry.items() if bench or not s.bench]


def ensure_media(
    names: Iterable[str] | None = None,
    out_dir: str | os.PathLike[str] | None = None,
    *,
    registry: dict[str, Spec] | None = None,
    jobs: int | None = None,
    log: Callable[[str], None] | None = None,
) -> dict[str, pathlib.Path]:
    """Make the named corpus files that are missing or stale; return ``{name: path}``.

    ``names`` None means every non-benchmark file. Files are made in parallel (``jobs`` workers,
    default: the number of CPUs), each input before the files derived from it. Raises
    ``KeyError`` for an unknown name and ``MediaError`` (with ffmpeg's stderr) when a file cannot
    be made.
    """
    registry = MEDIA if registry is None else registry
    wanted = list(default_names(registry=registry) if names is None else names)
    out = pathlib.Path(MEDIA_DIR if out_dir is None else out_dir)
    out.mkdir(parents=True, exist_ok=True)
    order = _closure(wanted, registry)
    with _locked(out):
        todo = [n for n in order if not is_current(n, out, registry)]
        if todo:
            _make_all(todo, out, registry, jobs or os.cpu_count() or 1, log)
    return {n: out / n for n in wanted}


def _make_all(
    todo: list[str],
    out: pathlib.Path,
    registry: dict[str, Spec],
    jobs: int,
    log: Callable[[str], None] | None,
) -> None:
    pending = set(todo)
    running: dict[concurrent.futures.Future[None], str] = {}
    errors: list[BaseException] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        while pending or running:
            ready = [
                n for n in todo
                if n in pending and not any(d in pending or d in running.values()
                                            for d in registry[n].inputs)
            ]
            for n in ready if not errors else []:
                pending.discard(n)
                running[pool.submit(_make, n, out, registry)] = n
            if errors:
                pending.clear()
            if not running:
                break
            done, _ = concurrent.futures.wait(running, return_when="FIRST_COMPLETED")
            for fut in done:
                n = running.pop(fut)
                if fut.exception() is not None:
                    errors.append(fut.exception())
                elif log:
                    log(f"made {n}")
    if errors:
        raise errors[0]


@functools.cache
def ffmpeg_version() -> str:
    """Version string of the ffmpeg CLI, e.g. ``"5.1.9-0+deb12u1"``."""
    first = _run([FFMPEG, "-hide_banner", "-version"]).splitlines()[0]
    return first.split()[2]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", help="files to make (default: all but benchmarks)")
    parser.add_argument("--out", type=pathlib.Path, default=None,
                        help=f"output folder (default: {MEDIA_DIR})")
    parser.add_argument("--bench", action="store_true", help="also make the benchmark clips")
    parser.add_argument("--list", action="store_true", help="list the corpus and exit")
    parser.add_argument("-j", "--jobs", type=int, default=None, help="parallel ffmpeg runs")
    opts = parser.parse_args(argv)

    if opts.list:
        width = max(map(len, MEDIA))
        for name, spec in MEDIA.items():
            print(f"{name:<{width}}  {'[bench] ' if spec.bench else ''}{spec.description}")
        return 0

    names = opts.names or default_names()
    if opts.bench:
        names += [n for n, s in MEDIA.items() if s.bench and n not in names]
    out = opts.out or MEDIA_DIR
    start = time.perf_counter()
    try:
        paths = ensure_media(names, out, jobs=opts.jobs, log=lambda m: print(m, flush=True))
    except (KeyError, MediaError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    elapsed = time.perf_counter() - start
    total = sum(p.stat().st_size for p in paths.values())
    print(f"{len(paths)} files ({total / 1e6:.1f} MB) in {out} after {elapsed:.1f} s "
          f"(ffmpeg {ffmpeg_version()})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
