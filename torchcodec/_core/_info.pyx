"""What FFmpeg build the package runs with."""
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avformat as lavf
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport swscale as sws


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


def ffmpeg_major_version():
    """The major version of the FFmpeg release loaded at run time (5 for FFmpeg 5.1), from
    libavutil's: each release line has its own libavutil major version (56 in FFmpeg 4, 57 in 5,
    ... 60 in 8), which holds for git builds too, whose version string has no release number."""
    return (lavu.avutil_version() >> 16) - 52


def has_decoder(str name) -> bool:
    """Whether the FFmpeg loaded at run time has a decoder called ``name`` (FFmpeg's name, e.g.
    "h264", "libdav1d")."""
    return lavc.avcodec_find_decoder_by_name(name.encode()) != NULL


def has_encoder(str name) -> bool:
    """Whether the FFmpeg loaded at run time has an encoder called ``name`` (FFmpeg's name, e.g.
    "libx264", "h264_nvenc")."""
    return lavc.avcodec_find_encoder_by_name(name.encode()) != NULL


def ffmpeg_license() -> str:
    """The licence libavcodec was configured under ("LGPL version 2.1 or later", "GPL version 2
    or later", ...), as libavcodec reports it."""
    return lavc.avcodec_license().decode()
