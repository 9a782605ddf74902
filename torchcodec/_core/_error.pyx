"""FFmpeg error codes as Python exceptions.

``check_av(ret, "avformat_open_input")`` returns ``ret`` when it is not negative and otherwise raises
the Python exception that fits the AVERROR, with ``av_strerror``'s text and the name of the C
function that failed. ``EAGAIN`` and ``EOF`` are control flow: callers test them with
``is_again_or_eof`` before calling ``check_av``.

TorchCodec raises RuntimeError for most mistakes, from its C++ core, where Python code would raise
ValueError, TypeError or IndexError. Where the two differ, this package raises a class that is both
(``InvalidArgumentError``, ``InvalidArgumentTypeError``, ``EndOfStreamError``), so that ``except
ValueError`` and ``except RuntimeError`` (as written for TorchCodec) both catch it. They are
defined here, once.
"""
from libc.errno cimport EAGAIN, EACCES, EINVAL, EISDIR, ENOENT, ENOMEM

from torchcodec._ffmpeg cimport avutil as lavu


class MediaNotFoundError(FileNotFoundError, RuntimeError):
    """A path that does not exist. Also a RuntimeError, as TorchCodec raises for every open failure."""


class MediaIsADirectoryError(IsADirectoryError, RuntimeError):
    """A path that is a directory, not a media file."""


class MediaPermissionError(PermissionError, RuntimeError):
    """A path that cannot be read."""


class InvalidArgumentError(ValueError, RuntimeError):
    """A bad value (an argument, or a value in the file that makes a request impossible). Also a
    RuntimeError, which TorchCodec raises for the same mistake."""


class InvalidArgumentTypeError(TypeError, RuntimeError):
    """An argument of the wrong type. Also a RuntimeError, which TorchCodec raises for the same mistake."""


class EndOfStreamError(IndexError, RuntimeError):
    """A frame the index or the header promised that the stream ended before (a truncated file, or a
    header that counts more frames than there are). Also a RuntimeError, which TorchCodec raises."""


class MemoryLimitError(MemoryError, RuntimeError):
    """A request that would need more memory than the limit allows (see torchcodec.set_memory_limit),
    refused before anything is allocated. Also a RuntimeError, which torch raises when an allocation
    fails."""


cdef str av_error_string(int ret):
    cdef char buf[256]
    if lavu.av_strerror(ret, buf, sizeof(buf)) < 0:
        return f"unknown FFmpeg error {ret}"
    return buf.decode("utf-8", "replace")


cdef bint is_again_or_eof(int ret) noexcept nogil:
    return ret == lavu.AVERROR(EAGAIN) or ret == lavu.AVERROR_EOF


cdef int check_av(int ret, const char *where, object subject=None) except -1:
    """Return ``ret`` if it is not an error, else raise; ``subject`` (e.g. a path) is named in the message."""
    if ret >= 0:
        return ret
    target = f" for {subject}" if subject is not None else ""
    message = f"{where.decode()} failed{target}: {av_error_string(ret)} (FFmpeg error {ret})"
    if ret == lavu.AVERROR(ENOENT):
        raise MediaNotFoundError(message)
    if ret == lavu.AVERROR(EISDIR):
        raise MediaIsADirectoryError(message)
    if ret == lavu.AVERROR(EACCES):
        raise MediaPermissionError(message)
    if ret == lavu.AVERROR(ENOMEM):
        raise MemoryError(message)
    if ret == lavu.AVERROR(EINVAL):
        raise InvalidArgumentError(message)
    raise RuntimeError(message)
