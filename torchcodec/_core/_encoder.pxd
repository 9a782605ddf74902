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


cdef struct Conversion:
    # One frame's conversion from the caller's memory into an AVFrame, run on the calling thread or
    # on a helper thread while the codec encodes the frame before (see VideoStreamEncoder.add_frames).
    const uint8_t *base             # the frame: (3, height, width) at byte steps sc, sh, sw
    Py_ssize_t sc
    Py_ssize_t sh
    Py_ssize_t sw
    size_t high                     # the end of the caller's memory
    int width
    int height
    int layout                      # how it is read (InputLayout)
    SwsContext *ctx
    uint8_t *scratch                # where a gathered frame goes
    Py_ssize_t scratch_stride
    AVFrame *frame                  # the destination, with writable buffers
    int rows                        # what sws_scale returned


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
    cdef object open_error(self, int ret)
    cdef int send(self, AVFrame *frame) except -1 nogil


cdef class VideoStreamEncoder(StreamEncoder):
    cdef readonly int width
    cdef readonly int height
    cdef SwsContext *scalers[NUM_INPUT_LAYOUTS]
    cdef int dst_range                  # swscale's output range: 0 limited, 1 full
    cdef AVFrame *frames[2]             # converted frames: one is encoded while the next is converted
    cdef uint8_t *scratch[2]            # frames gathered into planar RGB, one per converted frame
    cdef Py_ssize_t scratch_stride

    cdef SwsContext *scaler(self, int layout) except NULL nogil
    cdef int choose_colours(self) except -1
    cdef int prepare(self, Conversion *job, int slot, const uint8_t *base) except -1 nogil
    cdef int ensure_scratch(self, int slot) except -1 nogil
    cdef int send_converted(self, Conversion *job) except -1 nogil


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


# What the CUDA (NVENC) stream encoder (torchcodec._cuda._nvenc) shares with the CPU one.
cdef int check_frames(bint finished, tuple shape, int height, int width) except -1
cdef str c_str(const char *text)
cdef str pixel_format_name(int pixel_format)
cdef dict codec_options(Muxer muxer, AVCodecContext *ctx, const AVCodec *codec, object crf, object preset,
                        dict extra_options)
cdef int set_codec_options(AVCodecContext *ctx, const AVCodec *codec, dict options) except -1
cdef int choose_yuv_matrix(AVCodecContext *ctx) except -1
