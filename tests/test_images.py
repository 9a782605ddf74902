"""Image decoders: decode_image and decode_jpeg/png/webp/gif/avif/heic against independent references
(the same libraries' command-line decoders, Pillow, a PNG writer from the specification, values
computed by hand), for every mode, output_dtype, source kind and bridge."""
from __future__ import annotations

import io
import re
import struct
from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps

import torchcodec
from torchcodec.decoders import (ImageReadMode, decode_avif, decode_gif, decode_heic, decode_image, decode_jpeg,
                                 decode_png, decode_webp)

from image_reference import (avifdec, djpeg, dwebp, exif_with_orientation, heif_convert, orient, read_png, run,
                             write_png)

MODES = ("UNCHANGED", "GRAY", "GRAY_ALPHA", "RGB", "RGB_ALPHA")


def hwc(array) -> np.ndarray:
    """A decoder's (C, H, W) or (N, C, H, W) output as (H, W, C) / (N, H, W, C) numpy."""
    array = np.asarray(array)
    return np.moveaxis(array, -3, -1)


def gradient(height: int, width: int, channels: int = 3, seed: int = 0) -> np.ndarray:
    """A smooth gradient with some noise (so that lossy codecs have work to do)."""
    x = np.linspace(0, 255, width)[None].repeat(height, 0)
    y = np.linspace(0, 255, height)[:, None].repeat(width, 1)
    planes = [x, y, (x + y) / 2, (x + 255 - y) / 2][:channels]
    noise = np.random.default_rng(seed).integers(-12, 13, (height, width, channels))
    return np.clip(np.stack(planes, -1) + noise, 0, 255).astype(np.uint8)


def luma(rgb: np.ndarray) -> np.ndarray:
    """TorchCodec's gray from RGB: 0.2989 R + 0.587 G + 0.114 B in float32, rounded half to even."""
    weights = np.array([0.2989, 0.587, 0.114], np.float32)
    total = rgb[..., 0].astype(np.float32) * weights[0]
    total = total + rgb[..., 1].astype(np.float32) * weights[1]
    total = total + rgb[..., 2].astype(np.float32) * weights[2]
    return np.rint(total).clip(0, np.iinfo(rgb.dtype).max).astype(rgb.dtype)[..., None]


def with_alpha(image: np.ndarray, alpha: np.ndarray | None = None) -> np.ndarray:
    if alpha is None:
        alpha = np.full(image.shape[:-1] + (1,), np.iinfo(image.dtype).max, image.dtype)
    return np.concatenate([image, alpha], -1)


def expected_modes(rgb: np.ndarray, alpha: np.ndarray | None = None) -> dict[str, np.ndarray]:
    """What GRAY, GRAY_ALPHA, RGB and RGB_ALPHA give for a decoded RGB(+alpha) image (TorchCodec's rules)."""
    return {"GRAY": luma(rgb), "GRAY_ALPHA": with_alpha(luma(rgb), alpha), "RGB": rgb,
            "RGB_ALPHA": with_alpha(rgb, alpha)}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("images")


# ---- JPEG ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def jpegs(folder) -> dict[str, Path]:
    """JPEGs made by Pillow's libjpeg-turbo: every chroma subsampling, progressive, restart markers,
    arithmetic coding, gray, CMYK, odd sizes."""
    image = Image.fromarray(gradient(61, 83))
    made = {}
    for name, options in {"420": {"subsampling": 2}, "422": {"subsampling": 1}, "444": {"subsampling": 0},
                          "progressive": {"progressive": True}, "restart": {"restart_marker_rows": 1}}.items():
        made[name] = folder / f"{name}.jpg"
        image.save(made[name], quality=90, **options)
    made["gray"] = folder / "gray.jpg"
    image.convert("L").save(made["gray"], quality=90)
    made["cmyk"] = folder / "cmyk.jpg"
    image.convert("CMYK").save(made["cmyk"], quality=95)
    made["tiny"] = folder / "tiny.jpg"
    Image.fromarray(gradient(1, 3)).save(made["tiny"], quality=90)
    made["rotated"] = folder / "rotated.jpg"
    image.save(made["rotated"], quality=90, exif=b"Exif\0\0" + exif_with_orientation(6))
    return made


@pytest.mark.parametrize("name", ["420", "422", "444", "progressive", "restart", "gray", "tiny"])
def test_jpeg_rgb_equals_djpeg(jpegs, name):
    assert np.array_equal(hwc(decode_jpeg(jpegs[name])), djpeg(jpegs[name]) if name != "gray"
                          else djpeg(jpegs[name]).repeat(3, -1))


@pytest.mark.parametrize("name", ["420", "444", "progressive", "gray"])
def test_jpeg_gray_is_the_luma_component_as_djpeg_gives_it(jpegs, name):
    assert np.array_equal(hwc(decode_jpeg(jpegs[name], mode="GRAY")), djpeg(jpegs[name], gray=True))


@pytest.mark.parametrize("name", ["420", "progressive", "gray", "cmyk"])
def test_jpeg_pixels_equal_pillow(jpegs, name):
    with Image.open(jpegs[name]) as image:
        reference = np.asarray(image.convert("RGB"))
    assert np.array_equal(hwc(decode_jpeg(jpegs[name])), reference)


def test_jpeg_arithmetic_coding_equals_djpeg(folder):
    path = folder / "source.ppm"
    Image.fromarray(gradient(40, 50)).save(path)
    arithmetic = folder / "arithmetic.jpg"
    arithmetic.write_bytes(run("cjpeg", "-arithmetic", "-quality", "85", path))
    assert np.array_equal(hwc(decode_jpeg(arithmetic)), djpeg(arithmetic))


def test_jpeg_unchanged_keeps_the_stored_components(jpegs):
    assert decode_jpeg(jpegs["420"], mode="UNCHANGED").shape == (3, 61, 83)
    assert np.array_equal(hwc(decode_jpeg(jpegs["gray"], mode="UNCHANGED")), djpeg(jpegs["gray"]))


def test_jpeg_alpha_modes_add_an_opaque_channel(jpegs):
    rgb, gray = djpeg(jpegs["420"]), djpeg(jpegs["420"], gray=True)
    assert np.array_equal(hwc(decode_jpeg(jpegs["420"], mode="RGB_ALPHA")), with_alpha(rgb))
    assert np.array_equal(hwc(decode_jpeg(jpegs["420"], mode="GRAY_ALPHA")), with_alpha(gray))


def test_jpeg_cmyk_as_pillow_shows_it(jpegs):
    with Image.open(jpegs["cmyk"]) as image:
        cmyk = np.asarray(image)                 # Pillow inverts Adobe CMYK
        rgb = np.asarray(image.convert("RGB"))
    assert np.array_equal(hwc(decode_jpeg(jpegs["cmyk"], mode="UNCHANGED")), cmyk)
    assert np.array_equal(hwc(decode_jpeg(jpegs["cmyk"], mode="RGB_ALPHA")), with_alpha(rgb))
    # gray: Pillow's "L" formula on Pillow's RGB, in integers: (19595 R + 38470 G + 7471 B + 0x8000) >> 16
    r, g, b = (rgb[..., k].astype(np.int64) for k in range(3))
    gray = ((r * 19595 + g * 38470 + b * 7471 + 0x8000) >> 16).astype(np.uint8)[..., None]
    assert np.array_equal(hwc(decode_jpeg(jpegs["cmyk"], mode="GRAY")), gray)
    assert np.array_equal(hwc(decode_jpeg(jpegs["cmyk"], mode="GRAY_ALPHA")), with_alpha(gray))


@pytest.mark.parametrize("orientation", range(0, 10))
@pytest.mark.parametrize("little_endian", [True, False])
def test_jpeg_exif_orientation_is_applied(folder, orientation, little_endian):
    image = gradient(31, 47)
    path = folder / f"exif_{orientation}_{little_endian}.jpg"
    Image.fromarray(image).save(path, quality=95, exif=b"Exif\0\0" + exif_with_orientation(orientation, little_endian))
    upright = djpeg(path)
    decoded = hwc(decode_jpeg(path))
    assert np.array_equal(decoded, orient(upright, orientation))
    with Image.open(path) as opened:
        assert np.array_equal(decoded, np.asarray(ImageOps.exif_transpose(opened).convert("RGB")))


def test_jpeg_orientation_applies_to_every_mode_and_dtype(folder):
    path = folder / "exif6.jpg"
    Image.fromarray(gradient(20, 30)).save(path, quality=95, exif=b"Exif\0\0" + exif_with_orientation(6))
    assert np.array_equal(hwc(decode_jpeg(path, mode="GRAY_ALPHA", output_dtype=np.uint16)),
                          orient(with_alpha(djpeg(path, gray=True)), 6).astype(np.uint16) * 257)


def test_jpeg_uses_the_first_exif_segment_and_ignores_other_app1_segments(folder):
    path = folder / "xmp_then_exif.jpg"
    Image.fromarray(gradient(20, 30)).save(path, quality=95, exif=b"Exif\0\0" + exif_with_orientation(8))
    data = path.read_bytes()
    xmp = b"http://ns.adobe.com/xap/1.0/\0<x:xmpmeta/>"
    patched = data[:2] + b"\xff\xe1" + struct.pack(">H", len(xmp) + 2) + xmp + data[2:]
    assert np.array_equal(hwc(decode_jpeg(patched)), orient(djpeg(path), 8))


@pytest.mark.parametrize("size", [1, 7, 10, 23, 65000])
def test_jpeg_malformed_exif_is_ignored(folder, size):
    path = folder / f"bad_exif_{size}.jpg"
    Image.fromarray(gradient(20, 30)).save(path, quality=95, exif=b"Exif\0\0" + b"1" * size)
    assert np.array_equal(hwc(decode_jpeg(path)), djpeg(path))


def test_jpeg_batch_equals_one_at_a_time_and_keeps_order(jpegs):
    names = ["420", "gray", "cmyk", "progressive", "rotated", "444", "tiny", "422"]
    for mode in MODES:
        batch = decode_jpeg([jpegs[n] for n in names], mode=mode, num_threads=3)
        assert isinstance(batch, list) and len(batch) == len(names)
        for name, decoded in zip(names, batch):
            assert np.array_equal(decoded, decode_jpeg(jpegs[name], mode=mode))
    assert isinstance(decode_jpeg(tuple([jpegs["420"]])), list)
    assert decode_jpeg([]) == []


def test_jpeg_batch_error_names_the_index(jpegs, folder):
    bad = folder / "bad.jpg"
    bad.write_bytes(jpegs["420"].read_bytes()[:300])
    with pytest.raises(RuntimeError, match="image 2 of the batch: Image is incomplete or truncated"):
        decode_jpeg([jpegs["420"], jpegs["gray"], bad, jpegs["444"]])
    with pytest.raises(RuntimeError, match="image 1 of the batch: .*Not a JPEG"):
        decode_jpeg([jpegs["420"], b"\0" * 100])
    with pytest.raises(TypeError, match="image 1 of the batch: Unknown source type"):
        decode_jpeg([jpegs["420"], 3])


def test_jpeg_batch_corrupt_data_error_names_the_index(jpegs):
    data = bytearray(jpegs["420"].read_bytes())
    start = data.index(b"\xff\xda")
    data[start + 40:start + 42] = b"\xff\xae"          # an unknown marker inside the scan
    with pytest.raises(RuntimeError, match="image 1 of the batch: .*Unsupported marker type"):
        decode_jpeg([jpegs["gray"], bytes(data)], num_threads=2)


def test_jpeg_warnings_are_logged_and_the_image_decodes(jpegs, caplog):
    """Stray bytes before the end marker: libjpeg warns ("Corrupt JPEG data: N extraneous bytes before
    marker 0xd9", N: what its bit buffer had not taken), decodes the image as Pillow does, and the
    warning is a record of the "torchcodec.image" logger (TorchCodec prints it on stderr), shown
    only at the WARNING log level."""
    data = jpegs["420"].read_bytes()
    assert data.endswith(b"\xff\xd9")
    damaged = data[:-2] + b"\x01" * 100 + b"\xff\xd9"
    expected = hwc(decode_jpeg(data))
    with caplog.at_level("WARNING", logger="torchcodec"):
        torchcodec.set_log_level("OFF")
        assert (hwc(decode_jpeg(damaged)) == expected).all()
        assert not [r for r in caplog.records if r.name == "torchcodec.image"]
        torchcodec.set_log_level("WARNING")
        try:
            assert (hwc(decode_jpeg(damaged)) == expected).all()
            decode_jpeg([data, damaged])
        finally:
            torchcodec.set_log_level("OFF")
    messages = [r.getMessage() for r in caplog.records if r.name == "torchcodec.image"]
    assert len(messages) == 2
    assert re.fullmatch(r"decode_jpeg: Corrupt JPEG data: \d+ extraneous bytes before marker 0xd9", messages[0])
    assert messages[1] == messages[0].replace("decode_jpeg: ", "decode_jpeg: image 1 of the batch: ")
    assert (np.asarray(Image.open(io.BytesIO(damaged)).convert("RGB")) == expected).all()


def test_jpeg_cuda_without_nvjpeg_is_refused_with_the_reason(jpegs):
    from torchcodec._cuda import _jpeg
    with pytest.raises(ValueError, match="Invalid device"):
        decode_jpeg(jpegs["420"], device="tpu")
    reason = _jpeg.reason()
    if reason is None:
        pytest.skip("nvJPEG and a GPU are usable here (tests/test_cuda_jpeg.py covers the refusals on stubs)")
    for source, device in ((jpegs["420"], "cuda"), ([jpegs["420"]], "cuda:0")):
        with pytest.raises(RuntimeError) as raised:
            decode_jpeg(source, device=device)
        assert "JPEG on CUDA (nvJPEG) is not available" in str(raised.value) and reason in str(raised.value)


def test_jpeg_num_threads_must_be_positive(jpegs):
    with pytest.raises(ValueError, match="num_threads must be >= 1"):
        decode_jpeg([jpegs["420"]], num_threads=0)


# ---- PNG -------------------------------------------------------------------------------------

def libpng_gray(rgb: np.ndarray) -> np.ndarray:
    """libpng's png_set_rgb_to_gray(0.2989, 0.587) on a file without gamma: weights in 1/32768
    (red and green truncated from 1/100000, blue the rest), the weighted sum truncated; gray pixels
    pass unchanged."""
    red, green = 29890 * 32768 // 100000, 58700 * 32768 // 100000
    blue = 32768 - red - green
    r, g, b = (rgb[..., k].astype(np.int64) for k in range(3))
    gray = np.where((r == g) & (r == b), r, (red * r + green * g + blue * b) >> 15)
    return gray.astype(rgb.dtype)[..., None]


def scale_16_to_8(samples: np.ndarray) -> np.ndarray:
    """libpng's png_set_scale_16: the nearest 8-bit value, (v * 255 + 32895) >> 16."""
    return ((samples.astype(np.int64) * 255 + 32895) >> 16).astype(np.uint8)


@pytest.mark.parametrize("channels", [1, 2, 3, 4])
def test_png_8bit_every_mode(folder, channels):
    image = gradient(29, 41, channels if channels != 2 else 2)
    if channels == 2:
        image = np.stack([gradient(29, 41, 1)[..., 0], gradient(29, 41, 4)[..., 3]], -1)
    path = folder / f"png8_{channels}.png"
    write_png(path, image)
    color = image[..., :1].repeat(3, -1) if channels <= 2 else image[..., :3]
    alpha = image[..., -1:] if channels in (2, 4) else None
    gray = image[..., :1] if channels <= 2 else libpng_gray(image[..., :3])
    expected = {"UNCHANGED": image, "GRAY": gray, "GRAY_ALPHA": with_alpha(gray, alpha), "RGB": color,
                "RGB_ALPHA": with_alpha(color, alpha)}
    for mode, values in expected.items():
        assert np.array_equal(hwc(decode_png(path, mode=mode)), values), mode


@pytest.mark.parametrize("channels", [1, 3, 4])
def test_png_16bit(folder, channels):
    rng = np.random.default_rng(channels)
    image = rng.integers(0, 65536, (11, 13, channels)).astype(np.uint16)
    path = folder / f"png16_{channels}.png"
    write_png(path, image)
    assert decode_png(path, output_dtype="auto").dtype == np.uint16
    assert np.array_equal(hwc(decode_png(path, mode="UNCHANGED", output_dtype=np.uint16)), image)
    assert np.array_equal(hwc(decode_png(path, mode="UNCHANGED", output_dtype="auto")), image)
    assert np.array_equal(hwc(decode_png(path, mode="UNCHANGED")), scale_16_to_8(image))
    if channels == 4:
        assert np.array_equal(hwc(decode_png(path, mode="RGB", output_dtype=np.uint16)), image[..., :3])
    if channels == 1:
        assert np.array_equal(hwc(decode_png(path, mode="RGB_ALPHA", output_dtype=np.uint16)),
                              with_alpha(image.repeat(3, -1)))


def test_png_8bit_to_uint16_is_times_257(folder):
    image = gradient(9, 10, 3)
    path = folder / "png8_wide.png"
    write_png(path, image)
    for mode in MODES:
        assert np.array_equal(decode_png(path, mode=mode, output_dtype=np.uint16),
                              decode_png(path, mode=mode).astype(np.uint16) * 257)


@pytest.mark.parametrize("depth", [8, 16])
def test_png_interlaced(folder, depth):
    rng = np.random.default_rng(depth)
    image = rng.integers(0, 256 if depth == 8 else 65536, (23, 19, 3)).astype(np.uint8 if depth == 8 else np.uint16)
    path = folder / f"interlaced{depth}.png"
    write_png(path, image, interlace=True)
    assert np.array_equal(hwc(decode_png(path, mode="UNCHANGED", output_dtype="auto")), image)


def test_png_palette_and_transparency_as_pillow_converts_them(folder):
    palette = Image.fromarray(gradient(30, 40)).convert("P")
    plain, transparent = folder / "palette.png", folder / "palette_trns.png"
    palette.save(plain)
    palette.info["transparency"] = bytes(range(0, 256))
    palette.save(transparent)
    with Image.open(plain) as image:
        assert np.array_equal(hwc(decode_png(plain, mode="UNCHANGED")), np.asarray(image.convert("RGB")))
    with Image.open(transparent) as image:
        rgba = np.asarray(image.convert("RGBA"))
    assert np.array_equal(hwc(decode_png(transparent, mode="UNCHANGED")), rgba)
    assert np.array_equal(hwc(decode_png(transparent, mode="RGB_ALPHA")), rgba)
    assert np.array_equal(hwc(decode_png(transparent, mode="RGB")), rgba[..., :3])
    assert np.array_equal(hwc(decode_png(transparent, mode="GRAY_ALPHA"))[..., 1], rgba[..., 3])


def test_png_trns_colour_key_becomes_alpha(folder):
    image = gradient(10, 12, 1)
    image[:, :5] = 42
    path = folder / "gray_trns.png"
    Image.fromarray(image[..., 0]).save(path, transparency=42)
    decoded = hwc(decode_png(path, mode="GRAY_ALPHA"))
    assert np.array_equal(decoded[..., 0], image[..., 0])
    assert np.array_equal(decoded[..., 1], np.where(image[..., 0] == 42, 0, 255))
    assert decode_png(path, mode="UNCHANGED").shape == (1, 10, 12)       # tRNS is not a channel


def test_png_low_bit_depths(folder):
    bits = np.random.default_rng(3).integers(0, 2, (27, 27)).astype(bool)
    path = folder / "bilevel.png"
    Image.fromarray(bits).save(path)
    assert np.array_equal(hwc(decode_png(path, mode="GRAY"))[..., 0], bits.astype(np.uint8) * 255)


@pytest.mark.parametrize("orientation", [1, 3, 5, 6, 8])
def test_png_exif_orientation_is_applied(folder, orientation):
    image = gradient(13, 21, 3)
    path = folder / f"png_exif{orientation}.png"
    write_png(path, image, chunks=[(b"eXIf", exif_with_orientation(orientation))])
    assert np.array_equal(hwc(decode_png(path)), orient(image, orientation))


# ---- WebP ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def webps(folder) -> dict[str, Path]:
    made = {"lossless": folder / "lossless.webp", "lossy": folder / "lossy.webp", "alpha": folder / "alpha.webp",
            "lossless_alpha": folder / "lossless_alpha.webp"}
    Image.fromarray(gradient(33, 45)).save(made["lossless"], lossless=True)
    Image.fromarray(gradient(33, 45)).save(made["lossy"], quality=80)
    Image.fromarray(gradient(33, 45, 4), "RGBA").save(made["alpha"], quality=80)
    Image.fromarray(gradient(33, 45, 4), "RGBA").save(made["lossless_alpha"], lossless=True, exact=True)
    return made


def test_webp_lossless_reproduces_the_source(webps):
    assert np.array_equal(hwc(decode_webp(webps["lossless"])), gradient(33, 45))
    assert np.array_equal(hwc(decode_webp(webps["lossless_alpha"], mode="UNCHANGED")), gradient(33, 45, 4))


@pytest.mark.parametrize("name", ["lossy", "alpha", "lossless"])
def test_webp_equals_dwebp_in_every_mode(webps, name):
    rgba = dwebp(webps[name], alpha=True)
    rgb = dwebp(webps[name], alpha=False)
    has_alpha = name == "alpha"
    expected = expected_modes(rgb, rgba[..., 3:] if has_alpha else None)
    expected["GRAY_ALPHA"] = with_alpha(luma(rgba[..., :3]), rgba[..., 3:])
    expected["RGB_ALPHA"] = rgba
    expected["UNCHANGED"] = rgba if has_alpha else rgb
    for mode, values in expected.items():
        assert np.array_equal(hwc(decode_webp(webps[name], mode=mode)), values), mode
    assert np.array_equal(decode_webp(webps[name], output_dtype=np.uint16),
                          decode_webp(webps[name]).astype(np.uint16) * 257)


@pytest.mark.parametrize("name, pil_mode", [("lossy", "RGB"), ("alpha", "RGBA"), ("lossless", "RGB")])
def test_webp_pixels_equal_pillow(webps, name, pil_mode):
    with Image.open(webps[name]) as image:
        reference = np.asarray(image.convert(pil_mode))
    assert np.array_equal(hwc(decode_webp(webps[name], mode=pil_mode.replace("RGBA", "RGB_ALPHA"))), reference)


def test_webp_animation_gives_every_frame(folder):
    frames = [gradient(24, 32, 4, seed=k) for k in range(4)]
    frames[1][..., 3] = 255
    path = folder / "animated.webp"
    images = [Image.fromarray(f, "RGBA") for f in frames]
    images[0].save(path, save_all=True, append_images=images[1:], duration=40, lossless=True)
    decoded = decode_webp(path, mode="RGB_ALPHA")
    assert decoded.shape == (4, 4, 24, 32)
    for k, frame in enumerate(frames):
        # lossless frames composited on a transparent canvas: only pixels with alpha are exact
        got = hwc(decoded[k])
        visible = frame[..., 3] > 0
        assert np.array_equal(got[..., 3], frame[..., 3])
        assert np.array_equal(got[visible], frame[visible])
    assert np.array_equal(hwc(decode_webp(path, mode="GRAY")), luma(hwc(decoded)[..., :3]))


def test_webp_exif_orientation_is_applied(folder):
    image = gradient(15, 26)
    for orientation, prefix in [(6, b""), (3, b"Exif\0\0")]:
        path = folder / f"webp_exif{orientation}.webp"
        Image.fromarray(image).save(path, lossless=True, exif=prefix + exif_with_orientation(orientation))
        assert np.array_equal(hwc(decode_webp(path)), orient(image, orientation))


# ---- GIF -------------------------------------------------------------------------------------

def pillow_frames(path: Path, mode: str) -> list[np.ndarray]:
    frames = []
    with Image.open(path) as image:
        for k in range(getattr(image, "n_frames", 1)):
            image.seek(k)
            frames.append(np.asarray(image.convert(mode)))
    return frames


def test_gif_still_equals_pillow(folder):
    path = folder / "still.gif"
    Image.fromarray(gradient(37, 51)).save(path)
    reference = pillow_frames(path, "RGB")[0]
    assert np.array_equal(hwc(decode_gif(path)), reference)
    assert np.array_equal(hwc(decode_gif(path, mode="RGB_ALPHA")), with_alpha(reference))
    assert np.array_equal(hwc(decode_gif(path, mode="GRAY")), luma(reference))
    assert decode_gif(path, mode="UNCHANGED").shape == (3, 37, 51)


@pytest.mark.parametrize("disposal", [0, 1, 2, 3])
def test_gif_disposal_methods_equal_pillow(folder, disposal):
    palette = [0, 255, 0, 255, 0, 0, 0, 0, 255, 255, 255, 255]
    parts = []
    for k in range(5):
        canvas = np.full((12, 16), 3, np.uint8)
        canvas[2 * k:2 * k + 4, 3 * k:3 * k + 4] = k % 3
        part = Image.fromarray(canvas, "P")
        part.putpalette(palette)
        parts.append(part)
    path = folder / f"disposal{disposal}.gif"
    parts[0].save(path, save_all=True, append_images=parts[1:], disposal=[1] + [disposal] * 4, duration=30)
    decoded = hwc(decode_gif(path))
    reference = pillow_frames(path, "RGB")
    assert decoded.shape == (len(reference), 12, 16, 3)
    for got, expected in zip(decoded, reference):
        assert np.array_equal(got, expected)


def test_gif_transparency_alpha_equals_pillow_and_rgb_shows_the_background(folder):
    palette = [0, 255, 0, 255, 0, 0, 0, 0, 255, 9, 8, 7]
    parts = []
    for k in range(3):
        canvas = np.full((10, 14), 3, np.uint8)          # index 3 is transparent
        canvas[k:k + 5, 2 * k:2 * k + 5] = k
        part = Image.fromarray(canvas, "P")
        part.putpalette(palette)
        parts.append(part)
    path = folder / "transparent.gif"
    parts[0].save(path, save_all=True, append_images=parts[1:], transparency=3, disposal=2, duration=30,
                  background=2)
    reference = pillow_frames(path, "RGBA")
    rgba = hwc(decode_gif(path, mode="RGB_ALPHA"))
    assert np.array_equal(hwc(decode_gif(path, mode="UNCHANGED")), rgba)
    for got, expected in zip(rgba, reference):
        assert np.array_equal(got[..., 3], expected[..., 3])
        visible = expected[..., 3] > 0
        assert np.array_equal(got[visible], expected[visible])
        assert not got[~visible].any()                         # cleared to (0, 0, 0, 0)
    rgb = hwc(decode_gif(path))
    data = path.read_bytes()          # the logical screen descriptor: background index, then the global palette
    background = data[11]
    colour = np.frombuffer(data[13 + 3 * background:16 + 3 * background], np.uint8)
    assert np.array_equal(rgb[rgba[..., 3] == 0], np.broadcast_to(colour, (int((rgba[..., 3] == 0).sum()), 3)))
    assert np.array_equal(rgb[rgba[..., 3] > 0], rgba[..., :3][rgba[..., 3] > 0])


def gif_bytes(screen: tuple[int, int], frames: list[tuple[int, int, int, int, bytes]], *,
              transparent: int | None = None, colors: int = 4) -> bytes:
    """A GIF written by hand: a global palette of ``colors`` grays, frames (left, top, width, height,
    LZW data with code size 2) each after a graphics control block."""
    palette = b"".join(bytes([v, v, v]) for v in np.linspace(0, 255, colors).astype(int))
    bits = int(np.log2(colors)) - 1
    out = b"GIF89a" + struct.pack("<HHBBB", screen[0], screen[1], 0x80 | bits, 0, 0) + palette
    for left, top, width, height, data in frames:
        flags = 1 if transparent is not None else 0
        out += b"\x21\xf9\x04" + bytes([flags]) + b"\0\0" + bytes([transparent or 0]) + b"\0"
        out += b"\x2c" + struct.pack("<HHHHB", left, top, width, height, 0) + b"\x02"
        out += bytes([len(data)]) + data + b"\0"
    return out + b"\x3b"


# LZW (code size 2) for one pixel of index 1: clear (4), 1, end (5), in 3-bit codes
ONE_PIXEL = bytes([0b01001100, 0b00000001])


def test_gif_frame_larger_than_the_screen_widens_the_output():
    frame = Image.new("P", (1, 3), 1)
    buffer = io.BytesIO()
    frame.save(buffer, "GIF")
    with Image.open(io.BytesIO(buffer.getvalue())) as image:
        assert image.size == (1, 3)
    data = bytearray(buffer.getvalue())
    data[6:10] = struct.pack("<HH", 1, 2)                        # shrink the logical screen to 1x2
    decoded = decode_gif(bytes(data), mode="RGB_ALPHA")
    assert decoded.shape == (4, 3, 1)
    assert (np.asarray(decoded)[3] == 255).all()


def test_gif_hand_written_frames_composite():
    data = gif_bytes((3, 2), [(0, 0, 1, 1, ONE_PIXEL), (2, 1, 1, 1, ONE_PIXEL)], transparent=0)
    decoded = hwc(decode_gif(data, mode="RGB_ALPHA"))
    gray = 85                                                  # index 1 of the 4-gray palette
    expected = np.zeros((2, 2, 3, 4), np.uint8)
    expected[:, 0, 0] = (gray, gray, gray, 255)
    expected[1, 1, 2] = (gray, gray, gray, 255)
    assert np.array_equal(decoded, expected)


def test_gif_frame_outside_the_screen_is_clipped():
    data = gif_bytes((2, 2), [(0, 0, 1, 1, ONE_PIXEL), (5, 5, 1, 1, ONE_PIXEL)])
    decoded = hwc(decode_gif(data))
    gray = 85                                                  # index 1 of the 4-gray palette
    expected = np.zeros((2, 2, 2, 3), np.uint8)                # the background: index 0, black
    expected[:, 0, 0] = gray                                   # the second frame draws nothing
    assert np.array_equal(decoded, expected)


# ---- AVIF ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def avifs(folder) -> dict[str, Path]:
    """AVIFs made by avifenc (libavif): 8/10/12-bit, 4:2:0 and 4:4:4, alpha, a 3-frame sequence."""
    made = {}
    rgb8, rgba8 = folder / "avif_source.png", folder / "avif_source_alpha.png"
    write_png(rgb8, gradient(30, 44))
    write_png(rgba8, gradient(30, 44, 4))
    wide = folder / "avif_source16.png"
    write_png(wide, (gradient(30, 44).astype(np.uint16) * 257) ^ np.uint16(0x5a))
    for name, args, source in [("420", ["-y", "420"], rgb8), ("444", ["-y", "444"], rgb8), ("alpha", [], rgba8),
                               ("10bit", ["-d", "10", "-y", "444"], wide), ("12bit", ["-d", "12"], wide)]:
        made[name] = folder / f"{name}.avif"
        run("avifenc", "-s", "8", *args, source, made[name])
    frames = []
    for k in range(3):
        frames.append(folder / f"avif_frame{k}.png")
        write_png(frames[-1], gradient(30, 44, seed=k))
    made["sequence"] = folder / "sequence.avif"
    run("avifenc", "-s", "8", *frames, made["sequence"])
    return made


@pytest.mark.parametrize("name", ["420", "444"])
def test_avif_8bit_equals_avifdec(avifs, name, tmp_path):
    rgb = avifdec(avifs[name], 8, tmp_path)[..., :3]
    expected = expected_modes(rgb)
    expected["UNCHANGED"] = rgb
    for mode, values in expected.items():
        assert np.array_equal(hwc(decode_avif(avifs[name], mode=mode)), values), mode


def test_avif_alpha(avifs, tmp_path):
    rgba = avifdec(avifs["alpha"], 8, tmp_path)
    assert np.array_equal(hwc(decode_avif(avifs["alpha"], mode="UNCHANGED")), rgba)
    assert np.array_equal(hwc(decode_avif(avifs["alpha"], mode="RGB_ALPHA")), rgba)
    assert np.array_equal(hwc(decode_avif(avifs["alpha"], mode="GRAY_ALPHA")), with_alpha(luma(rgba[..., :3]),
                                                                                         rgba[..., 3:]))
    # Without alpha in the output, libavif composites the colours on black (as TorchCodec gives them).
    rgb = hwc(decode_avif(avifs["alpha"], mode="RGB"))
    premultiplied = (rgba[..., :3].astype(int) * rgba[..., 3:] + 127) // 255
    assert np.abs(rgb.astype(int) - premultiplied).max() <= 1
    assert np.array_equal(hwc(decode_avif(avifs["alpha"], mode="GRAY")), luma(rgb))


@pytest.mark.parametrize("name", ["10bit", "12bit"])
def test_avif_high_bit_depth_equals_avifdec(avifs, name, tmp_path):
    wide = decode_avif(avifs[name], output_dtype="auto")
    assert wide.dtype == np.uint16
    assert np.array_equal(hwc(wide), avifdec(avifs[name], 16, tmp_path))
    assert np.array_equal(hwc(decode_avif(avifs[name])), avifdec(avifs[name], 8, tmp_path))
    assert np.array_equal(hwc(decode_avif(avifs[name], mode="GRAY", output_dtype=np.uint16)), luma(hwc(wide)))


def test_avif_8bit_source_to_uint16_is_libavif_16bit_conversion(avifs, tmp_path):
    assert np.array_equal(hwc(decode_avif(avifs["420"], output_dtype=np.uint16)), avifdec(avifs["420"], 16, tmp_path))
    assert decode_avif(avifs["420"], output_dtype="auto").dtype == np.uint8


def test_avif_sequence_gives_every_frame(avifs, tmp_path):
    decoded = decode_avif(avifs["sequence"])
    assert decoded.shape == (3, 3, 30, 44)
    first = avifdec(avifs["sequence"], 8, tmp_path)           # avifdec writes the first frame, as RGBA
    assert np.array_equal(hwc(decode_avif(avifs["sequence"], mode="RGB_ALPHA")[0]), first)
    assert not np.array_equal(decoded[0], decoded[1])


@pytest.mark.parametrize("irot, imir", [(1, None), (2, None), (3, None), (None, 0), (None, 1), (1, 0), (3, 1)])
def test_avif_irot_imir_are_applied(folder, irot, imir, tmp_path):
    source = folder / "avif_source.png"
    path = tmp_path / "transformed.avif"
    args = (["--irot", str(irot)] if irot is not None else []) + (["--imir", str(imir)] if imir is not None else [])
    run("avifenc", "-s", "8", "-l", *args, source, path)
    stored = avifdec(path, 8, tmp_path)                        # avifdec writes the stored pixels
    # HEIF: 'irot' turns anti-clockwise by 90 degrees times its angle, then 'imir' mirrors (0: top
    # and bottom exchanged, 1: left and right)
    expected = np.rot90(stored, irot or 0)
    if imir is not None:
        expected = expected[::-1] if imir == 0 else expected[:, ::-1]
    assert np.array_equal(hwc(decode_avif(path)), expected)


def test_avif_num_threads(avifs):
    reference = decode_avif(avifs["420"])
    assert np.array_equal(decode_avif(avifs["420"], num_threads=4), reference)
    for bad in (0, -1):
        with pytest.raises(RuntimeError, match="num_threads must be >= 1"):
            decode_avif(avifs["420"], num_threads=bad)


# ---- HEIC ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def heics(folder) -> dict[str, Path]:
    """HEICs made by heif-enc (libheif with x265): 8-bit lossy, lossless 4:4:4 with alpha, 10-bit,
    and two top-level images."""
    made = {}
    rgb, rgba, wide = folder / "heic_rgb.png", folder / "heic_rgba.png", folder / "heic16.png"
    write_png(rgb, gradient(32, 48))
    write_png(rgba, gradient(32, 48, 4))
    write_png(wide, gradient(32, 48).astype(np.uint16) * 257)
    for name, args, source in [("lossy", ["-q", "80"], rgb), ("alpha", ["-L", "-p", "chroma=444"], rgba),
                               ("10bit", ["-L", "-p", "chroma=444", "-b", "10"], wide)]:
        made[name] = folder / f"{name}.heic"
        run("heif-enc", *args, source, "-o", made[name])
    second = folder / "heic_second.png"
    write_png(second, gradient(32, 48, seed=5)[::-1].copy())
    made["two"] = folder / "two.heic"
    run("heif-enc", "-q", "80", rgb, second, "-o", made["two"])
    return made


@pytest.mark.parametrize("name", ["lossy", "alpha"])
def test_heic_equals_heif_convert(heics, name, tmp_path):
    reference = heif_convert(heics[name], tmp_path)[0]
    rgb = reference[..., :3]
    alpha = reference[..., 3:] if reference.shape[-1] == 4 else None
    expected = expected_modes(rgb, alpha)
    expected["UNCHANGED"] = reference
    for mode, values in expected.items():
        got = hwc(decode_heic(heics[name], mode=mode))
        assert np.array_equal(got, values), mode


def test_heic_10bit_scales_by_bit_replication(heics, tmp_path):
    reference = heif_convert(heics["10bit"], tmp_path)[0]      # heif-convert writes 10-bit values << 6
    raw = (reference >> 6).astype(np.uint32)
    expected = ((raw << 6) | (raw >> 4)).astype(np.uint16)
    assert np.array_equal(hwc(decode_heic(heics["10bit"], output_dtype="auto")), expected)
    assert np.array_equal(hwc(decode_heic(heics["10bit"], output_dtype=np.uint16, mode="RGB_ALPHA")),
                          with_alpha(expected))
    assert decode_heic(heics["10bit"]).dtype == np.uint8
    assert np.abs(hwc(decode_heic(heics["10bit"])).astype(int) - np.rint(expected / 257)).max() <= 1


def test_heic_8bit_to_uint16_is_times_257(heics):
    assert np.array_equal(decode_heic(heics["lossy"], output_dtype=np.uint16),
                          decode_heic(heics["lossy"]).astype(np.uint16) * 257)


def test_heic_several_top_level_images(heics, tmp_path):
    decoded = decode_heic(heics["two"])
    references = heif_convert(heics["two"], tmp_path)
    assert decoded.shape == (2, 3, 32, 48) and len(references) == 2
    for got, expected in zip(decoded, references):
        assert np.array_equal(hwc(got), expected)


# ---- decode_image, arguments, sources, bridges ----------------------------------------------

@pytest.fixture(scope="module")
def one_of_each(jpegs, webps, avifs, heics, folder) -> dict[str, Path]:
    png, gif = folder / "one.png", folder / "one.gif"
    write_png(png, gradient(12, 16, 4))
    Image.fromarray(gradient(12, 16)).save(gif)
    return {"jpeg": jpegs["420"], "png": png, "webp": webps["alpha"], "gif": gif, "avif": avifs["alpha"],
            "heic": heics["alpha"]}


@pytest.mark.parametrize("kind", ["jpeg", "png", "webp", "gif", "avif", "heic"])
def test_decode_image_picks_the_decoder_from_the_content(one_of_each, kind, tmp_path):
    decoders = {"jpeg": decode_jpeg, "png": decode_png, "webp": decode_webp, "gif": decode_gif,
                "avif": decode_avif, "heic": decode_heic}
    renamed = tmp_path / "no_extension.bin"
    renamed.write_bytes(one_of_each[kind].read_bytes())
    for mode in ("UNCHANGED", "GRAY_ALPHA"):
        for dtype in (np.uint8, np.uint16, "auto"):
            assert np.array_equal(decode_image(renamed, mode=mode, output_dtype=dtype),
                                  decoders[kind](one_of_each[kind], mode=mode, output_dtype=dtype))


def test_decode_image_unknown_format():
    with pytest.raises(ValueError, match="Unsupported or unrecognized image format"):
        decode_image(bytes(range(64)))


def test_modes_are_case_insensitive_strings_or_enums(one_of_each):
    path = one_of_each["png"]
    reference = decode_png(path, mode="RGB_ALPHA")
    for mode in ("rgb_alpha", "Rgb_Alpha", "RGBA", "rgba", ImageReadMode.RGB_ALPHA, ImageReadMode.RGBA):
        assert np.array_equal(decode_png(path, mode=mode), reference)
    with pytest.raises(ValueError, match="Invalid mode 'CMYK'"):
        decode_png(path, mode="CMYK")
    with pytest.raises(TypeError, match="mode must be a str"):
        decode_png(path, mode=3)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, "uint8", "float32", np.uint32])
def test_output_dtype_must_be_uint8_uint16_or_auto(one_of_each, dtype):
    with pytest.raises(ValueError, match="Invalid output_dtype"):
        decode_png(one_of_each["png"], output_dtype=dtype)


def test_sources_decode_alike(one_of_each):
    path = one_of_each["jpeg"]
    data = path.read_bytes()
    reference = decode_jpeg(path)
    padded = np.zeros(2 * len(data), np.uint8)
    padded[::2] = np.frombuffer(data, np.uint8)
    for source in (str(path), path, data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8),
                   padded[::2], io.BytesIO(data), open(path, "rb")):
        assert np.array_equal(decode_jpeg(source), reference)
        assert np.array_equal(decode_image(source if not hasattr(source, "seek") else io.BytesIO(data)), reference)


def test_bad_sources():
    with pytest.raises(TypeError, match="Unknown source type"):
        decode_png(123)
    with pytest.raises(TypeError, match="binary mode"):
        decode_png(io.StringIO("text"))
    with pytest.raises(FileNotFoundError):
        decode_png("/no/such/image.png")
    for bad, phrase in ((np.zeros((2, 50), np.uint8), "1-dimensional"), (np.zeros(50, np.float32), "uint8"),
                        (np.zeros(0, np.uint8), "non-empty"), (b"", "non-empty")):
        with pytest.raises(ValueError, match=phrase) as raised:
            decode_png(bad)
        assert isinstance(raised.value, RuntimeError)


def test_outputs_are_views_of_hwc_memory_allocated_by_the_bridge(one_of_each):
    decoded = decode_png(one_of_each["png"], mode="UNCHANGED")
    assert type(decoded) is np.ndarray and decoded.shape == (4, 12, 16)
    assert decoded.strides == (1, 16 * 4, 4)                    # channels innermost, no copy made
    assert decoded.base is not None and decoded.base.flags.c_contiguous


def test_torch_bridge_gives_tensors_and_reads_tensor_sources(one_of_each):
    torch = pytest.importorskip("torch")
    data = one_of_each["webp"].read_bytes()
    reference = decode_webp(one_of_each["webp"], mode="UNCHANGED")
    with torchcodec.bridge("torch"):
        contiguous = torch.frombuffer(bytearray(data), dtype=torch.uint8)
        padded = torch.zeros(2 * len(data), dtype=torch.uint8)
        padded[::2] = contiguous
        for source in (contiguous, padded[::2]):
            tensor = decode_webp(source, mode="UNCHANGED", output_dtype=torch.uint8)
            assert isinstance(tensor, torch.Tensor) and tensor.dtype == torch.uint8
            assert tensor.stride() == (1, 45 * 4, 4)
            assert np.array_equal(tensor.numpy(), reference)
        wide = decode_webp(data, output_dtype=torch.uint16)
        assert wide.dtype == torch.uint16
        batch = decode_jpeg([one_of_each["jpeg"]] * 2)
        assert all(isinstance(item, torch.Tensor) for item in batch)
        with pytest.raises(ValueError, match="1-dimensional"):
            decode_webp(torch.zeros(2, 10, dtype=torch.uint8))
        with pytest.raises(RuntimeError, match="uint8"):
            decode_webp(torch.zeros(10, dtype=torch.float32))


def test_jax_bridge(one_of_each):
    jnp = pytest.importorskip("jax.numpy")
    with torchcodec.bridge("jax"):
        decoded = decode_gif(one_of_each["gif"])
        from_jax_source = decode_png(jnp.asarray(np.frombuffer(one_of_each["png"].read_bytes(), np.uint8)))
    assert "jax" in type(decoded).__module__
    assert np.array_equal(np.asarray(decoded), decode_gif(one_of_each["gif"]))
    assert np.array_equal(np.asarray(from_jax_source), decode_png(one_of_each["png"]))


def test_import_torchcodec_loads_no_image_library():
    import subprocess
    import sys
    code = ("import torchcodec, torchcodec.decoders, torchcodec.encoders, sys; "
            "print(sorted(m for m in sys.modules if m.startswith('torchcodec._image.') or m in ('torch', 'numpy')))")
    out = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parent.parent).stdout
    assert out.strip() == "['torchcodec._image._build_config', 'torchcodec._image._common']"
