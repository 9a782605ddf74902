"""Sizes in bytes as people write and read them: ``parse_size("8G")`` and ``describe_bytes(n)``
(the memory limit, the output pool and the index cache take sizes from the environment)."""
from __future__ import annotations

import re
from typing import Optional

_SUFFIXES = {"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
_SIZE = re.compile(r"(\d+)\s*([KMGT]?)(?:i?B)?", re.IGNORECASE)


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
