"""What NVDEC can decode on a device: the capabilities of its decoders (``cuvidGetDecoderCaps``,
asked once per device, codec, chroma format and bit depth) and the refusals that follow from them.

``nvdec_unsupported_reason(demuxer, stream_index, context)`` is None when NVDEC on the context's
device decodes the stream, else a sentence saying why not: no libnvcuvid.so.1, a stream NvdecInput
cannot feed, a chroma format the CUDA converter lacks (4:2:2, 4:0:0), or what the caps refuse
(codec, chroma format, bit depth, the surface format that keeps every bit, the coded size, the
macroblock count). The decoder (torchcodec._cuda._nvdec) asks the same again in its sequence
callback with the parser's view of the bitstream, and raises ``NvdecUnsupportedError`` with the
reason when it is refused at creation.
"""
from typing import NamedTuple

from libc.string cimport memset

from torchcodec._core._demuxer cimport Demuxer
from torchcodec._cuda._driver cimport CudaContext, CuvidLibrary, check_cu
from torchcodec._cuda._nvdec_input cimport NvdecInput
from torchcodec._cuda cimport cuda as cu
from torchcodec._cuda cimport ffnvcodec   # the C definitions of the driver's tables
from torchcodec._cuda cimport nvcuvid as cuvid
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg.avcodec cimport AVCodecParameters

from torchcodec._cuda._driver import CudaUnavailableError, load_nvcuvid

# NvdecInput's codec names -> cudaVideoCodec.
CODECS = {
    "h264": cuvid.cudaVideoCodec_H264,
    "hevc": cuvid.cudaVideoCodec_HEVC,
    "av1": cuvid.cudaVideoCodec_AV1,
    "vp9": cuvid.cudaVideoCodec_VP9,
    "vp8": cuvid.cudaVideoCodec_VP8,
    "mpeg4": cuvid.cudaVideoCodec_MPEG4,
    "mpeg2": cuvid.cudaVideoCodec_MPEG2,
    "mpeg1": cuvid.cudaVideoCodec_MPEG1,
}
CODEC_NAMES = {value: name for name, value in CODECS.items()}
CHROMA_NAMES = {cuvid.cudaVideoChromaFormat_Monochrome: "4:0:0", cuvid.cudaVideoChromaFormat_420: "4:2:0",
                cuvid.cudaVideoChromaFormat_422: "4:2:2", cuvid.cudaVideoChromaFormat_444: "4:4:4"}


# ---- formats ------------------------------------------------------------------------------------

cdef tuple stream_chroma_and_depth(const AVCodecParameters *par):
    """(cudaVideoChromaFormat, bit depth) of a stream from FFmpeg's pixel format, or (None, reason)."""
    cdef const lavu.AVPixFmtDescriptor *desc = lavu.av_pix_fmt_desc_get(<lavu.AVPixelFormat>par.format)
    if desc == NULL:
        return None, "FFmpeg does not report the stream's pixel format"
    name = desc.name.decode()
    if desc.flags & (lavu.AV_PIX_FMT_FLAG_RGB | lavu.AV_PIX_FMT_FLAG_PAL | lavu.AV_PIX_FMT_FLAG_HWACCEL):
        return None, f"NVDEC does not decode pixel format {name}"
    if desc.nb_components < 3:
        return cuvid.cudaVideoChromaFormat_Monochrome, desc.comp[0].depth
    subsampling = (desc.log2_chroma_w, desc.log2_chroma_h)
    if subsampling == (1, 1):
        return cuvid.cudaVideoChromaFormat_420, desc.comp[0].depth
    if subsampling == (1, 0):
        return cuvid.cudaVideoChromaFormat_422, desc.comp[0].depth
    if subsampling == (0, 0):
        return cuvid.cudaVideoChromaFormat_444, desc.comp[0].depth
    return None, f"NVDEC does not decode pixel format {name}"


cdef int surface_format(int chroma, int depth) noexcept:
    """The cudaVideoSurfaceFormat that keeps every bit of ``chroma`` / ``depth`` (4:2:0 or 4:4:4)."""
    if chroma == cuvid.cudaVideoChromaFormat_444:
        return cuvid.cudaVideoSurfaceFormat_YUV444 if depth == 8 else cuvid.cudaVideoSurfaceFormat_YUV444_16Bit
    return cuvid.cudaVideoSurfaceFormat_NV12 if depth == 8 else cuvid.cudaVideoSurfaceFormat_P016


_caps = {}      # (device, codec, chroma, depth) -> DecoderCaps: cuvidGetDecoderCaps asked once each


class DecoderCaps(NamedTuple):
    """What cuvidGetDecoderCaps answered for one (codec, chroma format, bit depth) on one device."""
    supported: bool
    output_formats: int         # bit i: cudaVideoSurfaceFormat i
    max_width: int
    max_height: int
    max_macroblocks: int
    min_width: int
    min_height: int


cdef object decoder_caps(CudaContext context, CuvidLibrary library, int codec, int chroma, int depth):
    """cuvidGetDecoderCaps for (codec, chroma, depth) on the context's device (cached per process)."""
    cdef cuvid.CUVIDDECODECAPS caps
    cdef cu.CUresult ret
    key = (context.index, codec, chroma, depth)
    if key in _caps:
        return _caps[key]
    memset(&caps, 0, sizeof(caps))
    caps.eCodecType = <cuvid.cudaVideoCodec>codec
    caps.eChromaFormat = <cuvid.cudaVideoChromaFormat>chroma
    caps.nBitDepthMinus8 = depth - 8
    context.enter()
    try:
        with nogil:
            ret = library.ptr.cuvidGetDecoderCaps(&caps)
        check_cu(context.driver, ret, "cuvidGetDecoderCaps")
    finally:
        context.exit()
    _caps[key] = DecoderCaps(bool(caps.bIsSupported), caps.nOutputFormatMask, caps.nMaxWidth, caps.nMaxHeight,
                             caps.nMaxMBCount, caps.nMinWidth, caps.nMinHeight)
    return _caps[key]


cdef str refusal(CudaContext context, CuvidLibrary library, int codec, int chroma, int depth,
                 unsigned int width, unsigned int height):
    """Why NVDEC on this device cannot decode (codec, chroma, depth) at width x height, or None.

    Asks cuvidGetDecoderCaps (codec, chroma format, bit depth, the surface format we need, the
    coded size between the minimum and the maximum, the macroblock count). 4:2:2 and 4:0:0 are
    refused first: the CUDA converter has no kernels for them.
    """
    what = f"{CODEC_NAMES.get(codec, codec)} {CHROMA_NAMES.get(chroma, chroma)} {depth}-bit"
    if chroma not in (cuvid.cudaVideoChromaFormat_420, cuvid.cudaVideoChromaFormat_444):
        return f"torchcodec's CUDA colour conversion does not handle {what} (only 4:2:0 and 4:4:4)"
    if library.ptr.cuvidGetDecoderCaps == NULL:
        return "this driver's libnvcuvid.so.1 has no cuvidGetDecoderCaps (the NVIDIA driver is too old)"
    caps = decoder_caps(context, library, codec, chroma, depth)
    macroblocks = ((width + 15) // 16) * ((height + 15) // 16)
    if (caps.supported and caps.output_formats & (1 << surface_format(chroma, depth))
            and caps.min_width <= width <= caps.max_width and caps.min_height <= height <= caps.max_height
            and macroblocks <= caps.max_macroblocks):
        return None
    device = f"NVDEC on {context.name}"
    if not caps.supported:
        return f"{device} cannot decode {what}"
    if not caps.output_formats & (1 << surface_format(chroma, depth)):
        return f"{device} cannot output {what} without losing bits (no matching surface format)"
    if width > caps.max_width or height > caps.max_height:
        return f"{device}: {what} at {width}x{height} exceeds the maximum {caps.max_width}x{caps.max_height}"
    if width < caps.min_width or height < caps.min_height:
        return f"{device}: {what} at {width}x{height} is below the minimum {caps.min_width}x{caps.min_height}"
    return (f"{device}: {what} at {width}x{height} has {macroblocks} macroblocks, more than the maximum "
            f"{caps.max_macroblocks}")


class NvdecUnsupportedError(RuntimeError):
    """NVDEC cannot decode this stream on this device (the message says why); the caller may decode it
    on the CPU instead. Driver failures are CudaErrors, not this."""


def nvdec_unsupported_reason(Demuxer demuxer not None, int stream_index, CudaContext context not None):
    """None when NVDEC on ``context``'s device can decode stream ``stream_index``, else a sentence
    saying why not (libnvcuvid missing, a codec or container NvdecInput cannot feed, a chroma
    format, bit depth or size that cuvidGetDecoderCaps refuses). Raises CudaError only for
    driver failures."""
    try:
        library = load_nvcuvid()
    except CudaUnavailableError as error:
        return str(error)
    return stream_refusal(NvdecInput(demuxer, stream_index), demuxer, stream_index, context, library)


cdef str stream_refusal(NvdecInput source, Demuxer demuxer, int stream_index, CudaContext context,
                        CuvidLibrary library):
    """nvdec_unsupported_reason for a stream whose NvdecInput and libnvcuvid are at hand."""
    if source.nvdec_codec == "unsupported":
        return source.unsupported_reason
    cdef AVCodecParameters *par = demuxer.stream(stream_index).codecpar
    chroma, depth = stream_chroma_and_depth(par)
    if chroma is None:
        return depth
    return refusal(context, library, CODECS[source.nvdec_codec], chroma, depth, par.width, par.height)
