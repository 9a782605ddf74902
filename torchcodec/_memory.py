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
import warnings
from typing import Optional

from torchcodec._outputs._pool import release_idle
from torchcodec._sizes import describe_bytes, parse_size

ENVIRONMENT_VARIABLE = "TORCHCODEC_MEMORY_LIMIT"
THREAD_STACK_BYTES = 8 << 20        # glibc's default thread stack (RLIMIT_STACK), reserved per thread
PER_FRAME_BYTES = 64                # a frame's pts, duration, target and planning entries
_SMALL_REQUEST = 64 << 20           # under the default limit, smaller requests skip reading /proc

_AVAILABLE = "the memory available now"   # the default limit's name in messages
_limit: Optional[int] = None        # set_memory_limit's value; None: the environment, or what is available
_warned_about: Optional[str] = None


class MemoryLimitError(MemoryError, RuntimeError):
    """A request that would need more memory than the limit allows (see torchcodec.set_memory_limit),
    refused before anything is allocated. Also a RuntimeError, which torch raises when an allocation
    fails."""


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
    if limit is not None and nbytes > limit and source == _AVAILABLE and release_idle():
        limit, source = _current_limit()    # the pool's idle blocks were this process's to give back
    if limit is not None and nbytes > limit:
        raise MemoryLimitError(
            f"{what} needs {describe_bytes(nbytes)}, more than {source}: {describe_bytes(limit)}. Nothing was "
            f"allocated; ask for less, or raise the limit with torchcodec.set_memory_limit() or "
            f"{ENVIRONMENT_VARIABLE}.")
    return nbytes


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
