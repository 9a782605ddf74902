"""torchcodec's own CUDA memory (``torchcodec._cuda._device_buffer.DeviceBuffer``): the output of
the numpy bridge on CUDA without cupy and of the jax bridge (handed over through DLPack), written on
the legacy default stream; DeviceBuffers as ``out=`` (written on their allocation stream)."""
from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Optional

from torchcodec._outputs import Adapter, Memory, layout_error

_MODULE = "torchcodec._cuda._device_buffer"


def buffer_module() -> Any:
    """torchcodec._cuda._device_buffer (RuntimeError in a build without CUDA support)."""
    try:
        from torchcodec._cuda import _device_buffer
    except ImportError:
        raise RuntimeError("this build of torchcodec has no CUDA support (built without ffnvcodec's headers or "
                           "with -Dcuda=disabled)") from None
    return _device_buffer


def primary_context(device_index: int) -> Any:
    """The primary context of cuda:``device_index``."""
    from torchcodec._cuda._driver import load_driver
    return load_driver().context(device_index)


def wrong_device(out: Any, where: str, device_index: int) -> ValueError:
    """The error for an ``out=`` on another device than the decoder's."""
    return ValueError(f"out= is on {where}; this decoder decodes on cuda:{device_index} and writes there only "
                      f"(got a {type(out).__name__})")


class DeviceBufferAdapter(Adapter):
    name = "DeviceBuffer"          # imported through buffer_module(), which says why it may be missing

    def belongs(self, obj: Any, kind: str) -> bool:
        module = sys.modules.get(_MODULE)
        return kind == "array" and module is not None and isinstance(obj, module.DeviceBuffer)

    def empty_cuda(self, shape: tuple[int, ...], dtype: str, device_index: int,
                   hand_over: Optional[Callable[[Any], Any]] = None) -> Memory:
        """A new buffer on the legacy default stream: no library says which stream, and that one is
        ordered with every blocking stream, so an unknown consumer is safe. ``hand_over`` gives the
        written buffer to another library (jax)."""
        buffers = buffer_module()
        buffer = buffers.DeviceBuffer.empty(primary_context(device_index), shape, dtype, buffers.STREAM_LEGACY)
        return _memory(buffer, buffers.STREAM_LEGACY, hand_over)

    def describe(self, obj: Any, writable: bool, name: str) -> Memory:
        raise TypeError(f"{name} must be in CPU memory; this is a DeviceBuffer on cuda:{obj.device}")

    def strided_view(self, obj: Any, address: int, shape: tuple[int, ...], strides: tuple[int, ...],
                     dtype: str) -> Any:
        return obj.as_strided(shape, strides, dtype=dtype, offset=address - obj.ptr)

    def describe_cuda(self, obj: Any, device_index: int, writable: bool = True) -> Memory:
        if obj.device != device_index:
            raise wrong_device(obj, f"cuda:{obj.device}", device_index)
        return _memory(obj, obj.stream)

    def device_of(self, obj: Any) -> str:
        return f"cuda:{obj.device}"

    def permute(self, obj: Any, axes: tuple[int, ...]) -> Any:
        return obj.permuted(axes)

    def copy_into(self, out: Any, source: Any) -> None:
        raise layout_error(out)


def _memory(buffer: Any, stream: int, hand_over: Optional[Callable[[Any], Any]] = None) -> Memory:
    """A DeviceBuffer written on ``stream``: finish() records its ready event there."""
    def finish(data: Any) -> Any:
        buffer.record(stream)
        return hand_over(data) if hand_over is not None else data
    return Memory(buffer, buffer.ptr, buffer.shape, buffer.strides, buffer.itemsize, buffer.dtype,
                  f"cuda:{buffer.device}", stream, finish)


DEVICE_BUFFER: DeviceBufferAdapter = DeviceBufferAdapter()
