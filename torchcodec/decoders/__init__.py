"""Decoders with TorchCodec's API."""
from torchcodec.decoders._audio_decoder import AudioDecoder
from torchcodec.decoders._metadata import AudioStreamMetadata, StreamMetadata, VideoStreamMetadata
from torchcodec.decoders._video_decoder import VideoDecoder

__all__ = ["AudioDecoder", "AudioStreamMetadata", "StreamMetadata", "VideoDecoder", "VideoStreamMetadata"]
