"""Decoders with TorchCodec's API: VideoDecoder, AudioDecoder, WavDecoder, the image decoders, and
the building blocks (Demuxer, its streams, the packet decoders and the converters), which are the
engine's own classes: the decoders are built from them."""
from torchcodec._core._audio_converter import AudioConverter
from torchcodec._core._color_converter import ColorConverter
from torchcodec._core._demuxer import AudioStream, Demuxer, Packet, VideoStream, get_container_metadata
from torchcodec._core._frame_index import FrameIndex
from torchcodec._core._packet_decoder import AudioPacketDecoder, VideoPacketDecoder
from torchcodec._core._raw_frames import RawAudioSamples, RawFrame
from torchcodec.decoders._audio_decoder import AudioDecoder
from torchcodec._core._devices import CpuFallbackStatus
from torchcodec._cuda import get_nvdec_cache_capacity, set_cuda_backend, set_nvdec_cache_capacity
from torchcodec.decoders._image_decoders import (ImageCodecUnavailableError, ImageReadMode, ImageTooLargeError,
                                                 decode_avif, decode_gif, decode_heic, decode_image, decode_jpeg,
                                                 decode_png, decode_webp, get_max_image_pixels,
                                                 set_max_image_pixels)
from torchcodec._core._metadata import (AudioStreamHeaderMetadata, AudioStreamMetadata, ContainerMetadata,
                                        DemuxerMetadata, StreamMetadata, VideoStreamHeaderMetadata,
                                        VideoStreamMetadata)
from torchcodec.decoders._video_decoder import VideoDecoder
from torchcodec.decoders._wav_decoder import WavDecoder
from torchcodec._core._wav import UnsupportedWavError

SimpleVideoDecoder = VideoDecoder     # TorchCodec's old name, kept by TorchCodec 0.17 as an alias

__all__ = ["AudioConverter", "AudioDecoder", "AudioPacketDecoder", "AudioStream", "AudioStreamHeaderMetadata",
           "AudioStreamMetadata", "ColorConverter", "ContainerMetadata", "CpuFallbackStatus", "Demuxer",
           "DemuxerMetadata", "FrameIndex", "Packet", "RawAudioSamples", "RawFrame", "VideoPacketDecoder",
           "VideoStream", "get_container_metadata",
           "ImageCodecUnavailableError", "ImageReadMode", "ImageTooLargeError", "SimpleVideoDecoder",
           "StreamMetadata", "UnsupportedWavError", "VideoDecoder", "VideoStreamHeaderMetadata", "VideoStreamMetadata",
           "WavDecoder", "decode_avif", "decode_gif", "decode_heic", "decode_image", "decode_jpeg", "decode_png",
           "decode_webp", "get_max_image_pixels", "get_nvdec_cache_capacity", "set_cuda_backend",
           "set_max_image_pixels", "set_nvdec_cache_capacity"]
