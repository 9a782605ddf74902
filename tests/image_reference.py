"""Independent references for the image codecs: the command-line tools of the same libraries the
package links (djpeg/cjpeg from libjpeg-turbo, dwebp/cwebp from libwebp, avifdec/avifenc from
libavif, heif-convert/heif-enc from libheif), a small PNG reader and writer written here from the PNG
specification (zlib and numpy only), and EXIF orientation written from the EXIF specification.
Nothing here imports torchcodec.
"""
from __future__ import annotations

import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import numpy as np
import pytest

# the Debian package of each tool (tools/setup.sh installs them)
PACKAGES = {"djpeg": "libjpeg-turbo-progs", "cjpeg": "libjpeg-turbo-progs", "dwebp": "webp", "cwebp": "webp",
            "avifdec": "libavif-bin", "avifenc": "libavif-bin", "heif-enc": "libheif-examples",
            "heif-convert": "libheif-examples"}


def run(*cmd: str | os.PathLike) -> bytes:
    """Run a tool; skip the test when it is not installed."""
    if shutil.which(str(cmd[0])) is None:
        pytest.skip(f"{cmd[0]} is not installed (Debian package {PACKAGES.get(str(cmd[0]), '?')}; tools/setup.sh)")
    result = subprocess.run([str(c) for c in cmd], capture_output=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed: {result.stderr.decode(errors='replace')}")
    return result.stdout


# ---- PNM --------------------------------------------------------------------------------------

def read_pnm(data: bytes) -> np.ndarray:
    """P5 (gray), P6 (RGB) or P7 (PAM) bytes as an (H, W, C) uint8/uint16 array."""
    magic = data[:2]
    if magic == b"P7":
        header, _, body = data.partition(b"ENDHDR\n")
        fields = dict(line.split(b" ", 1) for line in header.split(b"\n")[1:] if b" " in line)
        width, height, depth, maxval = (int(fields[k]) for k in (b"WIDTH", b"HEIGHT", b"DEPTH", b"MAXVAL"))
    else:
        tokens, position = [], 2
        while len(tokens) < 3:
            while data[position:position + 1].isspace():
                position += 1
            if data[position:position + 1] == b"#":
                position = data.index(b"\n", position)
                continue
            end = position
            while not data[end:end + 1].isspace():
                end += 1
            tokens.append(int(data[position:end]))
            position = end
        width, height, maxval = tokens
        depth = 1 if magic == b"P5" else 3
        body = data[position + 1:]
    dtype = np.dtype(">u2") if maxval > 255 else np.dtype(np.uint8)
    count = width * height * depth
    return np.frombuffer(body, dtype, count).reshape(height, width, depth).astype(dtype.newbyteorder("="))


def write_pnm(path: Path, image: np.ndarray) -> None:
    """An (H, W, 1 or 3) uint8 array as PGM/PPM."""
    height, width, channels = image.shape
    path.write_bytes(b"P%d\n%d %d\n255\n" % (5 if channels == 1 else 6, width, height) + image.tobytes())


# ---- PNG (from the specification) ------------------------------------------------------------

_CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}
_ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2))


def _chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def write_png(path: Path, image: np.ndarray, *, interlace: bool = False, chunks: list[tuple[bytes, bytes]] = ()) -> None:
    """An (H, W, C) uint8 or uint16 array (C 1..4) as a PNG (filter 0 on every row, Adam7 when
    ``interlace``); ``chunks`` (type, body) go before the image data."""
    height, width, channels = image.shape
    depth = 16 if image.dtype == np.uint16 else 8
    color_type = {1: 0, 2: 4, 3: 2, 4: 6}[channels]
    samples = image.astype(">u2") if depth == 16 else image

    def rows(part: np.ndarray) -> bytes:
        if part.size == 0:
            return b""
        raw = part.reshape(part.shape[0], -1).view(np.uint8)
        return b"".join(b"\0" + row.tobytes() for row in raw)

    if interlace:
        data = b"".join(rows(samples[y0::dy, x0::dx]) for x0, y0, dx, dy in _ADAM7)
    else:
        data = rows(samples)
    ihdr = struct.pack(">IIBBBBB", width, height, depth, color_type, 0, 0, 1 if interlace else 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", ihdr)
                     + b"".join(_chunk(kind, body) for kind, body in chunks)
                     + _chunk(b"IDAT", zlib.compress(data)) + _chunk(b"IEND", b""))


def _unfilter(raw: bytes, height: int, stride: int, bpp: int) -> np.ndarray:
    out = np.zeros((height, stride), np.int64)
    position = 0
    previous = np.zeros(stride, np.int64)
    for y in range(height):
        kind = raw[position]
        line = np.frombuffer(raw, np.uint8, stride, position + 1).astype(np.int64)
        position += stride + 1
        row = np.zeros(stride, np.int64)
        if kind == 0:
            row = line
        elif kind == 2:
            row = (line + previous) & 255
        else:
            for x in range(stride):
                left = row[x - bpp] if x >= bpp else 0
                up = previous[x]
                if kind == 1:
                    predictor = left
                elif kind == 3:
                    predictor = (left + up) // 2
                else:
                    upper_left = previous[x - bpp] if x >= bpp else 0
                    p = left + up - upper_left
                    pa, pb, pc = abs(p - left), abs(p - up), abs(p - upper_left)
                    predictor = left if pa <= pb and pa <= pc else (up if pb <= pc else upper_left)
                row[x] = (line[x] + predictor) & 255
        out[y] = row
        previous = row
    return out.astype(np.uint8)


def read_png(path: Path) -> np.ndarray:
    """A non-interlaced 8- or 16-bit gray/gray+alpha/RGB/RGBA PNG as an (H, W, C) array."""
    data = Path(path).read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    position, idat, header = 8, b"", None
    while position < len(data):
        length, kind = struct.unpack(">I4s", data[position:position + 8])
        body = data[position + 8:position + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        position += 12 + length
    width, height, depth, color_type, _, _, interlace = header
    assert interlace == 0 and depth in (8, 16) and color_type in _CHANNELS
    channels = _CHANNELS[color_type]
    bpp = channels * depth // 8
    pixels = _unfilter(zlib.decompress(idat), height, width * bpp, bpp)
    if depth == 16:
        return pixels.view(">u2").astype(np.uint16).reshape(height, width, channels)
    return pixels.reshape(height, width, channels)


# ---- EXIF orientation (JEITA CP-3451, the Orientation tag) ------------------------------------

def orient(image: np.ndarray, orientation: int) -> np.ndarray:
    """The (H, W, ...) image as displayed for EXIF orientation 1..8 (anything else: unchanged)."""
    return {
        2: lambda a: a[:, ::-1],                    # mirrored left-right
        3: lambda a: a[::-1, ::-1],                 # rotated 180 degrees
        4: lambda a: a[::-1],                       # mirrored top-bottom
        5: lambda a: a.swapaxes(0, 1),              # transposed
        6: lambda a: np.rot90(a, -1),               # rotated 90 degrees clockwise
        7: lambda a: a[::-1, ::-1].swapaxes(0, 1),  # transversed
        8: lambda a: np.rot90(a, 1),                # rotated 90 degrees counter-clockwise
    }.get(orientation, lambda a: a)(image)


def exif_with_orientation(orientation: int, little_endian: bool = True) -> bytes:
    """TIFF-formatted EXIF data (no "Exif\\0\\0" prefix) whose IFD0 holds only the Orientation tag."""
    order = "<" if little_endian else ">"
    return ((b"II" if little_endian else b"MM") + struct.pack(order + "HI", 42, 8) + struct.pack(order + "H", 1)
            + struct.pack(order + "HHIHH", 0x0112, 3, 1, orientation, 0) + struct.pack(order + "I", 0))


# ---- libjpeg-turbo, libwebp, libavif, libheif tools ------------------------------------------

def djpeg(path: Path, *, gray: bool = False) -> np.ndarray:
    return read_pnm(run("djpeg", *(["-grayscale"] if gray else []), "-pnm", path))


def cjpeg(image: np.ndarray, quality: int, tmp: Path) -> bytes:
    source = tmp / ("cjpeg_source.pgm" if image.shape[2] == 1 else "cjpeg_source.ppm")
    write_pnm(source, image)
    return run("cjpeg", "-quality", str(quality), "-baseline", source)


def dwebp(path: Path, *, alpha: bool) -> np.ndarray:
    return read_pnm(run("dwebp", path, "-pam" if alpha else "-ppm", "-o", "-"))


def avifdec(path: Path, depth: int, tmp: Path) -> np.ndarray:
    out = tmp / f"{Path(path).stem}_avifdec{depth}.png"
    run("avifdec", "-d", str(depth), path, out)
    return read_png(out)


def heif_convert(path: Path, tmp: Path) -> list[np.ndarray]:
    """Every top-level image of a HEIF file, as libheif's heif-convert writes them (PNG)."""
    out = tmp / f"{Path(path).stem}_converted.png"
    run("heif-convert", path, out)
    if out.exists():
        return [read_png(out)]
    return [read_png(tmp / f"{Path(path).stem}_converted-{k}.png")
            for k in range(1, 1000) if (tmp / f"{Path(path).stem}_converted-{k}.png").exists()]
