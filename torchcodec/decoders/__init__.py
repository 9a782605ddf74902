"""Decoders with TorchCodec's API."""
from torchcodec.decoders._audio_decoder import AudioDecoder
from torchcodec._cuda._backend import CpuFallbackStatus, set_cuda_backend
from torchcodec._cuda._nvdec_cache import get_nvdec_cache_capacity, set_nvdec_cache_capacity
from torchcodec.decoders._image_decoders import (ImageCodecUnavailableError, ImageReadMode, ImageTooLargeError,
                                                 decode_avif, decode_gif, decode_heic, decode_image, decode_jpeg,
                                                 decode_png, decode_webp, get_max_image_pixels,
                                                 set_max_image_pixels)
from torchcodec.decoders._metadata import (AudioStreamHeaderMetadata, AudioStreamMetadata, StreamMetadata,
                                           VideoStreamHeaderMetadata, VideoStreamMetadata)
from torchcodec.decoders._video_decoder import VideoDecoder
from torchcodec.decoders._wav_decoder import WavDecoder
from torchcodec._core._wav import UnsupportedWavError

SimpleVideoDecoder = VideoDecoder     # TorchCodec's old name, kept by TorchCodec 0.17 as an alias

__all__ = ["AudioDecoder", "AudioStreamHeaderMetadata", "AudioStreamMetadata", "CpuFallbackStatus",
           "ImageCodecUnavailableError", "ImageReadMode", "ImageTooLargeError", "SimpleVideoDecoder",
           "StreamMetadata", "UnsupportedWavError", "VideoDecoder", "VideoStreamHeaderMetadata", "VideoStreamMetadata",
           "WavDecoder", "decode_avif", "decode_gif", "decode_heic", "decode_image", "decode_jpeg", "decode_png",
           "decode_webp", "get_max_image_pixels", "get_nvdec_cache_capacity", "set_cuda_backend",
           "set_max_image_pixels", "set_nvdec_cache_capacity"]
