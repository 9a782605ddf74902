# cython: language_level=3
"""Test helper, built by tests/test_nvdec.py against the package's .pxd files (as device_frames.pyx
is): what the tests need to look inside NVDEC's decoder, which the shipped package does not offer.
``decode_frames`` drives an NvdecDecoder through PacketDecoder.next_frame (the loop the video
reader runs) and describes every frame it fills (the mapped surface, its crop and sync); ``seek``
seeks the demuxer and flushes the decoder as the video reader does; ``clock_rate`` is the parser's
ulClockRate for a time base."""
from libc.stdint cimport int64_t
from libc.string cimport memset

from torchcodec._core._demuxer cimport Demuxer
from torchcodec._cuda._driver cimport CudaContext, FrameSync, check_cu
from torchcodec._cuda._nvdec cimport NvdecDecoder
from torchcodec._cuda._nvdec cimport clock_rate as parser_clock_rate
from torchcodec._cuda cimport cuda as cu
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport ffcompat
from torchcodec._ffmpeg.avcodec cimport AVPacket
from torchcodec._ffmpeg.avutil cimport AVFrame

# The C definitions of the driver's tables and NVCUVID's types, which this helper reads (the
# package's .pxd files declare them without a header): build_helper asks pkg-config for ffnvcodec.
cdef extern from "ffnvcodec/dynlink_loader.h":
    pass


def clock_rate(int num, int den):
    return parser_clock_rate(num, den)


def seek(NvdecDecoder decoder, Demuxer demuxer, pts=None):
    """Seek the demuxer to the key frame at or before ``pts`` (None: the start) and flush the decoder."""
    cdef bint from_start = pts is None
    cdef int64_t target = 0 if from_start else pts
    cdef int index = decoder.stream_index
    with nogil:
        if from_start:
            demuxer.seek_to_start(index)
        else:
            demuxer.seek_timestamp(index, target)
        decoder.flush()


def decode_frames(NvdecDecoder decoder, Demuxer demuxer, Py_ssize_t count=-1, peek=None, int alive=2):
    """Decode up to ``count`` frames (all when negative) with next_frame, keeping the last ``alive``
    (1 to 8) frames mapped as the video reader does (it keeps two), and return one dict per frame:
    pts, duration, format (FFmpeg's name), width, height, crop_left/top/right/bottom, data (the
    three plane addresses), linesizes, has_event, bits, luma and chroma (the addresses of the first
    displayed luma sample and of the chroma sample(s) there), and "peek": ``peek(that dict)``'s
    result, called while the frame is mapped, after the host waited for its ``ready`` event (the
    decoder itself never waits). The addresses are device memory: read them with the driver
    (cuMemcpyDtoH), or as host memory with the tests' stub libnvcuvid."""
    cdef AVPacket *packet = NULL
    cdef AVFrame *frames[8]
    cdef AVFrame *frame
    cdef FrameSync *sync
    cdef CudaContext context = decoder.context
    cdef cu.CUresult ret
    cdef int got, bps, sub, i
    if not 1 <= alive <= 8:
        raise ValueError(f"alive must be between 1 and 8, got {alive}")
    memset(frames, 0, sizeof(frames))
    out = []
    try:
        packet = lavc.av_packet_alloc()
        for i in range(alive):
            frames[i] = lavu.av_frame_alloc()
            if frames[i] == NULL:
                raise MemoryError("cannot allocate frames")
        if packet == NULL:
            raise MemoryError("cannot allocate a packet")
        while count < 0 or len(out) < count:
            frame = frames[len(out) % alive]
            lavu.av_frame_unref(frame)
            with nogil:
                got = decoder.next_frame(demuxer, packet, frame)
            if not got:
                break
            bps = 2 if frame.format in (lavu.AV_PIX_FMT_P016LE, lavu.AV_PIX_FMT_YUV444P16LE) else 1
            sub = 1 if frame.format in (lavu.AV_PIX_FMT_NV12, lavu.AV_PIX_FMT_P016LE) else 0
            luma = <size_t>frame.data[0] + frame.crop_top * frame.linesize[0] + frame.crop_left * bps
            chroma = (<size_t>frame.data[1] + (frame.crop_top >> sub) * frame.linesize[1]
                      + (frame.crop_left >> sub) * bps * (2 if sub else 1))
            info = {
                "pts": frame.pts, "duration": ffcompat.tc_frame_duration(frame),
                "format": lavu.av_get_pix_fmt_name(<lavu.AVPixelFormat>frame.format).decode(),
                "width": frame.width, "height": frame.height,
                "crop_left": frame.crop_left, "crop_top": frame.crop_top,
                "crop_right": frame.crop_right, "crop_bottom": frame.crop_bottom,
                "data": [<size_t>frame.data[i] for i in range(3)],
                "linesizes": [frame.linesize[i] for i in range(3)],
                "has_event": frame.opaque != NULL, "luma": luma, "chroma": chroma,
                "bits": (<FrameSync *>frame.opaque).bits,
            }
            if peek is not None:
                sync = <FrameSync *>frame.opaque
                context.enter()
                try:
                    with nogil:
                        ret = context.driver.ptr.cuEventSynchronize(sync.ready)
                    check_cu(context.driver, ret, "cuEventSynchronize")
                finally:
                    context.exit()
            info["peek"] = peek(info) if peek is not None else None
            out.append(info)
    finally:
        for i in range(alive):
            lavu.av_frame_free(&frames[i])
        lavc.av_packet_free(&packet)
    return out
