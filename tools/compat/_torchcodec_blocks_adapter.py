"""TorchCodec's pre-release building-block names, over the 0.17 public blocks of this package.

TorchCodec's development test files (the checkout's ``test/test_decoders.py``, class ``TestBlocks``)
import ``torchcodec.decoders._blocks``: the blocks as they were before TorchCodec 0.17 renamed them
(``VideoDemuxer``/``AudioDemuxer`` became ``Demuxer(streams=...)`` with ``VideoStream.make_decoder``
and ``scan``; ``StreamIndex`` became ``FrameIndex``; ``RawFrame.pix_fmt``/``colorspace``/
``rotation_degrees`` became ``pixel_format``/``color_space``/``rotation``). So that those tests run
against this package, tools/compat/_torchcodec_test_shim.py installs this module under that private name.
Every call goes to the public 0.17 blocks (``torchcodec.decoders``); only the names are translated,
no behaviour is added. Used by tools/compat/run_torchcodec_tests.py, never shipped.
"""
from __future__ import annotations

from typing import Any, Optional

from torchcodec import decoders as _public
from torchcodec.decoders import VideoDecoder as _VideoDecoder

Packet = _public.Packet


class StreamIndex:
    """``FrameIndex`` under its pre-0.17 name and member names."""

    def __init__(self, index: Any) -> None:
        self._index = index

    def __len__(self) -> int:
        return len(self._index)

    def __getattr__(self, name: str) -> Any:
        renamed = {"begin_stream_seconds": "begin_stream_seconds_from_content",
                   "end_stream_seconds": "end_stream_seconds_from_content",
                   "average_fps": "average_fps_from_content"}
        return getattr(self._index, renamed.get(name, name))


class _Demuxer:
    _selector: str

    def __init__(self, source: Any, *, stream_index: Optional[int] = None) -> None:
        self._demuxer = _public.Demuxer(source, streams=self._selector if stream_index is None else stream_index)
        self._stream = self._demuxer.streams[0]
        kind = "video" if isinstance(self._stream, _public.VideoStream) else "audio"
        if kind != self._selector:        # 0.17's int selectors take either kind; the old classes took one
            raise RuntimeError(f"stream {stream_index} is not a {self._selector} stream (it is '{kind}')")

    def next_packet(self) -> Optional[Packet]:
        return next(self._demuxer, None)

    def seek(self, seconds: float) -> None:
        self._demuxer.seek(seconds)

    def __iter__(self) -> Any:
        return iter(self._demuxer)


class VideoDemuxer(_Demuxer):
    _selector = "video"

    def scan(self) -> StreamIndex:
        return StreamIndex(self._stream.scan())


class AudioDemuxer(_Demuxer):
    _selector = "audio"


class RawFrame:
    """A 0.17 ``RawFrame`` under the pre-0.17 member names."""

    def __init__(self, frame: Any) -> None:
        self._frame = frame

    def __getattr__(self, name: str) -> Any:
        renamed = {"pix_fmt": "pixel_format", "colorspace": "color_space", "rotation_degrees": "rotation",
                   "storage": "storage_cuda"}
        return getattr(self._frame, renamed.get(name, name))


RawAudioSamples = _public.RawAudioSamples


class _PacketDecoder:
    def decode(self, packet: Packet) -> list[Any]:
        return [self._wrap(frame) for frame in self._decoder.decode(packet)]

    def drain(self) -> list[Any]:
        return [self._wrap(frame) for frame in self._decoder.drain()]

    def reset(self) -> None:
        self._decoder.reset()

    def _wrap(self, frame: Any) -> Any:
        return frame


class VideoPacketDecoder(_PacketDecoder):
    def __init__(self, demuxer: VideoDemuxer, device: Any = None) -> None:
        if not isinstance(demuxer, VideoDemuxer):
            raise TypeError("VideoPacketDecoder takes a VideoDemuxer")
        self._decoder = demuxer._stream.make_decoder(device)

    def _wrap(self, frame: Any) -> Any:
        return RawFrame(frame)


class AudioPacketDecoder(_PacketDecoder):
    def __init__(self, demuxer: AudioDemuxer) -> None:
        if not isinstance(demuxer, AudioDemuxer):
            raise TypeError("AudioPacketDecoder takes an AudioDemuxer")
        self._decoder = demuxer._stream.make_decoder()


class ColorConverter:
    def __init__(self, device: Any = None, output_dtype: Any = "uint8") -> None:
        self._converter = _public.ColorConverter(device=device, output_dtype=output_dtype)

    def convert(self, raw_frame: Any) -> Any:
        return self._converter.convert(raw_frame._frame if isinstance(raw_frame, RawFrame) else raw_frame)


def _get_key_frame_indices(decoder: Any) -> Any:
    """TorchCodec's private ``VideoDecoder._get_key_frame_indices()`` (its tests compare the blocks'
    key frames with it): the key frames of the decoder's scanned index, through the public FrameIndex."""
    return decoder._frames.index.key_frame_indices


_VideoDecoder._get_key_frame_indices = _get_key_frame_indices     # type: ignore[attr-defined]

__all__ = ["VideoDemuxer", "AudioDemuxer", "VideoPacketDecoder", "AudioPacketDecoder", "ColorConverter", "Packet",
           "RawFrame", "RawAudioSamples", "StreamIndex"]
