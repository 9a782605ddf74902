# DeviceConverter: a device's conversion of decoded frames to RGB, into caller-provided memory on that
# device, which a ColorConverter holds: the Scaler (swscale, host memory) on the CPU, the
# CudaConverter (kernels, device memory) on CUDA.
from libc.stdint cimport uint8_t
from torchcodec._ffmpeg.avutil cimport AVFrame


cdef class DeviceConverter:
    # stream_output: the caller's outputs are large (a batch larger than the caches): write them
    #   with non-temporal stores where the conversion can (the Scaler's own AVX2 rows).
    cdef public bint stream_output

    # convert: write ``frame``, turned ``rotation`` degrees clockwise, as ``height`` rows of
    #   ``width`` packed RGB pixels (uint8, or float32 in [0, 1] when ``as_float``) at ``dst``, rows
    #   ``row_stride`` bytes apart. ``dst`` is host memory for the Scaler, device memory for CUDA.
    # copy_output: copy one converted frame from ``src`` to ``dst`` (same layout): a repeated target.
    # set_stages (Python): the transform plan applied by ``convert`` (see the .pyx).
    cdef int convert(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                     int width, int height, bint as_float) except -1 nogil
    cdef int copy_output(self, uint8_t *dst, const uint8_t *src, Py_ssize_t row_stride, int width, int height,
                         bint as_float) except -1 nogil
