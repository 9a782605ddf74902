"""Decode a video end to end: print its metadata, decode frames, and write a contact sheet PNG.

    python tools/demo.py [VIDEO] [--out contact_sheet.png] [--columns 4] [--frames 16]

Without VIDEO, a sample clip is generated with the ffmpeg CLI (tools/make_media.py).
"""
from __future__ import annotations

import argparse
import pathlib
import struct
import sys
import time
import zlib

import numpy as np

import torchcodec
from torchcodec.decoders import VideoDecoder

HERE = pathlib.Path(__file__).resolve().parent


def sample_video() -> pathlib.Path:
    sys.path.insert(0, str(HERE))      # tools/ (scripts run with python -P do not have it)
    import make_media
    return make_media.ensure_media(["h264_bframes.mp4"])["h264_bframes.mp4"]


def contact_sheet(frames: np.ndarray, columns: int) -> np.ndarray:
    """Tile (N, H, W, 3) frames into one (rows*H, columns*W, 3) image, left to right, top to bottom."""
    n, height, width, _ = frames.shape
    rows = -(-n // columns)
    sheet = np.zeros((rows * height, columns * width, 3), dtype=np.uint8)
    for i, frame in enumerate(frames):
        r, c = divmod(i, columns)
        sheet[r * height:(r + 1) * height, c * width:(c + 1) * width] = frame
    return sheet


def write_png(path: pathlib.Path, image: np.ndarray) -> None:
    """Write an (H, W, 3) uint8 RGB image as a PNG file (no dependency beyond zlib)."""
    height, width, _ = image.shape
    raw = b"".join(b"\x00" + image[row].tobytes() for row in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6))
                     + chunk(b"IEND", b""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("video", nargs="?", help="a video file (default: a generated sample clip)")
    parser.add_argument("--out", default="contact_sheet.png", help="where to write the contact sheet")
    parser.add_argument("--frames", type=int, default=16, help="how many frames to sample")
    parser.add_argument("--columns", type=int, default=4)
    args = parser.parse_args(argv)

    video = pathlib.Path(args.video) if args.video else sample_video()
    print(f"torchcodec {torchcodec.__version__} with FFmpeg {torchcodec.ffmpeg_version()}")
    print(f"video: {video}")
    start = time.perf_counter()
    decoder = VideoDecoder(video, dimension_order="NHWC")
    print(decoder.metadata)

    start = time.perf_counter()
    count = sum(1 for _ in decoder)
    elapsed = time.perf_counter() - start
    print(f"decoded all {count} frames sequentially in {elapsed:.2f} s ({count / elapsed:.1f} frames/s)")

    indices = np.linspace(0, len(decoder) - 1, num=min(args.frames, len(decoder))).round().astype(int)
    batch = decoder.get_frames_at(indices.tolist())
    print(f"sampled frames {indices.tolist()} at {np.round(batch.pts_seconds, 3).tolist()} s")
    out = pathlib.Path(args.out)
    write_png(out, contact_sheet(batch.data, args.columns))
    print(f"wrote {out} ({out.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
