"""The bridge: which array library decoders allocate their outputs with.

Every output is allocated here, with the chosen library (``numpy.empty``, ``torch.empty``), and
the engine writes into that memory: frames are native arrays of that library from birth, with no
wrapper and no copy. The choice lives in a ContextVar, so threads and async tasks are independent.

Names: "numpy", "torch", "jax" (CPU frames decoded into numpy memory and handed to jax through
DLPack, zero-copy), "cupy" (CUDA frames; not available for CPU decoders), and "auto": torch when it
is installed, otherwise numpy. Neither torch nor numpy is imported until an output needs it.
"""
from __future__ import annotations

import array
import contextlib
import contextvars
import importlib
import importlib.util
from collections.abc import Iterator
from typing import Any, NamedTuple, Optional

BRIDGES = ("auto", "numpy", "torch", "jax", "cupy")
_PACKAGES = {"numpy": "numpy", "torch": "torch", "jax": "jax", "cupy": "cupy"}
_current: contextvars.ContextVar[str] = contextvars.ContextVar("torchcodec_bridge", default="auto")


def _resolve(name: str) -> str:
    if name == "auto":
        return "torch" if importlib.util.find_spec("torch") is not None else "numpy"
    return name


def _check(name: str) -> str:
    if name not in BRIDGES:
        raise ValueError(f"unknown bridge {name!r}; choose one of {', '.join(BRIDGES)}")
    resolved = _resolve(name)
    if importlib.util.find_spec(_PACKAGES[resolved]) is None:
        raise ImportError(f"the {resolved!r} bridge needs the {resolved} package: pip install {_PACKAGES[resolved]}")
    return name


def get_bridge() -> str:
    """The array library outputs are allocated with: "numpy", "torch", "jax" or "cupy"."""
    return _resolve(_current.get())


def set_bridge(name: str) -> None:
    """Choose the output array library for this thread/task: "auto", "numpy", "torch", "jax", "cupy"."""
    _current.set(_check(name))


@contextlib.contextmanager
def bridge(name: str) -> Iterator[None]:
    """``with torchcodec.bridge("numpy"):`` use that bridge inside the block only."""
    token = _current.set(_check(name))
    try:
        yield
    finally:
        _current.reset(token)


def _module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ImportError(f"{name} output needs {name}: pip install {_PACKAGES.get(name, name)}") from None


# ---- allocation -------------------------------------------------------------------------------

class Memory(NamedTuple):
    """Where an array's bytes are: address, shape, strides in bytes, item size, dtype name."""

    address: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    itemsize: int
    dtype: str


def empty(shape: tuple[int, ...], dtype: str, name: str) -> Any:
    """An uninitialised CPU array of ``dtype`` ("uint8", "float32") from bridge ``name``."""
    if name == "torch":
        torch = _module("torch")
        return torch.empty(shape, dtype=getattr(torch, dtype))
    if name == "cupy":
        raise ValueError("the cupy bridge gives CUDA frames; this decoder decodes on the CPU "
                         "(use the numpy, torch or jax bridge, or device='cuda')")
    return _module("numpy").empty(shape, dtype=dtype)     # numpy, and jax (handed over in finish)


def finish(data: Any, name: str) -> Any:
    """The array as the bridge's type (jax: a zero-copy DLPack hand-over of the numpy memory)."""
    if name == "jax":
        return _module("jax.numpy").from_dlpack(data)
    return data


def from_host(view: Any, name: Optional[str] = None) -> Any:
    """A HostArray (torchcodec._core._host_array: host memory another object owns, with shape and
    byte strides) as an array of bridge ``name`` (default: the current bridge), without copying; the
    array keeps the view's owner alive."""
    name = name or get_bridge()
    if name == "torch":
        torch = _module("torch")
        dtype = getattr(torch, view.dtype)
        itemsize = torch.empty(0, dtype=dtype).element_size()
        low, high = view.extent
        flat = torch.frombuffer(view.bytes_view(), dtype=torch.uint8) if high > low else torch.empty(0, dtype=torch.uint8)
        if dtype != torch.uint8:
            flat = flat.view(dtype)
        return flat.as_strided(view.shape, tuple(s // itemsize for s in view.strides), (view.address - low) // itemsize)
    if name == "cupy":
        raise ValueError("the cupy bridge gives CUDA arrays; these samples are in host memory")
    return finish(_module("numpy").asarray(view), name)


def float64_buffer(count: int) -> array.array:
    """A buffer the engine writes float64 values into (pts, durations)."""
    return array.array("d", bytes(8 * count))


def float64_array(values: array.array, name: str) -> Any:
    """``values`` as a float64 array of the bridge's library, without copying where it can."""
    if name == "torch":
        torch = _module("torch")
        return torch.frombuffer(values, dtype=torch.float64) if len(values) else torch.empty(0, dtype=torch.float64)
    data = _module("numpy").frombuffer(values, dtype="float64")
    return finish(data, name)


def address_of(data: Any) -> int:
    """The address of the first element of a CPU numpy array or torch tensor (what the engine writes
    into); anything else goes through memory_of."""
    module = type(data).__module__.split(".")[0]
    if module == "numpy":
        return data.__array_interface__["data"][0]
    if module == "torch" and data.device.type == "cpu":
        return data.data_ptr()
    return memory_of(data).address


def memory_of(data: Any, *, writable: bool = True, name: str = "out=") -> Memory:
    """Describe a CPU array's memory: numpy (and anything with __array_interface__), torch, DLPack
    (jax) or the buffer protocol. ``writable``: the array is written to (an ``out=``), so read-only
    memory is refused; otherwise (an encoder's input) it is only read. ``name`` names the array in
    messages. Raises TypeError/ValueError for read-only, non-CPU or unsupported arrays."""
    module = type(data).__module__.split(".")[0]
    if module == "torch":
        if data.device.type != "cpu":
            raise ValueError(f"{name} must be a CPU tensor, not one on {data.device}")
        if writable and data.requires_grad:
            raise ValueError(f"{name} must not require grad")
        size = data.element_size()
        return Memory(data.data_ptr(), tuple(data.shape), tuple(s * size for s in data.stride()), size,
                      str(data.dtype).replace("torch.", ""))
    interface = getattr(data, "__array_interface__", None)
    if interface is None and not writable and hasattr(data, "__dlpack__") and not _is_buffer(data):
        interface = _module("numpy").from_dlpack(data).__array_interface__      # jax: a view, no copy
    if interface is not None:
        address, readonly = interface["data"]
        if readonly and writable:
            raise ValueError(f"{name} is read-only")
        numpy = _module("numpy")
        dtype = numpy.dtype(interface["typestr"])
        shape = tuple(interface["shape"])
        strides = interface.get("strides") or _c_strides(shape, dtype.itemsize)
        return Memory(address, shape, tuple(strides), dtype.itemsize, dtype.name)
    try:
        view = memoryview(data)
    except TypeError:
        raise TypeError(f"{name} must be a numpy array, a torch tensor or a{' writable' if writable else 'n array or'} "
                        f"buffer, not {type(data).__name__}") from None
    if view.readonly:
        if writable:
            raise ValueError(f"{name} is read-only")
        return memory_of(_module("numpy").asarray(view), writable=False, name=name)
    names = {"B": "uint8", "f": "float32", "d": "float64"}
    import ctypes
    address = ctypes.addressof(ctypes.c_char.from_buffer(view))
    return Memory(address, view.shape, view.strides, view.itemsize, names.get(view.format, view.format))


def extent(memory: Memory) -> tuple[int, int]:
    """The addresses [low, high) that an array's elements lie within (any strides, even negative)."""
    if any(n == 0 for n in memory.shape):
        return memory.address, memory.address
    low = memory.address + sum(min(0, (n - 1) * s) for n, s in zip(memory.shape, memory.strides))
    high = memory.address + sum(max(0, (n - 1) * s) for n, s in zip(memory.shape, memory.strides))
    return low, high + memory.itemsize


def _is_buffer(data: Any) -> bool:
    try:
        memoryview(data)
    except TypeError:
        return False
    return True


def _c_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= extent
    return tuple(reversed(strides))


def is_packed_rgb(strides: tuple[int, ...], itemsize: int) -> bool:
    """Whether (N, H, W, C) byte strides are rows of packed RGB pixels with positive frame and row
    steps: the layout the engine writes (CPU and CUDA)."""
    return (len(strides) == 4 and strides[3] == itemsize and strides[2] == 3 * itemsize and strides[1] > 0
            and strides[0] > 0)


def is_device_buffer(data: Any) -> bool:
    """Whether ``data`` is torchcodec's own CUDA array (torchcodec._cuda._device_buffer.DeviceBuffer)."""
    return type(data).__module__ == "torchcodec._cuda._device_buffer"


def nchw(data: Any) -> Any:
    """A (..., H, W, C) array (numpy, torch, cupy, jax or a DeviceBuffer) viewed as (..., C, H, W),
    without copying."""
    ndim = len(data.shape)
    axes = tuple(range(ndim - 3)) + (ndim - 1, ndim - 3, ndim - 2)
    module = type(data).__module__.split(".")[0]
    if module == "torch":
        return data.permute(*axes)
    if module in ("jax", "jaxlib"):
        return _module("jax.numpy").transpose(data, axes)
    if is_device_buffer(data):
        return data.permuted(axes)
    return data.transpose(axes)                    # numpy, cupy


def copy_into(out: Any, source: Any) -> None:
    """out[...] = source, in out's library: for an ``out=`` whose layout the engine cannot write.
    ``source`` is an array of the same device (CPU: numpy or torch; CUDA: torch, cupy or DLPack)."""
    module = type(out).__module__.split(".")[0]
    if module == "torch":
        torch = _module("torch")
        if not type(source).__module__.startswith("torch"):
            source = (torch.from_numpy(source) if type(source).__module__.startswith("numpy")
                      else torch.from_dlpack(source))
        out.copy_(source)
    elif is_device_buffer(out) or (module not in ("numpy", "cupy") and hasattr(out, "__cuda_array_interface__")):
        raise ValueError(f"out= ({type(out).__name__}) must hold packed RGB pixels (channels innermost, "
                         f"pixels 3 elements apart): torchcodec cannot copy into this layout")
    else:
        out[...] = source


def dtype_name(dtype: Any) -> str:
    """Normalise a dtype given as a string, a numpy dtype or a torch dtype to "uint8"/"float32"."""
    if isinstance(dtype, str):
        return dtype
    name = str(dtype).replace("torch.", "")
    if importlib.util.find_spec("numpy") is not None and "torch" not in str(type(dtype)):
        numpy = _module("numpy")
        try:
            return numpy.dtype(dtype).name
        except TypeError:
            pass
    return name
