#!/usr/bin/env python3
"""Check JPEG on the GPU (nvJPEG: decode_jpeg(device="cuda"), JpegEncoder of CUDA images) on a
machine with an NVIDIA GPU, one row at a time.

    python tools/gpu/jpeg_check.py [--device cuda:0] [--out DIR] [--quick] [--inputs DIR]
    python tools/gpu/jpeg_check.py --write-inputs DIR

Each row (step, check, subject, result, status) is printed and appended to DIR/gpu_jpeg_check.md
and DIR/gpu_jpeg_check.jsonl as soon as it is known; an exception is reported in its row and never
stops the others. Statuses are tools/gpu/check.py's (ok, FAIL, info, skipped, "limit: ..." for a
hardware limit), whose ``--rows`` puts these rows into tools/gpu_check.sh's table. Exit status 1
when a row failed.

The JPEGs it decodes are made with Pillow (libjpeg-turbo), by name (RECIPES); where Pillow is not
installed (the GPU machine) ``--inputs DIR`` reads them from DIR, which ``--write-inputs DIR`` wrote
where Pillow is (tools/gpu_bundle.sh: .gpu/jpeg). The steps:

1. library: the gate (torchcodec._cuda._jpeg.reason), the libnvjpeg found and its version, the
   device, and whether it has JPEG engines (nvJPEG's hardware backend: "limit: no JPEG engines"
   where it has none, a hardware limit). Unavailable FAILs.
2. pixels: JPEGs made by Pillow (libjpeg-turbo) from a smooth picture and a textured one, in 4:4:4,
   4:2:2, 4:2:0, gray, progressive, odd sizes and with restart markers, decoded by nvJPEG and by the
   CPU decoder (libjpeg-turbo), judged by TOLERANCES below; then every mode and uint16.
3. batch: a batch of baseline, progressive and gray JPEGs: how many went through the JPEG engines,
   each output equal to decoding that image alone (the same path: exact), and the engines' output
   against the CUDA backend's (the batch decoded with the engines kept out), judged by TOLERANCES.
4. orientation: the eight EXIF orientations against the CPU decoder (shapes exact, pixels judged).
5. errors: a corrupt image in a batch named by its index, CMYK refused, a truncated stream.
6. encode: JpegEncoder of a CUDA image at qualities 25, 75, 95, the bytes decoded on the CPU against
   the source (PSNR) and against Pillow's 4:4:4 JPEG of that picture at the same quality (against
   the picture Pillow encoded): nvJPEG may be at most
   1.0 dB worse (the same IJG quantisation tables, another forward DCT and rounding); a flipped view
   (gathered into planes first) as good as the planar image; torch and cupy arrays, planar and
   interleaved, when installed: the same bytes as the planar DeviceBuffer.
7. streams (torch with CUDA): a decode on a non-default torch stream right after a large matrix
   product queued there, summed on that stream without a host wait, equals a quiet decode.
8. bench: a batch of 1080p JPEGs (made by torchcodec's CPU JpegEncoder), nvJPEG against
   libjpeg-turbo on all CPU threads (images/s; tools/bench/nvjpeg.py is the full benchmark).

TOLERANCES: nvJPEG is not libjpeg-turbo. Its inverse DCT (and the hardware engine's) is another
implementation: the JPEG standard bounds an IDCT's error by 1 per sample against the exact transform
(ITU-T T.83, the IEEE 1180 test), so two compliant decoders may differ by 2 per Y, Cb or Cr sample;
gray images differ by that (max 2). In colour, the YCbCr -> RGB conversion scales a chroma
difference by up to 1.772 (B from Cb) and rounds once more: max 2 + 1.772 * 2 + 1 -> 6 for 4:4:4.
Subsampled chroma (4:2:2, 4:2:0) is upsampled differently: libjpeg-turbo's "fancy" triangular
filter against nvJPEG's own, which differ most at chroma edges, so only the share of values within 3
(at least 99%, TorchCodec's own test) and the mean (at most 1.5) are bounded there, and the max is
reported. Means are bounded by 0.5 (gray) and 0.75 (4:4:4).
"""
from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path
from typing import Any, Callable, Iterator, Optional

import numpy as np


@dataclasses.dataclass(frozen=True)
class Tolerance:
    max_abs: Optional[int]      # largest |GPU - CPU| of a uint8 value; None: not bounded (reported)
    mean_abs: float             # bound on the mean |GPU - CPU|
    within3: float = 0.0        # least share of values with |GPU - CPU| <= 3


TOLERANCES = {
    "gray": Tolerance(2, 0.5),
    "444": Tolerance(6, 0.75),
    "subsampled": Tolerance(None, 1.5, 0.99),
}


@dataclasses.dataclass
class Row:
    step: str
    check: str
    subject: str
    result: str
    status: str


# Statuses, as tools/gpu/check.py has them (gpu/rows.py).
OK, FAIL, INFO, SKIPPED, NO_ENGINES = "ok", "FAIL", "info", "skipped", "limit: no JPEG engines"


class Report:
    """The table of a check: OUT/<name>.md and OUT/<name>.jsonl, a row at a time (also
    tools/gpu/transforms.py's)."""

    def __init__(self, out: Path, name: str = "gpu_jpeg_check") -> None:
        out.mkdir(parents=True, exist_ok=True)
        self.markdown, self.jsonl = out / f"{name}.md", out / f"{name}.jsonl"
        self.markdown.write_text("| step | check | subject | result | status |\n|---|---|---|---|---|\n")
        self.jsonl.write_text("")
        self.failed = False

    def add(self, row: Row) -> None:
        self.failed |= row.status == FAIL
        line = f"| {row.step} | {row.check} | {row.subject} | {row.result} | {row.status} |"
        print(line, flush=True)
        with self.markdown.open("a") as file:
            file.write(line + "\n")
        with self.jsonl.open("a") as file:
            file.write(json.dumps(dataclasses.asdict(row)) + "\n")

    def run(self, step: str, rows: Callable[[], Iterator[Row]]) -> None:
        try:
            for row in rows():
                self.add(row)
        except Exception as error:            # reported in its row; the other steps still run
            detail = traceback.format_exception_only(type(error), error)[-1].strip()
            self.add(Row(step, "raised", "-", detail.replace("|", "/")[:300], FAIL))

    def run_steps(self, checks: Any, steps: list[str], gate: str) -> int:
        """Run ``checks``' methods named ``steps`` in order (nothing more once the step named
        ``gate`` failed); the exit status: 1 when a row failed."""
        for step in steps:
            self.run(step, getattr(checks, step))
            if step == gate and self.failed:
                break
        return 1 if self.failed else 0


# ---- images -------------------------------------------------------------------------------------

def smooth(height: int, width: int) -> np.ndarray:
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    return np.stack([128 + 100 * np.sin(x / 37.0), 128 + 100 * np.cos(y / 23.0), (x + y) * 255 / (height + width)],
                    axis=-1).astype(np.uint8)


def textured(height: int, width: int, seed: int = 0) -> np.ndarray:
    noise = np.random.default_rng(seed).integers(-12, 13, (height, width, 3))
    return np.clip(smooth(height, width).astype(int) + noise, 0, 255).astype(np.uint8)


def jpeg(array: np.ndarray, **options: Any) -> bytes:
    from PIL import Image
    image = Image.fromarray(array)
    if options.pop("gray", False):
        image = image.convert("L")
    if options.pop("cmyk", False):
        image = image.convert("CMYK")
    orientation = options.pop("orientation", 0)
    if orientation:
        exif = Image.Exif()
        exif[0x0112] = orientation
        options["exif"] = exif.tobytes()
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", **{"quality": 90, **options})
    return buffer.getvalue()


def _smooth_picture() -> np.ndarray:
    return smooth(480, 640)


def _rough_picture() -> np.ndarray:
    return textured(251, 333)


def _turned_picture() -> np.ndarray:
    return smooth(120, 200)


def _encode_picture() -> np.ndarray:
    return textured(240, 320, seed=1)


ENCODE_QUALITIES = (25, 75, 95)

# name -> (the picture, Pillow's options): every JPEG the check decodes or compares with.
RECIPES: dict[str, tuple[Callable[[], np.ndarray], dict[str, Any]]] = {
    "smooth 4:4:4": (_smooth_picture, {"subsampling": 0}),
    "smooth 4:2:2": (_smooth_picture, {"subsampling": 1}),
    "smooth 4:2:0": (_smooth_picture, {"subsampling": 2}),
    "smooth gray": (_smooth_picture, {"gray": True}),
    "textured 333x251 4:4:4": (_rough_picture, {"subsampling": 0}),
    "textured 333x251 4:2:0": (_rough_picture, {"subsampling": 2}),
    "textured 4:2:0 progressive": (_rough_picture, {"subsampling": 2, "progressive": True}),
    "smooth 4:2:0 quality 50": (_smooth_picture, {"subsampling": 2, "quality": 50}),
    **{f"EXIF {k}": (_turned_picture, {"subsampling": 2, "orientation": k}) for k in range(1, 9)},
    "CMYK": (lambda: smooth(64, 64), {"cmyk": True}),
    "encode source": (_encode_picture, {"subsampling": 0, "quality": 100}),
    **{f"Pillow 4:4:4 quality {q}": (_encode_picture, {"subsampling": 0, "quality": q}) for q in ENCODE_QUALITIES},
}

# The decoded cases, by name: their tolerance key.
CASES = {"smooth 4:4:4": "444", "smooth 4:2:2": "subsampled", "smooth 4:2:0": "subsampled", "smooth gray": "gray",
         "textured 333x251 4:4:4": "444", "textured 333x251 4:2:0": "subsampled",
         "textured 4:2:0 progressive": "subsampled", "smooth 4:2:0 quality 50": "subsampled"}


def file_name(name: str) -> str:
    """The file a recipe's JPEG is kept in (``--write-inputs``)."""
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_") + ".jpg"


class Inputs:
    """The JPEGs of RECIPES by name: read from ``folder`` when given (written by write_inputs), else
    made with Pillow, once each."""

    def __init__(self, folder: Optional[Path]) -> None:
        self.folder, self.made = folder, {}

    def __getitem__(self, name: str) -> bytes:
        if name not in self.made:
            if self.folder is not None:
                self.made[name] = (self.folder / file_name(name)).read_bytes()
            else:
                picture, options = RECIPES[name]
                self.made[name] = jpeg(picture(), **options)
        return self.made[name]


def write_inputs(folder: Path) -> None:
    """Every JPEG of RECIPES into ``folder`` (Pillow needed), for a machine without Pillow."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, (picture, options) in RECIPES.items():
        (folder / file_name(name)).write_bytes(jpeg(picture(), **options))


def differences(gpu: np.ndarray, cpu: np.ndarray) -> dict[str, float]:
    diff = np.abs(gpu.astype(np.int64) - cpu.astype(np.int64))
    return {"max": int(diff.max()), "mean": float(diff.mean()), "within3": float((diff <= 3).mean())}


def judged(stats: dict[str, float], key: str) -> str:
    tolerance = TOLERANCES[key]
    ok = (stats["mean"] <= tolerance.mean_abs and stats["within3"] >= tolerance.within3
          and (tolerance.max_abs is None or stats["max"] <= tolerance.max_abs))
    return OK if ok else FAIL


def shown(stats: dict[str, float], key: str) -> str:
    tolerance = TOLERANCES[key]
    bound = f"max <= {tolerance.max_abs}" if tolerance.max_abs is not None else f">= {tolerance.within3:.0%} within 3"
    return (f"max {stats['max']}, mean {stats['mean']:.3f}, {stats['within3']:.2%} within 3 "
            f"({key}: {bound}, mean <= {tolerance.mean_abs})")


# ---- the checks -----------------------------------------------------------------------------------

class Checks:
    def __init__(self, device: str, quick: bool, inputs: Inputs) -> None:
        import torchcodec
        torchcodec.set_bridge("numpy")        # DeviceBuffer outputs, read through the CUDA Array Interface
        from torchcodec.decoders import decode_jpeg
        from torchcodec.encoders import JpegEncoder
        self.device, self.quick = device, quick
        self.decode_jpeg, self.JpegEncoder = decode_jpeg, JpegEncoder
        self.inputs = inputs
        self.cases = {name: (inputs[name], key) for name, key in CASES.items()}

    def gpu(self, data: Any, **options: Any) -> Any:
        return self.decode_jpeg(data, device=self.device, **options)

    def library(self) -> Iterator[Row]:
        from torchcodec._core._devices import parse_device
        from torchcodec._cuda import _driver, _jpeg, _nvjpeg
        why = _jpeg.reason()
        yield Row("library", "gate", "nvJPEG", why or "available", FAIL if why else OK)
        if why:
            return
        library = _nvjpeg.load_nvjpeg()
        context = _driver.load_driver().context(parse_device(self.device)[1])
        handles = _nvjpeg.device(context)
        yield Row("library", "found", library.path, f"nvJPEG {'.'.join(map(str, library.version))}", INFO)
        yield Row("library", "device", context.name, "JPEG engines: yes" if handles.hardware else
                  "this GPU has no JPEG engines: batches are decoded by nvJPEG's CUDA backend", INFO if handles.hardware
                  else NO_ENGINES)

    def pixels(self) -> Iterator[Row]:
        for name, (data, key) in self.cases.items():
            stats = differences(to_numpy(self.gpu(data)), self.decode_jpeg(data))
            yield Row("pixels", "RGB vs libjpeg-turbo", name, shown(stats, key), judged(stats, key))
        data, key = self.cases["smooth 4:2:0"]
        for mode in ("UNCHANGED", "GRAY", "RGB_ALPHA", "GRAY_ALPHA"):
            gpu, cpu = to_numpy(self.gpu(data, mode=mode)), self.decode_jpeg(data, mode=mode)
            if gpu.shape != cpu.shape:
                yield Row("pixels", f"mode {mode}", "smooth 4:2:0", f"shape {gpu.shape} != {cpu.shape}", FAIL)
                continue
            stats = differences(gpu, cpu)
            mode_key = "gray" if mode.startswith("GRAY") else key
            yield Row("pixels", f"mode {mode}", "smooth 4:2:0", shown(stats, mode_key), judged(stats, mode_key))
        wide = to_numpy(self.gpu(data, output_dtype=np.uint16))
        narrow = to_numpy(self.gpu(data))
        exact = wide.dtype == np.uint16 and (wide == narrow.astype(np.uint16) * 257).all()
        yield Row("pixels", "uint16 = uint8 * 257", "smooth 4:2:0", "equal" if exact else "differs",
                  OK if exact else FAIL)

    def batch(self) -> Iterator[Row]:
        from torchcodec._core._devices import parse_device
        from torchcodec._cuda import _jpeg
        from torchcodec.decoders._image_decoders import _encoded, get_max_image_pixels
        names = ["smooth 4:2:0", "textured 4:2:0 progressive", "smooth gray", "smooth 4:4:4", "smooth 4:2:2"] * 4
        datas = [self.cases[name][0] for name in names]
        index = parse_device(self.device)[1]
        paths: dict[str, int] = {}
        engines = _jpeg.decode([_encoded(d) for d in datas], 3, False, index, get_max_image_pixels(), batch=True,
                               paths=paths)
        yield Row("batch", "paths", f"{len(datas)} images", f"{paths['hardware']} by the JPEG engines, "
                  f"{paths['single']} one at a time", INFO)
        alone = [to_numpy(self.gpu(d)) for d in datas]
        same = all((to_numpy(e) == a).all() for e, a in zip(engines, alone))
        yield Row("batch", "batch = each image alone", f"{len(datas)} images", "equal" if same else "differs",
                  OK if same else FAIL)
        backend = _jpeg.decode([_encoded(d) for d in datas], 3, False, index, get_max_image_pixels(), batch=True,
                               hardware=False)
        for name in dict.fromkeys(names):
            k = names.index(name)
            stats = differences(to_numpy(engines[k]), to_numpy(backend[k]))
            key = self.cases[name][1]
            yield Row("batch", "engines vs CUDA backend", name, shown(stats, key), judged(stats, key))

    def orientation(self) -> Iterator[Row]:
        for orientation in range(1, 9):
            data = self.inputs[f"EXIF {orientation}"]
            gpu, cpu = to_numpy(self.gpu(data)), self.decode_jpeg(data)
            if gpu.shape != cpu.shape:
                yield Row("orientation", "shape", f"EXIF {orientation}", f"{gpu.shape} != {cpu.shape}", FAIL)
                continue
            stats = differences(gpu, cpu)
            yield Row("orientation", "RGB vs libjpeg-turbo", f"EXIF {orientation}", shown(stats, "subsampled"),
                      judged(stats, "subsampled"))

    def errors(self) -> Iterator[Row]:
        good = self.cases["smooth 4:2:0"][0]
        progressive = self.cases["textured 4:2:0 progressive"][0]
        second = progressive.index(b"\xff\xda", progressive.index(b"\xff\xda") + 2)
        corrupt = bytearray(progressive)
        corrupt[second + 5] = 9                     # the second scan names a component that does not exist
        for name, bad, phrase in (("corrupt scan", bytes(corrupt), "image 2 of the batch"),
                                  ("CMYK", self.inputs["CMYK"], "Unknown chroma subsampling"),
                                  ("truncated", good[: len(good) // 2], "Image is incomplete or truncated.")):
            try:
                self.gpu([good, good, bad, good])
                message = "decoded without an error"
            except RuntimeError as error:
                message = str(error)
            ok = phrase in message and "image 2 of the batch" in message
            yield Row("errors", name, "batch of 4, bad at 2", message.replace("|", "/")[:200], OK if ok else FAIL)

    def encode(self) -> Iterator[Row]:
        picture = _encode_picture().transpose(2, 0, 1)
        source = self.gpu(self.inputs["encode source"])       # (3, H, W) planar
        pixels = to_numpy(source)
        planar = {}
        for quality in ENCODE_QUALITIES:
            planar[quality] = to_numpy(self.JpegEncoder(source).to_tensor(quality=quality)).tobytes()
            decoded = self.decode_jpeg(planar[quality])
            pillows = self.inputs[f"Pillow 4:4:4 quality {quality}"]
            ours, theirs = psnr(decoded, pixels), psnr(self.decode_jpeg(pillows), picture)
            yield Row("encode", f"quality {quality}", "planar", f"PSNR {ours:.2f} dB vs Pillow 4:4:4 {theirs:.2f} dB; "
                      f"{len(planar[quality])} vs {len(pillows)} bytes", OK if ours >= theirs - 1.0 else FAIL)
        flipped = source.as_strided((3, 240, 320), (240 * 320, -320, 1), offset=239 * 320)
        data = to_numpy(self.JpegEncoder(flipped).to_tensor(quality=75)).tobytes()
        ours = psnr(self.decode_jpeg(data), np.ascontiguousarray(pixels[:, ::-1]))
        reference = psnr(self.decode_jpeg(planar[75]), pixels)
        yield Row("encode", "flipped view (gathered into planes)", "quality 75", f"PSNR {ours:.2f} dB vs planar "
                  f"{reference:.2f} dB", OK if abs(ours - reference) <= 0.5 else FAIL)
        for library in ("torch", "cupy"):
            yield self.encode_library(library, pixels, planar[75])

    def encode_library(self, library: str, pixels: np.ndarray, planar: bytes) -> Row:
        """JpegEncoder of ``library``'s CUDA arrays, planar and interleaved (an (H, W, 3) array seen as
        (3, H, W)): the same bytes as the DeviceBuffer's."""
        try:
            module = __import__(library)
        except ImportError:
            return Row("encode", f"{library} inputs", "-", f"{library} not installed", SKIPPED)
        if library == "torch":
            if not module.cuda.is_available():
                return Row("encode", "torch inputs", "-", "torch has no CUDA", SKIPPED)
            images = [module.from_numpy(pixels.copy()).to(self.device),
                      module.from_numpy(pixels.transpose(1, 2, 0).copy()).to(self.device).permute(2, 0, 1)]
        else:
            images = [module.asarray(pixels), module.asarray(pixels.transpose(1, 2, 0).copy()).transpose(2, 0, 1)]
        same = []
        for image in images:
            buffer = io.BytesIO()
            self.JpegEncoder(image).to_file_like(buffer, quality=75)
            same.append(buffer.getvalue() == planar)
        return Row("encode", f"{library} inputs", "planar, interleaved", f"same bytes as the DeviceBuffer: {same}",
                   OK if all(same) else FAIL)

    def streams(self) -> Iterator[Row]:
        try:
            import torch
        except ImportError:
            yield Row("streams", "torch stream", "-", "torch not installed", SKIPPED)
            return
        if not torch.cuda.is_available():
            yield Row("streams", "torch stream", "-", "torch has no CUDA", SKIPPED)
            return
        import torchcodec
        datas = [self.cases["smooth 4:2:0"][0], self.cases["textured 333x251 4:2:0"][0]] * 4
        with torchcodec.bridge("torch"):
            quiet = [self.gpu(d).sum().item() for d in datas]
            stream = torch.cuda.Stream(device=self.device)
            big = torch.randn(4096, 4096, device=self.device)
            bad = 0
            for _ in range(4 if self.quick else 16):
                with torch.cuda.stream(stream):
                    for _ in range(4):
                        big = big @ big / 4096          # keeps the stream busy before the decode
                    sums = [image.sum() for image in self.gpu(datas)]
                stream.synchronize()
                bad += sum(int(s.item()) != q for s, q in zip(sums, quiet))
        yield Row("streams", "decode on a busy torch stream", f"{len(datas)} images", f"{bad} wrong sums",
                  OK if bad == 0 else FAIL)

    def bench(self) -> Iterator[Row]:
        from torchcodec._cuda import _device_buffer, _driver
        from torchcodec._core._devices import parse_device
        count = 64 if self.quick else 256
        frames = [self.JpegEncoder(np.ascontiguousarray(textured(1080, 1920, seed=k).transpose(2, 0, 1)))
                  .to_tensor(quality=90).tobytes() for k in range(4)]
        items = [frames[k % 4] for k in range(count)]
        context = _driver.load_driver().context(parse_device(self.device)[1])
        self.gpu(items[:32])
        start = time.perf_counter()
        for k in range(0, count, 32):
            self.gpu(items[k:k + 32])
        _device_buffer.synchronize_context(context)
        gpu = time.perf_counter() - start
        start = time.perf_counter()
        for k in range(0, count, 32):
            self.decode_jpeg(items[k:k + 32], num_threads=len(os.sched_getaffinity(0)))
        cpu = time.perf_counter() - start
        yield Row("bench", "1080p JPEG q90, batches of 32", f"{count} images",
                  f"nvJPEG {count / gpu:.0f} images/s, libjpeg-turbo ({len(os.sched_getaffinity(0))} threads) "
                  f"{count / cpu:.0f} images/s: {cpu / gpu:.2f}x", INFO)


def to_numpy(array: Any) -> np.ndarray:
    """A CUDA array on the host: cupy's and torch's through their own copies, torchcodec's
    DeviceBuffer through the driver (cuMemcpyDtoH of its extent, in its device's primary context)."""
    if hasattr(array, "get"):
        return array.get()
    if hasattr(array, "cpu"):
        return array.cpu().numpy()
    import ctypes
    interface = array.__cuda_array_interface__          # its getter waits for the buffer's writes
    itemsize = np.dtype(interface["typestr"]).itemsize
    shape, strides = tuple(interface["shape"]), interface["strides"]
    if strides is None:
        strides = tuple(int(np.prod(shape[k + 1:], dtype=np.int64)) * itemsize for k in range(len(shape)))
    address = interface["data"][0]
    low = address + sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    span = address + sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + itemsize - low
    raw = np.empty(span, np.uint8)
    cuda = ctypes.CDLL("libcuda.so.1")
    device, context = ctypes.c_int(), ctypes.c_void_p()
    check = [cuda.cuDeviceGet(ctypes.byref(device), array.device),
             cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device),
             cuda.cuCtxPushCurrent_v2(context),
             cuda.cuMemcpyDtoH_v2(raw.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint64(low), ctypes.c_size_t(span)),
             cuda.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p())),
             cuda.cuDevicePrimaryCtxRelease(device)]
    if any(check):
        raise RuntimeError(f"copying a DeviceBuffer to the host failed: CUresults {check}")
    return np.lib.stride_tricks.as_strided(raw[address - low:].view(interface["typestr"]), shape, strides).copy()


def psnr(decoded: np.ndarray, source: np.ndarray) -> float:
    error = np.mean((decoded.astype(np.float64) - source.astype(np.float64)) ** 2)
    return float("inf") if error == 0 else 10 * np.log10(255.0 ** 2 / error)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/gpu_check")))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--inputs", type=Path, help="read the JPEGs from this folder (see --write-inputs)")
    parser.add_argument("--write-inputs", type=Path, metavar="DIR",
                        help="write the JPEGs the check decodes into DIR (needs Pillow) and exit")
    parser.add_argument("--only", default="library,pixels,batch,orientation,errors,encode,streams,bench")
    args = parser.parse_args(argv)
    if args.write_inputs is not None:
        write_inputs(args.write_inputs)
        return 0
    checks = Checks(args.device, args.quick, Inputs(args.inputs))
    return Report(args.out).run_steps(checks, args.only.split(","), "library")


if __name__ == "__main__":
    sys.exit(main())
