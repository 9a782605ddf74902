"""jax: outputs decoded into numpy memory (CPU) or a DeviceBuffer (CUDA) and handed to jax through
DLPack without a copy; jax arrays as inputs (read through their buffer). jax arrays are immutable,
so they are never an ``out=``."""
from __future__ import annotations

from typing import Any

from torchcodec._outputs import Adapter, Memory
from torchcodec._outputs._device_buffer import DEVICE_BUFFER
from torchcodec._outputs._numpy import NUMPY
from torchcodec._outputs._protocols import host_memory


class Jax(Adapter):
    name = "jax"
    module = "jax"

    def belongs(self, obj: Any, kind: str) -> bool:
        jax = self.imported()
        return kind == "array" and jax is not None and isinstance(obj, jax.Array)

    def empty(self, shape: tuple[int, ...], dtype: str) -> Memory:
        memory = NUMPY.empty(shape, dtype)
        return Memory(memory.data, memory.address, memory.shape, memory.strides, memory.itemsize, memory.dtype,
                      hand_over=self.library().numpy.from_dlpack)

    def empty_cuda(self, shape: tuple[int, ...], dtype: str, device_index: int) -> Memory:
        jax = self.library("the jax bridge")
        try:
            jax.devices("gpu")
        except RuntimeError:
            raise RuntimeError("the jax bridge gives CUDA frames as jax arrays on the GPU, but this jax has no GPU "
                               "backend (install jax[cuda12]); or decode with torchcodec.bridge('cupy') or "
                               "bridge('numpy')") from None
        return DEVICE_BUFFER.empty_cuda(shape, dtype, device_index, jax.dlpack.from_dlpack)

    def from_host(self, obj: Any) -> Any:
        if self.belongs(obj, "array"):
            return obj
        return self.library().numpy.from_dlpack(NUMPY.from_host(obj))

    def describe(self, obj: Any, writable: bool, name: str) -> Memory:
        if writable:
            raise TypeError(f"{name} cannot be a jax array: jax arrays are immutable")
        return host_memory(obj, writable, name)

    def describe_cuda(self, obj: Any, device_index: int, writable: bool = True) -> Memory:
        if not writable:
            raise TypeError("jax CUDA arrays are not read in place (jax exports no CUDA stream or address): "
                            "pass a torch or cupy array (cupy.from_dlpack(x) shares the memory)")
        raise TypeError("out= cannot be a jax array: jax arrays are immutable")

    def device_of(self, obj: Any) -> str:
        device = next(iter(obj.devices()))
        return "cpu" if device.platform == "cpu" else f"cuda:{device.id}"

    def permute(self, obj: Any, axes: tuple[int, ...]) -> Any:
        return self.library().numpy.transpose(obj, axes)


JAX: Jax = Jax()
