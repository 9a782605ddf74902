# cython: language_level=3
"""Test helper, built by tests/test_nvdec_input.py against the package's .pxd files: drives an
NvdecInput as the NVDEC decoder does (the demuxer read here, each packet pushed through the filter,
the filtered packets taken out), which the shipped package does only inside its decoder.
``filtered_packets`` collects them, ``seek_input`` seeks the demuxer and flushes the filter,
``sequence_header`` is the header the decoder sends first. Needs FFmpeg only (no CUDA build)."""
from libc.stdint cimport int64_t
from libc.string cimport memset

from torchcodec._core._demuxer cimport Demuxer
from torchcodec._core._error cimport ERROR_STASHED, ErrorStash, clear_stash, raise_stashed
from torchcodec._cuda._nvdec_input cimport NvdecInput
from torchcodec._ffmpeg cimport avcodec as lavc
from torchcodec._ffmpeg cimport avutil as lavu
from torchcodec._ffmpeg cimport ffcompat
from torchcodec._ffmpeg.avcodec cimport AVPacket


def sequence_header(NvdecInput nvdec):
    """What the decoder sends the parser before the first packet and after every flush (ValueError
    for a stream NVDEC cannot take)."""
    nvdec.check_supported()
    return nvdec.header


def seek_input(NvdecInput nvdec, Demuxer demuxer, pts=None, Py_ssize_t position=-1):
    """Seek the demuxer and flush the filter, as the decoder's flush does before it re-sends the
    sequence header: ``pts``, the key frame at or before it (the stream's time base; None: the first
    key frame); ``position`` >= 0, the byte position of a key packet instead (from a frame index),
    as the video reader seeks MPEG-TS/PS."""
    nvdec.check_supported()
    cdef bint from_start = pts is None
    cdef int64_t target = 0 if from_start else pts
    cdef int64_t byte_position = position
    cdef int index = nvdec.stream_index
    with nogil:
        if byte_position >= 0:
            demuxer.seek_bytes(byte_position)
        elif from_start:
            demuxer.seek_to_start(index)
        else:
            demuxer.seek_timestamp(index, target)
        nvdec.flush()


def filtered_packets(NvdecInput nvdec, Demuxer demuxer, Py_ssize_t max_count=-1):
    """Up to ``max_count`` (all when negative) next filtered packets of the stream, reading the
    demuxer as needed, as ``(data: bytes, pts: int | None, is_key: bool)``; pts falls back to dts."""
    nvdec.check_supported()
    cdef AVPacket *out = lavc.av_packet_alloc()
    cdef AVPacket *read = lavc.av_packet_alloc()
    cdef ErrorStash errors
    cdef int got, ret
    cdef int64_t pts
    memset(&errors, 0, sizeof(errors))
    packets = []
    try:
        if out == NULL or read == NULL:
            raise MemoryError("av_packet_alloc failed")
        while max_count < 0 or len(packets) < max_count:
            with nogil:
                got = nvdec.receive(out, &errors)
            if got == ERROR_STASHED:
                raise_stashed(&errors)
            if got:
                pts = ffcompat.tc_packet_pts(out)
                packets.append((out.data[:out.size] if out.size > 0 else b"",
                                None if pts == lavu.AV_NOPTS_VALUE else pts,
                                (out.flags & lavc.AV_PKT_FLAG_KEY) != 0))
                lavc.av_packet_unref(out)
                continue
            if nvdec.output_done:
                break
            with nogil:
                ret = demuxer.read(read)
                got = nvdec.send(NULL if ret < 0 else read, &errors)
                lavc.av_packet_unref(read)
            if got == ERROR_STASHED:
                raise_stashed(&errors)
    finally:
        clear_stash(&errors)
        lavc.av_packet_free(&out)
        lavc.av_packet_free(&read)
    return packets
