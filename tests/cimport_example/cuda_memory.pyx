# cython: language_level=3
"""The CUDA side of the downstream example: an extension that cimports torchcodec's CUDA
declarations (the driver's types, CudaDriver and CudaContext, DeviceBuffer) and uses them at C
level. tests/test_cimport.py builds it with ffnvcodec's headers hidden, as on a machine that has
only the installed torchcodec (ARCHITECTURE decision 7), and runs it against the stub driver."""
from torchcodec._cuda cimport cuda as cu
from torchcodec._cuda._device_buffer cimport DeviceBuffer
from torchcodec._cuda._driver cimport CudaContext, load_driver


def enter_and_exit(int index, int times):
    """Push and pop device ``index``'s primary context ``times`` times from C, without the GIL;
    returns the context's handle and device as this extension's copy of the layout reads them."""
    cdef CudaContext context = load_driver().context(index)
    cdef int k
    with nogil:
        for k in range(times):
            context.enter()
            context.exit()
    return <size_t>context.ptr, <int>context.device


def memory_of(DeviceBuffer buffer):
    """The buffer's allocation as this extension reads it: (device pointer, bytes, stream handle)."""
    return <size_t>buffer.memory.ptr, buffer.memory.nbytes, <size_t>buffer.memory.stream


def record_and_wait(DeviceBuffer buffer, size_t stream):
    """Record the buffer's ready event on ``stream``, then wait for it on the host: C calls without the GIL."""
    cdef cu.CUstream producer = <cu.CUstream>stream
    with nogil:
        buffer.record_ready(producer)
        buffer.wait_ready_host()
