"""The proof of one installed wheel (tools/build_wheels.sh runs it with the wheel's fresh venv).

    python proof.py references DIR    made with the system's ffmpeg CLI and cjpeg/djpeg (outside)
    python proof.py check DIR         inside a mount namespace where the system's FFmpeg, image
                                      and codec libraries are empty files: the wheel alone

`check` prints one line per claim and exits non-zero at the first that fails. References come
from the system's tools, which run before the libraries are hidden: the ffmpeg CLI's decode of a
clip (video as rgb24, audio as f32le), a PNG written by the CLI with its rgb24 frame, a JPEG
written by cjpeg and its djpeg decode.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

WIDTH, HEIGHT, FRAMES, RATE = 160, 120, 50, 48000


def run(*command: str) -> None:
    subprocess.run(command, check=True)


def references(folder: Path) -> None:
    ffmpeg = ("ffmpeg", "-hide_banner", "-v", "error", "-y")
    clip = str(folder / "clip.mp4")
    run(*ffmpeg, "-f", "lavfi", "-i", f"testsrc2=size={WIDTH}x{HEIGHT}:rate=25", "-f", "lavfi",
        "-i", f"sine=frequency=440:sample_rate={RATE}", "-t", "2", "-c:v", "libx264", "-pix_fmt", "yuv420p",
        "-bf", "2", "-c:a", "aac", "-shortest", clip)
    run(*ffmpeg, "-i", clip, "-map", "0:v", "-vf", "format=rgb24", "-f", "rawvideo", str(folder / "clip.rgb"))
    run(*ffmpeg, "-i", clip, "-map", "0:a", "-f", "f32le", str(folder / "clip.f32"))
    run(*ffmpeg, "-f", "lavfi", "-i", f"testsrc2=size={WIDTH}x{HEIGHT}", "-frames:v", "1", str(folder / "image.png"))
    run(*ffmpeg, "-i", str(folder / "image.png"), "-f", "rawvideo", "-pix_fmt", "rgb24", str(folder / "image.rgb"))
    run(*ffmpeg, "-i", str(folder / "image.png"), "-pix_fmt", "rgb24", str(folder / "image.ppm"))
    with open(folder / "image.jpg", "wb") as jpeg:
        subprocess.run(["cjpeg", "-quality", "90", str(folder / "image.ppm")], stdout=jpeg, check=True)
    with open(folder / "image_djpeg.ppm", "wb") as ppm:
        subprocess.run(["djpeg", "-ppm", str(folder / "image.jpg")], stdout=ppm, check=True)


def read_ppm(path: Path):
    import numpy

    data = path.read_bytes()
    magic, width, height, maxval, rest = data.split(maxsplit=4)
    assert magic == b"P6" and maxval == b"255", (magic, maxval)
    return numpy.frombuffer(rest, numpy.uint8).reshape(int(height), int(width), 3)


def psnr(a, b) -> float:
    import numpy

    mse = float(numpy.mean((a.astype(numpy.float64) - b.astype(numpy.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * numpy.log10(255.0 ** 2 / mse)


def check(folder: Path) -> None:
    import ctypes

    os.chdir(folder)
    for name in ("libavcodec.so.59", "libavformat.so.59", "libturbojpeg.so.0", "libpng16.so.16"):
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        sys.exit(f"the system's {name} can still be loaded: the proof would prove nothing")
    print("   the system's FFmpeg and image libraries cannot be loaded")

    import numpy

    import torchcodec
    from torchcodec import _cuda
    from torchcodec.decoders import AudioDecoder, VideoDecoder, decode_jpeg, decode_png
    from torchcodec.encoders import AudioEncoder, JpegEncoder, PngEncoder, VideoEncoder

    torchcodec.set_bridge("numpy")
    frames = VideoDecoder("clip.mp4", dimension_order="NHWC").get_all_frames().data
    expected = numpy.fromfile("clip.rgb", numpy.uint8).reshape(-1, HEIGHT, WIDTH, 3)
    assert frames.shape == expected.shape == (FRAMES, HEIGHT, WIDTH, 3), (frames.shape, expected.shape)
    assert (frames == expected).all(), "video frames differ from the ffmpeg CLI's"
    samples = AudioDecoder("clip.mp4").get_all_samples()
    cli_samples = numpy.fromfile("clip.f32", numpy.float32)
    assert samples.sample_rate == RATE and samples.data.shape == (1, cli_samples.size), samples.data.shape
    assert numpy.array_equal(samples.data[0], cli_samples), "audio samples differ from the ffmpeg CLI's"
    maps = {line.split()[-1] for line in open("/proc/self/maps") if "libavcodec" in line}
    assert maps and all(".libs/" in path for path in maps), maps
    print(f"   decoded {FRAMES} frames and {cli_samples.size} audio samples, equal to the ffmpeg CLI's, with "
          f"FFmpeg {torchcodec.ffmpeg_version()} from {sorted(maps)}")

    image = numpy.fromfile("image.rgb", numpy.uint8).reshape(HEIGHT, WIDTH, 3)
    png = decode_png(numpy.fromfile("image.png", numpy.uint8))
    assert numpy.array_equal(png.transpose(1, 2, 0), image), "decode_png differs from the ffmpeg CLI's pixels"
    jpeg = decode_jpeg(numpy.fromfile("image.jpg", numpy.uint8))
    assert numpy.array_equal(jpeg.transpose(1, 2, 0), read_ppm(Path("image_djpeg.ppm"))), "decode_jpeg differs from djpeg"
    chw = numpy.ascontiguousarray(image.transpose(2, 0, 1))
    round_trip = decode_png(PngEncoder(chw).to_tensor())
    assert numpy.array_equal(round_trip, chw), "PngEncoder -> decode_png is not lossless"
    # TurboJPEG and cjpeg share libjpeg-turbo's defaults (4:2:0, the integer DCT, standard tables)
    ours = JpegEncoder(chw).to_tensor(quality=90)
    assert bytes(ours) == Path("image.jpg").read_bytes(), "JpegEncoder(quality=90) differs from cjpeg -quality 90"
    print("   decode_png equal to the CLI's pixels, decode_jpeg equal to djpeg's, PNG round trip lossless, "
          "JpegEncoder's bytes equal to cjpeg's")

    tone = numpy.sin(numpy.arange(RATE, dtype=numpy.float64) * 2 * numpy.pi * 440 / RATE).astype(numpy.float32)[None] * 0.5
    AudioEncoder(tone, sample_rate=RATE).to_file("tone.flac")
    flac = AudioDecoder("tone.flac").get_all_samples().data
    assert flac.shape == tone.shape and float(numpy.abs(flac - tone).max()) <= 2.0 ** -15, "FLAC is not 16-bit exact"
    AudioEncoder(tone, sample_rate=RATE).to_file("tone.mp3")
    mp3 = AudioDecoder("tone.mp3").get_all_samples()
    assert abs(mp3.data.shape[1] / mp3.sample_rate - 1.0) < 0.1, mp3.data.shape
    VideoEncoder(numpy.ascontiguousarray(expected[:10].transpose(0, 3, 1, 2)), frame_rate=25).to_file(
        "video.mp4", codec="mpeg4")
    encoded = VideoDecoder("video.mp4", dimension_order="NHWC").get_all_frames().data
    assert encoded.shape == expected[:10].shape, encoded.shape
    video_quality = min(psnr(a, b) for a, b in zip(encoded, expected[:10]))
    assert video_quality > 31.5, video_quality      # 32.6 dB measured (mpeg4 at its default 200 kb/s)
    print(f"   encoded FLAC (16-bit exact), MP3 (LAME) and MPEG-4 video ({video_quality:.1f} dB), read back")

    reason = _cuda.reason()
    assert not torchcodec.cuda_available() and reason and "libcuda.so.1" in reason, reason
    from torchcodec._cuda import _build_config

    try:
        VideoDecoder("clip.mp4", device="cuda")
    except RuntimeError as error:
        assert "libcuda.so.1" in str(error), error
    else:
        raise AssertionError("device='cuda' without a driver did not raise")
    print(f"   CUDA wing imported without a driver (kernels embedded: {bool(_build_config.CUDA_KERNELS)}): {reason}")


if __name__ == "__main__":
    {"references": references, "check": check}[sys.argv[1]](Path(sys.argv[2]))
