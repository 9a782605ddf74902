"""torch: CPU and CUDA outputs (``torch.empty``, written on torch's current stream), tensors as
``out=`` and as inputs, torch dtypes and generators, and torchvision's v2 transforms. numpy is
never needed."""
from __future__ import annotations

import ctypes
import sys
from typing import Any

from torchcodec._outputs import CPU_DTYPES, Adapter, Memory, describe
from torchcodec._outputs._device_buffer import wrong_device


class Torch(Adapter):
    name = "torch"
    module = "torch"

    def belongs(self, obj: Any, kind: str) -> bool:
        torch = self.imported()
        if torch is None:
            return False
        if kind == "array":
            return isinstance(obj, torch.Tensor)
        if kind == "dtype":
            return isinstance(obj, torch.dtype)
        if kind == "generator":
            return isinstance(obj, torch.Generator)
        if kind == "transform":
            v2 = sys.modules.get("torchvision.transforms.v2")
            return v2 is not None and isinstance(obj, v2.Transform)
        return False

    def empty(self, shape: tuple[int, ...], dtype: str) -> Memory:
        torch = self.library()
        return _memory(torch.empty(shape, dtype=getattr(torch, dtype)))

    def empty_cuda(self, shape: tuple[int, ...], dtype: str, device_index: int) -> Memory:
        torch = self._cuda(device_index)
        data = torch.empty(shape, dtype=getattr(torch, dtype), device=f"cuda:{device_index}")
        return _memory(data, torch.cuda.current_stream(device_index).cuda_stream)

    def _cuda(self, device_index: int) -> Any:
        """torch, after checking that it can use cuda:``device_index``."""
        torch = self.library("the torch bridge")
        if not torch.cuda.is_available():
            raise RuntimeError(
                f"the torch bridge gives CUDA frames as CUDA tensors, but this torch ({torch.__version__}) cannot use "
                f"CUDA (torch.cuda.is_available() is False: a CPU-only build, or no driver it can use); install a "
                f"CUDA build of torch, or decode with torchcodec.bridge('cupy') or bridge('numpy')")
        if not 0 <= device_index < torch.cuda.device_count():
            raise ValueError(f"torch sees {torch.cuda.device_count()} CUDA device(s); cuda:{device_index} is not one")
        return torch

    def from_host(self, obj: Any) -> Any:
        torch = self.library()
        if isinstance(obj, torch.Tensor):
            return obj
        if hasattr(obj, "__dlpack__"):
            try:
                return torch.from_dlpack(obj)
            except (BufferError, TypeError, RuntimeError):
                pass              # e.g. a read-only numpy array: through the buffer protocol below
        memory = describe(obj, writable=False, name="from_host's argument")
        dtype = getattr(torch, memory.dtype, None)
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"torch has no dtype {memory.dtype!r} (from {type(obj).__name__})")
        itemsize = memory.itemsize
        if any(stride < 0 or stride % itemsize for stride in memory.strides):
            raise ValueError(f"a torch tensor cannot view strides {memory.strides} of {itemsize}-byte items "
                             f"(negative, or not whole items)")
        low, high = memory.extent()
        if high == low:
            return torch.empty(memory.shape, dtype=dtype)
        region = _region(low, high - low, memory.data)
        flat = torch.frombuffer(region, dtype=dtype)
        return flat.as_strided(memory.shape, tuple(stride // itemsize for stride in memory.strides),
                               (memory.address - low) // itemsize)

    def describe(self, obj: Any, writable: bool, name: str) -> Memory:
        if obj.device.type != "cpu":
            raise ValueError(f"{name} must be a CPU tensor, not one on {obj.device}")
        if writable and obj.requires_grad:
            raise ValueError(f"{name} must not require grad")
        return _memory(obj)

    def describe_cuda(self, obj: Any, device_index: int, writable: bool = True) -> Memory:
        if obj.device.type != "cuda" or obj.device.index != device_index:
            raise wrong_device(obj, str(obj.device), device_index)
        if writable and obj.requires_grad:
            raise ValueError("out= must not require grad")
        return _memory(obj, self.library().cuda.current_stream(device_index).cuda_stream)

    def device_of(self, obj: Any) -> str:
        return _device(obj.device)

    def dtype_name(self, dtype: Any) -> str:
        return str(dtype).replace("torch.", "")

    def permute(self, obj: Any, axes: tuple[int, ...]) -> Any:
        return obj.permute(*axes)

    def batch_of_one(self, obj: Any) -> Any:
        return obj.unsqueeze(0)

    def strided_view(self, obj: Any, address: int, shape: tuple[int, ...], strides: tuple[int, ...],
                     dtype: str) -> Any:
        torch = self.library()
        itemsize = CPU_DTYPES[dtype]
        if any(stride % itemsize for stride in strides) or (address - obj.data_ptr()) % itemsize:
            raise ValueError(f"strides {strides} at offset {address - obj.data_ptr()} are not whole {dtype} elements")
        source = obj.view(getattr(torch, dtype)) if obj.dtype != getattr(torch, dtype) else obj
        return torch.as_strided(source, shape, tuple(stride // itemsize for stride in strides),
                                (address - obj.data_ptr()) // itemsize)

    def copy_into(self, out: Any, source: Any) -> None:
        torch = self.library()
        out.copy_(source if isinstance(source, torch.Tensor) else torch.from_dlpack(source))


def _memory(data: Any, stream: Any = None) -> Memory:
    """A tensor's memory (``stream``: for a CUDA tensor, the stream to write it on)."""
    size = data.element_size()
    return Memory(data, data.data_ptr(), tuple(data.shape), tuple(stride * size for stride in data.stride()), size,
                  str(data.dtype).replace("torch.", ""), _device(data.device), stream)


def _device(device: Any) -> str:
    """A torch.device as "cpu" or "cuda:N" (another kind: "kind:N")."""
    return "cpu" if device.type == "cpu" else f"{device.type}:{device.index or 0}"


def _region(address: int, size: int, owner: Any) -> Any:
    """``size`` bytes at ``address`` as a writable buffer object that keeps ``owner`` alive
    (torch.frombuffer holds the buffer object, so the tensor holds the owner)."""
    region_type: Any = type("Region", (ctypes.c_char * size,), {"__slots__": ("owner",)})
    region = region_type.from_address(address)
    region.owner = owner
    return region


TORCH: Torch = Torch()
