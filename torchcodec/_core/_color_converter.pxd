# ColorConverter: decoded frames to RGB (the building block, and the converter of the video reader).
# It holds the DeviceConverter of its device: the Scaler (swscale, host memory) on the CPU, the
# CudaConverter (kernels, device memory) on CUDA.
from libc.stdint cimport uint8_t
from torchcodec._core._device_converter cimport DeviceConverter
from torchcodec._ffmpeg.avutil cimport AVFrame


cdef class ColorConverter:
    cdef readonly DeviceConverter impl   # Scaler or CudaConverter
    cdef readonly object device         # "cpu" or "cuda:N"
    cdef readonly object output_dtype   # "uint8", "float32" or "auto" (resolved per frame)
    cdef readonly object transforms     # torchcodec transforms applied by convert(), or None
    cdef dict plans                     # convert()'s plans: (height, width) after rotation -> Plan
    cdef object plan                    # the Plan set on impl (None: no transforms set)

    # Write ``frame`` turned ``rotation`` degrees clockwise as ``height`` rows of ``width`` packed RGB
    # pixels (uint8, or float32 in [0, 1] when ``as_float``) at ``dst``, rows ``row_stride`` bytes
    # apart (host memory on the CPU, device memory on CUDA).
    cdef int convert_into(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                          int width, int height, bint as_float) except -1 nogil
    # Copy one converted frame from ``src`` to ``dst`` (same layout): a repeated target.
    cdef int copy_output(self, uint8_t *dst, const uint8_t *src, Py_ssize_t row_stride, int width, int height,
                         bint as_float) except -1 nogil


cdef ColorConverter cpu_color_converter(object output_dtype)
cdef int clockwise_rotation(double counter_clockwise) noexcept
