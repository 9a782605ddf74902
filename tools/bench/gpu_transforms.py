#!/usr/bin/env python3
"""Decode-time transforms on the GPU: 1080p decoded and resized to 224 x 224 on the device, fused
(the resize inside the colour conversion) against decoding full RGB frames and resizing them after.

    .venv/bin/python -P tools/bench.py gpu-transforms [--clips bench_1080p_h264.mp4,bench_1080p_hevc.mp4]
        [--frames 300] [--batch 32] [--size 224] [--repeats 3] [--device cuda:0] [--cuda-backend nvdec]
        [--corpus DIR]

Per clip, frames 0 to --frames in batches of --batch (``get_frames_in_range``), outputs dropped:

- fused: ``VideoDecoder(clip, device=..., transforms=[Resize((size, size))])``: NVDEC, then one
  kernel per frame that reads the NV12/P016 surface and writes the size x size RGB frame;
- full RGB: ``VideoDecoder(clip, device=...)``, frames at their size (the decode the next two
  start from, for reference);
- full RGB + interpolate: the same, then ``torch.nn.functional.interpolate(frames.float(),
  (size, size), mode="bilinear", antialias=True)`` on the device (torch only);
- full RGB + torchvision: the same, then ``torchvision.transforms.v2.functional.resize(frames,
  [size, size], antialias=True)`` on the uint8 frames (torchvision only).

Frames per second: the best of --repeats, each timing ending with a wait for the device (the work,
not its queueing). Device memory per frame: the peak that torch's allocator reached during a batch
(outputs and intermediates: the full RGB frames, their float copies) over the batch's frames, plus
the fused converter's own scratch (filter tables); without torch (numpy bridge: torchcodec's device
buffers) the bytes of the frames each workload materialises. The stub libraries of tests/cuda_stubs
run it too (tests/test_cuda_transforms.py), where the numbers mean nothing.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Optional

TOOLS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOOLS))          # make_media


class Workload:
    """One way of getting the frames: ``run(start, stop)`` decodes a batch (an array of the bridge's
    library); ``materialised``: the bytes of its frames, per frame (reported without torch)."""

    def __init__(self, name: str, run: Callable[[int, int], Any], materialised: int) -> None:
        self.name, self.run, self.materialised = name, run, materialised


def workloads(path: Path, device: str, size: int, backend: str, uses_torch: bool) -> tuple[list[Workload], Any]:
    """The workloads of one clip, and the fused decoder (for its scratch)."""
    from torchcodec.decoders import VideoDecoder, set_cuda_backend
    from torchcodec.transforms import Resize
    with set_cuda_backend(backend):
        fused = VideoDecoder(path, device=device, transforms=[Resize((size, size))])
        full = VideoDecoder(path, device=device)
    height, width = full.metadata.height, full.metadata.width
    runs = [Workload("fused decode + resize", lambda a, b: fused.get_frames_in_range(a, b).data, size * size * 3),
            Workload("full RGB (no resize)", lambda a, b: full.get_frames_in_range(a, b).data, height * width * 3)]
    if uses_torch:
        import torch
        import torch.nn.functional as F

        def interpolated(a: int, b: int) -> Any:
            frames = full.get_frames_in_range(a, b).data
            return F.interpolate(frames.float(), (size, size), mode="bilinear", antialias=True)
        runs.append(Workload("full RGB + F.interpolate", interpolated, 0))
        if importlib.util.find_spec("torchvision") is not None:
            from torchvision.transforms.v2 import functional as TF

            def torchvision_resize(a: int, b: int) -> Any:
                return TF.resize(full.get_frames_in_range(a, b).data, [size, size], antialias=True)
            runs.append(Workload("full RGB + torchvision resize", torchvision_resize, 0))
        del torch
    return runs, fused


def synchronize(device: str, uses_torch: bool) -> None:
    """Wait for the device: torch's, or the driver's context (torchcodec's own buffers)."""
    if uses_torch:
        import torch
        torch.cuda.synchronize(device)
        return
    from torchcodec._core._devices import parse_device
    from torchcodec._cuda import _device_buffer, _driver
    _device_buffer.synchronize_context(_driver.load_driver().context(parse_device(device)[1]))


def measure(workload: Workload, frames: int, batch: int, device: str, uses_torch: bool) -> tuple[float, Optional[int]]:
    """(seconds for the frames, peak bytes of torch's allocator during one batch, or None)."""
    peak = None
    if uses_torch:
        import torch
        synchronize(device, True)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
        workload.run(0, min(batch, frames))
        synchronize(device, True)
        peak = torch.cuda.max_memory_allocated(device) - base
    start = time.perf_counter()
    for first in range(0, frames, batch):
        workload.run(first, min(first + batch, frames))
    synchronize(device, uses_torch)
    return time.perf_counter() - start, peak


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clips", default="bench_1080p_h264.mp4,bench_1080p_hevc.mp4",
                        help="corpus clips (tools/make_media.py), made when missing")
    parser.add_argument("--frames", type=int, default=300, help="frames decoded per clip and workload")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--size", type=int, default=224, help="output height and width")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--cuda-backend", default="nvdec", choices=("nvdec", "ffmpeg"))
    parser.add_argument("--corpus", type=Path, default=Path(os.environ.get("TORCHCODEC_MEDIA_DIR", "media-cache")))
    args = parser.parse_args(argv)
    import make_media
    import torchcodec
    uses_torch = importlib.util.find_spec("torch") is not None
    torchcodec.set_bridge("torch" if uses_torch else "numpy")
    paths = make_media.ensure_media(args.clips.split(","), args.corpus)
    print("| clip | workload | frames/s | speed vs fused | device memory per frame |")
    print("|---|---|---|---|---|")
    for name, path in paths.items():
        runs, fused = workloads(path, args.device, args.size, args.cuda_backend, uses_torch)
        frames = min(args.frames, len(fused))
        for workload in runs:
            workload.run(0, min(args.batch, frames))          # warm up: decoder, kernels, allocator
        best: dict[str, float] = {}
        peaks: dict[str, Optional[int]] = {}
        for _ in range(args.repeats):
            for workload in runs:
                wall, peak = measure(workload, frames, args.batch, args.device, uses_torch)
                best[workload.name] = min(best.get(workload.name, float("inf")), wall)
                peaks[workload.name] = peak if peak is not None else peaks.get(workload.name)
        transforms = fused._cuda.device_converter.transforms if fused._cuda is not None else None
        scratch = sum(transforms.scratch_bytes) if transforms is not None else 0
        reference = best[runs[0].name]
        for workload in runs:
            peak = peaks[workload.name]
            per_frame = (peak / min(args.batch, frames) if peak is not None else workload.materialised)
            if workload is runs[0]:
                per_frame += scratch / min(args.batch, frames)
            memory = f"{per_frame / 1e6:.3f} MB" + ("" if peak is not None else " (materialised)")
            print(f"| {name} | {workload.name} | {frames / best[workload.name]:.1f} | "
                  f"{reference / best[workload.name]:.2f}x | {memory} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
