"""Fuzz targets: each takes the fuzzer's bytes and drives one public entry point with them.

A target returns normally when the package either decoded the input or refused it with one of the
exceptions its API documents (``EXPECTED``). Anything else escapes: a crash or a sanitizer report
inside the engine, and also a Python exception of the wrong kind (ZeroDivisionError, OverflowError,
KeyError... from a value that a hostile header made absurd), which a user could not catch with the
documented ``except`` clauses.

The choices that are not the file itself (seek mode, dimension order, which calls, at what times)
are drawn from a generator seeded with the input's last two bytes (which stay part of the file):
a run is reproducible from its input file alone, the fuzzer steers the choices by mutating those
bytes, and minimising an input by cutting elsewhere keeps the same calls.

Targets ask for a handful of frames per call, and run under a memory limit of ``MEMORY_LIMIT``
(torchcodec.set_memory_limit): a header may claim any size, and the package must refuse a request
beyond the limit with a MemoryError before allocating it, or size its output from what it decodes
(tools/fuzz.sh makes any single allocation above its -malloc_limit_mb a finding).
"""
from __future__ import annotations

import atexit
import io
import math
import pathlib
import random
import shutil
import tempfile
from typing import Any, Callable

import numpy as np

import torchcodec
from torchcodec.decoders import (AudioConverter, AudioDecoder, ColorConverter, Demuxer, VideoDecoder, WavDecoder,
                                 decode_avif, decode_gif, decode_heic, decode_image, decode_jpeg, decode_png,
                                 decode_webp, get_container_metadata)
from torchcodec.encoders import JpegEncoder, PngEncoder
from torchcodec.transforms import CenterCrop, RandomCrop, Resize

torchcodec.set_bridge("numpy")
MEMORY_LIMIT = 256 << 20
torchcodec.set_memory_limit(MEMORY_LIMIT)
# The index cache is off but in video_reopen and audio_reopen, whose cache lives in this process's own directory.
REOPEN_CACHE = tempfile.mkdtemp(prefix="torchcodec-fuzz-index-")
atexit.register(shutil.rmtree, REOPEN_CACHE, True)
torchcodec.set_index_cache(False)

# What the public API raises for input it cannot use (UnsupportedWavError is a ValueError;
# NotImplementedError a RuntimeError; MemoryError: the memory limit's refusal, or check_av's
# translation of AVERROR(ENOMEM)).
EXPECTED: tuple[type[BaseException], ...] = (RuntimeError, ValueError, IndexError, MemoryError)

MAX_FRAMES = 4


def _rng(data: bytes) -> random.Random:
    return random.Random(data[-2:])


def _calls(rng: random.Random, calls: list[Callable[[], object]], count: int,
           expected: tuple[type[BaseException], ...] = EXPECTED) -> None:
    """Run ``count`` of ``calls`` (chosen by ``rng``), each allowed to fail with ``expected``."""
    for call in rng.sample(calls, min(count, len(calls))):
        try:
            call()
        except expected:
            pass


# ---- video ------------------------------------------------------------------------------------

def _stream_index(rng: random.Random) -> int | None:
    """Mostly FFmpeg's best stream; now and then an explicit one, which may not exist or be of the
    other kind."""
    return None if rng.random() < 0.8 else rng.randrange(3)


def _transforms(rng: random.Random) -> list | None:
    """Mostly none; else a resize or crop, which may be larger than the frame (then ValueError)."""
    if rng.random() < 0.75:
        return None
    size = (rng.randint(1, 70), rng.randint(1, 70))
    return [rng.choice((Resize, CenterCrop, RandomCrop))(size)]


def _open_video(source: object, rng: random.Random, **options: object) -> VideoDecoder:
    seek_mode = "exact" if "custom_frame_mappings" in options else rng.choice(("exact", "approximate"))
    return VideoDecoder(source, seek_mode=seek_mode, dimension_order=rng.choice(("NCHW", "NHWC")),
                        output_dtype=rng.choice(("uint8", "uint8", "float32", "auto")),
                        num_ffmpeg_threads=rng.choice((1, 1, 1, 2)), stream_index=_stream_index(rng),
                        transforms=_transforms(rng), **options)


def _read_metadata(decoder: VideoDecoder | AudioDecoder | WavDecoder) -> None:
    metadata = decoder.metadata
    repr(metadata)
    str(metadata)
    for name in dir(metadata):
        if not name.startswith("_"):
            getattr(metadata, name)


def _exercise_video(decoder: VideoDecoder, rng: random.Random,
                    expected: tuple[type[BaseException], ...] = EXPECTED) -> None:
    _read_metadata(decoder)
    n = len(decoder)
    metadata = decoder.metadata
    if n <= 0:
        return
    begin, end = metadata.begin_stream_seconds, metadata.end_stream_seconds
    span = (end - begin) if end is not None and math.isfinite(end - begin) else 1.0

    def some_time() -> float:
        return begin + rng.random() * span

    calls: list[Callable[[], object]] = [
        lambda: decoder[0],
        lambda: decoder[-1],
        lambda: decoder[rng.randrange(n)],
        lambda: decoder.get_frames_at([rng.randrange(-n, n) for _ in range(rng.randint(1, MAX_FRAMES))]),
        lambda: decoder.get_frames_in_range(rng.randrange(n), n, max(1, n // 2)),
        lambda: decoder[max(0, n - 3)::2],
        lambda: decoder.get_frame_played_at(some_time()),
        lambda: decoder.get_frames_played_at([some_time() for _ in range(rng.randint(1, MAX_FRAMES))]),
        lambda: decoder.get_frames_played_in_range(begin, begin + min(span, 2 / (metadata.average_fps or 10))),
        lambda: decoder.get_frames_played_in_range(begin, begin + min(span, 0.5), fps=MAX_FRAMES / 0.5),
        lambda: next(iter(decoder)),
    ]
    _calls(rng, calls, 4, expected)


def video_bytes(data: bytes) -> None:
    """VideoDecoder over the bytes: metadata, the index (exact or approximate), a few get_* calls."""
    rng = _rng(data)
    try:
        decoder = _open_video(data, rng)
    except EXPECTED:
        return
    _exercise_video(decoder, rng)


def video_reopen(data: bytes) -> None:
    """VideoDecoder over the bytes twice, the second time from the index cache (for mp4 and
    Matroska: FFmpeg's probe and the scan skipped; other formats are not cached): the same metadata
    and the same frames, or the same refusal."""
    rng = _rng(data)
    seek_mode = rng.choice(("exact", "approximate"))
    stream_index = _stream_index(rng)
    indices = [rng.randrange(1 << 16) for _ in range(2)]

    def decode() -> tuple:
        try:
            decoder = VideoDecoder(data, seek_mode=seek_mode, stream_index=stream_index)
        except EXPECTED as error:
            return (type(error),)
        n = len(decoder)
        try:
            frames = decoder.get_frames_at([i % n for i in indices]) if n else None
        except EXPECTED as error:
            return (repr(decoder.metadata), type(error))
        return (repr(decoder.metadata), frames and (frames.data.tobytes(), frames.pts_seconds.tobytes()))

    _reopens_alike(decode)


def video_lazy(data: bytes) -> None:
    """VideoDecoder over the bytes in exact mode, with the lazy index and without it (the whole
    file scanned at construction): the same frames for requests made before anything needs the
    whole index, then the same metadata, or the same refusals. A stream whose packets turn out of
    order after their start was used (``_index_reordered_late``: documented) may differ before."""
    from torchcodec.decoders import _factory
    rng = _rng(data)
    stream_index = _stream_index(rng)
    indices = [rng.randrange(80) for _ in range(rng.randint(1, 3))]
    seconds = rng.random() * 3

    def outcome(call: Callable[[], object]) -> object:
        try:
            frames = call()
        except EXPECTED as error:
            return type(error)
        return frames.data.tobytes(), np.asarray(frames.pts_seconds).tobytes()

    def decode(lazy: bool) -> tuple:
        saved = _factory.LAZY_INDEX
        _factory.LAZY_INDEX = lazy
        try:
            decoder = VideoDecoder(data, stream_index=stream_index)
        except EXPECTED as error:
            return (type(error),), False
        finally:
            _factory.LAZY_INDEX = saved
        early = (outcome(lambda: decoder.get_frames_at(indices)),
                 outcome(lambda: decoder.get_frames_played_at([seconds])))
        later = (repr(decoder.metadata), outcome(lambda: decoder.get_frames_at([0, -1])))
        return (early, later), getattr(decoder, "_index_reordered_late", False)

    (lazy_result, reordered), (whole_result, _) = decode(True), decode(False)
    if reordered:
        lazy_result, whole_result = lazy_result[1:], whole_result[1:]
    assert lazy_result == whole_result, "the lazy index decoded differently from the whole scan"


def audio_reopen(data: bytes) -> None:
    """AudioDecoder over the bytes twice, the second time with FFmpeg's probe skipped from the index
    cache (mp4 and Matroska): the same metadata and the same samples, or the same refusal."""
    rng = _rng(data)
    stream_index = _stream_index(rng)
    ranges = [sorted((rng.random() * 4, rng.random() * 4)) for _ in range(2)]

    def decode() -> tuple:
        try:
            decoder = AudioDecoder(data, stream_index=stream_index)
        except EXPECTED as error:
            return (type(error),)
        begin = decoder.metadata.begin_stream_seconds_from_header or 0.0
        got = []
        for start, stop in ranges:
            try:
                samples = decoder.get_samples_played_in_range(begin + start, begin + stop)
                got.append((samples.data.tobytes(), samples.pts_seconds, samples.sample_rate))
            except EXPECTED as error:
                got.append(type(error))
        return (repr(decoder.metadata), got)

    _reopens_alike(decode)


def _reopens_alike(decode: Callable[[], tuple]) -> None:
    """``decode()`` twice with the index cache on, in this process's own directory: equal results."""
    torchcodec.set_index_cache(True, directory=REOPEN_CACHE, max_bytes=16 << 20)
    try:
        first, again = decode(), decode()
    finally:
        torchcodec.set_index_cache(False)
    assert first == again, "a file opened again from the index cache decoded differently"


class InjectedReadError(OSError):
    """Raised by FlakyFile at a chosen offset: the decoder must hand it back to the caller."""


class FlakyFile:
    """A binary file over ``data`` (read, seek, tell) that may return short reads and fail at one offset."""

    def __init__(self, data: bytes, chunk: int, fail_at: int | None) -> None:
        self._data, self._chunk, self._fail_at, self._pos = data, chunk, fail_at, 0

    def _next(self, size: int) -> bytes:
        if self._fail_at is not None and self._pos <= self._fail_at < self._pos + max(size, 1):
            raise InjectedReadError(f"injected read error at byte {self._fail_at}")
        size = len(self._data) - self._pos if size is None or size < 0 else size
        got = self._data[self._pos:self._pos + min(size, self._chunk)]
        self._pos += len(got)
        return got

    def read(self, size: int = -1) -> bytes:
        return self._next(size)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: len(self._data)}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._pos = base + offset
        return self._pos

    def tell(self) -> int:
        return self._pos


class FlakyRawFile(FlakyFile, io.RawIOBase):
    """The same through readinto(), as io.RawIOBase subclasses are read."""

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        got = self._next(len(buffer))
        memoryview(buffer).cast("B")[:len(got)] = got
        return len(got)


def video_file(data: bytes) -> None:
    """VideoDecoder over a file object (short reads; sometimes a read that raises) instead of bytes."""
    rng = _rng(data)
    chunk = rng.choice((1 << 20, 4096, 1000, 7))
    fail_at = rng.randrange(len(data)) if data and rng.random() < 0.25 else None
    expected = (*EXPECTED, InjectedReadError)
    try:
        decoder = _open_video(rng.choice((FlakyFile, FlakyRawFile))(data, chunk, fail_at), rng)
    except expected:
        return
    _exercise_video(decoder, rng, expected)


# ---- audio ------------------------------------------------------------------------------------

def _exercise_audio(decoder: AudioDecoder | WavDecoder, rng: random.Random) -> None:
    _read_metadata(decoder)
    metadata = decoder.metadata
    begin = metadata.begin_stream_seconds_from_header or 0.0
    duration = metadata.duration_seconds_from_header
    span = duration if duration is not None and math.isfinite(duration) and 0 < duration < 3600 else 1.0

    def some_time() -> float:
        return begin + rng.random() * span

    calls: list[Callable[[], object]] = [
        lambda: decoder.get_samples_played_in_range(*sorted((some_time(), some_time()))),
        lambda: decoder.get_samples_played_in_range(begin, begin + span / 4),
        lambda: decoder.get_samples_played_in_range(begin + span / 2, begin + span / 2),
        decoder.get_all_samples,
        lambda: decoder.get_samples_played_in_range(some_time()),
    ]
    _calls(rng, calls, 3)


def audio(data: bytes) -> None:
    """AudioDecoder over the bytes, sometimes resampling and remixing: metadata and sample ranges."""
    rng = _rng(data)
    try:
        decoder = AudioDecoder(data, stream_index=_stream_index(rng),
                               sample_rate=rng.choice((None, None, 8000, 44100)),
                               num_channels=rng.choice((None, None, 1, 2, 6)),
                               seek_mode=rng.choice(("exact", "approximate")))
    except EXPECTED:
        return
    _exercise_audio(decoder, rng)


def wav(data: bytes) -> None:
    """WavDecoder over the bytes: the header parser, then sample ranges."""
    rng = _rng(data)
    try:
        decoder = WavDecoder(data)
    except EXPECTED:
        return
    _exercise_audio(decoder, rng)


# ---- custom frame mappings --------------------------------------------------------------------

_MAPPED: dict[int, bytes] = {}


def set_mapped_videos(paths: list[pathlib.Path]) -> None:
    """The videos that frame_mappings decodes with the fuzzed mappings (seeds.MAPPED_VIDEOS)."""
    _MAPPED.update({i: path.read_bytes() for i, path in enumerate(paths)})


def frame_mappings(data: bytes) -> None:
    """VideoDecoder(custom_frame_mappings=the bytes) over a fixed video (chosen by len(data) % 2):
    the JSON reader, the index built from it, and decoding by an index that may be nonsense."""
    if not _MAPPED:
        raise RuntimeError("frame_mappings: call set_mapped_videos() first")
    rng = _rng(data)
    video = _MAPPED[len(data) % len(_MAPPED)]
    mappings = data if rng.random() < 0.5 else data.decode("utf-8", "replace")
    try:
        decoder = _open_video(video, rng, custom_frame_mappings=mappings)
    except EXPECTED:
        return
    _exercise_video(decoder, rng)


# ---- images -----------------------------------------------------------------------------------

_IMAGE_DECODERS = {"jpeg": decode_jpeg, "png": decode_png, "webp": decode_webp, "gif": decode_gif,
                   "avif": decode_avif, "heic": decode_heic}
_MODES = ("RGB", "RGB", "GRAY", "UNCHANGED", "RGB_ALPHA", "GRAY_ALPHA")
_DTYPES = (None, None, np.uint16, "auto")


def _format_of(data: bytes) -> str | None:
    """The format decode_image recognises in the first bytes (None: none)."""
    try:
        from torchcodec.decoders._image_decoders import _detect_format
        return _detect_format(data[:64])
    except ValueError:
        return None


def _check_image(image: object, mode: str) -> None:
    """A decoded image is (C, H, W) or (N, C, H, W) with the channels its mode promises."""
    shape = np.asarray(image).shape
    channels = {"GRAY": (1,), "GRAY_ALPHA": (2,), "RGB": (3,), "RGB_ALPHA": (4,), "UNCHANGED": (1, 2, 3, 4)}[mode]
    if len(shape) not in (3, 4) or shape[-3] not in channels or 0 in shape:
        raise AssertionError(f"decoded image of shape {shape} in mode {mode}")


def image(data: bytes) -> None:
    """decode_image over the bytes, then the format's own decoder (or, now and then, another
    format's) in another mode and dtype; JPEGs sometimes as a batch of two on two threads."""
    rng = _rng(data)
    mode = rng.choice(_MODES)
    try:
        _check_image(decode_image(data, mode=mode, output_dtype=rng.choice(_DTYPES)), mode)
    except EXPECTED:
        pass
    name = _format_of(data)
    if name is None or rng.random() < 0.2:
        name = rng.choice(tuple(_IMAGE_DECODERS))
    mode = rng.choice(_MODES)
    options: dict[str, object] = {"mode": mode, "output_dtype": rng.choice(_DTYPES)}
    if name == "avif":
        options["num_threads"] = rng.choice((1, 2))
    try:
        if name == "jpeg" and rng.random() < 0.25:
            for decoded in decode_jpeg([data, data[:rng.randrange(1, len(data) + 1)] if data else data],
                                       num_threads=2, **options):
                _check_image(decoded, mode)
        else:
            _check_image(_IMAGE_DECODERS[name](data, **options), mode)
    except EXPECTED:
        pass


def _encoder_input(data: bytes, rng: random.Random) -> np.ndarray:
    """An array built from the bytes: mostly (C, H, W) uint8 with 1 or 3 channels, in any layout
    (transposed, strided, reversed, Fortran order, read-only), sometimes of another shape or dtype."""
    channels = rng.choice((1, 3, 3, 1, 0, 2, 4))
    height, width = rng.choice((rng.randint(1, 40), 0, 1)), rng.choice((rng.randint(1, 40), 0, 1))
    step_h, step_w = rng.choice((1, 1, 2, -1)), rng.choice((1, 1, 3, -1))
    count = channels * height * abs(step_h) * width * abs(step_w)
    pixels = np.frombuffer((data * (count // max(len(data), 1) + 1))[:count], np.uint8) if data else np.zeros(count, np.uint8)
    kind = rng.randrange(6)
    if kind == 0:                                         # (H, W, C) memory viewed as (C, H, W)
        img = pixels.reshape(height * abs(step_h), width * abs(step_w), channels).transpose(2, 0, 1)
    elif kind == 1:
        img = np.asfortranarray(pixels.reshape(channels, height * abs(step_h), width * abs(step_w)))
    else:
        img = pixels.reshape(channels, height * abs(step_h), width * abs(step_w))
    img = img[:, ::step_h, ::step_w]
    shape_or_dtype = rng.random()
    if shape_or_dtype < 0.08:
        img = img.astype(rng.choice((np.uint16, np.float32, np.int8, np.bool_)))
    elif shape_or_dtype < 0.14:
        img = img.reshape(-1) if rng.random() < 0.5 else img[None]
    return img


class _ShortWriter:
    """A file-like object that takes at most 5 bytes per write(); sometimes without seek()."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, chunk) -> int:
        self.data += bytes(chunk[:5])
        return min(len(chunk), 5)

    def seek(self, offset: int, whence: int = 0) -> int:
        return len(self.data)


def image_encode(data: bytes) -> None:
    """JpegEncoder/PngEncoder over arrays the bytes shape (dtypes, shapes, strides) with quality and
    compression values in and out of range: a clean exception, or bytes that decode back to the
    image's shape (and, for PNG, to its pixels)."""
    rng = _rng(data)
    img = _encoder_input(data, rng)
    png = rng.random() < 0.5
    encoder = PngEncoder(img) if png else JpegEncoder(img)
    setting: Any = rng.choice((rng.randint(-2, 102), 0, 1, 9, 10, 100, 101, True, 5.0, None, "75", 10**20))
    settings: dict[str, Any] = {"compression_level" if png else "quality": setting}
    where = rng.randrange(3)
    try:
        if where == 0:
            encoded = bytes(np.asarray(encoder.to_tensor(**settings)))
        else:
            sink = io.BytesIO() if where == 1 else _ShortWriter()
            encoder.to_file_like(sink, **settings)
            encoded = bytes(sink.getvalue() if isinstance(sink, io.BytesIO) else sink.data)
    except EXPECTED:
        return
    decoded = np.asarray((decode_png if png else decode_jpeg)(encoded, mode="UNCHANGED"))
    if decoded.shape != img.shape:
        raise AssertionError(f"encoded {img.shape}, decoded {decoded.shape}")
    if png and not np.array_equal(decoded, img):
        raise AssertionError("PNG round trip changed the pixels")


# ---- building blocks ----------------------------------------------------------------------------

MAX_BLOCK_PACKETS = 40


def blocks(data: bytes) -> None:
    """The building blocks over the bytes: container metadata, a Demuxer of chosen streams, each
    stream's packet decoder fed packet by packet (planes read, frames converted), seeks with and
    without resets, scans, drains, and audio converted (sometimes resampled)."""
    rng = _rng(data)
    try:
        metadata = get_container_metadata(data)
        repr(metadata)
        demuxer = Demuxer(data, streams=rng.choice(("video", "audio", "all", ("video", "audio"), 0, 1)))
    except EXPECTED:
        return
    decoders, converters = {}, {}
    for stream in demuxer.streams:
        try:
            repr(stream.metadata)
            if rng.random() < 0.3 and hasattr(stream, "scan"):
                index = stream.scan()
                if len(index):
                    index.index_at(rng.uniform(-1, 5))
                    index.key_frame_seconds_for(rng.uniform(-1, 5))
            decoders[stream.index] = stream.make_decoder()
        except EXPECTED:
            continue
        converters[stream.index] = (ColorConverter(output_dtype=rng.choice(("uint8", "float32", "auto")))
                                    if hasattr(stream, "scan") else
                                    AudioConverter(sample_rate=rng.choice((None, 8000, 44100)),
                                                   num_channels=rng.choice((None, 1, 2))))

    def consume(stream_index: int, outputs: list) -> None:
        for output in outputs[:MAX_FRAMES]:
            if isinstance(converters[stream_index], ColorConverter):
                output.planes
            converters[stream_index].convert(output)

    for _ in range(MAX_BLOCK_PACKETS):
        try:
            packet = next(demuxer, None)
            if packet is None:
                break
            if packet.stream_index in decoders:
                consume(packet.stream_index, decoders[packet.stream_index].decode(packet))
            if rng.random() < 0.05:
                demuxer.seek(rng.uniform(-1, 10))
                if rng.random() < 0.8:
                    for stream_index in decoders:
                        decoders[stream_index].reset()
                        if isinstance(converters[stream_index], AudioConverter):
                            converters[stream_index].reset()
        except EXPECTED:
            pass
    for stream_index, decoder in decoders.items():
        try:
            consume(stream_index, decoder.drain())
            if isinstance(converters[stream_index], AudioConverter):
                converters[stream_index].drain()
        except EXPECTED:
            pass


TARGETS: dict[str, Callable[[bytes], None]] = {
    "video_bytes": video_bytes,
    "video_file": video_file,
    "video_reopen": video_reopen,
    "video_lazy": video_lazy,
    "audio_reopen": audio_reopen,
    "audio": audio,
    "wav": wav,
    "frame_mappings": frame_mappings,
    "image": image,
    "image_encode": image_encode,
    "blocks": blocks,
}
