"""cupy: CUDA outputs (``cupy.empty`` under ``cupy.cuda.Device(i)``, written on cupy's current
stream) and cupy arrays as ``out=``. cupy arrays live on the GPU only: CPU outputs under the cupy
bridge are numpy's (``host_bridge``)."""
from __future__ import annotations

from typing import Any

from torchcodec._outputs import Adapter, Memory
from torchcodec._outputs._device_buffer import wrong_device


class Cupy(Adapter):
    name = "cupy"
    module = "cupy"

    def belongs(self, obj: Any, kind: str) -> bool:
        cupy = self.imported()
        return kind == "array" and cupy is not None and isinstance(obj, cupy.ndarray)

    def empty(self, shape: tuple[int, ...], dtype: str) -> Memory:
        raise ValueError("the cupy bridge gives CUDA frames; this decoder decodes on the CPU "
                         "(use the numpy, torch or jax bridge, or device='cuda')")

    def empty_cuda(self, shape: tuple[int, ...], dtype: str, device_index: int) -> Memory:
        cupy = self.library("CUDA output without torch")
        with cupy.cuda.Device(device_index):
            return _memory(cupy, cupy.empty(shape, dtype=dtype), device_index)

    def describe(self, obj: Any, writable: bool, name: str) -> Memory:
        raise TypeError(f"{name} must be in CPU memory; this is a cupy array on cuda:{obj.device.id}")

    def describe_cuda(self, obj: Any, device_index: int, writable: bool = True) -> Memory:
        if obj.device.id != device_index:
            raise wrong_device(obj, f"cuda:{obj.device.id}", device_index)
        if writable and not obj.flags.writeable:
            raise ValueError("out= is read-only")
        cupy = self.library()
        with cupy.cuda.Device(device_index):
            return _memory(cupy, obj, device_index)

    def device_of(self, obj: Any) -> str:
        return f"cuda:{obj.device.id}"

    def strided_view(self, obj: Any, address: int, shape: tuple[int, ...], strides: tuple[int, ...],
                     dtype: str) -> Any:
        cupy = self.library()
        return cupy.ndarray(shape, dtype=dtype, memptr=obj.data + (address - obj.data.ptr), strides=strides)

    def dtype_name(self, dtype: Any) -> str:
        return str(dtype)


def _memory(cupy: Any, data: Any, device_index: int) -> Memory:
    """Call under ``cupy.cuda.Device(device_index)``: cupy's current stream is per device."""
    return Memory(data, data.data.ptr, data.shape, data.strides, data.itemsize, str(data.dtype),
                  f"cuda:{device_index}", cupy.cuda.get_current_stream().ptr)


CUPY: Cupy = Cupy()
