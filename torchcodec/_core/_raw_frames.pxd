# RawFrame and RawAudioSamples: decoded frames as the codec made them (no conversion), each owning
# one AVFrame reference; what the packet decoders hand to Python callers and the converters take.
from torchcodec._ffmpeg.avutil cimport AVFrame, AVRational


cdef class FrameReference:
    cdef AVFrame *ptr                   # owned: a second reference to a RawFrame's buffers (for its planes)


cdef class RawFrame:
    cdef AVFrame *ptr                   # owned
    cdef readonly double pts_seconds
    cdef readonly double duration_seconds
    cdef readonly double rotation       # counter-clockwise degrees that make it upright (0: none)
    cdef readonly object device         # "cpu" or "cuda:N": where the samples are
    cdef public object storage_cuda     # the CUDA allocation behind the planes (None on the CPU)
    cdef object _planes                 # the planes, made when first asked for

    cdef list component_views(self)     # per component: (address, rows, columns, (strides), dtype)


cdef class RawAudioSamples:
    cdef AVFrame *ptr                   # owned
    cdef readonly int sample_rate
    cdef readonly double pts_seconds
    cdef readonly double duration_seconds
    cdef readonly object _generation    # the demuxer's seek count of the packets it came from
    cdef object _data

    cdef object copy_samples(self)


# Wrap a decoded frame (its references are moved into the new object; ``frame`` is left empty).
cdef RawFrame take_raw_frame(AVFrame *frame, AVRational time_base, double rotation, object device)
cdef RawAudioSamples take_raw_audio(AVFrame *frame, AVRational time_base, object generation)
