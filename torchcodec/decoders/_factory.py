"""Building the engines of VideoDecoder and AudioDecoder (TorchCodec's decoders/_decoder_utils.py is
the model): the public classes check their arguments and delegate.

``open_video`` and ``open_audio`` open the source through the index cache and choose the stream
(torchcodec._core._opening); for video, they build the frame index of the seek mode (the cache's,
a scan, a lazy scan, or the user's mappings), the device's packet decoder and converter (from the
device registry for a device other than the CPU), the VideoReader over them and its GopParallel
(sibling readers for requests over several GOPs); for audio, the AudioReader. :class:`VideoIndex` holds a video's index and what is taken from it (metadata, bounds),
reading a lazy index on as requests need it.
"""
from __future__ import annotations

import json
import math
import os
import threading
from dataclasses import dataclass
from typing import Any, Optional

from torchcodec import _index_cache as index_cache
from torchcodec._core._audio_reader import AudioReader
from torchcodec._core._demuxer import Demuxer, IndexScan
from torchcodec._core._devices import VideoParts, device_parts
from torchcodec._core._error import InvalidArgumentError
from torchcodec._core._frame_index import FrameIndex
from torchcodec._core._gop_parallel import GopParallel, worker_count
from torchcodec._core._metadata import AudioStreamMetadata, VideoStreamMetadata, audio_metadata, video_metadata
from torchcodec._core._opening import (exact_index, index_completed, open_stream, reading_demuxer, source_size,
                                       stream_header)
from torchcodec._core._packet_decoder import make_video_decoder
from torchcodec._core._video_reader import VideoReader
from torchcodec._logging import _LOGGER
from torchcodec._memory import check_request

_FFMPEG_AUTO_THREADS = 16          # the most threads FFmpeg starts for num_ffmpeg_threads=0
# The lazy index (exact mode): scan the file only as far as requests need (see VideoIndex).
# TORCHCODEC_LAZY_INDEX=0 scans every file whole at construction, as TorchCodec does.
LAZY_INDEX = os.environ.get("TORCHCODEC_LAZY_INDEX", "1").strip() != "0"
# How many frames past the furthest one a request needs a lazy index reads on: the reader looks
# at the frames after a target (the next pts, frames a decoder leaves out).
LAZY_MARGIN = 64
# Approximate audio seeks for every range only in streams longer than this (by their header): a
# shorter one is read as exact mode reads it (one pass, ranges behind it copied), which costs at most
# one decode of this much audio, where random ranges would cost a seek and a pre-roll each.
APPROXIMATE_AUDIO_SEEKS_AFTER_SECONDS = 120.0


@dataclass
class VideoEngine:
    """What ``open_video`` builds for one VideoDecoder."""

    stream_index: int
    header: dict                        # the stream's header (Demuxer._stream_header)
    demuxer: Demuxer                    # the one the reader reads from
    reader: VideoReader
    index: "VideoIndex"
    parts: Optional[VideoParts]         # the device's decoder and converter; None on the CPU
    parallel: GopParallel               # decodes requests over several GOPs with sibling readers (CPU)
    from_cache: bool                    # the index cache held this file's probe state
    lock: threading.Lock                # held while the reader decodes or a lazy index reads on


def open_video(source: Any, stream_index: Optional[int], num_threads: int, device: tuple[str, Optional[int]],
               seek_mode: str, custom_frame_mappings: Any) -> VideoEngine:
    """The engine of ``VideoDecoder(source, ...)`` (arguments as checked there; ``device`` as
    ``parse_device`` returns it)."""
    cached = index_cache.lookup(source)
    opened, stream_index, header = open_stream(source, stream_index, "video", cached.probe if cached else None)
    # Decoding threads are started when the codec opens: refuse absurd counts before that.
    check_request(f"num_ffmpeg_threads={num_threads}", threads=num_threads or _FFMPEG_AUTO_THREADS,
                  frame_size=(header["height"] or 0, header["width"] or 0))
    scan: Optional[IndexScan] = None
    scanned = False
    if custom_frame_mappings is not None:
        index = index_from_mappings(custom_frame_mappings, stream_index, header["time_base"])
    elif seek_mode == "exact":
        index = cached.index(stream_index) if cached and opened.probe_skipped else None
        if index is None:
            # Lazy where the cache cannot give the index: a file it knows (a probe state, opened
            # before) without one is scanned whole, once, and the index kept for later opens.
            index, scan = exact_index(opened, stream_index, LAZY_INDEX)
            scanned = True
    else:
        index = None
    demuxer = reading_demuxer(opened, scanned)
    if scan is not None and demuxer is opened:
        scan.complete()                 # no second demuxer to decode from (a URL): scan it all now
    # A demuxer that has read nothing: the reader need not seek first. Only an index whose
    # decoder reads from a demuxer opened from the probe state is cached (reading_demuxer).
    at_start = demuxer is not opened or not scanned
    if cached:
        cached.remember(opened, {stream_index: index} if scanned and demuxer.probe_skipped and scan is None else {})
    clockwise = (-round(header["rotation"])) % 360 if header["rotation"] is not None else 0
    # The blocks: one demuxer, the stream's packet decoder and a colour converter, which the reader drives.
    name, device_index = device
    parts = None
    if device_index is not None:
        parts = device_parts(name).video_parts(device_index, demuxer, stream_index, num_threads)
        decoder, converter = parts.decoder, parts.converter
    else:
        decoder, converter = make_video_decoder(demuxer, stream_index, num_threads), None
    reader = VideoReader(demuxer, stream_index, index, clockwise if clockwise in (90, 180, 270) else 0,
                         at_start, decoder, converter)
    lock = threading.Lock()
    frames = VideoIndex(stream_index, header, index, scan, cached if scan is not None else None, lock)
    # GOP-parallel decoding (CPU, exact index): num_ffmpeg_threads=1 keeps one reader on one thread.
    parallel = GopParallel(reader, demuxer, worker_count(num_threads) if parts is None and num_threads != 1 else 1)
    return VideoEngine(stream_index, header, demuxer, reader, frames, parts, parallel, opened.probe_skipped, lock)


class VideoIndex:
    """A VideoDecoder's frame index (None in approximate mode), its metadata, and the bounds taken
    from them; a lazy index (``scan``) is read on by ``read`` until it reaches the end.

    A lazy index gives the answers of a whole scan: its entries are final (IndexBuilder), and each
    request reads on past the furthest frame it needs (``LAZY_MARGIN``) before the reader looks at
    them. Once complete, the metadata and bounds are taken and the index is stored in the cache.
    """

    def __init__(self, stream_index: int, header: dict, index: Optional[FrameIndex], scan: Optional[IndexScan],
                 cached: Optional[index_cache.CachedOpen], lock: threading.Lock) -> None:
        self.stream_index = stream_index
        self.header = header
        self.index = index
        self.scan = scan                # until it reaches the end
        self.cached = cached            # told the index once it is complete
        self.reordered_late = False     # the lazy index ended out of order, after its start was used
        self.metadata: Optional[VideoStreamMetadata] = None
        self.num_frames = self.begin = self.end = None     # a lazy index: until it is complete
        self.lock = lock                # the engine's: the reader reads the index that a scan extends
        if scan is None:
            self.take_bounds()

    def take_bounds(self) -> None:
        """The metadata and the bounds, from the header and the complete index (if any). The bounds
        are taken once, as TorchCodec does: metadata fields can be assigned afterwards."""
        index = self.index
        content = None
        if index is not None and len(index) > 0:
            begin, end = index.content_bounds()
            content = (begin, end, len(index))
        elif index is not None:
            content = (None, None, 0)
        self.metadata = video_metadata(self.header, content)
        self.num_frames = self.metadata.num_frames
        self.begin = self.metadata.begin_stream_seconds
        self.end = self.metadata.end_stream_seconds

    def read(self, reader: GopParallel, demuxer: Demuxer, how: str, *args: Any) -> None:
        """Read the lazy index on (``IndexScan.cover_frames``, ``cover_seconds`` or ``complete``);
        once it reaches the end, take the metadata and bounds and store the index in the cache."""
        scan = self.scan
        if scan is None:
            return
        with self.lock:
            if self.scan is not scan:
                return                      # another thread completed it
            getattr(scan, how)(*args)
            if not scan.done:
                return
            self.reordered_late = index_completed(scan, reader)
            if self.reordered_late:
                _LOGGER.warning("the frame index of stream %d changed after its start was used: packets late "
                                "in the file are out of order, and frames returned before may differ from "
                                "those of seek_mode='exact' with TORCHCODEC_LAZY_INDEX=0", self.stream_index)
            self.take_bounds()
            self.scan = None
        if self.cached is not None:
            self.cached.remember(demuxer, {self.stream_index: self.index})
            self.cached = None


def index_from_mappings(mappings: Any, stream_index: int, time_base: Any) -> FrameIndex:
    """A FrameIndex from ffprobe ``-show_frames -of json`` output (str, bytes or file object)."""
    if hasattr(mappings, "read"):
        mappings = mappings.read()
    if not isinstance(mappings, (str, bytes, bytearray)):
        raise TypeError(f"custom_frame_mappings must be a JSON str, bytes or a file object, "
                        f"not {type(mappings).__name__}")
    try:
        data = json.loads(mappings if isinstance(mappings, str) else mappings.decode("utf-8"))
    except ValueError as e:
        raise ValueError(f"Invalid custom frame mappings: {e}. It should be the JSON output of ffprobe "
                         f"-show_frames -of json, as a str, bytes or a file object.") from None
    if not isinstance(data, dict) or not isinstance(data.get("frames"), list):
        raise ValueError("Invalid custom frame mappings. The input is empty or missing the required 'frames' key.")
    frames = data["frames"]
    pts, durations, keys = [], [], []
    for number, frame in enumerate(frames):
        if not isinstance(frame, dict):
            raise ValueError(f"Invalid custom frame mappings. Each entry of 'frames' must be a JSON object, "
                             f"got {frame!r}")
        if frame.get("stream_index", stream_index) != stream_index or frame.get("media_type", "video") != "video":
            continue
        try:
            pts.append(int(frame["pts"] if "pts" in frame else frame["pkt_pts"]))
            durations.append(int(frame["duration"] if "duration" in frame else frame["pkt_duration"]))
            keys.append(bool(int(frame["key_frame"])))
        except KeyError as e:
            raise ValueError(f"Invalid custom frame mappings. The 'pts'/'pkt_pts', 'duration'/'pkt_duration', and "
                             f"'key_frame' keys are required in the frame metadata (frame {number} lacks "
                             f"{e}).") from None
        except (TypeError, ValueError, OverflowError) as e:     # null, "x", 1e400...
            raise ValueError(f"Invalid custom frame mappings. Frame {number} has a value that is not an "
                             f"integer: {e}") from None
    if not pts:
        raise ValueError(f"Invalid custom frame mappings: no frame of video stream {stream_index}")
    try:
        return FrameIndex.from_lists(time_base, pts, durations, keys)
    except OverflowError:
        raise ValueError("Invalid custom frame mappings: a pts or duration does not fit in 64 bits") from None


def check_approximate_mode(frames: VideoIndex) -> None:
    """Refuse approximate mode (no index) for a stream whose header gives no frame count or rate."""
    if frames.index is not None:
        return
    metadata = frames.metadata
    if frames.num_frames is None:
        raise InvalidArgumentError(f"Cannot use approximate mode: the number of frames of stream "
                                   f"{frames.stream_index} is not in its header; use seek_mode='exact'")
    rate = metadata.average_fps
    if rate is None or not math.isfinite(rate) or not rate > 0:
        raise InvalidArgumentError(
            f"Cannot use approximate mode since we couldn't find the average fps from the metadata: stream "
            f"{frames.stream_index} has no usable frame rate in its header (average_fps is "
            f"{metadata.average_fps}); use seek_mode='exact', which reads the timestamps from the file")


@dataclass
class AudioEngine:
    """What ``open_audio`` builds for one AudioDecoder."""

    stream_index: int
    demuxer: Demuxer                    # the one the reader reads from
    reader: AudioReader
    metadata: AudioStreamMetadata
    source_size: Optional[int]          # bytes; None when unknown


def open_audio(source: Any, stream_index: Optional[int], sample_rate: Optional[int], num_channels: Optional[int],
               seek_mode: str) -> AudioEngine:
    """The engine of ``AudioDecoder(source, ...)`` (arguments as checked there)."""
    cached = index_cache.lookup(source)
    opened, stream_index, _ = open_stream(source, stream_index, "audio", cached.probe if cached else None)
    if cached:
        cached.remember(opened, {})
    demuxer = reading_demuxer(opened, scanned=False)
    header = stream_header(demuxer, stream_index)
    # The stream's duration, else the container's (Matroska gives streams none); unknown: long.
    duration = header["duration_seconds_from_header"] or demuxer._container_header()["duration_seconds_from_header"]
    seeks = duration is None or duration > APPROXIMATE_AUDIO_SEEKS_AFTER_SECONDS
    reader = AudioReader(demuxer, stream_index, int(sample_rate or 0), int(num_channels or 0),
                         seek_mode == "approximate" and seeks)
    return AudioEngine(stream_index, demuxer, reader, audio_metadata(header), source_size(demuxer))
