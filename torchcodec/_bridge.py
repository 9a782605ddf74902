"""The bridge: which array library decoders allocate their outputs with.

This version supports the numpy bridge; every output is allocated here, so that the engine writes
into memory that is a native array of the chosen library from birth (no wrapper, no copy).
"""
from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any

_SUPPORTED = ("numpy",)
_current: contextvars.ContextVar[str] = contextvars.ContextVar("torchcodec_bridge", default="numpy")


def _check_name(name: str) -> str:
    if name == "auto":
        return "numpy"
    if name not in _SUPPORTED:
        raise ValueError(f"unknown or unsupported bridge {name!r}; supported: {', '.join(_SUPPORTED)} (or 'auto')")
    return name


def get_bridge() -> str:
    """The name of the array library that outputs are allocated with ("numpy")."""
    return _current.get()


def set_bridge(name: str) -> None:
    """Choose the output array library for this thread/task: "numpy" or "auto"."""
    _current.set(_check_name(name))


@contextlib.contextmanager
def bridge(name: str) -> Iterator[None]:
    """``with torchcodec.bridge("numpy"):`` use that bridge inside the block only."""
    token = _current.set(_check_name(name))
    try:
        yield
    finally:
        _current.reset(token)


def _numpy() -> Any:
    try:
        import numpy
    except ImportError:
        raise ImportError("numpy output needs numpy: pip install numpy") from None
    return numpy


def empty(shape: tuple[int, ...], dtype: str) -> Any:
    """An uninitialised CPU array of ``shape`` and ``dtype`` ("uint8", "float32", "float64")."""
    return _numpy().empty(shape, dtype=dtype)


def nchw(array: Any) -> Any:
    """A (..., H, W, C) array viewed as (..., C, H, W), without copying."""
    axes = tuple(range(array.ndim - 3)) + (array.ndim - 1, array.ndim - 3, array.ndim - 2)
    return array.transpose(axes)


def dtype_name(dtype: Any) -> str:
    """Normalise a dtype given as a string, a numpy dtype or a torch dtype to "uint8"/"float32"."""
    if isinstance(dtype, str):
        name = dtype
    else:
        name = str(dtype).replace("torch.", "")
        numpy = None
        try:
            import numpy
        except ImportError:
            pass
        if numpy is not None:
            try:
                name = numpy.dtype(dtype).name
            except TypeError:
                pass
    return name
