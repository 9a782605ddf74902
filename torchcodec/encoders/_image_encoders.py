"""JpegEncoder and PngEncoder with TorchCodec 0.17's API: a (C, H, W) uint8 image (1 or 3 channels)
of any array library the bridge knows, read in place, encoded by libjpeg-turbo (TurboJPEG) or libpng
without the GIL, and written to a path, a file object, or a 1-D uint8 array of the bridge's library.
JpegEncoder encodes an RGB image in CUDA memory with nvJPEG (torchcodec._cuda._jpeg); its to_tensor
is then a CUDA array on the image's device, as in TorchCodec.
"""
from __future__ import annotations

import os
from typing import Any, Optional, Union

from torchcodec import _outputs
from torchcodec._core._devices import parse_device
from torchcodec._image import codec
from torchcodec._core._error import InvalidArgumentError
from torchcodec.encoders._encoded_bytes import bytes_to_array

__all__ = ["JpegEncoder", "PngEncoder"]

PathLike = Union[str, os.PathLike]


def _image(img: Any, codec_name: str) -> tuple[_outputs.Memory, Optional[int]]:
    """The memory of a uint8 (C, H, W) image, read in place, and its CUDA device index (None: on
    the CPU), after TorchCodec's checks: 1 or 3 channels on the CPU; 3 on CUDA, for JPEG only."""
    if (_outputs.adapter_of(img) is None and not hasattr(img, "__array_interface__")
            and not hasattr(img, "__cuda_array_interface__")):
        raise TypeError(f"the image must be a (C, H, W) uint8 array (numpy, torch or jax), not {type(img).__name__}")
    device = _outputs.device_of(img)
    try:
        name, device_index = parse_device(device)
    except ValueError:                                  # a device no wing registers
        name, device_index = device, None
    if name != "cpu" and (codec_name != "jpeg" or name != "cuda"):
        raise NotImplementedError(f"{codec_name.upper()} encoding of an image on {device} is not supported: move the "
                                  f"image to the CPU first (img.cpu()); JpegEncoder encodes CUDA images with nvJPEG")
    dtype = _outputs.dtype_name(img.dtype)
    if dtype != "uint8":
        raise InvalidArgumentError(f"Input tensor must have uint8 data type, got {dtype}.")
    if len(img.shape) != 3:
        raise InvalidArgumentError(f"Input tensor must be a 3-dimensional (C, H, W) tensor, got {len(img.shape)} "
                                 f"dimensions.")
    channels, height, width = (int(extent) for extent in img.shape)
    if device_index is None and channels not in (1, 3):
        raise InvalidArgumentError(f"The number of channels should be 1 or 3, got: {channels}.")
    if device_index is not None and channels != 3:
        raise InvalidArgumentError(f"The number of channels should be 3 (RGB) for JPEG encoding on GPU, got: "
                                   f"{channels}. Grayscale encoding is only supported on the CPU for now.")
    if height == 0 or width == 0:
        raise InvalidArgumentError(f"The image is empty ({height}x{width}).")
    if device_index is None:
        return _outputs.describe(img, writable=False), None
    try:
        return _outputs.describe_cuda(img, device_index, writable=False), device_index
    except (TypeError, ValueError) as error:
        raise InvalidArgumentError(str(error)) from None


def _check_file_like(dest: Any) -> None:
    if not callable(getattr(dest, "write", None)):
        raise InvalidArgumentError(f"File like object must implement a write method (and a seek method); got "
                                 f"{type(dest).__name__}")
    if not callable(getattr(dest, "seek", None)):
        raise InvalidArgumentError(f"File like object must implement a seek method; got {type(dest).__name__}")


def _write_all(dest: Any, data: bytes) -> None:
    """Write all of ``data`` to a file object (whose write may take part of it)."""
    view = memoryview(data)
    while view:
        written = dest.write(view)
        if written is None:          # a raw stream that would block: nothing written this time
            continue
        view = view[written:]


class _ImageEncoder:
    _codec = ""

    def __init__(self, img: Any) -> None:
        self._img = img

    def _encoded(self, setting: int) -> tuple[bytes, Optional[int]]:
        """The encoded bytes, and the image's CUDA device index (None for a CPU image)."""
        memory, device_index = _image(self._img, self._codec)
        if device_index is not None:
            from torchcodec._cuda import _jpeg
            return _jpeg.encode(memory, device_index, setting), device_index
        (channels, height, width), strides = memory.shape, memory.strides
        return codec(self._codec).encode(memory.address, channels, height, width, *strides, setting), None

    def _to_tensor(self, setting: int) -> Any:
        data, device_index = self._encoded(setting)
        if device_index is None:
            return bytes_to_array(data)
        from torchcodec._cuda import _jpeg
        return _jpeg.to_device(data, device_index)

    def _to_file(self, dest: PathLike, setting: int) -> None:
        data = self._encoded(setting)[0]
        with open(os.fspath(dest), "wb") as file:
            file.write(data)

    def _to_file_like(self, dest: Any, setting: int) -> None:
        _check_file_like(dest)
        _write_all(dest, self._encoded(setting)[0])


class JpegEncoder(_ImageEncoder):
    """Encoder for JPEG images (libjpeg-turbo: baseline, 4:2:0 chroma for RGB, accurate DCT).

    ``img``: a (C, H, W) uint8 array (numpy, torch on the CPU, jax) with 1 (gray) or 3 (RGB)
    channels, read in place (any strides). ``JpegEncoder(img).to_file("image.jpg", quality=90)``.
    An RGB image in CUDA memory (a CUDA torch tensor, a cupy array, anything with
    ``__cuda_array_interface__``; 3 channels only) is encoded on its GPU by nvJPEG (baseline,
    4:4:4 chroma, as TorchCodec does), on the stream that wrote it.
    """

    _codec = "jpeg"

    @staticmethod
    def _check(quality: int) -> int:
        if not isinstance(quality, int) or quality < 1 or quality > 100:
            raise ValueError(f"Image quality should be a positive number between 1 and 100, got {quality!r}")
        return quality

    def to_file(self, dest: PathLike, *, quality: int = 75) -> None:
        """Encode into the file ``dest`` (str or pathlib.Path) at ``quality`` 1..100 (default 75)."""
        self._to_file(dest, self._check(quality))

    def to_file_like(self, dest: Any, *, quality: int = 75) -> None:
        """Encode into a file-like object with ``write`` and ``seek`` (io.BytesIO, a file opened 'wb')."""
        self._to_file_like(dest, self._check(quality))

    def to_tensor(self, *, quality: int = 75) -> Any:
        """The encoded bytes as a 1-D uint8 array of the bridge's library (a torch tensor under torch);
        for a CUDA image, an array of the bridge's CUDA library on the image's device."""
        return self._to_tensor(self._check(quality))


class PngEncoder(_ImageEncoder):
    """Encoder for PNG images (libpng, 8-bit gray or RGB, libpng's default filters).

    ``img``: a (C, H, W) uint8 array (numpy, torch on the CPU, jax) with 1 (gray) or 3 (RGB)
    channels, read in place (any strides). ``PngEncoder(img).to_file("image.png")``.
    """

    _codec = "png"

    @staticmethod
    def _check(compression_level: int) -> int:
        if not isinstance(compression_level, int) or not 0 <= compression_level <= 9:
            raise InvalidArgumentError(f"Compression level should be between 0 and 9, got {compression_level!r}.")
        return compression_level

    def to_file(self, dest: PathLike, *, compression_level: int = 6) -> None:
        """Encode into the file ``dest`` at zlib ``compression_level`` 0 (none, fastest) .. 9 (default 6)."""
        self._to_file(dest, self._check(compression_level))

    def to_file_like(self, dest: Any, *, compression_level: int = 6) -> None:
        """Encode into a file-like object with ``write`` and ``seek`` (io.BytesIO, a file opened 'wb')."""
        self._to_file_like(dest, self._check(compression_level))

    def to_tensor(self, *, compression_level: int = 6) -> Any:
        """The encoded bytes as a 1-D uint8 array of the bridge's library (a torch tensor under torch)."""
        return self._to_tensor(self._check(compression_level))
