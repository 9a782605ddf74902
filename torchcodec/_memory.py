"""The memory limit: a decoding request that would need more memory than this is refused before
anything is allocated.

The size of a request is known before it runs: ``check_request`` computes it (output frames:
count x height x width x 3 x bytes per value; audio: samples x channels x 4; decoding threads: a
stack and two frames each) and raises ``MemoryLimitError`` (a MemoryError and a RuntimeError)
naming both sizes when it is above the limit. A hostile file or an absurd argument
(``fps=1e9``, ``sample_rate=10**9``, ``num_ffmpeg_threads=10**6``) then fails at once, with a
message, instead of growing the process until the kernel kills it.

The limit, in this order: ``set_memory_limit(nbytes)``; else the environment variable
``TORCHCODEC_MEMORY_LIMIT`` (bytes, or with a K/M/G/T suffix in powers of 1024: ``"8G"``); else
the memory available when the request is made (Linux: ``MemAvailable`` of /proc/meminfo, lowered
to what the process's cgroup still allows; elsewhere ``os.sysconf``'s available pages). It is a
process-wide setting: memory belongs to the process, not to a thread.
"""
from __future__ import annotations

import numbers
import os
import re
import warnings
from typing import Optional

from torchcodec._core import _host_array
from torchcodec._core._error import MemoryLimitError

ENVIRONMENT_VARIABLE = "TORCHCODEC_MEMORY_LIMIT"
THREAD_STACK_BYTES = 8 << 20        # glibc's default thread stack (RLIMIT_STACK), reserved per thread
PER_FRAME_BYTES = 64                # a frame's pts, duration, target and planning entries
_SMALL_REQUEST = 64 << 20           # under the default limit, smaller requests skip reading /proc
_SUFFIXES = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
_SIZE = re.compile(r"(\d+)\s*([KMGT]?)(?:i?B)?", re.IGNORECASE)

_AVAILABLE = "the memory available now"   # the default limit's name in messages
_limit: Optional[int] = None        # set_memory_limit's value; None: the environment, or what is available
_warned_about: Optional[str] = None


def set_memory_limit(nbytes: Optional[int]) -> None:
    """Refuse decoding requests that need more than ``nbytes`` bytes (process-wide).

    ``None`` restores the default: ``TORCHCODEC_MEMORY_LIMIT`` when it is set, else the memory
    available at the time of each request. A refused request raises ``MemoryError`` (also a
    ``RuntimeError``) before allocating anything, naming the size it needed.
    """
    global _limit
    if nbytes is not None and (isinstance(nbytes, bool) or not isinstance(nbytes, numbers.Integral) or nbytes <= 0):
        raise ValueError(f"the memory limit must be a positive int (bytes) or None, got {nbytes!r}")
    _limit = None if nbytes is None else int(nbytes)


def get_memory_limit() -> Optional[int]:
    """The limit in bytes that applies now (see ``set_memory_limit``); None when none can be found
    (no limit set and no way to read the available memory on this system)."""
    limit, _ = _current_limit()
    return limit


def check_request(what: str, *, frames: int = 0, frame_size: tuple[int, int] = (0, 0), itemsize: int = 1,
                  samples: int = 0, channels: int = 0, threads: int = 0, other_bytes: int = 0) -> int:
    """The bytes a request needs, after refusing it when they are above the limit.

    ``frames`` RGB frames of ``frame_size`` (height, width) with ``itemsize`` bytes per value;
    ``samples`` float32 samples of ``channels`` channels; ``threads`` decoding threads, each with
    its stack and two frames of ``frame_size`` (8-bit 4:4:4) in flight; ``other_bytes`` of any other
    output (decoded images). ``what`` names the request in the message.
    """
    height, width = frame_size
    nbytes = (frames * (height * width * 3 * itemsize + PER_FRAME_BYTES) + samples * channels * 4
              + threads * (THREAD_STACK_BYTES + 2 * height * width * 3) + other_bytes)
    if _limit is None and nbytes < _SMALL_REQUEST and not os.environ.get(ENVIRONMENT_VARIABLE):
        return nbytes
    limit, source = _current_limit()
    if limit is not None and nbytes > limit and source == _AVAILABLE and _host_array.release_idle():
        limit, source = _current_limit()    # the pool's idle blocks were this process's to give back
    if limit is not None and nbytes > limit:
        raise MemoryLimitError(
            f"{what} needs {describe_bytes(nbytes)}, more than {source}: {describe_bytes(limit)}. Nothing was "
            f"allocated; ask for less, or raise the limit with torchcodec.set_memory_limit() or "
            f"{ENVIRONMENT_VARIABLE}.")
    return nbytes


def parse_size(text: str) -> Optional[int]:
    """Bytes written as a number with an optional K, M, G or T suffix (powers of 1024, an optional
    "B" or "iB" after it, any case): ``"8G"`` -> 8589934592; None when ``text`` is not such a size."""
    match = _SIZE.fullmatch(text.strip())
    return int(match.group(1)) << _SUFFIXES[match.group(2).upper()] if match else None


def describe_bytes(nbytes: int) -> str:
    """``1234567890`` -> ``"1.1 GiB (1234567890 bytes)"``."""
    size, unit = float(nbytes), "bytes"
    for name in ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if size < 1024:
            break
        size, unit = size / 1024, name
    shown = f"{int(size)} bytes" if unit == "bytes" else f"{size:.1f} {unit}"
    return shown if unit == "bytes" else f"{shown} ({nbytes} bytes)"


# ---- where the limit comes from ------------------------------------------------------------------

def _current_limit() -> tuple[Optional[int], str]:
    """(limit in bytes or None, what it is)."""
    if _limit is not None:
        return _limit, "the memory limit set by torchcodec.set_memory_limit()"
    from_environment = _environment_limit()
    if from_environment is not None:
        return from_environment, f"the memory limit set by {ENVIRONMENT_VARIABLE}"
    return _available_memory(), _AVAILABLE


def _environment_limit() -> Optional[int]:
    """TORCHCODEC_MEMORY_LIMIT in bytes; None when unset. An invalid value warns (once) and is ignored."""
    global _warned_about
    text = os.environ.get(ENVIRONMENT_VARIABLE, "").strip()
    if not text:
        return None
    nbytes = parse_size(text)
    if nbytes is not None and nbytes > 0:
        return nbytes
    if _warned_about != text:
        _warned_about = text
        warnings.warn(f"ignoring {ENVIRONMENT_VARIABLE}={text!r}: it must be a positive number of bytes, "
                      f"optionally with a K, M, G or T suffix (powers of 1024), e.g. '8G'", RuntimeWarning,
                      stacklevel=4)
    return None


def _available_memory() -> Optional[int]:
    """Bytes the process can still allocate: MemAvailable, capped by its cgroup (v2); None if unknown."""
    available = _meminfo_available()
    if available is None:
        try:
            available = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        except (ValueError, OSError, AttributeError):
            available = None
    room = _cgroup_room()
    if room is not None and (available is None or room < available):
        available = room
    return available


def _meminfo_available() -> Optional[int]:
    try:
        with open("/proc/meminfo", "rb") as f:
            for line in f:
                if line.startswith(b"MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _cgroup_room() -> Optional[int]:
    """memory.max - memory.current of this process's cgroup (v2), when it has a limit."""
    try:
        with open("/proc/self/cgroup") as f:
            path = next((line.strip()[3:] for line in f if line.startswith("0::")), None)
        if path is None:
            return None
        folder = os.path.join("/sys/fs/cgroup", path.lstrip("/"))
        with open(os.path.join(folder, "memory.max")) as f:
            maximum = f.read().strip()
        if maximum == "max":
            return None
        with open(os.path.join(folder, "memory.current")) as f:
            current = int(f.read())
        return max(0, int(maximum) - current)
    except (OSError, ValueError):
        return None


# ---- the output pool -----------------------------------------------------------------------------

POOL_VARIABLE = "TORCHCODEC_OUTPUT_POOL"
DEFAULT_POOL_BYTES = 512 << 20
_pool_configured = False                # set_output_pool has run (or the environment was read)


def set_output_pool(nbytes: int) -> None:
    """Keep up to ``nbytes`` bytes of freed CPU outputs for reuse (process-wide; 0 turns the pool
    off and frees what it holds).

    An output of 256 KiB or more (a frame of 480p RGB and up, a second of stereo audio, a batch of
    frames) is allocated by torchcodec instead of the bridge's ``empty``, and when its last array
    is freed its memory waits for the next output of about the same size (at most a quarter
    larger), which then skips the kernel's page faults and zeroing of fresh memory. Large outputs
    (32 MiB or more: 32 frames of 1080p RGB are 199 MB): at most four blocks wait, the oldest freed
    first, and an output that none of them fits frees them all before it is allocated, so that
    idle memory never adds to a peak. Medium ones (256 KiB to 32 MiB): at most 128 blocks and
    64 MiB (or ``nbytes``, if smaller) wait, the oldest freed first. The default, 512 MiB, also
    comes from ``TORCHCODEC_OUTPUT_POOL`` (bytes, or ``"1G"``-style; ``0`` turns it off). Smaller
    outputs are the bridge's (``numpy.empty``, ``torch.empty``), whose allocator recycles them.
    Under the default memory limit (the memory available now), a request that would be refused
    first frees the idle blocks.
    """
    global _pool_configured
    if isinstance(nbytes, bool) or not isinstance(nbytes, numbers.Integral) or nbytes < 0:
        raise ValueError(f"the output pool's size must be an int >= 0 (bytes), got {nbytes!r}")
    _host_array.set_output_pool(int(nbytes))
    _pool_configured = True


def get_output_pool() -> int:
    """The bytes of freed outputs the pool may keep (see ``set_output_pool``; 0: off)."""
    if not _pool_configured:
        set_output_pool(_environment_pool())
    return _host_array.output_pool_limit()


def pooled_array(shape: tuple[int, ...], dtype: str):
    """A HostArray for a CPU output of ``shape`` and ``dtype`` from the pool, or None (too small, or off)."""
    if not _pool_configured:
        set_output_pool(_environment_pool())
    return _host_array.pooled_array(shape, dtype)


def _environment_pool() -> int:
    text = os.environ.get(POOL_VARIABLE, "").strip()
    if not text:
        return DEFAULT_POOL_BYTES
    nbytes = parse_size(text)
    if nbytes is not None:
        return nbytes
    warnings.warn(f"ignoring {POOL_VARIABLE}={text!r}: it must be a number of bytes, optionally with a K, M, G or "
                  f"T suffix (powers of 1024), e.g. '1G', or 0 to turn the pool off", RuntimeWarning, stacklevel=4)
    return DEFAULT_POOL_BYTES
