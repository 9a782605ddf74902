"""Still and animated images: decode_image, decode_jpeg, decode_png, decode_webp, decode_gif,
decode_avif, decode_heic, with TorchCodec 0.17's API and behaviour (see docs/images.md).

Outputs are (C, H, W) arrays ((N, C, H, W) for animations and image sequences) of the bridge's
library: the codec (torchcodec._image) reads the header, asks for memory of the final shape, which is
allocated here with the bridge's library as (H, W, C), and writes the pixels into it in place; the
result is the (C, H, W) view of that memory, as TorchCodec's outputs are.
"""
from __future__ import annotations

import contextvars
import ctypes
import enum
import io
import os
from typing import Any, Literal, Union

from torchcodec import _outputs
from torchcodec._core._devices import parse_device
from torchcodec._image import ImageCodecUnavailableError, codec
from torchcodec._core._error import InvalidArgumentError
from torchcodec._image._common import EncodedBytes, ImageTooLargeError

__all__ = ["ImageCodecUnavailableError", "ImageReadMode", "ImageTooLargeError", "decode_avif", "decode_gif",
           "decode_heic", "decode_image", "decode_jpeg", "decode_png", "decode_webp", "get_max_image_pixels",
           "set_max_image_pixels"]

ImageSource = Union[str, os.PathLike, bytes, bytearray, memoryview, Any]
Mode = Union[Literal["UNCHANGED", "GRAY", "GRAY_ALPHA", "RGB", "RGB_ALPHA"], "ImageReadMode"]


class ImageReadMode(enum.Enum):
    """Colour mode of a decoded image. Plain strings (case-insensitive) work too: ``mode="rgb"``.

    UNCHANGED keeps the source's channels (gray, gray+alpha, RGB, RGBA; CMYK for such JPEGs); GRAY and
    GRAY_ALPHA give luma (+ alpha); RGB and RGB_ALPHA give colour (+ alpha). A missing alpha channel
    is opaque (the dtype's maximum).
    """

    UNCHANGED = 0
    GRAY = 1
    GRAY_ALPHA = 2
    RGB = 3
    RGB_ALPHA = 4
    RGBA = 4  # alias of RGB_ALPHA


_DEFAULT_MAX_PIXELS = 1 << 30
_max_pixels: contextvars.ContextVar[int] = contextvars.ContextVar("torchcodec_max_image_pixels",
                                                                   default=_DEFAULT_MAX_PIXELS)


def set_max_image_pixels(limit: int | None) -> None:
    """Set the most pixels (all frames together) an image decoder will allocate for this thread/task;
    ``None`` restores the default, 2**30 (a 32768 x 32768 image). A file whose header declares more
    raises ImageTooLargeError before anything is allocated: the guard against decompression bombs
    and corrupt headers."""
    if limit is None:
        limit = _DEFAULT_MAX_PIXELS
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise ValueError(f"the pixel limit must be a positive int, got {limit!r}")
    _max_pixels.set(limit)


def get_max_image_pixels() -> int:
    """The pixel limit set by set_max_image_pixels (default 2**30)."""
    return _max_pixels.get()


# ---- arguments -----------------------------------------------------------------------------

def _normalize_mode(mode: Any) -> int:
    if isinstance(mode, ImageReadMode):
        return mode.value
    if isinstance(mode, str):
        try:
            return ImageReadMode[mode.upper()].value
        except KeyError:
            valid = ", ".join(repr(name) for name in ImageReadMode.__members__)
            raise ValueError(f"Invalid mode {mode!r}. Supported modes are {valid} (case-insensitive).") from None
    raise TypeError(f"mode must be a str (or ImageReadMode), got {type(mode)}.")


def _dtype_code(output_dtype: Any) -> int:
    """0 (uint8), 1 (uint16) or 2 ("auto"), from numpy or torch dtypes; None (the default) is uint8.
    Strings other than "auto" are refused, as TorchCodec refuses them."""
    if output_dtype is None:
        return 0
    if isinstance(output_dtype, str):
        if output_dtype == "auto":
            return 2
    else:
        name = _outputs.dtype_name(output_dtype)          # a numpy or torch dtype
        if name in ("uint8", "uint16"):
            return 0 if name == "uint8" else 1
    raise ValueError(f"Invalid output_dtype ({output_dtype}). Supported values are uint8 and uint16 (numpy or "
                     f"torch dtypes), and 'auto'.")


def _encoded(source: ImageSource) -> EncodedBytes:
    """The encoded bytes of ``source``, read in place where they are already in memory."""
    if type(source) is bytes and source:          # the common case first
        return EncodedBytes(source)
    if isinstance(source, (str, os.PathLike)):
        with open(os.fspath(source), "rb") as file:
            source = file.read()
    elif isinstance(source, io.TextIOBase):
        raise TypeError("the file object is in text mode; open it in binary mode ('rb')")
    elif hasattr(source, "read") and not hasattr(source, "__array_interface__"):
        source = source.read()
        if not isinstance(source, (bytes, bytearray)):
            raise TypeError(f"the file object's read() returned {type(source).__name__}, not bytes: open it in "
                            f"binary mode ('rb')")
    if isinstance(source, (bytes, bytearray, memoryview)):
        view = memoryview(source)
        if view.nbytes == 0:
            raise InvalidArgumentError("Input tensor must be 1-dimensional and non-empty: the encoded data is empty "
                                     "(0 bytes)")
        if not view.c_contiguous or view.ndim != 1 or view.itemsize != 1:
            source = view.tobytes()
        return EncodedBytes(source)
    if _outputs.adapter_of(source) is not None or hasattr(source, "__array_interface__"):
        device = _outputs.device_of(source)
        if device != "cpu":
            raise InvalidArgumentError(f"Input tensor must be on the CPU, got a tensor on {device}.")
        memory = _outputs.describe(source, writable=False, name="the encoded image")
        _check_encoded_array(memory.shape, memory.dtype)
        if memory.shape[0] > 1 and memory.strides != (1,):
            return EncodedBytes(_gathered(memory))
        return EncodedBytes(memory.data, memory.address, memory.shape[0])
    raise TypeError(f"Unknown source type: {type(source)}. Supported types are str, Path, bytes, bytearray, "
                    f"memoryview, a binary file object, and a 1-D uint8 array or tensor of encoded bytes.")


def _gathered(memory: _outputs.Memory) -> bytes:
    """The bytes of a strided 1-D uint8 array (any step, even negative or zero), copied once."""
    count, step = memory.shape[0], memory.strides[0]
    if step == 0:
        return ctypes.string_at(memory.address, 1) * count
    low, high = memory.extent()
    region = memoryview((ctypes.c_char * (high - low)).from_address(low)).cast("B")
    return region[::step].tobytes()         # a negative step starts from element 0, at the top


def _check_encoded_array(shape: tuple[int, ...], dtype: str) -> None:
    count = 1
    for extent in shape:
        count *= extent
    if len(shape) != 1 or dtype != "uint8" or count == 0:
        raise InvalidArgumentError(f"Input tensor must be a non-empty, 1-dimensional uint8 array of encoded bytes, "
                                 f"got {len(shape)} dims, dtype {dtype} and {count} numels.")


class _Outputs:
    """The allocator given to a codec: allocates (H, W, C) or (N, H, W, C) memory with the bridge's
    library and returns its address; remembers the arrays."""

    __slots__ = ("name", "memories")

    def __init__(self) -> None:
        self.name = _outputs.get_bridge()
        self.memories: list[_outputs.Memory] = []

    def __call__(self, shape: tuple[int, ...], dtype: str) -> int:
        memory = _outputs.allocate(shape, dtype, bridge=self.name)
        self.memories.append(memory)
        return memory.address

    def result(self, index: int = 0) -> Any:
        """The index-th image as (C, H, W) (or (N, C, H, W)) of the bridge's type: a view of its memory."""
        memory = self.memories[index]
        return memory.finish(_outputs.nchw(memory.data))


def _decode(name: str, source: ImageSource, mode: Any, output_dtype: Any, **options: Any) -> Any:
    code = _dtype_code(output_dtype)
    mode_value = _normalize_mode(mode)
    encoded = source if isinstance(source, EncodedBytes) else _encoded(source)
    module = codec(name)
    outputs = _Outputs()
    module.decode(encoded.address, encoded.size, mode_value, code, _max_pixels.get(), outputs, **options)
    return outputs.result()


# ---- the decoders --------------------------------------------------------------------------

def _device_index(device: Any) -> int | None:
    """None for the CPU, N for "cuda" (0) / "cuda:N" (torch.device objects too); ValueError otherwise."""
    try:
        name, index = parse_device("cpu" if device is None else device)
    except ValueError:
        name, index = "", None
    if name == "cpu":
        return None
    if name != "cuda":
        raise InvalidArgumentError(f"Invalid device {device!r}: decode_jpeg decodes on 'cpu', 'cuda' or 'cuda:N'")
    return index


def decode_jpeg(source: ImageSource | list[ImageSource] | tuple[ImageSource, ...], *, mode: Mode = "RGB",
                output_dtype: Any = None, device: Any = "cpu", num_threads: int | None = None) -> Any:
    """Decode a JPEG into a (C, H, W) uint8 array, or a list (or tuple) of JPEGs into a list of them.

    On the CPU (the default), a list is decoded on ``num_threads`` threads (default: one per CPU
    core this process may use, at most one per image) without the GIL, every image straight into its
    own output. ``device="cuda"`` (or "cuda:N") decodes with nvJPEG into new contiguous arrays of
    the bridge's CUDA library (torch, cupy, or torchcodec's DeviceBuffer), on its current stream: a
    list in one call, through the GPU's JPEG engines where it has them (baseline JPEGs; the others
    one at a time); pass lists for speed. An error names the index of the image that failed.
    ``mode``: "RGB" (default), "GRAY" (the luma component), "GRAY_ALPHA", "RGB_ALPHA" (opaque alpha
    added), "UNCHANGED" (the stored components: 1, 3, or 4 for CMYK on the CPU; 1 or 3 on CUDA,
    where CMYK is refused). ``output_dtype``: uint8, uint16 (the 8-bit values times 257) or "auto"
    (uint8). The EXIF orientation is applied. Raises RuntimeError with libjpeg's (or nvJPEG's)
    message for corrupt data ("Image is incomplete or truncated." for a truncated stream).

    Args:
        source: a path (str or os.PathLike), bytes, bytearray, memoryview, a 1-D uint8 array or CPU
            tensor of encoded bytes (read in place), or a binary file object; or a list or tuple
            of those. The encoded bytes are on the CPU, also for CUDA decoding.
        mode: "RGB", "GRAY", "GRAY_ALPHA", "RGB_ALPHA" or "UNCHANGED" (any case), or an
            :class:`ImageReadMode`.
        output_dtype: None or uint8 (numpy or torch dtype), uint16, or "auto".
        device: "cpu" (the default), "cuda" or "cuda:N" (a torch.device too).
        num_threads: CPU threads for a list (>= 1); None: one per usable CPU core, at most one per
            image. Not used on CUDA.

    Returns:
        A (C, H, W) array of the bridge's library, or a list of them for a list or tuple.

    Raises:
        RuntimeError: corrupt or truncated data, with libjpeg's or nvJPEG's message; on CUDA, no
            usable GPU or no libnvjpeg (saying where it was looked for), before any work.
        ValueError: an unknown mode, output_dtype or device, an empty source (an empty list on
            CUDA), or ``num_threads < 1``.
        TypeError: a source of no supported kind, or a text-mode file.
        ImageTooLargeError: the header declares more pixels than ``get_max_image_pixels()`` (a
            MemoryError and a RuntimeError), raised before allocating.
        ImageCodecUnavailableError: this build has no JPEG codec (an ImportError and a RuntimeError).
    """
    device_index = _device_index(device)
    if device_index is not None:
        return _decode_jpeg_cuda(source, mode, output_dtype, device_index)
    if not isinstance(source, (list, tuple)):
        return _decode("jpeg", source, mode, output_dtype)
    code = _dtype_code(output_dtype)
    mode_value = _normalize_mode(mode)
    if num_threads is None:
        num_threads = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    elif not isinstance(num_threads, int) or num_threads < 1:
        raise InvalidArgumentError(f"num_threads must be >= 1, got {num_threads}")
    encoded = _encoded_batch(source)
    module = codec("jpeg")
    outputs = _Outputs()
    module.decode_batch([(item.address, item.size) for item in encoded], mode_value, code, _max_pixels.get(),
                        outputs, num_threads)
    return [outputs.result(index) for index in range(len(encoded))]


def _encoded_batch(sources: list[ImageSource] | tuple[ImageSource, ...]) -> list[EncodedBytes]:
    encoded = []
    for index, item in enumerate(sources):
        try:
            encoded.append(_encoded(item))
        except (TypeError, ValueError, OSError) as error:
            raise type(error)(f"decode_jpeg: image {index} of the batch: {error}") from error
    return encoded


def _decode_jpeg_cuda(source: Any, mode: Any, output_dtype: Any, device_index: int) -> Any:
    """decode_jpeg(device="cuda:N"): nvJPEG (torchcodec._cuda._jpeg), after the gate."""
    from torchcodec._cuda import _jpeg
    code = _dtype_code(output_dtype)
    mode_value = _normalize_mode(mode)
    _jpeg.check(device_index, "decode_jpeg")          # before any work
    batch = isinstance(source, (list, tuple))
    encoded = _encoded_batch(source) if batch else [_encoded(source)]
    decoded = _jpeg.decode(encoded, mode_value, code == 1, device_index, _max_pixels.get(), batch=batch)
    return decoded if batch else decoded[0]


def decode_png(source: ImageSource, *, mode: Mode = "RGB", output_dtype: Any = None) -> Any:
    """Decode a PNG into a (C, H, W) array.

    ``mode`` as for decode_jpeg (UNCHANGED keeps gray, gray+alpha, RGB or RGBA; a palette gives RGB, or
    RGBA with a tRNS chunk); tRNS transparency becomes alpha in the alpha modes. ``output_dtype``:
    uint8 (16-bit samples scaled down), uint16 (8-bit samples scaled up, 0..255 to 0..65535) or "auto"
    (uint16 for 16-bit PNGs). The eXIf orientation is applied.
    """
    return _decode("png", source, mode, output_dtype)


def decode_webp(source: ImageSource, *, mode: Mode = "RGB", output_dtype: Any = None) -> Any:
    """Decode a WebP into a (C, H, W) array, or an animated WebP into (N, C, H, W) (every frame
    composited). UNCHANGED gives RGBA when the image has alpha; uint16 is the 8-bit values times 257.
    The EXIF orientation is applied."""
    return _decode("webp", source, mode, output_dtype)


def decode_gif(source: ImageSource, *, mode: Mode = "RGB", output_dtype: Any = None) -> Any:
    """Decode a GIF into a (C, H, W) array, or an animated one into (N, C, H, W): each frame composited
    over what the previous frame's disposal left. Transparent areas have alpha 0 in the alpha modes
    (UNCHANGED is RGBA when any frame is transparent) and the GIF's background colour in RGB."""
    return _decode("gif", source, mode, output_dtype)


def decode_avif(source: ImageSource, *, mode: Mode = "RGB", output_dtype: Any = None,
                num_threads: int = 1) -> Any:
    """Decode an AVIF into a (C, H, W) array, or an image sequence into (N, C, H, W). ``output_dtype``:
    uint8, uint16 (libavif's conversion to 0..65535 from any source depth) or "auto" (uint16 for 10-
    and 12-bit sources). ``num_threads`` is passed to libavif's AV1 decoder. The 'irot'/'imir'
    orientation is applied."""
    if not isinstance(num_threads, int) or num_threads < 1:
        raise InvalidArgumentError(f"num_threads must be >= 1, got {num_threads}")
    return _decode("avif", source, mode, output_dtype,
                   num_threads=num_threads)


def decode_heic(source: ImageSource, *, mode: Mode = "RGB", output_dtype: Any = None) -> Any:
    """Decode an HEIC/HEIF into a (C, H, W) array, or several top-level images into (N, C, H, W) (all
    of the first one's size and depth). ``output_dtype``: uint8, uint16 (>8-bit samples scaled to
    0..65535 by bit replication; 8-bit ones times 257) or "auto" (uint16 for >8-bit sources).
    libheif applies the 'irot'/'imir' orientation."""
    return _decode("heic", source, mode, output_dtype)


def _detect_format(head: bytes) -> str:
    if head[:3] == b"\xff\xd8\xff":
        return "jpeg"
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return "png"
    if head[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    if head[4:8] == b"ftyp":
        brands = head[8:]                          # major brand, minor version, compatible brands
        if b"avif" in brands or b"avis" in brands:
            return "avif"
        if any(brand in brands for brand in (b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1",
                                             b"msf1")):
            return "heic"
    raise ValueError("Unsupported or unrecognized image format. Supported formats are JPEG, PNG, WebP, GIF, "
                     "AVIF and HEIC. If you know you have a valid image, try using the dedicated decode_* "
                     "functions like decode_jpeg() instead.")


def decode_image(source: ImageSource, *, mode: Mode = "RGB", output_dtype: Any = None) -> Any:
    """Decode a JPEG, PNG, WebP, GIF, AVIF or HEIC image, recognised by its first bytes (not its file
    name), with the decoder of that format: (C, H, W), or (N, C, H, W) for animations and sequences.

    Args:
        source: a path (str or os.PathLike), bytes, bytearray, memoryview, a 1-D uint8 array or CPU
            tensor of encoded bytes (read in place), or a binary file object.
        mode: "RGB" (default), "GRAY", "GRAY_ALPHA", "RGB_ALPHA" or "UNCHANGED" (any case), or an
            :class:`ImageReadMode`; see each format's decoder for what UNCHANGED keeps.
        output_dtype: None or uint8 (numpy or torch dtype), uint16, or "auto" (uint16 for sources
            with more than 8 bits per sample).

    Returns:
        A (C, H, W) array of the bridge's library, or (N, C, H, W) for animations and sequences.

    Raises:
        ValueError: unrecognised data, an unknown mode or output_dtype, or an empty source.
        RuntimeError: corrupt or truncated data, with the library's message.
        TypeError: a source of no supported kind, or a text-mode file.
        ImageTooLargeError: the header declares more pixels than ``get_max_image_pixels()`` (a
            MemoryError and a RuntimeError), raised before allocating.
        ImageCodecUnavailableError: this build has no codec for the format (an ImportError and a
            RuntimeError).
    """
    encoded = _encoded(source)
    name = _detect_format(encoded.head(64))
    return _decode(name, encoded, mode, output_dtype)
