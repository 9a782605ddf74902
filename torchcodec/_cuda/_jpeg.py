"""JPEG on CUDA: ``decode_jpeg(..., device="cuda")`` and ``JpegEncoder`` of CUDA images, over nvJPEG
(torchcodec._cuda._nvjpeg finds the library; torchcodec._cuda._nvjpeg_codec drives it).

:func:`reason` is the gate: None when nvJPEG can be used, else the sentence saying why not (the
CUDA driver's reason, or where libnvjpeg was looked for), checked before any work. Decoding reads
every header first (truncated streams, what nvJPEG cannot parse, the pixel limit, CMYK refused:
each error names its image's index), then allocates every output with the bridge's CUDA library,
contiguous (C, H, W) uint8 or uint16, and decodes the batch on that library's current stream.
Decoders and encoders (nvJPEG states) are kept in a pool per device and reused.
"""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Optional

from torchcodec import _cuda, _outputs
from torchcodec._core._error import InvalidArgumentError

#: ImageReadMode values (torchcodec.decoders.ImageReadMode)
UNCHANGED, GRAY, GRAY_ALPHA, RGB, RGB_ALPHA = 0, 1, 2, 3, 4
#: The most idle decoders (and encoders) kept per device.
MAX_IDLE = 32
_CSS_UNKNOWN = -1

_pools: dict[tuple[str, int], list[Any]] = {}
_pools_lock = threading.Lock()


def reason() -> Optional[str]:
    """None when nvJPEG can be used here, else why not (no CUDA driver or device, a build without
    CUDA, or no libnvjpeg: where it was looked for). Never raises."""
    why = _cuda.reason()
    if why is not None:
        return why
    from torchcodec._cuda import _nvjpeg
    try:
        _nvjpeg.load_nvjpeg()
    except Exception as error:      # CudaUnavailableError, or anything unforeseen: never raise from here
        return str(error)
    return None


def check(device_index: int, what: str) -> None:
    """Raise RuntimeError saying why when nvJPEG cannot be used (``what``: the caller, in the message)."""
    why = reason()
    if why is not None:
        raise RuntimeError(f"{what} on cuda:{device_index}: JPEG on CUDA (nvJPEG) is not available: {why}; "
                           f"use the CPU instead")


def _device(device_index: int, what: str) -> Any:
    """The NvjpegDevice of cuda:``device_index``, after the gate (RuntimeError saying why not)."""
    check(device_index, what)
    from torchcodec._cuda import _driver, _nvjpeg
    return _nvjpeg.device(_driver.load_driver().context(device_index))


@contextlib.contextmanager
def _borrowed(kind: str, device: Any) -> Iterator[Any]:
    """An idle decoder or encoder (``kind``) of ``device`` from its pool, or a new one; back after."""
    from torchcodec._cuda import _nvjpeg, _nvjpeg_codec
    key = (kind, device.context.index)
    with _pools_lock:
        idle = _pools.setdefault(key, [])
        engine = idle.pop() if idle else None
    if engine is None:
        _nvjpeg.add_close_hook(_close_pools)         # once: idle engines go before the handles, at exit
        engine = _nvjpeg_codec.JpegDecoder(device) if kind == "decoder" else _nvjpeg_codec.JpegEncoder(device)
    try:
        yield engine
    finally:
        with _pools_lock:
            idle = _pools.setdefault(key, [])
            if len(idle) < MAX_IDLE:
                idle.append(engine)
                engine = None
        if engine is not None:
            engine.close()


def _close_pools() -> None:
    with _pools_lock:
        engines = [engine for idle in _pools.values() for engine in idle]
        _pools.clear()
    for engine in engines:
        engine.close()


def _plan(mode: int, components: int) -> tuple[int, int, int]:
    """(nvJPEG output format, planes it writes, output channels) for ``mode`` and a source of
    ``components``: luma for GRAY and for UNCHANGED of a gray JPEG, planar RGB otherwise; the alpha
    modes add an opaque plane (as TorchCodec does on CUDA)."""
    from torchcodec._cuda._nvjpeg_codec import FORMAT_RGB, FORMAT_Y
    if mode in (GRAY, GRAY_ALPHA) or (mode == UNCHANGED and components == 1):
        return FORMAT_Y, 1, 2 if mode == GRAY_ALPHA else 1
    return FORMAT_RGB, 3, 4 if mode == RGB_ALPHA else 3


def decode(encoded: list[Any], mode: int, wide: bool, device_index: int, limit: int, *, batch: bool,
           hardware: bool = True, paths: Optional[dict[str, int]] = None) -> list[Any]:
    """Decode the JPEG streams ``encoded`` (EncodedBytes) on cuda:``device_index`` into new (C, H, W)
    arrays of the bridge's CUDA library (uint16 when ``wide``: each value times 257), in ``mode``
    (an ImageReadMode value), EXIF orientation applied. ``batch``: errors say "image i of the
    batch"; ``hardware`` False keeps nvJPEG's hardware backend out, and ``paths`` (a dict) is given
    how many images each path decoded, "hardware" and "single" (checks and benchmarks)."""
    device = _device(device_index, "decode_jpeg")
    if not encoded:
        raise InvalidArgumentError("decode_jpeg: Expected at least one image to decode (the list is empty)")

    def failure(index: int, error: Exception) -> str:
        where = f"image {index} of the batch: " if batch else ""
        text = str(error)
        return f"decode_jpeg: {where}{text[len('decode_jpeg: '):] if text.startswith('decode_jpeg: ') else text}"

    from torchcodec._cuda import _driver, _nvjpeg_codec
    from torchcodec._cuda._device_buffer import DeviceBuffer
    with _borrowed("decoder", device) as decoder:
        headers = []
        for index, item in enumerate(encoded):
            try:
                components, subsampling, width, height, orientation = decoder.header(item.address, item.size, limit)
            except Exception as error:
                raise type(error)(failure(index, error)) from None
            if subsampling == _CSS_UNKNOWN:
                raise RuntimeError(failure(index, RuntimeError(
                    f"Unknown chroma subsampling: nvJPEG decodes JPEGs of 1 or 3 components, this one has "
                    f"{components} (CMYK?); decode it on the CPU (device='cpu')")))
            headers.append((components, width, height, orientation))
        outputs, jobs, keep, stream = [], [], [list(encoded)], None
        dtype = "uint16" if wide else "uint8"
        for item, (components, width, height, orientation) in zip(encoded, headers):
            fmt, planes, channels = _plan(mode, components)
            shown = (height, width) if orientation < 5 else (width, height)
            output = _outputs.allocate((channels,) + shown, dtype, device_index=device_index)
            stream = output.stream if stream is None else stream
            target = output.address
            if wide or orientation >= 2:      # decoded into scratch, copied turned and widened
                scratch = DeviceBuffer.empty(device.context, (planes, height, width), "uint8", stream)
                keep.append(scratch)
                target = scratch.ptr
            plane_bytes = height * width * (2 if wide else 1)
            alpha = output.address + planes * plane_bytes if channels > planes else 0
            jobs.append((item.address, item.size, fmt, planes, target, height * width, width, height, orientation,
                         wide, output.address, alpha))
            outputs.append(output)
        try:
            counts = decoder.decode(jobs, stream, hardware, keep)
        except _nvjpeg_codec.JpegBatchError as error:
            raise RuntimeError(failure(error.index, error)) from None
        except _driver.CudaError as error:
            raise RuntimeError(f"decode_jpeg: {error}") from None
        for scratch in keep[1:]:
            scratch.record(stream)           # freed once the copies out of it have run
    if paths is not None:
        paths["hardware"], paths["single"] = counts
    return [output.finish() for output in outputs]


def encode(memory: Any, device_index: int, quality: int) -> bytes:
    """The JPEG bytes of the (3, H, W) uint8 RGB image in CUDA memory ``memory`` (an _outputs.Memory
    of cuda:``device_index``, any strides: planar or interleaved rows are read in place, others are
    gathered into planes first), encoded by nvJPEG at ``quality`` on the stream that wrote it."""
    device = _device(device_index, "JpegEncoder")
    _, height, width = memory.shape
    sc, sh, sw = memory.strides
    stream = memory.stream
    with _borrowed("encoder", device) as encoder:
        scratch = None
        if sw == 1 and sh >= width:                       # planar rows: read in place
            address, pitch, plane_stride, interleaved = memory.address, sh, sc, False
        elif sc == 1 and sw == 3 and sh >= 3 * width:     # interleaved RGB rows: read in place
            address, pitch, plane_stride, interleaved = memory.address, sh, 0, True
        else:                                             # gathered into planes first
            from torchcodec._cuda._device_buffer import DeviceBuffer
            scratch = DeviceBuffer.empty(device.context, (3, height, width), "uint8", stream)
            encoder.copy_planes(memory.address, (sc, sh, sw), 3, height, width, scratch.ptr, stream)
            address, pitch, plane_stride, interleaved = scratch.ptr, width, height * width, False
        data = encoder.encode(address, pitch, plane_stride, interleaved, width, height, quality, stream)
        if scratch is not None:
            scratch.record(stream)
    memory.finish()
    return data


def to_device(data: bytes, device_index: int) -> Any:
    """``data`` as a new 1-D uint8 array of the bridge's CUDA library on cuda:``device_index``."""
    output = _outputs.allocate((len(data),), "uint8", device_index=device_index)
    with _borrowed("encoder", _device(device_index, "JpegEncoder")) as encoder:
        encoder.upload(data, output.address, output.stream)
    return output.finish()
