# nvJPEG opened at run time, and its per-device library handles (see _nvjpeg.pyx).
from torchcodec._cuda._driver cimport CudaContext, CudaDriver
from torchcodec._cuda cimport nvjpeg as nj


cdef class NvjpegLibrary:
    cdef void *lib                          # dlopen handle (owned)
    cdef nj.NvjpegFunctions f
    cdef readonly str path                  # what was opened (a file, or a soname the linker found)
    cdef readonly tuple version             # (major, minor, patch) from nvjpegGetProperty
    cdef int bind(self) except -1


cdef class NvjpegDevice:
    cdef readonly CudaContext context
    cdef CudaDriver driver
    cdef NvjpegLibrary library
    cdef nj.nvjpegHandle_t decode_handle    # NVJPEG_BACKEND_HARDWARE where the GPU has JPEG engines, else DEFAULT
    cdef nj.nvjpegHandle_t encode_handle    # NVJPEG_BACKEND_DEFAULT, created on first use
    cdef readonly bint hardware             # decode_handle has the hardware backend
    cdef object lock
    cdef int open_encoding(self) except -1


cdef object nvjpeg_error(nj.nvjpegStatus_t status, str where)
cdef int check_nvjpeg(nj.nvjpegStatus_t status, const char *where) except -1 nogil
