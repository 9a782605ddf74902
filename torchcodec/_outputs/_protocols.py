"""Arrays known only by their protocols: ``__array_interface__``, the buffer protocol, DLPack (read
through numpy) and ``__cuda_array_interface__`` (another library's CUDA memory, e.g. numba's).

No library's types are named here; the buffer protocol is read with CPython's own
``PyObject_GetBuffer`` (through ctypes), so buffers need no numpy, read-only and strided ones included.
"""
from __future__ import annotations

import ctypes
import sys
from typing import Any

from torchcodec._outputs import Adapter, Memory, c_strides, is_buffer, layout_error
from torchcodec._outputs._device_buffer import buffer_module, primary_context, wrong_device

_KINDS = {"b": "bool", "u": "uint", "i": "int", "f": "float", "c": "complex"}
_FORMAT_KINDS = {"?": "b", "b": "i", "h": "i", "i": "i", "l": "i", "q": "i", "n": "i", "B": "u", "H": "u", "I": "u",
                 "L": "u", "Q": "u", "N": "u", "e": "f", "f": "f", "d": "f"}
_NATIVE = "<" if sys.byteorder == "little" else ">"


def _name(kind: str, itemsize: int) -> str:
    return "bool" if kind == "b" else f"{_KINDS[kind]}{8 * itemsize}"


def typestr_dtype(typestr: str) -> tuple[str, int]:
    """(dtype name, item size) of an array interface ``typestr`` ("|u1" -> ("uint8", 1)); the
    typestr itself as the name when it is not a plain number (or not in native byte order)."""
    kind, itemsize = typestr[1:2], int(typestr[2:] or 0)
    if kind not in _KINDS or typestr[0] not in ("|", _NATIVE):
        return typestr, itemsize
    return _name(kind, itemsize), itemsize


def format_dtype(format: str, itemsize: int) -> str:
    """The dtype name of a buffer ``format`` ("B" -> "uint8", "<d" -> "float64"); the format itself
    when it is not a plain number in native byte order."""
    code = format[1:] if format[:1] in ("@", "=", _NATIVE) else format
    kind = _FORMAT_KINDS.get(code)
    return format if kind is None else _name(kind, itemsize)


class _PyBuffer(ctypes.Structure):
    """CPython's Py_buffer (Include/pybuffer.h; part of the stable ABI since 3.11)."""

    _fields_ = [("buf", ctypes.c_void_p), ("obj", ctypes.c_void_p), ("len", ctypes.c_ssize_t),
                ("itemsize", ctypes.c_ssize_t), ("readonly", ctypes.c_int), ("ndim", ctypes.c_int),
                ("format", ctypes.c_char_p), ("shape", ctypes.c_void_p), ("strides", ctypes.c_void_p),
                ("suboffsets", ctypes.c_void_p), ("internal", ctypes.c_void_p)]


_PyBUF_RECORDS_RO = 0x001C          # PyBUF_STRIDES | PyBUF_FORMAT: any strides, no suboffsets
_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = (ctypes.py_object, ctypes.POINTER(_PyBuffer), ctypes.c_int)
_get_buffer.restype = ctypes.c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = (ctypes.POINTER(_PyBuffer),)
_release_buffer.restype = None


def buffer_address(obj: Any) -> int:
    """The address of element 0 of ``obj``'s buffer (any strides, read-only too). The address stays
    valid while the exporter keeps its memory (hold a memoryview of ``obj`` to pin a bytearray)."""
    view = _PyBuffer()
    _get_buffer(obj, ctypes.byref(view), _PyBUF_RECORDS_RO)      # raises the exporter's error
    try:
        return view.buf or 0
    finally:
        _release_buffer(ctypes.byref(view))


def host_memory(obj: Any, writable: bool, name: str) -> Memory:
    """The CPU memory of an object with ``__array_interface__`` or the buffer protocol."""
    interface = getattr(obj, "__array_interface__", None)
    if interface is not None:
        address, readonly = interface["data"]
        if readonly and writable:
            raise ValueError(f"{name} is read-only")
        dtype, itemsize = typestr_dtype(interface["typestr"])
        shape = tuple(interface["shape"])
        strides = interface.get("strides") or c_strides(shape, itemsize)
        return Memory(obj, address, shape, strides, itemsize, dtype)
    try:
        view = memoryview(obj)
    except TypeError:
        raise TypeError(f"{name} must be a numpy array, a torch tensor or a{' writable' if writable else 'n array or'} "
                        f"buffer, not {type(obj).__name__}") from None
    if view.readonly and writable:
        raise ValueError(f"{name} is read-only")
    return Memory(view, buffer_address(view), view.shape or (), view.strides or (), view.itemsize,
                  format_dtype(view.format, view.itemsize))


class Protocols(Adapter):
    """Any object that is no known library's array, by the protocols it offers."""

    name = "protocols"
    module = "numpy"          # DLPack-only CPU objects are read through numpy.from_dlpack

    def describe(self, obj: Any, writable: bool, name: str) -> Memory:
        if (not writable and not hasattr(obj, "__array_interface__") and hasattr(obj, "__dlpack__")
                and not is_buffer(obj)):
            return host_memory(self.library(f"reading {type(obj).__name__} through DLPack").from_dlpack(obj),
                               writable, name)
        return host_memory(obj, writable, name)

    def describe_cuda(self, obj: Any, device_index: int, writable: bool = True) -> Memory:
        """Any object with __cuda_array_interface__: on its v3 stream, or after one defensive
        synchronisation (the producer's stream is unknown), on the legacy default stream."""
        interface = getattr(obj, "__cuda_array_interface__", None)
        if interface is None:
            return super().describe_cuda(obj, device_index, writable)
        if hasattr(obj, "__dlpack_device__"):
            device = tuple(obj.__dlpack_device__())
            if device != (2, device_index):
                raise wrong_device(obj, f"DLPack device {device}", device_index)
        address, readonly = interface["data"]
        if readonly and writable:
            raise ValueError("out= is read-only (its __cuda_array_interface__ says so)")
        dtype, itemsize = typestr_dtype(interface["typestr"])
        shape = tuple(interface["shape"])
        strides = interface.get("strides") or c_strides(shape, itemsize)
        stream = interface.get("stream") if interface.get("version", 0) >= 3 else None
        if isinstance(stream, int) and stream > 0:
            return Memory(obj, address, shape, strides, itemsize, dtype, f"cuda:{device_index}", stream)
        # No producer stream (v2, None, or the invalid 0): wait for everything queued in the context
        # before writing, and again after, for a consumer on an unknown stream.
        buffers = buffer_module()
        context = primary_context(device_index)
        buffers.synchronize_context(context)

        def hand_over(data: Any) -> Any:
            buffers.synchronize_stream(context, buffers.STREAM_LEGACY)
            return data
        return Memory(obj, address, shape, strides, itemsize, dtype, f"cuda:{device_index}", buffers.STREAM_LEGACY,
                      hand_over)

    def device_of(self, obj: Any) -> str:
        if hasattr(obj, "__cuda_array_interface__"):
            return f"cuda:{getattr(getattr(obj, 'device', None), 'id', 0) or 0}"
        return "cpu"

    def copy_into(self, out: Any, source: Any) -> None:
        if hasattr(out, "__cuda_array_interface__"):
            raise layout_error(out)
        out[...] = source


PROTOCOLS: Protocols = Protocols()
