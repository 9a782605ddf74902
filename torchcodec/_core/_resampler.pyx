"""Audio conversion with libswresample: any input sample format, rate and channel layout to the
output sample format (planar float32 unless asked otherwise), rate and channel count.

Decoding configures the context from the first decoded frame (formats can differ from what the
container says) and reconfigures it when a frame's format or layout changes; encoding sets its
input once (``set_input``) and asks for the encoder's sample format. ``restart`` throws away the
resampling history, for seeks: the caller then feeds samples from an aligned input position, so
that the output continues exactly as an unbroken run would (see _audio.pyx).

Before each ``swr_init`` that resamples, ``filter_memory`` sizes what libswresample will allocate
for it (its filter bank, which a hostile sample rate makes hundreds of MB, and the filter's input
history), and the memory limit (torchcodec._memory.check_request) refuses it beyond the limit.
"""
import math

from libc.errno cimport EINVAL

from torchcodec._core._error cimport check_av
from torchcodec._core._error import InvalidArgumentError
from torchcodec._memory import MemoryLimitError, check_request
from torchcodec._sizes import describe_bytes
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport ffcompat
from torchcodec._ffmpeg cimport swresample as swr
from torchcodec._ffmpeg.avutil cimport AVChannelLayout, AVFrame, AVSampleFormat
from libc.stdint cimport uint8_t
from libc.string cimport memcpy


cdef class Resampler:
    """Converts frames to ``out_format`` (a sample format, planar float32 by default) with
    ``out_rate`` samples per second and ``out_channels`` channels (0: keep the input's)."""

    def __cinit__(self, int in_rate, int out_rate, int out_channels, int out_format=lavu.AV_SAMPLE_FMT_FLTP):
        self.ptr = NULL
        self.in_format = -1
        self.out_format = out_format
        self.in_rate = in_rate
        self.out_rate = out_rate if out_rate > 0 else in_rate
        self.out_channels = out_channels
        self.started = False
        if self.in_rate <= 0:
            raise InvalidArgumentError(f"the stream's sample rate is unknown ({in_rate}); it cannot be decoded")

    def __dealloc__(self):
        swr.swr_free(&self.ptr)
        lavu.av_channel_layout_uninit(&self.in_layout)
        lavu.av_channel_layout_uninit(&self.out_layout)

    cdef int configure(self, const AVFrame *frame) except -1 nogil:
        """(Re)create the context when ``frame``'s sample format or channel layout is new. Its sample
        rate must be ``in_rate`` (the caller checks)."""
        cdef AVChannelLayout layout
        cdef int ret = ffcompat.tc_frame_channel_layout(&layout, frame)
        if ret < 0:
            with gil:
                check_av(ret, "reading the channel layout of a decoded audio frame")
        return self.set_input(frame.format, &layout)

    cdef int set_input(self, int in_format, AVChannelLayout *layout) except -1 nogil:
        """Take samples of ``in_format`` in ``layout`` (which this takes over: the caller must not
        uninit it); (re)create the context when they are new."""
        cdef int ret
        if (self.ptr != NULL and in_format == self.in_format
                and lavu.av_channel_layout_compare(layout, &self.in_layout) == 0):
            lavu.av_channel_layout_uninit(layout)
            return 0
        lavu.av_channel_layout_uninit(&self.in_layout)
        self.in_layout = layout[0]
        self.in_format = in_format
        if self.out_layout.nb_channels == 0:
            if self.out_channels == 0 or self.out_channels == layout.nb_channels:
                ret = lavu.av_channel_layout_copy(&self.out_layout, &self.in_layout)
                if ret < 0:
                    with gil:
                        check_av(ret, "av_channel_layout_copy")
            else:
                lavu.av_channel_layout_default(&self.out_layout, self.out_channels)
            self.out_channels = self.out_layout.nb_channels
        return self.restart()

    cdef int restart(self) except -1 nogil:
        """A fresh context: no buffered samples, no filter history."""
        swr.swr_free(&self.ptr)
        self.started = False
        if self.in_format < 0:
            return 0                  # not configured yet: configure() will create it
        if self.in_rate != self.out_rate:
            with gil:
                check_filter_memory(self)
        self.copies = (self.in_format == self.out_format and self.in_rate == self.out_rate
                       and lavu.av_channel_layout_compare(&self.in_layout, &self.out_layout) == 0)
        cdef int ret = swr.swr_alloc_set_opts2(
            &self.ptr, &self.out_layout, <AVSampleFormat>self.out_format, self.out_rate,
            &self.in_layout, <AVSampleFormat>self.in_format, self.in_rate, 0, NULL)
        if ret >= 0:
            ret = swr.swr_init(self.ptr)
        if ret < 0:
            swr.swr_free(&self.ptr)
            with gil:
                check_av(ret, "Couldn't initialize SwrContext: swr_init", describe_conversion(self))
        return 0

    cdef int max_output(self, int in_samples) noexcept nogil:
        """An upper bound of the samples that converting ``in_samples`` more can produce (0 before
        the first frame configured a context: a stream that ends before any frame drains nothing)."""
        if self.ptr == NULL:
            return 0
        return swr.swr_get_out_samples(self.ptr, in_samples)

    cdef int convert(self, const AVFrame *frame, int offset, int count, float **out, int capacity) except -1 nogil:
        """Convert samples [offset, offset + count) of ``frame`` into ``out`` (one float plane per
        output channel, room for ``capacity`` samples); returns the number of samples written."""
        cdef const uint8_t *planes[64]
        cdef int bytes_per_sample = lavu.av_get_bytes_per_sample(<AVSampleFormat>frame.format)
        cdef int c, planar = lavu.av_sample_fmt_is_planar(<AVSampleFormat>frame.format)
        if planar:
            if self.in_layout.nb_channels > 64:
                with gil:
                    raise InvalidArgumentError(f"{self.in_layout.nb_channels} planar channels: at most 64 are supported")
            for c in range(self.in_layout.nb_channels):
                planes[c] = frame.extended_data[c] + <size_t>offset * bytes_per_sample
        else:
            planes[0] = frame.extended_data[0] + <size_t>offset * bytes_per_sample * self.in_layout.nb_channels
        return self.convert_planes(planes, count, <uint8_t **>out, capacity)

    cdef int convert_planes(self, const uint8_t **planes, int count, uint8_t **out, int capacity) except -1 nogil:
        """Convert ``count`` samples at ``planes`` (one per channel for planar input, else one) into
        ``out`` (planes of ``out_format``, room for ``capacity`` samples); returns the number written."""
        cdef int n
        if self.copies and count <= capacity and not self.started:     # (started: swresample may hold samples)
            return self.copy_planes(planes, count, out)
        n = swr.swr_convert(self.ptr, out, capacity, planes, count)
        if n < 0:
            with gil:
                check_av(n, "swr_convert", describe_conversion(self))
        self.started = True
        return n

    cdef int copy_planes(self, const uint8_t **planes, int count, uint8_t **out) noexcept nogil:
        """convert_planes where the output's format, rate and layout are the input's: what swresample
        would write is the samples themselves, and it holds none back."""
        cdef int bytes_per_sample = lavu.av_get_bytes_per_sample(<AVSampleFormat>self.in_format)
        cdef int c, channels = self.in_layout.nb_channels
        if lavu.av_sample_fmt_is_planar(<AVSampleFormat>self.in_format):
            for c in range(channels):
                memcpy(out[c], planes[c], <size_t>count * bytes_per_sample)
        else:
            memcpy(out[0], planes[0], <size_t>count * bytes_per_sample * channels)
        return count

    cdef int drain(self, uint8_t **out, int capacity) except -1 nogil:
        """The samples still inside the resampler at the end of the stream."""
        if self.ptr == NULL or not self.started:
            return 0
        cdef int n = swr.swr_convert(self.ptr, out, capacity, NULL, 0)
        if n < 0:
            with gil:
                check_av(n, "swr_convert (drain)", describe_conversion(self))
        return n


# libswresample's defaults (options.c), which restart() keeps: filter_size 32, phase_shift 10,
# cutoff 0.97, exact_rational on.
SWR_FILTER_SIZE = 32
SWR_PHASES = 1 << 10
SWR_CUTOFF = 0.97
# A filter bank larger than this is refused whatever the memory limit: libswresample computes
# every coefficient in swr_init (about 16 ms per MiB measured here: 1 GiB takes 16 s, and its own
# bound, 8.4 million taps or 34 GB, about 9 minutes), and no real pair of sample rates comes near
# (768 kHz to 8 kHz: 25 KB; even an odd 1,000,003 Hz to 8 kHz: 17 MB; see docs/reliability.md).
MAX_FILTER_BANK_BYTES = 1 << 30


def filter_memory(int in_rate, int out_rate, int in_sample_bytes, int out_sample_bytes, int channels):
    """``(taps, phases, element bytes, bank bytes, history bytes)``: what libswresample 5.1's
    resample_init (resample.c) allocates to resample ``in_rate`` to ``out_rate`` (Hz) with its
    default options, for samples of ``in_sample_bytes`` and ``out_sample_bytes`` and ``channels``
    channels. The bank: ``align(taps, 8) * (phases + 1)`` coefficients of the internal sample format;
    the history: ``2 * taps + 1`` samples per channel (the input buffer it keeps for the filter)."""
    factor = min(out_rate * SWR_CUTOFF / in_rate, 1.0)
    taps = max(math.ceil(SWR_FILTER_SIZE / factor), 1)
    if taps > 1:
        taps += taps % 2
    reduced = out_rate // math.gcd(out_rate, in_rate)       # av_reduce(out_rate, in_rate): exact
    phases = reduced if reduced <= SWR_PHASES else SWR_PHASES
    # swresample.c picks the internal format: s16p when both sides have <= 2 bytes per sample,
    # else fltp when the input has <= 4, else dblp.
    element = 2 if in_sample_bytes <= 2 and out_sample_bytes <= 2 else 4 if in_sample_bytes <= 4 else 8
    bank = (taps + 7) // 8 * 8 * (phases + 1) * element
    return taps, phases, element, bank, (2 * taps + 1) * channels * element


cdef int check_filter_memory(Resampler resampler) except -1:
    """Refuse (MemoryLimitError) a resampling whose filter would take more memory than the memory
    limit allows, or more than MAX_FILTER_BANK_BYTES, before swr_init allocates it."""
    taps, phases, element, bank, history = filter_memory(
        resampler.in_rate, resampler.out_rate,
        lavu.av_get_bytes_per_sample(<AVSampleFormat>resampler.in_format),
        lavu.av_get_bytes_per_sample(<AVSampleFormat>resampler.out_format),
        max(resampler.in_layout.nb_channels, resampler.out_layout.nb_channels))
    what = (f"resampling {resampler.in_rate} Hz to {resampler.out_rate} Hz (libswresample's filter bank: "
            f"{taps} taps x {phases + 1} phases x {element} bytes = {describe_bytes(bank)}, and "
            f"{describe_bytes(history)} of filter history)")
    if bank > MAX_FILTER_BANK_BYTES:
        raise MemoryLimitError(
            f"{what} needs more than the {describe_bytes(MAX_FILTER_BANK_BYTES)} allowed for a resampling "
            f"filter: the stream's sample rate ({resampler.in_rate} Hz) is not a plausible one. Nothing was "
            f"allocated.")
    check_request(what, other_bytes=bank + history)
    return 0


cdef str describe_conversion(Resampler resampler):
    cdef char in_name[128]
    cdef char out_name[128]
    lavu.av_channel_layout_describe(&resampler.in_layout, in_name, sizeof(in_name))
    lavu.av_channel_layout_describe(&resampler.out_layout, out_name, sizeof(out_name))
    fmt = lavu.av_get_sample_fmt_name(<AVSampleFormat>resampler.in_format)
    out_fmt = lavu.av_get_sample_fmt_name(<AVSampleFormat>resampler.out_format)
    return (f"{fmt.decode() if fmt != NULL else '?'} {in_name.decode()} {resampler.in_rate} Hz -> "
            f"{out_fmt.decode() if out_fmt != NULL else '?'} {out_name.decode()} {resampler.out_rate} Hz")
