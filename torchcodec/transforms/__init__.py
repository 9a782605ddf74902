"""Decode-time transforms: ``VideoDecoder(..., transforms=[...])``."""
from torchcodec.transforms._decoder_transforms import CenterCrop, DecoderTransform, RandomCrop, Resize

__all__ = ["CenterCrop", "DecoderTransform", "RandomCrop", "Resize"]
