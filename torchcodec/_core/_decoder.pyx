"""Decoding one stream's packets into frames with libavcodec on the CPU."""
from torchcodec._core._demuxer cimport Demuxer
from torchcodec._core._error cimport check_av
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avformat as lavf
from torchcodec._ffmpeg.avcodec cimport AVCodec, AVPacket
from torchcodec._ffmpeg.avutil cimport AVFrame


cdef class StreamDecoder:
    """A libavcodec decoder for stream ``stream_index`` of ``demuxer``.

    ``num_threads``: 1 decodes on the calling thread; 0 lets FFmpeg choose; n > 1 uses n threads.
    """

    def __cinit__(self, Demuxer demuxer, int stream_index, int num_threads=1):
        self.ptr = NULL
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
        self.ptr.thread_count = num_threads
        cdef int ret
        with nogil:
            ret = lavc.avcodec_open2(self.ptr, codec, NULL)
        check_av(ret, "avcodec_open2", f"codec {codec.name.decode()!r} of stream {stream_index}")

    def __dealloc__(self):
        if self.ptr != NULL:
            lavc.avcodec_free_context(&self.ptr)

    cdef int send(self, const AVPacket *packet) noexcept nogil:
        return lavc.avcodec_send_packet(self.ptr, packet)

    cdef int receive(self, AVFrame *frame) noexcept nogil:
        return lavc.avcodec_receive_frame(self.ptr, frame)

    cdef void flush(self) noexcept nogil:
        lavc.avcodec_flush_buffers(self.ptr)

