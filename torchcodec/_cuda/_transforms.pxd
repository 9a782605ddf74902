# Decode-time transforms on the GPU: a transform plan (crops and resizes, torchcodec._core._scaler's
# Stage) run by the kernels of kernels/resize.cu, the first stage reading the decoded frame
# through its colour conversion. Owned by a CudaConverter.
from libc.stdint cimport int64_t, uint8_t
from torchcodec._core._scaler cimport MAX_STAGES, Stage
from torchcodec._cuda cimport cuda as cu
from torchcodec._cuda._driver cimport CudaContext, CudaDriver
from torchcodec._cuda._scratch cimport Scratch
from torchcodec._cuda.kernels cimport tc_yuv_to_rgb_params


cdef enum:
    NUM_RESIZE_KERNELS = 2      # tc_resize_frame, tc_resize_image


cdef class CudaTransforms:
    cdef CudaContext context
    cdef CudaDriver driver
    cdef object module                  # the "resize" CudaModule, shared by the context's converters
    cdef cu.CUfunction kernels[NUM_RESIZE_KERNELS]
    cdef Stage stages[MAX_STAGES]
    cdef readonly int num_stages
    cdef bint single_resize             # the plan is one Resize and nothing else
    cdef readonly int out_width, out_height     # the last stage's output
    cdef Scratch tables                 # the filter tables of the stages that resize, one after the other
    cdef int64_t offsets[MAX_STAGES]    # where each stage's table starts in `tables`
    cdef int taps[MAX_STAGES][3]        # its horizontal luma, chroma and vertical taps
    cdef bint tables_ready              # `tables` holds them (uploaded on first use)
    cdef Scratch images                 # the RGB outputs of the stages before the last, two in turn

    cdef int prepare_tables(self, cu.CUstream stream) except -1 nogil
    cdef int run(self, const tc_yuv_to_rgb_params *frame, cu.CUstream stream, int rotation, int frame_width,
                 uint8_t *dst, Py_ssize_t row_stride, bint as_float) except -1 nogil


cpdef object cached_module(CudaContext context, str name)
