"""The index cache: what opening a file taught the decoders, kept on disk, so that opening the same
file again costs a fraction of the first time.

Opening a video in exact mode does two expensive things before any frame is asked for: FFmpeg's
probe (``avformat_find_stream_info``, which decodes the first frames to learn the pixel format and
the timings: about 10 ms of a 1080p H.264 mp4) and the scan that builds the exact frame index (a
read of every packet: milliseconds per minute of video). Both depend on the file's bytes only, so
the decoders keep them here, one entry per file, and a later open of an unchanged file reads them
back instead: the scan is skipped for every format, the probe for the formats whose header alone
describes every stream and packet (mp4/mov and Matroska/WebM; see
``torchcodec._core._demuxer.PROBE_SKIPPING_FORMATS``).
What is read back is exactly what the first open computed: metadata and frames are the same.

An entry is trusted only for the same file: a path's entry is keyed by its real path, size,
modification time (ns), inode and a hash of its first and last 64 KiB; an in-memory source's by a
SHA-256 of all its bytes (bytes, bytearray, memoryview, 1-D uint8 arrays). File objects and tensors
are not cached. The FFmpeg libraries' versions are part of every entry: another FFmpeg re-probes.

Settings (process-wide; ``set_index_cache`` wins over the environment):
  - ``TORCHCODEC_INDEX_CACHE``: ``0``/``off``/``false``/``no`` turns the cache off; a path puts it
    in that directory (default: ``$XDG_CACHE_HOME/torchcodec/index``, ``~/.cache/...`` without it).
  - ``TORCHCODEC_INDEX_CACHE_SIZE``: its bound (default 256M; K/M/G/T suffixes, powers of 1024).
    When the entries grow past it, the least recently used are removed down to three quarters.

Several processes may share one directory: an entry is written to a temporary file and renamed into
place (readers see a whole entry or none), every entry ends with a digest of its contents (a torn
or damaged entry is ignored and removed), and a failure to read or write the cache (a read-only or
full disk) never fails a decoder: it only costs the time the cache would have saved.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import itertools
import json
import os
import stat
import struct
import threading
import time
from typing import Any, Optional

from torchcodec._core._frame_index import FrameIndex
from torchcodec._core._info import ffmpeg_versions
from torchcodec._logging import _LOGGER
from torchcodec._sizes import describe_bytes, parse_size

ENABLE_VARIABLE = "TORCHCODEC_INDEX_CACHE"
SIZE_VARIABLE = "TORCHCODEC_INDEX_CACHE_SIZE"
DEFAULT_MAX_BYTES = 256 << 20
EDGE_BYTES = 64 << 10             # a path's identity hashes this much of its start and of its end
ENTRY_SUFFIX = ".tcix"
PARTIAL_SUFFIX = ".part"
PRUNE_EVERY = 64                  # writes of a process between two checks of the directory's size
STALE_PARTIAL_SECONDS = 3600      # a temporary file this old was left by a process that died
_MAGIC = b"TCIX"
_FORMAT = 1                       # bump when the entry layout changes: older entries are then misses
_PREFIX = struct.Struct("<4sBI")  # magic, format, length of the JSON header
_DIGEST_BYTES = 32
_OFF_WORDS = {"0", "off", "false", "no"}
_ON_WORDS = {"1", "on", "true", "yes"}


@dataclasses.dataclass(frozen=True)
class IndexCacheSettings:
    """Where the index cache is and how large it may grow (``get_index_cache()``)."""
    enabled: bool
    directory: str
    max_bytes: int


_settings: Optional[IndexCacheSettings] = None    # set_index_cache's; None: the environment's
_writes = itertools.count()       # names this process's temporary files
_prune_turns = itertools.count()  # a process checks the directory's size at its first write, then every PRUNE_EVERY


def set_index_cache(enabled: bool = True, *, directory: Optional[os.PathLike | str] = None,
                    max_bytes: Optional[int] = None) -> None:
    """Turn the index cache on or off, or move or bound it (process-wide; see the module's
    documentation for what it keeps). ``directory`` and ``max_bytes`` default to the environment's
    settings, else ``~/.cache/torchcodec/index`` and 256 MiB. The directory is created when the first
    entry is written. ``set_index_cache(False)`` turns it off; existing entries stay (see
    ``clear_index_cache``)."""
    global _settings
    if not isinstance(enabled, bool):
        raise TypeError(f"enabled must be True or False, got {enabled!r}")
    if max_bytes is not None and (isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes <= 0):
        raise ValueError(f"max_bytes must be a positive int (bytes) or None, got {max_bytes!r}")
    default = _environment_settings()
    _settings = IndexCacheSettings(enabled, os.path.abspath(os.fspath(directory)) if directory is not None
                                   else default.directory, max_bytes if max_bytes is not None else default.max_bytes)


def get_index_cache() -> IndexCacheSettings:
    """The index cache's settings in force now."""
    return _settings if _settings is not None else _environment_settings()


def clear_index_cache() -> int:
    """Remove every entry of the index cache's directory; returns how many were removed."""
    removed = 0
    for entry in _entries(get_index_cache().directory):
        removed += _remove(entry.path)
    return removed


def lookup(source: Any) -> Optional[CachedOpen]:
    """The cache's entry for ``source`` (possibly empty: nothing known yet), or None when the cache
    is off or ``source`` cannot be identified (a file object, a tensor, a URL, not a regular file)."""
    settings = get_index_cache()
    if not settings.enabled:
        return None
    try:
        identity = _identity(source)
    except OSError as error:
        _LOGGER.debug("index cache: cannot identify %r: %s", source, error)
        return None
    if identity is None:
        return None
    key = hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:40]
    cached = CachedOpen(os.path.join(settings.directory, key + ENTRY_SUFFIX), identity)
    cached.load()
    return cached


class CachedOpen:
    """One source's entry: what earlier opens left (``probe``, ``index``), and ``remember``, which
    stores what this open adds."""

    def __init__(self, path: str, identity: list) -> None:
        self.path = path
        self.identity = identity
        self.probe: Optional[list] = None       # Demuxer._probe_state() of the first open
        self.indices: dict[int, bytes] = {}     # stream index -> FrameIndex._to_bytes()

    def index(self, stream_index: int) -> Optional[FrameIndex]:
        """The stored frame index of stream ``stream_index``, or None."""
        data = self.indices.get(stream_index)
        if data is None:
            return None
        try:
            return FrameIndex._from_bytes(data)
        except ValueError as error:
            _LOGGER.debug("index cache: ignoring the damaged index of stream %d in %s: %s", stream_index, self.path, error)
            return None

    def remember(self, demuxer: Any, indices: dict[int, FrameIndex]) -> None:
        """Store what this open learnt: the probe state of a demuxer that ran the probe, and frame
        indices, when the entry lacks them. Never raises: a cache that cannot be written is only slower."""
        probe = None if demuxer.probe_skipped else demuxer._probe_state()
        new_indices = {stream: index for stream, index in indices.items() if stream not in self.indices}
        if (probe is None or probe == self.probe) and not new_indices:
            return
        if probe is not None:
            self.probe = probe
        self.indices.update({stream: index._to_bytes() for stream, index in new_indices.items()})
        try:
            self._write()
        except OSError as error:
            _LOGGER.debug("index cache: cannot write %s: %s", self.path, error)

    # ---- the entry file -------------------------------------------------------------------------

    def load(self) -> None:
        """Read the entry, if there is a valid one for this source (else leave this one empty)."""
        try:
            with open(self.path, "rb") as file:
                data = file.read()
        except OSError:
            return
        header = _parse(data)
        if (header is None or header.get("identity") != self.identity
                or header.get("ffmpeg") != _ffmpeg_identity()):
            _LOGGER.debug("index cache: ignoring %s (damaged, or from another file or FFmpeg)", self.path)
            if header is None:
                _remove(self.path)
            return
        try:
            sections = {int(stream): data[start:start + length] for stream, (start, length) in header["indices"].items()}
        except (TypeError, ValueError):
            return
        self.probe, self.indices = header.get("probe"), sections
        try:
            os.utime(self.path)           # recently used: the last to be pruned
        except OSError:
            pass

    def _write(self) -> None:
        settings = get_index_cache()
        directory = os.path.dirname(self.path)
        header = {"identity": self.identity, "ffmpeg": _ffmpeg_identity(), "probe": self.probe, "indices": {}}
        sections = []
        offset = 0
        for stream, data in sorted(self.indices.items()):
            header["indices"][str(stream)] = (offset, len(data))
            sections.append(data)
            offset += len(data)
        text = json.dumps(header, separators=(",", ":")).encode()
        body = b"".join([_PREFIX.pack(_MAGIC, _FORMAT, len(text)), text, *sections])
        # Section offsets were counted from the end of the header; the reader adds it back.
        os.makedirs(directory, exist_ok=True)
        partial = os.path.join(directory, f"{os.getpid()}-{threading.get_ident()}-{next(_writes)}{PARTIAL_SUFFIX}")
        try:
            with open(partial, "wb") as file:
                file.write(body + hashlib.sha256(body).digest())
            os.replace(partial, self.path)
        except BaseException:
            _remove(partial)
            raise
        if next(_prune_turns) % PRUNE_EVERY == 0:
            prune(directory, settings.max_bytes)


def prune(directory: str, max_bytes: int) -> None:
    """Remove the least recently used entries of ``directory`` while they total more than
    ``max_bytes`` (down to three quarters of it), and temporary files that dead writers left."""
    now = time.time()
    entries = []
    for entry in _entries(directory, partial=True):
        try:
            info = entry.stat()
        except OSError:
            continue
        if entry.name.endswith(PARTIAL_SUFFIX):
            if now - info.st_mtime > STALE_PARTIAL_SECONDS:
                _remove(entry.path)
            continue
        entries.append((info.st_mtime, info.st_size, entry.path))
    total = sum(size for _, size, _ in entries)
    if total <= max_bytes:
        return
    _LOGGER.debug("index cache: %s holds %s, over its bound of %s: pruning", directory, describe_bytes(total),
                  describe_bytes(max_bytes))
    for _, size, path in sorted(entries):
        if total <= max_bytes * 3 // 4:
            break
        if _remove(path):
            total -= size


# ---- identities ----------------------------------------------------------------------------------

def _identity(source: Any) -> Optional[list]:
    """What makes ``source`` this source: for a local path, its real path, size, mtime, inode and a
    hash of its edges; for in-memory bytes, their size and SHA-256. None for anything else."""
    if isinstance(source, os.PathLike):
        source = os.fspath(source)
    if isinstance(source, str):
        path = source[5:] if source.startswith("file:") else source
        if "://" in path:
            return None
        real = os.path.realpath(path)
        with open(real, "rb") as file:
            info = os.fstat(file.fileno())
            if not stat.S_ISREG(info.st_mode):
                return None
            edges = hashlib.sha256(file.read(EDGE_BYTES))
            if info.st_size > EDGE_BYTES:
                file.seek(max(info.st_size - EDGE_BYTES, EDGE_BYTES))
                edges.update(file.read(EDGE_BYTES))
        return ["path", real, info.st_size, info.st_mtime_ns, info.st_ino, info.st_dev, edges.hexdigest()]
    if isinstance(source, (bytes, bytearray, memoryview)) or (hasattr(source, "__array_interface__")
                                                              and hasattr(source, "tobytes")):
        try:
            view = memoryview(source).cast("B")
        except (TypeError, ValueError):
            return None
        return ["bytes", view.nbytes, hashlib.sha256(view).hexdigest()]
    return None


@functools.lru_cache(maxsize=None)
def _ffmpeg_identity() -> str:
    versions = ffmpeg_versions()
    return f"{versions['libavformat']}/{versions['libavcodec']}/{versions['libavutil']}"


# ---- the directory -------------------------------------------------------------------------------

def _environment_settings() -> IndexCacheSettings:
    text = os.environ.get(ENABLE_VARIABLE, "").strip()
    enabled = text.lower() not in _OFF_WORDS
    if text and text.lower() not in _OFF_WORDS | _ON_WORDS:
        directory = os.path.abspath(os.path.expanduser(text))
    else:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        directory = os.path.join(base, "torchcodec", "index")
    max_bytes = parse_size(os.environ.get(SIZE_VARIABLE, "")) or DEFAULT_MAX_BYTES
    return IndexCacheSettings(enabled, directory, max_bytes)


def _entries(directory: str, partial: bool = False) -> list[os.DirEntry]:
    suffixes = (ENTRY_SUFFIX, PARTIAL_SUFFIX) if partial else (ENTRY_SUFFIX,)
    try:
        with os.scandir(directory) as found:
            return [entry for entry in found if entry.name.endswith(suffixes) and entry.is_file(follow_symlinks=False)]
    except OSError:
        return []


def _parse(data: bytes) -> Optional[dict]:
    """An entry's JSON header, with section offsets made absolute; None for anything damaged."""
    if len(data) < _PREFIX.size + _DIGEST_BYTES:
        return None
    body, digest = data[:-_DIGEST_BYTES], data[-_DIGEST_BYTES:]
    magic, version, length = _PREFIX.unpack_from(body)
    if magic != _MAGIC or version != _FORMAT or _PREFIX.size + length > len(body) or hashlib.sha256(body).digest() != digest:
        return None
    try:
        header = json.loads(body[_PREFIX.size:_PREFIX.size + length])
        if not isinstance(header, dict):
            return None
        start = _PREFIX.size + length
        header["indices"] = {stream: (start + int(offset), int(size)) for stream, (offset, size) in header["indices"].items()}
        if any(offset + size > len(body) or size < 0 for offset, size in header["indices"].values()):
            return None
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    return header


def _remove(path: str) -> bool:
    try:
        os.remove(path)
        return True
    except OSError:
        return False
