"""Transforms that the decoder applies while it converts frames to RGB.

A list of transforms is applied in order to each frame after its display rotation, as TorchCodec
0.17 applies them: to the RGB image of the decoded frame (a resize is swscale's bilinear RGB-to-RGB
resize, as FFmpeg's ``scale=W:H:flags=bilinear`` filter does it). It is reduced, once, at decoder
construction, to a plan of stages in the coordinates of the rotated frame (see
``VideoStream.set_transforms``); a crop converts only the part of the frame around it.

torchvision v2 ``Resize``, ``CenterCrop`` and ``RandomCrop`` objects are accepted too (torchvision
is imported only when such an object is given); options that these transforms cannot honour are
refused with a ValueError.
"""
from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any, Optional

from torchcodec import _random
from torchcodec._outputs import adapter_of

Size = tuple[int, int]
# One stage of an engine plan: (x, y, crop_w, crop_h, out_w, out_h, resize).
Stage = tuple[int, int, int, int, int, int, bool]


def _check_size(size: Any, what: str) -> Size:
    """``size`` as a (height, width) pair of positive ints; ValueError otherwise."""
    if isinstance(size, (str, bytes)) or not isinstance(size, Sequence) or len(size) != 2:
        raise ValueError(f"{what} transform must have a (height, width) pair for the size, got {size!r}")
    if not all(isinstance(v, numbers.Integral) and not isinstance(v, bool) and v > 0 for v in size):
        raise ValueError(f"{what} size must hold two ints > 0, got {size!r}")
    return int(size[0]), int(size[1])


class DecoderTransform:
    """A transform that the decoder applies to every frame, after rotation, before returning it.

    Subclasses: :class:`Resize`, :class:`CenterCrop`, :class:`RandomCrop`. Each one names its
    torchvision v2 counterpart and accepts a subset of its parameters, with the same meaning.
    """

    size: Size

    def _resolve(self, input_size: Size) -> "DecoderTransform":
        """The transform as applied to a frame of ``input_size`` (random choices made)."""
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}(size={self.size})"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and vars(other) == vars(self)

    def __hash__(self) -> int:
        return hash((type(self), self.size))


class Resize(DecoderTransform):
    """Resize frames to ``size`` = (height, width), bilinear and antialiased.

    Counterpart of ``torchvision.transforms.v2.Resize(size, antialias=True)``: swscale's bilinear
    filter, whose support widens by the scale factor when shrinking (a triangle filter, as
    torchvision's antialiased bilinear). ValueError when ``size`` is not a pair of ints > 0
    (a single int, which torchvision reads as the shorter side, is refused).
    """

    def __init__(self, size: Sequence[int]) -> None:
        self.size = _check_size(size, "Resize")


class CenterCrop(DecoderTransform):
    """Crop frames to ``size`` = (height, width) around their centre.

    Counterpart of ``torchvision.transforms.v2.CenterCrop``: the top-left corner is
    ``round((H - height) / 2), round((W - width) / 2)`` (halves round to even, as there).
    ValueError at decoder construction when the crop is larger than its input.
    """

    def __init__(self, size: Sequence[int]) -> None:
        self.size = _check_size(size, "CenterCrop")

    def _resolve(self, input_size: Size) -> "DecoderTransform":
        _check_fits(self, input_size)
        return _Crop(self.size, round((input_size[0] - self.size[0]) / 2), round((input_size[1] - self.size[1]) / 2))


class RandomCrop(DecoderTransform):
    """Crop frames to ``size`` = (height, width) at a random place, the same for every frame.

    The place is drawn once, when a :class:`~torchcodec.decoders.VideoDecoder` is created with this
    transform: ``top`` in [0, H - height], then ``left`` in [0, W - width], uniformly, as
    ``torchvision.transforms.v2.RandomCrop`` does (no padding). ``generator``: None, an int seed,
    a ``numpy.random.Generator`` or a ``torch.Generator``; None under the torch bridge draws from
    torch's global generator exactly as TorchCodec does (``torch.manual_seed(s)`` gives TorchCodec's
    crop), and from an unseeded numpy generator otherwise. An int seed gives the same place every
    time. ValueError at decoder construction when the crop is larger than its input.
    """

    def __init__(self, size: Sequence[int], *, generator: Any = None) -> None:
        self.size = _check_size(size, "RandomCrop")
        _random.check_generator(generator)
        self.generator = generator

    def __repr__(self) -> str:
        return f"RandomCrop(size={self.size}, generator={self.generator!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RandomCrop) and other.size == self.size and other.generator is self.generator

    __hash__ = DecoderTransform.__hash__

    def _resolve(self, input_size: Size) -> "DecoderTransform":
        _check_fits(self, input_size)
        generator = self.generator
        if not _random._uses_torch(generator):
            generator = _random._numpy_generator(generator)     # one generator for both draws
        top = _random.integers(0, input_size[0] - self.size[0] + 1, 1, generator)[0]
        left = _random.integers(0, input_size[1] - self.size[1] + 1, 1, generator)[0]
        return _Crop(self.size, top, left)


class _Crop(DecoderTransform):
    """A crop at a fixed place: what CenterCrop and RandomCrop become for a given input size.

    A decoder keeps these (not the RandomCrop) to pickle and reopen with the same crop.
    """

    def __init__(self, size: Size, top: int, left: int) -> None:
        self.size = size
        self.top = top
        self.left = left

    def __repr__(self) -> str:
        return f"_Crop(size={self.size}, top={self.top}, left={self.left})"

    def _resolve(self, input_size: Size) -> "DecoderTransform":
        if self.top + self.size[0] > input_size[0] or self.left + self.size[1] > input_size[1]:
            raise ValueError(f"a {self.size} crop at (top={self.top}, left={self.left}) does not fit "
                             f"in (height, width) = {input_size}")
        return self


def _check_fits(transform: DecoderTransform, input_size: Size) -> None:
    if transform.size[0] > input_size[0] or transform.size[1] > input_size[1]:
        raise ValueError(f"{type(transform).__name__}: the crop size (height, width) = {transform.size} is larger "
                         f"than its input, {input_size}")


def _from_torchvision(transform: Any) -> DecoderTransform:
    """Our equivalent of a torchvision v2 Resize, CenterCrop or RandomCrop; ValueError otherwise."""
    from torchvision.transforms import v2

    name = type(transform).__name__
    if isinstance(transform, v2.Resize):
        if transform.interpolation not in (v2.InterpolationMode.BILINEAR, "bilinear"):
            raise ValueError(f"torchvision Resize must use bilinear interpolation to be applied while decoding, "
                             f"got {transform.interpolation}")
        if transform.antialias is False:
            raise ValueError("torchvision Resize must have antialias enabled (antialias=True) to be applied "
                             "while decoding")
        if transform.size is None:
            raise ValueError("torchvision Resize must have a size specified: a (height, width) pair")
        if transform.max_size is not None:
            raise ValueError("torchvision Resize with max_size cannot be applied while decoding: give a "
                             "(height, width) size")
        return Resize(_check_size(transform.size, "torchvision Resize"))
    if isinstance(transform, v2.CenterCrop):
        return CenterCrop(_check_size(transform.size, "torchvision CenterCrop"))
    if isinstance(transform, v2.RandomCrop):
        if transform.padding is not None:
            raise ValueError("torchvision RandomCrop must not specify padding to be applied while decoding")
        if transform.pad_if_needed:
            raise ValueError("torchvision RandomCrop must not specify pad_if_needed to be applied while decoding")
        if transform.fill != 0:
            raise ValueError(f"torchvision RandomCrop fill must be 0, got {transform.fill!r}")
        if transform.padding_mode != "constant":
            raise ValueError(f"torchvision RandomCrop padding_mode must be constant, got {transform.padding_mode!r}")
        import torch

        # torchvision draws from torch's global generator, whatever torchcodec's bridge is.
        return RandomCrop(_check_size(transform.size, "torchvision RandomCrop"), generator=torch.default_generator)
    raise ValueError(f"Unsupported transform: torchvision's {name}. Decode-time transforms are Resize, CenterCrop "
                     f"and RandomCrop (torchcodec's, or torchvision v2's)")


def _convert(transform: Any) -> DecoderTransform:
    if isinstance(transform, DecoderTransform):
        return transform
    if adapter_of(transform, "transform") is not None:         # a torchvision v2 transform
        return _from_torchvision(transform)
    raise ValueError(f"Unsupported transform: {transform!r}. Transforms must be torchcodec.transforms objects "
                     f"(Resize, CenterCrop, RandomCrop) or torchvision v2 Resize, CenterCrop or RandomCrop")


def convert_transforms(transforms: Optional[Sequence[Any]]) -> Optional[list[DecoderTransform]]:
    """``transforms`` as torchcodec transforms (torchvision objects converted), checked; None stays None.

    TypeError when ``transforms`` is not a sequence; ValueError for what cannot be applied.
    """
    if transforms is None:
        return None
    if isinstance(transforms, (DecoderTransform, str, bytes)) or not isinstance(transforms, Sequence):
        raise TypeError(f"transforms must be a sequence (list or tuple) of transforms, got {type(transforms).__name__}")
    return [_convert(t) for t in transforms]


def make_plan(transforms: Optional[Sequence[Any]], input_size: Size) -> tuple[list[DecoderTransform], list[Stage], Size]:
    """Reduce ``transforms``, applied in order to frames of ``input_size`` = (height, width) (after
    rotation), to an engine plan.

    Returns the transforms as applied (random places drawn, torchvision objects converted), the
    stages for ``VideoStream.set_transforms`` (empty for no transforms) and the output (height, width).
    Every transform is converted and checked before any random draw.
    """
    converted = convert_transforms(transforms)
    if converted is None:
        return [], [], input_size
    applied: list[DecoderTransform] = []
    stages: list[list[Any]] = []
    height, width = input_size
    # The stage being built: crop its input to (x, y, w, h), then resize if asked.
    x, y, crop_w, crop_h, out_w, out_h, resize = 0, 0, width, height, width, height, False
    for transform in converted:
        done = transform._resolve((height, width))
        applied.append(done)
        if isinstance(done, _Crop):
            if resize:                       # a crop of a resized image: a new stage on RGB
                stages.append([x, y, crop_w, crop_h, out_w, out_h, resize])
                x, y, resize = 0, 0, False
            x, y = x + done.left, y + done.top
            crop_h, crop_w = done.size
            out_h, out_w = done.size
        else:
            if resize:                       # a resize of a resized image: a new stage on RGB
                stages.append([x, y, crop_w, crop_h, out_w, out_h, resize])
                x, y, crop_w, crop_h = 0, 0, width, height
            out_h, out_w = done.size
            resize = True
        height, width = done.size
    if converted:
        stages.append([x, y, crop_w, crop_h, out_w, out_h, resize])
    return applied, [tuple(s) for s in stages], (height, width)
