"""The WAV fast path: parse the RIFF (or RF64) header, then read PCM samples straight into the
caller's float32 channel rows, without a demuxer, a decoder or a resampler.

Conversions are libswresample's, so the values equal AudioDecoder's bit for bit: u8 (x - 128) / 128,
s16 x / 2^15, s24 x / 2^23 (FFmpeg widens s24 to s32: (x << 8) / 2^31 is the same), s32 rounded
to float then / 2^31, f32 as is, f64 rounded to float. Samples are little-endian, as WAV is.
"""
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdio cimport SEEK_SET
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy

from torchcodec._core._avio cimport IOSource
from torchcodec._core._error cimport check_av
from torchcodec._core._error import InvalidArgumentError
from torchcodec._ffmpeg cimport avformat as lavf
from torchcodec._ffmpeg cimport avutil as lavu

cdef int BUFFER_BYTES = 1 << 18
cdef int WAVE_FORMAT_PCM = 1
cdef int WAVE_FORMAT_IEEE_FLOAT = 3
cdef int WAVE_FORMAT_EXTENSIBLE = 0xFFFE
cdef int MAX_CHUNKS = 10000

KIND_NAMES = {U8: ("pcm_u8", "u8"), S16: ("pcm_s16le", "s16"), S24: ("pcm_s24le", "s32"),
              S32: ("pcm_s32le", "s32"), F32: ("pcm_f32le", "flt"), F64: ("pcm_f64le", "dbl")}


class UnsupportedWavError(InvalidArgumentError):
    """Not a WAV file, or a WAV file whose sample format the fast path does not read (AudioDecoder
    does). A ValueError, and a RuntimeError as TorchCodec raises."""


cdef inline uint32_t le32(const uint8_t *p) noexcept nogil:
    return p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef inline uint16_t le16(const uint8_t *p) noexcept nogil:
    return p[0] | (<uint16_t>p[1] << 8)


cdef inline int64_t le64(const uint8_t *p) noexcept nogil:
    return <int64_t>(le32(p) | (<uint64_t>le32(p + 4) << 32))


cdef class WavReader:
    """Reads ``source``: a path/URL (``str``) or an ``IOSource`` (memory or file object)."""

    def __cinit__(self, source, name=None):
        self.ptr = NULL
        self.source = None
        self.buffer = NULL
        self.delivered = 0
        cdef bytes url
        cdef const char *c_url
        cdef int ret
        if isinstance(source, IOSource):
            self.source = source
            self.ptr = self.source.ptr
            self.name = name or "the in-memory/file-object source"
        elif isinstance(source, str):
            self.name = repr(source)
            url = source.encode("utf-8", "surrogateescape")
            c_url = url
            with nogil:
                ret = lavf.avio_open(&self.ptr, c_url, lavf.AVIO_FLAG_READ)
            check_av(ret, "avio_open", self.name)
        else:
            raise TypeError(f"WavReader needs a str path/URL or an IOSource, not {type(source).__name__}")
        self.parse()
        self.buffer_frames = max(1, BUFFER_BYTES // self.block_align)
        self.buffer = <uint8_t *>malloc(<size_t>self.buffer_frames * self.block_align)
        if self.buffer == NULL:
            raise MemoryError("cannot allocate the WAV read buffer")

    def __dealloc__(self):
        free(self.buffer)
        if self.source is None and self.ptr != NULL:
            lavf.avio_closep(&self.ptr)

    cdef int read_exactly(self, void *dst, int size) except -1:
        cdef int got
        with nogil:
            got = lavf.avio_read(self.ptr, <unsigned char *>dst, size)
        if self.source is not None:
            self.source.raise_pending()
        if got != size:
            if got < 0 and got != lavu.AVERROR_EOF:
                check_av(got, "avio_read", self.name)
            raise UnsupportedWavError(f"{self.name} is not a WAV file: its header ends early")
        return 0

    cdef int parse(self) except -1:
        """Read the RIFF/RF64 header: the fmt chunk, and where the data chunk starts and ends."""
        cdef uint8_t head[12]
        cdef uint8_t chunk[8]
        cdef uint8_t fmt[40]
        cdef int64_t position = 12, size, rf64_data_size = -1, file_size
        cdef uint32_t chunk_size
        cdef int format_tag = 0, found_fmt = 0, i, fmt_bytes
        self.read_exactly(head, 12)
        if memcmp(head + 8, b"WAVE", 4) != 0 or (memcmp(head, b"RIFF", 4) != 0 and memcmp(head, b"RF64", 4) != 0):
            raise UnsupportedWavError(f"Missing RIFF header: {self.name} is not a WAV file (no RIFF/RF64 WAVE header)")
        with nogil:
            file_size = lavf.avio_size(self.ptr)
        for i in range(MAX_CHUNKS):
            self.read_exactly(chunk, 8)
            chunk_size = le32(chunk + 4)
            position += 8
            if memcmp(chunk, b"ds64", 4) == 0 and chunk_size >= 16:
                self.read_exactly(fmt, 16)
                rf64_data_size = le64(fmt + 8)
                self.skip_to(position + chunk_size + (chunk_size & 1))
            elif memcmp(chunk, b"fmt ", 4) == 0:
                if chunk_size < 16:
                    raise UnsupportedWavError(f"{self.name}: the fmt chunk is too short ({chunk_size} bytes)")
                fmt_bytes = min(chunk_size, 40)
                self.read_exactly(fmt, fmt_bytes)
                format_tag = le16(fmt)
                self.num_channels = le16(fmt + 2)
                self.sample_rate = <int>le32(fmt + 4)
                self.block_align = le16(fmt + 12)
                self.bits_per_sample = le16(fmt + 14)
                if format_tag == WAVE_FORMAT_EXTENSIBLE and fmt_bytes >= 40:
                    format_tag = le16(fmt + 24)          # the sub-format GUID starts with the tag
                found_fmt = 1
                self.skip_to(position + chunk_size + (chunk_size & 1))
            elif memcmp(chunk, b"data", 4) == 0:
                if not found_fmt:
                    raise UnsupportedWavError(f"{self.name}: the data chunk comes before the fmt chunk")
                self.data_offset = position
                size = chunk_size
                if rf64_data_size >= 0 and chunk_size == 0xFFFFFFFF:
                    size = rf64_data_size
                if file_size > 0 and (size > file_size - position or chunk_size == 0xFFFFFFFF):
                    size = file_size - position             # truncated, or written without a size
                self.choose_kind(format_tag)
                self.num_samples = max(0, size) // self.block_align
                return 0
            else:
                if file_size > 0 and position + chunk_size > file_size:
                    raise UnsupportedWavError(f"{self.name}: the {chunk[:4]!r} chunk of {chunk_size} bytes runs "
                                              f"past the end of the file, and no data chunk came before it")
                self.skip_to(position + chunk_size + (chunk_size & 1))
            position += chunk_size + (chunk_size & 1)
        raise UnsupportedWavError(f"{self.name}: no data chunk in the first {MAX_CHUNKS} chunks")

    cdef int skip_to(self, int64_t position) except -1:
        cdef int64_t ret
        with nogil:
            ret = lavf.avio_seek(self.ptr, position, SEEK_SET)
        if self.source is not None:
            self.source.raise_pending()
        if ret < 0:
            check_av(<int>ret, "avio_seek", self.name)
        return 0

    cdef int choose_kind(self, int format_tag) except -1:
        cdef int bits = self.bits_per_sample
        if self.num_channels <= 0 or self.sample_rate <= 0:
            raise UnsupportedWavError(f"{self.name}: {self.num_channels} channels at {self.sample_rate} Hz")
        if format_tag == WAVE_FORMAT_PCM and bits in (8, 16, 24, 32):
            self.kind = {8: U8, 16: S16, 24: S24, 32: S32}[bits]
        elif format_tag == WAVE_FORMAT_IEEE_FLOAT and bits in (32, 64):
            self.kind = F32 if bits == 32 else F64
        else:
            raise UnsupportedWavError(
                f"{self.name}: WAV format tag {format_tag} with {bits} bits per sample is not read by "
                f"WavDecoder (it reads 8/16/24/32-bit PCM and 32/64-bit float); use AudioDecoder")
        if self.block_align != self.num_channels * (bits // 8):
            raise UnsupportedWavError(f"{self.name}: block align {self.block_align} does not match "
                                      f"{self.num_channels} channels of {bits} bits")
        return 0

    @property
    def codec(self):
        return KIND_NAMES[self.kind][0]

    @property
    def sample_format(self):
        return KIND_NAMES[self.kind][1]

    cdef int64_t read_into(self, int64_t first, int64_t count, char *dst, Py_ssize_t channel_stride) except -1 nogil:
        """Convert samples [first, first + count) into rows ``dst + c * channel_stride``; returns
        how many were read (fewer when the file ends early)."""
        cdef int64_t done = 0, ret
        cdef int frames, got
        ret = lavf.avio_seek(self.ptr, self.data_offset + first * self.block_align, SEEK_SET)
        if ret < 0:
            with gil:
                if self.source is not None:
                    self.source.raise_pending()
                check_av(<int>ret, "avio_seek", self.name)
        while done < count:
            frames = <int>min(<int64_t>self.buffer_frames, count - done)
            got = lavf.avio_read(self.ptr, self.buffer, frames * self.block_align)
            if got < 0:
                with gil:
                    if self.source is not None:
                        self.source.raise_pending()
                    if got != lavu.AVERROR_EOF:
                        check_av(got, "avio_read", self.name)
                break
            frames = got // self.block_align
            convert(self.kind, self.buffer, frames, self.num_channels, dst, channel_stride, done)
            done += frames
            if got < frames * self.block_align or frames == 0:
                break
        if self.source is not None:
            with gil:
                self.source.raise_pending()
        return done

    def read(self, int64_t first, int64_t stop, size_t address, Py_ssize_t channel_stride, int64_t capacity):
        """Write samples [first, stop) (stop < 0: to the end), at most ``capacity``, as float32 rows
        at ``address + c * channel_stride``; return how many came (AudioStream.read's contract)."""
        if first < 0 or capacity < 0:
            raise ValueError(f"invalid sample range: first={first}, capacity={capacity}")
        cdef int64_t end = self.num_samples if stop < 0 else min(stop, self.num_samples)
        cdef int64_t count = max(0, min(end - first, capacity))
        cdef int64_t done
        with nogil:
            done = self.read_into(first, count, <char *>address, channel_stride)
        self.delivered = first + done
        return done

    @property
    def at_end(self):
        return self.delivered >= self.num_samples


cdef void convert(SampleKind kind, const uint8_t *src, int frames, int channels, char *dst,
                  Py_ssize_t channel_stride, int64_t offset) noexcept nogil:
    """Interleaved little-endian samples to planar float32, with libswresample's arithmetic."""
    cdef int i, c
    cdef float *row
    cdef int32_t v
    cdef double d
    cdef float f
    for c in range(channels):
        row = <float *>(dst + c * channel_stride) + offset
        if kind == U8:
            for i in range(frames):
                row[i] = <float>((<int>src[i * channels + c] - 0x80) * (1.0 / (1 << 7)))
        elif kind == S16:
            for i in range(frames):
                row[i] = (<const int16_t *>src)[i * channels + c] * (1.0 / (1 << 15))
        elif kind == S24:
            for i in range(frames):
                v = <int32_t>(<uint32_t>src[3 * (i * channels + c)] << 8
                              | <uint32_t>src[3 * (i * channels + c) + 1] << 16
                              | <uint32_t>src[3 * (i * channels + c) + 2] << 24)
                row[i] = <float>v * (1.0 / 2147483648.0)
        elif kind == S32:
            for i in range(frames):
                memcpy(&v, src + 4 * (i * channels + c), 4)
                row[i] = <float>v * (1.0 / 2147483648.0)
        elif kind == F32:
            for i in range(frames):
                memcpy(&f, src + 4 * (i * channels + c), 4)
                row[i] = f
        else:
            for i in range(frames):
                memcpy(&d, src + 8 * (i * channels + c), 8)
                row[i] = <float>d
