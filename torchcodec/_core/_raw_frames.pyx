"""Decoded frames as the codec made them: ``RawFrame`` (video) and ``RawAudioSamples`` (audio).

Each owns one reference to a decoded AVFrame. A RawFrame's ``planes`` view the decoder's own
memory (no copy, no conversion): one 2-D array per component, in the bridge's array type, which
keeps the frame alive. A ColorConverter turns a RawFrame into an RGB ``Frame``; an AudioConverter
turns RawAudioSamples into normalised float32 ``AudioSamples``. Both are process-local: they cannot
be pickled (their memory is FFmpeg's, in this process).
"""
from libc.stdint cimport int64_t
from libc.string cimport memcpy

from torchcodec._core._frame_index cimport ticks_to_seconds
from torchcodec._outputs._host_array cimport HostArray, host_array
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport ffcompat
from torchcodec._ffmpeg.avutil cimport AVFrame, AVRational

from torchcodec import _outputs
from torchcodec._core._devices import device_parts

# Sample formats (packed or planar) -> the dtype that holds their samples exactly.
cdef dict SAMPLE_DTYPES = {
    lavu.AV_SAMPLE_FMT_U8: "uint8", lavu.AV_SAMPLE_FMT_S16: "int16", lavu.AV_SAMPLE_FMT_S32: "int32",
    lavu.AV_SAMPLE_FMT_S64: "int64", lavu.AV_SAMPLE_FMT_FLT: "float32", lavu.AV_SAMPLE_FMT_DBL: "float64",
}


cdef str color_text(const char *name):
    """FFmpeg's name of a colour property ("unknown" for unspecified values, as FFmpeg names them)."""
    return name.decode() if name != NULL else "unknown"


cdef RawFrame take_raw_frame(AVFrame *frame, AVRational time_base, double rotation, object device):
    cdef RawFrame raw = RawFrame.__new__(RawFrame)
    lavu.av_frame_move_ref(raw.ptr, frame)
    raw.pts_seconds = ticks_to_seconds(ffcompat.tc_frame_pts(raw.ptr), time_base.num, time_base.den)
    raw.duration_seconds = ticks_to_seconds(ffcompat.tc_frame_duration(raw.ptr), time_base.num, time_base.den)
    raw.rotation = rotation
    raw.device = device
    return raw


cdef RawAudioSamples take_raw_audio(AVFrame *frame, AVRational time_base, object generation):
    cdef RawAudioSamples raw = RawAudioSamples.__new__(RawAudioSamples)
    lavu.av_frame_move_ref(raw.ptr, frame)
    raw.sample_rate = raw.ptr.sample_rate
    raw.pts_seconds = ticks_to_seconds(ffcompat.tc_frame_pts(raw.ptr), time_base.num, time_base.den)
    cdef int64_t duration = ffcompat.tc_frame_duration(raw.ptr)   # the packet's (trimmed at the end)
    if duration > 0:
        raw.duration_seconds = ticks_to_seconds(duration, time_base.num, time_base.den)
    else:
        raw.duration_seconds = raw.ptr.nb_samples / <double>raw.ptr.sample_rate if raw.ptr.sample_rate > 0 else 0.0
    raw._generation = generation if generation is not None else 0
    return raw


def _refuse_pickling(name, hint):
    raise TypeError(f"{name} cannot be pickled, copied or sent to another process: it is a handle to an FFmpeg "
                    f"object that only exists in this one. {hint}")


cdef class FrameReference:
    """Owns a reference to a frame's buffers: what a RawFrame's planes keep alive. The planes keep
    this, not the RawFrame (which caches them), so that no reference cycle keeps frames in memory
    until a garbage collection."""

    def __cinit__(self):
        self.ptr = lavu.av_frame_alloc()
        if self.ptr == NULL:
            raise MemoryError("av_frame_alloc failed")

    def __dealloc__(self):
        lavu.av_frame_free(&self.ptr)


cdef class RawFrame:
    """One decoded video frame, exactly as the decoder produced it (made by a VideoPacketDecoder).

    Nothing is converted: the samples are in the codec's pixel format (usually YUV), on the
    decoder's device, and ``width``, ``height`` and ``planes`` are before rotation (``rotation``
    says how to turn it upright; a ColorConverter does). Read the samples directly::

        for packet in demuxer:
            for raw_frame in packet_decoder.decode(packet):
                y, u, v = raw_frame.planes      # yuv420p 480x270: y (270, 480), u and v (135, 240)

    Attributes:
        pts_seconds (float): the frame's presentation timestamp.
        duration_seconds (float): how long it is displayed.
        storage_cuda: the CUDA allocation behind ``planes`` (None on the CPU): a torch CUDA tensor, a
            cupy array or a DeviceBuffer of uint8, written on the output library's stream that was
            current when the decoder produced the frame (for ``torch.Tensor.record_stream`` when the
            frame is read on another stream; do not read or write it directly).
    """

    def __cinit__(self):
        self.ptr = lavu.av_frame_alloc()
        if self.ptr == NULL:
            raise MemoryError("av_frame_alloc failed")
        self.storage_cuda = None
        self._planes = None
        self.device = "cpu"

    def __init__(self, *args, **kwargs):
        raise TypeError("RawFrame cannot be built directly: a VideoPacketDecoder makes them")

    def __dealloc__(self):
        lavu.av_frame_free(&self.ptr)

    def __reduce__(self):
        _refuse_pickling("RawFrame", "Its planes are views on FFmpeg's own memory. To send the samples, copy them "
                                     "out first, or convert them with a ColorConverter and send the resulting Frame.")

    def __repr__(self):
        return (f"RawFrame(pts_seconds={self.pts_seconds}, pixel_format={self.pixel_format!r}, width={self.width}, "
                f"height={self.height}, device={self.device!r})")

    @property
    def pixel_format(self):
        """FFmpeg's pixel format name, e.g. "yuv420p". On CUDA, an NVDEC surface format ("nv12",
        "p010le", "p016le", "yuv444p", "yuv444p16le"; "p012le" with FFmpeg 6 or newer) for 4:2:0
        and 4:4:4 sources, also those decoded on the CPU and uploaded; other sources' own format
        (a 4:2:2 or RGB source decoded on the CPU), whose samples a conversion would change."""
        cdef const char *name = lavu.av_get_pix_fmt_name(<lavu.AVPixelFormat>self.ptr.format)
        return name.decode() if name != NULL else "none"

    @property
    def color_space(self):
        """FFmpeg's name of the YUV matrix, e.g. "bt709" ("unknown" when unspecified)."""
        return color_text(lavu.av_color_space_name(self.ptr.colorspace))

    @property
    def color_range(self):
        """"tv" (limited range) or "pc" (full range); "unknown" when unspecified."""
        return color_text(lavu.av_color_range_name(self.ptr.color_range))

    @property
    def color_primaries(self):
        """FFmpeg's name of the colour primaries, e.g. "bt709", "bt2020" ("unknown" when unspecified)."""
        return color_text(lavu.av_color_primaries_name(self.ptr.color_primaries))

    @property
    def color_transfer_characteristic(self):
        """FFmpeg's name of the transfer function, e.g. "bt709", "smpte2084" (PQ), "arib-std-b67" (HLG)."""
        return color_text(lavu.av_color_transfer_name(self.ptr.color_trc))

    @property
    def bit_depth(self):
        """Meaningful bits of each sample of ``planes`` (8 for 8-bit video, 10 for 10-bit): shift or
        scale by it (``y >> (bit_depth - 8)``, ``y / (2 ** bit_depth - 1)``); the planes' dtype is only
        their storage width. On CUDA, as in TorchCodec, the p016le and yuv444p16le surfaces report 16
        for content of other depths (12-bit 4:2:0 before FFmpeg 6, 10-bit 4:4:4): their samples are
        MSB-aligned, so the arithmetic above still holds."""
        cdef const lavu.AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(<lavu.AVPixelFormat>self.ptr.format)
        return desc.comp[0].depth if desc != NULL else 0

    @property
    def width(self):
        """Width of the decoded samples, before rotation."""
        return self.ptr.width

    @property
    def height(self):
        """Height of the decoded samples, before rotation."""
        return self.ptr.height

    @property
    def planes(self):
        """The decoder's own samples as 2-D arrays (the bridge's type), with no copy and no
        conversion: one per component, in the order ``pixel_format`` describes them (yuv420p and
        nv12: y, u, v; yuva420p: y, u, v, a; gray: y), uint8 or uint16 as ``bit_depth`` needs.

        Luma and alpha are ``height`` x ``width``; chroma is subsampled as the format says (odd
        sizes round up). The views are strided in general (FFmpeg pads rows; semi-planar formats
        interleave U and V). On CUDA they are device arrays of ``storage_cuda``'s library (torch
        CUDA tensors, cupy arrays or torchcodec's DeviceBuffers), always on the decoder's device,
        also when it fell back to decoding on the CPU. RuntimeError for formats that cannot be
        viewed without a copy (sub-byte packed, palettised, float, big-endian 16-bit) and for
        frames stored bottom-up.
        """
        if self._planes is None:
            if self.device != "cpu":
                views = [(address, (height, width), strides, dtype)
                         for address, height, width, strides, dtype in self.component_views()]
                self._planes = device_parts(self.device).device_planes(self, views)
            else:
                self._planes = tuple(_outputs.from_host(plane) for plane in self.host_planes())
        return self._planes

    def host_planes(self):
        """``planes`` as HostArrays (the engine's own strided views of the frame's memory), owned by
        a FrameReference to the frame's buffers (not by the frame, which caches its planes)."""
        cdef Py_ssize_t shape[2]
        cdef Py_ssize_t strides[2]
        if self.device != "cpu":
            raise RuntimeError(f"the frame's samples are on {self.device}: read its planes there (planes)")
        views = self.component_views()
        cdef FrameReference owner = FrameReference()
        if lavu.av_frame_ref(owner.ptr, self.ptr) < 0:       # the same buffers, the same addresses
            raise MemoryError("av_frame_ref failed")
        planes = []
        for address, height, width, (row_stride, step), dtype in views:
            shape[0], shape[1] = height, width
            strides[0], strides[1] = row_stride, step
            planes.append(host_array(owner, <char *><size_t>address, 2, shape, strides, dtype, False))
        return tuple(planes)

    cdef list component_views(self):
        """Where each component's samples are: (address, rows, columns, (row stride, column stride)
        in bytes, dtype), from the pixel format's descriptor (host or device memory alike)."""
        cdef const lavu.AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(<lavu.AVPixelFormat>self.ptr.format)
        cdef const lavu.AVComponentDescriptor *comp
        cdef int c, element, width, height
        cdef bint chroma
        if desc == NULL:
            raise RuntimeError(f"Cannot expose the frame's planes as a view: it has no pixel format ({self.ptr.format})")
        name = desc.name.decode()
        refusal = f"Cannot expose {name} as a view"
        if desc.flags & lavu.AV_PIX_FMT_FLAG_HWACCEL:
            raise RuntimeError(f"{refusal}: it is a hardware frame, whose samples are in device memory")
        if desc.flags & (lavu.AV_PIX_FMT_FLAG_BITSTREAM | lavu.AV_PIX_FMT_FLAG_PAL | lavu.AV_PIX_FMT_FLAG_FLOAT):
            raise RuntimeError(f"{refusal}: its samples are packed below a byte, palettised or float; convert the "
                               f"frame with a ColorConverter instead")
        views = []
        for c in range(desc.nb_components):
            comp = &desc.comp[c]
            element = 1 if comp.depth <= 8 else 2
            if element == 1 and (comp.depth != 8 or comp.shift != 0):
                raise RuntimeError(f"{refusal}: component {c} is packed in {comp.depth} bits")
            if element == 2 and (comp.step % 2 or comp.offset % 2 or comp.depth + comp.shift > 16
                                 or not (comp.shift == 0 or comp.depth + comp.shift == 16)
                                 or desc.flags & lavu.AV_PIX_FMT_FLAG_BE):
                raise RuntimeError(f"{refusal}: component {c} is not stored as native uint16 samples")
            if self.ptr.linesize[comp.plane] < 0:
                raise RuntimeError(f"{refusal}: the frame is stored bottom-up (negative line size)")
            chroma = (c == 1 or c == 2) and not (desc.flags & lavu.AV_PIX_FMT_FLAG_RGB)
            width, height = self.ptr.width, self.ptr.height
            if chroma:
                width = -((-width) >> desc.log2_chroma_w)          # rounded up
                height = -((-height) >> desc.log2_chroma_h)
            views.append((<size_t>self.ptr.data[comp.plane] + comp.offset, height, width,
                          (self.ptr.linesize[comp.plane], comp.step), "uint8" if element == 1 else "uint16"))
        return views


cdef class RawAudioSamples:
    """One decoded audio frame's samples, exactly as the decoder produced them (made by an
    AudioPacketDecoder; an AudioConverter turns them into normalised float32 AudioSamples).

    Attributes:
        data: a contiguous (num_channels, num_samples) array (the bridge's type) in the dtype that
            holds the source's samples exactly: uint8 for u8, int16 for s16, int32 for s32, int64 for
            s64, float32 for flt, float64 for dbl, whatever the layout (planar or packed): it is a
            copy, made when first read. Integer samples are not normalised.
        sample_rate (int): the source's sample rate in Hz.
        pts_seconds (float): the presentation timestamp of the first sample.
        duration_seconds (float): how long the samples last (the packet's duration, which the
            container may trim at the end of the stream; else num_samples / sample_rate).
    """

    def __cinit__(self):
        self.ptr = lavu.av_frame_alloc()
        if self.ptr == NULL:
            raise MemoryError("av_frame_alloc failed")
        self._data = None
        self._generation = 0

    def __init__(self, *args, **kwargs):
        raise TypeError("RawAudioSamples cannot be built directly: an AudioPacketDecoder makes them")

    def __dealloc__(self):
        lavu.av_frame_free(&self.ptr)

    def __reduce__(self):
        _refuse_pickling("RawAudioSamples", "Send its data (an array) instead, or the AudioSamples an "
                                            "AudioConverter makes of it.")

    def __repr__(self):
        return (f"RawAudioSamples(num_channels={self.num_channels}, num_samples={self.num_samples}, "
                f"sample_rate={self.sample_rate}, pts_seconds={self.pts_seconds})")

    @property
    def num_channels(self):
        """The number of channels (``data.shape[0]``)."""
        return self.ptr.ch_layout.nb_channels

    @property
    def num_samples(self):
        """The number of samples per channel (``data.shape[1]``)."""
        return self.ptr.nb_samples

    @property
    def sample_format(self):
        """FFmpeg's name of the decoded sample format, e.g. "fltp" (what ``data`` was copied from)."""
        cdef const char *name = lavu.av_get_sample_fmt_name(<lavu.AVSampleFormat>self.ptr.format)
        return name.decode() if name != NULL else "none"

    @property
    def data(self):
        if self._data is None:
            self._data = self.copy_samples()
        return self._data

    cdef object copy_samples(self):
        """The samples as a new contiguous (channels, samples) array of the bridge's library."""
        cdef lavu.AVSampleFormat packed = lavu.av_get_packed_sample_fmt(<lavu.AVSampleFormat>self.ptr.format)
        dtype = SAMPLE_DTYPES.get(packed)
        if dtype is None:
            raise RuntimeError(f"sample format {self.sample_format} has no array dtype")
        cdef int channels = self.ptr.ch_layout.nb_channels, samples = self.ptr.nb_samples
        cdef int size = lavu.av_get_bytes_per_sample(packed)
        cdef bint planar = lavu.av_sample_fmt_is_planar(<lavu.AVSampleFormat>self.ptr.format)
        memory = _outputs.allocate((channels, samples), dtype, bridge=_outputs.host_bridge())
        cdef char *dst = <char *><size_t>memory.address
        cdef const char *src
        cdef int c, s
        cdef size_t row = <size_t>samples * size
        with nogil:
            for c in range(channels):
                if planar:
                    memcpy(dst + c * row, self.ptr.extended_data[c], row)
                else:
                    src = <const char *>self.ptr.extended_data[0] + c * size
                    for s in range(samples):
                        memcpy(dst + c * row + <size_t>s * size, src + <size_t>s * channels * size, size)
        return memory.finish()
