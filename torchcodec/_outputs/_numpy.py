"""numpy: CPU outputs (``numpy.empty``), numpy arrays as ``out=`` and as inputs, numpy dtypes."""
from __future__ import annotations

import sys
from typing import Any

from torchcodec._outputs import Adapter, Memory


class Numpy(Adapter):
    name = "numpy"
    module = "numpy"

    def belongs(self, obj: Any, kind: str) -> bool:
        numpy = self.imported()
        if numpy is None:
            return False
        if kind == "array":
            return isinstance(obj, numpy.ndarray)
        if kind == "dtype":
            return isinstance(obj, numpy.dtype) or (isinstance(obj, type) and issubclass(obj, numpy.generic))
        if kind == "generator":
            random = sys.modules.get("numpy.random")
            return random is not None and isinstance(obj, random.Generator)
        return False

    def empty(self, shape: tuple[int, ...], dtype: str) -> Memory:
        data = self.library().empty(shape, dtype=dtype)
        return _memory(data)

    def from_host(self, obj: Any) -> Any:
        return self.library().asarray(obj)

    def describe(self, obj: Any, writable: bool, name: str) -> Memory:
        if writable and not obj.flags.writeable:
            raise ValueError(f"{name} is read-only")
        return _memory(obj)

    def describe_cuda(self, obj: Any, device_index: int, writable: bool = True) -> Memory:
        raise TypeError("out= for a CUDA decoder must be in GPU memory; this is a numpy array (decode with "
                        "device='cpu' to write into it)")

    def dtype_name(self, dtype: Any) -> str:
        return self.library().dtype(dtype).name


def _memory(data: Any) -> Memory:
    return Memory(data, data.__array_interface__["data"][0], data.shape, data.strides, data.itemsize, data.dtype.name)


NUMPY: Numpy = Numpy()
