# NVENC through FFmpeg (h264_nvenc, hevc_nvenc, av1_nvenc): RGB device frames written as NV12 into
# FFmpeg's CUDA frames by a kernel, on the package's primary context, and encoded without a host copy.
from libc.stdint cimport uint8_t
from torchcodec._core._encoder cimport StreamEncoder
from torchcodec._cuda._driver cimport CudaContext, CudaDriver
from torchcodec._cuda cimport cuda as cu
from torchcodec._ffmpeg.avutil cimport AVBufferRef, AVFrame


cdef class CudaFrameWriter:
    cdef readonly CudaContext context
    cdef CudaDriver driver
    cdef object modules                 # the context's (colour, copy) CudaModules
    cdef cu.CUfunction kernel           # tc_convert_rgb8_to_nv12
    cdef cu.CUstream stream             # the writer's own stream: its launches, and NVENC's reads
    cdef cu.CUevent input_ready         # recorded on the producer's stream: the input is written
    cdef cu.CUevent input_read          # recorded on `stream` after the launches: the input was read
    cdef AVBufferRef *frames_ref        # AVHWFramesContext of NV12 CUDA frames, width x height (owned)
    cdef readonly int width
    cdef readonly int height
    cdef public int matrix              # AVColorSpace of the conversion
    cdef public bint full_range

    cdef int begin(self, cu.CUstream producer) except -1 nogil
    cdef int end(self, cu.CUstream producer) except -1 nogil
    cdef int write(self, AVFrame *frame, const uint8_t *src, Py_ssize_t sc, Py_ssize_t sh,
                   Py_ssize_t sw) except -1 nogil


cdef class NvencStreamEncoder(StreamEncoder):
    cdef readonly CudaFrameWriter writer
    cdef readonly int width
    cdef readonly int height
