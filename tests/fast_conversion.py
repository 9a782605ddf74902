"""What the tests of the one-pass YUV -> RGB24 conversions (yuv8_rgb.h, hbd_rgb.h) share: the
matrices and ranges they cover, the frames of a file as the packet decoder gives them, and the
check that a recorded difference from swscale keeps swscale."""
from __future__ import annotations

import numpy as np

import reference
from torchcodec._core import _scaler
from torchcodec.decoders import ColorConverter, Demuxer

MATRICES = [1, 2, 4, 5, 6, 7, 9, 10]           # AVColorSpace: BT.709, unspecified, FCC, BT.601 x2, 240M, BT.2020
RANGES = [1, 2]                                 # AVColorRange: limited (MPEG), full (JPEG)


def raw_frames(path):
    """Every frame of ``path``'s first stream, undecoded to RGB (the packet decoder's output)."""
    demuxer = Demuxer(path)
    decoder = demuxer.streams[0].make_decoder()
    for packet in demuxer:
        yield from decoder.decode(packet)
    yield from decoder.drain()


def check_a_recorded_difference_keeps_swscale(path, monkeypatch, engine_probe):
    """The first conversion of ``path``'s geometry compares the fast rows with swscale and takes
    them; once the verdict for that geometry says they differed, swscale converts every frame,
    still giving the CLI's pixels."""
    verdicts = {}
    monkeypatch.setattr(_scaler, "_fast_verdicts", verdicts)
    converter = ColorConverter()
    converter.convert(next(raw_frames(path)))
    assert engine_probe.fast_path_active(converter.impl)
    assert list(verdicts.values()) == [1]
    for recorded in list(verdicts):
        verdicts[recorded] = 0
    expected = reference.ffmpeg_rgb_frames(path)
    converter = ColorConverter()
    frames = [converter.convert(raw_frame) for raw_frame in raw_frames(path)]
    assert not engine_probe.fast_path_active(converter.impl)
    assert len(frames) == len(expected)
    for i, frame in enumerate(frames):
        np.testing.assert_array_equal(np.asarray(frame.data).transpose(1, 2, 0), expected[i])
