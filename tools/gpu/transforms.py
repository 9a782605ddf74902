#!/usr/bin/env python3
"""Check decode-time transforms on the GPU (``VideoDecoder(device="cuda", transforms=...)``, the
samplers, ``ColorConverter(device="cuda", transforms=...)``) on a machine with an NVIDIA GPU, one row
at a time.

    python tools/gpu/transforms.py [--device cuda:0] [--out DIR] [--quick] [--only STEPS]
                                   [--cuda-backend nvdec|ffmpeg]

Each row (step, check, subject, result, status) is printed and appended to DIR/gpu_transforms.md
and DIR/gpu_transforms.jsonl as soon as it is known; an exception is reported in its row and never
stops the others. Exit status 1 when a row failed. The steps:

1. kernels: the CUDA gate, and the resize kernels (kernels/resize.cu) loaded on the device.
2. random: Y4M clips of random samples (8-bit and 10-bit 4:2:0, 4:4:4, odd sizes, full and limited
   range), which NVDEC cannot decode: libavcodec decodes them, the GPU transforms them. Through
   plans of every kind (shrinking past half the width, growing, odd crops, a crop after a resize,
   two resizes, a lone Resize on widths of 32), uint8 and float32, against the CPU decoder with the
   same transforms: TOLERANCE (exact).
3. streams: corpus files that NVDEC decodes (1080p H.264 and HEVC, a rotated stream, 10-bit, 4:4:4
   at an odd size, odd-sized VP9) through the usual training chains (Resize to 224, Resize(256) then
   CenterCrop(224), a RandomCrop then a Resize), against the CPU decoder with the same transforms,
   judged by tools/gpu/gpu_tolerances.py's entry of the file (the decode's tolerance: the
   transforms add none). A CPU fallback is reported.
4. api: the samplers (random indices with a seed, regular timestamps) and a RandomCrop with an int
   seed give the CPU decoder's clips and crops; with torch, ``torch.manual_seed`` then RandomCrop()
   and torchvision's v2.RandomCrop (when installed) crop where the CPU path does; ColorConverter
   (device, transforms) in a blocks pipeline gives the device VideoDecoder's frames.
5. memory: device memory per frame of the 1080p clip resized to 224 x 224, fused, against full RGB
   frames (and torch's interpolate of them, with torch).
6. bench: tools/bench/gpu_transforms.py on the 1080p clip (a short run): frames/s of the fused
   decode + resize against full RGB + interpolate / torchvision resize.

``--cuda-backend ffmpeg`` runs the streams through libavcodec (FFmpeg's CUDA hwaccel, or the CPU):
how tests/test_cuda_transforms.py runs this module against the stub libraries, whose NVDEC returns
flat pictures.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np

TOOLS = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(TOOLS))

from gpu import gpu_tolerances  # noqa: E402
from gpu.jpeg_check import FAIL, INFO, OK, SKIPPED, Report, Row, to_numpy  # noqa: E402
import make_media  # noqa: E402

# The transforms' own tolerance: the kernels compute the CPU path's arithmetic (swscale's colour
# conversion and bilinear RGB -> RGB resize, include/torchcodec/swscale_resize.h) in integers, and
# float32 is RGB48 / 65535 on both sides: equal, for every plan, dtype and format they read.
TOLERANCE = gpu_tolerances.Tolerance(0, 0.0, "the kernels compute the CPU path's conversion and resize exactly")

CHAINS = {
    "Resize 1/3": lambda h, w: [("Resize", (max(1, h // 3), max(1, w // 3)))],
    "Resize up": lambda h, w: [("Resize", (2 * h + 1, w + 7))],
    "CenterCrop": lambda h, w: [("CenterCrop", (h - 5, w - 3))],
    "RandomCrop + Resize": lambda h, w: [("RandomCrop", (h // 2 + 1, w // 2 + 1)), ("Resize", (9, 11))],
    "Resize + CenterCrop": lambda h, w: [("Resize", (h + 10, w - 4)), ("CenterCrop", (h // 2, w // 2 + 1))],
    "Resize + Resize": lambda h, w: [("Resize", (h // 2, w // 2)), ("Resize", (h, w + 1))],
    "Resize 32x64 alone": lambda h, w: [("Resize", (32, 64))],
}
TRAINING = {
    "Resize 224": [("Resize", (224, 224))],
    "Resize 256 + CenterCrop 224": [("Resize", (256, 256)), ("CenterCrop", (224, 224))],
    "RandomCrop + Resize 224": [("RandomCrop", (200, 180)), ("Resize", (224, 224))],
}
# (file, chains): NVDEC decodes these (H.264, HEVC, VP9); the rest of the corpus is the frames step's.
STREAMS = [("h264_1080p.mp4", list(TRAINING)), ("hevc_1080p.mp4", ["Resize 224"]),
           ("h264_rotate90.mp4", ["Resize 256 + CenterCrop 224"]), ("h264_10bit.mp4", ["Resize 224"]),
           ("h264_yuv444_161x121.mp4", ["RandomCrop + Resize 224"]), ("vp9_161x121.webm", ["Resize 224"])]
# (name, y4m colour tag, bits, chroma subsampling, width, height, range): random clips.
RANDOM_CLIPS = [("420 8-bit 64x48", "420jpeg", 8, 1, 64, 48, "LIMITED"),
                ("420 10-bit 45x37", "420p10", 10, 1, 45, 37, "FULL"),
                ("444 8-bit 62x40", "444", 8, 0, 62, 40, "LIMITED"),
                ("420 8-bit 1920x1080", "420jpeg", 8, 1, 1920, 1080, "LIMITED")]


def transforms_of(chain: list[tuple[str, tuple[int, int]]]) -> list[Any]:
    from torchcodec import transforms
    return [getattr(transforms, kind)(size, generator=11) if kind == "RandomCrop"
            else getattr(transforms, kind)(size) for kind, size in chain]


def write_y4m(path: Path, tag: str, bits: int, sub: int, width: int, height: int, colour_range: str,
              frames: int, seed: int) -> None:
    """A YUV4MPEG2 clip of random samples (little-endian words above 8 bits)."""
    rng = np.random.default_rng(seed)
    dtype = np.uint8 if bits == 8 else np.dtype("<u2")
    shapes = [(height, width)] + [((height + sub) >> sub, (width + sub) >> sub)] * 2
    with path.open("wb") as file:
        file.write(f"YUV4MPEG2 W{width} H{height} F25:1 Ip A1:1 C{tag} XCOLORRANGE={colour_range}\n".encode())
        for _ in range(frames):
            file.write(b"FRAME\n")
            for shape in shapes:
                file.write(rng.integers(0, 1 << bits, shape).astype(dtype).tobytes())


def differences(gpu: np.ndarray, cpu: np.ndarray, scale: float = 1.0) -> dict[str, float]:
    """|GPU - CPU| in uint8 units (float32 frames scaled by 255)."""
    diff = np.abs(gpu.astype(np.float64) - cpu.astype(np.float64)) * scale
    return {"max": float(diff.max()), "mean": float(diff.mean())}


def judged(stats: dict[str, float], tolerance: gpu_tolerances.Tolerance) -> str:
    return OK if stats["max"] <= tolerance.max_abs and stats["mean"] <= tolerance.mean_abs else FAIL


def shown(stats: dict[str, float], tolerance: gpu_tolerances.Tolerance) -> str:
    return f"max {stats['max']:g}, mean {stats['mean']:.4f} (max <= {tolerance.max_abs}, mean <= {tolerance.mean_abs})"


class Checks:
    def __init__(self, device: str, quick: bool, backend: str) -> None:
        import torchcodec
        torchcodec.set_bridge("numpy")        # DeviceBuffer outputs, read through the CUDA Array Interface
        self.device, self.quick, self.backend = device, quick, backend
        self.media = Path(os.environ.get("TORCHCODEC_MEDIA_DIR", TOOLS.parent / "media-cache"))

    def decoder(self, path: Path, chain: Any = None, **options: Any) -> Any:
        from torchcodec.decoders import VideoDecoder, set_cuda_backend
        transforms = transforms_of(chain) if chain is not None else None
        with set_cuda_backend(self.backend):
            return VideoDecoder(path, device=self.device, transforms=transforms, dimension_order="NHWC", **options)

    def cpu_decoder(self, path: Path, chain: Any = None, **options: Any) -> Any:
        from torchcodec.decoders import VideoDecoder
        transforms = transforms_of(chain) if chain is not None else None
        return VideoDecoder(path, transforms=transforms, dimension_order="NHWC", **options)

    def kernels(self) -> Iterator[Row]:
        from torchcodec import _cuda
        why = _cuda.reason()
        yield Row("kernels", "gate", "CUDA", why or "available", FAIL if why else OK)
        if why:
            return
        from torchcodec._core._devices import parse_device
        from torchcodec._cuda import _driver, _kernels
        from torchcodec._cuda._transforms import CudaTransforms
        context = _driver.load_driver().context(parse_device(self.device)[1])
        CudaTransforms(context, [(0, 0, 8, 8, 4, 4, True)])     # loads the module, looks up every kernel
        yield Row("kernels", "resize module", context.name, f"{len(_kernels.KERNELS['resize'])} kernels, "
                  f"{len(_kernels.fatbin('resize'))} bytes of fatbin, SASS for sm_{_kernels.ARCHS[0]} to "
                  f"sm_{_kernels.ARCHS[-1]}", OK)

    def random(self) -> Iterator[Row]:
        clips = RANDOM_CLIPS[:3] if self.quick else RANDOM_CLIPS
        with tempfile.TemporaryDirectory() as folder:
            for k, (name, tag, bits, sub, width, height, colour_range) in enumerate(clips):
                path = Path(folder) / f"random{k}.y4m"
                write_y4m(path, tag, bits, sub, width, height, colour_range, 3, k)
                chains = CHAINS if width < 1000 else {"Resize 224": lambda h, w: TRAINING["Resize 224"]}
                for chain_name, chain in chains.items():
                    for dtype in ("uint8", "float32"):
                        plan = chain(height, width)
                        gpu = to_numpy(self.decoder(path, plan, output_dtype=dtype).get_frames_in_range(0, 3).data)
                        cpu = self.cpu_decoder(path, plan, output_dtype=dtype).get_frames_in_range(0, 3).data
                        if gpu.shape != cpu.shape:
                            yield Row("random", f"{chain_name}, {dtype}", name, f"shape {gpu.shape} != {cpu.shape}",
                                      FAIL)
                            continue
                        stats = differences(gpu, cpu, 255.0 if dtype == "float32" else 1.0)
                        yield Row("random", f"{chain_name}, {dtype}", name, shown(stats, TOLERANCE),
                                  judged(stats, TOLERANCE))

    def streams(self) -> Iterator[Row]:
        names = [item for item in STREAMS if not self.quick or item[0].endswith("1080p.mp4")]
        paths = make_media.ensure_media([name for name, _ in names], self.media)
        for name, chains in names:
            tolerance = gpu_tolerances.tolerance(name)
            for chain_name in chains:
                chain = TRAINING[chain_name]
                decoder = self.decoder(paths[name], chain)
                count = min(len(decoder), 10 if self.quick else 30)
                gpu = to_numpy(decoder.get_frames_in_range(0, count).data)
                cpu = self.cpu_decoder(paths[name], chain).get_frames_in_range(0, count).data
                stats = differences(gpu, cpu)
                fallback = f"; {decoder.cpu_fallback}" if decoder.cpu_fallback else ""
                yield Row("streams", chain_name, f"{name} ({count} frames)", shown(stats, tolerance) + fallback,
                          judged(stats, tolerance))

    def api(self) -> Iterator[Row]:
        from torchcodec.decoders import ColorConverter, Demuxer, set_cuda_backend
        from torchcodec.samplers import clips_at_random_indices, clips_at_regular_timestamps
        path = make_media.ensure_media(["h264_bframes.mp4"], self.media)["h264_bframes.mp4"]
        chain = [("RandomCrop", (150, 200)), ("Resize", (64, 96))]
        gpu, cpu = self.decoder(path, chain), self.cpu_decoder(path, chain)
        for sampler, options in ((clips_at_random_indices, dict(num_clips=4, num_frames_per_clip=3, generator=5)),
                                 (clips_at_regular_timestamps, dict(seconds_between_clip_starts=0.5,
                                                                    num_frames_per_clip=2))):
            ours, theirs = sampler(gpu, **options), sampler(cpu, **options)
            stats = differences(to_numpy(ours.data), theirs.data)
            same_pts = np.array_equal(ours.pts_seconds, theirs.pts_seconds)
            yield Row("api", sampler.__name__, "RandomCrop(seed) + Resize", shown(stats, TOLERANCE) +
                      f", pts {'equal' if same_pts else 'differ'}", judged(stats, TOLERANCE) if same_pts else FAIL)
        yield from self.torch_crops(path)
        demuxer = Demuxer(path)
        with set_cuda_backend(self.backend):
            packets = demuxer.streams[0].make_decoder(device=self.device)
        converter = ColorConverter(device=self.device, transforms=transforms_of(TRAINING["Resize 256 + CenterCrop 224"]))
        frames = []
        for packet in demuxer:
            frames += [to_numpy(converter.convert(raw).data).transpose(1, 2, 0) for raw in packets.decode(packet)]
            if len(frames) >= 8:
                break
        whole = to_numpy(self.decoder(path, TRAINING["Resize 256 + CenterCrop 224"]).get_frames_in_range(0, 8).data)
        stats = differences(np.stack(frames[:8]), whole)
        yield Row("api", "ColorConverter(device, transforms)", "8 frames vs VideoDecoder(device)",
                  shown(stats, TOLERANCE), judged(stats, TOLERANCE))

    def torch_crops(self, path: Path) -> Iterator[Row]:
        try:
            import torch
        except ImportError:
            yield Row("api", "RandomCrop under torch.manual_seed", "-", "torch not installed", SKIPPED)
            return
        from torchcodec.decoders import VideoDecoder, set_cuda_backend
        from torchcodec.transforms import RandomCrop
        makers = {"RandomCrop()": lambda: RandomCrop((100, 120))}
        try:
            from torchvision.transforms import v2
            makers["torchvision v2.RandomCrop"] = lambda: v2.RandomCrop((100, 120))
        except ImportError:
            yield Row("api", "torchvision v2.RandomCrop", "-", "torchvision not installed", SKIPPED)
        import torchcodec
        for name, make in makers.items():
            with torchcodec.bridge("torch"):
                torch.manual_seed(1234)
                with set_cuda_backend(self.backend):
                    gpu = VideoDecoder(path, device=self.device, transforms=[make()])[0].cpu().numpy()
                torch.manual_seed(1234)
                cpu = VideoDecoder(path, transforms=[make()])[0].numpy()
            stats = differences(gpu, cpu)
            yield Row("api", f"{name} under torch.manual_seed", "the CPU path's crop", shown(stats, TOLERANCE),
                      judged(stats, TOLERANCE))

    def memory(self) -> Iterator[Row]:
        yield from self.bench_rows("memory", ["--frames", "32", "--repeats", "1"])

    def bench(self) -> Iterator[Row]:
        frames = "64" if self.quick else "300"
        yield from self.bench_rows("bench", ["--frames", frames, "--repeats", "1" if self.quick else "3"])

    def bench_rows(self, step: str, options: list[str]) -> Iterator[Row]:
        import contextlib
        import io
        from bench import gpu_transforms
        clip = "h264_1080p.mp4" if self.quick or step == "memory" else "bench_1080p_h264.mp4"
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            gpu_transforms.main(["--clips", clip, "--device", self.device, "--cuda-backend", self.backend,
                                 "--corpus", str(self.media), *options])
        for line in printed.getvalue().splitlines()[2:]:
            cells = [cell.strip() for cell in line.strip("|").split("|")]
            if step == "memory":
                yield Row(step, "device memory per frame", f"{cells[0]}: {cells[1]}", cells[4], INFO)
            else:
                yield Row(step, "frames/s", f"{cells[0]}: {cells[1]}", f"{cells[2]} ({cells[3]} vs fused)", INFO)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda:0")
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", "/tmp/gpu_check")))
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default="kernels,random,streams,api,memory,bench")
    parser.add_argument("--cuda-backend", default="nvdec", choices=("nvdec", "ffmpeg"))
    args = parser.parse_args(argv)
    return Report(args.out, "gpu_transforms").run_steps(Checks(args.device, args.quick, args.cuda_backend),
                                                        args.only.split(","), "kernels")


if __name__ == "__main__":
    sys.exit(main())
