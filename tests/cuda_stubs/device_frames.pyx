# cython: language_level=3
"""Test helper, built by tests/test_cuda_convert.py and tests/test_cuda_blocks.py against the
package's .pxd files: hands a CudaConverter (or a FrameUploader, the blocks' copy into a RawFrame's
own device memory) the device frames that only a GPU decoder produces (an NVDEC frame, whose
``opaque`` points at a FrameSync, and an FFmpeg CUDA hwaccel frame, AV_PIX_FMT_CUDA with a
hw_frames_ctx naming its software format), their planes in memory the caller allocated with the
stub's cuMemAlloc; and hands host frames of any format to either converter (the CPU Scaler's
bytes are the kernels' reference)."""
from libc.stdint cimport uint8_t

from torchcodec._core._device_converter cimport DeviceConverter
from torchcodec._core._raw_frames cimport RawFrame, take_raw_frame
from torchcodec._cuda._device_frame cimport FrameUploader
from torchcodec._cuda._driver cimport FrameSync
from torchcodec._cuda cimport cuda as cu
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg.avutil cimport AVBufferRef, AVFrame, AVHWFramesContext, AVPixelFormat, AVRational


cdef extern from "libavutil/buffer.h" nogil:
    AVBufferRef *av_buffer_allocz(size_t size)


cdef extern from "libavutil/pixdesc.h" nogil:
    AVPixelFormat av_get_pix_fmt(const char *name)


cdef class Sync:
    """The FrameSync of an NVDEC output slot: ``ready`` and ``done`` CUevents (as ints) that the
    caller created, the readers the converter counted, the stream ``done`` was recorded on last."""
    cdef FrameSync sync

    def __init__(self, size_t ready, size_t done, int bits=8):
        self.sync.ready = <cu.CUevent>ready
        self.sync.done = <cu.CUevent>done
        self.sync.done_stream = NULL
        self.sync.readers = 0
        self.sync.bits = bits

    @property
    def readers(self):
        return self.sync.readers

    @property
    def done_stream(self):
        return <size_t>self.sync.done_stream


cdef int fill_device_frame(AVFrame *frame, str pix_fmt, planes, pitches, int width, int height, int crop_left,
                           int crop_top, int colorspace, int color_range, Sync sync, bint hwaccel) except -1:
    """Describe a device frame of ``pix_fmt`` in ``frame``: NVDEC's when ``sync`` is given (its
    ``opaque``), FFmpeg hwaccel's when ``hwaccel`` (AV_PIX_FMT_CUDA, a hw_frames_ctx naming the
    software format: the caller unrefs it)."""
    cdef int k
    for k in range(len(planes)):
        frame.data[k] = <uint8_t *><size_t>planes[k]
        frame.linesize[k] = pitches[k]
    frame.width, frame.height = width, height
    frame.crop_left, frame.crop_top = crop_left, crop_top
    frame.colorspace = <lavu.AVColorSpace>colorspace
    frame.color_range = <lavu.AVColorRange>color_range
    frame.opaque = <void *>&sync.sync if sync is not None else NULL
    frame.format = av_get_pix_fmt(pix_fmt.encode())
    if hwaccel:
        frame.hw_frames_ctx = av_buffer_allocz(sizeof(AVHWFramesContext))
        (<AVHWFramesContext *>frame.hw_frames_ctx.data).sw_format = <AVPixelFormat>frame.format
        frame.format = lavu.AV_PIX_FMT_CUDA
    return 0


def convert_device_frame(DeviceConverter converter, str pix_fmt, planes, pitches, int width, int height,
                         size_t dst, Py_ssize_t row_stride, *, int out_width=-1, int out_height=-1,
                         int crop_left=0, int crop_top=0, int colorspace=2, int color_range=1,
                         Sync sync=None, bint hwaccel=False, int rotation=0, bint as_float=False):
    """Convert one frame of ``pix_fmt`` into ``dst``, of out_width x out_height (default: the frame's
    size turned by ``rotation``): a device frame (NVDEC's when ``sync`` is given, FFmpeg hwaccel's when
    ``hwaccel``) for a CudaConverter, else a host frame, for either converter (the Scaler: planes
    and ``dst`` in host memory)."""
    cdef AVFrame *frame = lavu.av_frame_alloc()
    cdef uint8_t *out = <uint8_t *>dst
    if frame == NULL:
        raise MemoryError
    try:
        fill_device_frame(frame, pix_fmt, planes, pitches, width, height, crop_left, crop_top, colorspace,
                          color_range, sync, hwaccel)
        if out_width < 0:
            out_width, out_height = (height, width) if rotation in (90, 270) else (width, height)
        with nogil:
            converter.convert(frame, rotation, out, row_stride, out_width, out_height, as_float)
    finally:
        lavu.av_buffer_unref(&frame.hw_frames_ctx)
        lavu.av_frame_free(&frame)


def upload_device_frame(FrameUploader uploader, str pix_fmt, planes, pitches, int width, int height, *,
                        int crop_left=0, int crop_top=0, Sync sync=None, bint hwaccel=False):
    """A RawFrame of one device frame of ``pix_fmt`` (NVDEC's when ``sync`` is given, its display
    area at crop_left, crop_top; FFmpeg hwaccel's when ``hwaccel``), handed to ``uploader`` as a
    CUDA packet decoder hands its frames: the returned RawFrame holds the copy."""
    cdef AVFrame *frame = lavu.av_frame_alloc()
    cdef AVRational time_base
    cdef RawFrame raw
    if frame == NULL:
        raise MemoryError
    time_base.num, time_base.den = 1, 25
    try:
        fill_device_frame(frame, pix_fmt, planes, pitches, width, height, crop_left, crop_top,
                          lavu.AVCOL_SPC_BT709, lavu.AVCOL_RANGE_MPEG, sync, hwaccel)
        frame.pts = 7
        if hwaccel:     # FFmpeg crops hardware frames on the right and bottom only
            frame.width, frame.height = width + crop_left, height + crop_top
        raw = take_raw_frame(frame, time_base, 0.0, "cuda:0")
    finally:
        lavu.av_buffer_unref(&frame.hw_frames_ctx)
        lavu.av_frame_free(&frame)
    uploader.upload(raw)
    return raw
