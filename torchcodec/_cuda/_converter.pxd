# The CUDA frame converter: decoded frames (NVDEC surfaces, FFmpeg CUDA hwaccel frames, or host
# frames of the CPU fallback) to RGB in device memory, with the kernels of kernels/colour.cu, and
# through a transform plan with those of kernels/resize.cu (torchcodec._cuda._transforms).
from libc.stdint cimport uint8_t
from torchcodec._core._device_converter cimport DeviceConverter
from torchcodec._cuda._driver cimport CudaContext, CudaDriver
from torchcodec._cuda._scratch cimport Scratch
from torchcodec._cuda._transforms cimport CudaTransforms
from torchcodec._core._scaler cimport Scaler
from torchcodec._cuda cimport cuda as cu
from torchcodec._ffmpeg.avutil cimport AVFrame


cdef enum:
    NUM_COLOUR_KERNELS = 4      # tc_convert_yuv{8,16}_to_rgb{8,f}, indexed by 2 * wide + as_float


cdef class CudaConverter(DeviceConverter):
    cdef readonly CudaContext context
    cdef CudaDriver driver
    cdef object modules                 # (colour, copy) CudaModules, shared by the context's converters
    cdef cu.CUfunction colour_kernels[NUM_COLOUR_KERNELS]
    cdef cu.CUfunction copy_kernel
    cdef cu.CUstream stream             # where conversions run (NULL: the legacy default stream)
    cdef cu.CUevent upstream_ready      # recorded on the legacy stream: FFmpeg's hwaccel frame is written
    cdef cu.CUevent converted           # recorded on `stream` after converting a hwaccel frame
    cdef Scratch staging                # host frames' planes, uploaded
    cdef Scratch filters                # swscale's chroma filters of 4:2:0 frames
    cdef int filters_width, filters_height, v_taps, h_taps  # what `filters` holds (0 x 0: nothing)
    cdef uint8_t *host_rgb              # the Scaler's output for formats the kernels do not read (owned)
    cdef size_t host_rgb_size
    cdef Scaler scaler                  # created on first use (with the transform plan, if any)
    cdef readonly CudaTransforms transforms     # the transform plan (None: none)
    cdef object stages                  # as given to set_stages (for the Scaler), and single_resize
    cdef bint single_resize

    cdef int record(self, cu.CUevent event, cu.CUstream stream) except -1 nogil
    cdef int launch(self, cu.CUfunction function, unsigned grid_x, unsigned grid_y, void *params) except -1 nogil
    cdef int prepare_filters(self, int width, int height) except -1 nogil
    cdef int upload_planes(self, const AVFrame *frame, int num_planes, const int *plane_rows,
                           const size_t *plane_bytes, cu.CUdeviceptr *planes, Py_ssize_t *pitches) except -1 nogil
    cdef int convert_with_scaler(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                                 int width, int height, bint as_float) except -1 nogil
    cdef int convert_downloaded(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                                int width, int height, bint as_float) except -1 nogil
    cdef int convert(self, const AVFrame *frame, int rotation, uint8_t *dst, Py_ssize_t row_stride,
                     int width, int height, bint as_float) except -1 nogil
    cdef int copy_output(self, uint8_t *dst, const uint8_t *src, Py_ssize_t row_stride, int width, int height,
                         bint as_float) except -1 nogil
