# AudioConverter: decoded audio (RawAudioSamples / AVFrames) to normalised float32, resampled and
# remixed when asked (the building block, and the converter of the audio reader). It owns the
# stream's Resampler (libswresample), made when the first frame tells the input's sample rate.
from libc.stdint cimport int64_t
from torchcodec._core._resampler cimport Resampler


cdef class AudioConverter:
    cdef readonly Resampler resampler   # None until the first frame
    cdef readonly int requested_rate    # the output's sample rate (0: the input's)
    cdef readonly int requested_channels    # the output's channels (0: the input's)
    cdef readonly int out_rate          # once started
    # The building-block API's state (the audio reader keeps its own positions):
    cdef double first_pts               # pts of the first converted frame since the last reset
    cdef int64_t emitted                # output samples given out since then
    cdef object generation              # the demuxer's seek count of the samples converted (None: any)
    cdef bint drained
    cdef float *scratch                 # one frame's output, before it is copied into its array
    cdef int scratch_capacity

    # Make the Resampler for input at ``in_rate`` Hz (the reader calls it with the first frame).
    cdef int start(self, int in_rate) except -1
    cdef int ensure_scratch(self, int samples, int channels) except -1
    cdef object samples_from_scratch(self, int count, int capacity)


cdef AudioConverter audio_converter(int sample_rate, int num_channels)
