"""Independent references from the ffmpeg/ffprobe CLI (the FFmpeg build the package links).

Everything here shells out to ``ffmpeg``/``ffprobe`` (override with ``$FFMPEG``/``$FFPROBE``) and
never imports the package, so tests can compare the package against it. A failing command raises
``CLIError`` carrying the CLI's stderr.

Stream choice: ``stream_index=None`` means the stream that :func:`best_stream` picks, ranked the
way both ``av_find_best_stream`` and the ffmpeg CLI rank them where they agree (disposition
first, then resolution or channel count, then the lower index). The CLI is always given that index
explicitly (``-map 0:<index>``), so references never depend on the CLI's own choice.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import subprocess
from fractions import Fraction
from typing import Any

import numpy as np

FFMPEG = os.environ.get("FFMPEG", "ffmpeg")
FFPROBE = os.environ.get("FFPROBE", "ffprobe")

PathLike = str | os.PathLike[str]

# pix_fmt -> (numpy dtype, bytes per pixel) for ffmpeg_rgb_frames
_RGB_FORMATS: dict[str, tuple[np.dtype, int]] = {
    "rgb24": (np.dtype(np.uint8), 3),
    "bgr24": (np.dtype(np.uint8), 3),
    "rgb48le": (np.dtype("<u2"), 6),
}


class CLIError(RuntimeError):
    """An ffmpeg/ffprobe command failed; the message holds the command and its stderr."""


def _run(cmd: list[str]) -> bytes:
    proc = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, check=False)
    if proc.returncode != 0:
        stderr = proc.stderr.decode(errors="replace").strip()
        raise CLIError(f"command failed (exit {proc.returncode}): {' '.join(cmd)}\n{stderr}")
    return proc.stdout


def _probe(path: PathLike, *args: str) -> dict[str, Any]:
    """ffprobe's JSON output, cached per file version (tests ask the same questions often)."""
    try:
        st = os.stat(path)
    except OSError:  # let ffprobe report it
        return _probe_file(os.fspath(path), 0, 0, args)
    return copy.deepcopy(_probe_file(os.path.abspath(path), st.st_mtime_ns, st.st_size, args))


@functools.lru_cache(maxsize=512)
def _probe_file(path: str, mtime_ns: int, size: int, args: tuple[str, ...]) -> dict[str, Any]:
    return json.loads(_run([FFPROBE, "-v", "error", "-of", "json", *args, path]))


@functools.cache
def ffmpeg_version() -> str:
    """Version of the ffmpeg CLI as it prints it, e.g. ``"5.1.9-0+deb12u1"`` or ``"7.1.1"``."""
    first = _run([FFMPEG, "-hide_banner", "-version"]).decode().splitlines()[0]
    return first.split()[2]


def ffmpeg_major_version() -> int:
    """Major version of the ffmpeg CLI (``5`` for 5.1), or 0 for a git build (``N-12345-g...``)."""
    head = ffmpeg_version().split(".")[0]
    return int(head) if head.isdigit() else 0


# ------------------------------------------------------------------------------------------------
# Container and stream metadata


def _fraction(text: str | None) -> Fraction | None:
    if not text or text in ("N/A", "0/0"):
        return None
    return Fraction(text.replace(":", "/"))


def _number(text: str | None) -> float | None:
    if text is None or text == "N/A":
        return None
    return float(text)


def rotation_of(stream: dict[str, Any]) -> int | None:
    """Display-matrix rotation of a ``ffprobe_stream`` entry, in degrees as ffprobe prints it
    (``av_display_rotation_get``: counter-clockwise, in (-180, 180]), or None without a matrix.
    The ffmpeg CLI auto-rotates by it: rotation 90 gives ``numpy.rot90(frame, 1)``."""
    for side_data in stream.get("side_data_list", ()):
        if side_data.get("side_data_type") == "Display Matrix" and "rotation" in side_data:
            return round(float(side_data["rotation"]))
    return None


def ffprobe_streams(path: PathLike) -> list[dict[str, Any]]:
    """All ``-show_streams`` entries of ``path`` (see :func:`ffprobe_stream` for the extra keys)."""
    return [_normalise_stream(s) for s in _probe(path, "-show_streams")["streams"]]


def _normalise_stream(stream: dict[str, Any]) -> dict[str, Any]:
    out = dict(stream)
    out["time_base"] = _fraction(stream.get("time_base"))
    out["r_frame_rate"] = _fraction(stream.get("r_frame_rate"))
    out["avg_frame_rate"] = _fraction(stream.get("avg_frame_rate"))
    out["start_time"] = _number(stream.get("start_time"))
    out["duration"] = _number(stream.get("duration"))
    out["nb_frames"] = int(stream["nb_frames"]) if stream.get("nb_frames", "N/A") != "N/A" else None
    for key in ("sample_rate", "bit_rate", "bits_per_raw_sample"):
        if key in stream and stream[key] != "N/A":
            out[key] = int(stream[key])
    out["side_data_list"] = stream.get("side_data_list", [])
    out["rotation"] = rotation_of(out)
    return out


def ffprobe_stream(path: PathLike, stream_index: int) -> dict[str, Any]:
    """The ``-show_streams`` entry of stream ``stream_index`` (absolute index).

    Keys as ffprobe prints them (``codec_name``, ``codec_type``, ``width``, ``height``,
    ``pix_fmt``, ``color_range``, ``color_space``, ``color_primaries``, ``color_transfer``,
    ``sample_fmt``, ``channels``, ``disposition``, ``side_data_list``...), with these converted:
    ``time_base``, ``r_frame_rate``, ``avg_frame_rate`` -> ``Fraction`` (None for 0/0);
    ``start_time``, ``duration`` -> float or None; ``nb_frames`` -> int or None;
    ``sample_rate``, ``bit_rate``, ``bits_per_raw_sample`` -> int; plus ``rotation``
    (see :func:`rotation_of`). Raises ``IndexError`` when there is no such stream.
    """
    streams = ffprobe_streams(path)
    if not 0 <= stream_index < len(streams):
        raise IndexError(f"{path} has {len(streams)} streams, no stream {stream_index}")
    return streams[stream_index]


def ffprobe_format(path: PathLike) -> dict[str, Any]:
    """The ``-show_format`` entry, with ``start_time`` and ``duration`` as floats (or None),
    ``nb_streams`` and ``bit_rate`` as ints."""
    fmt = dict(_probe(path, "-show_format")["format"])
    fmt["start_time"] = _number(fmt.get("start_time"))
    fmt["duration"] = _number(fmt.get("duration"))
    for key in ("nb_streams", "bit_rate", "size"):
        if key in fmt and fmt[key] != "N/A":
            fmt[key] = int(fmt[key])
    return fmt


def best_stream(path: PathLike, media_type: str = "video") -> int:
    """Absolute index of the best ``media_type`` ("video" or "audio") stream.

    Ranking: streams not marked hearing/visual impaired and with the ``default`` disposition come
    first (as in ``av_find_best_stream``), then the larger ``width*height`` (video) or channel
    count (audio) (as in the ffmpeg CLI), then the lower index. Attached pictures are skipped.
    Raises ``ValueError`` when there is no stream of that type.
    """
    best: tuple[tuple[int, int], int] | None = None
    for stream in ffprobe_streams(path):
        if stream.get("codec_type") != media_type:
            continue
        disposition = stream.get("disposition", {})
        if disposition.get("attached_pic"):
            continue
        rank = (
            int(not (disposition.get("hearing_impaired") or disposition.get("visual_impaired")))
            + int(bool(disposition.get("default"))),
            stream.get("width", 0) * stream.get("height", 0)
            if media_type == "video"
            else stream.get("channels", 0),
        )
        if best is None or rank > best[0]:
            best = (rank, stream["index"])
    if best is None:
        raise ValueError(f"{path} has no {media_type} stream")
    return best[1]


def _resolve(path: PathLike, stream_index: int | None, media_type: str) -> dict[str, Any]:
    index = best_stream(path, media_type) if stream_index is None else stream_index
    stream = ffprobe_stream(path, index)
    if stream.get("codec_type") != media_type:
        kind = stream.get("codec_type")
        raise ValueError(f"stream {index} of {path} is {kind}, not {media_type}")
    return stream


# ------------------------------------------------------------------------------------------------
# Frames and packets


def _int(value: Any) -> int | None:
    if value is None or value == "N/A":
        return None
    return int(value)


def ffprobe_frames(path: PathLike, stream_index: int) -> list[dict[str, Any]]:
    """Every decoded frame of stream ``stream_index``, in presentation order.

    Each dict has ``pts`` (int, in the stream time base; the frame's pts, else its ``pkt_dts``,
    else ``best_effort_timestamp``, as FFmpeg 5.1 to 7 print them; a frame with none of them
    gets the previous frame's pts + duration and ``pts_missing`` True), ``duration`` (int, from
    ``duration`` or, on FFmpeg 5.1, ``pkt_duration``; 0 when absent), ``key_frame`` (bool),
    ``pict_type`` (str, video only), ``pts_seconds`` and ``duration_seconds`` (floats, exact
    products with the stream time base), plus ``width``/``height`` (video) or ``nb_samples``
    (audio). Frames the decoder drops (edit-list discards) are not listed.
    """
    time_base = ffprobe_stream(path, stream_index)["time_base"]
    entries = ("pts,pkt_dts,best_effort_timestamp,duration,pkt_duration,key_frame,pict_type,"
               "width,height,nb_samples")
    raw = _probe(path, "-select_streams", str(stream_index),
                 "-show_entries", f"frame={entries}", "-show_frames")["frames"]
    frames = []
    for f in raw:
        pts = _int(f.get("pts"))
        for fallback in ("pkt_dts", "best_effort_timestamp"):
            if pts is None:
                pts = _int(f.get(fallback))
        missing = pts is None
        if missing:  # e.g. the last frame flushed out of an AVI with B-frames
            pts = frames[-1]["pts"] + frames[-1]["duration"] if frames else 0
        duration = _int(f.get("duration"))
        if duration is None:
            duration = _int(f.get("pkt_duration")) or 0
        frame: dict[str, Any] = {
            "pts": pts,
            "duration": duration,
            "key_frame": bool(int(f.get("key_frame", 0))),
            "pts_seconds": float(pts * time_base),
            "duration_seconds": float(duration * time_base),
            "pts_missing": missing,
        }
        for key in ("pict_type",):
            if key in f:
                frame[key] = f[key]
        for key in ("width", "height", "nb_samples"):
            if key in f:
                frame[key] = int(f[key])
        frames.append(frame)
    frames.sort(key=lambda fr: fr["pts"])  # stable: decoders already output presentation order
    return frames


def ffprobe_packets(path: PathLike, stream_index: int) -> list[dict[str, Any]]:
    """Every packet of stream ``stream_index``, in file (decode) order.

    Each dict has ``pts``, ``dts`` (int or None when the container has none), ``duration`` (int,
    0 when absent), ``flags`` (ffprobe's string, e.g. ``"K_"``, ``"_D"``), ``key`` and
    ``discard`` (bools from the ``K`` and ``D`` flags), ``pos`` and ``size`` (ints or None).
    """
    raw = _probe(path, "-select_streams", str(stream_index),
                 "-show_entries", "packet=pts,dts,duration,flags,pos,size", "-show_packets")
    packets = []
    for p in raw["packets"]:
        flags = p.get("flags", "")
        packets.append({
            "pts": _int(p.get("pts")),
            "dts": _int(p.get("dts")),
            "duration": _int(p.get("duration")) or 0,
            "flags": flags,
            "key": "K" in flags,
            "discard": "D" in flags,
            "pos": _int(p.get("pos")),
            "size": _int(p.get("size")),
        })
    return packets


# ------------------------------------------------------------------------------------------------
# Decoded data


def output_size(stream: dict[str, Any]) -> tuple[int, int]:
    """(height, width) of the frames the ffmpeg CLI outputs for a video stream: the coded display
    size, swapped when the display matrix rotates by +-90 degrees (the CLI auto-rotates)."""
    height, width = int(stream["height"]), int(stream["width"])
    rotation = stream.get("rotation")
    if rotation is not None and rotation % 180 == 90:
        height, width = width, height
    return height, width


def ffmpeg_rgb_frames(
    path: PathLike, *, stream_index: int | None = None, pix_fmt: str = "rgb24",
    filters: str | None = None, size: tuple[int, int] | None = None,
) -> np.ndarray:
    """Every frame of a video stream as decoded and converted by the ffmpeg CLI.

    Runs ``ffmpeg -i path -map 0:<index> -vf format=<pix_fmt> -fps_mode passthrough -f rawvideo -``
    (auto-rotation on, as by default). ``stream_index`` None uses :func:`best_stream`. ``pix_fmt``
    is ``"rgb24"`` or ``"bgr24"`` (uint8) or ``"rgb48le"`` (uint16). ``filters``: a filter chain
    run before the format conversion (``-vf <filters>,format=<pix_fmt>``, e.g.
    ``"crop=w:h:x:y:exact=1"`` or ``"scale=W:H:flags=bilinear"``), whose output is ``size`` =
    (height, width) (required with ``filters``). Returns an array of shape
    (num_frames, height, width, 3) in presentation order, height/width after rotation.
    The array is read-only (a view of ffmpeg's output). Raises ``CLIError`` if the output is
    not a whole number of frames.
    """
    if pix_fmt not in _RGB_FORMATS:
        raise ValueError(f"pix_fmt must be one of {sorted(_RGB_FORMATS)}, not {pix_fmt!r}")
    dtype, bytes_per_pixel = _RGB_FORMATS[pix_fmt]
    if (filters is None) != (size is None):
        raise ValueError("filters and size go together")
    stream = _resolve(path, stream_index, "video")
    height, width = output_size(stream) if size is None else size
    chain = f"format={pix_fmt}" if filters is None else f"{filters},format={pix_fmt}"
    data = _run([
        FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-i", os.fspath(path),
        "-map", f"0:{stream['index']}", "-vf", chain, "-fps_mode", "passthrough",
        "-f", "rawvideo", "-",
    ])
    frame_bytes = height * width * bytes_per_pixel
    if len(data) % frame_bytes:
        raise CLIError(
            f"{path}: ffmpeg wrote {len(data)} bytes, not a whole number of {width}x{height} "
            f"{pix_fmt} frames ({frame_bytes} bytes each)"
        )
    return np.frombuffer(data, dtype=dtype).reshape(-1, height, width, 3)


def ffmpeg_raw_video(path: PathLike, *, stream_index: int | None = None) -> bytes:
    """Every frame of a video stream in its own pixel format (``pix_fmt`` of
    :func:`ffprobe_stream`), unconverted and unrotated: ``-autorotate 0 ... -f rawvideo``.
    For 4:2:0 8-bit, each frame is the Y plane then U and V (``w*h*3/2`` bytes when even)."""
    stream = _resolve(path, stream_index, "video")
    return _run([
        FFMPEG, "-hide_banner", "-nostdin", "-v", "error",
        "-autorotate", "0", "-i", os.fspath(path),
        "-map", f"0:{stream['index']}", "-fps_mode", "passthrough", "-c:v", "rawvideo",
        "-f", "rawvideo", "-",
    ])


def ffmpeg_audio_samples(
    path: PathLike,
    *,
    stream_index: int | None = None,
    sample_rate: int | None = None,
    num_channels: int | None = None,
) -> np.ndarray:
    """All samples of an audio stream as decoded by the ffmpeg CLI, float32 (channels, samples).

    ``sample_rate``/``num_channels`` ask the CLI to resample/remix (``-ar``/``-ac``); None keeps
    the stream's. ``stream_index`` None uses :func:`best_stream`.
    """
    stream = _resolve(path, stream_index, "audio")
    channels = num_channels or int(stream["channels"])
    cmd = [FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-i", os.fspath(path),
           "-map", f"0:{stream['index']}"]
    if sample_rate is not None:
        cmd += ["-ar", str(sample_rate)]
    if num_channels is not None:
        cmd += ["-ac", str(num_channels)]
    data = _run([*cmd, "-c:a", "pcm_f32le", "-f", "f32le", "-"])
    if len(data) % (4 * channels):
        raise CLIError(f"{path}: {len(data)} bytes is not a whole number of "
                             f"{channels}-channel float32 samples")
    return np.frombuffer(data, dtype="<f4").reshape(-1, channels).T.astype(np.float32, order="C")



# ------------------------------------------------------------------------------------------------
# Log lines


def ffmpeg_log_lines(path: PathLike, *, stream_index: int | None = None) -> list[tuple[str, str, str]]:
    """What FFmpeg's libraries log while the CLI decodes a video stream (one decoding thread),
    as ``(component, level, text)``: ``("h264", "error", "error while decoding MB 0 2, ...")``.

    The component is the name before `` @ 0x...`` in FFmpeg's prefix (``"NULL"`` for a parser);
    the level is FFmpeg's name (``panic``, ``fatal``, ``error``, ``warning``, ``info``, ``verbose``,
    ``debug``, ``trace``). Lines of the CLI itself (without a component) are left out. Repeated
    lines are kept (``-loglevel repeat``).
    """
    stream = _resolve(path, stream_index, "video")
    proc = subprocess.run([
        FFMPEG, "-hide_banner", "-nostdin", "-loglevel", "repeat+level+verbose", "-threads", "1",
        "-i", os.fspath(path), "-map", f"0:{stream['index']}", "-f", "null", "-",
    ], stdin=subprocess.DEVNULL, capture_output=True, check=False)
    lines = []
    for line in proc.stderr.decode(errors="replace").splitlines():
        if not line.startswith("[") or " @ 0x" not in line.split("]", 1)[0]:
            continue
        prefix, rest = line.split("] ", 1)
        if not rest.startswith("["):
            continue
        level, text = rest[1:].split("] ", 1) if "] " in rest else (rest[1:-1], "")
        lines.append((prefix[1:].split(" @ ")[0], level, text))
    return lines
