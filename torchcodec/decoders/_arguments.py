"""The decoders' arguments as TorchCodec takes them: times, frame indices (one, or many in any
nested sequence or array), frame rates; and its rounding of resampled frame counts."""
from __future__ import annotations

import math
import numbers
import operator
from typing import Any

from torchcodec._core._error import InvalidArgumentError, InvalidArgumentTypeError


def as_seconds(name: str, value: Any) -> float:
    """A time argument as a float: a real number, or an object that converts to one (a 0-d tensor).
    Strings and other types: TypeError (also a RuntimeError, as TorchCodec raises for some)."""
    if isinstance(value, numbers.Real) or (hasattr(type(value), "__float__") and not isinstance(value, (str, bytes))):
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
    raise InvalidArgumentTypeError(f"{name} must be a number of seconds, got {type(value).__name__} ({value!r})")


def round_half_away_from_zero(x: float) -> int:
    """C's round(): 2.5 -> 3 (Python's round gives 2), as TorchCodec counts resampled frames."""
    whole = math.floor(abs(x))
    return int(math.copysign(whole + (abs(x) - whole >= 0.5), x))


def as_index(index: Any) -> int:
    """A single frame index: an int, or anything with ``__index__`` (numpy ints, 0-d int tensors)."""
    try:
        return operator.index(index)
    except TypeError:
        raise InvalidArgumentTypeError(f"Expected a value of type 'int' for the frame index but instead found "
                                       f"type '{type(index).__name__}' ({index!r})") from None


def as_index_list(indices: Any) -> list[int]:
    """Frame indices as TorchCodec takes them: a tensor or array of any real dtype, flattened, its values
    converted like ``tensor.to(torch.int64)`` (floats truncated toward zero; NaN and infinities are no
    index: IndexError); or ints, in a (nested) list or tuple, or alone."""
    if hasattr(indices, "dtype") and hasattr(indices, "reshape") and hasattr(indices, "tolist"):
        dtype = str(indices.dtype).replace("torch.", "")
        if not dtype.startswith(("int", "uint", "float", "bool", "bfloat", "half", "double", "long", "short")):
            raise InvalidArgumentTypeError(f"frame indices must be integers: expected scalar type Long but found "
                                           f"{dtype} (an array of {dtype})")
        result = []
        for value in indices.reshape(-1).tolist():
            if isinstance(value, float) and not math.isfinite(value):
                raise IndexError(f"Invalid frame index={value}: an index must be a finite number")
            result.append(int(value))
        return result
    if isinstance(indices, numbers.Integral) and not isinstance(indices, bool):
        return [int(indices)]
    result = []
    _flatten_ints(indices, result)
    return result


def _flatten_ints(values: Any, result: list[int]) -> None:
    try:
        items = iter(values)
    except TypeError:
        raise InvalidArgumentTypeError(f"frame indices must be a sequence of ints or a tensor/array, "
                                       f"got {type(values).__name__}") from None
    for value in items:
        if isinstance(value, (list, tuple)):
            _flatten_ints(value, result)
        elif isinstance(value, numbers.Integral) and not isinstance(value, bool):
            result.append(int(value))
        else:
            found = {bool: "Bool", float: "Float"}.get(type(value), type(value).__name__)
            raise InvalidArgumentTypeError(
                f"frame indices must be integers: expected scalar type Long but found {found} ({value!r} at "
                f"position {len(result)}); pass ints, or a tensor/array (whose values are truncated toward zero)")


def as_seconds_list(seconds: Any) -> list[float]:
    """Times as TorchCodec takes them (``torch.tensor(seconds, dtype=torch.float64)``): a tensor or
    array, flattened; numbers in a (nested) list or tuple, or alone. Anything else: ValueError."""
    if hasattr(seconds, "dtype") and hasattr(seconds, "reshape") and hasattr(seconds, "tolist"):
        seconds = seconds.reshape(-1).tolist()
    if isinstance(seconds, numbers.Real):
        return [float(seconds)]
    result: list[float] = []

    def flatten(values: Any) -> None:
        for value in values:
            if isinstance(value, (list, tuple)):
                flatten(value)
            elif isinstance(value, numbers.Real):
                result.append(float(value))
            else:
                raise ValueError(f"Couldn't convert timestamps input to a tensor: {value!r} "
                                 f"({type(value).__name__}) is not a number of seconds")

    if isinstance(seconds, (str, bytes)) or not hasattr(seconds, "__iter__"):
        raise ValueError(f"Couldn't convert timestamps input to a tensor: {type(seconds).__name__} is not a "
                         f"sequence of seconds")
    flatten(seconds)
    return result


def check_fps(fps: Any) -> float:
    """``fps`` as a float: a positive, finite number (the errors are ValueErrors and RuntimeErrors)."""
    if isinstance(fps, bool) or not isinstance(fps, numbers.Real):
        raise InvalidArgumentTypeError(f"fps must be a number, got {type(fps).__name__} ({fps!r})")
    fps = float(fps)
    if not fps > 0:
        raise InvalidArgumentError(f"fps must be positive, got {fps}")
    if not math.isfinite(fps):
        raise InvalidArgumentError(f"fps must be finite, got {fps}")
    return fps
