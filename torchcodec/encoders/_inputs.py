"""Reading the caller's frames and samples in place: checks with TorchCodec's messages, and the
memory (address, shape, byte strides, extent) the engine reads. Arrays of any library torchcodec
knows (numpy, torch, jax, the buffer protocol), contiguous or strided; nothing is copied here."""
from __future__ import annotations

from typing import Any, Optional

from torchcodec import _outputs
from torchcodec._core._error import InvalidArgumentError


def is_array(data: Any) -> bool:
    """Whether ``data`` is an array the encoders can read (a tensor, an array, a buffer)."""
    if isinstance(data, (str, bytes, int, float, complex)) or data is None:
        return False
    return _outputs.is_array(data)


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
    if actual is not None and _outputs.dtype_name(actual) != dtype:
        raise InvalidArgumentError(f"Expected {dtype} {name}, got {name}.dtype = {actual}.")
    return shape


def _dtype(data: Any) -> str:
    dtype = getattr(data, "dtype", None)
    return _outputs.dtype_name(dtype) if dtype is not None else "?"


def read(data: Any, what: str) -> _outputs.Memory:
    """The memory of a CPU array ``data`` (named ``what`` in messages), read-only access."""
    if not is_array(data):
        raise InvalidArgumentError(
            f"Expected {what} to be a Tensor or an array (numpy, torch, jax, or a buffer), got "
            f"type({what}) = {type(data)}.")
    try:
        return _outputs.describe(data, writable=False, name=what)
    except (TypeError, ValueError) as error:
        raise InvalidArgumentError(str(error)) from None


def frames_input(frames: Any, device_index: Optional[int] = None) -> _outputs.Memory:
    """Check (N, 3, H, W) uint8 frames, as TorchCodec's encoder does, and locate them: in CPU memory,
    or (``device_index``) on that GPU, with the stream that wrote them (``Memory.stream``; call
    ``finish()`` once the engine has queued its reads)."""
    if device_index is None:
        memory = read(frames, "frames")
    else:
        try:
            memory = _outputs.describe_cuda(frames, device_index, writable=False)
        except (TypeError, ValueError) as error:
            raise InvalidArgumentError(str(error)) from None
    if memory.dtype != "uint8":
        raise InvalidArgumentError(f"frames must have uint8 dtype, got {_dtype(frames)}")
    if len(memory.shape) != 4:
        raise InvalidArgumentError(f"frames must have 4 dimensions (N, C, H, W), got {len(memory.shape)}")
    if memory.shape[1] != 3:
        raise InvalidArgumentError(f"frame must have 3 channels (R, G, B), got {memory.shape[1]}")
    return memory


def samples_input(samples: Any, *, allow_1d: bool = False) -> _outputs.Memory:
    """Check (C, S) float32 CPU samples (``allow_1d``: (S,) is one channel) and locate them."""
    device = _outputs.device_of(samples)
    if device != "cpu":
        raise InvalidArgumentError(f"samples must be on CPU, got {device.split(':')[0]}")
    memory = read(samples, "samples")
    if memory.dtype != "float32":
        raise InvalidArgumentError(f"samples must have float32 dtype, got {_dtype(samples)}")
    shape, strides = memory.shape, memory.strides
    if allow_1d and len(shape) == 1:
        shape, strides = (1,) + shape, (shape[0] * memory.itemsize,) + strides
    if len(shape) != 2:
        raise InvalidArgumentError(f"samples must have 2 dimensions, got {len(memory.shape)}")
    return memory.with_layout(shape, strides)
