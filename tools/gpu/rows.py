"""What every step of the GPU check shares: its settings, the rows of its table, the array libraries
under test (torch, cupy, numpy, torchcodec's own buffers) and how a decoder is opened."""
from __future__ import annotations

import contextlib
import ctypes
import dataclasses
import importlib
import importlib.util
import pathlib
import time
import traceback
from typing import Any

from gpu import gpu_tolerances
import numpy as np


def torchcodec_module() -> Any:
    """torchcodec, imported on first use: the probe runs before (and without) a build."""
    return importlib.import_module("torchcodec")


def video_decoder(*args: Any, **kwargs: Any) -> Any:
    return importlib.import_module("torchcodec.decoders").VideoDecoder(*args, **kwargs)


def bridge(name: str) -> contextlib.AbstractContextManager:
    return torchcodec_module().bridge(name)


BENCH_CLIPS = ("bench_1080p_h264.mp4", "bench_1080p_hevc.mp4")    # 10 s of 1080p each, whole
DRY_RUN_BENCH_CLIPS = gpu_tolerances.CODED_SIZE_CLIPS   # 30 frames of 1080p each: the CPU is slow
RACE_CLIP = "h264_bframes.mp4"
BATCH = 32                      # frames per get_frames_in_range call when benchmarking
RANDOM_FRAMES = 10
DECODER_COUNTS = (1, 2, 4, 8, 16)
DRY_RUN_DECODER_COUNTS = (1, 2)


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
    def repeats(self) -> int:
        return 2 if self.quick else 5

    @property
    def decoder_counts(self) -> tuple[int, ...]:
        """How many decoders decode at once in the benchmark, in threads and in processes."""
        return DRY_RUN_DECODER_COUNTS if self.dry_run else DECODER_COUNTS

    @property
    def race_rounds(self) -> int:
        return 4 if self.quick else 24


@dataclasses.dataclass
class Row:
    """One line of the summary table; ``numbers`` go to the JSON file."""
    check: str
    subject: str
    result: str
    status: str                 # "ok", "FAIL", "ERROR", "skipped", "info" (benchmarks), or "limit: <what>":
                                # a hardware limit of this GPU, named (limit()), neither a pass nor a FAIL
    numbers: dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.status in ("FAIL", "ERROR")


def limit(what: str) -> str:
    """The status of a row that meets a hardware limit of this GPU: "limit: no NVENC engine"."""
    return f"limit: {what}"


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
        self.index = index = int(device.partition(":")[2] or 0)
        if self.cu.cuDeviceGet(ctypes.byref(self.device), index) or \
                self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(self.context), self.device):
            raise RuntimeError(f"cannot reach cuda:{index} through libcuda.so.1")

    def from_numpy(self, array: np.ndarray) -> Any:
        """A DeviceBuffer of torchcodec's holding ``array`` (C-contiguous uint8), copied with
        cuMemcpyHtoD: device input where neither torch nor cupy is installed."""
        from torchcodec._cuda import _device_buffer, _driver
        array = np.ascontiguousarray(array, dtype=np.uint8)
        context = _driver.load_driver().context(self.index)
        buffer = _device_buffer.DeviceBuffer.empty(context, array.shape, "uint8", 1)
        self.cu.cuCtxPushCurrent_v2(self.context)
        try:
            ret = self.cu.cuMemcpyHtoD_v2(ctypes.c_uint64(buffer.__cuda_array_interface__["data"][0]),
                                          array.ctypes.data_as(ctypes.c_void_p), ctypes.c_size_t(array.nbytes))
        finally:
            self.cu.cuCtxPopCurrent_v2(ctypes.byref(ctypes.c_void_p()))
        if ret != 0:
            raise RuntimeError(f"cuMemcpyHtoD failed with CUresult {ret}")
        return buffer

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
