"""FFmpeg error codes as Python exceptions.

``check_av(ret, "avformat_open_input")`` returns ``ret`` when it is not negative and otherwise raises
the Python exception that fits the AVERROR, with ``av_strerror``'s text and the name of the C
function that failed. ``EAGAIN`` and ``EOF`` are control flow: callers test them with
``is_again_or_eof`` before calling ``check_av``.

TorchCodec raises RuntimeError for most mistakes, from its C++ core, where Python code would raise
ValueError, TypeError or IndexError. Where the two differ, this package raises a class that is both
(``InvalidArgumentError``, ``InvalidArgumentTypeError``, ``EndOfStreamError``), so that ``except
ValueError`` and ``except RuntimeError`` (as written for TorchCodec) both catch it. They are
defined here, once (the memory limit's MemoryLimitError: in torchcodec._memory).

Errors raised inside C callbacks (a Python file object's ``read``/``seek``/``write`` under AVIO,
NVDEC's parser callbacks) cannot propagate through the C library that called them. The callback
stashes the failure in an ``ErrorStash`` (``stash_exception`` in its ``except`` clause, or
``stash_code`` with a C error code and where it happened, without the GIL) and returns an error code
to C; once the C call returns, its caller calls ``raise_stashed``, which raises the exception itself
(with its traceback, errno and file name) or the one built for the code. The first failure is kept:
what follows it is usually its consequence.
"""
from cpython.ref cimport Py_INCREF, Py_XDECREF, PyObject
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


cdef object open_error(int ret, str name, bint in_memory):
    """avformat_open_input's failure, with TorchCodec's words first ("Could not open input file:
    NAME"), then what it means in words ("not a media file FFmpeg can read" for data no demuxer
    recognises), and FFmpeg's own text and error number last."""
    text = av_error_string(ret)
    meaning = "not a media file FFmpeg can read" if ret == lavu.AVERROR_INVALIDDATA else text
    detail = f"avformat_open_input: {text}, " if meaning != text else "avformat_open_input, "
    return av_exception(ret, f"Could not open input {'buffer' if in_memory else 'file'}: {name}: {meaning} "
                             f"({detail}FFmpeg error {ret})")


cdef object av_exception(int ret, str message):
    """The Python exception for the AVERROR ``ret``, carrying ``message``; the OSError kinds carry
    the errno too (``error.errno``; the message stays as it is)."""
    if ret == lavu.AVERROR(ENOENT):
        error = MediaNotFoundError(message)
    elif ret == lavu.AVERROR(EISDIR):
        error = MediaIsADirectoryError(message)
    elif ret == lavu.AVERROR(EACCES):
        error = MediaPermissionError(message)
    elif ret == lavu.AVERROR(ENOMEM):
        return MemoryError(message)
    elif ret == lavu.AVERROR(EINVAL):
        return InvalidArgumentError(message)
    else:
        return RuntimeError(message)
    error.errno = -ret
    return error


# ---- errors raised inside C callbacks ----------------------------------------------------------

cdef int stash_exception(ErrorStash *stash, object error, int code) noexcept:
    if stash.exception == NULL and stash.code == 0:
        Py_INCREF(error)
        stash.exception = <PyObject *>error
    return code


cdef int stash_code(ErrorStash *stash, int code, const char *where, error_builder build) noexcept nogil:
    if stash.exception == NULL and stash.code == 0:
        stash.code = code
        stash.where = where
        stash.build = build
    return code


cdef bint has_stashed(const ErrorStash *stash) noexcept nogil:
    return stash.exception != NULL or stash.code != 0


cdef int raise_stashed(ErrorStash *stash) except -1:
    cdef PyObject *kept = stash.exception
    cdef int code = stash.code
    cdef const char *where = stash.where
    cdef error_builder build = stash.build
    stash.exception = NULL
    stash.code = 0
    if kept != NULL:
        error = <object>kept      # a reference of its own
        Py_XDECREF(kept)          # the stash's
        raise error               # its __traceback__ goes on, from the callback's frames to here
    if code == 0:
        return 0
    if build != NULL:
        raise build(code, where)
    what = where.decode() if where != NULL else "a callback"
    raise av_exception(code, f"{what} failed: {av_error_string(code)} (FFmpeg error {code})")


cdef int raise_stashed_nogil(ErrorStash *stash) except -1 nogil:
    if has_stashed(stash):
        with gil:
            raise_stashed(stash)
    return 0


cdef void clear_stash(ErrorStash *stash) noexcept:
    cdef PyObject *kept = stash.exception
    stash.exception = NULL
    stash.code = 0
    Py_XDECREF(kept)
