"""Encoders with TorchCodec's API: video, audio, several streams into one container, and images."""
from torchcodec.encoders._audio_encoder import AudioEncoder
from torchcodec.encoders._image_encoders import JpegEncoder, PngEncoder
from torchcodec.encoders._multi_stream_encoder import AudioStream, Encoder, VideoStream
from torchcodec.encoders._video_encoder import VideoEncoder

__all__ = ["AudioEncoder", "AudioStream", "Encoder", "JpegEncoder", "PngEncoder", "VideoEncoder", "VideoStream"]
