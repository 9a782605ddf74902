"""JpegEncoder and PngEncoder: the bytes of libjpeg-turbo's cjpeg and Pillow for the same settings,
exact PNG round trips (Pillow decodes them), inputs read in place whatever their strides, every
destination, and TorchCodec's errors."""
from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

import torchcodec
from torchcodec.decoders import decode_jpeg, decode_png
from torchcodec.encoders import JpegEncoder, PngEncoder

from image_reference import cjpeg, read_png


def picture(height: int = 45, width: int = 61, channels: int = 3, seed: int = 0, noise: int = 15) -> np.ndarray:
    """(H, W, C) uint8: a gradient with uniform noise of +-``noise``."""
    x = np.linspace(0, 255, width)[None].repeat(height, 0)
    y = np.linspace(0, 255, height)[:, None].repeat(width, 1)
    planes = [x, y, (x + y) / 2][:channels]
    jitter = np.random.default_rng(seed).integers(-noise, noise + 1, (height, width, channels))
    return np.clip(np.stack(planes, -1) + jitter, 0, 255).astype(np.uint8)


def chw(image: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(image.transpose(2, 0, 1))


def pillow_jpeg(image: np.ndarray, quality: int) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(image[..., 0] if image.shape[2] == 1 else image).save(buffer, "JPEG", quality=quality)
    return buffer.getvalue()


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("quality", [1, 10, 50, 75, 90, 100])
def test_jpeg_bytes_equal_cjpeg_and_pillow(tmp_path, channels, quality):
    image = picture(channels=channels)
    encoded = bytes(JpegEncoder(chw(image)).to_tensor(quality=quality))
    assert encoded == cjpeg(image, quality, tmp_path)
    assert encoded == pillow_jpeg(image, quality)


def test_jpeg_default_quality_is_75(tmp_path):
    image = picture()
    assert bytes(JpegEncoder(chw(image)).to_tensor()) == cjpeg(image, 75, tmp_path)


@pytest.mark.parametrize("quality, min_psnr", [(25, 30), (75, 35), (95, 40)])
def test_jpeg_round_trip_quality(quality, min_psnr):
    image = picture(120, 160, noise=0)
    decoded = np.asarray(decode_jpeg(JpegEncoder(chw(image)).to_tensor(quality=quality))).transpose(1, 2, 0)
    mse = ((decoded.astype(float) - image) ** 2).mean()
    assert 10 * np.log10(255 ** 2 / mse) > min_psnr


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("level", [0, 1, 6, 9])
def test_png_round_trips_exactly(channels, level):
    image = picture(channels=channels)
    encoded = bytes(PngEncoder(chw(image)).to_tensor(compression_level=level))
    with Image.open(io.BytesIO(encoded)) as decoded:
        assert decoded.format == "PNG"
        pixels = np.asarray(decoded)
    assert np.array_equal(pixels.reshape(image.shape), image)
    assert np.array_equal(np.asarray(decode_png(encoded, mode="UNCHANGED")), chw(image))


def test_png_levels(tmp_path):
    image = picture(200, 200)
    sizes = [len(bytes(PngEncoder(chw(image)).to_tensor(compression_level=k))) for k in (0, 9)]
    assert sizes[0] > sizes[1]
    assert bytes(PngEncoder(chw(image)).to_tensor()) == bytes(PngEncoder(chw(image)).to_tensor(compression_level=6))
    path = tmp_path / "stored.png"
    PngEncoder(chw(image)).to_file(path, compression_level=0)
    assert np.array_equal(read_png(path), image)                # the PNG reader from the specification


@pytest.mark.parametrize("encoder", [JpegEncoder, PngEncoder])
def test_any_strides_give_the_same_bytes(encoder):
    image = picture(channels=3)
    reference = bytes(encoder(chw(image)).to_tensor())
    hwc_view = image.transpose(2, 0, 1)                          # (C, H, W) view of packed pixels
    flipped_twice = np.ascontiguousarray(image[::-1, ::-1]).transpose(2, 0, 1)[:, ::-1, ::-1]
    padded = np.zeros((3, 45, 80), np.uint8)
    padded[:, :, :61] = chw(image)
    for source in (hwc_view, flipped_twice, padded[:, :, :61], np.asfortranarray(chw(image))):
        assert bytes(encoder(source).to_tensor()) == reference


@pytest.mark.parametrize("encoder", [JpegEncoder, PngEncoder])
def test_destinations_agree(encoder, tmp_path):
    image = chw(picture())
    path = tmp_path / "out.img"
    encoder(image).to_file(path)
    encoder(image).to_file(str(tmp_path / "str.img"))
    buffer = io.BytesIO()
    encoder(image).to_file_like(buffer)
    with open(tmp_path / "file.img", "wb") as file:
        encoder(image).to_file_like(file)
    as_array = encoder(image).to_tensor()
    assert type(as_array) is np.ndarray and as_array.dtype == np.uint8 and as_array.ndim == 1
    data = path.read_bytes()
    assert data == buffer.getvalue() == bytes(as_array) == (tmp_path / "str.img").read_bytes()
    assert data == (tmp_path / "file.img").read_bytes()


def test_file_like_that_writes_in_pieces():
    class Trickle(io.RawIOBase):
        def __init__(self):
            self.data = bytearray()

        def writable(self):
            return True

        def write(self, chunk):
            piece = bytes(chunk[:1000])
            self.data += piece
            return len(piece)

    sink = Trickle()
    JpegEncoder(chw(picture())).to_file_like(sink, quality=90)
    assert bytes(sink.data) == bytes(JpegEncoder(chw(picture())).to_tensor(quality=90))


def test_torch_inputs_and_outputs():
    torch = pytest.importorskip("torch")
    image = picture()
    reference = bytes(JpegEncoder(chw(image)).to_tensor())
    tensor = torch.from_numpy(chw(image))
    with torchcodec.bridge("torch"):
        for source in (tensor, torch.from_numpy(image).permute(2, 0, 1), tensor.clone().requires_grad_(False)):
            encoded = JpegEncoder(source).to_tensor()
            assert isinstance(encoded, torch.Tensor) and encoded.dtype == torch.uint8 and encoded.ndim == 1
            assert bytes(encoded.numpy()) == reference
        decoded = decode_png(PngEncoder(tensor).to_tensor())
        assert torch.equal(decoded, tensor)


@pytest.mark.parametrize("encoder", [JpegEncoder, PngEncoder])
def test_bad_images_are_refused(encoder):
    with pytest.raises(RuntimeError, match="uint8"):
        encoder(np.zeros((3, 8, 8), np.float32)).to_tensor()
    for shape in ((8, 8), (1, 3, 8, 8)):
        with pytest.raises(RuntimeError, match="3-dimensional"):
            encoder(np.zeros(shape, np.uint8)).to_tensor()
    for channels in (2, 4):
        with pytest.raises(RuntimeError, match="number of channels should be 1 or 3"):
            encoder(np.zeros((channels, 8, 8), np.uint8)).to_tensor()
    with pytest.raises(ValueError, match="empty"):
        encoder(np.zeros((3, 0, 8), np.uint8)).to_tensor()
    with pytest.raises(TypeError, match="uint8 array"):
        encoder([[[0]]]).to_tensor()


@pytest.mark.parametrize("encoder", [JpegEncoder, PngEncoder])
def test_bad_destinations_are_refused(encoder, tmp_path):
    image = np.zeros((3, 8, 8), np.uint8)

    class NoWrite:
        def seek(self, offset, whence=0):
            return 0

    class NoSeek:
        def write(self, data):
            return len(data)

    with pytest.raises(RuntimeError, match="File like object must implement a write method"):
        encoder(image).to_file_like(NoWrite())
    with pytest.raises(RuntimeError, match="File like object must implement a seek method"):
        encoder(image).to_file_like(NoSeek())
    with pytest.raises(RuntimeError, match="File like object must implement a write method"):
        encoder(image).to_file_like(3)
    with pytest.raises(FileNotFoundError):
        encoder(image).to_file(tmp_path / "missing" / "out.img")


def test_settings_are_checked():
    image = np.zeros((3, 8, 8), np.uint8)
    for quality in (0, 101, -1):
        with pytest.raises(ValueError, match="Image quality should be a positive number between 1 and 100"):
            JpegEncoder(image).to_tensor(quality=quality)
    for level in (-1, 10):
        with pytest.raises(RuntimeError, match="between 0 and 9"):
            PngEncoder(image).to_file_like(io.BytesIO(), compression_level=level)


def test_cuda_tensors_are_refused_clearly_by_the_png_encoder():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a GPU")
    with pytest.raises(NotImplementedError, match="PNG encoding of an image on cuda:0 is not supported"):
        PngEncoder(torch.zeros(3, 8, 8, dtype=torch.uint8, device="cuda")).to_tensor()
