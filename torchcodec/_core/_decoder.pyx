"""Decoding one stream's packets into frames with libavcodec on the CPU.

``next_frame`` is the one read-send-receive loop of the package: video and audio engines call it
for their next frame and keep their own bookkeeping of timestamps.
"""
from libc.errno cimport EAGAIN, ENOMEM

from torchcodec._core._demuxer cimport Demuxer
from torchcodec._core._error cimport av_error_string, check_av
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avformat as lavf
from torchcodec._ffmpeg.avcodec cimport AVCodec, AVPacket
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg.avutil cimport AVFrame

# The decoder may refuse this many packets in a row (corrupt data) before decoding gives up.
cdef int MAX_BAD_PACKETS = 100


cdef class FrameDecoder:
    """The interface the video engine decodes through (see _decoder.pxd); StreamDecoder and NVDEC's
    NvdecDecoder implement it."""

    cdef int next_frame(self, Demuxer demuxer, AVPacket *packet, AVFrame *frame) except -1 nogil:
        with gil:
            raise NotImplementedError(f"{type(self).__name__} does not implement next_frame")

    cdef void flush(self) noexcept nogil:
        pass


cdef class StreamDecoder(FrameDecoder):
    """A libavcodec decoder for stream ``stream_index`` of ``demuxer``.

    ``num_threads``: 1 decodes on the calling thread; 0 lets FFmpeg choose; n > 1 uses n threads.
    """

    def __cinit__(self, Demuxer demuxer, int stream_index, int num_threads=1):
        self.ptr = NULL
        self.stream_index = stream_index
        self.input_done = False
        self.output_done = False
        self.bad_packets = 0
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
        """Forget buffered packets and frames (after a seek); the stream goes on."""
        lavc.avcodec_flush_buffers(self.ptr)
        self.input_done = False
        self.output_done = False

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
                ret = self.send(packet)
                if ret < 0 and ret != lavu.AVERROR(EAGAIN):
                    self.refuse_or_raise(ret, "avcodec_send_packet")
            lavc.av_packet_unref(packet)

    cdef int refuse_or_raise(self, int ret, const char *where) except -1 nogil:
        """A decoding error: skip the bad data, unless memory ran out or too much data is bad."""
        self.bad_packets += 1
        if ret == lavu.AVERROR(ENOMEM) or self.bad_packets > MAX_BAD_PACKETS:
            with gil:
                raise RuntimeError(f"decoding failed: {where.decode()} returned {av_error_string(ret)}"
                                   f" ({self.bad_packets} errors in a row)")
        return 0

