"""FFmpeg's log lines, caught in C and handed to Python's logging later, by Python code.

FFmpeg calls its log callback from any thread: the thread of a torchcodec call (with or without
the GIL), FFmpeg's own frame and slice threads, and threads that a ``__dealloc__`` joins while
it holds the GIL (``avcodec_free_context`` waits for the frame threads). A callback that took the
GIL to call ``logging`` would deadlock there: the thread holding the GIL waits for a thread that
waits for the GIL. So the callback here never touches Python. It formats the line
(``av_log_format_line2``, the text FFmpeg would print on stderr, with its ``[h264 @ 0x...]``
prefix) and copies it into a fixed-size queue, under a lock that is only ever held to copy lines
in or out (never while waiting for anything else, never around Python code). When the queue is
full, lines are dropped and counted. ``drain()``, called by Python code at the end of each public
torchcodec call and at exit (``torchcodec._logging``), empties the queue.

Lines at a level above ``av_log_get_level()`` are not even formatted: the level set through
``torchcodec._logging.set_log_level`` is FFmpeg's own threshold.
"""
from cpython.pythread cimport (PyThread_allocate_lock, PyThread_release_lock, PyThread_type_lock, PY_LOCK_ACQUIRED,
                               PyLockStatus)
from libc.stdlib cimport free, malloc
from libc.string cimport memcpy, strlen

from torchcodec._ffmpeg cimport avutil as lavu


cdef extern from "pythread.h" nogil:
    PyLockStatus PyThread_acquire_lock_timed(PyThread_type_lock lock, long long microseconds, int intr_flag)
    unsigned long PyThread_get_thread_ident()


cdef enum:
    LINE_SIZE = 512           # bytes per line (FFmpeg's own stderr callback uses 1024; ours truncate)
    QUEUE_LINES = 1024        # lines kept between two drains
    LOCK_TIMEOUT_US = 1000000  # the lock is held for a copy only: waiting longer means it never comes


ctypedef struct LogLine:
    int level
    unsigned long thread        # who logged it: a thread's next call may continue its line
    bint open                   # the text does not end with a newline yet
    char text[LINE_SIZE]


cdef LogLine queue[QUEUE_LINES]
cdef Py_ssize_t first = 0           # index of the oldest line
cdef Py_ssize_t count = 0           # lines in the queue
cdef unsigned long long dropped = 0     # lines lost to a full queue since the last drain
cdef int dropped_level = 0              # the most severe level among them (smallest FFmpeg level)
cdef PyThread_type_lock lock = NULL


cdef LogLine *open_line(unsigned long thread) noexcept nogil:
    """The line that ``thread`` began and has not ended yet, if it is among the newest (lock held)."""
    cdef Py_ssize_t k
    cdef LogLine *line
    for k in range(count - 1, max(count - 16, 0) - 1, -1):
        line = &queue[(first + k) % QUEUE_LINES]
        if line.thread == thread:
            return line if line.open else NULL
    return NULL


cdef bint lock_queue() noexcept nogil:
    # A timeout can only mean a lock left held by a thread that no longer exists: lines are lost.
    return PyThread_acquire_lock_timed(lock, LOCK_TIMEOUT_US, 0) == PY_LOCK_ACQUIRED


cdef void log_callback(void *avcl, int level, const char *fmt, lavu.va_list vl) noexcept nogil:
    """FFmpeg's log callback: format the line and queue it. Never waits for the GIL.

    FFmpeg sometimes logs one line in several calls (the last ends with the newline): the calls
    of one thread that continue its open line are appended to it, without a second prefix, as
    FFmpeg's own stderr callback prints them.
    """
    global first, count, dropped, dropped_level
    cdef int severity = level & 0xff        # bits above are colour hints (AV_LOG_C)
    cdef char text[LINE_SIZE]
    cdef int print_prefix
    cdef unsigned long thread = PyThread_get_thread_ident()
    cdef LogLine *line
    cdef int length
    cdef size_t used, size
    cdef bint ends_line
    if severity > lavu.av_log_get_level() or lock == NULL or not lock_queue():
        return
    print_prefix = open_line(thread) == NULL
    PyThread_release_lock(lock)
    length = lavu.av_log_format_line2(avcl, level, fmt, vl, text, LINE_SIZE, &print_prefix)
    if length < 0:
        return
    size = strlen(text)
    # A line cut at LINE_SIZE lost its newline: it is taken as ended, as nearly all lines are.
    ends_line = length >= LINE_SIZE or (size > 0 and text[size - 1] == b'\n')
    if not lock_queue():
        return
    line = open_line(thread)
    if line != NULL:                       # a continuation: appended, cut at LINE_SIZE
        used = strlen(line.text)
        size = min(size, LINE_SIZE - 1 - used)
        memcpy(line.text + used, text, size)
        line.text[used + size] = 0
        line.open = not ends_line
    elif count == QUEUE_LINES:
        if dropped == 0 or severity < dropped_level:
            dropped_level = severity
        dropped += 1
    else:
        line = &queue[(first + count) % QUEUE_LINES]
        line.level = severity
        line.thread = thread
        line.open = not ends_line
        memcpy(line.text, text, size + 1)
        count += 1
    PyThread_release_lock(lock)


def drain():
    """Take the queued lines: None when there are none, else ``(lines, dropped, dropped_level)``
    with ``lines`` a list of ``(FFmpeg level, text)`` in the order they were logged, and the
    number and most severe level of the lines lost to a full queue."""
    global first, count, dropped, dropped_level
    cdef LogLine *taken = NULL
    cdef Py_ssize_t n = 0, i, lost_level = 0
    cdef unsigned long long lost = 0
    # Waited for with the GIL held: whoever holds the lock is a callback copying one line, which
    # needs nothing else (a drain holds the GIL all along, so no other drain can hold it).
    # Releasing the GIL here would let other Python threads delay this one for nothing.
    if lock == NULL or not lock_queue():
        return None
    # Under the lock: C copies only. Nothing here may run Python code (a garbage collection could
    # free a decoder, whose FFmpeg threads may be waiting for this lock).
    if count:
        taken = <LogLine *>malloc(count * sizeof(LogLine))
        if taken != NULL:
            n = count
            for i in range(n):
                memcpy(&taken[i], &queue[(first + i) % QUEUE_LINES], sizeof(LogLine))
            first = (first + n) % QUEUE_LINES
            count = 0
    lost, lost_level = dropped, dropped_level
    dropped = 0
    PyThread_release_lock(lock)
    if n == 0 and lost == 0:
        return None
    try:
        lines = [(taken[i].level, taken[i].text[:strlen(taken[i].text)].decode("utf-8", "replace"))
                 for i in range(n)]
    finally:
        free(taken)
    return lines, lost, lost_level


def queue_capacity():
    """How many lines the queue keeps between two drains."""
    return QUEUE_LINES


def set_ffmpeg_level(int level):
    """Set FFmpeg's threshold (an AV_LOG_* value): lines above it are neither formatted nor queued."""
    lavu.av_log_set_level(level)


def reset_after_fork():
    """In a forked child: a new lock (the parent's may have been held by a thread that the child
    does not have) and an empty queue (the parent's lines were the parent's to log)."""
    global lock, first, count, dropped
    lock = PyThread_allocate_lock()          # the old one is left alone: it may be held forever
    first = count = dropped = 0


FFMPEG_LEVELS = {
    "QUIET": lavu.AV_LOG_QUIET, "PANIC": lavu.AV_LOG_PANIC, "FATAL": lavu.AV_LOG_FATAL,
    "ERROR": lavu.AV_LOG_ERROR, "WARNING": lavu.AV_LOG_WARNING, "INFO": lavu.AV_LOG_INFO,
    "VERBOSE": lavu.AV_LOG_VERBOSE, "DEBUG": lavu.AV_LOG_DEBUG, "TRACE": lavu.AV_LOG_TRACE,
}

lock = PyThread_allocate_lock()
if lock == NULL:
    raise MemoryError("could not allocate the lock of FFmpeg's log queue")
lavu.av_log_set_level(lavu.AV_LOG_QUIET)       # silent until torchcodec._logging sets the level
lavu.av_log_set_callback(log_callback)
