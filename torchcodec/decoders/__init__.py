"""Decoders with TorchCodec's API."""
from torchcodec.decoders._audio_decoder import AudioDecoder
from torchcodec.decoders._cuda import (CpuFallbackStatus, get_nvdec_cache_capacity, set_cuda_backend,
                                       set_nvdec_cache_capacity)
from torchcodec.decoders._metadata import (AudioStreamHeaderMetadata, AudioStreamMetadata, StreamMetadata,
                                           VideoStreamHeaderMetadata, VideoStreamMetadata)
from torchcodec.decoders._video_decoder import VideoDecoder
from torchcodec.decoders._wav_decoder import WavDecoder
from torchcodec._core._wav import UnsupportedWavError

SimpleVideoDecoder = VideoDecoder     # TorchCodec's old name, kept by TorchCodec 0.17 as an alias

__all__ = ["AudioDecoder", "AudioStreamHeaderMetadata", "AudioStreamMetadata", "CpuFallbackStatus", "SimpleVideoDecoder",
           "StreamMetadata", "UnsupportedWavError", "VideoDecoder", "VideoStreamHeaderMetadata", "VideoStreamMetadata",
           "WavDecoder", "get_nvdec_cache_capacity", "set_cuda_backend", "set_nvdec_cache_capacity"]
