"""The GPU check's NVENC step: frames encoded from CUDA torch tensors and cupy arrays, decoded back on
the CPU and judged by PSNR (nvenc)."""
from __future__ import annotations

import importlib
import importlib.util
import time
from collections.abc import Iterator
from typing import Any

from gpu.outputs import CpuReference
from gpu.rows import (OwnBufferLib, Row, Settings, bridge, error_text, limit, out_of_time_row, torchcodec_module,
                      video_decoder)
import numpy as np


NVENC_CLIP = "h264_1080p.mp4"      # 30 frames of 1080p (gpu_tolerances.CODED_SIZE_CLIPS)
NVENC_FRAMES = 30
NVENC_MIN_PSNR = 30.0               # dB, decoded NVENC output against its input (8-bit RGB)
# (container, codec, subject): h264_nvenc as the mp4 default, hevc_nvenc named; the dry run's CPU stand-ins.
NVENC_CASES = (("mp4", None, "h264_nvenc (mp4's default on CUDA)"), ("mkv", "hevc_nvenc", "hevc_nvenc"))
NVENC_CPU_CASES = (("mp4", None, "libx264 (the dry run's stand-in)"), ("mkv", "libx264", "libx264 in mkv (stand-in)"))


def psnr(actual: np.ndarray, expected: np.ndarray) -> float:
    mse = float(np.mean((actual.astype(np.float64) - expected.astype(np.float64)) ** 2))
    return float("inf") if mse == 0 else 10 * np.log10(255.0 ** 2 / mse)


def nvenc_inputs(frames: np.ndarray, settings: Settings) -> list[tuple[str, Any]]:
    """The (N, 3, H, W) frames on the device under test, as each installed CUDA library holds them
    (torch: channels-last memory viewed NCHW; cupy: NCHW contiguous), else in a DeviceBuffer of
    torchcodec's; numpy in the dry run."""
    nchw = np.ascontiguousarray(frames.transpose(0, 3, 1, 2))
    if settings.dry_run:
        return [("numpy", nchw)]
    inputs = []
    if importlib.util.find_spec("torch") is not None:
        import torch
        inputs.append(("torch", torch.from_numpy(frames).to(settings.device).permute(0, 3, 1, 2)))
    if importlib.util.find_spec("cupy") is not None:
        import cupy
        with cupy.cuda.Device(int(settings.device.partition(":")[2] or 0)):
            inputs.append(("cupy", cupy.asarray(nchw)))
    if not inputs:      # torchcodec's own device memory, filled through the driver
        inputs.append(("DeviceBuffer", OwnBufferLib(settings.device).from_numpy(nchw)))
    return inputs


NO_ENGINE = limit("no NVENC engine")


def session_row(settings: Settings) -> Row:
    """Whether NVENC opens an encode session on the device (torchcodec._cuda._nvenc.nvenc_status):
    ok, the hardware limit of a GPU without an NVENC engine, or a FAIL with the cause."""
    subject = "NVENC session (nvEncOpenEncodeSessionEx)"
    if settings.out_of_time():
        return out_of_time_row("nvenc", subject)
    if settings.dry_run:
        return Row("nvenc", subject, "a dry run asks no NVENC (libx264 stands in below)", "skipped")
    try:
        from torchcodec._cuda import _driver, _nvenc
        cause, text = _nvenc.nvenc_status(_driver.load_driver().context(int(settings.device.partition(":")[2] or 0)))
    except Exception as error:   # noqa: BLE001
        return Row("nvenc", subject, error_text(error), "ERROR")
    status = "ok" if cause is None else NO_ENGINE if cause == "engine" else "FAIL"
    return Row("nvenc", subject, text, status, {"cause": cause})


def check_nvenc(settings: Settings) -> Iterator[Row]:
    """Encode the first frames of a 1080p clip from CUDA torch tensors and cupy arrays with NVENC
    (h264_nvenc, mp4's default on CUDA; hevc_nvenc in mkv), decode the file with the CPU decoder and
    require a PSNR of at least NVENC_MIN_PSNR dB against the input for every frame, the frame count,
    and the stream's colour tags (bt470bg, tv). An encoder that cannot open FAILs, but on a GPU
    without an NVENC engine (the A100, H100, H200), where each row says so as a hardware limit
    (NvencUnavailableError.cause "engine"). The dry run encodes numpy frames of the (small) race
    clip with libx264 on the CPU, through the same checks."""
    yield session_row(settings)
    path = settings.media / (settings.race_clip if settings.dry_run else NVENC_CLIP)
    try:
        frames = CpuReference(path).frames[:NVENC_FRAMES]
        inputs = nvenc_inputs(frames, settings)
    except Exception as error:   # noqa: BLE001
        yield Row("nvenc", "input frames", error_text(error), "ERROR", {"error": error_text(error)})
        return
    encoders = torchcodec_module().encoders
    for lib_name, data in inputs:
        for container, codec, subject in NVENC_CPU_CASES if settings.dry_run else NVENC_CASES:
            subject = f"{subject} <- {lib_name}"
            if settings.out_of_time():
                yield out_of_time_row("nvenc", subject)
                continue
            try:
                start = time.perf_counter()
                with bridge("numpy"):
                    encoded = encoders.VideoEncoder(data, frame_rate=30).to_tensor(container, codec=codec)
                    took = time.perf_counter() - start
                    decoder = video_decoder(np.asarray(encoded), dimension_order="NHWC")
                    decoded = decoder.get_frames_in_range(0, len(decoder)).data
                    metadata = decoder.metadata
            except Exception as error:   # noqa: BLE001
                cause = getattr(error, "cause", None)
                yield Row("nvenc", subject, error_text(error), NO_ENGINE if cause == "engine" else "FAIL",
                          {"error": error_text(error), "cause": cause})
                continue
            values = [psnr(decoded[i], frames[i]) for i in range(min(len(decoded), len(frames)))]
            worst = min(values) if values else 0.0
            tags = (metadata.color_space, getattr(metadata, "color_range", None))
            problems = []
            if len(decoded) != len(frames):
                problems.append(f"{len(decoded)} frames decoded of {len(frames)}")
            if worst < NVENC_MIN_PSNR:
                problems.append(f"PSNR {worst:.1f} dB < {NVENC_MIN_PSNR} dB")
            if metadata.color_space != "bt470bg":
                problems.append(f"color_space {metadata.color_space!r}, not 'bt470bg'")
            text = (f"{len(decoded)} frames, PSNR min {worst:.1f} / mean {float(np.mean(values)) if values else 0:.1f} dB,"
                    f" {len(frames) / took:.0f} frames/s encoded ({len(encoded)} bytes)")
            yield Row("nvenc", subject, text + ("; " + "; ".join(problems) if problems else ""),
                      "FAIL" if problems else "ok",
                      {"psnr_min": worst, "frames": len(decoded), "bytes": len(encoded), "tags": list(tags)})
