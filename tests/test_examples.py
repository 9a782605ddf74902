"""The examples in examples/ run, and give what their documentation says."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import reference
from examples_runner import EXAMPLES, import_example, run_example


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


def test_the_threaded_blocks_pipeline_gives_every_frame_of_the_cli(media, h264_frames):
    lines = run_example("blocks_pipeline.py", str(media["h264_bframes.mp4"]))
    assert lines[0].startswith("90 frames, 0.000 s to 2.967 s, shape (3, 240, 320), decoded on 3 threads in")
    frames = import_example("blocks_pipeline").decode_pipelined(str(media["h264_bframes.mp4"]), depth=2)
    np.testing.assert_array_equal(np.stack([f.data for f in frames]).transpose(0, 2, 3, 1), h264_frames)


def test_the_thumbnailer_writes_the_key_frames_only(media, tmp_path):
    from torchcodec.decoders import decode_png
    path = media["hevc_bframes.mp4"]
    keys = [i for i, frame in enumerate(reference.ffprobe_frames(path, 0)) if frame["key_frame"]]
    expected = reference.ffmpeg_rgb_frames(path)
    lines = run_example("blocks_thumbnails.py", str(path), "-o", str(tmp_path))
    assert len(lines) == len(keys) > 1
    for number, i in enumerate(keys):
        image = decode_png(str(tmp_path / f"key_{number:04d}.png"))
        np.testing.assert_array_equal(np.asarray(image).transpose(1, 2, 0), expected[i])


def test_the_index_cache_example_scans_once_and_reaches_exact_frames(media, tmp_path):
    path = media["h264_vfr.mkv"]
    frames = reference.ffprobe_frames(path, 0)
    expected = reference.ffmpeg_rgb_frames(path)
    times = [frames[40]["pts_seconds"], frames[3]["pts_seconds"] + 1e-4, frames[-1]["pts_seconds"]]
    index = tmp_path / "video.index"
    args = [str(path), "--index", str(index), "--at", *map(repr, times), "-o", str(tmp_path / "frames")]
    first, second = run_example("blocks_index_cache.py", *args), run_example("blocks_index_cache.py", *args)
    assert first[0].startswith(f"index of {len(frames)} frames scanned, saved to")
    assert second[0].startswith(f"index of {len(frames)} frames loaded from")
    assert first[1:] == second[1:] == [f"{t:g} s: frame {i}, pts {frames[i]['pts_seconds']:.6f} s"
                                       for t, i in zip(times, (40, 3, len(frames) - 1))]
    from torchcodec.decoders import decode_png
    for i in (40, 3, len(frames) - 1):
        np.testing.assert_array_equal(np.asarray(decode_png(str(tmp_path / "frames" / f"frame_{i:05d}.png")))
                                      .transpose(1, 2, 0), expected[i])


def test_the_gpu_example_decodes_through_nvdec_against_the_stub_driver(media, tmp_path):
    """examples/gpu_decode.py over the stub libcuda/libnvcuvid (tests/cuda_stubs: the real kernels run
    on the CPU): the frames asked for, with the CPU decoder's timestamps, decoded by NVDEC."""
    sys.path.insert(0, str(EXAMPLES.parent / "tests" / "cuda_stubs"))
    try:
        from stub_build import build_decoding_stubs, run_python
    finally:
        sys.path.pop(0)
    stubs = build_decoding_stubs(tmp_path / "stubs")
    path, indices = media["h264_bframes.mp4"], [0, 10, 45, 89]
    out = run_python(f"""
import contextlib, io, json, runpy, sys
import torchcodec
torchcodec.set_bridge("numpy")          # the stub driver cannot serve torch's CUDA allocator
example = runpy.run_path({str(EXAMPLES / "gpu_decode.py")!r})
decoder, batch = example["decode_on_gpu"]({str(path)!r}, {indices!r})
sys.argv = ["gpu_decode.py", {str(path)!r}, "--at", *map(str, {indices!r})]
printed = io.StringIO()
with contextlib.redirect_stdout(printed):
    status = example["main"]()
print(json.dumps({{"shape": list(batch.data.shape), "device": str(batch.data.__cuda_array_interface__ and "cuda"),
                  "pts": batch.pts_seconds.tolist(), "fallback": bool(decoder.cpu_fallback),
                  "status": status, "printed": printed.getvalue().splitlines()}}))
""", stubs)
    from torchcodec.decoders import VideoDecoder
    cpu = VideoDecoder(str(path)).get_frames_at(indices)
    assert out["shape"] == [len(indices), *cpu.data.shape[1:]]
    assert out["pts"] == cpu.pts_seconds.tolist()
    assert out["fallback"] is False and out["status"] == 0
    assert out["printed"][0].startswith(f"{len(indices)} frames ({len(indices)}, 3, 240, 320) ")
    assert out["printed"][1] == "NVDEC: yes"
