"""What FFmpeg build the package runs with, and how loudly FFmpeg may log."""
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avformat as lavf
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport swscale as sws

LOG_LEVELS = {
    "quiet": lavu.AV_LOG_QUIET, "panic": lavu.AV_LOG_PANIC, "fatal": lavu.AV_LOG_FATAL,
    "error": lavu.AV_LOG_ERROR, "warning": lavu.AV_LOG_WARNING, "info": lavu.AV_LOG_INFO,
    "verbose": lavu.AV_LOG_VERBOSE, "debug": lavu.AV_LOG_DEBUG,
}


cdef str library_version(unsigned v):
    return f"{v >> 16}.{(v >> 8) & 0xff}.{v & 0xff}"


def ffmpeg_versions():
    """The FFmpeg release string and the version of each library loaded at run time."""
    return {
        "ffmpeg": lavu.av_version_info().decode(),
        "libavutil": library_version(lavu.avutil_version()),
        "libavcodec": library_version(lavc.avcodec_version()),
        "libavformat": library_version(lavf.avformat_version()),
        "libswscale": library_version(sws.swscale_version()),
    }


def set_log_level(str level):
    """Set FFmpeg's log level by name: quiet, panic, fatal, error, warning, info, verbose, debug."""
    if level not in LOG_LEVELS:
        raise ValueError(f"unknown FFmpeg log level {level!r}; choose one of {sorted(LOG_LEVELS)}")
    lavu.av_log_set_level(LOG_LEVELS[level])
