"""Where CUDA decoders get their output memory, and which stream they write it on (docs/cuda_outputs.md).

``allocate(shape, dtype, bridge, device_index)`` gives new NHWC memory from the bridge's library:

- "torch": a CUDA ``torch.Tensor`` from ``torch.empty``, written on torch's current stream;
- "cupy", and "numpy"/"auto" without torch when cupy is importable: a ``cupy.ndarray`` from
  ``cupy.empty`` under ``cupy.cuda.Device(i)``, written on cupy's current stream;
- "numpy"/"auto" without torch or cupy: torchcodec's own :class:`DeviceBuffer`, written on the legacy
  default stream, exported through DLPack and ``__cuda_array_interface__``;
- "jax": a DeviceBuffer handed to ``jax.dlpack.from_dlpack`` once written (jax needs its GPU backend).

``wrap_out(out, shape, dtype, device_index, dimension_order)`` checks a user's ``out=`` array on the
GPU (torch, cupy, a DeviceBuffer, or anything with ``__cuda_array_interface__``) and says which stream
to write it on. Either returns a :class:`CudaOutput`: the engine writes at ``address`` with
``strides`` on ``stream``, then the caller calls ``finish()``, which orders the consumers after the
writes and returns the array to give the user.

torch, cupy and jax are imported only when the bridge or the ``out=`` array is theirs.
"""
from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

from torchcodec import _bridge
from torchcodec._bridge import nchw  # noqa: F401  (CUDA arrays are viewed as NCHW like CPU ones)

ITEMSIZES = {"uint8": 1, "float32": 4, "float64": 8}
_TYPESTRS = {"|u1": "uint8", "<f4": "float32", "<f8": "float64"}


class CudaOutput:
    """Memory a CUDA decoder writes into.

    ``data``: the array (NHWC, as allocated or as the user gave it); ``address``: the device address
    of element (0, 0, 0, 0); ``strides``: bytes, in (N, H, W, C) order; ``stream``: the CUstream
    handle (int) the engine must write on; ``packed``: whether the layout is packed RGB pixels
    (channel stride one element, pixel stride three), which the engine writes directly; else the
    caller converts into new memory and copies once. ``finish()``, called after the engine wrote,
    orders the consumers after the writes and returns the array for the user.
    """

    __slots__ = ("data", "address", "strides", "stream", "packed", "_finish")

    def __init__(self, data: Any, address: int, strides: tuple[int, ...], stream: int, itemsize: int,
                 finish: Callable[[], Any] | None = None) -> None:
        self.data = data
        self.address = int(address)
        self.strides = tuple(int(stride) for stride in strides)
        self.stream = int(stream)
        self.packed = _bridge.is_packed_rgb(self.strides, itemsize)
        self._finish = finish

    def finish(self) -> Any:
        """The written array as the user receives it (the writes are ordered before its consumers)."""
        return self._finish() if self._finish is not None else self.data

    def __repr__(self) -> str:
        return (f"CudaOutput({type(self.data).__name__}, address={self.address:#x}, strides={self.strides}, "
                f"stream={self.stream:#x}, packed={self.packed})")


def _import(name: str, why: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError:
        raise ImportError(f"{why} needs {name}: pip install {name}") from None


def _check_dtype(dtype: str) -> None:
    if dtype not in ITEMSIZES:
        raise ValueError(f"CUDA outputs are {', '.join(ITEMSIZES)}, not {dtype!r}")


# ---- allocation per bridge ----------------------------------------------------------------------

def allocate(shape: tuple[int, ...], dtype: str, bridge: str, device_index: int) -> CudaOutput:
    """New NHWC memory of ``shape`` and ``dtype`` on cuda:``device_index`` from ``bridge``'s library
    ("auto", "numpy", "torch", "cupy", "jax"; see the module docstring). Raises ImportError when the
    library is missing, RuntimeError when it cannot use the GPU."""
    _check_dtype(dtype)
    if bridge == "auto":
        bridge = "torch" if importlib.util.find_spec("torch") is not None else "numpy"
    if bridge == "torch":
        return _allocate_torch(shape, dtype, device_index)
    if bridge == "cupy" or (bridge == "numpy" and importlib.util.find_spec("cupy") is not None):
        return _allocate_cupy(shape, dtype, device_index)
    if bridge == "numpy":
        return _allocate_buffer(shape, dtype, device_index)
    if bridge == "jax":
        return _allocate_for_jax(shape, dtype, device_index)
    raise ValueError(f"unknown bridge {bridge!r}; choose one of {', '.join(_bridge.BRIDGES)}")


def _cuda_torch(device_index: int) -> Any:
    """torch, after checking that it can use cuda:``device_index``."""
    torch = _import("torch", "the torch bridge")
    if not torch.cuda.is_available():
        raise RuntimeError(
            f"the torch bridge gives CUDA frames as CUDA tensors, but this torch ({torch.__version__}) cannot use "
            f"CUDA (torch.cuda.is_available() is False: a CPU-only build, or no driver it can use); install a "
            f"CUDA build of torch, or decode with torchcodec.bridge('cupy') or bridge('numpy')")
    if not 0 <= device_index < torch.cuda.device_count():
        raise ValueError(f"torch sees {torch.cuda.device_count()} CUDA device(s); cuda:{device_index} is not one")
    return torch


def _allocate_torch(shape: tuple[int, ...], dtype: str, device_index: int) -> CudaOutput:
    torch = _cuda_torch(device_index)
    data = torch.empty(shape, dtype=getattr(torch, dtype), device=f"cuda:{device_index}")
    return _torch_output(torch, data, device_index)


def _torch_output(torch: Any, data: Any, device_index: int) -> CudaOutput:
    size = data.element_size()
    return CudaOutput(data, data.data_ptr(), tuple(stride * size for stride in data.stride()),
                      torch.cuda.current_stream(device_index).cuda_stream, size)


def _allocate_cupy(shape: tuple[int, ...], dtype: str, device_index: int) -> CudaOutput:
    cupy = _import("cupy", "CUDA output without torch")
    with cupy.cuda.Device(device_index):
        data = cupy.empty(shape, dtype=dtype)
        return _cupy_output(cupy, data)


def _cupy_output(cupy: Any, data: Any) -> CudaOutput:
    """Call under ``cupy.cuda.Device(data.device.id)``: cupy's current stream is per device."""
    return CudaOutput(data, data.data.ptr, data.strides, cupy.cuda.get_current_stream().ptr, data.itemsize)


def _context(device_index: int) -> Any:
    from torchcodec._cuda._driver import load_driver
    return load_driver().context(device_index)


def _buffer_module() -> Any:
    try:
        from torchcodec._cuda import _device_buffer
    except ImportError:
        raise RuntimeError("this build of torchcodec has no CUDA support (built without ffnvcodec's headers or "
                           "with -Dcuda=disabled)") from None
    return _device_buffer


def _allocate_buffer(shape: tuple[int, ...], dtype: str, device_index: int) -> CudaOutput:
    # No library says which stream: the legacy default stream is ordered with every blocking stream,
    # so an unknown consumer is safe.
    buffers = _buffer_module()
    buffer = buffers.DeviceBuffer.empty(_context(device_index), shape, dtype, buffers.STREAM_LEGACY)
    return _buffer_output(buffer, buffers.STREAM_LEGACY)


def _buffer_output(buffer: Any, stream: int, hand_over: Callable[[Any], Any] | None = None) -> CudaOutput:
    """A DeviceBuffer written on ``stream``: finish() records its ready event there."""
    def finish() -> Any:
        buffer.record(stream)
        return hand_over(buffer) if hand_over is not None else buffer
    return CudaOutput(buffer, buffer.ptr, buffer.strides, stream, buffer.itemsize, finish)


def _allocate_for_jax(shape: tuple[int, ...], dtype: str, device_index: int) -> CudaOutput:
    jax = _import("jax", "the jax bridge")
    try:
        jax.devices("gpu")
    except RuntimeError:
        raise RuntimeError("the jax bridge gives CUDA frames as jax arrays on the GPU, but this jax has no GPU "
                           "backend (install jax[cuda12]); or decode with torchcodec.bridge('cupy') or "
                           "bridge('numpy')") from None
    dlpack = importlib.import_module("jax.dlpack")
    buffers = _buffer_module()
    buffer = buffers.DeviceBuffer.empty(_context(device_index), shape, dtype, buffers.STREAM_LEGACY)
    return _buffer_output(buffer, buffers.STREAM_LEGACY, dlpack.from_dlpack)


# ---- out= ---------------------------------------------------------------------------------------

def wrap_out(out: Any, shape: tuple[int, ...], dtype: str, device_index: int,
             dimension_order: str = "NHWC") -> CudaOutput:
    """Check a user's ``out=`` for a CUDA decoder and say where and on which stream to write.

    ``shape`` is the NHWC shape of the request; ``out`` must have that shape (or its NCHW
    permutation when ``dimension_order`` is "NCHW"), ``dtype``, live on cuda:``device_index`` and be
    writable. Accepted: a CUDA torch.Tensor (written on torch's current stream), a cupy array (cupy's
    current stream), a DeviceBuffer (its allocation stream; finish() records its ready event), or any
    object with ``__cuda_array_interface__``: on the v3 ``stream`` it names, or, without one (v2, or
    None), after one defensive cuCtxSynchronize, on the legacy default stream, synchronised again in
    finish() because the consumer's stream is unknown. The result's ``strides`` are in NHWC order;
    ``packed`` says whether the engine can write the layout directly. TypeError/ValueError otherwise.
    """
    _check_dtype(dtype)
    if dimension_order not in ("NHWC", "NCHW"):
        raise ValueError(f"dimension_order must be 'NHWC' or 'NCHW', not {dimension_order!r}")
    kind = _out_kind(out)
    interface = out.__cuda_array_interface__ if kind == "interface" else None
    shape = tuple(shape)
    expected = (shape[0], shape[3], shape[1], shape[2]) if dimension_order == "NCHW" else shape
    out_shape = tuple(interface["shape"]) if interface is not None else tuple(out.shape)
    if out_shape != expected:
        raise ValueError(f"out= has shape {out_shape}; this request needs {expected} "
                         f"(dimension_order={dimension_order!r})")
    out_dtype = (_TYPESTRS.get(interface["typestr"], interface["typestr"]) if interface is not None
                 else _bridge.dtype_name(out.dtype))
    if out_dtype != dtype:
        raise ValueError(f"out= has dtype {out_dtype}; this decoder outputs {dtype}")
    if kind == "torch":
        output = _wrap_torch(out, device_index)
    elif kind == "cupy":
        output = _wrap_cupy(out, device_index)
    elif kind == "buffer":
        output = _wrap_buffer(out, device_index)
    else:
        output = _wrap_interface(out, interface, ITEMSIZES[dtype], device_index)
    if dimension_order == "NCHW":                 # as (n, h, w, c)
        strides = output.strides
        output.strides = (strides[0], strides[2], strides[3], strides[1])
        output.packed = _bridge.is_packed_rgb(output.strides, ITEMSIZES[dtype])
    return output


def _out_kind(out: Any) -> str:
    """"torch", "cupy", "buffer" (a DeviceBuffer) or "interface" (__cuda_array_interface__); TypeError for
    arrays a CUDA decoder cannot write into."""
    module = type(out).__module__.split(".")[0]
    if module in ("jax", "jaxlib"):
        raise TypeError("out= cannot be a jax array: jax arrays are immutable")
    if module == "numpy":
        raise TypeError("out= for a CUDA decoder must be in GPU memory; this is a numpy array (decode with "
                        "device='cpu' to write into it)")
    if module in ("torch", "cupy"):
        return module
    if _bridge.is_device_buffer(out):
        return "buffer"
    if hasattr(out, "__cuda_array_interface__"):
        return "interface"
    raise TypeError(f"out= for a CUDA decoder must be a CUDA torch.Tensor, a cupy array, a DeviceBuffer or an "
                    f"object with __cuda_array_interface__, not {type(out).__name__}")


def _wrong_device(out: Any, where: str, device_index: int) -> ValueError:
    return ValueError(f"out= is on {where}; this decoder decodes on cuda:{device_index} and writes there only "
                      f"(got a {type(out).__name__})")


def _wrap_torch(out: Any, device_index: int) -> CudaOutput:
    if out.device.type != "cuda" or out.device.index != device_index:
        raise _wrong_device(out, str(out.device), device_index)
    if out.requires_grad:
        raise ValueError("out= must not require grad")
    return _torch_output(importlib.import_module("torch"), out, device_index)


def _wrap_cupy(out: Any, device_index: int) -> CudaOutput:
    if out.device.id != device_index:
        raise _wrong_device(out, f"cuda:{out.device.id}", device_index)
    if not out.flags.writeable:
        raise ValueError("out= is read-only")
    cupy = importlib.import_module("cupy")
    with cupy.cuda.Device(device_index):
        return _cupy_output(cupy, out)


def _wrap_buffer(out: Any, device_index: int) -> CudaOutput:
    if out.device != device_index:
        raise _wrong_device(out, f"cuda:{out.device}", device_index)
    return _buffer_output(out, out.stream)


def _wrap_interface(out: Any, interface: dict, itemsize: int, device_index: int) -> CudaOutput:
    """Any object with __cuda_array_interface__: on its v3 stream, or after one defensive synchronisation."""
    if hasattr(out, "__dlpack_device__"):
        device = tuple(out.__dlpack_device__())
        if device != (2, device_index):
            raise _wrong_device(out, f"DLPack device {device}", device_index)
    address, readonly = interface["data"]
    if readonly:
        raise ValueError("out= is read-only (its __cuda_array_interface__ says so)")
    strides = interface.get("strides") or _bridge._c_strides(tuple(interface["shape"]), itemsize)
    stream = interface.get("stream") if interface.get("version", 0) >= 3 else None
    if isinstance(stream, int) and stream > 0:
        return CudaOutput(out, address, strides, stream, itemsize)
    # No producer stream (v2, None, or the invalid 0): wait for everything queued in the context
    # before writing, and again after, for a consumer on an unknown stream.
    buffers = _buffer_module()
    context = _context(device_index)
    buffers.synchronize_context(context)

    def finish() -> Any:
        buffers.synchronize_stream(context, buffers.STREAM_LEGACY)
        return out
    return CudaOutput(out, address, strides, buffers.STREAM_LEGACY, itemsize, finish)
