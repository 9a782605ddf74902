"""Reading the caller's frames and samples in place: checks with TorchCodec's messages, and the
memory (address, shape, byte strides, extent) the engine reads. Arrays of any library the bridge
knows (numpy, torch, jax, the buffer protocol), contiguous or strided; nothing is copied here."""
from __future__ import annotations

from typing import Any, NamedTuple

from torchcodec import _bridge
from torchcodec._core._error import InvalidArgumentError


class Input(NamedTuple):
    """Where an input array's elements are: address, shape, byte strides, and [low, high) bounds."""

    address: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    low: int
    high: int


def is_array(data: Any) -> bool:
    """Whether ``data`` is an array the encoders can read (a tensor, an array, a buffer)."""
    if isinstance(data, (str, bytes, int, float, complex)) or data is None:
        return False
    return (type(data).__module__.split(".")[0] == "torch" or hasattr(data, "__array_interface__")
            or hasattr(data, "__dlpack__") or _bridge._is_buffer(data))


def checked_shape(data: Any, name: str, ndims: tuple[int, ...], dtype: str) -> tuple[int, ...]:
    """The shape of an encoder's input ``data`` (called ``name`` in messages) after TorchCodec's
    checks and words: an array of one of ``ndims`` dimension counts, of ``dtype`` where it says."""
    if not is_array(data):
        raise InvalidArgumentError(f"Expected {name} to be a Tensor or an array, got type({name}) = {type(data)}.")
    shape = tuple(getattr(data, "shape", None) or memoryview(data).shape)
    if len(shape) not in ndims:
        counts = " or ".join(f"{n}D" for n in ndims)
        raise InvalidArgumentError(f"Expected {counts} {name}, got {name}.shape = {getattr(data, 'shape', shape)}.")
    actual = getattr(data, "dtype", None)
    if actual is not None and str(actual).replace("torch.", "") != dtype:
        raise InvalidArgumentError(f"Expected {dtype} {name}, got {name}.dtype = {actual}.")
    return shape


def device_of(data: Any) -> str:
    """"cpu", or "cuda:N" for a CUDA array (torch, cupy, or anything with __cuda_array_interface__)."""
    device = getattr(data, "device", None)
    kind = getattr(device, "type", None)
    if kind is not None and type(data).__module__.split(".")[0] == "torch":
        return "cpu" if kind == "cpu" else f"{kind}:{device.index or 0}"
    if hasattr(data, "__cuda_array_interface__"):
        return f"cuda:{getattr(device, 'id', 0) or 0}"
    return "cpu"


def _dtype(data: Any) -> str:
    dtype = getattr(data, "dtype", None)
    return _bridge.dtype_name(dtype) if dtype is not None else "?"


def read(data: Any, what: str) -> _bridge.Memory:
    """The memory of a CPU array ``data`` (named ``what`` in messages), read-only access."""
    if not is_array(data):
        raise InvalidArgumentError(
            f"Expected {what} to be a Tensor or an array (numpy, torch, jax, or a buffer), got "
            f"type({what}) = {type(data)}.")
    try:
        return _bridge.memory_of(data, writable=False, name=what)
    except (TypeError, ValueError) as error:
        raise InvalidArgumentError(str(error)) from None


def frames_input(frames: Any) -> Input:
    """Check (N, 3, H, W) uint8 CPU frames, as TorchCodec's encoder does, and locate them."""
    memory = read(frames, "frames")
    if memory.dtype != "uint8":
        raise InvalidArgumentError(f"frames must have uint8 dtype, got {_dtype(frames)}")
    if len(memory.shape) != 4:
        raise InvalidArgumentError(f"frames must have 4 dimensions (N, C, H, W), got {len(memory.shape)}")
    if memory.shape[1] != 3:
        raise InvalidArgumentError(f"frame must have 3 channels (R, G, B), got {memory.shape[1]}")
    return Input(memory.address, memory.shape, memory.strides, *_bridge.extent(memory))


def samples_input(samples: Any, *, allow_1d: bool = False) -> Input:
    """Check (C, S) float32 CPU samples (``allow_1d``: (S,) is one channel) and locate them."""
    if device_of(samples) != "cpu":
        raise InvalidArgumentError(f"samples must be on CPU, got {device_of(samples).split(':')[0]}")
    memory = read(samples, "samples")
    if memory.dtype != "float32":
        raise InvalidArgumentError(f"samples must have float32 dtype, got {_dtype(samples)}")
    shape, strides = memory.shape, memory.strides
    if allow_1d and len(shape) == 1:
        shape, strides = (1,) + shape, (shape[0] * memory.itemsize,) + strides
    if len(shape) != 2:
        raise InvalidArgumentError(f"samples must have 2 dimensions, got {len(memory.shape)}")
    return Input(memory.address, shape, strides, *_bridge.extent(memory))
