"""Image decoders on bad input: truncated, corrupt and hostile files give clear exceptions (never a
crash, a hang or a huge allocation), memory stays flat over many decodes, batches run without the
GIL, and a build without a codec says what to install."""
from __future__ import annotations

import io
import multiprocessing
import os
import struct
import threading
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

import torchcodec
import torchcodec._image
from torchcodec.decoders import (ImageCodecUnavailableError, ImageTooLargeError, decode_avif, decode_gif,
                                 decode_heic, decode_image, decode_jpeg, decode_png, decode_webp,
                                 get_max_image_pixels, set_max_image_pixels)

from gil_probe import assert_releases_the_gil
from image_reference import run, write_png

DECODERS = {"jpeg": decode_jpeg, "png": decode_png, "webp": decode_webp, "gif": decode_gif, "avif": decode_avif,
            "heic": decode_heic}


def small_image(seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, (24, 32, 3)).astype(np.uint8)


@pytest.fixture(scope="module")
def samples(tmp_path_factory) -> dict[str, bytes]:
    """A small image of each format."""
    folder = tmp_path_factory.mktemp("safety")
    image = Image.fromarray(small_image())
    out = {}
    for kind, options in {"jpeg": {"format": "JPEG", "quality": 90}, "png": {"format": "PNG"},
                          "webp": {"format": "WEBP", "quality": 80}, "gif": {"format": "GIF"}}.items():
        buffer = io.BytesIO()
        image.save(buffer, **options)
        out[kind] = buffer.getvalue()
    source = folder / "source.png"
    image.save(source)
    run("avifenc", "-s", "10", source, folder / "small.avif")
    out["avif"] = (folder / "small.avif").read_bytes()
    run("heif-enc", "-q", "50", source, "-o", folder / "small.heic")
    out["heic"] = (folder / "small.heic").read_bytes()
    return out


def resident_bytes() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.parametrize("kind", list(DECODERS))
def test_truncated_files_raise(samples, kind):
    data = samples[kind]
    cuts = sorted({len(data) // 2, len(data) // 3, len(data) // 4, 1, 8, 20})
    for cut in cuts:
        with pytest.raises(RuntimeError):
            DECODERS[kind](data[:cut])


def test_what_follows_the_image_data_is_not_needed(samples):
    """As in TorchCodec: JPEG needs its end-of-image marker and GIF its trailer, PNG stops reading
    after the image data (a missing IEND chunk is no error)."""
    with pytest.raises(RuntimeError, match="Image is incomplete or truncated"):
        decode_jpeg(samples["jpeg"][:-2])
    with pytest.raises(RuntimeError, match="DGifSlurp"):
        decode_gif(samples["gif"][:-1])
    assert np.array_equal(decode_png(samples["png"][:-12]), decode_png(samples["png"]))


def test_truncation_messages_are_torchcodecs(samples):
    half = {kind: data[: len(data) // 2] for kind, data in samples.items()}
    with pytest.raises(RuntimeError, match="Image is incomplete or truncated"):
        decode_jpeg(half["jpeg"])
    with pytest.raises(RuntimeError, match="Out of bound read"):
        decode_png(half["png"])
    with pytest.raises(RuntimeError, match="Failed to decode the WebP bitstream"):
        decode_webp(half["webp"])
    with pytest.raises(RuntimeError, match="DGifSlurp"):
        decode_gif(half["gif"])
    with pytest.raises(RuntimeError, match="avifDecoderParse failed"):
        decode_avif(half["avif"])


@pytest.mark.parametrize("kind, phrase", [("jpeg", "Not a JPEG"), ("png", "Not a PNG file"),
                                          ("webp", "WebPGetFeatures failed"), ("gif", "DGifOpen"),
                                          ("avif", "avifDecoderParse failed"),
                                          ("heic", "heif_context_read_from_memory_without_copy failed")])
def test_not_an_image_raises(kind, phrase):
    with pytest.raises(RuntimeError, match=phrase):
        DECODERS[kind](b"\0" * 100)


def test_corrupt_png_crc():
    buffer = io.BytesIO()
    Image.fromarray(small_image()).save(buffer, "PNG")
    data = bytearray(buffer.getvalue())
    data[12:16] = b"XXXX"
    with pytest.raises(RuntimeError, match="CRC error"):
        decode_png(bytes(data))


@pytest.mark.parametrize("kind", list(DECODERS))
def test_corrupted_bytes_never_crash(samples, kind):
    """Random byte changes after the signature: each variant decodes or raises an ordinary exception."""
    rng = np.random.default_rng(len(kind))
    data = np.frombuffer(samples[kind], np.uint8)
    for _ in range(120):
        corrupt = data.copy()
        positions = rng.integers(12, len(data), rng.integers(1, 6))
        corrupt[positions] = rng.integers(0, 256, len(positions))
        try:
            DECODERS[kind](corrupt.tobytes(), mode=("RGB", "UNCHANGED", "GRAY_ALPHA")[_ % 3])
        except (RuntimeError, ValueError):
            pass


# ---- size bound ------------------------------------------------------------------------------

def png_header_only(width: int, height: int) -> bytes:
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b""))


def test_huge_png_header_is_refused_before_allocating():
    before = resident_bytes()
    with pytest.raises(ImageTooLargeError, match="100000x100000"):
        decode_png(png_header_only(100000, 100000))
    assert resident_bytes() - before < 50 << 20


def test_zero_size_headers_raise(samples):
    """Headers that declare no pixels: a 0-wide PNG (libpng refuses its IHDR), a 0 x 0 GIF, a JPEG of
    height 0 (libjpeg: a DNL marker, which it does not support)."""
    with pytest.raises(RuntimeError, match="Invalid IHDR data"):
        decode_png(png_header_only(0, 5))
    screen = b"GIF89a" + struct.pack("<HHBBB", 0, 0, 0x80, 0, 0) + b"\0\0\0\xff\xff\xff"
    frame = b"\x2c" + struct.pack("<HHHHB", 0, 0, 0, 0, 0) + b"\x02\x02\x4c\x01\x00"
    with pytest.raises(RuntimeError, match="no pixels"):
        decode_gif(screen + frame + b"\x3b")
    data = bytearray(samples["jpeg"])
    sof = data.index(b"\xff\xc0")
    data[sof + 5:sof + 7] = b"\0\0"
    with pytest.raises(RuntimeError, match="Empty JPEG image"):
        decode_jpeg(bytes(data))


def test_huge_jpeg_header_is_refused(samples):
    data = bytearray(samples["jpeg"])
    sof = data.index(b"\xff\xc0")
    data[sof + 5:sof + 9] = struct.pack(">HH", 65500, 65500)
    with pytest.raises(ImageTooLargeError, match="65500x65500"):
        decode_jpeg(bytes(data))
    with pytest.raises(ImageTooLargeError, match="image 1 of the batch"):
        decode_jpeg([samples["jpeg"], bytes(data)])


def test_huge_gif_screen_is_refused(samples):
    data = bytearray(samples["gif"])
    data[6:10] = struct.pack("<HH", 65535, 65535)
    with pytest.raises(ImageTooLargeError):
        decode_gif(bytes(data))


def test_frames_far_larger_than_the_screen_are_refused():
    """A 2x2 screen whose second frame declares 65535 x 65535: refused before it is decompressed."""
    header = b"GIF89a" + struct.pack("<HHBBB", 2, 2, 0x80, 0, 0) + b"\0\0\0\xff\xff\xff"
    small = b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0) + b"\x02\x02\x4c\x01\x00"
    huge = b"\x2c" + struct.pack("<HHHHB", 0, 0, 65535, 65535, 0) + b"\x02\x02\x4c\x01\x00"
    with pytest.raises(ImageTooLargeError, match="rectangles"):
        decode_gif(header + small + huge + b"\x3b")


def million_frame_gif(screen: int) -> bytes:
    """A GIF of 10**6 one-pixel frames (about 15 MB) on a ``screen`` x ``screen`` logical screen."""
    header = b"GIF89a" + struct.pack("<HHBBB", screen, screen, 0x80, 0, 0) + b"\0\0\0\xff\xff\xff"
    frame = b"\x2c" + struct.pack("<HHHHB", 0, 0, 1, 1, 0) + b"\x02\x02\x4c\x01\x00"
    return header + frame * 1_000_000 + b"\x3b"


def test_a_million_frames_are_refused_before_allocating():
    data = million_frame_gif(100)                 # 10**10 pixels in all
    before = resident_bytes()
    with pytest.raises(ImageTooLargeError, match="1000000 frames of 100x100"):
        decode_gif(data)
    assert resident_bytes() - before < 50 << 20


def test_many_small_frames_decode():
    data = million_frame_gif(1)
    decoded = decode_gif(data[: 19 + 15 * 100_000] + b"\x3b")
    assert decoded.shape == (100_000, 3, 1, 1)
    assert (np.asarray(decoded) == 255).all()


@pytest.mark.parametrize("kind", list(DECODERS))
def test_the_limit_applies_to_every_codec(samples, kind):
    set_max_image_pixels(24 * 32 - 1)
    try:
        with pytest.raises(ImageTooLargeError, match="more than the limit of 767 pixels"):
            DECODERS[kind](samples[kind])
    finally:
        set_max_image_pixels(None)
    assert DECODERS[kind](samples[kind]).shape[-2:] == (24, 32)


@pytest.mark.parametrize("kind", list(DECODERS))
def test_the_memory_limit_applies_to_every_codec(samples, kind):
    """torchcodec.set_memory_limit refuses an output bigger than the limit: 24 x 32 x 4 bytes (RGBA)
    is 3072 bytes, over a limit of 3000 and under one of 4000."""
    torchcodec.set_memory_limit(3000)
    try:
        expected = r"shape \(4, 24, 32\) \(uint8\) needs 3.0 KiB \(3072 bytes\), more than the memory limit"
        with pytest.raises(MemoryError, match=expected) as raised:
            DECODERS[kind](samples[kind], mode="RGBA")
        assert isinstance(raised.value, RuntimeError)
        torchcodec.set_memory_limit(4000)
        assert DECODERS[kind](samples[kind], mode="RGBA").shape[-3:] == (4, 24, 32)
    finally:
        torchcodec.set_memory_limit(None)


def test_the_memory_limit_refuses_a_jpeg_batch_as_a_whole(samples):
    """Two 24 x 32 RGB outputs need 4608 bytes: over a 4000-byte limit that each one alone is under."""
    torchcodec.set_memory_limit(4000)
    try:
        assert decode_jpeg([samples["jpeg"]])[0].shape == (3, 24, 32)
        with pytest.raises(MemoryError, match=r"a batch of 2 images needs 4.5 KiB \(4608 bytes\)"):
            decode_jpeg([samples["jpeg"], samples["jpeg"]])
    finally:
        torchcodec.set_memory_limit(None)


def test_the_pixel_limit_error_is_a_memory_error(samples):
    set_max_image_pixels(100)
    try:
        with pytest.raises(MemoryError):
            decode_png(samples["png"])
    finally:
        set_max_image_pixels(None)


def test_max_image_pixels_setting():
    assert get_max_image_pixels() == 1 << 30
    for bad in (0, -5, 1.5, "10", True):
        with pytest.raises(ValueError):
            set_max_image_pixels(bad)
    set_max_image_pixels(1000)
    seen = []
    thread = threading.Thread(target=lambda: seen.append(get_max_image_pixels()))
    thread.start()
    thread.join()
    set_max_image_pixels(None)
    assert seen == [1 << 30]                       # a setting of this thread only
    assert get_max_image_pixels() == 1 << 30


# ---- memory, threads, fork -------------------------------------------------------------------

@pytest.mark.parametrize("kind", list(DECODERS))
def test_memory_stays_flat_over_10000_decodes(samples, kind):
    good = samples[kind]
    bad = good[: len(good) // 2]
    decode = DECODERS[kind]
    for _ in range(300):
        decode(good)
    before = resident_bytes()
    for i in range(10_000):
        if i % 5 == 0:
            with pytest.raises(RuntimeError):
                decode(bad)
        else:
            decode(good)
    assert resident_bytes() - before < 8 << 20


def test_memory_stays_flat_over_batches(samples):
    batch = [samples["jpeg"]] * 20
    for _ in range(20):
        decode_jpeg(batch)
    before = resident_bytes()
    for _ in range(500):
        decode_jpeg(batch, num_threads=2)
    assert resident_bytes() - before < 8 << 20


def test_batch_releases_the_gil():
    image = np.random.default_rng(1).integers(0, 256, (1080, 1920, 3)).astype(np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(image).save(buffer, "JPEG", quality=90)
    batch = [buffer.getvalue()] * 16
    decode_jpeg(batch[:1])
    assert_releases_the_gil(lambda: decode_jpeg(batch, num_threads=1))


def test_concurrent_batches_from_many_threads(samples):
    images = [samples["jpeg"], Image.open(io.BytesIO(samples["jpeg"])).convert("L")]
    buffer = io.BytesIO()
    images[1].save(buffer, "JPEG")
    batch = [samples["jpeg"], buffer.getvalue()] * 8
    reference = [decode_jpeg(item) for item in batch]
    results = [None] * 6

    def work(k):
        results[k] = [decode_jpeg(batch, mode="RGB", num_threads=3) for _ in range(10)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for outcome in results:
        for decoded in outcome:
            assert all(np.array_equal(a, b) for a, b in zip(decoded, reference))


def _decode_in_child(data, queue):
    queue.put(np.asarray(decode_jpeg([data, data], num_threads=2)[1]).sum())


def test_batches_work_after_fork(samples):
    expected = np.asarray(decode_jpeg([samples["jpeg"]] * 4, num_threads=4)[0]).sum()
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_decode_in_child, args=(samples["jpeg"], queue))
    child.start()
    child.join(60)
    assert child.exitcode == 0
    assert queue.get(timeout=5) == expected


# ---- builds without a codec ------------------------------------------------------------------

@pytest.mark.parametrize("kind, package, phrase", [("jpeg", "libturbojpeg0-dev", "libjpeg"),
                                                    ("png", "libpng-dev", "libpng"),
                                                    ("webp", "libwebp-dev", "libwebp"),
                                                    ("gif", "libgif-dev", "giflib"),
                                                    ("avif", "libavif-dev", "libavif"),
                                                    ("heic", "libheif-dev", "libheif")])
def test_a_codec_that_was_not_built_says_what_to_install(samples, monkeypatch, kind, package, phrase):
    entry = torchcodec._image.LIBRARIES[kind]
    monkeypatch.setitem(torchcodec._image.LIBRARIES, kind, (False,) + entry[1:])
    assert torchcodec._image.available()[kind] is False
    with pytest.raises(ImageCodecUnavailableError, match=f"apt-get install {package}") as raised:
        DECODERS[kind](samples[kind])
    assert phrase in str(raised.value)
    assert isinstance(raised.value, RuntimeError) and isinstance(raised.value, ImportError)
    with pytest.raises(ImageCodecUnavailableError):
        decode_image(samples[kind])


def test_a_codec_whose_library_cannot_be_loaded_says_so(samples, monkeypatch):
    """A codec that was built but whose library is gone at run time (the HEIC case TorchCodec's
    message names) raises ImageCodecUnavailableError with TorchCodec's phrase, not a bare ImportError."""
    def missing(name):
        raise ImportError("libheif.so.1: cannot open shared object file")
    monkeypatch.setattr(torchcodec._image, "_import", missing)
    monkeypatch.setattr(torchcodec._image, "_loaded", {})
    with pytest.raises(ImportError, match="Failed to load the HEIC decoding library") as raised:
        decode_heic(samples["heic"])
    assert "libheif.so.1" in str(raised.value) and "apt-get install libheif-dev" in str(raised.value)
    with pytest.raises(ImageCodecUnavailableError, match="could not be loaded"):
        decode_png(samples["png"])


def test_this_build_has_every_codec():
    """tools/setup.sh installs every image library: a build that lost one fails here, not silently."""
    assert torchcodec._image.available() == {name: True for name in DECODERS}
