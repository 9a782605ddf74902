# Stream encoders: each owns an AVCodecContext (ptr) and writes its packets to a Muxer.
# VideoStreamEncoder converts the caller's RGB frames with swscale; AudioStreamEncoder converts the
# caller's float32 samples with a Resampler and cuts them into the codec's frames with an AVAudioFifo.
from libc.stdint cimport int64_t, uint8_t
from torchcodec._core._muxer cimport Muxer
from torchcodec._core._resampler cimport Resampler
from torchcodec._ffmpeg.avcodec cimport AVCodec, AVCodecContext, AVPacket
from torchcodec._ffmpeg.avformat cimport AVStream
from torchcodec._ffmpeg.avutil cimport AVAudioFifo, AVFrame
from torchcodec._ffmpeg.swscale cimport SwsContext

cdef enum:
    NUM_INPUT_LAYOUTS = 2     # the swscale input formats of frames: planar (GBRP) and packed (RGB24)
    MAX_AUDIO_CHANNELS = 64


cdef class StreamEncoder:
    cdef AVCodecContext *ptr
    cdef const AVCodec *codec
    cdef readonly Muxer muxer
    cdef AVStream *stream               # owned by the muxer's context
    cdef AVPacket *packet
    cdef AVFrame *frame                 # the frame handed to the codec (its buffers reused when free)
    cdef int64_t next_pts               # in the codec's time base
    cdef readonly bint finished
    cdef bint min_duration_one          # a packet without a duration lasts one tick (video)

    cdef int open_codec(self) except -1
    cdef int send(self, AVFrame *frame) except -1 nogil


cdef class VideoStreamEncoder(StreamEncoder):
    cdef readonly int width
    cdef readonly int height
    cdef SwsContext *scalers[NUM_INPUT_LAYOUTS]
    cdef int dst_range                  # swscale's output range: 0 limited, 1 full
    cdef uint8_t *scratch               # a frame gathered into planar RGB
    cdef Py_ssize_t scratch_stride

    cdef SwsContext *scaler(self, int layout) except NULL nogil
    cdef int choose_colours(self) except -1
    cdef int ensure_scratch(self) except -1 nogil
    cdef int encode_frame(self, const uint8_t **planes, const int *strides, int layout) except -1 nogil


cdef class AudioStreamEncoder(StreamEncoder):
    cdef readonly int in_rate
    cdef readonly int in_channels
    cdef readonly int out_rate
    cdef readonly int out_channels
    cdef readonly int frame_size
    cdef Resampler resampler            # None: the samples go to the FIFO as they are
    cdef AVAudioFifo *fifo
    cdef float *gathered                # a chunk of input copied into channel rows
    cdef uint8_t *converted             # the resampler's output for a chunk
    cdef int converted_capacity         # in samples
    cdef uint8_t *converted_planes[MAX_AUDIO_CHANNELS]

    cdef int ensure_converted(self, int samples) except -1 nogil
    cdef int push(self, const uint8_t **planes, int count) except -1 nogil
    cdef int encode_fifo(self, bint final) except -1 nogil
