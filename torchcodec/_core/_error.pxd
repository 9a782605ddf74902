# Turning FFmpeg return codes into Python exceptions: the one place where this happens. And the one
# mechanism for errors raised inside C callbacks (file-object reads, NVDEC parser callbacks): the
# callback stashes what went wrong and returns an error code to C; the caller raises it afterwards.
from cpython.ref cimport PyObject

cdef int check_av(int ret, const char *where, object subject=*) except -1
cdef str av_error_string(int ret)
cdef object av_exception(int ret, str message)
cdef object open_error(int ret, str name, bint in_memory)
cdef bint is_again_or_eof(int ret) noexcept nogil

cdef enum:
    # What a codec call (PacketDecoder.send/receive) returns when it stashed its error in the
    # decoder's ErrorStash: FFERRTAG('T', 'C', 'E', 'S'), no AVERROR of FFmpeg's.
    ERROR_STASHED = -0x53454354

# Makes the exception for an error code a callback stashed (``where``: the C function that failed,
# or what happened). NULL in a stash means FFmpeg's AVERROR (av_exception).
ctypedef object (*error_builder)(int code, const char *where)

cdef struct ErrorStash:
    # The first failure inside a callback, until raised: a Python exception (an owned reference; its
    # __traceback__, errno and filename are the exception's own) or an error code with where it
    # happened. Zero-initialised means empty; its owner calls clear_stash when it goes.
    PyObject *exception
    int code
    const char *where               # static text
    error_builder build

# In a callback's ``except BaseException as error:`` clause (GIL held): keep ``error`` (unless a
# failure is kept already) and return ``code``, for the callback to return to C.
cdef int stash_exception(ErrorStash *stash, object error, int code) noexcept
# Anywhere, without the GIL: keep the error ``code`` (nonzero) of ``where`` (unless a failure is
# kept already); ``build`` makes its exception when raised (NULL: an AVERROR). Returns ``code``.
cdef int stash_code(ErrorStash *stash, int code, const char *where, error_builder build) noexcept nogil
cdef bint has_stashed(const ErrorStash *stash) noexcept nogil
# After the C call returned: raise the kept failure (the stash is empty again); 0 when none.
cdef int raise_stashed(ErrorStash *stash) except -1
cdef int raise_stashed_nogil(ErrorStash *stash) except -1 nogil
# Forget the kept failure (the owner's __dealloc__).
cdef void clear_stash(ErrorStash *stash) noexcept
