# cython: language_level=3
"""Test helper, built by tests/test_nvenc.py against the package's .pxd files: has a CudaFrameWriter
write one RGB frame (device memory) into a frame of its FFmpeg CUDA pool, as the NVENC encoder's
nogil path does, and hands back that frame's NV12 planes for the test to read."""
from torchcodec._cuda._nvenc cimport CudaFrameWriter
from torchcodec._cuda cimport cuda as cu
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg.avutil cimport AVFrame
from libc.stdint cimport uint8_t


cdef class WrittenFrame:
    """A frame of the writer's pool, kept until this object is freed."""
    cdef AVFrame *ptr

    def __dealloc__(self):
        lavu.av_frame_free(&self.ptr)

    @property
    def planes(self):
        """(y, uv) addresses and (y, uv) pitches."""
        return ((<size_t>self.ptr.data[0], <size_t>self.ptr.data[1]), (self.ptr.linesize[0], self.ptr.linesize[1]))


def write_frame(CudaFrameWriter writer not None, size_t address, tuple strides, size_t producer_stream):
    """Write the RGB frame at ``address`` (byte ``strides`` of (3, H, W)), produced on
    ``producer_stream``, into a new frame of ``writer``'s pool (a WrittenFrame)."""
    cdef WrittenFrame written = WrittenFrame()
    cdef cu.CUstream producer = <cu.CUstream>producer_stream
    cdef Py_ssize_t sc = strides[0], sh = strides[1], sw = strides[2]
    written.ptr = lavu.av_frame_alloc()
    if written.ptr == NULL:
        raise MemoryError("av_frame_alloc failed")
    with nogil:
        writer.begin(producer)
        try:
            writer.write(written.ptr, <const uint8_t *>address, sc, sh, sw)
        finally:
            writer.end(producer)
    return written
