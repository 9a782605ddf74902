"""Image codecs: one Cython module per library (libjpeg-turbo's TurboJPEG, libpng, libwebp with
libwebpdemux, giflib, libavif, libheif). See docs/images.md.

A module exists only when its library was found at build time (``_build_config``); ``codec(name)``
imports it on first use (so ``import torchcodec`` loads none of the libraries) or raises
``ImageCodecUnavailableError`` naming what to install.
"""
from __future__ import annotations

from types import ModuleType

from torchcodec._image import _build_config


class ImageCodecUnavailableError(ImportError, RuntimeError):
    """This build of torchcodec has no codec for the format: its library was not found when it was built."""


# name: (build flag, library, Debian/Ubuntu package, conda-forge package)
LIBRARIES = {
    "jpeg": (_build_config.JPEG, "libjpeg-turbo's TurboJPEG library (libturbojpeg)", "libturbojpeg0-dev",
             "libjpeg-turbo"),
    "png": (_build_config.PNG, "libpng", "libpng-dev", "libpng"),
    "webp": (_build_config.WEBP, "libwebp with libwebpdemux", "libwebp-dev", "libwebp"),
    "gif": (_build_config.GIF, "giflib (libgif)", "libgif-dev", "giflib"),
    "avif": (_build_config.AVIF, "libavif", "libavif-dev", "libavif"),
    "heic": (_build_config.HEIF, "libheif", "libheif-dev", "libheif"),
}


def available() -> dict[str, bool]:
    """Which image codecs this build has: {"jpeg": True, "png": True, ...}."""
    return {name: bool(entry[0]) for name, entry in LIBRARIES.items()}


_loaded: dict[str, ModuleType] = {}


def codec(name: str) -> ModuleType:
    """The codec module for ``name`` ("jpeg", "png", "webp", "gif", "avif", "heic"), or
    ImageCodecUnavailableError when this build has none."""
    module = _loaded.get(name)
    if module is not None and LIBRARIES[name][0]:
        return module
    built, library, debian, conda = LIBRARIES[name]
    install = (f"Install it (Debian/Ubuntu: apt-get install {debian}; conda: conda install -c conda-forge {conda}) "
               f"and rebuild torchcodec (pip install ., or bash tools/setup.sh).")
    # "Failed to load the HEIC decoding library": TorchCodec's phrase, which its users match
    failed = "Failed to load the HEIC decoding library. " if name == "heic" else ""
    if not built:
        raise ImageCodecUnavailableError(
            f"{failed}this torchcodec was built without {name.upper()} support: {library} was not found when it "
            f"was built. {install}")
    try:
        module = _import(name)
    except ImportError as error:                   # built, but its library cannot be loaded now
        raise ImageCodecUnavailableError(
            f"{failed}torchcodec's {name.upper()} codec could not be loaded ({error}): {library} is missing or "
            f"broken on this system. {install}") from error
    _loaded[name] = module
    return module


def _import(name: str) -> ModuleType:
    if name == "jpeg":
        from torchcodec._image import _jpeg as module
    elif name == "png":
        from torchcodec._image import _png as module
    elif name == "webp":
        from torchcodec._image import _webp as module
    elif name == "gif":
        from torchcodec._image import _gif as module
    elif name == "avif":
        from torchcodec._image import _avif as module
    else:
        from torchcodec._image import _heic as module
    return module
