"""Encoders with TorchCodec's API."""
from torchcodec.encoders._image_encoders import JpegEncoder, PngEncoder

__all__ = ["JpegEncoder", "PngEncoder"]
