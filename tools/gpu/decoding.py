"""The GPU check's decoding steps: the driver and NVDEC through ctypes (probe), GPU against CPU frames
of the corpus (frames), and the building blocks on the device (blocks)."""
from __future__ import annotations

import contextlib
import ctypes
import importlib
import importlib.util
import pathlib
from collections.abc import Iterator
from typing import Any

from gpu import gpu_tolerances
from gpu.rows import (ArrayLib, Row, Settings, backend_context, bridge, error_text, fallback_reason, open_decoder,
                      out_of_time_row, output_lib, video_decoder)
import numpy as np


# --------------------------------------------------------------------------------------------
# 0. probe: the driver and NVDEC through ctypes (no torchcodec: runs while it builds)


class CuvidDecodeCaps(ctypes.Structure):   # CUVIDDECODECAPS (ffnvcodec's dynlink_cuviddec.h)
    _fields_ = [("eCodecType", ctypes.c_int), ("eChromaFormat", ctypes.c_int), ("nBitDepthMinus8", ctypes.c_uint),
                ("reserved1", ctypes.c_uint * 3), ("bIsSupported", ctypes.c_ubyte), ("nNumNVDECs", ctypes.c_ubyte),
                ("nOutputFormatMask", ctypes.c_ushort), ("nMaxWidth", ctypes.c_uint), ("nMaxHeight", ctypes.c_uint),
                ("nMaxMBCount", ctypes.c_uint), ("nMinWidth", ctypes.c_ushort), ("nMinHeight", ctypes.c_ushort),
                ("bIsHistogramSupported", ctypes.c_ubyte), ("nCounterBitDepth", ctypes.c_ubyte),
                ("nMaxHistogramBins", ctypes.c_ushort), ("reserved3", ctypes.c_uint * 10)]


PROBE_CODECS = {"h264": 4, "hevc": 8, "vp9": 10, "av1": 11, "vp8": 9, "mpeg4": 2, "mpeg2": 1}   # cudaVideoCodec
PROBE_FORMATS = (("4:2:0", 1, 8), ("4:2:0", 1, 10), ("4:4:4", 3, 8), ("4:4:4", 3, 10))   # cudaVideoChromaFormat
REQUIRED_CAPS = {("h264", "4:2:0", 8), ("hevc", "4:2:0", 8)}     # every NVDEC has them


def check_probe(settings: Settings) -> Iterator[Row]:
    """libcuda.so.1 and libnvcuvid.so.1, the driver version and device, and cuvidGetDecoderCaps per
    codec. Missing libraries FAIL on a GPU (skipped in a dry run without the stubs)."""
    missing = "FAIL" if not settings.dry_run else "skipped"
    index = int(settings.device.partition(":")[2] or 0) if not settings.dry_run else 0
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as error:
        yield Row("probe", "libcuda.so.1", f"does not load: {error}", missing)
        return
    version, count, device = ctypes.c_int(0), ctypes.c_int(0), ctypes.c_int(0)
    major, minor, name = ctypes.c_int(0), ctypes.c_int(0), ctypes.create_string_buffer(256)
    ret = cuda.cuInit(0)
    if ret == 0:
        ret = cuda.cuDeviceGetCount(ctypes.byref(count)) or cuda.cuDeviceGet(ctypes.byref(device), index)
    if ret != 0:
        yield Row("probe", "libcuda.so.1", f"loads, but the driver finds no usable device cuda:{index} "
                                           f"(CUresult {ret})", missing, {"cuda_error": ret})
        return
    cuda.cuDriverGetVersion(ctypes.byref(version))
    cuda.cuDeviceGetName(name, 256, device)
    capability = ("sm_%d%d" % (major.value, minor.value)
                  if cuda.cuDeviceComputeCapability(ctypes.byref(major), ctypes.byref(minor), device) == 0 else "sm_?")
    numbers = {"driver_cuda_version": version.value, "devices": count.value, "name": name.value.decode(),
               "capability": capability}
    yield Row("probe", "libcuda.so.1", f"driver CUDA {version.value // 1000}.{version.value % 1000 // 10}, "
                                       f"{count.value} device(s); cuda:{index} {name.value.decode()} ({capability})",
              "ok", numbers)
    try:
        nvcuvid = ctypes.CDLL("libnvcuvid.so.1")
    except OSError as error:
        yield Row("probe", "libnvcuvid.so.1", f"does not load ({error}): no NVDEC, so every CUDA decoder would fall "
                                              f"back to the CPU (container images need NVIDIA_DRIVER_CAPABILITIES "
                                              f"with 'video')", missing)
        return
    if not hasattr(nvcuvid, "cuvidGetDecoderCaps"):
        yield Row("probe", "libnvcuvid.so.1", "loads, but has no cuvidGetDecoderCaps (driver too old)", missing)
        return
    yield Row("probe", "libnvcuvid.so.1", "loads", "ok")
    context = ctypes.c_void_p()
    if cuda.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) != 0:
        yield Row("probe", "caps", "cannot retain the primary context", "ERROR")
        return
    try:
        for codec, codec_id in PROBE_CODECS.items():
            if settings.out_of_time():
                yield out_of_time_row("probe", f"caps {codec}")
                continue
            parts, status, found = [], "ok", {}
            for chroma, chroma_id, depth in PROBE_FORMATS:
                caps = CuvidDecodeCaps(eCodecType=codec_id, eChromaFormat=chroma_id, nBitDepthMinus8=depth - 8)
                cuda.cuCtxPushCurrent_v2(context)
                ret = nvcuvid.cuvidGetDecoderCaps(ctypes.byref(caps))
                cuda.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
                key = f"{chroma} {depth}-bit"
                if ret != 0:
                    parts.append(f"{key} error {ret}")
                    status = "ERROR"
                    continue
                found[key] = bool(caps.bIsSupported)
                parts.append(f"{key} up to {caps.nMaxWidth}x{caps.nMaxHeight}" if caps.bIsSupported else f"{key} no")
                if (codec, chroma, depth) in REQUIRED_CAPS and not caps.bIsSupported:
                    status = "FAIL"
            yield Row("probe", f"caps {codec}", "; ".join(parts), status, found)
    finally:
        cuda.cuDevicePrimaryCtxRelease(device)


# --------------------------------------------------------------------------------------------
# 1. frames: device vs CPU over the corpus


def has_video_stream(path: pathlib.Path) -> bool:
    """False only for a file that opens and has no video stream: one that does not open is kept,
    for its row to report why."""
    try:
        video_decoder(path, seek_mode="approximate")
    except ValueError as error:
        return "no video stream" not in str(error)
    except Exception:   # noqa: BLE001
        return True
    return True


def video_files(settings: Settings) -> list[str]:
    """The corpus files with a video stream (audio-only files are left out)."""
    return [name for name in settings.files if has_video_stream(settings.media / name)]


def frame_differences(actual: np.ndarray, expected: np.ndarray) -> dict[str, Any]:
    """Max and mean absolute difference and the fraction of values that differ, in the frames'
    own units (0..255 for uint8, 0..1 for float32)."""
    if actual.shape != expected.shape:
        raise ValueError(f"shape {actual.shape} differs from the CPU's {expected.shape}")
    if actual.dtype != expected.dtype:
        raise ValueError(f"dtype {actual.dtype} differs from the CPU's {expected.dtype}")
    wide = np.float64 if expected.dtype.kind == "f" else np.int32
    diff = np.abs(actual.astype(wide) - expected.astype(wide))
    return {"max_abs_diff": float(diff.max()) if diff.size else 0.0,
            "mean_abs_diff": float(diff.mean()) if diff.size else 0.0,
            "fraction_differing": float(np.count_nonzero(diff)) / diff.size if diff.size else 0.0}


def compare_file(name: str, lib: ArrayLib, settings: Settings) -> Row:
    path = settings.media / name
    try:
        with bridge(lib.bridge):
            device_decoder = open_decoder(path, settings.device, settings)
            count = min(len(device_decoder), settings.max_frames)
            actual = lib.to_numpy(device_decoder.get_frames_in_range(0, count).data)
        with bridge("numpy"):
            expected = video_decoder(path, dimension_order="NHWC").get_frames_in_range(0, count).data
        numbers = {"frames": count, **frame_differences(actual, expected),
                   "cpu_fallback": fallback_reason(device_decoder)}
    except Exception as error:   # noqa: BLE001  (one file failing must not stop the others)
        return Row("frames", name, error_text(error), "ERROR", {"error": error_text(error)})
    result = (f"{count} frames: max {numbers['max_abs_diff']:g}, mean {numbers['mean_abs_diff']:.4f}, "
              f"{100 * numbers['fraction_differing']:.2f}% differ")
    if numbers["cpu_fallback"]:
        result += f"; CPU fallback: {numbers['cpu_fallback']}"
    try:
        status, why = gpu_tolerances.judge(name, numbers["max_abs_diff"], numbers["mean_abs_diff"],
                                           numbers["cpu_fallback"], on_gpu=not settings.dry_run)
    except KeyError:
        return Row("frames", name, result + "; not in tools/gpu_tolerances.py's table", "ERROR", numbers)
    if why:
        result += f"; {why}"
    elif not settings.dry_run:
        entry = gpu_tolerances.tolerance(name)
        result += f" (bounds: max {entry.max_abs}, mean {entry.mean_abs})"
    return Row("frames", name, result, status, numbers)


def check_frames(settings: Settings) -> Iterator[Row]:
    try:
        lib = output_lib(settings)
    except Exception as error:   # noqa: BLE001
        yield Row("frames", "corpus", error_text(error), "ERROR")
        return
    for name in video_files(settings):
        yield compare_file(name, lib, settings) if not settings.out_of_time() else out_of_time_row("frames", name)


# --------------------------------------------------------------------------------------------
# blocks: the building blocks on the device (make_decoder, RawFrame planes, ColorConverter)

# NVDEC 8-bit (bit-exact codecs), 10-bit and 4:4:4 (as the GPU's caps allow, else the CPU fallback
# uploaded), and 4:2:2 (always the CPU fallback, uploaded in its own format).
BLOCKS_FILES = ("h264_bframes.mp4", "hevc_1080p.mp4", "hevc_10bit.mp4", "h264_yuv444.mp4", "h264_yuv422.mp4")
QUICK_BLOCKS_FILES = ("h264_bframes.mp4", "hevc_10bit.mp4", "h264_yuv422.mp4")
SURFACE_FORMATS = ("nv12", "p010le", "p012le", "p016le", "yuv444p", "yuv444p16le")


def block_frames(path: pathlib.Path, device: str, count: int, settings: Settings) -> tuple[Any, list[Any]]:
    """(the packet decoder, its first ``count`` RawFrames of the stream, all kept alive)."""
    blocks = importlib.import_module("torchcodec.decoders")
    with backend_context(settings) if device != "cpu" else contextlib.nullcontext():
        demuxer = blocks.Demuxer(path)
        decoder = demuxer.streams[0].make_decoder(device=device)
    frames: list[Any] = []
    for packet in demuxer:
        frames += decoder.decode(packet)
        if len(frames) >= count:
            return decoder, frames[:count]
    return decoder, (frames + decoder.drain())[:count]


def msb_aligned(plane: np.ndarray, device_format: str, cpu_depth: int) -> np.ndarray:
    """A device plane's samples in the CPU's units (surface formats hold deep samples MSB-aligned)."""
    if plane.dtype == np.uint16 and device_format in SURFACE_FORMATS and cpu_depth < 16:
        return plane >> (16 - cpu_depth)
    return plane


def compare_blocks(name: str, lib: ArrayLib, settings: Settings) -> Row:
    """One file through the blocks on the device: every frame kept alive while decoding goes on
    (more than NVDEC's 4 output surfaces), the luma planes against the CPU decoder's, RGB of
    ColorConverter(device) against the device VideoDecoder (equal) and the CPU (the tolerance
    table), and a seek + reset against the CPU blocks."""
    path = settings.media / name
    blocks = importlib.import_module("torchcodec.decoders")
    count = min(settings.max_frames, 30)
    try:
        with bridge(lib.bridge):
            decoder, frames = block_frames(path, settings.device, count, settings)
            kind = type(decoder).__name__
            on_device = kind == "NvdecDecoder" or bool(getattr(decoder, "hwaccel_used", False))
            first = frames[0]
            converter = blocks.ColorConverter(device=settings.device)
            rgb = np.stack([lib.to_numpy(converter.convert(frame).data).transpose(1, 2, 0) for frame in frames])
            lumas = [lib.to_numpy(frame.planes[0]) for frame in frames[:4]]
            whole = lib.to_numpy(open_decoder(path, settings.device, settings).get_frames_in_range(0, len(frames)).data)
        with bridge("numpy"):
            _, cpu_frames = block_frames(path, "cpu", count, settings)
            cpu_converter = blocks.ColorConverter()
            cpu_rgb = np.stack([np.asarray(cpu_converter.convert(frame).data).transpose(1, 2, 0)
                                for frame in cpu_frames])
        numbers = {"frames": len(frames), "decoder": kind, "pixel_format": first.pixel_format,
                   "fallback": "" if on_device or settings.dry_run else "decoded on the CPU, uploaded",
                   "device": first.device, **frame_differences(rgb, cpu_rgb),
                   "video_decoder_max_abs_diff": frame_differences(rgb, whole)["max_abs_diff"],
                   "pts_equal": [f.pts_seconds for f in frames] == [f.pts_seconds for f in cpu_frames],
                   "luma_equal": all(np.array_equal(msb_aligned(luma, first.pixel_format, cpu.bit_depth),
                                                    np.asarray(cpu.planes[0]))
                                     for luma, cpu in zip(lumas, cpu_frames))}
        numbers.update(seek_and_reset(path, settings))
        del frames, decoder
    except Exception as error:   # noqa: BLE001  (one file failing must not stop the others)
        return Row("blocks", name, error_text(error), "ERROR", {"error": error_text(error)})
    problems = []
    if numbers["device"] != (settings.device if settings.device != "cuda" else "cuda:0"):
        problems.append(f"frames on {numbers['device']}")
    if not settings.dry_run and numbers["pixel_format"] not in SURFACE_FORMATS and name != "h264_yuv422.mp4":
        problems.append(f"pixel format {numbers['pixel_format']} is no surface format")
    if not numbers["pts_equal"]:
        problems.append("pts differ from the CPU blocks'")
    if not numbers["luma_equal"] and gpu_tolerances.tolerance(name).nvdec != "caps":
        problems.append("luma planes differ from the CPU decoder's")
    if numbers["video_decoder_max_abs_diff"] != 0:
        problems.append(f"RGB differs from the device VideoDecoder's by up to {numbers['video_decoder_max_abs_diff']:g}")
    if not numbers["seek_ok"]:
        problems.append("after seek + reset the pts differ from the CPU's")
    status, why = gpu_tolerances.judge(name, numbers["max_abs_diff"], numbers["mean_abs_diff"], numbers["fallback"],
                                       on_gpu=not settings.dry_run)
    if why:
        problems.append(f"vs the CPU ColorConverter: {why}")
    result = (f"{numbers['frames']} frames held ({numbers['decoder']}, {numbers['pixel_format']}); luma "
              f"{'equal' if numbers['luma_equal'] else 'differs'}; RGB vs VideoDecoder max "
              f"{numbers['video_decoder_max_abs_diff']:g}, vs CPU max {numbers['max_abs_diff']:g} mean "
              f"{numbers['mean_abs_diff']:.4f}; seek+reset {'ok' if numbers['seek_ok'] else 'wrong'}")
    if problems:
        result += "; " + "; ".join(problems)
    return Row("blocks", name, result, "FAIL" if problems else "ok", numbers)


def seek_and_reset(path: pathlib.Path, settings: Settings) -> dict[str, Any]:
    """Decode from a seek to the middle, after reset(), on the device and on the CPU: the same pts."""
    blocks = importlib.import_module("torchcodec.decoders")
    found = {}
    for device in (settings.device, "cpu"):
        with backend_context(settings) if device != "cpu" else contextlib.nullcontext():
            demuxer = blocks.Demuxer(path)
            decoder = demuxer.streams[0].make_decoder(device=device)
        for packet, _ in zip(demuxer, range(3)):
            decoder.decode(packet)
        middle = demuxer.metadata.duration_seconds_from_header or 1.0
        demuxer.seek(middle / 2)
        decoder.reset()
        frames: list[Any] = []
        for packet in demuxer:
            frames += decoder.decode(packet)
            if len(frames) >= 3:
                break
        found[device] = [frame.pts_seconds for frame in frames[:3]]
    return {"seek_ok": found[settings.device] == found["cpu"] and len(found["cpu"]) == 3}


def check_blocks(settings: Settings) -> Iterator[Row]:
    try:
        lib = output_lib(settings)
    except Exception as error:   # noqa: BLE001
        yield Row("blocks", "corpus", error_text(error), "ERROR")
        return
    names = QUICK_BLOCKS_FILES if settings.quick else BLOCKS_FILES
    for name in names:
        if not (settings.media / name).exists():
            yield Row("blocks", name, "not in the corpus folder", "ERROR")
        else:
            yield compare_blocks(name, lib, settings) if not settings.out_of_time() else out_of_time_row("blocks", name)
