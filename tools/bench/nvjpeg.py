#!/usr/bin/env python3
"""JPEG decoding on the GPU (nvJPEG) against libjpeg-turbo on the CPU's threads, in one run.

    .venv/bin/python -P tools/bench.py nvjpeg [--count 500] [--batch 32] [--threads N] [--repeats 3]
        [--size 1920x1080] [--corpus DIR] [--device cuda:0] [--tc-python /work/tcvenv/bin/python]

The images are tools/bench/images.py's JPEG set (DISTINCT textured 1080p frames at quality 90,
listed up to --count; --size makes a set of another size), decoded from bytes in memory to (C, H, W)
RGB uint8, outputs dropped as they come:

- nvJPEG batch: ``decode_jpeg(chunk, device=...)`` on chunks of --batch images, through the GPU's
  JPEG engines where it has them (A100, H100, H200: baseline images), the default backend otherwise;
- nvJPEG one image at a time: ``decode_jpeg(image, device=...)``;
- nvJPEG without the engines: the same chunks with the hardware backend kept out (the CUDA
  default backend, image by image);
- libjpeg-turbo: ``decode_jpeg(chunk, num_threads=N)`` on the CPU (N = --threads, default all
  usable CPUs);
- TorchCodec 0.17's nvJPEG batch, when --tc-python has TorchCodec with a CUDA torch.

GPU timings end with a wait for the device, so they count the decoding, not its queueing. Every
workload's repeats are taken round-robin; the table gives the best of --repeats, images per second
and the speed relative to libjpeg-turbo. The stub libraries of tests/cuda_stubs run it too
(tests/test_cuda_jpeg.py), where the numbers mean nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

from bench.images import make_corpus, read_all

TORCHCODEC_WORKER = """
import json, sys, time
import torch
from torchcodec.decoders import decode_jpeg
paths, batch, repeats, device = json.loads(sys.argv[1])
items = [torch.frombuffer(bytearray(open(p, "rb").read()), dtype=torch.uint8) for p in paths]
decode_jpeg(items[:batch], device=device)
torch.cuda.synchronize()
best = float("inf")
for _ in range(repeats):
    start = time.perf_counter()
    for k in range(0, len(items), batch):
        decode_jpeg(items[k:k + batch], device=device)
    torch.cuda.synchronize()
    best = min(best, time.perf_counter() - start)
print(json.dumps(best))
"""


def workloads(device: str, batch: int, threads: int) -> dict[str, Callable[[list[bytes]], None]]:
    from torchcodec._core._devices import parse_device
    from torchcodec._cuda import _device_buffer, _driver, _jpeg
    from torchcodec.decoders import decode_jpeg
    from torchcodec.decoders._image_decoders import _encoded, get_max_image_pixels
    index = parse_device(device)[1]
    context = _driver.load_driver().context(index)

    def waited(run: Callable[[list[bytes]], None]) -> Callable[[list[bytes]], None]:
        def timed_run(items: list[bytes]) -> None:
            run(items)
            _device_buffer.synchronize_context(context)
        return timed_run

    def chunks(items: list[bytes]) -> list[list[bytes]]:
        return [items[k:k + batch] for k in range(0, len(items), batch)]

    def gpu_batch(items: list[bytes]) -> None:
        for chunk in chunks(items):
            decode_jpeg(chunk, device=device)

    def gpu_single(items: list[bytes]) -> None:
        for item in items:
            decode_jpeg(item, device=device)

    def gpu_no_engines(items: list[bytes]) -> None:
        for chunk in chunks(items):
            _jpeg.decode([_encoded(item) for item in chunk], 3, False, index, get_max_image_pixels(), batch=True,
                         hardware=False)

    def cpu_batch(items: list[bytes]) -> None:
        for chunk in chunks(items):
            decode_jpeg(chunk, num_threads=threads)

    return {f"nvJPEG batch of {batch}": waited(gpu_batch), "nvJPEG one at a time": waited(gpu_single),
            f"nvJPEG batch of {batch}, no JPEG engines": waited(gpu_no_engines),
            f"libjpeg-turbo, {threads} CPU threads": cpu_batch}


def describe(device: str, items: list[bytes]) -> str:
    from torchcodec._core._devices import parse_device
    from torchcodec._cuda import _driver, _jpeg, _nvjpeg
    index = parse_device(device)[1]
    context = _driver.load_driver().context(index)
    handles = _nvjpeg.device(context)
    library = _nvjpeg.load_nvjpeg()
    paths: dict[str, int] = {}
    from torchcodec.decoders._image_decoders import _encoded, get_max_image_pixels
    _jpeg.decode([_encoded(item) for item in items[:4]], 3, False, index, get_max_image_pixels(), batch=True,
                 paths=paths)
    return (f"{context.name}; nvJPEG {'.'.join(map(str, library.version))} from {library.path}; JPEG engines: "
            f"{'yes' if handles.hardware else 'no'} (4 images: {paths['hardware']} by the engines, "
            f"{paths['single']} one at a time)")


def torchcodec_time(python: str, files: list[Path], batch: int, repeats: int, device: str) -> float | None:
    """TorchCodec 0.17's best wall time for the set (its nvJPEG batch), or None when it cannot run."""
    if not Path(python).exists():
        return None
    result = subprocess.run([python, "-c", TORCHCODEC_WORKER, json.dumps([[str(f) for f in files], batch, repeats,
                                                                          device])],
                            capture_output=True, text=True, timeout=1200)
    if result.returncode != 0:
        print(f"TorchCodec 0.17: n/a ({result.stderr.strip().splitlines()[-1] if result.stderr.strip() else '?'})")
        return None
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=500, help="images in the set")
    parser.add_argument("--batch", type=int, default=32, help="images per decode_jpeg call")
    parser.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)), help="CPU decoding threads")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--size", default="1920x1080")
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--corpus", type=Path, default=Path(os.environ.get("TORCHCODEC_MEDIA_DIR", "media-cache"))
                        / "bench_images")
    parser.add_argument("--tc-python", default="/work/tcvenv/bin/python", help="a Python with TorchCodec 0.17")
    args = parser.parse_args(argv)
    import torchcodec
    torchcodec.set_bridge("numpy")          # DeviceBuffer outputs: no array library in the timings
    files = make_corpus(args.corpus.resolve(), args.size)["jpeg"]
    files = [files[k % len(files)] for k in range(args.count)]
    items = read_all(files)
    print(describe(args.device, items))
    runs = workloads(args.device, args.batch, args.threads)
    for run in runs.values():
        run(items[: args.batch])           # warm up: handles, states, pools
    best = {name: float("inf") for name in runs}
    for _ in range(args.repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            run(items)
            best[name] = min(best[name], time.perf_counter() - start)
    peer = torchcodec_time(args.tc_python, files, args.batch, args.repeats, args.device)
    if peer is not None:
        best[f"TorchCodec 0.17 nvJPEG batch of {args.batch}"] = peer
    reference = best[next(name for name in runs if name.startswith("libjpeg-turbo"))]
    print(f"\n{args.count} JPEGs of {args.size}, quality 90, best of {args.repeats}\n")
    print("| decoder | wall s | images/s | vs libjpeg-turbo |")
    print("|---|---|---|---|")
    for name, wall in best.items():
        print(f"| {name} | {wall:.3f} | {args.count / wall:.1f} | {reference / wall:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
