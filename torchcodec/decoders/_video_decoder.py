"""VideoDecoder: TorchCodec's video decoding API over the Cython engine."""
from __future__ import annotations

import array
import json
import math
import numbers
import os
import threading
from collections.abc import Iterator, Sequence
from typing import Any, Optional, Union

from torchcodec import _bridge
from torchcodec._core._demuxer import Demuxer
from torchcodec._core._frame_index import FrameIndex
from torchcodec._core._video import Match, VideoStream
from torchcodec._frame import Frame, FrameBatch
from torchcodec._source import SourceLike, open_source
from torchcodec.decoders import _cuda
from torchcodec.decoders._common import Reopenable, choose_stream
from torchcodec.decoders._metadata import VideoStreamMetadata, video_metadata
from torchcodec.transforms._decoder_transforms import Resize, convert_transforms, make_plan

_DIMENSION_ORDERS = ("NCHW", "NHWC")
_SEEK_MODES = ("exact", "approximate")
_DTYPES = ("uint8", "float32")


class VideoDecoder(Reopenable):
    """Decode the frames of one video stream.

    Args:
        source: a path (str or pathlib.Path) or URL; bytes, bytearray, memoryview or a 1-D uint8
            array of encoded bytes (read without copying); or a binary file object with
            ``read(n)`` and ``seek(offset, whence)``.
        stream_index: absolute index of the video stream; None picks FFmpeg's best video stream.
        dimension_order: "NCHW" (frames are (3, H, W)) or "NHWC" ((H, W, 3)).
        num_ffmpeg_threads: decoding threads; 0 lets FFmpeg choose.
        device: None or "cpu"; "cuda" (device 0) or "cuda:N" decodes with NVDEC (or FFmpeg's CUDA
            hwaccel, see ``set_cuda_backend``) and converts on that GPU: frames are CUDA torch
            tensors (torch bridge), cupy arrays (cupy, the default without torch) or torchcodec
            device buffers (DLPack / __cuda_array_interface__), written on the library's current
            stream. A stream NVDEC cannot decode is decoded on the CPU and converted on the GPU
            (see ``cpu_fallback``). RuntimeError saying why when CUDA cannot be used here.
        seek_mode: "exact" scans the file at construction (exact frame count and timestamps, correct
            on variable frame rate) or "approximate" trusts the header (frame i is at begin + i / fps).
        transforms: a sequence of ``torchcodec.transforms`` (Resize, CenterCrop, RandomCrop) or
            torchvision v2 Resize/CenterCrop/RandomCrop objects, applied in order to every frame
            after rotation, while decoding. Output frames have the size of the last transform;
            ``metadata`` keeps the stream's size. RandomCrop places are drawn here, once.
        output_dtype: "uint8" (0..255), "float32" (0..1, from 16-bit RGB / 65535) or "auto" (float32
            when the source has more than 8 bits per component). numpy/torch dtypes are accepted.
        custom_frame_mappings: the JSON of ``ffprobe -show_frames -of json`` (str, bytes or a file
            object) for this stream: exact-mode accuracy without the scan.

    Frames are RGB. Errors: TypeError for a bad source type, ValueError for bad arguments,
    IndexError for out-of-range frames and times (see each method).
    """

    def __init__(
        self,
        source: SourceLike,
        *,
        stream_index: Optional[int] = None,
        dimension_order: str = "NCHW",
        num_ffmpeg_threads: int = 1,
        device: Any = None,
        seek_mode: str = "exact",
        transforms: Optional[Sequence[Any]] = None,
        output_dtype: Any = "uint8",
        custom_frame_mappings: Any = None,
    ) -> None:
        if dimension_order not in _DIMENSION_ORDERS:
            raise ValueError(f"Invalid dimension order ({dimension_order}). Supported values are NCHW, NHWC.")
        if seek_mode not in _SEEK_MODES:
            raise ValueError(f"Invalid seek mode ({seek_mode}). Supported values are exact, approximate.")
        if custom_frame_mappings is not None and seek_mode == "approximate":
            raise ValueError("custom_frame_mappings gives exact timestamps; it cannot be combined with "
                             "seek_mode='approximate' (use the default seek_mode='exact')")
        if not isinstance(num_ffmpeg_threads, numbers.Integral) or num_ffmpeg_threads < 0:
            raise ValueError(f"num_ffmpeg_threads must be an int >= 0, got {num_ffmpeg_threads!r}")
        self._device_index = _cuda.parse_device(device)
        if self._device_index is not None:
            _cuda.check_cuda_usable(device, bool(transforms))
        transforms = convert_transforms(transforms)      # refused before the source is opened

        self._dimension_order = dimension_order
        self._seek_mode = seek_mode
        self._lock = threading.Lock()
        if custom_frame_mappings is not None and hasattr(custom_frame_mappings, "read"):
            custom_frame_mappings = custom_frame_mappings.read()       # kept, for pickling and fork
        # What pickling and a forked child need to open the same stream again.
        self._reopen = dict(source=source, stream_index=stream_index, dimension_order=dimension_order,
                            num_ffmpeg_threads=num_ffmpeg_threads, device=device, seek_mode=seek_mode,
                            output_dtype=output_dtype, custom_frame_mappings=custom_frame_mappings,
                            transforms=None)
        self._pid = os.getpid()
        demuxer_input, name = open_source(source)
        self._demuxer = demuxer = Demuxer(demuxer_input, name)
        self.stream_index = choose_stream(demuxer, stream_index, "video")
        header = demuxer.stream_header(self.stream_index)

        if custom_frame_mappings is not None:
            index = _index_from_mappings(custom_frame_mappings, self.stream_index, header["time_base"])
        elif seek_mode == "exact":
            index = demuxer.scan(self.stream_index)
        else:
            index = None
        clockwise = (-round(header["rotation"])) % 360 if header["rotation"] is not None else 0
        self._cuda = None
        decoder = converter = None
        if self._device_index is not None:
            self._cuda = _cuda.CudaParts(self._device_index, demuxer, self.stream_index, int(num_ffmpeg_threads))
            decoder, converter = self._cuda.decoder, self._cuda.converter
        self._engine = VideoStream(demuxer, self.stream_index, index, int(num_ffmpeg_threads),
                                   clockwise if clockwise in (90, 180, 270) else 0,
                                   index is None or custom_frame_mappings is not None, decoder, converter)
        self._index: Optional[FrameIndex] = index
        content = None
        if index is not None and len(index) > 0:
            begin, end = index.content_bounds()
            content = (begin, end, len(index))
        elif index is not None:
            content = (None, None, 0)
        self.metadata: VideoStreamMetadata = video_metadata(header, content)
        self._time_base = float(header["time_base"])
        self._output_dtype = _resolve_dtype(output_dtype, header["bits_per_component"])
        self._num_frames = self.metadata.num_frames
        if self._num_frames is None:
            raise ValueError(f"cannot tell the number of frames of stream {self.stream_index} from its header; "
                             f"use seek_mode='exact'")
        rate = self.metadata.average_fps
        if index is None and not (rate is not None and math.isfinite(rate) and rate > 0):
            raise ValueError(f"cannot tell the frame rate of stream {self.stream_index} from its header "
                             f"(approximate mode places frame i at begin + i / fps); use seek_mode='exact'")
        if transforms is not None and not (self.metadata.height and self.metadata.width):
            raise ValueError(f"stream {self.stream_index} has no frame size in its header: transforms need one")
        applied, stages, (self._height, self._width) = make_plan(transforms, (self.metadata.height, self.metadata.width))
        self._engine.set_transforms(stages, single_resize=len(applied) == 1 and isinstance(applied[0], Resize))
        # Kept as applied (random crops drawn), so that a pickled or forked decoder crops the same place.
        self._reopen["transforms"] = applied or None

    def _engines(self) -> tuple:
        return (self._engine, self._demuxer)

    # ---- the Sequence protocol ----------------------------------------------------------------

    def __len__(self) -> int:
        return self._num_frames

    def __getitem__(self, key: Union[numbers.Integral, slice]) -> Any:
        """``decoder[i]``: the frame data at index i (negative allowed); ``decoder[a:b:s]``: a batch's data."""
        if isinstance(key, numbers.Integral) and not isinstance(key, bool):
            return self.get_frame_at(int(key)).data
        if isinstance(key, slice):
            return self._frames_at_indices(self._slice_indices(key.start, key.stop, key.step)).data
        raise TypeError(f"Unsupported key type: {type(key).__name__}. Supported types are int and slice.")

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self.get_frame_at(i).data

    @property
    def cpu_fallback(self) -> _cuda.CpuFallbackStatus:
        """Whether a CUDA decoder decodes on the CPU, and why: falsy when it does not (and always for
        CPU decoders); ``str()`` says which and why, ``.reason`` gives the reason alone."""
        if self._cuda is None:
            return _cuda.CpuFallbackStatus(backend="CPU")
        return self._cuda.fallback_status()

    @property
    def device(self) -> str:
        """Where frames are: "cpu" or "cuda:N"."""
        return "cpu" if self._device_index is None else f"cuda:{self._device_index}"

    # ---- by index ---------------------------------------------------------------------------

    def get_frame_at(self, index: int, *, out: Any = None) -> Frame:
        """The frame at ``index`` (negative counts from the end); IndexError when out of range.

        ``out``: a writable CPU array of the frame's shape and dtype (numpy, torch, or any buffer)
        that receives the frame in place and is returned as ``Frame.data``.
        """
        batch = self._frames_at_indices([self._normalize_index(index)], _one_frame_batch(out))
        return _single_frame(batch, out)

    def get_frames_at(self, indices: Sequence[int], *, out: Any = None) -> FrameBatch:
        """Frames at ``indices`` (any order, duplicates and negatives allowed), in that order.

        ``out``: a writable CPU array of shape (N, 3, H, W) or (N, H, W, 3) (per dimension_order)
        and the output dtype, filled in place and returned as ``FrameBatch.data``. The other
        batch methods accept it too.
        """
        return self._frames_at_indices([self._normalize_index(i) for i in _as_int_list(indices)], out)

    def get_frames_in_range(self, start: int, stop: int, step: int = 1, *, out: Any = None) -> FrameBatch:
        """Frames ``start, start + step, ...`` before ``stop``, clamped like Python slicing."""
        return self._frames_at_indices(self._slice_indices(start, stop, step), out)

    # ---- by time ------------------------------------------------------------------------------

    def get_frame_played_at(self, seconds: float) -> Frame:
        """The frame on screen at ``seconds``; IndexError outside [begin_stream_seconds, end_stream_seconds)."""
        seconds = float(seconds)
        if not self._in_stream(seconds):
            raise IndexError(f"Invalid pts in seconds: {seconds}. It must be greater than or equal to "
                             f"{self.metadata.begin_stream_seconds} and less than {self.metadata.end_stream_seconds}.")
        return _single_frame(self._frames_played_at([seconds]))

    def get_frames_played_at(self, seconds: Sequence[float], *, out: Any = None) -> FrameBatch:
        """The frames on screen at each of ``seconds``; RuntimeError if one lies outside the stream."""
        times = [float(t) for t in seconds]
        for t in times:
            if not self._in_stream(t):
                raise RuntimeError(f"frame pts is {t}; must be greater than or equal to "
                                   f"{self.metadata.begin_stream_seconds} and less than {self.metadata.end_stream_seconds}.")
        return self._frames_played_at(times, out)

    def get_frames_played_in_range(self, start_seconds: float, stop_seconds: float,
                                   fps: Optional[float] = None, *, out: Any = None) -> FrameBatch:
        """Frames on screen during [start_seconds, stop_seconds).

        Without ``fps``: every frame shown in the interval, where frame i is shown from its pts until
        the next frame's pts (so the frame on screen at ``start_seconds`` is included, and a frame
        whose pts is ``stop_seconds`` is not). With ``fps``: ``round((stop - start) * fps)`` frames
        sampled at ``start + k / fps``, with those times as pts and ``1 / fps`` as durations.
        ValueError when start > stop or the interval leaves the stream.
        """
        start, stop = float(start_seconds), float(stop_seconds)
        begin, end = self.metadata.begin_stream_seconds, self.metadata.end_stream_seconds
        if start > stop:
            raise ValueError(f"Invalid start seconds: {start}. It must be less than or equal to stop seconds ({stop}).")
        if not self._in_stream(start):
            raise ValueError(f"Invalid start seconds: {start}. It must be greater than or equal to {begin} and less than {end}.")
        if end is not None and stop > end:
            raise ValueError(f"Invalid stop seconds: {stop}. It must be less than or equal to {end}.")
        if fps is not None:
            return self._resampled(start, stop, fps, out)
        if start == stop:
            return self._frames_at_indices([], out)
        if self._index is not None:
            first = max(self._index.index_played_at(start), 0)
            last = self._index.index_at_or_after(stop)          # exclusive
        else:
            rate = self.metadata.average_fps
            first = math.floor((start - begin) * rate + 1e-9)
            last = math.ceil((stop - begin) * rate - 1e-9)
        return self._frames_at_indices(list(range(first, min(last, len(self)))), out)

    def get_all_frames(self, fps: Optional[float] = None, *, out: Any = None) -> FrameBatch:
        """Every frame; with ``fps``, the stream resampled at that rate (see get_frames_played_in_range)."""
        if fps is None:
            return self._frames_at_indices(list(range(len(self))), out)
        return self.get_frames_played_in_range(self.metadata.begin_stream_seconds,
                                               self.metadata.end_stream_seconds, fps=fps, out=out)

    # ---- internals ----------------------------------------------------------------------------

    def _normalize_index(self, index: int) -> int:
        n = len(self)
        i = index + n if index < 0 else index
        if not 0 <= i < n:
            raise IndexError(f"Invalid frame index={index} for stream_index={self.stream_index}; "
                             f"must be in [-{n}, {n})")
        return i

    def _slice_indices(self, start: Optional[int], stop: Optional[int], step: Optional[int]) -> list[int]:
        if step is not None and step < 0:
            raise RuntimeError(f"Step must be greater than 0; is {step}")
        return list(range(*slice(start, stop, step).indices(len(self))))

    def _in_stream(self, seconds: float) -> bool:
        end = self.metadata.end_stream_seconds
        return self.metadata.begin_stream_seconds <= seconds and (end is None or seconds < end)

    def _frames_at_indices(self, indices: list[int], out: Any = None, **override: Any) -> FrameBatch:
        """Decode frames by (normalised) index; the one path to the engine for index requests."""
        if self._index is not None:
            index = self._index
            targets = array.array("q", [index.pts(i) for i in indices])
            return self._decode(targets, Match.AT_OR_AFTER, out=out, **override)
        begin, rate, tb = self.metadata.begin_stream_seconds, self.metadata.average_fps, self._time_base
        # Frame i is expected at begin + i / fps; the first frame from half a frame earlier on
        # is taken, so that rounding of the frame rate or the timestamps cannot skip a frame.
        targets = array.array("q", [round((begin + i / rate) / tb) for i in indices])
        return self._decode(targets, Match.AT_OR_AFTER, math.floor(0.5 / rate / tb), out=out, **override)

    def _frames_played_at(self, times: list[float], out: Any = None,
                          frame_duration: Optional[float] = None) -> FrameBatch:
        """Frames on screen at ``times``; with ``frame_duration`` (resampling), those times and that
        duration replace the frames' own pts and durations."""
        override = {"times": times, "frame_duration": frame_duration} if frame_duration is not None else {}
        if self._index is not None:
            indices = [max(self._index.index_played_at(t), 0) for t in times]
            return self._frames_at_indices(indices, out, **override)
        tb = self._time_base
        targets = array.array("q", [math.floor(t / tb + 1e-6) for t in times])
        return self._decode(targets, Match.PLAYED_AT, out=out, **override)

    def _resampled(self, start: float, stop: float, fps: float, out: Any = None) -> FrameBatch:
        if not fps > 0:
            raise ValueError(f"fps must be > 0, got {fps}")
        times = [start + k / fps for k in range(round((stop - start) * fps))]
        return self._frames_played_at(times, out, frame_duration=1.0 / fps)

    def _decode(self, targets: array.array, match: Match, tolerance: int = 0, out: Any = None,
                times: Optional[list[float]] = None, frame_duration: Optional[float] = None) -> FrameBatch:
        """Decode ``targets`` into a new array of the bridge's library, or into ``out``.

        ``times``/``frame_duration`` replace the frames' own pts and durations (resampling).
        """
        n = len(targets)
        name = _bridge.get_bridge()
        pts, durations = _bridge.float64_buffer(n), _bridge.float64_buffer(n)
        if self._cuda is not None:
            result = self._decode_cuda(targets, match, tolerance, out, name, pts, durations)
        else:
            result = self._decode_cpu(targets, match, tolerance, out, name, pts, durations)
        if times is not None:
            pts = array.array("d", times)
            durations = array.array("d", [frame_duration] * len(times))
        return FrameBatch(result, _bridge.float64_array(pts, name), _bridge.float64_array(durations, name))

    def _run_engine(self, targets: array.array, match: Match, tolerance: int, address: int, frame_stride: int,
                    row_stride: int, pts: array.array, durations: array.array, stream: Optional[int] = None) -> None:
        """The one call into the engine: decode ``targets`` into memory at ``address`` (NHWC rows);
        CUDA decoders write on ``stream`` (set under the same lock: threads may share a decoder)."""
        if not len(targets):
            return
        self._check_fork()
        with self._lock:
            if stream is not None:
                self._cuda.converter.set_stream(stream)
            self._engine.decode_at(targets, int(match), address, frame_stride, row_stride, self._height,
                                   self._width, self._output_dtype == "float32", pts, durations, tolerance)

    def _decode_cpu(self, targets: array.array, match: Match, tolerance: int, out: Any, name: str,
                    pts: array.array, durations: array.array) -> Any:
        n, height, width = len(targets), self._height, self._width
        data = memory = None
        if out is not None:
            memory, frame_stride, row_stride = self._check_out(out, n)
        if memory is None:            # a new array, or out= in a layout the engine cannot write
            data = _bridge.empty((n, height, width, 3), self._output_dtype, name)
            memory = _bridge.memory_of(data)
            frame_stride, row_stride = memory.strides[0], memory.strides[1]
            if self._dimension_order == "NCHW":
                data = _bridge.nchw(data)
        self._run_engine(targets, match, tolerance, memory.address, frame_stride, row_stride, pts, durations)
        if out is not None and data is not None:
            _bridge.copy_into(out, data)          # the one copy, for out= of another layout
        return _bridge.finish(out if out is not None else data, name)

    def _decode_cuda(self, targets: array.array, match: Match, tolerance: int, out: Any, name: str,
                     pts: array.array, durations: array.array) -> Any:
        """Decode into CUDA memory allocated by the bridge's library (or ``out``), on its current stream."""
        from torchcodec import _cuda_output
        shape = (len(targets), self._height, self._width, 3)
        target = None
        if out is not None:
            target = _cuda_output.wrap_out(out, shape, self._output_dtype, self._device_index, self._dimension_order)
        output = target if target is not None and target.packed else _cuda_output.allocate(
            shape, self._output_dtype, name, self._device_index)
        self._run_engine(targets, match, tolerance, output.address, output.strides[0], output.strides[1],
                         pts, durations, output.stream)
        data = output.finish()
        if output is target:
            return data
        if self._dimension_order == "NCHW":
            data = _bridge.nchw(data)
        if target is not None:                    # out= in a layout the engine cannot write: one copy
            _bridge.copy_into(out, data)
            return target.finish()
        return data

    def _expected_shape(self, n: int) -> tuple[int, int, int, int]:
        height, width = self._height, self._width
        return (n, 3, height, width) if self._dimension_order == "NCHW" else (n, height, width, 3)

    def _check_out(self, out: Any, n: int) -> tuple[Any, int, int]:
        """Check a CPU ``out``'s shape and dtype; return (memory, frame stride, row stride), or
        (None, 0, 0) when its layout is not packed RGB pixels (the caller then copies once)."""
        expected = self._expected_shape(n)
        memory = _bridge.memory_of(out)
        if memory.shape != expected:
            raise ValueError(f"out= has shape {memory.shape}; this request needs {expected} "
                             f"(dimension_order={self._dimension_order!r})")
        if memory.dtype != self._output_dtype:
            raise ValueError(f"out= has dtype {memory.dtype}; this decoder outputs {self._output_dtype}")
        strides = memory.strides
        if self._dimension_order == "NCHW":      # as (n, h, w, c)
            strides = (strides[0], strides[2], strides[3], strides[1])
        if _bridge.is_packed_rgb(strides, memory.itemsize):
            return memory, strides[0], strides[1]
        return None, 0, 0


def _single_frame(batch: FrameBatch, out: Any = None) -> Frame:
    """The Frame of a batch of one (its data is ``out`` when the caller gave one)."""
    return Frame(batch.data[0] if out is None else out, float(batch.pts_seconds[0]),
                 float(batch.duration_seconds[0]))


def _one_frame_batch(out: Any) -> Any:
    """A single frame's ``out`` viewed as a batch of one (same memory)."""
    if out is None:
        return None
    return out.unsqueeze(0) if type(out).__module__.startswith("torch") else out[None]


def _resolve_dtype(output_dtype: Any, bits_per_component: int) -> str:
    name = "auto" if output_dtype == "auto" else _bridge.dtype_name(output_dtype)
    if name == "auto":
        return "float32" if bits_per_component > 8 else "uint8"
    if name not in _DTYPES:
        raise ValueError(f"Invalid output_dtype ({output_dtype}). Supported values are uint8, float32, and 'auto'.")
    return name


def _as_int_list(indices: Any) -> list[int]:
    if hasattr(indices, "tolist") and not isinstance(indices, list):
        dtype = str(getattr(indices, "dtype", ""))
        if dtype and "int" not in dtype:
            raise TypeError(f"frame indices must be integers, got an array of {dtype}")
        indices = indices.tolist()
    result = []
    for i in indices:
        if isinstance(i, bool) or not isinstance(i, numbers.Integral):
            raise TypeError(f"frame indices must be integers, got {type(i).__name__} ({i!r})")
        result.append(int(i))
    return result


def _index_from_mappings(mappings: Any, stream_index: int, time_base: Any) -> FrameIndex:
    """A FrameIndex from ffprobe ``-show_frames -of json`` output (str, bytes or file object)."""
    if hasattr(mappings, "read"):
        mappings = mappings.read()
    if isinstance(mappings, (bytes, bytearray)):
        mappings = mappings.decode("utf-8")
    if not isinstance(mappings, str):
        raise TypeError(f"custom_frame_mappings must be a JSON str, bytes or a file object, "
                        f"not {type(mappings).__name__}")
    try:
        frames = json.loads(mappings)["frames"]
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"custom_frame_mappings is not ffprobe -show_frames JSON output: {e}") from None
    if not isinstance(frames, list) or not all(isinstance(frame, dict) for frame in frames):
        raise ValueError("custom_frame_mappings is not ffprobe -show_frames JSON output: 'frames' must be "
                         "a list of objects")
    pts, durations, keys = [], [], []
    for frame in frames:
        if frame.get("stream_index", stream_index) != stream_index or frame.get("media_type", "video") != "video":
            continue
        try:
            pts.append(int(frame["pts"] if "pts" in frame else frame["pkt_pts"]))
            durations.append(int(frame["duration"] if "duration" in frame else frame["pkt_duration"]))
            keys.append(bool(int(frame["key_frame"])))
        except KeyError as e:
            raise ValueError(f"custom_frame_mappings: a frame lacks {e} (needs pts or pkt_pts, "
                             f"duration or pkt_duration, and key_frame)") from None
        except (TypeError, ValueError, OverflowError) as e:     # null, "x", 1e400...
            raise ValueError(f"custom_frame_mappings: frame {len(pts)} has a value that is not an integer "
                             f"({e})") from None
    if not pts:
        raise ValueError(f"custom_frame_mappings has no frame of video stream {stream_index}")
    try:
        return FrameIndex.from_lists(time_base, pts, durations, keys)
    except OverflowError:
        raise ValueError("custom_frame_mappings: a pts or duration does not fit in 64 bits") from None
