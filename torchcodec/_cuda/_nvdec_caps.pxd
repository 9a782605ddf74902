# What NVDEC can decode on a device: cuvidGetDecoderCaps, asked once per (device, codec, chroma
# format, bit depth), and the sentences that say why a stream is refused.
from torchcodec._core._demuxer cimport Demuxer
from torchcodec._cuda._driver cimport CudaContext, CuvidLibrary
from torchcodec._cuda._nvdec_input cimport NvdecInput
from torchcodec._ffmpeg.avcodec cimport AVCodecParameters

# The cudaVideoSurfaceFormat that keeps every bit of (cudaVideoChromaFormat, bit depth).
cdef int surface_format(int chroma, int depth) noexcept
# (cudaVideoChromaFormat, bit depth) of a stream from FFmpeg's pixel format, or (None, reason).
cdef tuple stream_chroma_and_depth(const AVCodecParameters *par)
# Why NVDEC on the context's device cannot decode (codec, chroma, depth) at width x height, or None.
cdef str refusal(CudaContext context, CuvidLibrary library, int codec, int chroma, int depth,
                 unsigned int width, unsigned int height)
# nvdec_unsupported_reason for a stream whose NvdecInput and libnvcuvid are at hand.
cdef str stream_refusal(NvdecInput source, Demuxer demuxer, int stream_index, CudaContext context,
                        CuvidLibrary library)
