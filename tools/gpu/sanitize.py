"""The GPU check's sanitizer step (sanitize): NVIDIA's compute-sanitizer, memcheck then racecheck,
over a short workload that launches every kernel of kernels/*.cu the device can run and decodes a
little with NVDEC, in a process of its own:

    compute-sanitizer --tool memcheck python tools/gpu/sanitize.py --workload --device cuda --media DIR

The workload (``--workload``, also runnable alone) decodes with torchcodec's own device buffers (the
numpy bridge: no torch or cupy, whose kernels are not ours to check): 8-bit H.264 with B-frames to
uint8 and float32 RGB (tc_convert_yuv8_to_rgb8 / _rgbf), HEVC 10-bit (the 16-bit kernels), 4:4:4,
odd sizes (350x198, VP9 161x121), the blocks' RawFrames (tc_copy_strided) and their ColorConverter,
and, where NVENC opens a session, two frames through h264_nvenc (tc_convert_rgb8_to_nv12). It prints
one JSON line: what it ran, and what it left out and why.

A row per tool: ok when compute-sanitizer found no error (memcheck's ERROR SUMMARY, racecheck's
RACECHECK SUMMARY) and the workload finished; FAIL with the first errors otherwise. Where
compute-sanitizer is absent the rows say where it was looked for (skipped); the dry run (--device
cpu) runs the workload alone on the CPU, so that the script itself is rehearsed.
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

if __name__ == "__main__":
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))   # the gpu package

from gpu.rows import Row, Settings, error_text

TOOLS = ("memcheck", "racecheck")
WORKLOAD = pathlib.Path(__file__).resolve()
# (file, frames, dtype): what the workload decodes with VideoDecoder
DECODES = (("h264_bframes.mp4", 8, "uint8"), ("h264_bframes.mp4", 4, "float32"), ("hevc_10bit.mp4", 4, "uint8"),
           ("hevc_10bit.mp4", 2, "float32"), ("h264_yuv444.mp4", 4, "uint8"), ("h264_350x198.mp4", 4, "uint8"),
           ("vp9_161x121.webm", 4, "uint8"))
BLOCKS_FILE = "h264_bframes.mp4"


# --------------------------------------------------------------------------------------------
# The workload (in the sanitized process)


def workload(device: str, media: pathlib.Path) -> dict[str, Any]:
    import numpy as np
    import torchcodec
    from torchcodec.decoders import ColorConverter, Demuxer, VideoDecoder
    torchcodec.set_bridge("numpy")
    ran, left_out = [], []
    for name, count, dtype in DECODES:
        decoder = VideoDecoder(media / name, device=device, output_dtype=getattr(np, dtype))
        decoder.get_frames_in_range(0, min(count, len(decoder)))
        fallback = getattr(decoder, "cpu_fallback", False)
        ran.append(f"{name} {count} frames {dtype}" + (f" (CPU fallback: {fallback})" if fallback else ""))
    demuxer = Demuxer(media / BLOCKS_FILE)
    packet_decoder = demuxer.streams[0].make_decoder(device=device)
    converter = ColorConverter(device=device)
    frames: list[Any] = []
    for packet in demuxer:
        frames += packet_decoder.decode(packet)
        if len(frames) >= 6:
            break
    for frame in frames:
        converter.convert(frame)
    ran.append(f"blocks: {len(frames)} RawFrames of {BLOCKS_FILE} held and converted")
    if device == "cpu":
        left_out.append("NVENC: a dry run")
    else:
        from torchcodec._cuda import _driver, _nvenc
        from torchcodec.encoders import VideoEncoder
        from torchcodec._cuda._device_buffer import DeviceBuffer
        context = _driver.load_driver().context(int(device.partition(":")[2] or 0))
        cause, text = _nvenc.nvenc_status(context)
        if cause is None:
            source = DeviceBuffer.empty(context, (2, 3, 64, 96), "uint8", 1)
            VideoEncoder(source, frame_rate=30).to_tensor("mp4")
            ran.append("NVENC: 2 frames of 96x64 through h264_nvenc")
        else:
            left_out.append(f"NVENC ({cause}): {text}")
    return {"ran": ran, "left_out": left_out}


# --------------------------------------------------------------------------------------------
# The step (in gpu/check.py)


def find_sanitizer() -> tuple[str | None, list[str]]:
    """compute-sanitizer's path (None when absent), and where it was looked for."""
    places = ["PATH"]
    found = shutil.which("compute-sanitizer")
    if found:
        return found, places
    folders = [os.path.join(os.environ[name], "bin") for name in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(name)]
    folders += ["/usr/local/cuda/bin", *sorted(glob.glob("/usr/local/cuda-*/bin"), reverse=True),
                "/usr/local/cuda/compute-sanitizer"]
    folders += [os.path.join(entry, "nvidia", "cuda_sanitizer_api", "compute-sanitizer") for entry in sys.path
                if entry.endswith(("site-packages", "dist-packages"))]     # NVIDIA's pip package
    for folder in folders:
        places.append(folder)
        candidate = os.path.join(folder, "compute-sanitizer")
        if os.access(candidate, os.X_OK):
            return candidate, places
    return None, places


def summary(output: str) -> tuple[int | None, list[str]]:
    """(errors compute-sanitizer counted, or None when it printed no summary; its first error lines).
    racecheck's own summary counts hazards that are errors; every tool ends with an ERROR SUMMARY."""
    found = re.search(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?, \d+ warnings?\)", output)
    if found is None:
        found = re.search(r"ERROR SUMMARY: (\d+) errors?", output)
    errors = int(found.group(1)) if found else None
    lines = [line.strip("= ").strip() for line in output.splitlines()
             if line.startswith("=========") and ("Error" in line or "Hazard" in line or "Invalid" in line)]
    return errors, lines[:3]


def workload_report(output: str) -> dict[str, Any] | None:
    """The workload's JSON line, None when it did not finish."""
    for line in reversed(output.splitlines()):
        if line.startswith("{") and '"ran"' in line:
            return json.loads(line)
    return None


def workload_command(settings: Settings) -> list[str]:
    return [sys.executable, "-P", str(WORKLOAD), "--workload", "--device", settings.device, "--media",
            str(settings.media)]


def sanitized_row(tool: str, sanitizer: str, settings: Settings, share: float) -> Row:
    """One tool's run over the workload, given ``share`` of the time left before the deadline."""
    subject = f"compute-sanitizer --tool {tool}"
    left = settings.deadline - time.monotonic() if settings.deadline != float("inf") else 1200.0
    seconds = max(10.0, left * share)
    start = time.perf_counter()
    try:
        proc = subprocess.run([sanitizer, "--tool", tool, "--error-exitcode", "99", "--print-limit", "20",
                               *workload_command(settings)], capture_output=True, text=True, timeout=seconds)
    except subprocess.TimeoutExpired:
        return Row("sanitize", subject, f"did not finish in {seconds:.0f} s", "FAIL")
    took = time.perf_counter() - start
    output = proc.stdout + proc.stderr
    errors, lines = summary(output)
    report = workload_report(proc.stdout)
    numbers = {"errors": errors, "exit": proc.returncode, "seconds": took, "workload": report}
    if report is None:
        tail = " / ".join(line for line in output.strip().splitlines()[-3:])
        return Row("sanitize", subject, f"the workload did not finish (exit {proc.returncode}): {tail[:300]}",
                   "FAIL", numbers)
    text = (f"{errors if errors is not None else 'no summary printed, exit 0:'} errors over {len(report['ran'])} "
            f"workloads in {took:.0f} s")
    if report["left_out"]:
        text += "; left out: " + "; ".join(report["left_out"])
    if errors or proc.returncode != 0:       # --error-exitcode: any error found also fails the exit
        return Row("sanitize", subject, f"{text} (exit {proc.returncode}): " + " / ".join(lines), "FAIL", numbers)
    return Row("sanitize", subject, text, "ok", numbers)


def check_sanitize(settings: Settings) -> Iterator[Row]:
    if settings.out_of_time():
        yield Row("sanitize", "compute-sanitizer", "not run: --deadline reached", "skipped")
        return
    sanitizer, places = find_sanitizer()
    if settings.dry_run or sanitizer is None:
        why = ("a dry run has no GPU for it" if settings.dry_run else
               f"compute-sanitizer (CUDA toolkit) not found: looked on {', '.join(places)}")
        for tool in TOOLS:
            yield Row("sanitize", f"compute-sanitizer --tool {tool}", f"not run: {why}", "skipped")
        start = time.perf_counter()
        proc = subprocess.run(workload_command(settings), capture_output=True, text=True)
        report = workload_report(proc.stdout)
        if proc.returncode != 0 or report is None:
            tail = (proc.stdout + proc.stderr).strip().splitlines()[-1:]
            yield Row("sanitize", "the workload, unsanitized", f"failed (exit {proc.returncode}): {tail}", "FAIL")
        else:
            yield Row("sanitize", "the workload, unsanitized",
                      f"{len(report['ran'])} workloads in {time.perf_counter() - start:.0f} s"
                      + ("; left out: " + "; ".join(report["left_out"]) if report["left_out"] else ""), "ok", report)
        return
    for k, tool in enumerate(TOOLS):
        if settings.out_of_time():
            yield Row("sanitize", f"compute-sanitizer --tool {tool}", "not run: --deadline reached", "skipped")
            continue
        try:
            yield sanitized_row(tool, sanitizer, settings, 1.0 / (len(TOOLS) - k))
        except Exception as error:   # noqa: BLE001
            yield Row("sanitize", f"compute-sanitizer --tool {tool}", error_text(error), "ERROR")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workload", action="store_true", help="run the workload (what the sanitizer watches)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--media", type=pathlib.Path, required=True)
    args = parser.parse_args(argv)
    if not args.workload:
        parser.error("run the step through tools/gpu/check.py --only sanitize; --workload runs the workload")
    print(json.dumps(workload(args.device, args.media)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
