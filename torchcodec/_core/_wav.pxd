# The WAV fast path: a RIFF/RF64 parser and a reader of PCM samples straight into caller memory.
from libc.stdint cimport int64_t, uint8_t
from torchcodec._core._avio cimport IOSource
from torchcodec._ffmpeg.avformat cimport AVIOContext


cdef enum SampleKind:
    U8
    S16
    S24
    S32
    F32
    F64


cdef class WavReader:
    cdef AVIOContext *ptr               # owned when opened from a path (avio_open), else the source's
    cdef IOSource source                # the memory/file-object source, or None
    cdef readonly object name
    cdef SampleKind kind
    cdef readonly int num_channels
    cdef readonly int sample_rate
    cdef readonly int bits_per_sample
    cdef readonly int block_align
    cdef readonly int64_t data_offset
    cdef readonly int64_t num_samples
    cdef uint8_t *buffer
    cdef int buffer_frames
    cdef int64_t delivered              # samples [.. delivered) were read by the last call

    cdef int parse(self) except -1
    cdef int skip_to(self, int64_t position) except -1
    cdef int choose_kind(self, int format_tag) except -1
    cdef int read_exactly(self, void *dst, int size) except -1
    cdef int64_t read_into(self, int64_t first, int64_t count, char *dst, Py_ssize_t channel_stride) except -1 nogil
