"""FFmpeg error codes as Python exceptions.

``check_av(ret, "avformat_open_input")`` returns ``ret`` when it is not negative and otherwise raises
the Python exception that fits the AVERROR, with ``av_strerror``'s text and the name of the C
function that failed. ``EAGAIN`` and ``EOF`` are control flow: callers test them with
``is_again_or_eof`` before calling ``check_av``.
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
    """A value the library or FFmpeg cannot use (FFmpeg's EINVAL, a bad encoder argument): a
    ValueError, and also a RuntimeError because TorchCodec raises RuntimeError for these."""


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
    raise av_exception(ret, f"{where.decode()} failed{target}: {av_error_string(ret)} (FFmpeg error {ret})")


cdef object av_exception(int ret, str message):
    """The Python exception for the AVERROR ``ret``, carrying ``message``."""
    if ret == lavu.AVERROR(ENOENT):
        return MediaNotFoundError(message)
    if ret == lavu.AVERROR(EISDIR):
        return MediaIsADirectoryError(message)
    if ret == lavu.AVERROR(EACCES):
        return MediaPermissionError(message)
    if ret == lavu.AVERROR(ENOMEM):
        return MemoryError(message)
    if ret == lavu.AVERROR(EINVAL):
        return InvalidArgumentError(message)
    return RuntimeError(message)
