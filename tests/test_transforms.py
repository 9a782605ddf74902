"""Decode-time transforms (torchcodec.transforms) against the ffmpeg CLI, torchvision and TorchCodec's rules.

TorchCodec 0.17 applies transforms to the RGB image of the decoded frame, through FFmpeg's filter
graph: ``format=rgb24,crop=w:h:x:y:exact=1,scale=W:H:flags=bilinear``. The engine gives those
pixels byte for byte, so the CLI running the same chain of the same FFmpeg build is the reference.
One case differs in TorchCodec: a lone Resize of an unrotated frame whose width and output width are
multiples of 32 goes through TorchCodec's own swscale call, whose matrix for swscale's internal YUV
is BT.709's (the CLI's ``in_color_matrix=bt709:out_color_matrix=bt709``) instead of the filter's
BT.601. Against torchvision's antialiased bilinear resize of the decoded frame the difference is a
stated tolerance (see TORCHVISION_*).
"""
from __future__ import annotations

import os
import pickle
import subprocess
import sys

import numpy as np
import pytest

import reference
import torchcodec
from torchcodec.decoders import VideoDecoder
from torchcodec.transforms import CenterCrop, DecoderTransform, RandomCrop, Resize

SCALE = "flags=bilinear"
SWSCALE = "flags=bilinear:in_color_matrix=bt709:out_color_matrix=bt709"    # TorchCodec's lone-Resize path
# torchvision's v2.functional.resize(antialias=True) of the decoded frame against our Resize (which
# is TorchCodec's, pixel for pixel), on the test media (testsrc2: saturated colour edges, the worst
# case). Measured over the cases below: mean abs difference at most 1.5 for even widths and 3.9 for
# the odd 161 x 121 source, 95th percentile at most 9 and 22. The differences come from swscale's
# RGB-to-RGB resize, which goes through a YUV 4:2:2 image inside swscale (horizontal chroma is
# halved), from its fixed-point filter and, for odd widths, from the zero pixel past the right edge
# that the halved chroma reads (up to 88 on the last column). TorchCodec gives the same pixels.
TORCHVISION_MEAN = 4.0
TORCHVISION_P95 = 24


def _cli(path, filters: str, size, pix_fmt: str = "rgb24"):
    """The CLI's frames through ``filters``, run on the decoded planes (after auto-rotation).

    The chain starts with ``format=<the stream's pixel format>``: without it the CLI 5.1 may
    convert to RGB before its rotation filter when a crop follows (its format negotiation's
    choice), while the engine, like the CLI without a crop, converts after rotating the planes.
    """
    source_format = reference.ffprobe_stream(path, reference.best_stream(path))["pix_fmt"]
    return reference.ffmpeg_rgb_frames(path, filters=f"format={source_format},{filters}", size=size,
                                       pix_fmt=pix_fmt)


def _frames(path, transforms, indices=None, **kwargs):
    decoder = VideoDecoder(path, dimension_order="NHWC", transforms=transforms, **kwargs)
    if indices is None:
        return decoder.get_all_frames().data
    return decoder.get_frames_at(indices).data


def _center(outer: int, inner: int) -> int:
    return round((outer - inner) / 2)


def _source_size(path) -> tuple[int, int]:
    metadata = VideoDecoder(path).metadata
    return metadata.height, metadata.width


# ---- against the ffmpeg CLI ----------------------------------------------------------------------

# Crops alone give the pixels of the converted frame: the CLI's format=rgb24,crop=... (and
# torchvision's crop of the decoded frame), exactly.
CROP_FILES = ["h264_bframes.mp4", "vp9_161x121.webm", "h264_yuv444_161x121.mp4", "h264_rotate90.mp4",
              "h264_rotate180.mp4", "h264_rotate270.mp4", "mpeg4_bframes.avi", "h264_fullrange.mp4",
              "h264_bt709.mp4", "hevc_10bit.mp4"]


@pytest.mark.parametrize("name", CROP_FILES)
@pytest.mark.parametrize("size", [(101, 151), (100, 150), (64, 64), (1, 1), (17, 160), (120, 3)])
def test_center_crop_equals_cli_crop_of_the_converted_frame(media, name, size):
    """Odd offsets and sizes on 4:2:0 included."""
    height, width = _source_size(media[name])
    top, left = _center(height, size[0]), _center(width, size[1])
    expected = _cli(media[name], f"format=rgb24,crop={size[1]}:{size[0]}:{left}:{top}", size)
    np.testing.assert_array_equal(_frames(media[name], [CenterCrop(size)]), expected)


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "h264_yuv444_161x121.mp4", "h264_rotate90.mp4"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_crop_equals_cli_crop_at_the_drawn_place(media, name, seed):
    height, width = _source_size(media[name])
    size = (77, 93)
    rng = np.random.default_rng(seed)
    top = int(rng.integers(0, height - size[0] + 1))
    left = int(rng.integers(0, width - size[1] + 1))
    expected = _cli(media[name], f"format=rgb24,crop={size[1]}:{size[0]}:{left}:{top}", size)
    np.testing.assert_array_equal(_frames(media[name], [RandomCrop(size, generator=seed)]), expected)


RESIZE_FILES = ["h264_bframes.mp4", "vp9_161x121.webm", "h264_yuv444.mp4", "h264_rotate90.mp4",
                "h264_rotate270.mp4", "hevc_bframes.mp4", "mpeg4_bframes.avi", "h264_bt709.mp4"]


def _resize_filter(path, size) -> str:
    """The CLI's equal of a lone Resize of ``path``'s frames to ``size`` (see the module's docstring)."""
    metadata = VideoDecoder(path).metadata
    unrotated = not metadata.rotation
    flags = SWSCALE if unrotated and metadata.width % 32 == 0 and size[1] % 32 == 0 else SCALE
    return f"format=rgb24,scale={size[1]}:{size[0]}:{flags}"


@pytest.mark.parametrize("name", RESIZE_FILES)
@pytest.mark.parametrize("size", [(120, 160), (81, 83), (256, 256), (371, 500), (17, 301), (90, 64)])
def test_resize_equals_cli_scale_bilinear_of_the_rgb_frame(media, name, size):
    expected = _cli(media[name], _resize_filter(media[name], size), size)
    np.testing.assert_array_equal(_frames(media[name], [Resize(size)]), expected)


def test_lone_resize_on_widths_of_32_uses_torchcodec_swscale_matrix(media):
    """The two paths really differ there (so that the test above tells them apart)."""
    path, size = media["h264_bframes.mp4"], (120, 160)
    ours = _frames(path, [Resize(size)])
    filter_path = _cli(path, f"format=rgb24,scale=160:120:{SCALE}", size)
    np.testing.assert_array_equal(ours, _cli(path, f"format=rgb24,scale=160:120:{SWSCALE}", size))
    assert np.abs(ours.astype(np.int16) - filter_path).max() > 0
    # The same resize after a crop of the whole frame is two transforms: the filter graph's matrix.
    np.testing.assert_array_equal(_frames(path, [CenterCrop((240, 320)), Resize(size)]), filter_path)


CHAINS = [
    # (transforms, CLI filters, output size): every transform works on the RGB image of the one
    # before, as in TorchCodec's filter graph.
    ([CenterCrop((200, 201)), Resize((64, 48))], f"format=rgb24,crop=201:200:60:20:exact=1,scale=48:64:{SCALE}", (64, 48)),
    ([Resize((200, 300)), CenterCrop((101, 151))],
     f"format=rgb24,scale=300:200:{SCALE},crop=151:101:74:50:exact=1", (101, 151)),
    ([Resize((200, 300)), CenterCrop((101, 151)), Resize((64, 64))],
     f"format=rgb24,scale=300:200:{SCALE},crop=151:101:74:50:exact=1,scale=64:64:{SCALE}", (64, 64)),
    ([Resize((100, 100)), Resize((300, 200))], f"format=rgb24,scale=100:100:{SCALE},scale=200:300:{SCALE}", (300, 200)),
    ([CenterCrop((200, 300)), CenterCrop((99, 151))], "format=rgb24,crop=151:99:84:70", (99, 151)),
    ([CenterCrop((100, 151)), Resize((50, 61))], f"format=rgb24,crop=151:100:84:70:exact=1,scale=61:50:{SCALE}",
     (50, 61)),
    ([Resize((120, 161)), CenterCrop((60, 81)), Resize((30, 41))],
     f"format=rgb24,scale=161:120:{SCALE},crop=81:60:40:30:exact=1,scale=41:30:{SCALE}", (30, 41)),
]


CHAIN_CASES = ([(name, chain) for name in ("h264_bframes.mp4", "h264_rotate180.mp4") for chain in range(len(CHAINS))]
               + [("vp9_161x121.webm", chain) for chain in (3, 6)])      # the chains whose crops fit 161 x 121


@pytest.mark.parametrize("name,chain", CHAIN_CASES)
def test_chains_equal_the_cli_filter_chain(media, name, chain):
    transforms, filters, size = CHAINS[chain]
    np.testing.assert_array_equal(_frames(media[name], transforms), _cli(media[name], filters, size))


@pytest.mark.parametrize("size", [(121, 161), (60, 33), (17, 160)])
def test_resize_of_an_odd_width_reads_the_image_edge_as_ffmpeg_does(media, size):
    """swscale reads RGB in pixel pairs: past an odd width it finds the zero of FFmpeg's frame pool."""
    path = media["vp9_161x121.webm"]
    expected = _cli(path, f"format=rgb24,scale={size[1]}:{size[0]}:{SCALE}", size)
    np.testing.assert_array_equal(_frames(path, [Resize(size)]), expected)
    # A crop ending inside the frame: the pixel past it is the frame's next pixel.
    expected = _cli(path, f"format=rgb24,crop=101:100:3:5:exact=1,scale={size[1]}:{size[0]}:{SCALE}", size)
    np.testing.assert_array_equal(_frames(path, [_crop_at((100, 101), 5, 3), Resize(size)]), expected)


def _crop_at(size, top, left):
    """A crop of ``size`` at (top, left): what a CenterCrop or RandomCrop becomes."""
    from torchcodec.transforms._decoder_transforms import _Crop

    return _Crop(size, top, left)


def test_chain_after_rotation_by_90_uses_the_rotated_size(media):
    path = media["h264_rotate90.mp4"]               # 240 x 320 after rotation
    transforms = [CenterCrop((300, 200)), Resize((150, 100)), CenterCrop((51, 99))]
    expected = _cli(path, f"format=rgb24,crop=200:300:20:10:exact=1,scale=100:150:{SCALE},crop=99:51:0:50:exact=1",
                    (51, 99))
    np.testing.assert_array_equal(_frames(path, transforms), expected)


@pytest.mark.parametrize("name,filters,transforms,size", [
    ("h264_bframes.mp4", f"format=rgb48le,scale=100:70:{SCALE}", [Resize((70, 100))], (70, 100)),
    ("h264_bframes.mp4", f"format=rgb48le,scale=96:70:{SWSCALE}", [Resize((70, 96))], (70, 96)),
    ("h264_10bit.mp4", f"format=rgb48le,scale=100:70:{SCALE}", [Resize((70, 100))], (70, 100)),
    ("h264_10bit.mp4", "format=rgb48le,crop=150:100:85:70", [CenterCrop((100, 150))], (100, 150)),
    ("h264_10bit.mp4", f"format=rgb48le,crop=152:100:84:70:exact=1,scale=75:50:{SCALE}",
     [CenterCrop((100, 152)), Resize((50, 75))], (50, 75)),
    ("h264_10bit.mp4", f"format=rgb48le,scale=300:200:{SCALE},crop=151:101:74:50:exact=1",
     [Resize((200, 300)), CenterCrop((101, 151))], (101, 151)),
])
def test_float32_output_is_the_cli_rgb48_divided_by_65535(media, name, filters, transforms, size):
    expected = _cli(media[name], filters, size, pix_fmt="rgb48le")
    frames = _frames(media[name], transforms, output_dtype="float32")
    assert frames.dtype == np.float32
    np.testing.assert_array_equal(np.round(frames.astype(np.float64) * 65535).astype(np.uint16), expected)


def test_identity_transforms_give_the_untransformed_frames(media):
    path = media["h264_bframes.mp4"]
    plain = _frames(path, None)
    np.testing.assert_array_equal(_frames(path, []), plain)
    np.testing.assert_array_equal(_frames(path, [CenterCrop((240, 320))]), plain)


def test_crop_pixels_are_the_same_pixels_of_the_full_frame_on_444(media):
    """On 4:4:4 a crop cannot change a pixel: it is a window of the full frame."""
    path = media["h264_yuv444_161x121.mp4"]
    full = _frames(path, None)
    height, width = full.shape[1:3]
    top, left = _center(height, 33), _center(width, 47)
    np.testing.assert_array_equal(_frames(path, [CenterCrop((33, 47))]), full[:, top:top + 33, left:left + 47])


@pytest.fixture(scope="module")
def packed_media(tmp_path_factory):
    """Raw video in packed formats (not in the corpus): yuyv422 (chroma shared by pixel pairs, so
    it is converted whole before a crop) and rgb24 (cropped by an offset like planar formats)."""
    folder = tmp_path_factory.mktemp("packed")
    paths = {}
    for pix_fmt in ("yuyv422", "rgb24"):
        paths[pix_fmt] = folder / f"{pix_fmt}.nut"
        reference._run([reference.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-f", "lavfi", "-i",
                        "testsrc2=size=96x64:rate=10", "-frames:v", "4", "-c:v", "rawvideo", "-pix_fmt", pix_fmt,
                        os.fspath(paths[pix_fmt])])
    return paths


@pytest.mark.parametrize("pix_fmt", ["yuyv422", "rgb24"])
@pytest.mark.parametrize("transforms,filters,size", [
    ([CenterCrop((33, 45))], "format=rgb24,crop=45:33:26:16", (33, 45)),
    ([Resize((40, 30))], f"format=rgb24,scale=30:40:{SCALE}", (40, 30)),
    ([Resize((40, 64))], f"format=rgb24,scale=64:40:{SWSCALE}", (40, 64)),
    ([CenterCrop((50, 60)), Resize((25, 31))], f"format=rgb24,crop=60:50:18:7,scale=31:25:{SCALE}", (25, 31)),
    ([Resize((50, 70)), CenterCrop((21, 33))], f"format=rgb24,scale=70:50:{SCALE},crop=33:21:18:14", (21, 33)),
])
def test_packed_formats_are_transformed_as_the_cli_transforms_their_rgb(packed_media, pix_fmt, transforms, filters,
                                                                        size):
    """On these formats the CLI's chain and the engine's work on RGB (or on RGB's equal, for rgb24)."""
    expected = reference.ffmpeg_rgb_frames(packed_media[pix_fmt], filters=filters, size=size)
    np.testing.assert_array_equal(_frames(packed_media[pix_fmt], transforms), expected)


# ---- against torchvision ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "vp9_161x121.webm", "h264_yuv444.mp4", "h264_rotate270.mp4"])
@pytest.mark.parametrize("scale", [(0.5, 0.5), (0.34, 0.26), (1.5, 1.7), (0.9, 0.95)])
def test_resize_is_close_to_torchvision_resize_of_the_decoded_frame(media, name, scale):
    pytest.importorskip("torchvision")
    import torch
    from torchvision.transforms import v2
    from torchvision.transforms.v2 import functional as F

    path = media[name]
    full = VideoDecoder(path).get_frames_at([0, 10, 20]).data          # NCHW uint8
    height, width = full.shape[2:]
    size = [max(1, int(height * scale[0])), max(1, int(width * scale[1]))]
    expected = F.resize(torch.from_numpy(full), size, interpolation=v2.InterpolationMode.BILINEAR, antialias=True)
    ours = VideoDecoder(path, transforms=[v2.Resize(size)]).get_frames_at([0, 10, 20]).data
    assert ours.shape == tuple(expected.shape)
    diff = np.abs(ours.astype(np.int16) - expected.numpy().astype(np.int16))
    assert diff.mean() <= TORCHVISION_MEAN, diff.mean()
    assert np.percentile(diff, 95) <= TORCHVISION_P95, np.percentile(diff, 95)


@pytest.mark.parametrize("size", [(100, 150), (101, 151), (240, 1)])
def test_center_crop_equals_torchvision_center_crop(media, size):
    pytest.importorskip("torchvision")
    import torch
    from torchvision.transforms import v2

    path = media["h264_bframes.mp4"]
    full = torch.from_numpy(VideoDecoder(path).get_frames_at([0, 7]).data)
    ours = VideoDecoder(path, transforms=[v2.CenterCrop(size)]).get_frames_at([0, 7]).data
    np.testing.assert_array_equal(ours, v2.CenterCrop(size)(full).numpy())


@pytest.mark.parametrize("seed", [0, 5, 1234])
def test_torchvision_random_crop_takes_torchvision_place_for_the_same_seed(media, seed):
    pytest.importorskip("torchvision")
    import torch
    from torchvision.transforms import v2

    path = media["h264_bframes.mp4"]
    full = torch.from_numpy(VideoDecoder(path).get_frames_at([3]).data)
    torch.manual_seed(seed)
    expected = v2.RandomCrop((61, 87))(full)
    torch.manual_seed(seed)
    ours = VideoDecoder(path, transforms=[v2.RandomCrop((61, 87))]).get_frames_at([3]).data
    np.testing.assert_array_equal(ours, expected.numpy())


def test_random_crop_under_the_torch_bridge_follows_torchcodec_draws(media):
    torch = pytest.importorskip("torch")
    path = media["h264_bframes.mp4"]
    full = VideoDecoder(path, dimension_order="NHWC").get_frames_at([0, 45]).data
    torch.manual_seed(11)
    top = int(torch.randint(0, 240 - 50 + 1, size=()).item())       # TorchCodec: top, then left
    left = int(torch.randint(0, 320 - 70 + 1, size=()).item())
    after = torch.rand(1)
    torch.manual_seed(11)
    with torchcodec.bridge("torch"):
        frames = VideoDecoder(path, dimension_order="NHWC", transforms=[RandomCrop((50, 70))]).get_frames_at([0, 45]).data
    assert torch.equal(torch.rand(1), after)                             # exactly two draws
    np.testing.assert_array_equal(frames.numpy(), full[:, top:top + 50, left:left + 70])


# ---- RandomCrop: drawn once, reproducible ----------------------------------------------------------


def test_random_crop_is_drawn_once_per_decoder_at_construction(media):
    path = media["h264_bframes.mp4"]
    full = _frames(path, None)
    generator = np.random.default_rng(42)
    first = VideoDecoder(path, dimension_order="NHWC", transforms=[RandomCrop((90, 100), generator=generator)])
    second = VideoDecoder(path, dimension_order="NHWC", transforms=[RandomCrop((90, 100), generator=generator)])
    twin = np.random.default_rng(42)
    places = [(int(twin.integers(0, 151)), int(twin.integers(0, 221))) for _ in range(2)]
    assert places[0] != places[1]
    for decoder, (top, left) in zip((first, second), places):
        for i in (0, 50, 89, 12):          # every frame, in any order, at the same place
            np.testing.assert_array_equal(decoder[i], full[i, top:top + 90, left:left + 100])


def test_random_crop_with_an_int_seed_is_reproducible(media):
    path = media["vp9_161x121.webm"]
    a = _frames(path, [RandomCrop((40, 40), generator=3)], [0, 5])
    b = _frames(path, [RandomCrop((40, 40), generator=3)], [0, 5])
    np.testing.assert_array_equal(a, b)


def test_random_crop_of_the_full_size_is_the_full_frame(media):
    path = media["vp9_161x121.webm"]
    np.testing.assert_array_equal(_frames(path, [RandomCrop((121, 161), generator=0)]), _frames(path, None))


def test_pickled_decoder_keeps_the_drawn_crop(media):
    path = media["h264_bframes.mp4"]
    decoder = VideoDecoder(path, transforms=[Resize((200, 250)), RandomCrop((64, 64), generator=np.random.default_rng())])
    copy = pickle.loads(pickle.dumps(decoder))
    np.testing.assert_array_equal(copy.get_frames_at([0, 30]).data, decoder.get_frames_at([0, 30]).data)


# ---- shapes, metadata, out= --------------------------------------------------------------------------


def test_metadata_keeps_the_source_size(media):
    path = media["h264_rotate90.mp4"]
    plain = VideoDecoder(path).metadata
    transformed = VideoDecoder(path, transforms=[Resize((50, 60))]).metadata
    assert (transformed.height, transformed.width) == (plain.height, plain.width) == (320, 240)


@pytest.mark.parametrize("dimension_order,shape", [("NCHW", (3, 45, 67)), ("NHWC", (45, 67, 3))])
def test_every_method_returns_the_transformed_shape(media, dimension_order, shape):
    decoder = VideoDecoder(media["h264_bframes.mp4"], dimension_order=dimension_order,
                           transforms=[CenterCrop((200, 200)), Resize((45, 67))])
    assert decoder[0].shape == shape
    assert decoder.get_frame_at(1).data.shape == shape
    assert decoder.get_frame_played_at(0.5).data.shape == shape
    assert decoder.get_frames_at([0, 2, 2]).data.shape == (3, *shape)
    assert decoder.get_frames_in_range(0, 10, 3).data.shape == (4, *shape)
    assert decoder.get_frames_played_at([0.1, 0.2]).data.shape == (2, *shape)
    assert decoder.get_frames_played_in_range(0.0, 1.0).data.shape == (30, *shape)
    assert decoder.get_all_frames(fps=2).data.shape == (6, *shape)
    assert decoder[0:4].shape == (4, *shape)
    assert next(iter(decoder)).shape == shape


def test_approximate_seek_mode_with_transforms(media):
    path = media["h264_bframes.mp4"]
    exact = _frames(path, [CenterCrop((99, 99))], [0, 40, 80])
    np.testing.assert_array_equal(_frames(path, [CenterCrop((99, 99))], [0, 40, 80], seek_mode="approximate"), exact)


@pytest.mark.parametrize("dimension_order", ["NCHW", "NHWC"])
def test_out_takes_the_transformed_shape(media, dimension_order):
    path = media["h264_bframes.mp4"]
    decoder = VideoDecoder(path, dimension_order=dimension_order, transforms=[Resize((30, 40))])
    shape = (3, 3, 30, 40) if dimension_order == "NCHW" else (3, 30, 40, 3)
    out = np.zeros(shape, np.uint8)
    batch = decoder.get_frames_at([0, 5, 9], out=out)
    assert batch.data is out
    np.testing.assert_array_equal(out, decoder.get_frames_at([0, 5, 9]).data)
    assert out.any()
    single = np.zeros(shape[1:], np.uint8)
    decoder.get_frame_at(5, out=single)
    np.testing.assert_array_equal(single, out[1])
    with pytest.raises(ValueError, match="shape"):
        decoder.get_frames_at([0], out=np.zeros((1, 240, 320, 3) if dimension_order == "NHWC" else (1, 3, 240, 320),
                                                np.uint8))


def test_out_of_a_float32_decoder(media):
    decoder = VideoDecoder(media["h264_bframes.mp4"], dimension_order="NHWC", output_dtype="float32",
                           transforms=[Resize((30, 40))])
    out = np.zeros((2, 30, 40, 3), np.float32)
    decoder.get_frames_at([0, 1], out=out)
    assert 0.0 < out.max() <= 1.0
    np.testing.assert_array_equal(out, decoder.get_frames_at([0, 1]).data)


def test_torch_bridge_output_shapes(media):
    torch = pytest.importorskip("torch")
    with torchcodec.bridge("torch"):
        batch = VideoDecoder(media["h264_bframes.mp4"], transforms=[Resize((32, 48))]).get_frames_at([0, 1])
    assert isinstance(batch.data, torch.Tensor) and tuple(batch.data.shape) == (2, 3, 32, 48)


# ---- errors -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("make", [lambda: Resize(256), lambda: Resize((0, 5)), lambda: Resize((1, 2, 3)),
                                  lambda: CenterCrop([10.5, 3]), lambda: RandomCrop((True, 4)),
                                  lambda: Resize("ab")])
def test_sizes_must_be_pairs_of_positive_ints(make):
    with pytest.raises(ValueError, match="size"):
        make()


def test_random_crop_refuses_a_bad_generator():
    with pytest.raises(TypeError, match="generator"):
        RandomCrop((10, 10), generator="seed")


@pytest.mark.parametrize("transforms", [
    [CenterCrop((241, 10))], [RandomCrop((10, 321))], [Resize((50, 50)), CenterCrop((51, 10))],
    [CenterCrop((100, 100)), RandomCrop((100, 101))],
])
def test_crops_larger_than_their_input_are_refused_at_construction(media, transforms):
    with pytest.raises(ValueError, match="larger than its input"):
        VideoDecoder(media["h264_bframes.mp4"], transforms=transforms)


def test_unsupported_transforms_are_refused_before_the_source_is_opened():
    path = "no/such/file.mp4"                           # would raise MediaNotFoundError if opened
    with pytest.raises(ValueError, match="Unsupported transform"):
        VideoDecoder(path, transforms=[lambda frame: frame])
    with pytest.raises(TypeError, match="sequence"):
        VideoDecoder(path, transforms=Resize((10, 10)))


def test_too_many_stages_are_refused(media):
    transforms = [Resize((100, 100)), Resize((90, 90))] * 5
    with pytest.raises(ValueError, match="at most 8"):
        VideoDecoder(media["h264_bframes.mp4"], transforms=transforms)


def test_cuda_without_a_gpu_names_cuda_not_the_transforms(media):
    """Transforms run on CUDA too (tests/test_cuda_transforms.py); without a usable GPU the refusal
    is CUDA's, with its reason, before the source is opened."""
    from torchcodec import _cuda
    reason = _cuda.reason()
    if reason is None:
        pytest.skip("CUDA is usable here: the stub and GPU tests decode with transforms on it")
    with pytest.raises(RuntimeError, match="CUDA decoding is not available") as error:
        VideoDecoder(media["h264_bframes.mp4"], device="cuda", transforms=[Resize((10, 10))])
    assert "ransform" not in str(error.value)


def _torchvision_refusals():
    from torchvision.transforms import v2

    return [
        (v2.Resize((10, 10), interpolation=v2.InterpolationMode.NEAREST), "bilinear"),
        (v2.Resize((10, 10), interpolation=v2.InterpolationMode.BICUBIC), "bilinear"),
        (v2.Resize((10, 10), antialias=False), "antialias"),
        (v2.Resize(100), "pair"),
        (v2.Resize(100, max_size=200), "max_size"),
        (v2.RandomCrop((10, 10), padding=2), "padding"),
        (v2.RandomCrop((10, 10), pad_if_needed=True), "pad_if_needed"),
        (v2.RandomCrop((10, 10), fill=1), "fill"),
        (v2.RandomCrop((10, 10), padding_mode="reflect"), "padding_mode"),
        (v2.RandomHorizontalFlip(), "Unsupported transform"),
    ]


def test_torchvision_options_that_cannot_be_honoured_are_refused(media):
    pytest.importorskip("torchvision")
    for transform, message in _torchvision_refusals():
        with pytest.raises(ValueError, match=message):
            VideoDecoder(media["h264_bframes.mp4"], transforms=[transform])


def test_torchvision_square_crops_from_an_int_are_accepted(media):
    pytest.importorskip("torchvision")
    from torchvision.transforms import v2

    decoder = VideoDecoder(media["h264_bframes.mp4"], transforms=[v2.CenterCrop(50), v2.RandomCrop(20)])
    assert decoder[0].shape == (3, 20, 20)


def test_transforms_are_decoder_transforms():
    assert all(issubclass(t, DecoderTransform) for t in (Resize, CenterCrop, RandomCrop))
    assert Resize((3, 4)) == Resize([3, 4]) and Resize((3, 4)) != CenterCrop((3, 4))
    assert len({Resize((3, 4)), Resize([3, 4]), CenterCrop((3, 4)), RandomCrop((3, 4), generator=1)}) == 3


@pytest.mark.parametrize("name,transforms", [
    ("h264_bframes.mp4", [Resize((50, 200))]), ("h264_bframes.mp4", [CenterCrop((100, 200))]),
    ("h264_bframes.mp4", [Resize((101, 151))]), ("vp9_161x121.webm", None), ("h264_bframes.mp4", [CenterCrop((64, 40))]),
    ("h264_bframes.mp4", [Resize((200, 300)), CenterCrop((30, 40)), Resize((50, 60))]),
])
def test_nothing_is_written_outside_the_frames(media, name, transforms):
    """swscale's SIMD code writes whole blocks of pixels; they must not reach beyond each row."""
    decoder = VideoDecoder(media[name], dimension_order="NHWC", transforms=transforms)
    height, width = decoder[0].shape[:2]
    memory = np.full((3, height + 2, width + 40, 3), 7, np.uint8)
    out = memory[:, 1:height + 1, 20:width + 20]
    decoder.get_frames_at([0, 1, 2], out=out)
    np.testing.assert_array_equal(out, decoder.get_frames_at([0, 1, 2]).data)
    out[...] = 7
    assert (memory == 7).all()


@pytest.fixture(scope="module")
def awkward_widths(tmp_path_factory):
    """H.264 4:2:0 of widths that swscale's SIMD converter handles in blocks: 200 (it writes 8
    pixels past each row) and 202 (in tight memory it would leave the last pixels unwritten)."""
    folder = tmp_path_factory.mktemp("widths")
    paths = {}
    for width in (200, 202):
        paths[width] = folder / f"w{width}.mp4"
        reference._run([reference.FFMPEG, "-hide_banner", "-nostdin", "-v", "error", "-f", "lavfi", "-i",
                        f"testsrc2=size={width}x120:rate=10", "-frames:v", "3", "-c:v", "libx264",
                        "-pix_fmt", "yuv420p", os.fspath(paths[width])])
    return paths


@pytest.mark.parametrize("width", [200, 202])
@pytest.mark.parametrize("transforms", [None, [CenterCrop((100, 200))], [Resize((60, 202))]])
def test_awkward_widths_equal_the_cli_and_stay_in_their_rows(awkward_widths, width, transforms):
    path = awkward_widths[width]
    filters = {None: None, CenterCrop: "format=rgb24,crop=200:100:{}:10", Resize: f"format=rgb24,scale=202:60:{SCALE}"}
    kind = type(transforms[0]) if transforms else None
    size = None if kind is None else transforms[0].size
    chain = filters[kind].format((width - 200) // 2) if kind else None
    expected = reference.ffmpeg_rgb_frames(path, filters=chain, size=size)
    decoder = VideoDecoder(path, dimension_order="NHWC", transforms=transforms)
    memory = np.full((3, expected.shape[1] + 1, expected.shape[2], 3), 7, np.uint8)
    decoder.get_frames_at([0, 1, 2], out=memory[:, :-1])       # tight rows, one spare row per frame
    np.testing.assert_array_equal(memory[:, :-1], expected)
    assert (memory[:, -1] == 7).all()


def test_torchcodec_transforms_import_neither_torch_nor_torchvision(media):
    code = ("import sys, torchcodec\n"
            "from torchcodec.decoders import VideoDecoder\n"
            "from torchcodec.transforms import CenterCrop, RandomCrop, Resize\n"
            "torchcodec.set_bridge('numpy')\n"
            f"d = VideoDecoder({os.fspath(media['h264_bframes.mp4'])!r}, transforms=[Resize((50, 60)), "
            "CenterCrop((40, 40)), RandomCrop((20, 20), generator=1)])\n"
            "assert d[0].shape == (3, 20, 20)\n"
            "print(sorted(m for m in ('torch', 'torchvision') if m in sys.modules))")
    result = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


# ---- ColorConverter(transforms=...): the blocks ----------------------------------------------------

def _block_frames(path, converter, count):
    from torchcodec.decoders import Demuxer

    demuxer = Demuxer(path)
    decoder = demuxer.streams[0].make_decoder()
    frames = []
    for packet in demuxer:
        frames += [converter.convert(raw) for raw in decoder.decode(packet)]
        if len(frames) >= count:
            return frames[:count]
    return frames


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "h264_rotate90.mp4", "vp9_161x121.webm"])
def test_color_converter_applies_transforms_as_the_video_decoder(media, name):
    """An addition to TorchCodec's ColorConverter: the same transforms as a VideoDecoder's, pixel for
    pixel (the plan made for the first frame's size, after rotation)."""
    from torchcodec.decoders import ColorConverter

    transforms = [Resize((100, 120)), CenterCrop((64, 81))]
    frames = _block_frames(media[name], ColorConverter(transforms=transforms), 5)
    expected = VideoDecoder(media[name], transforms=transforms).get_frames_in_range(0, 5).data
    np.testing.assert_array_equal(np.stack([f.data for f in frames]), expected)


def test_color_converter_draws_a_random_crop_once_per_frame_size(media):
    from torchcodec.decoders import ColorConverter

    path = media["h264_bframes.mp4"]
    converter = ColorConverter(transforms=[RandomCrop((50, 60), generator=np.random.default_rng(4))])
    frames = _block_frames(path, converter, 3)
    rng = np.random.default_rng(4)
    top, left = int(rng.integers(0, 240 - 50 + 1)), int(rng.integers(0, 320 - 60 + 1))
    whole = VideoDecoder(path, dimension_order="NHWC").get_frames_in_range(0, 3).data
    for frame, full in zip(frames, whole):
        np.testing.assert_array_equal(np.asarray(frame.data).transpose(1, 2, 0), full[top:top + 50, left:left + 60])


def test_color_converter_refuses_what_cannot_be_applied(media):
    from torchcodec.decoders import ColorConverter

    with pytest.raises(ValueError, match="Unsupported transform"):
        ColorConverter(transforms=["resize"])
    converter = ColorConverter(transforms=[CenterCrop((500, 500))])
    with pytest.raises(ValueError, match="larger than its input"):
        _block_frames(media["h264_bframes.mp4"], converter, 1)
