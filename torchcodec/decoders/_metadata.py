"""Stream metadata: what the container header says, what a scan of the content found, and the
values computed from both (content preferred, header as the fallback)."""
from __future__ import annotations

import dataclasses
from fractions import Fraction
from typing import Optional


def _format(obj: object) -> str:
    names = [f.name for f in dataclasses.fields(obj)]  # type: ignore[arg-type]
    names += [name for name in dir(type(obj)) if isinstance(getattr(type(obj), name), property)]
    lines = [f"  {name}: {getattr(obj, name)}" for name in names]
    return f"{type(obj).__name__}:\n" + "\n".join(lines) + "\n"


@dataclasses.dataclass
class StreamMetadata:
    """Fields common to every stream. Times are in seconds; ``None`` when unknown."""

    duration_seconds_from_header: Optional[float]
    begin_stream_seconds_from_header: Optional[float]
    bit_rate: Optional[int]
    codec: Optional[str]
    stream_index: int
    media_type: str = ""

    def __repr__(self) -> str:
        return _format(self)


@dataclasses.dataclass(repr=False)
class VideoStreamMetadata(StreamMetadata):
    """Metadata of a video stream.

    ``width``/``height`` are the size of the output frames, i.e. after the display rotation.
    ``rotation`` is the display-matrix rotation in degrees (counter-clockwise, as FFmpeg's
    ``av_display_rotation_get``), or None. ``*_from_content`` come from the exact-mode scan (or
    custom frame mappings) and are None in approximate mode.
    """

    begin_stream_seconds_from_content: Optional[float] = None
    end_stream_seconds_from_content: Optional[float] = None
    width: Optional[int] = None
    height: Optional[int] = None
    num_frames_from_header: Optional[int] = None
    num_frames_from_content: Optional[int] = None
    average_fps_from_header: Optional[float] = None
    pixel_aspect_ratio: Optional[Fraction] = None
    rotation: Optional[float] = None
    color_primaries: Optional[str] = None
    color_space: Optional[str] = None
    color_transfer_characteristic: Optional[str] = None
    pixel_format: Optional[str] = None

    @property
    def begin_stream_seconds(self) -> float:
        """First pts (content), else the header's start time, else 0."""
        if self.begin_stream_seconds_from_content is not None:
            return self.begin_stream_seconds_from_content
        if self.begin_stream_seconds_from_header is not None:
            return self.begin_stream_seconds_from_header
        return 0.0

    @property
    def end_stream_seconds(self) -> Optional[float]:
        """max(pts + duration) (content), else begin + the header's duration."""
        if self.end_stream_seconds_from_content is not None:
            return self.end_stream_seconds_from_content
        if self.duration_seconds_from_header is None:
            return None
        return self.begin_stream_seconds + self.duration_seconds_from_header

    @property
    def duration_seconds(self) -> Optional[float]:
        if self.end_stream_seconds_from_content is not None:
            return self.end_stream_seconds_from_content - self.begin_stream_seconds
        return self.duration_seconds_from_header

    @property
    def num_frames(self) -> Optional[int]:
        """Scanned frame count, else the header's, else int(average_fps * duration)."""
        if self.num_frames_from_content is not None:
            return self.num_frames_from_content
        if self.num_frames_from_header is not None:
            return self.num_frames_from_header
        if self.average_fps_from_header is not None and self.duration_seconds_from_header is not None:
            return int(self.average_fps_from_header * self.duration_seconds_from_header)
        return None

    @property
    def average_fps(self) -> Optional[float]:
        """num_frames / duration (content), else the header's frame rate."""
        if self.num_frames_from_content is not None and self.end_stream_seconds_from_content is not None:
            duration = self.end_stream_seconds_from_content - self.begin_stream_seconds
            if duration > 0:
                return self.num_frames_from_content / duration
        return self.average_fps_from_header


@dataclasses.dataclass(repr=False)
class AudioStreamMetadata(StreamMetadata):
    """Metadata of an audio stream."""

    sample_rate: Optional[int] = None
    num_channels: Optional[int] = None
    sample_format: Optional[str] = None

    @property
    def begin_stream_seconds(self) -> float:
        """The header's start time, else 0."""
        return self.begin_stream_seconds_from_header if self.begin_stream_seconds_from_header is not None else 0.0

    @property
    def duration_seconds(self) -> Optional[float]:
        """The header's duration (None when the header has none)."""
        return self.duration_seconds_from_header


def video_metadata(header: dict, content: Optional[tuple[float, float, int]]) -> VideoStreamMetadata:
    """Build VideoStreamMetadata from a Demuxer.stream_header() dict and (begin, end, count) of content."""
    width, height = header["width"], header["height"]
    if header["rotation"] is not None and round(header["rotation"]) % 180 != 0:
        width, height = height, width
    begin, end, count = content if content is not None else (None, None, None)
    return VideoStreamMetadata(
        duration_seconds_from_header=header["duration_seconds_from_header"],
        begin_stream_seconds_from_header=header["begin_stream_seconds_from_header"],
        bit_rate=header["bit_rate"],
        codec=header["codec"],
        stream_index=header["stream_index"],
        media_type="video",
        begin_stream_seconds_from_content=begin,
        end_stream_seconds_from_content=end,
        width=width,
        height=height,
        num_frames_from_header=header["num_frames_from_header"],
        num_frames_from_content=count,
        average_fps_from_header=header["average_fps_from_header"],
        pixel_aspect_ratio=header["pixel_aspect_ratio"],
        rotation=header["rotation"],
        color_primaries=header["color_primaries"],
        color_space=header["color_space"],
        color_transfer_characteristic=header["color_transfer_characteristic"],
        pixel_format=header["pixel_format"],
    )


def audio_metadata(header: dict) -> AudioStreamMetadata:
    return AudioStreamMetadata(
        duration_seconds_from_header=header["duration_seconds_from_header"],
        begin_stream_seconds_from_header=header["begin_stream_seconds_from_header"],
        bit_rate=header["bit_rate"],
        codec=header["codec"],
        stream_index=header["stream_index"],
        media_type="audio",
        sample_rate=header["sample_rate"],
        num_channels=header["num_channels"],
        sample_format=header["sample_format"],
    )
