"""Decoding one stream's packets into frames with libavcodec: on the CPU, or with FFmpeg's own
CUDA hwaccel (NVDEC through libavcodec) when a CUDA device is given.

``next_frame`` is the one read-send-receive loop of the package: video and audio engines call it
for their next frame and keep their own bookkeeping of timestamps.

The CUDA hwaccel (``StreamDecoder(..., cuda_device=N, cuda_context=handle)``, the
``set_cuda_backend("ffmpeg")`` backend): FFmpeg's CUDA device is given the device's primary context
that the package retained (the one torch and cupy use too; FFmpeg's own ``primary_ctx=1`` route
refuses a primary context that another library activated first), and the decoder's ``get_format`` picks
AV_PIX_FMT_CUDA whenever libavcodec offers it. Where it is not offered (a codec or profile without
NVDEC support) or its initialisation fails, libavcodec decodes on the CPU as usual;
``hwaccel_used`` says which happened.
"""
from libc.errno cimport EAGAIN, ENOMEM
from libc.stdint cimport INT64_MIN, int64_t

from torchcodec._core._demuxer cimport Demuxer
from torchcodec._core._error cimport av_error_string, check_av
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avformat as lavf
from torchcodec._ffmpeg.avcodec cimport AVCodec, AVCodecContext, AVPacket
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg.avutil cimport AVBufferRef, AVFrame, AVPixelFormat

cdef extern from *:
    """
    /* libavutil/hwcontext_cuda.h's AVCUDADeviceContext (the same from FFmpeg 4 to 7), declared here so
     * that this FFmpeg-only module needs no CUDA header. */
    typedef struct tc_cuda_device_context { void *cuda_ctx; void *stream; void *internal; } tc_cuda_device_context;
    """
    ctypedef struct tc_cuda_device_context:
        void *cuda_ctx

# The decoder may refuse this many packets in a row (corrupt data) before decoding gives up.
cdef int MAX_BAD_PACKETS = 100


def cuda_hwaccel_unavailable_reason() -> str | None:
    """``None`` when this FFmpeg build has the CUDA hwaccel (its hwcontext lists the CUDA device
    type), else a sentence saying why it cannot be used. Whether a GPU is present is not asked here."""
    cdef lavu.AVHWDeviceType kind = lavu.av_hwdevice_iterate_types(lavu.AV_HWDEVICE_TYPE_NONE)
    while kind != lavu.AV_HWDEVICE_TYPE_NONE:      # the device types compiled into this FFmpeg
        if kind == lavu.AV_HWDEVICE_TYPE_CUDA:
            return None
        kind = lavu.av_hwdevice_iterate_types(kind)
    return (f"this FFmpeg build ({lavu.av_version_info().decode()}) has no CUDA hwaccel (its hwcontext does not "
            f"list the 'cuda' device type: FFmpeg must be configured with ffnvcodec, --enable-cuda / "
            f"--enable-nvdec); use the NVDEC backend or decode on the CPU")


cdef AVPixelFormat choose_cuda_format(AVCodecContext *context, const AVPixelFormat *formats) noexcept nogil:
    """libavcodec's get_format: AV_PIX_FMT_CUDA when offered, else what libavcodec would choose
    (a software format). libavcodec calls it again without CUDA if the hwaccel fails to start."""
    cdef const AVPixelFormat *offered = formats
    while offered[0] != lavu.AV_PIX_FMT_NONE:
        if offered[0] == lavu.AV_PIX_FMT_CUDA:
            return lavu.AV_PIX_FMT_CUDA
        offered += 1
    return lavc.avcodec_default_get_format(context, formats)


cdef bint leaves_out_only_unreferenced(const lavc.AVCodecParameters *par) noexcept nogil:
    """Whether AVDISCARD_NONREF leaves out only pictures that no other picture references.
    H.264: NAL units with nal_ref_idc 0. HEVC: "sub-layer non-reference" pictures, which pictures
    of higher temporal sub-layers may still reference; so only for streams with one sub-layer, as
    the hvcC record says (byte 21, bits 3-5: numTemporalLayers; Annex B streams do not say)."""
    if par.codec_id == lavc.AV_CODEC_ID_H264:
        return True
    if par.codec_id == lavc.AV_CODEC_ID_HEVC:
        return (par.extradata_size >= 23 and par.extradata[0] == 1
                and ((par.extradata[21] >> 3) & 7) == 1)
    return False


cdef class FrameDecoder:
    """The interface the video engine decodes through (see _decoder.pxd); StreamDecoder and NVDEC's
    NvdecDecoder implement it."""

    cdef int next_frame(self, Demuxer demuxer, AVPacket *packet, AVFrame *frame) except -1 nogil:
        with gil:
            raise NotImplementedError(f"{type(self).__name__} does not implement next_frame")

    cdef void flush(self) noexcept nogil:
        pass

    cdef int frames_in_flight(self) noexcept nogil:
        return 0

    cdef void skip_unneeded_before(self, int64_t pts) noexcept nogil:
        pass


cdef class StreamDecoder(FrameDecoder):
    """A libavcodec decoder for stream ``stream_index`` of ``demuxer``.

    ``num_threads``: 1 decodes on the calling thread; 0 lets FFmpeg choose; n > 1 uses n threads.
    ``cuda_device``: -1 decodes on the CPU; N >= 0 uses FFmpeg's CUDA hwaccel on device cuda:N,
    in ``cuda_context`` (the CUcontext handle of that device's primary context, as an int:
    ``CudaContext.handle``), whose frames are AV_PIX_FMT_CUDA frames in device memory where the
    hwaccel handles the stream (RuntimeError when this FFmpeg build lacks it or FFmpeg cannot use
    the context).
    """

    def __cinit__(self, Demuxer demuxer, int stream_index, int num_threads=1, int cuda_device=-1,
                  size_t cuda_context=0):
        self.ptr = NULL
        self.stream_index = stream_index
        self.input_done = False
        self.output_done = False
        self.bad_packets = 0
        self.may_have_left_out = False
        self.refused = 0
        self.last_refusal = 0
        self.hwaccel_state = -1
        self.unneeded_before = INT64_MIN
        self.packets_skippable = 0
        if num_threads < 0:
            raise ValueError(f"num_ffmpeg_threads must be >= 0, got {num_threads}")
        cdef lavf.AVStream *st = demuxer.stream(stream_index)
        cdef const AVCodec *codec = lavc.avcodec_find_decoder(st.codecpar.codec_id)
        if codec == NULL:
            name = lavc.avcodec_get_name(st.codecpar.codec_id).decode()
            raise RuntimeError(f"stream {stream_index} uses codec {name!r}, which this FFmpeg build "
                               f"cannot decode (no decoder found)")
        self.ptr = lavc.avcodec_alloc_context3(codec)
        if self.ptr == NULL:
            raise MemoryError("avcodec_alloc_context3 failed")
        check_av(lavc.avcodec_parameters_to_context(self.ptr, st.codecpar), "avcodec_parameters_to_context")
        self.ptr.pkt_timebase = st.time_base
        self.can_skip_unneeded = leaves_out_only_unreferenced(st.codecpar)
        self.ptr.thread_count = num_threads
        if cuda_device >= 0:
            self.use_cuda_device(cuda_device, cuda_context)
        cdef int ret
        with nogil:
            ret = lavc.avcodec_open2(self.ptr, codec, NULL)
        check_av(ret, "avcodec_open2", f"codec {codec.name.decode()!r} of stream {stream_index}")

    def __dealloc__(self):
        if self.ptr != NULL:
            lavc.avcodec_free_context(&self.ptr)     # also unrefs hw_device_ctx

    cdef int use_cuda_device(self, int device, size_t context) except -1:
        """Decode with FFmpeg's CUDA hwaccel on cuda:``device``, in the CUcontext ``context``."""
        cdef AVBufferRef *device_ref = NULL
        cdef lavu.AVHWDeviceContext *hw_device
        cdef int ret
        reason = cuda_hwaccel_unavailable_reason()
        if reason is not None:
            raise RuntimeError(reason)
        if context == 0:
            raise ValueError(f"the CUDA hwaccel on cuda:{device} needs the device's CUDA context (cuda_context)")
        device_ref = lavu.av_hwdevice_ctx_alloc(lavu.AV_HWDEVICE_TYPE_CUDA)
        if device_ref == NULL:
            raise MemoryError("av_hwdevice_ctx_alloc failed")
        hw_device = <lavu.AVHWDeviceContext *>device_ref.data
        (<tc_cuda_device_context *>hw_device.hwctx).cuda_ctx = <void *>context
        with nogil:
            ret = lavu.av_hwdevice_ctx_init(device_ref)
        if ret < 0:
            lavu.av_buffer_unref(&device_ref)
        if ret == -1:       # what FFmpeg's copy of ffnvcodec's loader returns
            raise RuntimeError(f"FFmpeg could not load libcuda.so.1, or a function it needs from it, for its "
                               f"CUDA hwaccel on cuda:{device} (no NVIDIA driver, or one too old for this FFmpeg)")
        if ret < 0:
            raise RuntimeError(f"FFmpeg could not use CUDA device cuda:{device} for its hwaccel "
                               f"(av_hwdevice_ctx_init: {av_error_string(ret)}); "
                               f"torchcodec.set_log_level('error') shows FFmpeg's own message")
        self.ptr.hw_device_ctx = device_ref          # the codec context owns the reference now
        self.ptr.get_format = choose_cuda_format
        return 0

    @property
    def hwaccel_used(self):
        """None before the first frame; then whether FFmpeg's CUDA hwaccel decoded it (False on the CPU)."""
        return None if self.hwaccel_state < 0 else bool(self.hwaccel_state)

    cdef int send(self, const AVPacket *packet) noexcept nogil:
        return lavc.avcodec_send_packet(self.ptr, packet)

    cdef int receive(self, AVFrame *frame) noexcept nogil:
        return lavc.avcodec_receive_frame(self.ptr, frame)

    cdef void flush(self) noexcept nogil:
        """Forget buffered packets and frames (after a seek); the stream goes on."""
        lavc.avcodec_flush_buffers(self.ptr)
        self.input_done = False
        self.output_done = False
        self.may_have_left_out = False
        self.skip_unneeded_before(INT64_MIN)

    cdef void skip_unneeded_before(self, int64_t pts) noexcept nogil:
        self.unneeded_before = pts if self.can_skip_unneeded else INT64_MIN
        if self.unneeded_before == INT64_MIN:
            self.ptr.skip_frame = lavc.AVDISCARD_DEFAULT

    cdef int frames_in_flight(self) noexcept nogil:
        """The reorder delay (``has_b_frames``, as far as the decoder knows it yet), plus the frames
        that other threads decode ahead with frame threading on the CPU."""
        cdef int in_flight = max(self.ptr.has_b_frames, 0)
        if self.ptr.hw_device_ctx == NULL and (self.ptr.active_thread_type & lavc.FF_THREAD_FRAME):
            in_flight += max(self.ptr.thread_count, 1) - 1
        return in_flight

    cdef int next_frame(self, Demuxer demuxer, AVPacket *packet, AVFrame *frame) except -1 nogil:
        """Decode the next frame of the stream into ``frame``: 1 when one came, 0 at the end.

        Reads packets from ``demuxer`` (skipping other streams) until the decoder has a frame.
        At the end of the file, or at unreadable data, the decoder is drained. Corrupt packets are
        skipped, up to MAX_BAD_PACKETS in a row.
        """
        cdef int ret
        while True:
            if self.output_done:
                return 0
            ret = self.receive(frame)
            if ret >= 0:
                self.bad_packets = 0
                if self.hwaccel_state < 0:
                    self.hwaccel_state = frame.format == lavu.AV_PIX_FMT_CUDA
                return 1
            if ret == lavu.AVERROR_EOF:
                self.output_done = True
                return 0
            if ret != lavu.AVERROR(EAGAIN):
                self.refuse_or_raise(ret, "avcodec_receive_frame")
                continue
            if self.input_done:       # EAGAIN after the end of the stream: nothing more will come
                self.output_done = True
                return 0
            ret = demuxer.read(packet)
            if ret < 0:               # end of file, or unreadable data: decode what we have
                self.input_done = True
                ret = self.send(NULL)
                if ret < 0 and ret != lavu.AVERROR_EOF:
                    self.output_done = True
                continue
            if packet.stream_index == self.stream_index:
                if self.unneeded_before != INT64_MIN:
                    # Frame threads read the setting when the packet is submitted.
                    if packet.pts != lavu.AV_NOPTS_VALUE and packet.pts < self.unneeded_before:
                        self.ptr.skip_frame = lavc.AVDISCARD_NONREF
                        self.packets_skippable += 1
                        self.may_have_left_out = True
                    else:
                        self.ptr.skip_frame = lavc.AVDISCARD_DEFAULT
                ret = self.send(packet)
                if ret < 0 and ret != lavu.AVERROR(EAGAIN):
                    self.refuse_or_raise(ret, "avcodec_send_packet")
            lavc.av_packet_unref(packet)

    cdef int refuse_or_raise(self, int ret, const char *where) except -1 nogil:
        """A decoding error: skip the bad data, unless memory ran out or too much data is bad."""
        self.bad_packets += 1
        self.refused += 1
        self.last_refusal = ret
        if ret == lavu.AVERROR(ENOMEM) or self.bad_packets > MAX_BAD_PACKETS:
            with gil:
                raise RuntimeError(f"decoding failed: {where.decode()} returned {av_error_string(ret)}"
                                   f" ({self.bad_packets} errors in a row)")
        return 0

