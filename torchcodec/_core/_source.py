"""Turning what a user passes as a source into something the Demuxer can open."""
from __future__ import annotations

import io
import os
import pathlib
import re
from typing import Any, Union

from torchcodec._core._avio import FileObjectSource, MemorySource
from torchcodec._core._error import InvalidArgumentTypeError, MediaIsADirectoryError, MediaNotFoundError
from torchcodec._outputs import adapter_of, describe, device_of, dtype_name, is_buffer

SourceLike = Union[str, os.PathLike, bytes, bytearray, memoryview, Any]

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def is_url(location: str) -> bool:
    """Whether a str source names a URL that FFmpeg's protocols open (not a local path or file:)."""
    return bool(_URL.match(location)) and not location.startswith("file:")


def open_source(source: SourceLike) -> tuple[Any, str]:
    """Return (demuxer input, description): a str path/URL, or an IOSource for bytes/file objects.

    In-memory sources (bytes, bytearray, memoryview, 1-D uint8 arrays and tensors) are read in
    place, never copied (TorchCodec copies them): they must not change while a decoder reads them.

    Raises TypeError for unsupported types (and for text-mode files, suggesting 'rb'),
    MediaNotFoundError / MediaIsADirectoryError (also RuntimeErrors) for bad local paths.
    """
    if isinstance(source, pathlib.PurePath):
        source = os.fspath(source)
    if isinstance(source, str):
        if not is_url(source):
            path = source[5:] if source.startswith("file:") else source
            if not os.path.exists(path):
                raise MediaNotFoundError(f"could not open {source!r}: no such file")
            if os.path.isdir(path):
                raise MediaIsADirectoryError(f"could not open {source!r}: it is a directory, not a media file")
        return source, repr(source)
    if isinstance(source, io.TextIOBase):
        raise TypeError("the file object is in text mode; open it for binary reading, with mode 'rb'")
    if isinstance(source, (bytes, bytearray, memoryview)):
        return MemorySource(source), f"a {type(source).__name__} of {len(memoryview(source).cast('B'))} bytes"
    if hasattr(source, "read") and hasattr(source, "seek"):
        return FileObjectSource(source), f"file object {type(source).__name__}"
    if hasattr(source, "__array_interface__") or is_buffer(source):
        shape = getattr(source, "shape", None)
        if shape is not None and len(shape) != 1:
            raise TypeError(f"an array source must be 1-D encoded bytes (uint8), got shape {tuple(shape)}")
        return MemorySource(source), f"a 1-D array of {len(source)} bytes"
    if adapter_of(source) is not None:            # an array without the buffer protocol: a torch tensor
        source_in, size = _tensor_source(source)
        return source_in, f"a tensor of {size} bytes"
    raise TypeError(
        f"Unknown source type: {type(source).__name__}. Supported types are a path (str or pathlib.Path), "
        f"bytes/bytearray/memoryview, a 1-D uint8 array or tensor of encoded bytes, or a binary file object "
        f"with read(size) and seek(offset, whence)")


def _tensor_source(tensor: Any) -> tuple[MemorySource, int]:
    """A 1-D contiguous uint8 CPU tensor of encoded bytes, read in place (no numpy needed), and its size."""
    shape, dtype = tuple(tensor.shape), dtype_name(tensor.dtype)
    if len(shape) != 1 or dtype != "uint8":
        raise InvalidArgumentTypeError(f"a tensor source must be 1-D uint8 encoded bytes, got shape {shape} "
                                       f"and dtype {tensor.dtype}")
    device = device_of(tensor)
    if device != "cpu":
        raise InvalidArgumentTypeError(f"a tensor source must be on the CPU, not {device}")
    memory = describe(tensor, writable=False, name="a tensor source")
    if shape[0] > 1 and memory.strides != (1,):
        raise InvalidArgumentTypeError("a tensor source must be contiguous")
    if shape[0] == 0:
        raise ValueError("the in-memory source is empty (0 bytes)")
    return MemorySource(memory.data, memory.address, shape[0]), shape[0]
