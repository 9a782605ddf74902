#!/usr/bin/env python3
"""Decode the same images with this package and with TorchCodec 0.17, and print every difference.

    .venv/bin/python -P tools/compat/compare_images.py [--tc-python /work/tcvenv/bin/python]
        [--tc-checkout /work/tcsrc] [--keep DIR] [-v]

Builds a corpus of images (Pillow: JPEG in every subsampling, progressive, gray, CMYK, all eight EXIF
orientations; PNG 1/8/16-bit, palette, tRNS, gray+alpha, RGBA; WebP lossy, lossless, alpha, animated;
GIF still and animated with each disposal method; AVIF; HEIC through libheif's heif-enc; truncated
and corrupt files), adds TorchCodec's own test images when a checkout is given, then decodes each
with ``decode_image`` in every mode and output_dtype, here and (in a subprocess, in TorchCodec's own
venv) with TorchCodec. Reports per file and setting: equal, the largest pixel difference, or the
errors on both sides. Exit status 0 when nothing differs beyond the known library-version cases
the summary lists.
"""
from __future__ import annotations

import argparse
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

MODES = ("UNCHANGED", "GRAY", "GRAY_ALPHA", "RGB", "RGB_ALPHA")
DTYPES = ("uint8", "uint16", "auto")


# ---- corpus ---------------------------------------------------------------------------------

def gradient(height: int, width: int, alpha: bool = False):
    import numpy
    x = numpy.linspace(0, 255, width)[None].repeat(height, 0)
    y = numpy.linspace(0, 255, height)[:, None].repeat(width, 1)
    planes = [x, y, (x + y) / 2] + ([(x + 255 - y) / 2] if alpha else [])
    return numpy.stack(planes, -1).astype(numpy.uint8)


def make_corpus(folder: Path) -> list[Path]:
    import numpy
    from PIL import Image
    rgb = Image.fromarray(gradient(37, 53))
    rgba = Image.fromarray(gradient(37, 53, alpha=True), "RGBA")
    made = []

    def save(image, name, **options):
        path = folder / name
        image.save(path, **options)
        made.append(path)

    for sub in (0, 1, 2):
        save(rgb, f"sub{sub}.jpg", quality=90, subsampling=sub)
    save(rgb, "progressive.jpg", quality=90, progressive=True)
    save(rgb.convert("L"), "gray.jpg", quality=90)
    save(rgb.convert("CMYK"), "cmyk.jpg", quality=95)
    for orientation in range(1, 9):
        exif = rgb.getexif()
        exif[0x0112] = orientation
        save(rgb, f"exif{orientation}.jpg", quality=95, exif=exif.tobytes())
        save(rgb, f"exif{orientation}.png", exif=exif.tobytes())
        save(rgb, f"exif{orientation}.webp", lossless=True, exif=exif.tobytes())
    save(rgb, "rgb.png")
    save(rgba, "rgba.png")
    save(rgb.convert("L"), "gray.png")
    save(rgba.convert("LA"), "la.png")
    save(rgb.convert("P"), "palette.png")
    palette = rgb.convert("P")
    palette.info["transparency"] = bytes(range(0, 256))
    save(palette, "palette_trns.png")
    save(rgb.convert("L"), "gray_trns.png", transparency=40)
    save(rgb, "rgb_trns.png", transparency=(0, 0, 0))
    save(rgb.convert("1"), "bilevel.png")
    save(Image.fromarray((numpy.arange(37 * 53, dtype=numpy.uint16).reshape(37, 53) * 31)), "gray16.png")
    save(rgb, "lossy.webp", quality=80)
    save(rgb, "lossless.webp", lossless=True)
    save(rgba, "alpha.webp", quality=80)
    frames = [Image.fromarray(numpy.roll(gradient(24, 32), 5 * k, axis=1)) for k in range(3)]
    frames[0].save(folder / "animated.webp", save_all=True, append_images=frames[1:], duration=50, lossless=True)
    made.append(folder / "animated.webp")
    save(rgb, "still.gif")
    for disposal in (0, 1, 2, 3):
        parts = []
        for k in range(4):
            canvas = numpy.full((16, 16), 3, numpy.uint8)
            canvas[4 * k:4 * k + 5, 2 * k:2 * k + 6] = k % 3
            part = Image.fromarray(canvas, "P")
            part.putpalette([0, 255, 0, 255, 0, 0, 0, 0, 255, 255, 255, 255])
            parts.append(part)
        parts[0].save(folder / f"disposal{disposal}.gif", save_all=True, append_images=parts[1:],
                      disposal=[1, disposal, disposal, disposal], transparency=3, duration=40)
        made.append(folder / f"disposal{disposal}.gif")
    save(rgb, "rgb.avif", quality=90)
    save(rgba, "rgba.avif", quality=90)
    if shutil.which("heif-enc"):
        source = folder / "heif_source.png"
        rgb.save(source)
        for name, extra in (("rgb.heic", []), ("lossless.heic", ["-L", "-p", "chroma=444"])):
            subprocess.run(["heif-enc", *extra, "-q", "90", str(source), "-o", str(folder / name)], check=True,
                           capture_output=True)
            made.append(folder / name)
        source.unlink()
    for path in list(made[:3]) + [folder / "rgb.png", folder / "lossy.webp", folder / "disposal2.gif",
                                  folder / "rgb.avif"]:
        data = path.read_bytes()
        truncated = folder / f"truncated_{path.name}"
        truncated.write_bytes(data[: len(data) // 2])
        made.append(truncated)
    garbage = folder / "garbage.jpg"
    garbage.write_bytes(b"\xff\xd8\xff" + bytes(range(256)) * 2)
    made.append(garbage)
    return made


# ---- decoding ---------------------------------------------------------------------------------

def decode_all(files: list[str], out: Path, ours: bool) -> None:
    """Decode every file in every mode and dtype; write one .npy per success and results.json."""
    import numpy
    import torchcodec
    from torchcodec.decoders import decode_image
    if ours:
        torchcodec.set_bridge("torch")
    import torch
    dtypes = {"uint8": torch.uint8, "uint16": torch.uint16, "auto": "auto"}
    results = {}
    for index, name in enumerate(files):
        for mode in MODES:
            for dtype in DTYPES:
                key = f"{index}|{mode}|{dtype}"
                try:
                    data = decode_image(name, mode=mode, output_dtype=dtypes[dtype])
                except Exception as error:         # noqa: BLE001 - both sides' errors are compared
                    results[key] = {"error": f"{type(error).__name__}: {error}"[:300]}
                    continue
                array = data.contiguous().view(torch.int16 if data.dtype == torch.uint16 else torch.uint8)
                numpy.save(out / f"{index}_{mode}_{dtype}.npy", array.numpy())
                results[key] = {"dtype": str(data.dtype).replace("torch.", ""), "shape": list(data.shape)}
    (out / "results.json").write_text(json.dumps(results))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tc-python", default="/work/tcvenv/bin/python", help="a Python with TorchCodec 0.17")
    parser.add_argument("--tc-checkout", type=Path, help="add TorchCodec's test images (test/resources)")
    parser.add_argument("--keep", type=Path, help="keep the corpus and outputs in this folder")
    parser.add_argument("-v", "--verbose", action="store_true", help="list equal cases too")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:                                  # inside TorchCodec's venv
        decode_all(json.loads((args.worker / "files.json").read_text()), args.worker, ours=False)
        return 0
    import numpy
    work = args.keep or Path(tempfile.mkdtemp(prefix="compare_images_"))
    work.mkdir(parents=True, exist_ok=True)
    corpus = work / "corpus"
    corpus.mkdir(exist_ok=True)
    files = [str(p) for p in make_corpus(corpus)]
    if args.tc_checkout:
        resources = args.tc_checkout / "test" / "resources"
        files += sorted(str(p) for p in resources.iterdir()
                        if p.suffix.lower() in (".jpg", ".png", ".webp", ".gif", ".avif", ".heic"))
    theirs, ours = work / "torchcodec", work / "ours"
    for folder in (theirs, ours):
        folder.mkdir(exist_ok=True)
        (folder / "files.json").write_text(json.dumps(files))
    subprocess.run([args.tc_python, str(Path(__file__).resolve()), "--worker", str(theirs)], check=True,
                   cwd=tempfile.gettempdir())
    decode_all(files, ours, ours=True)
    a = json.loads((theirs / "results.json").read_text())
    b = json.loads((ours / "results.json").read_text())
    counts = {"equal": 0, "pixels differ": 0, "shape/dtype differ": 0, "both raise": 0, "one raises": 0}
    for key in sorted(a, key=lambda k: (int(k.split("|")[0]), k)):
        index, mode, dtype = key.split("|")
        name = Path(files[int(index)]).name
        left, right = a[key], b[key]
        label = f"{name:28} {mode:10} {dtype:6}"
        if "error" in left or "error" in right:
            kind = "both raise" if ("error" in left and "error" in right) else "one raises"
            counts[kind] += 1
            if kind == "one raises" or args.verbose:
                print(f"{label} {kind}: torchcodec: {left.get('error', 'ok')} | ours: {right.get('error', 'ok')}")
            continue
        if left != right:
            counts["shape/dtype differ"] += 1
            print(f"{label} torchcodec {left} ours {right}")
            continue
        x = numpy.load(theirs / f"{index}_{mode}_{dtype}.npy").astype(numpy.int64)
        y = numpy.load(ours / f"{index}_{mode}_{dtype}.npy").astype(numpy.int64)
        if left["dtype"] == "uint16":
            x, y = x & 0xFFFF, y & 0xFFFF
        diff = numpy.abs(x - y)
        if diff.max() == 0:
            counts["equal"] += 1
            if args.verbose:
                print(f"{label} equal")
        else:
            counts["pixels differ"] += 1
            print(f"{label} pixels differ: max {diff.max()}, {100 * (diff > 0).mean():.2f}% of samples")
    print("\n" + ", ".join(f"{n} {kind}" for kind, n in counts.items()))
    if not args.keep:
        shutil.rmtree(work)
    return 0 if counts["shape/dtype differ"] == 0 and counts["one raises"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
