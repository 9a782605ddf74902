"""What a benchmark run used besides time: the NVDEC engines' utilisation (NVML, through ctypes; no
pynvml needed) sampled while it ran, and the host CPU it took. Both go beside frames/s in the
benchmark's rows (tools/gpu/speed.py), because frames/s alone cannot say what limits a run: engines
near 100% are saturated; engines well below it with the host's cores busy mean the host is.

NVML reports one decoder utilisation per GPU: the share of its sampling period in which the NVDEC
engines were busy, averaged over all of them (seven on an H200); it has no per-engine figure.
``nvidia-smi dmon -s u`` prints the same number ("dec") once a second."""
from __future__ import annotations

import ctypes
import resource
import threading
import time
from typing import Any, Optional

NVML_SUCCESS = 0
NVML_DEC_UTILIZATION_SAMPLES = 4        # nvmlSamplingType_t
NVML_VALUE_TYPE_UNSIGNED_INT = 1        # nvmlValueType_t


class NvmlSample(ctypes.Structure):     # nvmlSample_t: a CPU timestamp (us) and an 8-byte value union
    _fields_ = [("timeStamp", ctypes.c_ulonglong), ("value", ctypes.c_ulonglong)]


class Nvml:
    """NVML's view of the CUDA device ``index`` (found by its PCI bus id, which CUDA and NVML share:
    their device orders may differ). ``decoder_samples(since)`` gives the decoder utilisation
    samples (timestamp in microseconds, percent) NVML took after ``since``. Raises OSError or
    RuntimeError where NVML or the device cannot be reached."""

    def __init__(self, index: int) -> None:
        self.lib = ctypes.CDLL("libnvidia-ml.so.1")
        if self.lib.nvmlInit_v2() != NVML_SUCCESS:
            raise RuntimeError("nvmlInit_v2 failed")
        cuda = ctypes.CDLL("libcuda.so.1")
        device, bus_id = ctypes.c_int(), ctypes.create_string_buffer(64)
        if cuda.cuInit(0) or cuda.cuDeviceGet(ctypes.byref(device), index) or \
                cuda.cuDeviceGetPCIBusId(bus_id, 64, device):
            raise RuntimeError(f"cannot ask libcuda.so.1 for cuda:{index}'s PCI bus id")
        self.handle = ctypes.c_void_p()
        ret = self.lib.nvmlDeviceGetHandleByPciBusId_v2(bus_id, ctypes.byref(self.handle))
        if ret != NVML_SUCCESS:
            raise RuntimeError(f"NVML does not know the GPU at {bus_id.value.decode()} (nvmlReturn_t {ret})")

    def decoder_utilisation(self) -> float:
        """NVML's current decoder utilisation (percent, over its own sampling period)."""
        value, period = ctypes.c_uint(), ctypes.c_uint()
        ret = self.lib.nvmlDeviceGetDecoderUtilization(self.handle, ctypes.byref(value), ctypes.byref(period))
        if ret != NVML_SUCCESS:
            raise RuntimeError(f"nvmlDeviceGetDecoderUtilization failed (nvmlReturn_t {ret})")
        return float(value.value)

    def decoder_samples(self, since_us: int) -> list[tuple[int, float]]:
        """NVML's decoder utilisation samples taken after ``since_us`` (its CPU timestamps, us)."""
        kind, count = ctypes.c_int(), ctypes.c_uint(0)
        ret = self.lib.nvmlDeviceGetSamples(self.handle, NVML_DEC_UTILIZATION_SAMPLES, ctypes.c_ulonglong(since_us),
                                            ctypes.byref(kind), ctypes.byref(count), None)
        if ret != NVML_SUCCESS or count.value == 0:
            return []
        samples = (NvmlSample * count.value)()
        ret = self.lib.nvmlDeviceGetSamples(self.handle, NVML_DEC_UTILIZATION_SAMPLES, ctypes.c_ulonglong(since_us),
                                            ctypes.byref(kind), ctypes.byref(count), samples)
        if ret != NVML_SUCCESS:
            return []
        values = [(s.timeStamp, float(s.value & 0xFFFFFFFF if kind.value == NVML_VALUE_TYPE_UNSIGNED_INT else s.value))
                  for s in samples[:count.value]]
        return [(stamp, value) for stamp, value in values if stamp > since_us]


class Usage:
    """Measures one timed region: ``with Usage(nvml) as usage: ...``, then ``usage.numbers()``: the
    NVDEC utilisation (mean and max of NVML's samples within the region, else of values polled
    every 50 ms), and the host CPU seconds of this process (user + system, all its threads) per
    wall second: how many cores it kept busy. ``nvml`` None (no GPU, no NVML): only the CPU."""

    def __init__(self, nvml: Optional[Nvml], child_cpu_seconds: float = 0.0) -> None:
        self.nvml, self.polled, self.error = nvml, [], ""
        self.child_cpu_seconds = child_cpu_seconds      # CPU time other processes report for the region
        self._stop = threading.Event()

    def __enter__(self) -> "Usage":
        self.start_us = int(time.time() * 1e6)
        self.cpu0, self.wall0 = _cpu_seconds(), time.perf_counter()
        if self.nvml is not None:
            self._poller = threading.Thread(target=self._poll, daemon=True)
            self._poller.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.wall = time.perf_counter() - self.wall0
        self.cpu = _cpu_seconds() - self.cpu0
        self.end_us = int(time.time() * 1e6)
        if self.nvml is not None:
            self._stop.set()
            self._poller.join()

    def _poll(self) -> None:
        while not self._stop.wait(0.05):
            try:
                self.polled.append(self.nvml.decoder_utilisation())
            except Exception as error:   # noqa: BLE001  (reported in the row, never raised)
                self.error = str(error)
                return

    def numbers(self) -> dict[str, Any]:
        found: dict[str, Any] = {"host_cores": (self.cpu + self.child_cpu_seconds) / self.wall if self.wall else 0.0}
        if self.nvml is None:
            return found
        samples = []
        try:
            samples = [value for stamp, value in self.nvml.decoder_samples(self.start_us) if stamp <= self.end_us]
        except Exception as error:   # noqa: BLE001
            self.error = str(error)
        values, source = (samples, "samples") if samples else (self.polled, "polled")
        if values:
            found.update(nvdec_mean=sum(values) / len(values), nvdec_max=max(values), nvdec_source=source,
                         nvdec_count=len(values))
        elif self.error:
            found["nvdec_error"] = self.error
        return found


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def describe(numbers: dict[str, Any]) -> str:
    """'NVDEC 87% (max 99%), host 3.1 cores' (or what is known of it)."""
    parts = []
    if "nvdec_mean" in numbers:
        parts.append(f"NVDEC {numbers['nvdec_mean']:.0f}% (max {numbers['nvdec_max']:.0f}%)")
    elif "nvdec_error" in numbers:
        parts.append(f"NVDEC n/a ({numbers['nvdec_error']})")
    parts.append(f"host {numbers['host_cores']:.1f} cores")
    return ", ".join(parts)
