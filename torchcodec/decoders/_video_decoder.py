"""VideoDecoder: TorchCodec's video decoding API over the Cython engine."""
from __future__ import annotations

import array
import math
import numbers
import os
from collections.abc import Iterator, Sequence
from typing import Any, Optional, Union

from torchcodec import _outputs
from torchcodec._core._color_converter import output_dtype_name
from torchcodec._core._devices import CpuFallbackStatus, device_parts, parse_device
from torchcodec._core._error import InvalidArgumentError
from torchcodec._core._metadata import VideoStreamMetadata, video_metadata
from torchcodec._core._packet_decoder import check_threads
from torchcodec._core._source import SourceLike
from torchcodec._core._video_reader import Match, Request
from torchcodec._frame import Frame, FrameBatch
from torchcodec._logging import _LOGGER, forwards_ffmpeg_log
from torchcodec._memory import check_request
from torchcodec.decoders._arguments import (as_index, as_index_list, as_seconds, as_seconds_list, check_fps,
                                            round_half_away_from_zero)
from torchcodec.decoders._factory import LAZY_MARGIN, check_approximate_mode, open_video
from torchcodec.decoders._reopenable import Reopenable
from torchcodec.transforms._decoder_transforms import Resize, convert_transforms, make_plan

_DIMENSION_ORDERS = ("NCHW", "NHWC")
_SEEK_MODES = ("exact", "approximate")


class VideoDecoder(Reopenable):
    """Decode the frames of one video stream.

    Args:
        source: a path (str or pathlib.Path) or URL; bytes, bytearray, memoryview or a 1-D uint8
            array of encoded bytes (read in place, not copied as TorchCodec does: it must not change
            while the decoder is used); or a binary file object with
            ``read(n)`` and ``seek(offset, whence)``.
        stream_index: absolute index of the video stream; None picks FFmpeg's best video stream.
        dimension_order: "NCHW" (frames are (3, H, W)) or "NHWC" ((H, W, 3)).
        num_ffmpeg_threads: decoding threads; 0 lets FFmpeg choose. Other than 1 (on the CPU, exact
            mode), a request over several GOPs is also split between sibling readers of the
            stream, one thread each (as many as the cores for 0): the same frames, decoded in
            parallel.
        device: None or "cpu"; "cuda" (device 0) or "cuda:N" decodes with NVDEC (or FFmpeg's CUDA
            hwaccel, see ``set_cuda_backend``) and converts on that GPU: frames are CUDA torch
            tensors (torch bridge), cupy arrays (cupy, the default without torch) or torchcodec
            device buffers (DLPack / __cuda_array_interface__), written on the library's current
            stream. A stream NVDEC cannot decode is decoded on the CPU and converted on the GPU
            (see ``cpu_fallback``). RuntimeError saying why when CUDA cannot be used here.
        seek_mode: "exact" scans the file at construction (exact frame count and timestamps, correct
            on variable frame rate) or "approximate" trusts the header: frame i is the first frame
            at or after begin + i / fps after a demuxer seek there (the next decoded frame when i
            follows the previous request's index), as TorchCodec 0.17 picks it; frames after a
            late seek or past the real end differ from exact mode's, or raise RuntimeError.
        transforms: a sequence of ``torchcodec.transforms`` (Resize, CenterCrop, RandomCrop) or
            torchvision v2 Resize/CenterCrop/RandomCrop objects, applied in order to every frame
            after rotation, while decoding; on CUDA fused into the colour conversion, with the CPU
            path's pixels. Output frames have the size of the last transform; ``metadata`` keeps
            the stream's size. RandomCrop places are drawn here, once.
        output_dtype: "uint8" (0..255), "float32" (0..1, from 16-bit RGB / 65535) or "auto" (float32
            when the source has more than 8 bits per component). numpy/torch dtypes are accepted.
        custom_frame_mappings: the JSON of ``ffprobe -show_frames -of json`` (str, bytes or a file
            object) for this stream: exact-mode accuracy without the scan.

    Frames are RGB. Errors: TypeError for a bad source type, ValueError for bad arguments,
    IndexError for out-of-range frames and times (see each method). Where TorchCodec raises
    RuntimeError instead (e.g. ``fps=0``, a float index in a list), the error is also a RuntimeError.
    A request that needs more memory than ``torchcodec.get_memory_limit()`` (frames, or decoding
    threads) raises MemoryError, also a RuntimeError, before allocating anything.
    """

    @forwards_ffmpeg_log
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
        num_ffmpeg_threads = check_threads(num_ffmpeg_threads)
        device_name, self._device_index = parse_device(device)
        if self._device_index is not None:
            device_parts(device_name).check_usable(device)
        transforms = convert_transforms(transforms)      # refused before the source is opened
        self._dimension_order, self._seek_mode = dimension_order, seek_mode
        if custom_frame_mappings is not None and hasattr(custom_frame_mappings, "read"):
            custom_frame_mappings = custom_frame_mappings.read()       # kept, for pickling and fork
        # What pickling and a forked child need to open the same stream again.
        self._reopen = dict(source=source, stream_index=stream_index, dimension_order=dimension_order,
                            num_ffmpeg_threads=num_ffmpeg_threads, device=device, seek_mode=seek_mode,
                            output_dtype=output_dtype, custom_frame_mappings=custom_frame_mappings,
                            transforms=None)
        self._pid = os.getpid()
        engine = open_video(source, stream_index, num_ffmpeg_threads, (device_name, self._device_index), seek_mode,
                            custom_frame_mappings)
        self.stream_index = engine.stream_index
        self._engine, self._demuxer, self._cuda = engine.reader, engine.demuxer, engine.parts
        self._gop = engine.parallel
        self._frames, self._lock, self._from_cache = engine.index, engine.lock, engine.from_cache
        header = engine.header
        # Approximate mode's grid, as the header gives it: frame i is expected at begin + i / fps.
        begin = header["begin_stream_seconds_from_header"]
        self._grid = (begin if begin is not None else 0.0, header["average_fps_from_header"])
        self._output_dtype = output_dtype_name(output_dtype)
        if self._output_dtype == "auto":
            self._output_dtype = "float32" if header["bits_per_component"] > 8 else "uint8"
        check_approximate_mode(self._frames)
        size = self._frames.metadata or video_metadata(header, None)    # the size is the header's either way
        if transforms is not None and not (size.height and size.width):
            raise InvalidArgumentError(f"stream {self.stream_index} has no frame size in its header: "
                                       f"transforms need one")
        applied, stages, (self._height, self._width) = make_plan(transforms, (size.height, size.width))
        self._gop.set_transforms(stages, single_resize=len(applied) == 1 and isinstance(applied[0], Resize))
        # Kept as applied (random crops drawn), so that a pickled or forked decoder crops the same place.
        self._reopen["transforms"] = applied or None
        if self._frames.scan is None:
            _LOGGER.debug("VideoDecoder created:\n%s", self.metadata)
        else:
            _LOGGER.debug("VideoDecoder created, its index to be read as requests need it (lazy index)")

    def _engines(self) -> tuple:
        return (self._engine, self._demuxer, self._frames.scan, self._gop)

    # ---- the metadata and bounds, and the lazy index ---------------------------------------------

    @property
    def metadata(self) -> VideoStreamMetadata:
        """The stream's VideoStreamMetadata (exact mode: from the whole index, which a lazy index
        then reads to the end of the file)."""
        if self._frames.metadata is None:
            self._read_index("complete")
        return self._frames.metadata

    @metadata.setter
    def metadata(self, value: VideoStreamMetadata) -> None:
        self._frames.metadata = value

    def _read_index(self, how: str, *args: Any) -> None:
        """Read a lazy index on (see VideoIndex.read), in the process that opened it."""
        if self._frames.scan is None:
            return
        self._check_fork()
        self._frames.read(self._gop, self._demuxer, how, *args)

    def _lower_bound(self) -> float:
        """The stream's begin bound: the first frame's pts (exact), read no further than it."""
        if self._frames.scan is not None:
            self._read_index("cover_frames", 1)
            if self._frames.scan is not None and len(self._frames.index):
                return self._frames.index.begin_stream_seconds_from_content
        return self._frames.begin

    def _ends_after(self, seconds: float, or_at: bool = False) -> bool:
        """Whether ``seconds`` is before the stream's end bound (``or_at``: or at it); a lazy index
        reads only until a frame ends later (the end is the latest end of a frame)."""
        if self._frames.scan is not None:
            if not _before(seconds, self._frames.scan.end_seconds, or_at):
                self._read_index("cover_seconds", seconds)
            if self._frames.scan is not None and _before(seconds, self._frames.scan.end_seconds, or_at):
                return True
            self._read_index("complete")
        return self._frames.end is None or _before(seconds, self._frames.end, or_at)

    def _cover_time(self, seconds: float) -> None:
        """Have a lazy index reach past ``seconds`` (and the margin), for a lookup by time."""
        if self._frames.scan is not None:
            self._read_index("cover_seconds", seconds, LAZY_MARGIN)

    # ---- the Sequence protocol ----------------------------------------------------------------

    def __len__(self) -> int:
        if self._frames.scan is not None:
            self._read_index("complete")
        return self._frames.num_frames

    def __getitem__(self, key: Union[int, slice]) -> Any:
        """``decoder[i]``: the frame data at index i (negative allowed; any integer type, numpy's
        included); ``decoder[a:b:s]``: a batch's data. TypeError for other keys."""
        if isinstance(key, numbers.Integral) and not isinstance(key, bool):
            return self.get_frame_at(int(key)).data
        if isinstance(key, slice):
            return self._frames_at_indices(self._slice_indices(key.start, key.stop, key.step)).data
        raise TypeError(f"Unsupported key type: {type(key).__name__}. Supported types are int and slice.")

    def __iter__(self) -> Iterator[Any]:
        for i in range(len(self)):
            yield self.get_frame_at(i).data

    @property
    def cpu_fallback(self) -> CpuFallbackStatus:
        """Whether a CUDA decoder decodes on the CPU, and why: falsy when it does not (and always for
        CPU decoders); ``str()`` says which and why, ``.reason`` gives the reason alone."""
        if self._cuda is None:
            return CpuFallbackStatus(backend="CPU")
        return self._cuda.fallback_status()

    @property
    def device(self) -> str:
        """Where frames are: "cpu" or "cuda:N"."""
        return "cpu" if self._device_index is None else f"cuda:{self._device_index}"

    # ---- by index ---------------------------------------------------------------------------

    def get_frame_at(self, index: int, *, out: Any = None) -> Frame:
        """Return the frame at ``index``.

        Args:
            index: the frame's index in presentation order: an int or anything with ``__index__``
                (numpy integers, 0-d integer tensors); negative counts from the end.
            out: optional writable CPU array of the frame's shape ((3, H, W) or (H, W, 3) per
                ``dimension_order``) and output dtype (numpy, torch, or any buffer); it receives
                the frame in place and is returned as ``Frame.data``.

        Returns:
            Frame: ``data`` of shape (3, H, W) (NCHW) or (H, W, 3) (NHWC), ``pts_seconds`` and
            ``duration_seconds`` as Python floats.

        Raises:
            IndexError: ``index`` is out of range, also after adding ``len(decoder)`` to a negative one.
            TypeError: ``index`` is not an integer (also a RuntimeError, as TorchCodec raises).
            TypeError, ValueError: ``out`` is not a writable array of the frame's shape and dtype.
        """
        batch = self._frames_at_indices([self._normalize_index(as_index(index))], _one_frame_batch(out))
        return _single_frame(batch, out)

    def get_frames_at(self, indices: Sequence[int], *, out: Any = None) -> FrameBatch:
        """Return the frames at ``indices``, in the order given.

        Indices may come in any order, repeat and be negative; each distinct frame is decoded once,
        in file order, straight into its slots of the batch.

        Args:
            indices: ints (a list or tuple, nested or not, or a single int), or a tensor/array of
                any real dtype, whose values are converted as TorchCodec does
                (``.to(torch.int64)``: floats truncated toward zero).
            out: optional writable CPU array of shape (N, 3, H, W) or (N, H, W, 3) (per
                ``dimension_order``) and the output dtype, filled in place and returned as
                ``FrameBatch.data``. Every batch method accepts it.

        Returns:
            FrameBatch: ``data`` of shape (N, 3, H, W) or (N, H, W, 3); ``pts_seconds`` and
            ``duration_seconds`` float64 arrays of shape (N,).

        Raises:
            IndexError: an index is out of range (or a NaN/infinite float in an array).
            TypeError: an index is not an integer in a list (also a RuntimeError, as in TorchCodec).
            MemoryError: the batch needs more than ``torchcodec.get_memory_limit()`` (also a RuntimeError).
        """
        given = as_index_list(indices)
        return self._frames_at_indices([self._normalize_index(i) for i in given], out, given)

    def get_frames_in_range(self, start: int, stop: int, step: int = 1, *, out: Any = None) -> FrameBatch:
        """Return the frames ``start, start + step, ...`` before ``stop``.

        Args:
            start: first index; clamped like Python slicing (``slice(start, stop, step).indices(len)``),
                negative counts from the end.
            stop: end index, excluded; clamped the same way.
            step: distance between indices (default 1).
            out: as in :meth:`get_frames_at`.

        Returns:
            FrameBatch: the frames, possibly none (an empty batch of shape (0, 3, H, W)).

        Raises:
            RuntimeError: ``step`` is negative, as in TorchCodec.
        """
        return self._frames_at_indices(self._slice_indices(start, stop, step), out)

    # ---- by time ------------------------------------------------------------------------------

    def get_frame_played_at(self, seconds: float) -> Frame:
        """Return the frame on screen at ``seconds``.

        The frame played at ``t`` is the one whose ``pts <= t < pts + duration`` (exact mode, or
        custom frame mappings); in approximate mode it is read from the header's frame-rate grid.

        Args:
            seconds: a time in seconds (int or float).

        Returns:
            Frame: the frame, with its own ``pts_seconds`` and ``duration_seconds``.

        Raises:
            IndexError: ``seconds`` lies outside ``[begin_stream_seconds, end_stream_seconds)``.
            TypeError: ``seconds`` is not a number (also a RuntimeError).
        """
        seconds = as_seconds("seconds", seconds)
        if not self._in_stream(seconds):
            len(self)                       # the bounds the message gives: a lazy index reads to the end
            raise IndexError(f"Invalid pts in seconds: {seconds}. It must be greater than or equal to "
                             f"{self._frames.begin} and less than {self._frames.end}.")
        if self._frames.index is None:
            requests = array.array("q", [Request.BY_TIME])
            return _single_frame(self._decode_requests(requests, array.array("d", [seconds]), [0]))
        self._cover_time(seconds)
        shown = self._frames.index.index_shown_at(seconds)
        if shown < 0:
            raise IndexError("Requested next frame while there are no more frames left to decode.")
        return _single_frame(self._frames_at_indices([shown]))

    def get_frames_played_at(self, seconds: Sequence[float], *, out: Any = None) -> FrameBatch:
        """Return the frames on screen at each of ``seconds``, in the order given.

        Args:
            seconds: times in seconds: a sequence (nested or not), a single number, or a
                tensor/array of numbers. Repeated frames are decoded once.
            out: as in :meth:`get_frames_at`.

        Returns:
            FrameBatch: one frame per time, with the frames' own pts and durations.

        Raises:
            RuntimeError: a time lies outside ``[begin_stream_seconds, end_stream_seconds)``, as in TorchCodec.
            ValueError: a time is not a number.
        """
        times = as_seconds_list(seconds)
        begin = self._lower_bound()
        for t in times:
            if not t >= begin:
                raise RuntimeError(f"frame pts is {t}; must be greater than or equal to {begin}.")
            if not self._ends_after(t):
                raise RuntimeError(f"frame pts is {t}; must be less than {self._frames.end}.")
        return self._frames_at_indices([self._index_played_at(t) for t in times], out)

    def get_frames_played_in_range(self, start_seconds: float, stop_seconds: float,
                                   fps: Optional[float] = None, *, out: Any = None) -> FrameBatch:
        """Return the frames on screen during the half-open interval [start_seconds, stop_seconds).

        Without ``fps``: every frame shown in the interval, where frame i is shown from its pts until
        the next frame's pts (so the frame on screen at ``start_seconds`` is included, and a frame
        whose pts is ``stop_seconds`` is not). With ``fps``: ``round((stop - start) * fps)`` frames
        (rounded half away from zero) sampled at ``start + k * (1 / fps)``, each the frame shown at
        that time, with those times as pts and ``1 / fps`` as durations.

        Args:
            start_seconds: start of the interval, included; within ``[begin_stream_seconds, end_stream_seconds)``.
            stop_seconds: end of the interval, excluded; at most ``end_stream_seconds``.
                ``start_seconds == stop_seconds`` gives an empty batch.
            fps: optional output frame rate (a positive finite number) to resample the interval at.
            out: as in :meth:`get_frames_at`.

        Returns:
            FrameBatch: the frames in presentation order.

        Raises:
            TypeError: a time is not a number (also a RuntimeError).
            ValueError: ``start_seconds > stop_seconds``, either is NaN, or the interval leaves the
                stream; ``fps`` is not a positive finite number (also a RuntimeError, as in TorchCodec).
            MemoryError: the batch needs more than ``torchcodec.get_memory_limit()`` (also a RuntimeError).
        """
        start, stop = as_seconds("start_seconds", start_seconds), as_seconds("stop_seconds", stop_seconds)
        if not start <= stop:
            nan = "; NaN is not a time" if math.isnan(start) or math.isnan(stop) else ""
            raise ValueError(f"Invalid start seconds: {start}. It must be less than or equal to stop seconds "
                             f"({stop}){nan}.")
        if not self._in_stream(start):
            len(self)
            raise ValueError(f"Invalid start seconds: {start}. It must be greater than or equal to {self._frames.begin} and "
                             f"less than {self._frames.end}.")
        if not self._ends_after(stop, or_at=True):
            raise ValueError(f"Invalid stop seconds: {stop}. It must be less than or equal to {self._frames.end}.")
        if start == stop:
            return self._frames_at_indices([], out)
        if fps is not None:
            return self._resampled(start, stop, check_fps(fps), out)
        return self._frames_at_indices(list(range(self._index_played_at(start), self._index_after(stop))), out)

    def get_all_frames(self, fps: Optional[float] = None, *, out: Any = None) -> FrameBatch:
        """Return every frame of the stream.

        Args:
            fps: optional frame rate to resample the whole stream at, as
                :meth:`get_frames_played_in_range` does between the stream's bounds.
            out: as in :meth:`get_frames_at`.

        Returns:
            FrameBatch: all ``len(decoder)`` frames (or the resampled ones).

        Raises:
            ValueError: ``fps`` is not a positive finite number (also a RuntimeError).
            MemoryError: the batch needs more than ``torchcodec.get_memory_limit()`` (also a RuntimeError).
        """
        if fps is None:
            return self._frames_at_indices(list(range(len(self))), out)
        len(self)                           # the bounds: a lazy index reads to the end
        return self.get_frames_played_in_range(self._frames.begin, self._frames.end, fps=fps, out=out)

    # ---- internals ----------------------------------------------------------------------------

    def _normalize_index(self, index: int) -> int:
        if self._frames.scan is not None and index >= 0:
            self._read_index("cover_frames", index + 1 + LAZY_MARGIN)
            if index < len(self._frames.index):
                return index
        n = len(self)
        i = index + n if index < 0 else index
        if i < 0:
            raise IndexError(f"Invalid frame index={index} for stream_index={self.stream_index}; negative indices "
                             f"must have an absolute value less than the number of frames ({n}).")
        if i >= n:
            raise IndexError(f"Invalid frame index={index} for stream_index={self.stream_index}; "
                             f"must be less than {n}.")
        return i

    def _slice_indices(self, start: Optional[int], stop: Optional[int], step: Optional[int]) -> list[int]:
        if step is not None and step < 0:
            raise RuntimeError(f"Step must be greater than 0; is {step}")
        if self._frames.scan is not None and stop is not None and stop >= 0 and (start is None or start >= 0):
            self._read_index("cover_frames", stop + LAZY_MARGIN)
            if stop <= len(self._frames.index):        # within the frames known: slicing does not clamp
                return list(range(*slice(start, stop, step).indices(stop)))
        return list(range(*slice(start, stop, step).indices(len(self))))

    def _in_stream(self, seconds: float) -> bool:
        return self._lower_bound() <= seconds and self._ends_after(seconds)

    def _index_played_at(self, seconds: float) -> int:
        """Index of the frame shown at ``seconds`` (exact: the last one whose pts is not later,
        as long as the next frame's pts is later; approximate: on the header's frame-rate grid)."""
        if self._frames.index is not None:
            self._cover_time(seconds)
            return max(self._frames.index.index_played_at(seconds), 0)
        begin, fps = self._grid_or_raise()
        return math.floor((seconds - begin) * fps)

    def _index_after(self, seconds: float) -> int:
        """Index of the first frame whose pts is at or after ``seconds`` (approximate: on the grid)."""
        if self._frames.index is not None:
            self._cover_time(seconds)
            return self._frames.index.index_at_or_after(seconds)
        begin, fps = self._grid_or_raise()
        return math.ceil((seconds - begin) * fps)

    def _grid_or_raise(self) -> tuple[float, float]:
        begin, fps = self._grid
        if not fps:
            raise RuntimeError("Cannot use approximate mode since we couldn't find the average fps from the "
                               "metadata (the stream's header has no frame rate): use seek_mode='exact'")
        return begin, fps

    def _frames_at_indices(self, indices: list[int], out: Any = None, given: Optional[list[int]] = None,
                           **override: Any) -> FrameBatch:
        """Decode frames by (normalised) index; the one path to the engine for index requests.

        Approximate mode decodes them as TorchCodec does (see VideoReader.decode_requests): in the
        order of the indices as ``given`` (negative ones not normalised yet), a repeated index once;
        an index past the end raises IndexError when its turn comes.
        """
        if self._frames.index is not None:
            if self._frames.scan is not None and indices:
                self._read_index("cover_frames", max(indices) + 1 + LAZY_MARGIN)
            index = self._frames.index
            targets = array.array("q", [index.pts(i) for i in indices])
            return self._decode(len(targets), lambda *memory: self._gop.decode_at(targets, int(Match.AT_OR_AFTER),
                                                                                  *memory), out, **override)
        keys = given if given is not None else indices
        order = sorted(range(len(indices)), key=keys.__getitem__)
        requests = array.array("q")
        for turn, k in enumerate(order):
            if not 0 <= indices[k] < len(self):
                # TorchCodec raises when it comes to this index, after decoding the ones before.
                if requests:
                    self._decode_requests(requests, array.array("d", bytes(8 * turn)), list(range(turn)))
                self._normalize_index(indices[k])
            requests.append(Request.REPEAT if turn and keys[k] == keys[order[turn - 1]] else indices[k])
        return self._decode_requests(requests, array.array("d", bytes(8 * len(requests))), order, out, **override)

    def _decode_requests(self, requests: array.array, seconds: array.array, positions: list[int], out: Any = None,
                         **override: Any) -> FrameBatch:
        """Approximate mode: decode ``requests`` (BY_TIME ones at ``seconds``) in order (see
        VideoReader.decode_requests); the frame of request k goes to slot ``positions[k]``."""
        slots = array.array("q", positions)
        return self._decode(len(requests), lambda *memory: self._engine.decode_requests(requests, seconds, slots,
                                                                                     *memory), out, **override)

    def _resampled(self, start: float, stop: float, fps: float, out: Any = None) -> FrameBatch:
        """``get_frames_played_in_range(start, stop, fps)``: the frames shown at start + k * (1 / fps)."""
        count = round_half_away_from_zero((stop - start) * fps)
        self._check_request(count, f"get_frames_played_in_range({start}, {stop}, fps={fps})")
        frame_duration = 1.0 / fps
        times = [start + k * frame_duration for k in range(count)]
        return self._frames_at_indices([self._index_played_at(t) for t in times], out,
                                       times=times, frame_duration=frame_duration)

    def _decode(self, n: int, run: Any, out: Any = None, times: Optional[list[float]] = None,
                frame_duration: Optional[float] = None) -> FrameBatch:
        """Decode ``n`` frames by ``run(address, frame_stride, row_stride, height, width,
        as_float, pts, durations)`` into a new array of the bridge's library, or into ``out``.

        ``times``/``frame_duration`` replace the frames' own pts and durations (resampling).
        """
        self._check_request(n, "decoding")
        name = _outputs.get_bridge()
        pts, durations = _outputs.float64_buffer(n), _outputs.float64_buffer(n)
        if self._cuda is not None:
            result = self._decode_cuda(n, run, out, name, pts, durations)
        else:
            result = self._decode_cpu(n, run, out, name, pts, durations)
        if times is not None:
            pts = array.array("d", times)
            durations = array.array("d", [frame_duration] * len(times))
        return FrameBatch(result, _outputs.float64_array(pts, name), _outputs.float64_array(durations, name))

    def _check_request(self, count: int, what: str) -> None:
        """Refuse a request of ``count`` frames that the memory limit cannot hold, or that a stream
        without a frame size cannot serve, before anything is allocated."""
        if count and not (self._height > 0 and self._width > 0):
            raise RuntimeError(f"stream {self.stream_index} has no frame size (FFmpeg reports {self._width}x"
                               f"{self._height}): when it opened the file, FFmpeg found no picture of this stream "
                               f"early enough to learn its size (the stream starts late in the file, or its "
                               f"first packets are damaged), so its frames cannot be decoded")
        size = (self._height, self._width) if self._cuda is None else (0, 0)    # CUDA frames: device memory
        check_request(f"{what}: {count} frames of {self._height}x{self._width} RGB {self._output_dtype}",
                      frames=count, frame_size=size, itemsize=4 if self._output_dtype == "float32" else 1)

    @forwards_ffmpeg_log
    def _run_engine(self, n: int, run: Any, address: int, frame_stride: int, row_stride: int, pts: array.array,
                    durations: array.array, stream: Optional[int] = None) -> None:
        """The one call into the engine: ``run`` decodes ``n`` frames into memory at ``address``
        (NHWC rows); CUDA decoders write on ``stream`` (set under the same lock: threads may share a
        decoder)."""
        if not n:
            return
        self._check_fork()
        with self._lock:
            if stream is not None:
                self._cuda.set_stream(stream)
            run(address, frame_stride, row_stride, self._height, self._width,
                self._output_dtype == "float32", pts, durations)

    def _decode_cpu(self, n: int, run: Any, out: Any, name: str, pts: array.array, durations: array.array) -> Any:
        """Decode into CPU memory allocated by the bridge's library (or ``out``)."""
        shape = (n, self._height, self._width, 3)
        target = None
        if out is not None:
            target = _outputs.describe_out(out, shape, self._output_dtype, dimension_order=self._dimension_order)
        memory = target if target is not None and target.packed else _outputs.allocate(
            shape, self._output_dtype, bridge=name)
        self._run_engine(n, run, memory.address, memory.strides[0], memory.strides[1], pts, durations)
        if memory is target:
            return target.finish()
        data = _outputs.nchw(memory.data) if self._dimension_order == "NCHW" else memory.data
        if target is not None:                    # out= in a layout the engine cannot write: one copy
            _outputs.copy_into(out, data)
            return target.finish()
        return memory.finish(data)

    def _decode_cuda(self, n: int, run: Any, out: Any, name: str, pts: array.array, durations: array.array) -> Any:
        """Decode into CUDA memory allocated by the bridge's library (or ``out``), on its current stream."""
        shape = (n, self._height, self._width, 3)
        target = None
        if out is not None:
            target = _outputs.describe_out(out, shape, self._output_dtype, dimension_order=self._dimension_order,
                                           device_index=self._device_index)
        output = target if target is not None and target.packed else _outputs.allocate(
            shape, self._output_dtype, device_index=self._device_index, bridge=name)
        self._run_engine(n, run, output.address, output.strides[0], output.strides[1], pts, durations, output.stream)
        data = output.finish()
        if output is target:
            return data
        if self._dimension_order == "NCHW":
            data = _outputs.nchw(data)
        if target is not None:                    # out= in a layout the engine cannot write: one copy
            _outputs.copy_into(out, data)
            return target.finish()
        return data

def _single_frame(batch: FrameBatch, out: Any = None) -> Frame:
    """The Frame of a batch of one (its data is ``out`` when the caller gave one)."""
    return Frame(batch.data[0] if out is None else out, float(batch.pts_seconds[0]),
                 float(batch.duration_seconds[0]))


def _one_frame_batch(out: Any) -> Any:
    """A single frame's ``out`` viewed as a batch of one (same memory)."""
    if out is None:
        return None
    return _outputs.batch_of_one(out)


def _before(seconds: float, end: Optional[float], or_at: bool) -> bool:
    """Whether ``seconds`` is before ``end`` (``or_at``: or at it); False when ``end`` is None."""
    return end is not None and (seconds < end or or_at and seconds == end)
