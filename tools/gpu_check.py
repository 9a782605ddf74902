#!/usr/bin/env python3
"""Check torchcodec's CUDA decoding on a machine with an NVIDIA GPU, one row at a time.

    python tools/gpu_check.py [--device cuda|cuda:N|cpu] [--quick] [--only probe,frames,blocks,race,interop,bench]
                              [--out DIR] [--step NAME] [--summary FILE] [--deadline SECONDS]

Each row is printed and appended to DIR/gpu_check.md (a markdown table: step, check, subject, result,
status) and DIR/gpu_check.jsonl as soon as it is known, so that a run stopped early still says
what it found; an exception is reported in its row and never stops the others. The checks:

1. probe: the driver through ctypes only (no torchcodec needed, so it runs while torchcodec builds):
   libcuda.so.1 and libnvcuvid.so.1 load, the driver version and device, and cuvidGetDecoderCaps
   for h264, hevc, vp9, av1, vp8, mpeg4 and mpeg2 at 8 and 10 bits, 4:2:0 and 4:4:4. On a GPU a
   missing libnvcuvid.so.1, or an NVDEC without H.264 / HEVC 8-bit 4:2:0, is a FAIL.
2. frames: corpus files (tools/make_media.py) decoded with the device under test and with the CPU
   decoder; per file the max and mean absolute difference of the RGB values, judged by the table of
   tools/gpu_tolerances.py (also used by tests/test_cuda_decoding.py), and the decoder's
   ``cpu_fallback``: a fallback for lack of libnvcuvid, or for a stream every NVDEC decodes, FAILs.
2b. blocks: the building blocks on the device: ``stream.make_decoder(device)`` keeping 30 RawFrames
   alive (more than NVDEC's 4 output surfaces), their pixel format (an NVDEC surface format) and
   luma planes (against the CPU decoder's), ``ColorConverter(device)`` equal to the device
   VideoDecoder's frames and judged against the CPU ColorConverter by tools/gpu_tolerances.py,
   and a seek + ``reset()`` giving the CPU blocks' pts (tools/gpu_check.sh's "blocks" step).
3. race: frames handed over on non-default streams. torch: decode on ``torch.cuda.Stream()`` made
   current, sum on that stream at once (no synchronisation), copy to the host after
   ``synchronize()``; cupy the same on ``cupy.cuda.Stream(non_blocking=True)``; DLPack hand-offs
   torch -> cupy and cupy -> torch read on a second stream. Every other round first queues a large
   matrix product on the stream, so that output written without waiting for the stream's earlier
   work (or read before the write is done) shows as wrong sums or pixels.
4. interop: torchcodec's own device buffers (the numpy bridge on CUDA): each frame view
   ``batch[i]`` through DLPack into torch and cupy (``data`` must point at frame i, whatever the
   consumer does with ``byte_offset``), and the batch through ``__cuda_array_interface__`` v3.
5. bench: NVDEC against the CPU decoder (``num_ffmpeg_threads`` 0 and 1): sequential decoding in
   batches (``get_frames_in_range``), 10 random frames (``get_frames_at``, sorted indices, a fresh
   decoder each time: the time includes opening the file and its scan), and one vs several decoders
   in parallel threads (each its own decoder and stream, total frames/s); ratios device/CPU.

``--device cpu`` is a dry run for machines without a GPU: the device under test is the CPU
decoder, the race rows use torch on the CPU (when installed) and numpy in cupy's place, the interop
rows numpy arrays, and the table has the same rows; every frame difference must then be 0 (the
probe runs against whatever libcuda.so.1 / libnvcuvid.so.1 the library path finds: the stubs of
tests/cuda_stubs in tools/gpu_check.sh's dry run). ``--quick`` decodes fewer frames and
repetitions (30 frames per file; the 1080p corpus clips as benchmark, one vs eight decoders).
Exit status 1 when a row failed.
"""
from __future__ import annotations

import argparse
import contextlib
import ctypes
import dataclasses
import importlib
import importlib.util
import json
import pathlib
import random
import signal
import statistics
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from typing import Any

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))       # make_media, gpu_tolerances (scripts run with python -P lack their folder)

import gpu_tolerances  # noqa: E402
import make_media  # noqa: E402
import numpy as np  # noqa: E402


def torchcodec_module() -> Any:
    """torchcodec, imported on first use: the probe runs before (and without) a build."""
    return importlib.import_module("torchcodec")


def video_decoder(*args: Any, **kwargs: Any) -> Any:
    return importlib.import_module("torchcodec.decoders").VideoDecoder(*args, **kwargs)


def bridge(name: str) -> contextlib.AbstractContextManager:
    return torchcodec_module().bridge(name)


BENCH_CLIPS = ("bench_1080p_h264.mp4", "bench_1080p_hevc.mp4")
QUICK_BENCH_CLIPS = gpu_tolerances.CODED_SIZE_CLIPS     # 30 frames of 1080p each, in the corpus
RACE_CLIP = "h264_bframes.mp4"
BATCH = 32                      # frames per get_frames_in_range call when benchmarking
RANDOM_FRAMES = 10
THREAD_COUNTS = (1, 2, 4, 8)
QUICK_THREAD_COUNTS = (1, 8)    # one decoder against eight


@dataclasses.dataclass(frozen=True)
class Settings:
    device: str                 # the device under test: "cuda", "cuda:N" or "cpu" (dry run)
    quick: bool
    media: pathlib.Path
    files: tuple[str, ...]      # corpus files for the frame comparison
    bench_clips: tuple[str, ...]
    race_clip: str
    cuda_backend: str
    bridge: str                 # what frames and benchmarks decode into: auto, torch, cupy, numpy
    deadline: float             # time.monotonic() after which no new row is started

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline

    @property
    def dry_run(self) -> bool:
        return self.device == "cpu"

    @property
    def max_frames(self) -> int:
        """Frames compared per corpus file (the corpus files have at most 90)."""
        return 30 if self.quick else 1000

    @property
    def bench_frames(self) -> int:
        """Frames decoded per decoder in the sequential and parallel benchmarks."""
        return 32 if self.quick else 300

    @property
    def repeats(self) -> int:
        return 2 if self.quick else 5

    @property
    def thread_counts(self) -> tuple[int, ...]:
        return QUICK_THREAD_COUNTS if self.quick else THREAD_COUNTS

    @property
    def race_rounds(self) -> int:
        return 4 if self.quick else 24


@dataclasses.dataclass
class Row:
    """One line of the summary table; ``numbers`` go to the JSON file."""
    check: str
    subject: str
    result: str
    status: str                 # "ok", "FAIL", "ERROR", "skipped" or "info" (benchmarks)
    numbers: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.status in ("FAIL", "ERROR")


def out_of_time_row(check: str, subject: str) -> Row:
    return Row(check, subject, "not run: --deadline reached", "skipped")


def error_text(error: BaseException) -> str:
    """One line naming the exception and where it was raised (the last frame of its traceback)."""
    where = traceback.extract_tb(error.__traceback__)
    place = f" (at {pathlib.Path(where[-1].filename).name}:{where[-1].lineno})" if where else ""
    return f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}{place}"


# --------------------------------------------------------------------------------------------
# Array libraries: how the check reads outputs, queues work on streams and hands arrays over


class ArrayLib:
    """The operations the race check needs from one array library, on the device under test."""

    name = ""
    bridge = ""

    def new_stream(self) -> Any:
        """A new non-default stream (None where the library has no streams)."""
        raise NotImplementedError

    def on_stream(self, stream: Any) -> contextlib.AbstractContextManager:
        """Make ``stream`` the library's current stream inside the block."""
        raise NotImplementedError

    def busy(self) -> None:
        """Queue long work on the current stream (a large matrix product)."""
        raise NotImplementedError

    def total(self, array: Any) -> Any:
        """The int64 sum of ``array``, computed on the current stream and left on the device."""
        raise NotImplementedError

    def synchronize(self, stream: Any = None) -> None:
        """Wait for ``stream`` (or the current stream) to finish."""
        raise NotImplementedError

    def to_numpy(self, array: Any) -> np.ndarray:
        raise NotImplementedError

    def from_dlpack(self, array: Any) -> Any:
        """``array`` (another library's) viewed through DLPack, ordered after its producer stream."""
        raise NotImplementedError


class TorchLib(ArrayLib):
    name = bridge = "torch"

    def __init__(self, device: str) -> None:
        import torch
        self.torch = torch
        self.cuda = device != "cpu"
        self.device = torch.device(device)
        size = 4096 if self.cuda else 64
        self._matrix = torch.rand(size, size, device=self.device) if self.cuda else None

    def new_stream(self) -> Any:
        return self.torch.cuda.Stream(device=self.device) if self.cuda else None

    def on_stream(self, stream: Any) -> contextlib.AbstractContextManager:
        return self.torch.cuda.stream(stream) if self.cuda else contextlib.nullcontext()

    def busy(self) -> None:
        if self.cuda:
            for _ in range(8):       # about 10 ms of queued work on an H200 (fp32)
                self._matrix @ self._matrix

    def total(self, array: Any) -> Any:
        return array.sum(dtype=self.torch.int64)

    def synchronize(self, stream: Any = None) -> None:
        if self.cuda:
            (stream or self.torch.cuda.current_stream(self.device)).synchronize()

    def to_numpy(self, array: Any) -> np.ndarray:
        if array.dtype == self.torch.uint16:        # numpy conversion is not there for uint16 in every torch
            return array.view(self.torch.int16).cpu().numpy().view(np.uint16)
        return array.cpu().numpy()

    def from_dlpack(self, array: Any) -> Any:
        return self.torch.from_dlpack(array)


class CupyLib(ArrayLib):
    name = bridge = "cupy"

    def __init__(self, device: str) -> None:
        import cupy
        self.cupy = cupy
        index = int(device.partition(":")[2] or 0)
        self.device = cupy.cuda.Device(index)
        with self.device:
            self._matrix = cupy.random.rand(4096, 4096, dtype=cupy.float32)

    def new_stream(self) -> Any:
        with self.device:
            return self.cupy.cuda.Stream(non_blocking=True)

    def on_stream(self, stream: Any) -> contextlib.AbstractContextManager:
        return stream

    def busy(self) -> None:
        for _ in range(8):
            self._matrix @ self._matrix

    def total(self, array: Any) -> Any:
        return array.sum(dtype=self.cupy.int64)

    def synchronize(self, stream: Any = None) -> None:
        (stream or self.cupy.cuda.get_current_stream()).synchronize()

    def to_numpy(self, array: Any) -> np.ndarray:
        return self.cupy.asnumpy(array)

    def from_dlpack(self, array: Any) -> Any:
        return self.cupy.from_dlpack(array)


class NumpyLib(ArrayLib):
    """cupy's stand-in in the dry run: same calls, no streams."""
    name = bridge = "numpy"

    def new_stream(self) -> Any:
        return None

    def on_stream(self, stream: Any) -> contextlib.AbstractContextManager:
        return contextlib.nullcontext()

    def busy(self) -> None:
        pass

    def total(self, array: Any) -> Any:
        return array.sum(dtype=np.int64)

    def synchronize(self, stream: Any = None) -> None:
        pass

    def to_numpy(self, array: Any) -> np.ndarray:
        return np.asarray(array)

    def from_dlpack(self, array: Any) -> Any:
        return np.from_dlpack(array)


def load_lib(name: str, settings: Settings) -> ArrayLib:
    """The array library ``name`` ("torch" or "cupy") for the device under test; ImportError when
    it is not installed. In the dry run cupy is replaced by numpy."""
    if name == "torch":
        return TorchLib(settings.device)
    if settings.dry_run:
        return NumpyLib()
    return CupyLib(settings.device)


class OwnBufferLib(NumpyLib):
    """torchcodec's own device buffers (the numpy bridge on CUDA without torch or cupy), read back
    with the driver: the buffer's CUDA Array Interface (which waits for its writes), then
    cuMemcpyDtoH through ctypes in the device's primary context."""

    def __init__(self, device: str) -> None:
        self.cu = ctypes.CDLL("libcuda.so.1")
        self.device, self.context = ctypes.c_int(), ctypes.c_void_p()
        index = int(device.partition(":")[2] or 0)
        if self.cu.cuDeviceGet(ctypes.byref(self.device), index) or \
                self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), self.device):
            raise RuntimeError(f"cannot reach cuda:{index} through libcuda.so.1")

    def to_numpy(self, array: Any) -> np.ndarray:
        """The buffer's elements, strided views included (a RawFrame's planes, an NCHW view): the
        bytes it spans copied, then viewed with its strides (non-negative ones)."""
        interface = array.__cuda_array_interface__
        dtype = np.dtype(interface["typestr"])
        shape = tuple(interface["shape"])
        strides = interface["strides"]
        if strides is None:
            strides = tuple(int(np.prod(shape[k + 1:], dtype=np.int64)) * dtype.itemsize for k in range(len(shape)))
        if any(stride < 0 for stride in strides):
            raise ValueError("OwnBufferLib reads buffers with non-negative strides only")
        span = sum((n - 1) * stride for n, stride in zip(shape, strides)) + dtype.itemsize if all(shape) else 0
        raw = np.empty(max(span, 1), np.uint8)
        self.cu.cuCtxPushCurrent_v2(self.context)
        try:
            ret = self.cu.cuMemcpyDtoH_v2(raw.ctypes.data_as(ctypes.c_void_p), ctypes.c_uint64(interface["data"][0]),
                                          ctypes.c_size_t(span)) if span else 0
        finally:
            self.cu.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
        if ret != 0:
            raise RuntimeError(f"cuMemcpyDtoH failed with CUresult {ret}")
        return np.lib.stride_tricks.as_strided(raw[:span].view(dtype) if span else raw[:0].view(dtype), shape,
                                               strides).copy()


def output_lib(settings: Settings) -> ArrayLib:
    """The library the frame check and the benchmark decode into (``--bridge``): by default torch
    when installed, else cupy, else numpy (torchcodec's own device buffers on a GPU)."""
    names = ("torch", "cupy") if settings.bridge == "auto" else (settings.bridge,)
    for name in names:
        if name in ("torch", "cupy") and importlib.util.find_spec(name) is not None:
            return load_lib(name, settings)
    if settings.bridge not in ("auto", "numpy"):
        raise RuntimeError(f"--bridge {settings.bridge}: {settings.bridge} is not installed")
    return NumpyLib() if settings.dry_run else OwnBufferLib(settings.device)


def backend_context(settings: Settings) -> contextlib.AbstractContextManager:
    """``set_cuda_backend(settings.cuda_backend)`` for CUDA decoders (a no-op in the dry run, or
    where this torchcodec has no backend choice)."""
    setter = getattr(importlib.import_module("torchcodec.decoders"), "set_cuda_backend", None)
    if settings.dry_run or setter is None:
        return contextlib.nullcontext()
    return setter(settings.cuda_backend)


def open_decoder(path: pathlib.Path, device: str, settings: Settings, **options: Any) -> Any:
    with backend_context(settings):
        return video_decoder(path, device=device, dimension_order="NHWC", **options)


def fallback_reason(decoder: Any) -> str:
    """Why a CUDA decoder decoded on the CPU ("" when it did not)."""
    fallback = getattr(decoder, "cpu_fallback", False)
    return str(fallback) if fallback else ""


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


# --------------------------------------------------------------------------------------------
# 2. race: outputs on non-default streams, read without synchronisation


def round_indices(round_number: int, num_frames: int, count: int) -> list[int]:
    """Different frames each round (so a read of a reused, not yet written buffer shows)."""
    rng = random.Random(round_number)
    return sorted(rng.sample(range(num_frames), min(count, num_frames)))


@dataclasses.dataclass
class RaceTally:
    rounds: int = 0
    bad_sums: int = 0
    bad_pixels: int = 0

    def row(self, subject: str) -> Row:
        numbers = dataclasses.asdict(self)
        bad = self.bad_sums + self.bad_pixels
        result = (f"{self.rounds} rounds: {self.bad_sums} wrong sums on the stream, "
                  f"{self.bad_pixels} wrong host copies")
        return Row("race", subject, result, "FAIL" if bad or not self.rounds else "ok", numbers)


class CpuReference:
    """The CPU decoder's frames of one file, and their sums, per set of indices."""

    def __init__(self, path: pathlib.Path) -> None:
        with bridge("numpy"):
            decoder = video_decoder(path, dimension_order="NHWC")
            self.frames = decoder.get_frames_in_range(0, len(decoder)).data

    def __len__(self) -> int:
        return len(self.frames)

    def batch(self, indices: Sequence[int]) -> np.ndarray:
        return self.frames[list(indices)]


OWN_STREAM = "decode + read on one non-default stream"


def race_on_own_stream(lib: ArrayLib, path: pathlib.Path, reference: CpuReference,
                       settings: Settings) -> Row:
    """Decode with ``lib``'s bridge on a non-default stream and read on it at once.

    Sums stay on the device until every round is queued (a later round's decode must not overwrite
    a buffer an earlier round's sum still reads); the host copies happen after ``synchronize()``."""
    tally = RaceTally()
    stream = lib.new_stream()
    pending = []
    with bridge(lib.bridge), lib.on_stream(stream):
        decoder = open_decoder(path, settings.device, settings)
        for round_number in range(settings.race_rounds):
            indices = round_indices(round_number, len(reference), 8)
            if round_number % 2 == 0:
                lib.busy()
            frames = decoder.get_frames_at(indices).data
            pending.append((indices, lib.total(frames), frames if round_number % 4 == 3 else None))
            del frames
    lib.synchronize(stream)
    for indices, total, frames in pending:
        expected = reference.batch(indices)
        tally.rounds += 1
        tally.bad_sums += int(lib.to_numpy(total)) != int(expected.sum(dtype=np.int64))
        if frames is not None:
            tally.bad_pixels += not np.array_equal(lib.to_numpy(frames), expected)
    return tally.row(f"{lib.name}: {OWN_STREAM}")


def race_through_dlpack(producer: ArrayLib, consumer: ArrayLib, path: pathlib.Path,
                        reference: CpuReference, settings: Settings) -> Row:
    """Decode with ``producer``'s bridge on its non-default stream, import the frames into
    ``consumer`` through DLPack while that stream is current (DLPack orders the consumer's current
    stream after it), then read them on another stream of the consumer's."""
    tally = RaceTally()
    producer_stream, consumer_stream = producer.new_stream(), consumer.new_stream()
    with bridge(producer.bridge):
        decoder = open_decoder(path, settings.device, settings)
    for round_number in range(settings.race_rounds):
        indices = round_indices(1000 + round_number, len(reference), 8)
        with bridge(producer.bridge), producer.on_stream(producer_stream):
            if round_number % 2 == 0:
                producer.busy()
            frames = decoder.get_frames_at(indices).data
            with consumer.on_stream(consumer_stream):
                imported = consumer.from_dlpack(frames)
                total = consumer.total(imported)
        consumer.synchronize(consumer_stream)
        expected = reference.batch(indices)
        tally.rounds += 1
        tally.bad_sums += int(consumer.to_numpy(total)) != int(expected.sum(dtype=np.int64))
        tally.bad_pixels += not np.array_equal(consumer.to_numpy(imported), expected)
        producer.synchronize(producer_stream)
    return tally.row(f"DLPack {producer.name} -> {consumer.name}, read on another stream")


def check_races(settings: Settings) -> Iterator[Row]:
    path = settings.media / settings.race_clip
    try:
        reference = CpuReference(path)
    except Exception as error:   # noqa: BLE001
        yield Row("race", settings.race_clip, error_text(error), "ERROR")
        return
    libs: dict[str, ArrayLib] = {}
    jobs: list[tuple[str, Callable[[], Row] | str]] = []     # (subject, job or why skipped)
    for name in ("torch", "cupy"):
        try:
            lib = libs[name] = load_lib(name, settings)
        except ImportError as error:
            jobs.append((f"{name}: {OWN_STREAM}", f"{name} is not installed ({error})"))
            continue
        jobs.append((f"{lib.name}: {OWN_STREAM}", lambda lib=lib: race_on_own_stream(lib, path, reference, settings)))
    if len(libs) == 2:
        torch_lib, other = libs["torch"], libs["cupy"]
        jobs += [(f"DLPack torch -> {other.name}",
                  lambda: race_through_dlpack(torch_lib, other, path, reference, settings)),
                 (f"DLPack {other.name} -> torch",
                  lambda: race_through_dlpack(other, torch_lib, path, reference, settings))]
    else:
        jobs.append(("DLPack hand-offs", "needs both torch and cupy"))
    for subject, job in jobs:
        if isinstance(job, str):
            yield Row("race", subject, job, "skipped")
            continue
        if settings.out_of_time():
            yield out_of_time_row("race", subject)
            continue
        try:
            yield job()
        except Exception as error:   # noqa: BLE001
            yield Row("race", subject, error_text(error), "ERROR", {"error": error_text(error)})


# --------------------------------------------------------------------------------------------
# 4. interop: torchcodec's own device buffers through DLPack and the CUDA Array Interface

INTEROP_FRAMES = [0, 5, 17, 42]


def own_buffer(settings: Settings, shape: tuple) -> Any:
    """Memory torchcodec allocates itself (a DeviceBuffer on the legacy default stream); numpy in a dry run."""
    if settings.dry_run:
        return np.zeros(shape, np.uint8)
    from torchcodec._cuda import _driver, _device_buffer
    context = _driver.load_driver().context(int(settings.device.partition(":")[2] or 0))
    return _device_buffer.DeviceBuffer.empty(context, shape, "uint8", 1)


def check_interop(settings: Settings) -> Iterator[Row]:
    """Frames decoded into torchcodec's own buffer, then each view ``buffer[i]`` taken by torch and
    cupy through DLPack (``data`` must be frame i's address: a consumer ignoring ``byte_offset``
    reads right), and the batch through ``__cuda_array_interface__`` v3 (cupy.asarray)."""
    path = settings.media / settings.race_clip
    if settings.out_of_time():
        yield out_of_time_row("interop", "DLPack frame views and the CUDA Array Interface")
        return
    try:
        reference = CpuReference(path)
        expected = reference.batch(INTEROP_FRAMES)
        buffer = own_buffer(settings, expected.shape)
        with bridge("numpy"):
            open_decoder(path, settings.device, settings).get_frames_at(INTEROP_FRAMES, out=buffer)
    except Exception as error:   # noqa: BLE001
        yield Row("interop", "decode into an own buffer", error_text(error), "ERROR", {"error": error_text(error)})
        return
    consumers: list[tuple[str, Callable[[Any], np.ndarray] | str]] = []
    for name in ("torch", "cupy"):
        if importlib.util.find_spec(name) is None:
            consumers.append((f"DLPack frame views -> {name}", f"{name} is not installed"))
            continue
        module = importlib.import_module(name)
        if name == "torch":
            consumers.append(("DLPack frame views -> torch", lambda view: module.from_dlpack(view).cpu().numpy()))
        elif settings.dry_run:
            consumers.append(("DLPack frame views -> cupy", "a dry run has no cupy device arrays"))
        else:
            consumers.append(("DLPack frame views -> cupy", lambda view: module.from_dlpack(view).get()))
    if settings.dry_run:
        consumers.append(("DLPack frame views -> numpy (cupy's stand-in)", lambda view: np.from_dlpack(view)))
    for subject, read in consumers:
        if isinstance(read, str):
            yield Row("interop", subject, read, "skipped")
            continue
        try:
            wrong = [i for i, frame in enumerate(expected) if not np.array_equal(read(buffer[i]), frame)]
        except Exception as error:   # noqa: BLE001
            yield Row("interop", subject, error_text(error), "ERROR", {"error": error_text(error)})
            continue
        yield Row("interop", subject, f"{len(expected) - len(wrong)} of {len(expected)} frames read right"
                  + (f"; wrong: views {wrong}" if wrong else ""), "FAIL" if wrong else "ok", {"wrong": wrong})
    subject = "CUDA Array Interface v3 -> cupy" if not settings.dry_run else "buffer protocol -> numpy (CAI's stand-in)"
    try:
        if settings.dry_run:
            seen = np.asarray(buffer)
        else:
            if importlib.util.find_spec("cupy") is None:
                yield Row("interop", subject, "cupy is not installed", "skipped")
                return
            import cupy
            interface = buffer.__cuda_array_interface__
            if interface["version"] != 3 or interface["stream"] is not None:
                raise ValueError(f"interface {interface}")
            seen = cupy.asarray(buffer).get()
        same = bool(np.array_equal(seen, expected))
        yield Row("interop", subject, "the batch reads right" if same else "the batch differs from the CPU's",
                  "ok" if same else "FAIL")
    except Exception as error:   # noqa: BLE001
        yield Row("interop", subject, error_text(error), "ERROR", {"error": error_text(error)})


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
    (torch: channels-last memory viewed NCHW; cupy: NCHW contiguous); numpy in the dry run."""
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
    if not inputs:
        raise RuntimeError("neither torch nor cupy is installed: no CUDA frames to encode")
    return inputs


def check_nvenc(settings: Settings) -> Iterator[Row]:
    """Encode the first frames of a 1080p clip from CUDA torch tensors and cupy arrays with NVENC
    (h264_nvenc, mp4's default on CUDA; hevc_nvenc in mkv), decode the file with the CPU decoder and
    require a PSNR of at least NVENC_MIN_PSNR dB against the input for every frame, the frame count,
    and the stream's colour tags (bt470bg, tv). An encoder that cannot open (no NVENC) FAILs. The dry
    run encodes numpy frames of the (small) race clip with libx264 on the CPU, through the same checks."""
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
                yield Row("nvenc", subject, error_text(error), "FAIL", {"error": error_text(error)})
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


# --------------------------------------------------------------------------------------------
# 5. bench: device vs CPU decoder on 1080p clips


@dataclasses.dataclass(frozen=True)
class Contender:
    label: str
    device: str
    threads: int                # num_ffmpeg_threads


def contenders(settings: Settings) -> list[Contender]:
    under_test = "cpu(dry run)" if settings.dry_run else f"nvdec({settings.cuda_backend})"
    return [Contender(under_test, settings.device, 0 if settings.dry_run else 1),
            Contender("cpu t0", "cpu", 0), Contender("cpu t1", "cpu", 1)]


def decode_sequentially(decoder: Any, count: int, lib: ArrayLib) -> None:
    for start in range(0, count, BATCH):
        decoder.get_frames_in_range(start, min(start + BATCH, count))
    lib.synchronize()


def sequential_fps(path: pathlib.Path, who: Contender, lib: ArrayLib, settings: Settings) -> float:
    """Frames per second decoding from the start in batches (the decoder opened beforehand)."""
    with bridge(lib.bridge):
        decoder = open_decoder(path, who.device, settings, num_ffmpeg_threads=who.threads)
        count = min(len(decoder), settings.bench_frames)
        start = time.perf_counter()
        decode_sequentially(decoder, count, lib)
        return count / (time.perf_counter() - start)


def random_frames_seconds(path: pathlib.Path, who: Contender, lib: ArrayLib, settings: Settings) -> float:
    """Median time to open a decoder and get 10 frames at random sorted indices (new draws each
    repetition, the same draws for every contender)."""
    times = []
    with bridge(lib.bridge):
        for repeat in range(settings.repeats):
            start = time.perf_counter()
            decoder = open_decoder(path, who.device, settings, num_ffmpeg_threads=who.threads)
            indices = round_indices(repeat, len(decoder), RANDOM_FRAMES)
            decoder.get_frames_at(indices)
            lib.synchronize()
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def parallel_fps(path: pathlib.Path, who: Contender, lib: ArrayLib, settings: Settings,
                 num_threads: int) -> float:
    """Total frames per second of ``num_threads`` decoders, one per thread and stream, each decoding
    the same frames from the start (decoders opened before the clock starts)."""
    def open_one() -> Any:
        return open_decoder(path, who.device, settings, num_ffmpeg_threads=who.threads)

    with bridge(lib.bridge):
        decoders = [open_one() for _ in range(num_threads)]
    count = min(len(decoders[0]), settings.bench_frames)
    ready = threading.Barrier(num_threads + 1)
    errors: list[BaseException] = []

    def work(decoder: Any) -> None:
        stream = lib.new_stream()    # each thread its own stream, as a data loader's workers would
        ready.wait()
        try:
            # the bridge is per thread (a ContextVar)
            with bridge(lib.bridge), lib.on_stream(stream):
                decode_sequentially(decoder, count, lib)
        except BaseException as error:   # noqa: BLE001  (re-raised in the calling thread)
            errors.append(error)

    workers = [threading.Thread(target=work, args=(d,)) for d in decoders]
    for worker in workers:
        worker.start()
    ready.wait()
    start = time.perf_counter()
    for worker in workers:
        worker.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return num_threads * count / elapsed


def bench_measure(subject: str, measure: Callable[[Contender], float], settings: Settings,
                  unit: str, higher_is_better: bool) -> Row:
    """One benchmark row: every contender measured, then the device under test's ratio to each CPU
    setting (> 1 means the device is faster)."""
    values: dict[str, Any] = {}
    errors = []
    if settings.out_of_time():
        return out_of_time_row("bench", subject)
    for who in contenders(settings):
        try:
            values[who.label] = measure(who)
        except Exception as error:   # noqa: BLE001
            errors.append(f"{who.label}: {error_text(error)}")
    under_test = contenders(settings)[0].label
    ratios = {}
    for label in ("cpu t0", "cpu t1"):
        if under_test in values and label in values and values[label] and values[under_test]:
            ratio = values[under_test] / values[label]
            ratios[f"speed-up vs {label}"] = ratio if higher_is_better else 1 / ratio
    fmt = (lambda v: f"{v:.0f} {unit}") if unit == "fps" else (lambda v: f"{1000 * v:.1f} ms")
    parts = [f"{label} {fmt(value)}" for label, value in values.items()]
    parts += [f"{name} {ratio:.2f}x" for name, ratio in ratios.items()]
    result = ", ".join(parts + errors)
    status = "ERROR" if errors else "info"
    return Row("bench", subject, result, status, {"unit": unit, **values, **ratios, "errors": errors})


def check_bench(settings: Settings) -> Iterator[Row]:
    try:
        lib = output_lib(settings)
    except Exception as error:   # noqa: BLE001
        yield Row("bench", "setup", error_text(error), "ERROR")
        return
    for clip in settings.bench_clips:
        path = settings.media / clip
        short = pathlib.Path(clip).stem.removeprefix("bench_")
        yield bench_measure(
            f"{short}: sequential ({settings.bench_frames} frames max)",
            lambda who, path=path: sequential_fps(path, who, lib, settings), settings, "fps", True)
        yield bench_measure(
            f"{short}: open + {RANDOM_FRAMES} random frames",
            lambda who, path=path: random_frames_seconds(path, who, lib, settings), settings, "s", False)
        for num_threads in settings.thread_counts:
            yield bench_measure(
                f"{short}: {num_threads} decoder(s) in {num_threads} thread(s)",
                lambda who, path=path, n=num_threads: parallel_fps(path, who, lib, settings, n),
                settings, "fps", True)


# --------------------------------------------------------------------------------------------
# Environment, table, main


def versions() -> dict[str, str]:
    torchcodec = torchcodec_module()
    found = {"python": sys.version.split()[0], "torchcodec": torchcodec.__version__,
             "ffmpeg": torchcodec.ffmpeg_version(), "numpy": np.__version__,
             "cuda_available": str(torchcodec.cuda_available())}
    for name in ("torch", "cupy"):
        if importlib.util.find_spec(name) is not None:
            try:
                found[name] = importlib.import_module(name).__version__
            except Exception as error:   # noqa: BLE001
                found[name] = f"broken ({error_text(error)})"
        else:
            found[name] = "not installed"
    return found


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: Sequence[Row]) -> str:
    lines = ["| check | subject | result | status |", "| --- | --- | --- | --- |"]
    lines += [f"| {r.check} | {cell(r.subject)} | {cell(r.result)} | {r.status} |" for r in rows]
    return "\n".join(lines)


def junit_rows(path: pathlib.Path) -> Iterator[Row]:
    """A pytest JUnit XML report as rows: one with the counts, one per failed or erroring test with
    the first line of its message (the full traceback is in the step's streamed output)."""
    import xml.etree.ElementTree as ElementTree
    try:
        root = ElementTree.parse(path).getroot()
    except (OSError, ElementTree.ParseError) as error:
        yield Row("pytest", path.name, f"no report: {error}", "ERROR")
        return
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    seconds = 0.0
    for suite in root.iter("testsuite"):
        for key in counts:
            counts[key] += int(suite.get(key, 0))
        seconds += float(suite.get("time", 0))
    passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
    bad = counts["failures"] + counts["errors"]
    files = sorted({case.get("classname", "").split(".")[-1] for case in root.iter("testcase")} - {""})
    yield Row("pytest", ", ".join(files) or path.name,
              f"{passed} passed, {counts['failures']} failed, {counts['errors']} errors, {counts['skipped']} skipped "
              f"in {seconds:.0f}s", "FAIL" if bad else ("ok" if passed else "skipped"), {**counts, "seconds": seconds})
    for case in root.iter("testcase"):
        for kind in ("failure", "error"):
            found = case.find(kind)
            if found is not None:
                message = (found.get("message") or found.text or "").strip().splitlines()
                yield Row("pytest", f"{case.get('classname', '').split('.')[-1]}::{case.get('name')}",
                          message[0][:300] if message else kind, "FAIL" if kind == "failure" else "ERROR")


TABLE_HEADER = "| step | check | subject | result | status |\n| --- | --- | --- | --- | --- |\n"


class RowLog:
    """Rows as they come: printed, and appended to OUT/gpu_check.md (one markdown table shared with
    tools/gpu_check.sh's own rows, the header written by whoever starts the file) and to
    OUT/gpu_check.jsonl (one JSON object per row), each flushed at once."""

    def __init__(self, out: pathlib.Path | None, step: str) -> None:
        self.out, self.step, self.rows = out, step, []
        if out is not None:
            out.mkdir(parents=True, exist_ok=True)
            table = out / "gpu_check.md"
            if not table.exists() or table.stat().st_size == 0:
                table.write_text(TABLE_HEADER)

    def add(self, row: Row) -> None:
        self.rows.append(row)
        print(f"  {row.check:7} {row.status:7} {row.subject}: {row.result}", flush=True)
        if self.out is None:
            return
        with open(self.out / "gpu_check.md", "a") as table:
            table.write(f"| {self.step} | {row.check} | {cell(row.subject)} | {cell(row.result)} | {row.status} |\n")
        with open(self.out / "gpu_check.jsonl", "a") as lines:
            lines.write(json.dumps({"step": self.step, **dataclasses.asdict(row)}) + "\n")


@dataclasses.dataclass
class Outputs:
    out: pathlib.Path | None
    step: str
    summary: pathlib.Path | None
    only: list[str]
    junit: pathlib.Path | None


def parse_args(argv: Sequence[str] | None) -> tuple[Settings, Outputs]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda", help="cuda, cuda:N, or cpu for a dry run (default cuda)")
    parser.add_argument("--quick", action="store_true",
                        help="30 frames per file, fewer repetitions; the 1080p corpus clips as benchmark, 1 vs 8 decoders")
    parser.add_argument("--out", type=pathlib.Path,
                        help="append the rows to OUT/gpu_check.md and OUT/gpu_check.jsonl as they come")
    parser.add_argument("--step", default="gpu_check", help="the step name in the table's first column")
    parser.add_argument("--summary", type=pathlib.Path,
                        help="write versions, timings and rows here at the end (default OUT/<step>.json)")
    parser.add_argument("--media", type=pathlib.Path, default=make_media.MEDIA_DIR,
                        help=f"the corpus folder (default {make_media.MEDIA_DIR})")
    parser.add_argument("--files", help="comma-separated corpus files to compare (default: the whole corpus)")
    parser.add_argument("--bench-clips", default=None,
                        help=f"comma-separated clips to benchmark (default {','.join(BENCH_CLIPS)}; "
                             f"with --quick {','.join(QUICK_BENCH_CLIPS)})")
    parser.add_argument("--race-clip", default=RACE_CLIP)
    parser.add_argument("--cuda-backend", default="nvdec", choices=("nvdec", "ffmpeg"))
    parser.add_argument("--bridge", default="auto", choices=("auto", "torch", "cupy", "numpy"),
                        help="the output library of the frame check and the benchmark (default: torch, else cupy, "
                             "else torchcodec's own buffers)")
    parser.add_argument("--only", default="probe,frames,blocks,nvenc,race,interop,bench", help="comma-separated checks to run")
    parser.add_argument("--deadline", type=float, default=None,
                        help="seconds after which rows not yet started are skipped (the table is still printed)")
    parser.add_argument("--junit", type=pathlib.Path,
                        help="instead of checking: put this pytest JUnit XML report into the table")
    args = parser.parse_args(argv)
    if args.device != "cpu" and not args.device.startswith("cuda"):
        parser.error(f"--device must be cuda, cuda:N or cpu, not {args.device!r}")
    files = args.files.split(",") if args.files else make_media.default_names()
    clips = args.bench_clips if args.bench_clips is not None else ",".join(
        QUICK_BENCH_CLIPS if args.quick else BENCH_CLIPS)
    settings = Settings(args.device, args.quick, args.media, tuple(files),
                        tuple(c for c in clips.split(",") if c), args.race_clip, args.cuda_backend, args.bridge,
                        time.monotonic() + (args.deadline if args.deadline is not None else float("inf")))
    summary = args.summary or (args.out / f"{args.step}.json" if args.out is not None else None)
    return settings, Outputs(args.out, args.step, summary, args.only.split(","), args.junit)


class Terminated(BaseException):
    """SIGTERM arrived (``timeout`` ran out): stop the checks but still print the table."""


def terminated(signum: int, frame: Any) -> None:
    raise Terminated()


CHECKS: dict[str, Callable[[Settings], Iterator[Row]]] = {
    "probe": check_probe, "frames": check_frames, "blocks": check_blocks, "race": check_races,
    "interop": check_interop, "nvenc": check_nvenc, "bench": check_bench}


def main(argv: Sequence[str] | None = None) -> int:
    settings, outputs = parse_args(argv)
    if outputs.junit is not None:
        outputs.only = ["junit"]
    unknown = set(outputs.only) - set(CHECKS) - {"junit"}
    if unknown:
        print(f"unknown checks {sorted(unknown)}; choose from {sorted(CHECKS)}", file=sys.stderr)
        return 2
    env = versions() if set(outputs.only) - {"probe", "junit"} else {"python": sys.version.split()[0]}
    print("gpu_check: device " + settings.device + ("" if not settings.dry_run else " (dry run)") + "; "
          + ", ".join(f"{k} {v}" for k, v in env.items()), flush=True)
    log = RowLog(outputs.out, outputs.step)
    timings = {}
    signal.signal(signal.SIGTERM, terminated)
    for name in outputs.only:
        start = time.perf_counter()
        try:
            for row in (CHECKS[name](settings) if name != "junit" else junit_rows(outputs.junit)):
                log.add(row)
        except Terminated:
            log.add(Row(name, "(rest)", "terminated (SIGTERM, e.g. timeout): rows left out", "ERROR"))
            break
        finally:
            timings[name] = time.perf_counter() - start
    rows = log.rows
    failed = [r for r in rows if r.failed]
    verdict = f"{len(failed)} of {len(rows)} rows failed" if failed else f"all {len(rows)} rows passed"
    print(f"\n## gpu_check summary (device {settings.device}{', quick' if settings.quick else ''}): {verdict}\n")
    print(markdown_table(rows), flush=True)
    if outputs.summary is not None:
        outputs.summary.parent.mkdir(parents=True, exist_ok=True)
        report = {"device": settings.device, "quick": settings.quick, "step": outputs.step, "versions": env,
                  "seconds": timings, "failed": len(failed), "verdict": verdict,
                  "rows": [dataclasses.asdict(r) for r in rows]}
        outputs.summary.write_text(json.dumps(report, indent=1) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
