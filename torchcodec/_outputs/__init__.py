"""Output and input arrays: the bridge, one description of memory, one adapter per array library.

The engine writes into memory its caller hands it (an address, a shape and byte strides) and reads
callers' arrays the same way. This package is the only code that knows array libraries:

- the bridge: which library new outputs are allocated with (``set_bridge``, ``get_bridge``,
  ``bridge``; "auto" is resolved by :func:`resolve` alone), held in a ContextVar so that threads and
  async tasks are independent;
- :class:`Memory`: where an array's elements are (CPU or CUDA), and ``finish()``, which returns the
  array for the user;
- :class:`Adapter`: what torchcodec asks of one library, implemented once per library in
  ``_numpy``, ``_torch``, ``_jax``, ``_cupy`` and ``_device_buffer`` (torchcodec's own CUDA memory),
  and in ``_protocols`` for objects known only by their protocols (``__array_interface__``, the
  buffer protocol, DLPack, ``__cuda_array_interface__``);
- functions that dispatch to the adapter of a bridge or of an object: :func:`allocate`,
  :func:`describe`, :func:`describe_out`, :func:`nchw`, :func:`copy_into`, :func:`from_host`,
  :func:`float64_array`, :func:`adapter_of`, ...
- host memory in Cython: ``_host_array`` (HostArray, a strided view of memory another object
  owns, such as a decoded frame's planes) and ``_pool`` (the output pool, which large CPU outputs
  are allocated from).

The engine (torchcodec._core) uses this package; it imports nothing of the engine (CUDA memory
comes from the CUDA wing's ``_driver`` and ``_device_buffer``, imported when first asked for).

A library's types are recognised by ``isinstance`` only when the library is already imported
(``sys.modules``): an object of a library that is not imported cannot exist. torch, numpy, jax and
cupy are imported only when an output or an input of theirs is used; importing this package
imports none of them. CUDA outputs are described in docs/cuda_outputs.md.
"""
from __future__ import annotations

import array
import contextlib
import contextvars
import functools
import importlib
import importlib.util
import sys
from collections.abc import Callable, Iterator
from typing import Any, Optional

BRIDGES = ("auto", "numpy", "torch", "jax", "cupy")
CPU_DTYPES = {"bool": 1, "uint8": 1, "uint16": 2, "int16": 2, "int32": 4, "int64": 8, "float32": 4, "float64": 8}
"""The dtypes :func:`allocate` gives on the CPU, with their item sizes."""
CUDA_DTYPES = {"uint8": 1, "uint16": 2, "float32": 4, "float64": 8}
"""The dtypes :func:`allocate` gives on CUDA (those of torchcodec's DeviceBuffer)."""
_PACKAGES = {"numpy": "numpy", "torch": "torch", "jax": "jax", "cupy": "cupy"}
_current: contextvars.ContextVar[str] = contextvars.ContextVar("torchcodec_bridge", default="auto")


# ---- the bridge ---------------------------------------------------------------------------------

@functools.cache
def _findable(package: str) -> bool:
    return importlib.util.find_spec(package) is not None


def installed(package: str) -> bool:
    """Whether ``package`` can be imported: imported already, or found by the import system (asked
    once per process; each find_spec walks sys.path, ~40 us, which was paid for every frame)."""
    return package in sys.modules or _findable(package)


def resolve(name: str) -> str:
    """A bridge name with "auto" resolved: torch when it is installed (:func:`installed`), else
    numpy. The one place that decides what "auto" means."""
    if name == "auto":
        return "torch" if installed("torch") else "numpy"
    return name


def _check(name: str) -> str:
    if name not in BRIDGES:
        raise ValueError(f"unknown bridge {name!r}; choose one of {', '.join(BRIDGES)}")
    resolved = resolve(name)
    if not installed(_PACKAGES[resolved]):
        raise ImportError(f"the {resolved!r} bridge needs the {resolved} package: pip install {_PACKAGES[resolved]}")
    return name


def get_bridge() -> str:
    """Return the array library outputs are allocated with in this thread/task.

    Returns:
        str: "numpy", "torch", "jax" or "cupy" ("auto" is resolved: torch when it is installed,
        else numpy).
    """
    return resolve(_current.get())


def set_bridge(name: str) -> None:
    """Choose the output array library for this thread/task (a ``contextvars`` setting).

    Args:
        name: "auto" (torch when installed, else numpy), "numpy", "torch", "jax" or "cupy".

    Raises:
        ValueError: an unknown name.
        ImportError: the library is not installed.
    """
    _current.set(_check(name))


@contextlib.contextmanager
def bridge(name: str) -> Iterator[None]:
    """Use a bridge inside a ``with`` block only: ``with torchcodec.bridge("numpy"): ...``.

    Args:
        name: as in :func:`set_bridge`.

    Raises:
        ValueError: an unknown name.
        ImportError: the library is not installed.
    """
    token = _current.set(_check(name))
    try:
        yield
    finally:
        _current.reset(token)


def host_bridge(bridge: Optional[str] = None) -> str:
    """The library of CPU arrays under ``bridge`` (default: the current one): the bridge itself,
    except "cupy", whose CPU arrays (timestamps, encoded bytes, index arrays) are numpy's."""
    name = get_bridge() if bridge is None else resolve(bridge)
    return "numpy" if name == "cupy" else name


def _bridge_adapter(bridge: Optional[str]) -> Adapter:
    name = get_bridge() if bridge is None else resolve(bridge)
    try:
        return _BRIDGE_ADAPTERS[name]
    except KeyError:
        raise ValueError(f"unknown bridge {name!r}; choose one of {', '.join(BRIDGES)}") from None


# ---- memory ---------------------------------------------------------------------------------------

def c_strides(shape: tuple[int, ...], itemsize: int = 1) -> tuple[int, ...]:
    """The strides (in units of ``itemsize`` bytes; 1: in elements) of a C-contiguous array of
    ``shape``. A zero extent counts as one, as DLPack producers write them."""
    strides, step = [], itemsize
    for extent in reversed(shape):
        strides.append(step)
        step *= max(extent, 1)
    return tuple(reversed(strides))


class Memory:
    """Where an array's elements are, for the engine to write or read them: CPU or CUDA.

    ``data``: the array (as allocated or as the caller gave it); ``address``: the address of element
    0 (a device pointer on CUDA); ``shape``; ``strides`` in bytes (any sign); ``itemsize``; ``dtype``
    (a name: "uint8", "float32", ...); ``device``: "cpu" or "cuda:N"; ``stream``: for CUDA memory,
    the CUstream handle (int) to write it on, else None. ``finish()``, called once the engine is done,
    returns the array for the user (for CUDA, after ordering its consumers after the writes).
    """

    __slots__ = ("data", "address", "shape", "strides", "itemsize", "dtype", "device", "stream", "_hand_over")

    def __init__(self, data: Any, address: int, shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int,
                 dtype: str, device: str = "cpu", stream: Optional[int] = None,
                 hand_over: Optional[Callable[[Any], Any]] = None) -> None:
        self.data = data
        self.address = int(address)
        self.shape = tuple(int(extent) for extent in shape)
        self.strides = tuple(int(stride) for stride in strides)
        self.itemsize = int(itemsize)
        self.dtype = dtype
        self.device = device
        self.stream = None if stream is None else int(stream)
        self._hand_over = hand_over

    @property
    def packed(self) -> bool:
        """Whether (N, H, W, C) strides are rows of packed RGB pixels (channel step one element, pixel
        step three) with positive frame and row steps: the layout the engine writes, CPU and CUDA."""
        strides, itemsize = self.strides, self.itemsize
        return (len(strides) == 4 and strides[3] == itemsize and strides[2] == 3 * itemsize and strides[1] > 0
                and strides[0] > 0)

    def extent(self) -> tuple[int, int]:
        """The addresses [low, high) that the elements lie within (any strides, even negative)."""
        if any(extent == 0 for extent in self.shape):
            return self.address, self.address
        low = self.address + sum(min(0, (n - 1) * s) for n, s in zip(self.shape, self.strides))
        high = self.address + sum(max(0, (n - 1) * s) for n, s in zip(self.shape, self.strides))
        return low, high + self.itemsize

    def permuted(self, axes: tuple[int, ...]) -> Memory:
        """The same memory with its dimensions listed in the order ``axes`` (shape and strides
        permuted; ``data`` and ``finish`` unchanged): ``permuted((0, 2, 3, 1))`` reads NCHW as NHWC."""
        return self.with_layout(tuple(self.shape[axis] for axis in axes), tuple(self.strides[axis] for axis in axes))

    def with_layout(self, shape: tuple[int, ...], strides: tuple[int, ...]) -> Memory:
        """The same memory seen with another ``shape`` and byte ``strides`` (``data`` unchanged)."""
        return Memory(self.data, self.address, shape, strides, self.itemsize, self.dtype, self.device, self.stream,
                      self._hand_over)

    def finish(self, view: Any = None) -> Any:
        """The array for the user, once the engine has written it: ``data``, or ``view`` (a view of
        ``data``, such as its NCHW view), handed over to the bridge's library where it is another
        (jax), with CUDA writes ordered before the consumers."""
        data = self.data if view is None else view
        return self._hand_over(data) if self._hand_over is not None else data

    def __repr__(self) -> str:
        stream = "" if self.stream is None else f", stream={self.stream:#x}"
        return (f"Memory({type(self.data).__name__}, address={self.address:#x}, shape={self.shape}, "
                f"strides={self.strides}, dtype={self.dtype}, device={self.device}{stream}, packed={self.packed})")


# ---- the adapters' interface ----------------------------------------------------------------------

class Adapter:
    """What torchcodec asks of one array library. Subclasses (one per library, in this package) are
    the only code that knows that library's types; methods they do not support raise TypeError or
    ValueError with a message that says what is allowed. A subclass sets ``name`` (its bridge name,
    or a description) and ``module`` (the module to import, or "" for none)."""

    name = ""
    module = ""

    def library(self, why: str = "") -> Any:
        """The library's module, imported now (ImportError naming the pip package when missing)."""
        try:
            return importlib.import_module(self.module)
        except ImportError:
            package = self.module.split(".")[0]
            raise ImportError(f"{why or f'{self.name} output'} needs {package}: pip install {package}") from None

    def imported(self) -> Any:
        """The library's module if it is already imported, else None: an object of a library that
        is not imported cannot exist, so recognising one never imports it."""
        return sys.modules.get(self.module) if self.module else None

    def belongs(self, obj: Any, kind: str) -> bool:
        """Whether ``obj`` is this library's ``kind`` of object: "array", "dtype" or "generator"
        (torch's adapter also knows torchvision's "transform"s), by ``isinstance`` against the
        ``imported()`` library's types."""
        return False

    # outputs
    def empty(self, shape: tuple[int, ...], dtype: str) -> Memory:
        """New C-contiguous CPU memory of ``shape`` and ``dtype`` (a name in CPU_DTYPES)."""
        raise ValueError(f"the {self.name} bridge cannot allocate CPU arrays")

    def empty_cuda(self, shape: tuple[int, ...], dtype: str, device_index: int) -> Memory:
        """New C-contiguous memory on cuda:``device_index`` and the stream to write it on."""
        raise ValueError(f"the {self.name} bridge cannot allocate CUDA arrays")

    def from_host(self, obj: Any) -> Any:
        """``obj`` (CPU memory with the buffer protocol) as this library's array, without a copy."""
        raise ValueError(f"the {self.name} bridge has no CPU arrays")

    # arrays of this library
    def describe(self, obj: Any, writable: bool, name: str) -> Memory:
        """The CPU memory of ``obj``; ``writable``: refuse read-only memory (an ``out=``), else only
        read (an encoder's input). ``name`` names ``obj`` in messages. TypeError/ValueError."""
        raise TypeError(f"{name} must be a numpy array, a torch tensor or a{' writable' if writable else 'n array or'} "
                        f"buffer, not {type(obj).__name__}")

    def describe_cuda(self, obj: Any, device_index: int, writable: bool = True) -> Memory:
        """The memory of a CUDA ``out=`` on cuda:``device_index`` and the stream to write it on
        (``writable`` False: an encoder's input, only read, and the stream that wrote it)."""
        raise TypeError(f"out= for a CUDA decoder must be a CUDA torch.Tensor, a cupy array, a DeviceBuffer or an "
                        f"object with __cuda_array_interface__, not {type(obj).__name__}")

    def device_of(self, obj: Any) -> str:
        """"cpu", or "cuda:N" for an array in CUDA memory."""
        return "cpu"

    def dtype_name(self, dtype: Any) -> str:
        """A dtype of this library as a name ("uint8", "float32", ...)."""
        return str(dtype)

    def permute(self, obj: Any, axes: tuple[int, ...]) -> Any:
        """A view of ``obj`` with its dimensions in the order ``axes`` (no copy where the library allows)."""
        return obj.transpose(axes)

    def batch_of_one(self, obj: Any) -> Any:
        """``obj`` with a leading dimension of one (same memory)."""
        return obj[None]

    def copy_into(self, out: Any, source: Any) -> None:
        """``out[...] = source``: ``source`` is an array of the same device (maybe of another library)."""
        out[...] = source

    def strided_view(self, obj: Any, address: int, shape: tuple[int, ...], strides: tuple[int, ...],
                     dtype: str) -> Any:
        """A view of ``obj``'s memory (it must contain it): ``shape`` elements of ``dtype`` at
        ``address`` with byte ``strides``, no copy (CUDA RawFrames' planes over their storage)."""
        raise TypeError(f"cannot view the memory of {type(obj).__name__} with other strides")


def adapter_of(obj: Any, kind: str = "array") -> Optional[Adapter]:
    """The adapter of the library that ``obj`` belongs to as a ``kind`` ("array", "dtype",
    "generator", "transform"), or None: not an object of a library torchcodec knows (or of one that
    is not imported, so it cannot be one). The one place that recognises a library's types."""
    for adapter in _LIBRARIES:
        if adapter.belongs(obj, kind):
            return adapter
    return None


def strided_view(obj: Any, address: int, shape: tuple[int, ...], strides: tuple[int, ...], dtype: str) -> Any:
    """A view of ``obj``'s memory (a torch tensor, cupy array or DeviceBuffer that contains it):
    ``shape`` elements of ``dtype`` at ``address`` with byte ``strides``, of ``obj``'s library, no copy."""
    return _adapter_for(obj).strided_view(obj, address, tuple(shape), tuple(strides), dtype)


def _adapter_for(obj: Any) -> Adapter:
    """The adapter that handles ``obj``: its library's, else the protocols' (any object)."""
    return adapter_of(obj) or _protocols.PROTOCOLS


def is_buffer(obj: Any) -> bool:
    """Whether ``obj`` exports the buffer protocol."""
    try:
        memoryview(obj)
    except TypeError:
        return False
    return True


def is_array(obj: Any) -> bool:
    """Whether ``obj`` is an array torchcodec can read: of a library it knows, or with
    ``__array_interface__``, ``__cuda_array_interface__``, DLPack or the buffer protocol."""
    return (adapter_of(obj) is not None or hasattr(obj, "__array_interface__") or hasattr(obj, "__dlpack__")
            or hasattr(obj, "__cuda_array_interface__") or is_buffer(obj))


# ---- outputs ----------------------------------------------------------------------------------------

def allocate(shape: tuple[int, ...], dtype: str, *, device_index: Optional[int] = None,
             bridge: Optional[str] = None) -> Memory:
    """New C-contiguous memory of ``shape`` and ``dtype`` from the library of ``bridge`` (default: the
    current bridge; "auto" allowed), for the engine to write.

    ``device_index`` None: CPU memory; ``dtype`` one of bool, uint8, uint16, int16, int32, int64,
    float32, float64 (CPU_DTYPES). numpy: ``numpy.empty``; torch: ``torch.empty``; for both, memory
    from the output pool when the output is large (``torchcodec.set_output_pool``); jax: numpy memory
    that ``finish()`` hands to jax through DLPack, no copy; cupy: ValueError (its frames are CUDA
    frames; pass ``bridge=host_bridge()`` for numpy CPU arrays under it).

    ``device_index`` N: memory on cuda:N, ``dtype`` uint8, uint16 (images), float32 or float64
    (CUDA_DTYPES), and the stream to write it on (``Memory.stream``; docs/cuda_outputs.md): torch's current stream for
    torch, cupy's for cupy and for numpy when cupy is installed, else torchcodec's DeviceBuffer on
    the legacy default stream (numpy; jax, handed over in ``finish()``).

    ValueError for an unknown bridge or dtype; ImportError (naming the pip package) when the library
    is missing; RuntimeError when it cannot use the GPU.
    """
    adapter = _bridge_adapter(bridge)
    if device_index is None:
        if dtype not in CPU_DTYPES:
            raise ValueError(f"CPU outputs are {', '.join(CPU_DTYPES)}, not {dtype!r}")
        if adapter is _numpy.NUMPY or adapter is _torch.TORCH:
            pooled = _pool.pooled_array(tuple(shape), dtype)
            if pooled is not None:              # a large output: memory reused (torchcodec.set_output_pool)
                return adapter.describe(adapter.from_host(pooled), True, "an output")
        return adapter.empty(tuple(shape), dtype)
    if dtype not in CUDA_DTYPES:
        raise ValueError(f"CUDA outputs are {', '.join(CUDA_DTYPES)}, not {dtype!r}")
    if adapter is _numpy.NUMPY:           # numpy has no CUDA arrays: cupy's, else torchcodec's own
        adapter = _cupy.CUPY if installed("cupy") else _device_buffer.DEVICE_BUFFER
    return adapter.empty_cuda(tuple(shape), dtype, device_index)


def from_host(obj: Any, bridge: Optional[str] = None) -> Any:
    """``obj`` as an array of ``bridge``'s library (default: the current bridge), without copying.

    ``obj``: CPU memory exposing the buffer protocol with its shape, strides and format (a
    memoryview, an ``array.array``, a numpy array, an engine object that also offers
    ``__array_interface__``). The result views ``obj``'s memory and keeps ``obj`` alive: numpy:
    ``numpy.asarray(obj)``; torch (numpy not needed): ``torch.from_dlpack`` where ``obj`` offers
    DLPack, else ``torch.frombuffer`` over its byte extent and ``as_strided`` (torch has no read-only
    tensors: writing into the view of a read-only ``obj`` is the caller's mistake); jax: DLPack from
    numpy's view (jax may copy memory it cannot alias). Under the cupy bridge the result is numpy's
    (CPU arrays are numpy's there). An array of that library already is returned as it is.
    TypeError when ``obj`` has no buffer; ValueError for layouts the library cannot view (torch:
    negative strides, strides that are not whole elements).
    """
    return _BRIDGE_ADAPTERS[host_bridge(bridge)].from_host(obj)


def float64_buffer(count: int) -> array.array:
    """A zeroed buffer of ``count`` float64 values for the engine to write (pts, durations)."""
    return array.array("d", bytes(8 * count))


def float64_array(values: array.array, bridge: Optional[str] = None) -> Any:
    """``values`` (an ``array.array("d")``) as a 1-D float64 array of ``bridge``'s library (default:
    the current bridge; numpy under cupy), viewing its memory: :func:`from_host` of ``values``."""
    return from_host(values, bridge)


# ---- arrays of any library ---------------------------------------------------------------------------

def describe(obj: Any, *, writable: bool = True, name: str = "out=") -> Memory:
    """The CPU memory of ``obj``: an array of numpy, torch, jax (read only: through numpy, no copy),
    or anything with ``__array_interface__``, DLPack (read only) or the buffer protocol.

    ``writable``: ``obj`` is written to (an ``out=``), so read-only memory and jax arrays are
    refused; otherwise (an encoder's input) it is only read. ``name`` names ``obj`` in messages.
    ``Memory.data`` keeps the memory alive. TypeError/ValueError for read-only, non-CPU or
    unsupported arrays.
    """
    return _adapter_for(obj).describe(obj, writable, name)


def describe_cuda(obj: Any, device_index: int, *, writable: bool = True) -> Memory:
    """The memory of ``obj`` on cuda:``device_index`` (a CUDA torch.Tensor, a cupy array, a
    DeviceBuffer, anything with ``__cuda_array_interface__``) and its stream, as for a CUDA ``out=``
    (see :func:`describe_out`); ``writable`` False: it is only read (an encoder's input), so
    read-only memory is accepted. ``finish()`` after the engine queued its work."""
    return _adapter_for(obj).describe_cuda(obj, device_index, writable)


def describe_out(out: Any, shape: tuple[int, ...], dtype: str, *, dimension_order: str = "NHWC",
                 device_index: Optional[int] = None) -> Memory:
    """Check a user's ``out=`` for a request of NHWC ``shape`` and ``dtype``, and say where (and, on
    CUDA, on which stream) to write it.

    ``out`` must have ``shape`` (or its NCHW permutation when ``dimension_order`` is "NCHW") and
    ``dtype``, and be writable memory: on the CPU when ``device_index`` is None (see
    :func:`describe`), else on cuda:``device_index``: a CUDA torch.Tensor (written on torch's current
    stream), a cupy array (cupy's current stream), a DeviceBuffer (its allocation stream; ``finish()``
    records its ready event), or any object with ``__cuda_array_interface__`` (on the v3 ``stream``
    it names, or, without one, after a defensive context synchronisation, on the legacy default
    stream, synchronised again in ``finish()``). The result's shape and strides are in NHWC order;
    ``packed`` says whether the engine can write the layout directly (else the caller decodes into
    new memory and copies once); ``finish()`` returns ``out``. TypeError/ValueError otherwise.
    """
    if dimension_order not in ("NHWC", "NCHW"):
        raise ValueError(f"dimension_order must be 'NHWC' or 'NCHW', not {dimension_order!r}")
    if device_index is None:
        memory = describe(out)
    else:
        if dtype not in CUDA_DTYPES:
            raise ValueError(f"CUDA outputs are {', '.join(CUDA_DTYPES)}, not {dtype!r}")
        memory = _adapter_for(out).describe_cuda(out, device_index)
    shape = tuple(shape)
    expected = (shape[0], shape[3], shape[1], shape[2]) if dimension_order == "NCHW" else shape
    if memory.shape != expected:
        raise ValueError(f"out= has shape {memory.shape}; this request needs {expected} "
                         f"(dimension_order={dimension_order!r})")
    if memory.dtype != dtype:
        raise ValueError(f"out= has dtype {memory.dtype}; this decoder outputs {dtype}")
    return memory.permuted((0, 2, 3, 1)) if dimension_order == "NCHW" else memory


def device_of(obj: Any) -> str:
    """"cpu", or "cuda:N" for an array in CUDA memory (torch, cupy, a DeviceBuffer, anything with
    ``__cuda_array_interface__``)."""
    return _adapter_for(obj).device_of(obj)


def dtype_name(dtype: Any) -> str:
    """A dtype given as a string, a numpy dtype (or scalar type) or a torch dtype, as a name
    ("uint8", "float32"); other objects (Python's ``float``) through numpy when it is installed."""
    if isinstance(dtype, str):
        return dtype
    adapter = adapter_of(dtype, "dtype")
    if adapter is not None:
        return adapter.dtype_name(dtype)
    if installed("numpy"):
        try:
            return _numpy.NUMPY.dtype_name(dtype)
        except TypeError:
            pass
    return str(dtype)


def nchw(data: Any) -> Any:
    """A (..., H, W, C) array (numpy, torch, cupy, jax or a DeviceBuffer) viewed as (..., C, H, W),
    without copying (jax: ``jnp.transpose``)."""
    ndim = len(data.shape)
    return _adapter_for(data).permute(data, tuple(range(ndim - 3)) + (ndim - 1, ndim - 3, ndim - 2))


def batch_of_one(data: Any) -> Any:
    """``data`` with a leading dimension of one, the same memory (a single frame's ``out=`` as a batch)."""
    return _adapter_for(data).batch_of_one(data)


def layout_error(out: Any) -> ValueError:
    """The error for an ``out=`` in a layout that the engine cannot write and torchcodec cannot copy into."""
    return ValueError(f"out= ({type(out).__name__}) must hold packed RGB pixels (channels innermost, pixels 3 "
                      f"elements apart): torchcodec cannot copy into this layout")


def copy_into(out: Any, source: Any) -> None:
    """``out[...] = source`` in ``out``'s library: for an ``out=`` whose layout the engine cannot
    write. ``source`` is an array of the same device (CPU: numpy or torch; CUDA: torch, cupy or
    DLPack). ValueError for outputs that torchcodec cannot copy into (DeviceBuffer, foreign CUDA)."""
    _adapter_for(out).copy_into(out, source)


# The adapters subclass Adapter and build Memory: imported once both are defined.
from torchcodec._outputs import _cupy, _device_buffer, _jax, _numpy, _pool, _protocols, _torch  # noqa: E402

_BRIDGE_ADAPTERS: dict[str, Adapter] = {"numpy": _numpy.NUMPY, "torch": _torch.TORCH, "jax": _jax.JAX,
                                        "cupy": _cupy.CUPY}
_LIBRARIES: tuple[Adapter, ...] = (_numpy.NUMPY, _torch.TORCH, _jax.JAX, _cupy.CUPY, _device_buffer.DEVICE_BUFFER)
