"""A stand-in for cupy, over host memory (which the stub libcuda's "device" memory is), recording
what torchcodec asks of it in ``calls``: the device entered and left, the current stream (0x5151),
the arrays allocated, and the arrays made over existing memory (``ndarray(..., memptr=...)``: a
CUDA RawFrame's planes). Put this folder on the path of a stub test's subprocess to use it."""
import ctypes

import numpy

calls = []


class _Stream:
    ptr = 0x5151


class _Device:
    def __init__(self, id):
        self.id = id

    def __enter__(self):
        calls.append(("enter", self.id))
        return self

    def __exit__(self, *exc):
        calls.append(("exit", self.id))


class cuda:
    Device = _Device

    @staticmethod
    def get_current_stream():
        calls.append(("stream",))
        return _Stream()


class MemoryPointer:
    def __init__(self, owner, ptr):
        self.owner, self.ptr = owner, ptr

    def __add__(self, offset):
        return MemoryPointer(self.owner, self.ptr + offset)


class ndarray:
    def __init__(self, shape, dtype, device=0, memptr=None, strides=None):
        if memptr is None:
            self._array = numpy.empty(shape, dtype)
            memptr = MemoryPointer(self._array, self._array.ctypes.data)
        else:
            calls.append(("view", tuple(shape), str(numpy.dtype(dtype)), memptr.ptr, tuple(strides)))
            extent = sum((n - 1) * step for n, step in zip(shape, strides)) + numpy.dtype(dtype).itemsize
            self._array = numpy.ndarray(shape, dtype, buffer=(ctypes.c_ubyte * extent).from_address(memptr.ptr),
                                        strides=strides)
        self.data, self.shape, self.dtype = memptr, self._array.shape, self._array.dtype
        self.strides, self.itemsize = self._array.strides, self._array.itemsize
        self.device = _Device(device)
        self.flags = type("Flags", (), {"writeable": True})()

    def transpose(self, axes):
        return self._array.transpose(axes)

    def get(self):
        return self._array.copy()


def empty(shape, dtype):
    calls.append(("empty", tuple(shape), str(dtype)))
    return ndarray(shape, dtype)
