"""Custom AVIO contexts, so that the demuxer reads from memory or from Python file objects, and the
muxer writes to them.

``MemorySource`` reads straight from the buffer of a bytes-like object (the object is kept alive
and never copied as a whole); its callbacks are plain C and run without the GIL.
``FileObjectSource`` calls the file object's methods with the GIL held; an exception raised by
the file object is stashed (torchcodec._core._error's ErrorStash: the callback returns
AVERROR(EIO) to FFmpeg) and re-raised, with its traceback, errno and file name, by
``raise_pending`` once the FFmpeg call returns. It
reads with ``readinto`` when the object has one, and with ``read`` otherwise, or when ``readinto``
raises NotImplementedError (an ``io.RawIOBase`` subclass that implements only ``read``).
``MemorySink`` collects what a muxer writes in a growing C buffer (plain C callbacks, no GIL);
``FileObjectSink`` hands it to a file object's ``write`` and ``seek``, errors stashed as above.
"""
import io

from torchcodec._core._error import InvalidArgumentError

from cpython.buffer cimport PyBUF_C_CONTIGUOUS, PyBUF_FORMAT, PyObject_GetBuffer, PyBuffer_Release
from libc.errno cimport EINVAL, EIO, ENOMEM
from libc.stdint cimport INT64_MAX, int64_t, uint8_t
from libc.stdio cimport SEEK_CUR, SEEK_END, SEEK_SET
from libc.stdlib cimport free, realloc
from libc.string cimport memcpy, memset

from torchcodec._core._error cimport clear_stash, raise_stashed, stash_exception
from torchcodec._ffmpeg cimport avformat as lavf
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport ffcompat
from torchcodec._ffmpeg.ffcompat cimport tc_avio_read_fn, tc_avio_seek_fn, tc_avio_write_fn

cdef int IO_BUFFER_SIZE = 1 << 16


cdef AVIOContext *new_avio_context(void *opaque, tc_avio_read_fn read, tc_avio_write_fn write,
                                   tc_avio_seek_fn seek) except NULL:
    """An AVIO context over callbacks: ``read`` for sources, ``write`` for sinks (the other NULL)."""
    cdef unsigned char *buffer = <unsigned char *>lavu.av_malloc(IO_BUFFER_SIZE)
    if buffer == NULL:
        raise MemoryError("av_malloc failed for the AVIO buffer")
    cdef AVIOContext *ctx = ffcompat.tc_avio_alloc_context(buffer, IO_BUFFER_SIZE, write != NULL, opaque,
                                                           read, write, seek)
    if ctx == NULL:
        lavu.av_free(buffer)
        raise MemoryError("avio_alloc_context failed")
    return ctx


cdef class IOSource:
    def __cinit__(self):
        self.ptr = NULL
        memset(&self.errors, 0, sizeof(self.errors))

    def __dealloc__(self):
        clear_stash(&self.errors)
        if self.ptr != NULL:
            lavu.av_freep(&self.ptr.buffer)
            lavf.avio_context_free(&self.ptr)

    cdef int raise_pending(self) except -1:
        """Raise what a callback stashed during the last FFmpeg call (nothing when none did)."""
        return raise_stashed(&self.errors)


# ---- memory ---------------------------------------------------------------------------------

cdef int memory_read(void *opaque, uint8_t *buf, int buf_size) noexcept nogil:
    cdef MemoryReader *reader = <MemoryReader *>opaque
    cdef int64_t remaining = reader.size - reader.pos
    if remaining <= 0:
        return lavu.AVERROR_EOF
    cdef int n = buf_size if buf_size < remaining else <int>remaining
    memcpy(buf, reader.data + reader.pos, n)
    reader.pos += n
    return n


cdef int64_t seek_target(int64_t pos, int64_t size, int64_t offset, int whence) noexcept nogil:
    """Where an AVIO seek of ``offset`` from ``whence`` (SEEK_SET/CUR/END, AVSEEK_FORCE ignored)
    lands in memory whose position is ``pos`` and whose content is ``size`` bytes; -1 for another
    ``whence``. (AVSEEK_SIZE is the caller's.)"""
    whence &= ~lavf.AVSEEK_FORCE
    if whence == SEEK_SET:
        return offset
    if whence == SEEK_CUR:
        return pos + offset
    if whence == SEEK_END:
        return size + offset
    return -1


cdef int64_t memory_seek(void *opaque, int64_t offset, int whence) noexcept nogil:
    cdef MemoryReader *reader = <MemoryReader *>opaque
    if whence & lavf.AVSEEK_SIZE:
        return reader.size
    cdef int64_t position = seek_target(reader.pos, reader.size, offset, whence)
    if position < 0 or position > reader.size:
        return lavu.AVERROR(EINVAL)
    reader.pos = position
    return position


cdef class MemorySource(IOSource):
    """``MemorySource(data)``: any C-contiguous 1-D buffer of bytes. ``MemorySource(owner, address,
    size)``: ``size`` bytes at ``address``, kept alive by ``owner`` (e.g. a torch tensor)."""

    def __cinit__(self, data, size_t address=0, Py_ssize_t size=-1):
        self.has_view = False
        self.owner = data
        if address != 0:
            if size <= 0:
                raise ValueError("the in-memory source is empty (0 bytes)")
            self.reader.data = <const uint8_t *>address
            self.reader.size = size
            self.reader.pos = 0
            self.ptr = new_avio_context(&self.reader, memory_read, NULL, memory_seek)
            return
        # A C-contiguous buffer of bytes; format is checked so that e.g. a float array is refused.
        PyObject_GetBuffer(data, &self.view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT)
        self.has_view = True
        fmt = (<bytes>self.view.format) if self.view.format != NULL else b"B"
        if self.view.itemsize != 1 or fmt not in (b"B", b"b", b"c"):
            raise TypeError(
                f"an in-memory source must hold bytes (uint8); got items of format {fmt.decode()!r} "
                f"and size {self.view.itemsize}")
        if self.view.ndim > 1:
            raise TypeError(f"an in-memory source must be 1-D; got {self.view.ndim} dimensions")
        if self.view.len == 0:
            raise ValueError("the in-memory source is empty (0 bytes)")
        self.reader.data = <const uint8_t *>self.view.buf
        self.reader.size = self.view.len
        self.reader.pos = 0
        self.ptr = new_avio_context(&self.reader, memory_read, NULL, memory_seek)

    def __dealloc__(self):
        if self.has_view:
            PyBuffer_Release(&self.view)


# ---- Python file objects ----------------------------------------------------------------------

cdef int file_read(void *opaque, uint8_t *buf, int buf_size) noexcept with gil:
    cdef FileObjectSource source = <FileObjectSource>opaque
    cdef const uint8_t[::1] chunk
    cdef Py_ssize_t n
    try:
        result = NotImplemented
        if source.readinto is not None:
            try:
                result = source.readinto(<uint8_t[:buf_size]>buf)
            except NotImplementedError:   # io.RawIOBase's own readinto, under a read()-only subclass
                source.readinto = None
            else:
                if result is None:      # a non-blocking stream with no data: treat as an I/O error
                    raise OSError("the file object's readinto() returned None (non-blocking stream?)")
                n = result
        if result is NotImplemented:
            data = source.read(buf_size)
            if isinstance(data, str):
                raise TypeError("the file object returned str from read(); open it for binary reading, with mode 'rb'")
            chunk = data
            n = chunk.shape[0]
            if n > buf_size:
                raise ValueError(f"the file object's read({buf_size}) returned {n} bytes, more than asked")
            if n:
                memcpy(buf, &chunk[0], n)
        if n < 0 or n > buf_size:
            raise ValueError(f"the file object's readinto() reported {n} bytes for a {buf_size}-byte buffer")
        if n == 0:
            return lavu.AVERROR_EOF
        return <int>n
    except BaseException as error:
        return stash_exception(&source.errors, error, lavu.AVERROR(EIO))


cdef int64_t seek_file_object(IOSource owner, object seek, int64_t offset, int whence) noexcept with gil:
    """AVIO's seek over a Python file object's ``seek(offset, whence)``: AVSEEK_SIZE by seeking to
    the end and back; a ``seek`` that returns None (some writers do) landed where SEEK_SET asked.
    An exception is stashed in ``owner.errors``, for the caller of FFmpeg to raise."""
    try:
        if whence & lavf.AVSEEK_SIZE:
            current = seek(0, SEEK_CUR)
            size = seek(0, SEEK_END)
            seek(current, SEEK_SET)
            return size
        whence &= ~lavf.AVSEEK_FORCE
        if whence not in (SEEK_SET, SEEK_CUR, SEEK_END):
            return lavu.AVERROR(EINVAL)
        position = seek(offset, whence)
        if position is None:
            return offset if whence == SEEK_SET else lavu.AVERROR(EIO)
        return position
    except BaseException as error:
        return stash_exception(&owner.errors, error, lavu.AVERROR(EIO))


cdef int64_t file_seek(void *opaque, int64_t offset, int whence) noexcept with gil:
    cdef FileObjectSource source = <FileObjectSource>opaque
    return seek_file_object(source, source.seek, offset, whence)


cdef class FileObjectSource(IOSource):
    def __cinit__(self, fileobj):
        if isinstance(fileobj, io.TextIOBase):
            raise TypeError("the file object is in text mode; open it for binary reading, with mode 'rb'")
        read = getattr(fileobj, "read", None)
        seek = getattr(fileobj, "seek", None)
        if not callable(read) or not callable(seek):
            raise TypeError(
                f"a file-like source needs read(n) and seek(offset, whence) methods; "
                f"{type(fileobj).__name__} lacks {'read' if not callable(read) else 'seek'}")
        self.fileobj = fileobj
        self.read = read
        self.seek = seek
        readinto = getattr(fileobj, "readinto", None)
        self.readinto = readinto if callable(readinto) else None
        self.ptr = new_avio_context(<void *>self, file_read, NULL, file_seek)


# ---- sinks: where a muxer writes ----------------------------------------------------------------

cdef int memory_write(void *opaque, const uint8_t *buf, int buf_size) noexcept nogil:
    cdef MemoryWriter *writer = <MemoryWriter *>opaque
    cdef int64_t end = writer.pos + buf_size
    cdef int64_t capacity
    cdef uint8_t *grown
    if end > writer.capacity:
        capacity = writer.capacity * 2 if writer.capacity else IO_BUFFER_SIZE
        while capacity < end:
            capacity *= 2
        grown = <uint8_t *>realloc(writer.data, <size_t>capacity)
        if grown == NULL:
            return lavu.AVERROR(ENOMEM)
        writer.data = grown
        writer.capacity = capacity
    if writer.pos > writer.size:                  # a seek past the end: the gap reads as zeros
        memset(writer.data + writer.size, 0, <size_t>(writer.pos - writer.size))
    memcpy(writer.data + writer.pos, buf, buf_size)
    writer.pos = end
    if end > writer.size:
        writer.size = end
    return buf_size


cdef int64_t memory_sink_seek(void *opaque, int64_t offset, int whence) noexcept nogil:
    cdef MemoryWriter *writer = <MemoryWriter *>opaque
    if whence & lavf.AVSEEK_SIZE:
        return writer.size
    cdef int64_t position = seek_target(writer.pos, writer.size, offset, whence)
    if position < 0 or position > INT64_MAX // 4:
        return lavu.AVERROR(EINVAL)
    writer.pos = position
    return position


cdef class MemorySink(IOSource):
    """What a muxer writes, collected in memory (a C buffer that doubles as it fills); seekable.

    ``size`` is the number of bytes written; ``copy_to(address)`` copies them to memory the caller
    allocated (e.g. a numpy array or torch tensor of ``size`` bytes); ``getvalue()`` gives bytes.
    """

    def __cinit__(self):
        self.writer.data = NULL
        self.writer.size = 0
        self.writer.capacity = 0
        self.writer.pos = 0
        self.ptr = new_avio_context(&self.writer, NULL, memory_write, memory_sink_seek)

    def __dealloc__(self):
        free(self.writer.data)

    @property
    def size(self):
        return self.writer.size

    def copy_to(self, size_t address):
        """Copy the ``size`` bytes written into the memory at ``address`` (room for ``size`` bytes)."""
        if self.writer.size:
            with nogil:
                memcpy(<void *>address, self.writer.data, <size_t>self.writer.size)

    def getvalue(self):
        return (<char *>self.writer.data)[:self.writer.size] if self.writer.size else b""


cdef int file_write(void *opaque, const uint8_t *buf, int buf_size) noexcept with gil:
    cdef FileObjectSink sink = <FileObjectSink>opaque
    cdef Py_ssize_t done = 0
    try:
        data = (<const char *>buf)[:buf_size]            # bytes: the file object may keep it
        while done < buf_size:
            result = sink.write(data[done:] if done else data)
            if result is None:                          # e.g. a write() that returns nothing: all taken
                break
            if result <= 0 or result > buf_size - done:
                raise OSError(f"the file object's write() of {buf_size - done} bytes returned {result!r}")
            done += result
        return buf_size
    except BaseException as error:
        return stash_exception(&sink.errors, error, lavu.AVERROR(EIO))


cdef int64_t file_sink_seek(void *opaque, int64_t offset, int whence) noexcept with gil:
    cdef FileObjectSink sink = <FileObjectSink>opaque
    return seek_file_object(sink, sink.seek, offset, whence)


cdef class FileObjectSink(IOSource):
    """Writes to a Python file-like object through its ``write(bytes)`` and ``seek(offset, whence)``
    methods (only those two are called). Raises a TypeError that is also a RuntimeError (as
    TorchCodec raises) when one is missing or the file is in text mode."""

    def __cinit__(self, fileobj):
        if isinstance(fileobj, io.TextIOBase):
            raise InvalidArgumentError("the file object is in text mode; open it in binary mode ('wb')")
        write = getattr(fileobj, "write", None)
        seek = getattr(fileobj, "seek", None)
        if not callable(write):
            raise InvalidArgumentError(f"File like object must implement a write method for writing "
                                       f"({type(fileobj).__name__} has none).")
        if not callable(seek):
            raise InvalidArgumentError(f"File like object must implement a seek method "
                                       f"({type(fileobj).__name__} has none).")
        self.fileobj = fileobj
        self.write = write
        self.seek = seek
        self.ptr = new_avio_context(<void *>self, NULL, file_write, file_sink_seek)
