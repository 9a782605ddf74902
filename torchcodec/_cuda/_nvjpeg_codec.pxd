# JPEG decoding and encoding on CUDA with nvJPEG (see _nvjpeg_codec.pyx).
from libc.stdint cimport int64_t, uint64_t

from torchcodec._cuda cimport cuda as cu
from torchcodec._cuda cimport nvjpeg as nj
from torchcodec._cuda._driver cimport CudaDriver
from torchcodec._cuda._nvjpeg cimport NvjpegDevice, NvjpegLibrary


cdef struct Job:
    const unsigned char *data
    size_t size
    int format                  # FORMAT_Y or FORMAT_RGB
    int channels                # planes nvJPEG writes: 1 or 3
    nj.nvjpegImage_t target     # where nvJPEG writes: the output's planes, or scratch (oriented images)
    int width                   # as stored
    int height
    int orientation             # EXIF orientation (0 or 1: none)
    bint wide                   # the output is uint16 (each value times 257)
    bint scratch                # target is scratch, copied into `out` turned and widened
    uint64_t out                # the output's plane 0: (planes, H', W') contiguous
    uint64_t alpha              # a plane to fill with the maximum, or 0
    bint hardware               # goes through nvjpegDecodeBatched


cdef class PlaneCopier:
    cdef CudaDriver driver
    cdef object module                  # the context's "copy" CudaModule
    cdef cu.CUfunction kernel           # tc_copy_strided
    cdef int copy(self, uint64_t src, int64_t src_row, int64_t src_col, uint64_t dst, int64_t dst_row,
                  int64_t dst_col, int width, int height, cu.CUstream stream) except -1 nogil


cdef class JpegDecoder:
    cdef readonly NvjpegDevice device
    cdef NvjpegLibrary library
    cdef CudaDriver driver
    cdef nj.nvjpegJpegState_t batch_states[2]   # hardware batches: [0] luma, [1] RGB
    cdef nj.nvjpegJpegState_t single_state      # nvjpegDecode, one image at a time
    cdef nj.nvjpegJpegStream_t parsed           # headers parsed for nvjpegDecodeBatchedSupported
    cdef cu.CUevent done                        # recorded after the last call of a decode
    cdef bint recorded
    cdef object held                            # the inputs of the last decode, until `done` has passed
    cdef PlaneCopier copier
    cdef int wait_idle(self) except -1
    cdef int decode_hardware(self, Job *jobs, Py_ssize_t count, cu.CUstream stream) noexcept nogil
    cdef int finish_job(self, Job *job, cu.CUstream stream) except -1 nogil


cdef class JpegEncoder:
    cdef readonly NvjpegDevice device
    cdef NvjpegLibrary library
    cdef CudaDriver driver
    cdef nj.nvjpegEncoderState_t state
    cdef nj.nvjpegEncoderParams_t params
    cdef PlaneCopier copier
