"""DeviceConverter: a device's conversion of decoded frames to RGB in memory on that device, which a
ColorConverter holds: the Scaler (swscale, host memory) on the CPU, the CudaConverter (kernels,
device memory) on CUDA. Declared in _device_converter.pxd."""
from libc.stdint cimport uint8_t
from libc.string cimport memcpy

from torchcodec._ffmpeg.avutil cimport AVFrame


cdef class DeviceConverter:
    """Converts decoded frames to RGB in caller-provided memory; subclasses implement ``convert``
    and ``set_stages``."""

    def set_stages(self, stages, single_resize=False):
        """Apply the transform plan ``stages`` (torchcodec._core._scaler.parse_stages; empty for
        none) to every frame converted from now on: ``convert``'s output is then the last stage's
        size. ``single_resize``: the plan is one Resize and nothing else."""
        raise NotImplementedError(f"{type(self).__name__} does not apply transforms")

    cdef int convert(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                     int width, int height, bint as_float) except -1 nogil:
        with gil:
            raise NotImplementedError(f"{type(self).__name__} does not implement convert")

    cdef int copy_output(self, uint8_t *dst, const uint8_t *src, Py_ssize_t row_stride, int width, int height,
                         bint as_float) except -1 nogil:
        """Host memory: one memcpy per row (converters writing device memory override this)."""
        cdef int r
        cdef size_t row_bytes = <size_t>width * 3 * (4 if as_float else 1)
        for r in range(height):
            memcpy(dst + r * row_stride, src + r * row_stride, row_bytes)
        return 0
