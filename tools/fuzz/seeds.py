"""Seed corpus of the fuzz targets: tiny clips of every codec and container, made by tools/make_media.py.

The test corpus (``make_media.MEDIA``) holds clips of 30 KB to 1 MB, made to check pixels and
timestamps. Fuzzing wants the same variety in as few bytes as possible: libFuzzer mutates a few bytes
per run, and the smaller the file, the larger the share of each mutation that lands in headers,
bitstream syntax and index tables, and the more runs per second. So these are the same recipes
shrunk (64x48, 5-6 frames, GOPs of 3 with B-frames; 0.15-0.25 s of audio), 0.5 to 6 KB each,
made by make_media's own machinery (``ensure_media`` with this registry: cached beside a recipe
hash, made again when a recipe changes).

The frame-mapping target's seeds are ``ffprobe -show_frames -of json`` outputs of two of them.
"""
from __future__ import annotations

import json
import pathlib
import shutil
import subprocess
import sys

TOOLS = pathlib.Path(__file__).resolve().parent.parent
REPO = TOOLS.parent
sys.path.insert(0, str(TOOLS))
import make_media as mm  # noqa: E402  (tools/make_media.py, a script beside this folder)

Spec = mm.Spec


def _video(rate: int = 10, duration: float = 0.5, size: str = "64x48") -> list[str]:
    return mm._testsrc(size=size, rate=rate, duration=duration)


def _tone(sample_rate: int, layout: str, num_channels: int, duration: float = 0.2) -> list[str]:
    return mm._tone(sample_rate, layout, num_channels, duration)


def _x264(**kwargs) -> list[str]:
    return mm._x264(gop=3, bframes=1, **kwargs)


def _x265(pix_fmt: str = "yuv420p") -> list[str]:
    return ["-c:v", "libx265", "-preset", "ultrafast", "-pix_fmt", pix_fmt, "-tag:v", "hvc1",
            "-x265-params", "pools=none:frame-threads=1:keyint=3:min-keyint=3:bframes=1:log-level=error",
            *mm._VBITEXACT]


def _s(description: str, *args: str, **kwargs) -> Spec:
    return Spec(description, tuple(args), **kwargs)


_VPX = ["-deadline", "realtime", "-cpu-used", "8", "-threads", "1", "-b:v", "100k", "-g", "3"]

VIDEO: dict[str, Spec] = {
    "h264_bframes.mp4": _s("H.264, B-frames, mp4", *_video(), *_x264()),
    "h264_bframes.mkv": _s("H.264, B-frames, Matroska", *_video(), *_x264()),
    "h264_bframes.ts": _s("H.264, B-frames, MPEG-TS", *_video(), *_x264()),
    "h264_10bit.mp4": _s("H.264 High 10", *_video(), *_x264(pix_fmt="yuv420p10le")),
    "h264_yuv444_odd.mp4": _s("H.264 4:4:4 at 33x17", *mm._lavfi("testsrc2=size=64x48:rate=10:duration=0.5,scale=33:17"),
                              *_x264(pix_fmt="yuv444p")),
    "h264_rotate90.mp4": mm._rotated(90, "h264_bframes.mp4"),
    "h264_editlist.mp4": _s("H.264 cut inside a GOP: an edit list discards packets", "-ss", "0.25", "-i", "{in0}",
                            "-c", "copy", inputs=("h264_bframes.mp4",)),
    "h264_vfr.mkv": _s("H.264, variable frame rate",
                       *mm._lavfi("testsrc2=size=64x48:rate=10:duration=0.8,select='not(eq(mod(n\\,3)\\,1))'"),
                       "-fps_mode", "passthrough", *_x264()),
    "h264_aac.mp4": _s("H.264 + AAC", *_video(), *_tone(16000, "stereo", 2, 0.5), "-map", "0:v", "-map", "1:a",
                       *_x264(), *mm._aac("32k")),
    "two_video_streams.mkv": _s("two H.264 streams", *_video(size="32x32"), *_video(), "-map", "0:v", "-map", "1:v",
                                *_x264()),
    "hevc_bframes.mp4": _s("HEVC, B-frames, mp4", *_video(), *_x265()),
    "hevc_10bit.mkv": _s("HEVC Main 10, Matroska", *_video(), *_x265("yuv420p10le")),
    "vp9.webm": _s("VP9 in WebM", *_video(), "-c:v", "libvpx-vp9", "-row-mt", "0", *_VPX, *mm._VBITEXACT),
    "vp8.webm": _s("VP8 in WebM", *_video(), "-c:v", "libvpx", *_VPX, *mm._VBITEXACT),
    "av1.mp4": _s("AV1 (libaom) in mp4", *_video(), "-c:v", "libaom-av1", "-usage", "realtime", "-cpu-used", "8",
                  "-row-mt", "0", "-threads", "1", "-b:v", "100k", "-g", "3", *mm._VBITEXACT),
    "mpeg4_bframes.avi": _s("MPEG-4 part 2, B-frames, AVI", *_video(), "-c:v", "mpeg4", "-bf", "1", "-g", "3",
                            "-q:v", "8", *mm._VBITEXACT),
    "mpeg2_mp2.mpg": _s("MPEG-PS: MPEG-2 video + MP2 audio", *_video(), *_tone(32000, "stereo", 2, 0.5),
                        "-map", "0:v", "-map", "1:a", "-c:v", "mpeg2video", "-bf", "1", "-g", "3", "-q:v", "8",
                        *mm._VBITEXACT, "-c:a", "mp2", "-b:a", "64k"),
    "h264_bt709_fullrange.mp4": _s("H.264 BT.709 full range", *_video(),
                                   *mm._coloured(_x264(), matrix="bt709", full_range=True)[4:]),
    "mjpeg.avi": _s("Motion JPEG in AVI (every frame a keyframe)", *_video(duration=0.3), "-c:v", "mjpeg",
                    "-q:v", "20", "-pix_fmt", "yuvj420p"),
}

AUDIO: dict[str, Spec] = {
    "aac.m4a": _s("AAC-LC in mp4", *_tone(16000, "stereo", 2), *mm._aac("32k")),
    "aac_adts.aac": _s("raw ADTS AAC", *_tone(16000, "mono", 1), *mm._aac("24k"), "-f", "adts"),
    "mp3.mp3": _s("MP3 with a Xing header", *_tone(22050, "mono", 1), "-c:a", "libmp3lame", "-b:a", "32k"),
    "flac.flac": _s("FLAC 16-bit", *_tone(8000, "stereo", 2), "-c:a", "flac", "-sample_fmt", "s16"),
    "flac_offset.mka": _s("FLAC in Matroska starting at 1.5 s", *_tone(8000, "mono", 1), "-c:a", "flac",
                          "-output_ts_offset", "1.5"),
    "opus.ogg": _s("Opus in Ogg", *_tone(48000, "mono", 1), "-c:a", "libopus", "-b:a", "16k"),
    "opus.webm": _s("Opus in WebM", *_tone(48000, "stereo", 2), "-c:a", "libopus", "-b:a", "16k"),
    "vorbis.ogg": _s("Vorbis in Ogg", *_tone(11025, "mono", 1), "-c:a", "libvorbis", "-q:a", "0"),
    "pcm_s16_stereo.wav": _s("WAV s16 stereo", *_tone(8000, "stereo", 2, 0.1), "-c:a", "pcm_s16le"),
}

WAV: dict[str, Spec] = {
    "u8_mono.wav": _s("WAV u8 mono", *_tone(8000, "mono", 1, 0.1), "-c:a", "pcm_u8"),
    "s24_5.1.wav": _s("WAV s24 5.1 (WAVE_FORMAT_EXTENSIBLE)", *_tone(8000, "5.1", 6, 0.05), "-c:a", "pcm_s24le"),
    "s32_stereo.wav": _s("WAV s32 stereo", *_tone(8000, "stereo", 2, 0.05), "-c:a", "pcm_s32le"),
    "f32_mono.wav": _s("WAV float32 mono", *_tone(8000, "mono", 1, 0.1), "-c:a", "pcm_f32le"),
    "f64_stereo.wav": _s("WAV float64 stereo", *_tone(8000, "stereo", 2, 0.05), "-c:a", "pcm_f64le"),
    "s16_rf64.wav": _s("RF64 s16 mono", *_tone(8000, "mono", 1, 0.1), "-c:a", "pcm_s16le", "-rf64", "always"),
    "mulaw.wav": _s("WAV mu-law (not PCM: the WAV decoder refuses it)", *_tone(8000, "mono", 1, 0.1),
                    "-c:a", "pcm_mulaw"),
}

def _still(size: str = "24x16", *filters: str) -> list[str]:
    graph = ",".join((f"testsrc2=size=32x32:rate=4:duration=1,scale={size.replace('x', ':')}", *filters))
    return [*mm._lavfi(graph), "-frames:v", "1"]


def _anim(frames: int = 3) -> list[str]:
    return [*mm._lavfi("testsrc2=size=32x32:rate=4:duration=1,scale=24:16"), "-frames:v", str(frames)]


# Still and animated images (image target): every format and the variants its decoder branches on.
# HEIC is made by heif-enc from heic_source.png (HEIC_FROM), since FFmpeg has no HEIF muxer.
IMAGE: dict[str, Spec] = {
    "rgb.jpg": _s("baseline JPEG 4:2:0", *_still(), "-c:v", "mjpeg", "-q:v", "10", "-pix_fmt", "yuvj420p"),
    "odd.jpg": _s("JPEG at an odd size", *_still("23x15"), "-c:v", "mjpeg", "-q:v", "10",
                  "-pix_fmt", "yuvj422p"),
    "yuv444.jpg": _s("JPEG 4:4:4", *_still(), "-c:v", "mjpeg", "-q:v", "10", "-pix_fmt", "yuvj444p"),
    "rgb.png": _s("PNG RGB 8-bit", *_still(), "-pix_fmt", "rgb24"),
    "rgba.png": _s("PNG RGBA", *_still("24x16", "format=rgba,geq=r='r(X,Y)':a='X*10'"), "-pix_fmt", "rgba"),
    "gray16.png": _s("PNG 16-bit gray", *_still("23x15"), "-pix_fmt", "gray16be"),
    "rgb48.png": _s("PNG 16-bit RGB", *_still(), "-pix_fmt", "rgb48be"),
    "palette.png": _s("PNG palette", *_still("24x16", "format=pal8"), "-pix_fmt", "pal8"),
    "heic_source.png": _s("source of the HEIC seed", *_still("32x32"), "-pix_fmt", "rgb24"),
    "gray_source.pgm": _s("source of the grayscale JPEG seed", *_still("23x15"), "-pix_fmt", "gray"),
    "anim.gif": _s("animated GIF", *_anim()),
    "still.gif": _s("one-frame GIF", *_still("23x15")),
    "lossy.webp": _s("lossy WebP", *_still(), "-c:v", "libwebp", "-quality", "50"),
    "lossless_alpha.webp": _s("lossless WebP with alpha", *_still("24x16", "format=rgba,geq=r='r(X,Y)':a='Y*16'"),
                              "-c:v", "libwebp", "-lossless", "1", "-pix_fmt", "bgra"),
    "anim.webp": _s("animated WebP", *_anim(), "-c:v", "libwebp_anim", "-quality", "30", "-loop", "0"),
    "still.avif": _s("AVIF 8-bit", *_still(), "-c:v", "libaom-av1", "-still-picture", "1", "-cpu-used", "8",
                     "-crf", "40", "-pix_fmt", "yuv420p"),
    "still10.avif": _s("AVIF 10-bit", *_still(), "-c:v", "libaom-av1", "-still-picture", "1", "-cpu-used", "8",
                       "-crf", "40", "-pix_fmt", "yuv420p10le"),
}
HEIC_FROM = {"still.heic": "heic_source.png"}
# and a grayscale JPEG by cjpeg (FFmpeg 5.1's MJPEG encoder writes 3 components even for gray input)
GRAY_JPEG_FROM = "gray_source.pgm"

SEEDS: dict[str, Spec] = {**VIDEO, **AUDIO, **WAV, **IMAGE}

# The videos whose ffprobe frame lists seed the frame-mapping target (the target decodes them).
MAPPED_VIDEOS = ("h264_bframes.mp4", "vp9.webm")

# Which seeds each target starts from.
TARGET_SEEDS: dict[str, tuple[str, ...]] = {
    "video_bytes": tuple(VIDEO),
    "video_reopen": tuple(VIDEO),
    "video_lazy": tuple(VIDEO),
    "video_file": tuple(VIDEO),
    "audio": (*AUDIO, *WAV, "h264_aac.mp4", "mpeg2_mp2.mpg"),
    "audio_reopen": (*AUDIO, "h264_aac.mp4"),
    "wav": (*WAV, "pcm_s16_stereo.wav"),
    "image": tuple(name for name in IMAGE if name not in (*HEIC_FROM.values(), GRAY_JPEG_FROM)),
    "blocks": (*VIDEO, *AUDIO),
}

DEFAULT_DIR = REPO / "build" / "fuzz"


def media(out: pathlib.Path = DEFAULT_DIR / "media") -> dict[str, pathlib.Path]:
    """Make (or reuse) every seed clip in ``out``; return ``{name: path}``."""
    return mm.ensure_media(list(SEEDS), out, registry=SEEDS)


def _frame_mappings(video: pathlib.Path) -> list[bytes]:
    """ffprobe -show_frames JSON of ``video``'s first video stream: in full, and with only the keys
    the decoder reads (pts/duration as newer ffprobes print them, pkt_* as older ones do)."""
    full = subprocess.run([mm.FFPROBE, "-v", "error", "-select_streams", "v:0", "-show_frames", "-of", "json",
                           str(video)], capture_output=True, check=True).stdout
    frames = json.loads(full)["frames"]
    short = [{"stream_index": f.get("stream_index", 0), "key_frame": f["key_frame"], "pts": f.get("pts", 0),
              "duration": f.get("duration", f.get("pkt_duration", 0))} for f in frames]
    legacy = [{"media_type": "video", "key_frame": f["key_frame"], "pkt_pts": f.get("pts", 0),
               "pkt_duration": f.get("duration", f.get("pkt_duration", 0))} for f in frames]
    return [full, json.dumps({"frames": short}).encode(), json.dumps({"frames": legacy}, indent=1).encode()]


def write_seed_dirs(out: pathlib.Path = DEFAULT_DIR / "seeds") -> dict[str, pathlib.Path]:
    """Fill ``out/<target>/`` with each target's seed files; return ``{target: folder}``."""
    paths = media()
    folders = {}
    for target, names in TARGET_SEEDS.items():
        folder = folders[target] = out / target
        folder.mkdir(parents=True, exist_ok=True)
        for name in names:
            if not (folder / name).exists():
                shutil.copyfile(paths[name], folder / name)
    for heic, source in HEIC_FROM.items():
        if not (folders["image"] / heic).exists():
            made = subprocess.run(["heif-enc", "-q", "30", "-o", str(folders["image"] / heic), str(paths[source])],
                                  capture_output=True)
            if made.returncode:       # no heif-enc (libheif-examples): the HEIC decoder gets mutations only
                (folders["image"] / heic).unlink(missing_ok=True)
                print(f"seeds: {heic} not made: {made.stderr.decode(errors='replace').strip()}", file=sys.stderr)
    gray = folders["image"] / "gray.jpg"
    if not gray.exists():
        made = subprocess.run(["cjpeg", "-grayscale", "-quality", "50", "-outfile", str(gray), str(paths[GRAY_JPEG_FROM])],
                              capture_output=True)
        if made.returncode:
            gray.unlink(missing_ok=True)
            print(f"seeds: gray.jpg not made: {made.stderr.decode(errors='replace').strip()}", file=sys.stderr)
    folder = folders["image_encode"] = out / "image_encode"
    folder.mkdir(parents=True, exist_ok=True)
    for number in range(8):       # the bytes only steer choices and fill pixels: short varied seeds
        (folder / f"steer_{number}.bin").write_bytes(bytes((number * 37 + i * 11) % 256 for i in range(16 + 40 * number)))
    folder = folders["frame_mappings"] = out / "frame_mappings"
    folder.mkdir(parents=True, exist_ok=True)
    for video_number, name in enumerate(MAPPED_VIDEOS):
        for variant, blob in enumerate(_frame_mappings(paths[name])):
            # The target decodes MAPPED_VIDEOS[len(data) % 2]: pad so that each list meets its video.
            if len(blob) % 2 != video_number:
                blob += b"\n"
            (folder / f"{pathlib.Path(name).stem}_{variant}.json").write_bytes(blob)
    return folders
