"""The examples in examples/ run, and give what their documentation says."""
from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import reference

EXAMPLES = pathlib.Path(__file__).resolve().parent.parent / "examples"


def test_torch_dataloader_example_batches_resized_clips(media, tmp_path):
    torch = pytest.importorskip("torch")
    folder = tmp_path / "videos"
    folder.mkdir()
    names = ["h264_bframes.mp4", "hevc_bframes.mp4", "h264_rotate90.mp4"]      # 320x240 and a rotated one
    for name in names:
        os.symlink(media[name], folder / name)
    (folder / "notes.txt").write_text("not a video")
    result = subprocess.run([sys.executable, "-P", str(EXAMPLES / "torch_dataloader.py"), str(folder), "--clips", "3",
                             "--frames", "4", "--size", "48", "60", "--batch-size", "2", "--workers", "2"],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["batch (2, 3, 4, 3, 48, 60) torch.uint8",
                                          "batch (1, 3, 4, 3, 48, 60) torch.uint8",
                                          "3 videos, 9 clips"]

    # An item's clips are 4 consecutive frames of the video, resized as the ffmpeg CLI does (a width
    # that is not a multiple of 32: TorchCodec resizes those after the RGB conversion, as this chain).
    sys.path.insert(0, str(EXAMPLES))
    try:
        import torch_dataloader
    finally:
        sys.path.remove(str(EXAMPLES))
    import torchcodec
    with torchcodec.bridge("torch"):
        item = torch_dataloader.VideoClips(folder, 3, 4, (48, 60), seed=0)[0]       # h264_bframes.mp4
    expected = reference.ffmpeg_rgb_frames(media["h264_bframes.mp4"], size=(48, 60),
                                           filters="format=rgb24,scale=60:48:flags=bilinear")
    for clip in item.numpy():
        frames = clip.transpose(0, 2, 3, 1)
        starts = [i for i in range(len(expected) - 3) if np.array_equal(expected[i], frames[0])]
        assert starts, "the clip's first frame is a frame of the video"
        np.testing.assert_array_equal(frames, expected[starts[0]:starts[0] + 4])
    assert isinstance(item, torch.Tensor)
