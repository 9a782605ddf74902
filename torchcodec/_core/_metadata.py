"""Stream metadata: what the container header says, what a scan of the content found, and the
values computed from both (content preferred, header as the fallback).

The classes, their fields and the order of the fields are TorchCodec 0.17's: ``StreamMetadata``
(every stream), ``VideoStreamHeaderMetadata`` / ``AudioStreamHeaderMetadata`` (what the header
says: a Demuxer's streams report these), ``VideoStreamMetadata`` / ``AudioStreamMetadata`` (what a
decoder reports: the header, the scan, and the computed values), ``DemuxerMetadata`` (the
container's header) and ``ContainerMetadata`` (the container and all its streams). Every field is a plain dataclass field, the computed ones too:
they are computed once, when the decoder is made, and can be assigned like any other field.

Times and frame rates are floats, even when whole. TorchCodec passes its metadata through JSON
and gives whole values back as ints (``begin_stream_seconds_from_header == 0``, an int); here they
stay floats, which is what its documentation and annotations promise. ``repr`` prints them as
TorchCodec does (``0``, not ``0.0``), so that printed metadata reads the same.
"""
from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Any, Optional

_INDENT = "  "
# Floats that TorchCodec prints with six decimals (C's "%f") rather than in the shortest form.
_FIXED_DECIMALS = frozenset({"rotation"})


def _text(name: str, value: Any) -> str:
    """A field's value as TorchCodec's repr prints it: whole seconds and rates without ".0"."""
    if isinstance(value, float) and name not in _FIXED_DECIMALS:
        text = repr(value)
        return text[:-2] if text.endswith(".0") else text
    return str(value)


@dataclasses.dataclass
class StreamMetadata:
    """What the container header says about any stream (video, audio, subtitles, data)."""

    duration_seconds_from_header: Optional[float]
    """The stream's duration in seconds as its header gives it (None when the stream has none, as
    in Matroska/WebM: the container's duration is not used here)."""
    begin_stream_seconds_from_header: Optional[float]
    """The stream's start time in seconds from its header (None when unknown)."""
    bit_rate: Optional[int]
    """Bits per second, from the codec parameters (0 when unknown)."""
    codec: Optional[str]
    """FFmpeg's name of the codec, e.g. ``"h264"``."""
    stream_index: int
    """Absolute index of the stream in the file."""
    media_type: str
    """``"video"``, ``"audio"``, ``"subtitle"``, ``"data"``, ``"attachment"`` or ``"unknown"``."""

    def __repr__(self) -> str:
        lines = [f"{_INDENT}{f.name}: {_text(f.name, getattr(self, f.name))}\n" for f in dataclasses.fields(self)]
        return f"{type(self).__name__}:\n" + "".join(lines)


@dataclasses.dataclass(repr=False)
class VideoStreamHeaderMetadata(StreamMetadata):
    """What the container header says about a video stream."""

    width: Optional[int]
    """Width of the output frames, i.e. after the display rotation."""
    height: Optional[int]
    """Height of the output frames, i.e. after the display rotation."""
    num_frames_from_header: Optional[int]
    """Frame count from the header (``nb_frames``); None when it has none. May be wrong."""
    average_fps_from_header: Optional[float]
    """FFmpeg's ``r_frame_rate`` of the stream, as a float; None when unknown."""
    pixel_aspect_ratio: Optional[Fraction]
    """The codec parameters' sample aspect ratio as it is: ``Fraction(0, 1)`` when unknown."""
    rotation: Optional[float]
    """Display-matrix rotation in degrees (counter-clockwise, FFmpeg's ``av_display_rotation_get``,
    to 6 decimals), or None. Frames are returned rotated by it."""
    color_primaries: Optional[str]
    """FFmpeg's name, e.g. ``"bt709"``; None when unspecified."""
    color_space: Optional[str]
    """FFmpeg's name of the matrix, e.g. ``"bt709"``, ``"bt2020nc"``; None when unspecified."""
    color_transfer_characteristic: Optional[str]
    """FFmpeg's name, e.g. ``"bt709"``, ``"smpte2084"``; None when unspecified."""
    pixel_format: Optional[str]
    """FFmpeg's name of the source pixel format, e.g. ``"yuv420p"``."""


@dataclasses.dataclass(repr=False)
class VideoStreamMetadata(VideoStreamHeaderMetadata):
    """Metadata of a decoder's video stream: the header, the scan, and values computed from both.

    ``*_from_content`` come from the exact-mode scan (or custom frame mappings) and are None in
    approximate mode. The computed fields prefer them, and fall back to the header.
    """

    begin_stream_seconds_from_content: Optional[float]
    """Smallest pts of the stream's frames, in seconds (exact mode)."""
    end_stream_seconds_from_content: Optional[float]
    """Largest pts + duration of the stream's frames, in seconds (exact mode). No frame is played
    at this time."""
    num_frames_from_content: Optional[int]
    """Number of frames found by the scan (exact mode)."""
    duration_seconds: Optional[float]
    """end - begin of the content (exact mode); else the stream's header duration, else
    ``num_frames_from_header / average_fps_from_header``, else the container's duration."""
    begin_stream_seconds: Optional[float]
    """``begin_stream_seconds_from_content`` (exact mode); else the header's start time, else 0."""
    end_stream_seconds: Optional[float]
    """``end_stream_seconds_from_content`` (exact mode); else begin + duration."""
    num_frames: Optional[int]
    """The scanned count (exact mode); else the header's, else ``int(average_fps * duration)``."""
    average_fps: Optional[float]
    """num_frames / duration of the content (exact mode); else ``average_fps_from_header``."""


@dataclasses.dataclass(repr=False)
class AudioStreamHeaderMetadata(StreamMetadata):
    """What the container header says about an audio stream."""

    sample_rate: Optional[int]
    """Samples per second of the stream."""
    num_channels: Optional[int]
    """Number of channels of the stream."""
    sample_format: Optional[str]
    """FFmpeg's name of the sample format, e.g. ``"fltp"``."""


@dataclasses.dataclass(repr=False)
class AudioStreamMetadata(AudioStreamHeaderMetadata):
    """Metadata of a decoder's audio stream: the header and the values computed from it."""

    duration_seconds: Optional[float]
    """The stream's header duration, else the container's."""
    begin_stream_seconds: Optional[float]
    """The header's start time, else 0."""


@dataclasses.dataclass
class DemuxerMetadata:
    """What the container header says about the container itself (a Demuxer's ``metadata``)."""

    duration_seconds_from_header: Optional[float]
    """The container's duration in seconds (None when unknown)."""
    bit_rate_from_header: Optional[float]
    """The container's overall bit rate in bits per second (None when unknown)."""
    best_video_stream_index: Optional[int]
    """FFmpeg's best video stream (None without video)."""
    best_audio_stream_index: Optional[int]
    """FFmpeg's best audio stream (None without audio)."""

    def __repr__(self) -> str:
        lines = [f"{_INDENT}{f.name}: {_text(f.name, getattr(self, f.name))}\n" for f in dataclasses.fields(self)]
        return f"{type(self).__name__}:\n" + "".join(lines)


@dataclasses.dataclass
class ContainerMetadata(DemuxerMetadata):
    """A container and every stream in it (``get_container_metadata``)."""

    streams: list[StreamMetadata]
    """One entry per stream, indexed by stream index: VideoStreamHeaderMetadata,
    AudioStreamHeaderMetadata, or StreamMetadata for the others (``media_type`` tells them apart)."""

    def __repr__(self) -> str:
        """The dataclass form, ``ContainerMetadata(duration_seconds_from_header=2, ..., streams=[...])``,
        with TorchCodec's number format (whole floats without ".0")."""
        values = [f"{f.name}={_text(f.name, getattr(self, f.name)) if f.name != 'streams' else self.streams!r}"
                  for f in dataclasses.fields(self)]
        return f"{type(self).__name__}({', '.join(values)})"


def _header_fields(header: dict, media_type: str) -> dict[str, Any]:
    return dict(
        duration_seconds_from_header=header["duration_seconds_from_header"],
        begin_stream_seconds_from_header=header["begin_stream_seconds_from_header"],
        bit_rate=header["bit_rate"],
        codec=header["codec"],
        stream_index=header["stream_index"],
        media_type=media_type,
    )


def _header_duration(header: dict, num_frames: Optional[int], fps: Optional[float]) -> Optional[float]:
    """The duration when there is no scan: the stream's, else frames / fps, else the container's."""
    if header["duration_seconds_from_header"] is not None:
        return header["duration_seconds_from_header"]
    if num_frames is not None and fps:
        return num_frames / fps
    return header.get("duration_seconds_from_container")


def _display_size(header: dict) -> tuple[Any, Any]:
    """(width, height) of the output frames: the coded size turned by the display rotation."""
    width, height = header["width"], header["height"]
    if header["rotation"] is not None and round(header["rotation"]) % 180 != 0:
        width, height = height, width
    return width, height


def header_metadata(header: dict) -> StreamMetadata:
    """What the header says about one stream (a Demuxer._stream_header() dict): a
    VideoStreamHeaderMetadata, an AudioStreamHeaderMetadata, or a StreamMetadata for the others."""
    media_type = header["media_type"]
    fields = _header_fields(header, media_type)
    if media_type == "video":
        width, height = _display_size(header)
        return VideoStreamHeaderMetadata(
            **fields, width=width, height=height, num_frames_from_header=header["num_frames_from_header"],
            average_fps_from_header=header["average_fps_from_header"],
            pixel_aspect_ratio=header["pixel_aspect_ratio"], rotation=header["rotation"],
            color_primaries=header["color_primaries"], color_space=header["color_space"],
            color_transfer_characteristic=header["color_transfer_characteristic"],
            pixel_format=header["pixel_format"])
    if media_type == "audio":
        return AudioStreamHeaderMetadata(**fields, sample_rate=header["sample_rate"],
                                         num_channels=header["num_channels"], sample_format=header["sample_format"])
    return StreamMetadata(**fields)


def video_metadata(header: dict, content: Optional[tuple[Optional[float], Optional[float], int]]) -> VideoStreamMetadata:
    """VideoStreamMetadata from a Demuxer._stream_header() dict and (begin, end, count) of the
    content (None in approximate mode; (None, None, 0) for a scan that found no frame)."""
    width, height = _display_size(header)
    begin, end, count = content if content is not None else (None, None, None)
    fps, frames = header["average_fps_from_header"], header["num_frames_from_header"]
    if begin is not None and end is not None:
        duration = end - begin
        num_frames = count
        average_fps = count / duration if duration != 0 else fps
    else:
        duration = _header_duration(header, frames, fps)
        begin = header["begin_stream_seconds_from_header"] or 0.0
        end = begin + duration if duration is not None else None
        if count is not None:
            num_frames = count
        elif frames is not None:
            num_frames = frames
        else:
            num_frames = int(fps * duration) if fps is not None and duration is not None else None
        average_fps = fps
    return VideoStreamMetadata(
        **_header_fields(header, "video"),
        width=width,
        height=height,
        num_frames_from_header=frames,
        average_fps_from_header=fps,
        pixel_aspect_ratio=header["pixel_aspect_ratio"],
        rotation=header["rotation"],
        color_primaries=header["color_primaries"],
        color_space=header["color_space"],
        color_transfer_characteristic=header["color_transfer_characteristic"],
        pixel_format=header["pixel_format"],
        begin_stream_seconds_from_content=content[0] if content is not None else None,
        end_stream_seconds_from_content=content[1] if content is not None else None,
        num_frames_from_content=count,
        duration_seconds=duration,
        begin_stream_seconds=begin,
        end_stream_seconds=end,
        num_frames=num_frames,
        average_fps=average_fps,
    )


def audio_metadata(header: dict) -> AudioStreamMetadata:
    """AudioStreamMetadata from a Demuxer._stream_header() dict (or one with the same keys)."""
    begin = header["begin_stream_seconds_from_header"]
    return AudioStreamMetadata(
        **_header_fields(header, "audio"),
        sample_rate=header["sample_rate"],
        num_channels=header["num_channels"],
        sample_format=header["sample_format"],
        duration_seconds=_header_duration(header, None, None),
        begin_stream_seconds=begin if begin is not None else 0.0,
    )
