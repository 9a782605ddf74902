"""torchcodec's log level, and FFmpeg's log lines routed to Python's ``logging``.

One level governs both what torchcodec logs (the ``"torchcodec"`` logger, e.g. "VideoDecoder
created" at DEBUG) and what FFmpeg logs (the ``"torchcodec.ffmpeg"`` logger, a child of it):

    set_log_level("OFF")        # the default: nothing (as TorchCodec)
    set_log_level("ALL")        # everything down to DEBUG (as TorchCodec)
    set_log_level("warning")    # Python's level names in any case, or their numbers
    set_log_level(logging.INFO)

Accepted: "OFF", "ALL", Python's names (CRITICAL, ERROR, WARNING, INFO, DEBUG, also WARN and
FATAL) and FFmpeg's (QUIET = OFF, PANIC = FATAL = CRITICAL, VERBOSE = 15, TRACE = 5), in any
case, or a level number (int >= 0). The environment variable ``TORCHCODEC_FFMPEG_LOG_LEVEL``
gives the level at import, in the same words; an invalid value warns and leaves "OFF".

FFmpeg's lines keep its own text (``[h264 @ 0x...] error while decoding MB 3 2``) and come at the
Python level of their FFmpeg level (PANIC and FATAL: CRITICAL, ERROR, WARNING, INFO, VERBOSE: 15,
DEBUG, TRACE: 5). They never reach the C stderr. FFmpeg logs from threads that may not wait for
the GIL, so its lines are queued in C (``torchcodec/_core/_log.pyx`` says why) and handed to
``logging`` by the Python code of each public call when it returns (or raises), and at exit:
a line logged by FFmpeg's threads after a call returned comes with the next call. When more than
the queue holds are logged within one call, the rest are counted and reported in one record.

Records are printed on stderr by a handler of torchcodec's own only while nobody else would
handle them (no handler on the root logger or on the torchcodec loggers): configure ``logging``
and they go where it says, once.
"""
from __future__ import annotations

import atexit
import functools
import logging
import os
import sys
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, Union

from torchcodec._core import _log

_LOGGER = logging.getLogger("torchcodec")
_FFMPEG_LOGGER = logging.getLogger("torchcodec.ffmpeg")

_OFF = logging.CRITICAL + 1
_VERBOSE = 15                 # between INFO and DEBUG, as FFmpeg's VERBOSE is between its INFO and DEBUG
_TRACE = 5
# Names accepted, in upper case -> (the name get_log_level() reports, the Python level).
_NAMES = {
    "OFF": ("OFF", _OFF), "QUIET": ("OFF", _OFF), "ALL": ("ALL", logging.DEBUG),
    "CRITICAL": ("CRITICAL", logging.CRITICAL), "FATAL": ("CRITICAL", logging.CRITICAL),
    "PANIC": ("CRITICAL", logging.CRITICAL), "ERROR": ("ERROR", logging.ERROR),
    "WARNING": ("WARNING", logging.WARNING), "WARN": ("WARNING", logging.WARNING),
    "INFO": ("INFO", logging.INFO), "VERBOSE": ("VERBOSE", _VERBOSE), "DEBUG": ("DEBUG", logging.DEBUG),
    "TRACE": ("TRACE", _TRACE),
}
_NUMBER_NAMES = {level: name for name, (canonical, level) in _NAMES.items() if name == canonical and name != "ALL"}
# FFmpeg's levels, most severe first, with the Python level of their lines.
_FFMPEG_TO_PYTHON = [
    (_log.FFMPEG_LEVELS["PANIC"], logging.CRITICAL), (_log.FFMPEG_LEVELS["FATAL"], logging.CRITICAL),
    (_log.FFMPEG_LEVELS["ERROR"], logging.ERROR), (_log.FFMPEG_LEVELS["WARNING"], logging.WARNING),
    (_log.FFMPEG_LEVELS["INFO"], logging.INFO), (_log.FFMPEG_LEVELS["VERBOSE"], _VERBOSE),
    (_log.FFMPEG_LEVELS["DEBUG"], logging.DEBUG), (_log.FFMPEG_LEVELS["TRACE"], _TRACE),
]

_FFMPEG_NAMES = {value: name.lower() for name, value in _log.FFMPEG_LEVELS.items()}

_current: Union[str, int] = "OFF"


def _parse(level: Any) -> tuple[Union[str, int], int]:
    """(what get_log_level() reports, the Python level) of a level name or number."""
    if isinstance(level, str):
        found = _NAMES.get(level.strip().upper())
        if found is not None:
            return found
    elif isinstance(level, int) and not isinstance(level, bool) and level >= 0:
        return _NUMBER_NAMES.get(level, level), level
    names = ", ".join(name for name, (canonical, _) in _NAMES.items() if name == canonical)
    raise ValueError(f"Invalid log level: {level!r}. Supported levels: {names} (any case; also WARN, FATAL and "
                     f"FFmpeg's QUIET and PANIC), or a logging level number (an int >= 0)")


def _python_level(ffmpeg_level: int) -> int:
    """The Python level of a line logged at ``ffmpeg_level``."""
    for threshold, python_level in _FFMPEG_TO_PYTHON:
        if ffmpeg_level <= threshold:
            return python_level
    return _TRACE


def _ffmpeg_threshold(python_level: int) -> int:
    """FFmpeg's threshold for a Python level: its most verbose level whose lines pass it."""
    passing = [ffmpeg for ffmpeg, python in _FFMPEG_TO_PYTHON if python >= python_level]
    return max(passing) if passing else _log.FFMPEG_LEVELS["QUIET"]


def set_log_level(level: Union[str, int]) -> None:
    """Set torchcodec's log level, which is also FFmpeg's (see the module's documentation).

    Raises ValueError for anything else than the names and numbers listed there.
    """
    global _current
    reported, python_level = _parse(level)
    forward_ffmpeg_log()                 # lines already queued go out under the old level
    _LOGGER.setLevel(max(python_level, 1))     # 0 would mean "inherit the root logger's level"
    _log.set_ffmpeg_level(_ffmpeg_threshold(python_level))
    _current = reported


def get_log_level() -> Union[str, int]:
    """The level set last: its name in upper case ("OFF", "ALL", "WARNING", ...; aliases give
    their main name), or the number given when it has no name. ``set_log_level`` takes it back."""
    return _current


def forward_ffmpeg_log() -> None:
    """Hand FFmpeg's queued lines to the "torchcodec.ffmpeg" logger."""
    taken = _log.drain()
    if taken is None:
        return
    lines, dropped, dropped_level = taken
    for ffmpeg_level, text in lines:
        text = text.rstrip("\n")
        if text:
            _log_ffmpeg_line(ffmpeg_level, "%s", (text,))
    if dropped:
        _log_ffmpeg_line(dropped_level, "%d more FFmpeg log lines were dropped: FFmpeg logged more than %d lines "
                         "within one torchcodec call", (dropped, _log.queue_capacity()))


def _log_ffmpeg_line(ffmpeg_level: int, message: str, args: tuple) -> None:
    """One record of the "torchcodec.ffmpeg" logger. Its ``levelname`` says VERBOSE or TRACE for
    FFmpeg's levels that Python has no name for (without naming them in ``logging`` for everyone),
    and ``ffmpeg_level`` is FFmpeg's own name of the level ("warning", "verbose", ...)."""
    level = _python_level(ffmpeg_level)
    if not _FFMPEG_LOGGER.isEnabledFor(level):
        return
    record = _FFMPEG_LOGGER.makeRecord(_FFMPEG_LOGGER.name, level, "ffmpeg", 0, message, args, None)
    record.levelname = _NUMBER_NAMES.get(level, record.levelname)
    record.ffmpeg_level = _FFMPEG_NAMES.get(ffmpeg_level, str(ffmpeg_level))
    _FFMPEG_LOGGER.handle(record)


_F = TypeVar("_F", bound=Callable[..., Any])


def forwards_ffmpeg_log(function: _F) -> _F:
    """Decorate a function that calls FFmpeg: when it returns or raises, FFmpeg's lines go to logging."""
    @functools.wraps(function)
    def forwarding(*args: Any, **kwargs: Any) -> Any:
        try:
            return function(*args, **kwargs)
        finally:
            forward_ffmpeg_log()
    return forwarding  # type: ignore[return-value]


class _StderrUnlessHandled(logging.Handler):
    """Prints torchcodec's records on (the current) sys.stderr, unless another handler on the way
    from the record's logger to the root logger takes them."""

    def emit(self, record: logging.LogRecord) -> None:
        logger: Any = logging.getLogger(record.name)
        while logger is not None:
            if any(handler is not self for handler in logger.handlers):
                return
            if not logger.propagate:
                break
            logger = logger.parent
        stream = sys.stderr
        if stream is None:
            return
        try:
            stream.write(self.format(record) + "\n")
            stream.flush()
        except Exception:
            self.handleError(record)


def _level_from_environment() -> Union[str, int]:
    value = os.environ.get("TORCHCODEC_FFMPEG_LOG_LEVEL")
    if value is None or not value.strip():
        return "OFF"
    level: Union[str, int] = int(value) if value.strip().isdigit() else value
    try:
        _parse(level)
    except ValueError as e:
        warnings.warn(f"TORCHCODEC_FFMPEG_LOG_LEVEL is ignored: {e}. Logging stays OFF.", stacklevel=2)
        return "OFF"
    return level


_handler = _StderrUnlessHandled()
_handler.setFormatter(logging.Formatter("[%(name)s] %(levelname)s: %(message)s"))
_LOGGER.addHandler(_handler)
set_log_level(_level_from_environment())
os.register_at_fork(after_in_child=_log.reset_after_fork)
atexit.register(forward_ffmpeg_log)
