"""Muxing: an output container, its streams, its header, interleaved packets and its trailer.

A Muxer is made for a destination path (the container is guessed from the extension) or for a
container name (for a file object or memory, written through a sink from _avio). Nothing is
written until ``open`` (which creates the file of a path) and ``write_header``: the encoders open
their codecs in between, so that bad settings are refused before anything exists on disk. When the
header cannot be written, a file that this Muxer created is removed again.
"""
import os

from libc.errno cimport EINVAL

from torchcodec._core._avio cimport IOSource
from torchcodec._core._error cimport av_error_string, av_exception, check_av
from torchcodec._core._error import InvalidArgumentError
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avformat as lavf
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg.avcodec cimport AVCodecContext, AVCodecID, AVPacket
from torchcodec._ffmpeg.avformat cimport AVFormatContext, AVOutputFormat, AVStream
from torchcodec._ffmpeg.avutil cimport AVClass


cdef AVFormatContext *alloc_output(object format_name, object path) except NULL:
    """An output context for ``format_name`` (a muxer's name, or else an extension such as "mkv"
    or "m4a") or, when it is None, for ``path``'s extension."""
    cdef AVFormatContext *ctx = NULL
    cdef bytes name, filename
    cdef int ret
    if format_name is None:
        filename = os.fsencode(path)
        ret = lavf.avformat_alloc_output_context2(&ctx, NULL, NULL, filename)
        if ctx == NULL:
            raise InvalidArgumentError(
                f"Couldn't allocate AVFormatContext. The destination file is {path}, check the desired "
                f"extension? FFmpeg has no container for it ({av_error_string(ret)}).")
        return ctx
    name = str(format_name).encode()
    ret = lavf.avformat_alloc_output_context2(&ctx, NULL, name, NULL)
    if ctx == NULL and name and b"." not in name and b"/" not in name:
        filename = b"output." + name             # "mkv", "m4a": names of extensions, not of muxers
        ret = lavf.avformat_alloc_output_context2(&ctx, NULL, NULL, filename)
    if ctx == NULL:
        raise InvalidArgumentError(
            f"Couldn't allocate AVFormatContext. Check the desired format? Got format={format_name}. "
            f"FFmpeg has no muxer or extension of that name ({av_error_string(ret)}).")
    return ctx


cdef bint class_has_option(const AVClass *cls, const char *name) noexcept:
    if cls == NULL:
        return False
    return lavu.av_opt_find2(<void *>&cls, name, NULL, 0, lavu.AV_OPT_SEARCH_FAKE_OBJ, NULL) != NULL


cdef class Muxer:
    """``Muxer(path=...)`` or ``Muxer(format=..., sink=...)``: see the module's docstring."""

    def __cinit__(self, path=None, format=None, IOSource sink=None):
        self.ptr = NULL
        self.options = NULL
        self.opened_path = False
        self.created_path = False
        self.header_written = False
        self.finished = False
        if (path is None) == (format is None):
            raise TypeError("Muxer needs either a path or a format")
        if path is not None:
            self.path = os.fspath(path)
            if not isinstance(self.path, str):
                self.path = os.fsdecode(self.path)
        elif sink is None:
            raise TypeError("a Muxer for a format writes to a sink (MemorySink or FileObjectSink)")
        self.sink = sink
        self.ptr = alloc_output(format, self.path)
        if sink is not None and self.ptr.oformat.flags & lavf.AVFMT_NOFILE:
            raise InvalidArgumentError(f"the {self.format_name} format writes its own files; it cannot "
                                       f"write to a file object or to memory")

    def __dealloc__(self):
        lavu.av_dict_free(&self.options)
        if self.ptr != NULL:
            if self.opened_path:
                lavf.avio_closep(&self.ptr.pb)
            self.ptr.pb = NULL                   # a sink's AVIO belongs to the sink
            lavf.avformat_free_context(self.ptr)
            self.ptr = NULL

    @property
    def format_name(self):
        """The muxer's name, e.g. "mp4", "matroska", "webm", "wav"."""
        return self.ptr.oformat.name.decode()

    @property
    def global_header(self):
        """Whether the container wants codec headers once, out of band (AV_CODEC_FLAG_GLOBAL_HEADER)."""
        return bool(self.ptr.oformat.flags & lavf.AVFMT_GLOBALHEADER)

    def default_codec_id(self, str kind):
        """The codec id the container defaults to for "video" or "audio" (AV_CODEC_ID_NONE: none)."""
        return <int>(self.ptr.oformat.video_codec if kind == "video" else self.ptr.oformat.audio_codec)

    def is_option(self, str key):
        """Whether ``key`` is an option of containers in general or of this muxer (``movflags``...)."""
        cdef bytes name = key.encode()
        return (class_has_option(lavf.avformat_get_class(), name)
                or class_has_option(self.ptr.oformat.priv_class, name))

    def set_option(self, str key, str value):
        """Set a container option (see ``is_option``), used when the header is written."""
        check_av(lavu.av_dict_set(&self.options, key.encode(), value.encode(), 0), "av_dict_set")

    def check_codec(self, int codec_id, str codec_name):
        """Refuse a codec the container is known not to take (avformat_query_codec says 0)."""
        if lavf.avformat_query_codec(self.ptr.oformat, <AVCodecID>codec_id, lavc.FF_COMPLIANCE_NORMAL) == 0:
            raise InvalidArgumentError(f"the {self.format_name} container cannot hold {codec_name} streams; "
                                       f"choose another codec or container")

    cdef AVStream *new_stream(self, const AVCodecContext *codec) except NULL:
        """A new stream with ``codec``'s (opened) parameters; the context keeps it."""
        if self.header_written:
            raise RuntimeError("streams must be added before the header is written")
        cdef AVStream *stream = lavf.avformat_new_stream(self.ptr, NULL)
        if stream == NULL:
            raise MemoryError("avformat_new_stream failed")
        check_av(lavc.avcodec_parameters_from_context(stream.codecpar, codec), "avcodec_parameters_from_context")
        stream.time_base = codec.time_base
        return stream

    def open(self):
        """Open the destination: create (or truncate) the file at ``path``, or attach the sink."""
        cdef bytes filename
        cdef const char *c_filename
        cdef int ret
        if self.sink is not None:
            self.ptr.pb = self.sink.ptr
            self.ptr.flags |= lavf.AVFMT_FLAG_CUSTOM_IO
            return
        if self.ptr.oformat.flags & lavf.AVFMT_NOFILE:
            return                                  # the muxer opens its files itself (ptr.url)
        filename = os.fsencode(self.path)
        c_filename = filename
        self.created_path = not os.path.lexists(self.path)
        with nogil:
            ret = lavf.avio_open(&self.ptr.pb, c_filename, lavf.AVIO_FLAG_WRITE)
        if ret < 0:
            self.created_path = False
            raise av_exception(ret, f"avio_open failed. The destination file is {self.path}, make sure it's a "
                                    f"valid path? {av_error_string(ret)}")
        self.opened_path = True

    def write_header(self):
        """Write the container's header with the options set; every option must be used."""
        cdef int ret
        cdef const lavu.AVDictionaryEntry *left
        if self.ptr.nb_streams == 0:
            raise RuntimeError("Call addVideoStream() or addAudioStream() before open().")
        with nogil:
            ret = lavf.avformat_write_header(self.ptr, &self.options)
        try:
            self.check_sink()
            if ret < 0:
                raise av_exception(ret, f"Error in avformat_write_header: {av_error_string(ret)} (the "
                                        f"{self.format_name} muxer refused the streams or options)")
        except BaseException:
            self.abort()
            raise
        self.header_written = True
        left = lavu.av_dict_get(self.options, b"", NULL, lavu.AV_DICT_IGNORE_SUFFIX)
        if left != NULL:
            raise InvalidArgumentError(f"the {self.format_name} muxer did not use the option "
                                       f"{left.key.decode()}={left.value.decode()}")

    cdef int write_packet(self, AVPacket *packet) except -1 nogil:
        """Hand ``packet`` (its reference is taken; NULL: flush the interleaving queue) to the
        muxer, which writes packets of all streams in order of time."""
        cdef int ret = lavf.av_interleaved_write_frame(self.ptr, packet)
        if ret < 0:
            with gil:
                self.check_sink()
                raise av_exception(ret, f"Error in av_interleaved_write_frame: {av_error_string(ret)}")
        return 0

    cdef int check_sink(self) except -1:
        """Re-raise an exception that the file object raised inside a write or seek."""
        if self.sink is not None:
            self.sink.raise_pending()
        return 0

    def finish(self):
        """Write the trailer (after the encoders were drained) and flush and close the destination."""
        cdef int ret = 0
        if self.finished:
            return
        self.finished = True
        if self.header_written:
            with nogil:
                ret = lavf.av_write_trailer(self.ptr)
        try:
            self.check_sink()
            if ret < 0:
                raise av_exception(ret, f"Error in av_write_trailer: {av_error_string(ret)}")
        finally:
            self.close_destination()

    def abort(self):
        """Give up: close the destination, and remove the file if this Muxer created it."""
        self.finished = True
        self.close_destination()
        if self.created_path and not self.header_written:
            try:
                os.remove(self.path)
            except OSError:
                pass
            self.created_path = False

    def close_destination(self):
        if self.ptr.pb != NULL:
            if self.opened_path:
                with nogil:
                    lavf.avio_closep(&self.ptr.pb)
                self.opened_path = False
            else:
                with nogil:
                    lavf.avio_flush(self.ptr.pb)
                self.ptr.pb = NULL
            self.check_sink()
