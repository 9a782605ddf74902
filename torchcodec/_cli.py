"""The command line: ``python -m torchcodec`` or ``torchcodec`` (the console script).

    torchcodec --version                         this package's version, the API it implements, FFmpeg's
    torchcodec info [--json]                     versions, FFmpeg, decoders, CUDA/NVDEC and why not
    torchcodec probe FILE [--json] [--exact]     every stream's metadata, as a table or JSON
    torchcodec frames FILE (--at S [S ...] | --every S) -o DIR [--format png|jpg] [--force]
    torchcodec contact-sheet FILE -o sheet.png|.jpg [--columns 4] [--rows 4] [--width 320] [--force]

Outputs are never overwritten without --force; a contact sheet's format is its extension's.

Exit codes: 0 success; 1 the work failed (a file that cannot be opened or decoded, a time outside
the stream, a missing optional package), with one line ``torchcodec: error: ...`` on stderr; 2 a
usage error (argparse's); 130 interrupted. Long work (frames, contact sheets) shows a progress bar
on stderr: tqdm's when it is installed, else a plain counter, only when stderr is a terminal
(``--no-progress`` turns it off).

Images are written by the package's own PngEncoder and JpegEncoder (libpng, libjpeg-turbo).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import sys
from collections.abc import Sequence
from importlib import util as importlib_util
from typing import Any, Optional, TextIO

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130

# Decoders that `info` reports, by FFmpeg's name: the codecs people ask about first.
_DECODERS = ("h264", "hevc", "vp8", "vp9", "av1", "libdav1d", "libaom-av1", "mpeg4", "mpeg2video", "prores",
             "mjpeg", "png", "aac", "mp3", "flac", "opus", "libopus", "vorbis", "pcm_s16le")
# Encoders that `info` reports: what VideoEncoder/AudioEncoder choose by default or are asked for
# most (CPU and NVENC).
_ENCODERS = ("libx264", "libx265", "h264_nvenc", "hevc_nvenc", "av1_nvenc", "libvpx-vp9", "libaom-av1",
             "libsvtav1", "mpeg4", "aac", "libmp3lame", "flac", "libopus", "libvorbis", "alac")
_BATCH = 8           # frames decoded per request by `frames`, between two progress updates


class CliError(Exception):
    """A failure to report in one line, with exit code 1."""


# ---- progress -------------------------------------------------------------------------------

class _PlainProgress:
    """A counter rewritten in place on a terminal: "frames: 12/40"."""

    def __init__(self, total: int, description: str, stream: TextIO) -> None:
        self.total, self.description, self.stream, self.done = total, description, stream, 0
        self._write()

    def _write(self) -> None:
        self.stream.write(f"\r{self.description}: {self.done}/{self.total}")
        self.stream.flush()

    def update(self, n: int) -> None:
        self.done += n
        self._write()

    def close(self) -> None:
        self.stream.write("\n")
        self.stream.flush()


class _NoProgress:
    def update(self, n: int) -> None:
        pass

    def close(self) -> None:
        pass


def progress(total: int, description: str, enabled: bool = True, stream: Optional[TextIO] = None) -> Any:
    """A progress bar with ``update(n)`` and ``close()``: tqdm's when it is installed, else a plain
    counter; nothing when disabled or when ``stream`` (stderr by default) is not a terminal."""
    stream = sys.stderr if stream is None else stream
    if not enabled or stream is None or not stream.isatty():
        return _NoProgress()
    if importlib_util.find_spec("tqdm") is not None:
        from tqdm import tqdm
        return tqdm(total=total, desc=description, unit="frame", file=stream)
    return _PlainProgress(total, description, stream)


# ---- images -----------------------------------------------------------------------------------

def write_image(path: str, rgb: Any, image_format: str) -> None:
    """Write an (H, W, 3) uint8 array as PNG (libpng) or JPEG (libjpeg-turbo), through the
    package's own image encoders."""
    from torchcodec._image import ImageCodecUnavailableError
    from torchcodec.encoders import JpegEncoder, PngEncoder

    image = rgb.transpose(2, 0, 1)                  # (3, H, W), a view: the encoders read strides
    try:
        if image_format == "png":
            PngEncoder(image).to_file(path)
        else:
            JpegEncoder(image).to_file(path, quality=95)
    except ImageCodecUnavailableError as error:
        raise CliError(str(error)) from None


# The image formats the command line writes, by the output's extension (the package's encoders).
_IMAGE_FORMATS = {".png": "png", ".jpg": "jpg", ".jpeg": "jpg"}


def image_format_of(path: str) -> str:
    """"png" or "jpg", chosen by ``path``'s extension; CliError for any other."""
    extension = os.path.splitext(path)[1].lower()
    if extension not in _IMAGE_FORMATS:
        said = f"'{extension}'" if extension else "no extension"
        raise CliError(f"cannot write {path}: the extension chooses the image format, and {said} is not one this "
                       f"command writes: use .png or .jpg (.jpeg)")
    return _IMAGE_FORMATS[extension]


def refuse_existing(path: str, force: bool) -> None:
    """CliError when ``path`` exists, unless ``force`` (then it is removed: written anew)."""
    if not os.path.lexists(path):
        return
    if not force:
        raise CliError(f"{path} exists: choose another name, or add --force to overwrite it")
    if os.path.isdir(path) and not os.path.islink(path):
        raise CliError(f"{path} is a directory: --force overwrites files only")
    os.remove(path)


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise CliError("writing images needs numpy: pip install numpy") from None
    return numpy


# ---- commands -------------------------------------------------------------------------------

def _info(args: argparse.Namespace) -> dict[str, Any]:
    import torchcodec
    from torchcodec import _cuda, _image, _install
    from torchcodec._core import _info as core_info
    from torchcodec._cuda import _build_config

    cuda_reason = _cuda.reason()
    nvdec_reason = cuda_reason
    if cuda_reason is None:
        try:
            from torchcodec._cuda import _driver
            _driver.load_nvcuvid()
        except Exception as error:      # the reason, whatever the loader raised
            nvdec_reason = str(error)
    major, minor = torchcodec.__version__.split(".")[:2]
    return {
        "torchcodec": torchcodec.__version__,
        "distribution": _install.DISTRIBUTION,
        "torchcodec_api": f"{major}.{minor}",
        "location": os.path.dirname(torchcodec.__file__),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "ffmpeg": torchcodec.ffmpeg_versions(),
        "ffmpeg_license": core_info.ffmpeg_license(),
        "decoders": {name: core_info.has_decoder(name) for name in _DECODERS},
        "encoders": {name: core_info.has_encoder(name) for name in _ENCODERS},
        "image_codecs": {name: None if built else _image.LIBRARIES[name][1]
                         for name, built in _image.available().items()},
        "output_libraries": {name: importlib_util.find_spec(name) is not None for name in ("numpy", "torch", "jax",
                                                                                            "cupy")},
        "default_bridge": torchcodec.get_bridge(),
        "cuda": {
            "built": bool(_build_config.CUDA_DRIVER),
            "kernels": bool(_build_config.CUDA_KERNELS),
            "available": cuda_reason is None,
            "reason": cuda_reason,
            "nvdec_available": nvdec_reason is None,
            "nvdec_reason": nvdec_reason,
        },
    }


def _print_table(sections: list[tuple[str, dict[str, Any]]], out: TextIO) -> None:
    for i, (title, values) in enumerate(sections):
        if i:
            out.write("\n")
        out.write(f"{title}\n")
        width = max((len(key) for key in values), default=0)
        for key, value in values.items():
            out.write(f"  {key.ljust(width)}  {'-' if value is None else value}\n")


def cmd_info(args: argparse.Namespace, out: TextIO) -> int:
    info = _info(args)
    if args.json:
        json.dump(info, out, indent=2)
        out.write("\n")
        return EXIT_OK
    cuda = info["cuda"]
    _print_table([
        ("torchcodec", {"version": f"{info['torchcodec']} ({info['distribution']}, TorchCodec "
                                   f"{info['torchcodec_api']} API)",
                        "location": info["location"], "python": info["python"], "platform": info["platform"],
                        "default bridge": info["default_bridge"],
                        "output libraries": ", ".join(k for k, v in info["output_libraries"].items() if v) or "none"}),
        ("FFmpeg", {**info["ffmpeg"], "license": info["ffmpeg_license"]}),
        ("decoders", _available_and_missing(info["decoders"])),
        ("encoders", _available_and_missing(info["encoders"])),
        ("image codecs", {"available": ", ".join(k for k, v in info["image_codecs"].items() if v is None),
                          "missing": "; ".join(f"{k} (built without {v})" for k, v in info["image_codecs"].items()
                                               if v is not None) or None}),
        ("CUDA", {"built with CUDA": "yes" if cuda["built"] else "no",
                  "run-time libraries": "libcuda.so.1, libnvcuvid.so.1, libnvidia-encode.so.1 (opened when needed; "
                                        "nothing CUDA is linked)",
                  "kernels": "yes" if cuda["kernels"] else "no",
                  "CUDA": "available" if cuda["available"] else f"unavailable: {cuda['reason']}",
                  "NVDEC": "available" if cuda["nvdec_available"] else f"unavailable: {cuda['nvdec_reason']}"}),
    ], out)
    return EXIT_OK


def _available_and_missing(found: dict[str, bool]) -> dict[str, Optional[str]]:
    return {"available": ", ".join(k for k, v in found.items() if v) or None,
            "missing": ", ".join(k for k, v in found.items() if not v) or None}


def _json_value(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)      # Fraction (pixel aspect ratio)


def probe(path: str, exact: bool = False) -> dict[str, Any]:
    """Every stream's metadata (video streams: header values, or a scan with ``exact``)."""
    from torchcodec._core._demuxer import unselected_demuxer
    from torchcodec.decoders import AudioDecoder, VideoDecoder

    demuxer = unselected_demuxer(path)
    streams = []
    for index in range(demuxer._num_streams):
        kind = demuxer._media_type(index)
        if kind == "video":
            metadata: Any = VideoDecoder(path, stream_index=index,
                                         seek_mode="exact" if exact else "approximate").metadata
        elif kind == "audio":
            metadata = AudioDecoder(path, stream_index=index).metadata
        else:
            streams.append({"stream_index": index, "media_type": kind})
            continue
        streams.append({field.name: _json_value(getattr(metadata, field.name))
                        for field in dataclasses.fields(metadata)})
    return {"path": path, "num_streams": demuxer._num_streams, "best_video_stream": demuxer._best_stream("video"),
            "best_audio_stream": demuxer._best_stream("audio"), "streams": streams}


def cmd_probe(args: argparse.Namespace, out: TextIO) -> int:
    result = probe(args.file, exact=args.exact)
    if args.json:
        json.dump(result, out, indent=2)
        out.write("\n")
        return EXIT_OK
    sections = [(result["path"], {"streams": result["num_streams"], "best video stream": result["best_video_stream"],
                                  "best audio stream": result["best_audio_stream"]})]
    for stream in result["streams"]:
        values = {k: v for k, v in stream.items() if k not in ("stream_index", "media_type")}
        sections.append((f"stream {stream['stream_index']} ({stream['media_type']})", values))
    _print_table(sections, out)
    return EXIT_OK


def _video_decoder(path: str, stream: Optional[int], transforms: Any = None) -> Any:
    from torchcodec.decoders import VideoDecoder

    return VideoDecoder(path, stream_index=stream, dimension_order="NHWC", transforms=transforms)


def frame_times(begin: float, end: float, every: float) -> list[float]:
    """begin, begin + every, ... while below end (times computed as begin + k * every)."""
    if not every > 0:
        raise CliError(f"--every must be a positive number of seconds, got {every}")
    count = 0
    while begin + count * every < end:
        count += 1
    return [begin + k * every for k in range(count)]


def cmd_frames(args: argparse.Namespace, out: TextIO) -> int:
    numpy = _numpy()
    import torchcodec

    decoder = _video_decoder(args.file, args.stream)
    metadata = decoder.metadata
    if args.at is not None:
        times = list(args.at)
    else:
        times = frame_times(metadata.begin_stream_seconds, metadata.end_stream_seconds, args.every)
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        raise CliError(f"{args.output} exists and is not a directory: -o names the directory to write the frames into")
    os.makedirs(args.output, exist_ok=True)
    names = [f"frame_{k:05d}_{t:.3f}s.{args.format}" for k, t in enumerate(times)]
    for name in names:
        refuse_existing(os.path.join(args.output, name), args.force)
    bar = progress(len(times), "frames", enabled=not args.no_progress)
    written = []
    try:
        with torchcodec.bridge("numpy"):
            for start in range(0, len(times), _BATCH):
                chunk = times[start:start + _BATCH]
                try:
                    batch = decoder.get_frames_played_at(chunk)
                except (IndexError, RuntimeError) as error:
                    if any(not metadata.begin_stream_seconds <= t < metadata.end_stream_seconds for t in chunk):
                        raise CliError(f"a time is outside the stream [{metadata.begin_stream_seconds}, "
                                       f"{metadata.end_stream_seconds}) s: {error}") from None
                    raise
                for k in range(len(chunk)):
                    name = names[start + k]
                    write_image(os.path.join(args.output, name), numpy.asarray(batch.data[k]), args.format)
                    written.append(name)
                bar.update(len(chunk))
    finally:
        bar.close()
    out.write(f"wrote {len(written)} frames to {args.output}\n")
    return EXIT_OK


def sheet_times(begin: float, end: float, count: int) -> list[float]:
    """``count`` times evenly spread over [begin, end): the middle of each of ``count`` equal spans."""
    span = (end - begin) / count
    return [begin + (k + 0.5) * span for k in range(count)]


def cmd_contact_sheet(args: argparse.Namespace, out: TextIO) -> int:
    numpy = _numpy()
    import torchcodec
    from torchcodec.transforms import Resize

    if args.columns < 1 or args.rows < 1 or args.width < 2:
        raise CliError("--columns and --rows must be at least 1, --width at least 2")
    image_format = image_format_of(args.output)
    refuse_existing(args.output, args.force)
    metadata = _video_decoder(args.file, args.stream).metadata
    height = max(2, round(args.width * metadata.height / metadata.width / 2) * 2)
    decoder = _video_decoder(args.file, args.stream, transforms=[Resize((height, args.width))])
    count = args.columns * args.rows
    times = sheet_times(metadata.begin_stream_seconds, metadata.end_stream_seconds, count)
    gap = 4
    sheet = numpy.zeros((args.rows * (height + gap) + gap, args.columns * (args.width + gap) + gap, 3), numpy.uint8)
    bar = progress(count, "contact sheet", enabled=not args.no_progress)
    try:
        with torchcodec.bridge("numpy"):
            for start in range(0, count, _BATCH):
                chunk = times[start:start + _BATCH]
                batch = decoder.get_frames_played_at(chunk)
                for k in range(len(chunk)):
                    row, column = divmod(start + k, args.columns)
                    y, x = gap + row * (height + gap), gap + column * (args.width + gap)
                    sheet[y:y + height, x:x + args.width] = batch.data[k]
                bar.update(len(chunk))
    finally:
        bar.close()
    write_image(args.output, sheet, image_format)
    out.write(f"wrote {args.output} ({args.columns}x{args.rows} frames of {args.width}x{height})\n")
    return EXIT_OK


# ---- entry point ----------------------------------------------------------------------------

def _version_line() -> str:
    import torchcodec
    from torchcodec import _install

    api = ".".join(torchcodec.__version__.split(".")[:2])
    return (f"torchcodec {torchcodec.__version__} ({_install.DISTRIBUTION}, TorchCodec {api} API) with FFmpeg "
            f"{torchcodec.ffmpeg_version()}")


def _parser() -> argparse.ArgumentParser:
    # (the raw formatter keeps --version's line whole: argparse wraps it to the terminal otherwise)
    parser = argparse.ArgumentParser(prog="torchcodec", description="Decode video and audio with torchcodec: "
                                     "inspect files, extract frames, make contact sheets.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=_version_line(),
                        help="the version of torchcodec, the API it implements, and FFmpeg's")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    info = commands.add_parser("info", help="versions, FFmpeg, decoders, CUDA and NVDEC status")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(run=cmd_info)

    probe_parser = commands.add_parser("probe", help="metadata of every stream of a file")
    probe_parser.add_argument("file")
    probe_parser.add_argument("--json", action="store_true", help="print JSON")
    probe_parser.add_argument("--exact", action="store_true",
                              help="scan video streams for exact frame counts and times (slower)")
    probe_parser.set_defaults(run=cmd_probe)

    frames = commands.add_parser("frames", help="write frames as images")
    frames.add_argument("file")
    when = frames.add_mutually_exclusive_group(required=True)
    when.add_argument("--at", type=float, nargs="+", metavar="SECONDS", help="the frames played at these times")
    when.add_argument("--every", type=float, metavar="SECONDS", help="a frame every SECONDS from the start")
    frames.add_argument("-o", "--output", required=True, metavar="DIR", help="directory to write into")
    frames.add_argument("--format", choices=("png", "jpg"), default="png")
    frames.add_argument("--stream", type=int, default=None, help="video stream index (default: the best)")
    frames.add_argument("--force", action="store_true", help="overwrite frame files that exist")
    frames.add_argument("--no-progress", action="store_true")
    frames.set_defaults(run=cmd_frames)

    sheet = commands.add_parser("contact-sheet", help="a grid of frames spread over the video, as one image")
    sheet.add_argument("file")
    sheet.add_argument("-o", "--output", required=True, metavar="IMAGE",
                       help="the image to write: its extension chooses the format, .png or .jpg (.jpeg)")
    sheet.add_argument("--force", action="store_true", help="overwrite IMAGE if it exists")
    sheet.add_argument("--columns", type=int, default=4)
    sheet.add_argument("--rows", type=int, default=4)
    sheet.add_argument("--width", type=int, default=320, help="width of each frame in pixels")
    sheet.add_argument("--stream", type=int, default=None, help="video stream index (default: the best)")
    sheet.add_argument("--no-progress", action="store_true")
    sheet.set_defaults(run=cmd_contact_sheet)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the command line; returns the exit code (the console script exits with it)."""
    args = _parser().parse_args(argv)
    try:
        return args.run(args, sys.stdout)
    except KeyboardInterrupt:
        sys.stderr.write("torchcodec: interrupted\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError:      # `torchcodec probe x | head`
        return EXIT_OK
    except (CliError, OSError, ValueError, RuntimeError, IndexError, ImportError) as error:
        sys.stderr.write(f"torchcodec: error: {error}\n")
        return EXIT_FAILED
