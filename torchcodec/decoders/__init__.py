"""Decoders with TorchCodec's API."""
from torchcodec.decoders._audio_decoder import AudioDecoder
from torchcodec.decoders._cuda import (CpuFallbackStatus, get_nvdec_cache_capacity, set_cuda_backend,
                                       set_nvdec_cache_capacity)
from torchcodec.decoders._image_decoders import (ImageCodecUnavailableError, ImageReadMode, ImageTooLargeError,
                                                 decode_avif, decode_gif, decode_heic, decode_image, decode_jpeg,
                                                 decode_png, decode_webp, get_max_image_pixels,
                                                 set_max_image_pixels)
from torchcodec.decoders._metadata import AudioStreamMetadata, StreamMetadata, VideoStreamMetadata
from torchcodec.decoders._video_decoder import VideoDecoder
from torchcodec.decoders._wav_decoder import WavDecoder
from torchcodec._core._wav import UnsupportedWavError

__all__ = ["AudioDecoder", "AudioStreamMetadata", "CpuFallbackStatus", "ImageCodecUnavailableError", "ImageReadMode",
           "ImageTooLargeError", "StreamMetadata", "UnsupportedWavError", "VideoDecoder", "VideoStreamMetadata",
           "WavDecoder", "decode_avif", "decode_gif", "decode_heic", "decode_image", "decode_jpeg", "decode_png",
           "decode_webp", "get_max_image_pixels", "get_nvdec_cache_capacity", "set_cuda_backend",
           "set_max_image_pixels", "set_nvdec_cache_capacity"]
