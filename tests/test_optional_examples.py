"""The Ray, dask and Hugging Face ``datasets`` examples give the ffmpeg CLI's frames and samples.

Those libraries are not test dependencies: these tests skip without them, and
``tools/run_optional_examples.sh`` runs them in their own environment (.venv-examples) with
pinned versions.
"""
from __future__ import annotations

import os
import pathlib

import numpy as np
import pytest

import reference
from examples_runner import EXAMPLES, import_example, run_example

VIDEOS = ["h264_bframes.mp4", "hevc_bframes.mp4", "h264_rotate90.mp4", "vp9.webm"]
SOUNDS = ["mp3_stereo_44100.mp3", "wav_s16_stereo_44100.wav", "flac_s24_stereo_88200.flac", "aac_stereo_48000.m4a"]


def folder_of(media, tmp_path: pathlib.Path, name: str, files: list[str]) -> pathlib.Path:
    folder = tmp_path / name
    folder.mkdir()
    for file in files:
        os.symlink(media[file], folder / file)
    (folder / "notes.txt").write_text("not media")
    return folder


def cli_indices(path, pts_seconds) -> list[int]:
    """The indices of the frames whose pts (per ffprobe) are ``pts_seconds``."""
    pts = np.array([frame["pts_seconds"] for frame in reference.ffprobe_frames(path, reference.best_stream(path))])
    indices = [int(np.argmin(np.abs(pts - t))) for t in np.ravel(pts_seconds)]
    assert np.allclose(pts[indices], np.ravel(pts_seconds), atol=1e-6)
    return indices


def resized_cli_frames(path, size):
    height, width = size
    return reference.ffmpeg_rgb_frames(path, size=size, filters=f"format=rgb24,scale={width}:{height}:flags=bilinear")


def test_ray_data_pipeline_decodes_the_cli_frames_of_every_clip(media, tmp_path, monkeypatch):
    ray = pytest.importorskip("ray")
    folder = folder_of(media, tmp_path, "videos", VIDEOS)
    # Run away from the source tree: Ray's workers put their working directory on sys.path, where
    # the source tree's torchcodec (no compiled modules) would shadow the installed one.
    lines = run_example("ray_data_pipeline.py", str(folder), "--clips", "2", "--frames", "4", "--size", "48", "60",
                        cwd=tmp_path, timeout=600)
    assert lines[-1] == "4 videos, 8 clips"
    assert [line.split(":")[0] for line in lines[:-1]] == sorted(VIDEOS)
    assert all("clips (2, 4, 48, 60, 3) uint8" in line for line in lines[:-1])

    example = import_example("ray_data_pipeline")
    monkeypatch.chdir(tmp_path)                                       # as in run_example
    # The workers import DecodeClips from the example's module, as the driver does.
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(EXAMPLES)}})
    try:
        rows = example.decode_folder(folder, 2, 4, (48, 60))
    finally:
        ray.shutdown()
    assert [pathlib.Path(row["path"]).name for row in rows] == sorted(VIDEOS)
    for row in rows:
        path = row["path"]
        expected = resized_cli_frames(path, (48, 60))
        indices = cli_indices(path, row["pts_seconds"])
        last_start = len(expected) - 4                                # clips_at_regular_indices: 0 ... last
        assert indices[0] == 0 and indices[4] == last_start
        assert indices == [start + k for start in (0, last_start) for k in range(4)]
        np.testing.assert_array_equal(row["clips"].reshape(8, 48, 60, 3), expected[indices], err_msg=path)


def test_dask_job_summarises_the_cli_frames(media, tmp_path):
    pytest.importorskip("dask")
    folder = folder_of(media, tmp_path, "videos", VIDEOS)
    lines = run_example("dask_job.py", str(folder), "--clips", "2", "--frames", "4", "--chunk", "16", cwd=tmp_path, timeout=600)
    assert len(lines) == len(VIDEOS) + 1

    example = import_example("dask_job")
    for line, name in zip(lines, sorted(VIDEOS)):
        path = str(folder / name)
        summary = example.summarise_clips(path, 2, 4, 0)               # what the worker computed, again
        assert line == (f"{name}: clips at {', '.join(f'{t:.3f}' for t in summary['starts'])} s, "
                        f"mean {', '.join(f'{m:.2f}' for m in summary['means'])}")
        expected = reference.ffmpeg_rgb_frames(path)
        for start, mean in zip(cli_indices(path, summary["starts"]), summary["means"]):
            clip = expected[start:start + 4]
            if len(clip) < 4:                                          # policy "repeat_last"
                clip = np.concatenate([clip, np.repeat(clip[-1:], 4 - len(clip), axis=0)])
            assert mean == pytest.approx(clip.astype(np.float64).mean(), abs=1e-9)

    first = str(folder / sorted(VIDEOS)[0])
    frames = example.frames_array(first, 16)
    expected = reference.ffmpeg_rgb_frames(first)
    assert frames.numblocks[0] == -(-len(expected) // 16)
    np.testing.assert_array_equal(frames.compute(scheduler="threads"), expected)
    brightness = expected.astype(np.float64).mean(axis=(1, 2, 3))
    assert lines[-1] == (f"{sorted(VIDEOS)[0]}: array {expected.shape} uint8 in {frames.numblocks[0]} chunks, "
                         f"brightness {brightness.min():.2f} to {brightness.max():.2f}")


def test_hf_datasets_columns_are_decoded_by_this_package(media, tmp_path):
    pytest.importorskip("datasets")
    pytest.importorskip("torch")                   # datasets' Audio feature calls .cpu() on the samples
    import torchcodec
    from torchcodec.decoders import VideoDecoder
    videos = folder_of(media, tmp_path, "videos", VIDEOS)
    sounds = folder_of(media, tmp_path, "sounds", SOUNDS)
    lines = run_example("hf_datasets_column.py", str(videos), str(sounds), "--sampling-rate", "16000",
                        cwd=tmp_path, timeout=600)
    assert len(lines) == len(VIDEOS) + len(SOUNDS)
    assert all("torchcodec.decoders._video_decoder.VideoDecoder" in line for line in lines[:len(VIDEOS)])

    example = import_example("hf_datasets_column")
    with torchcodec.bridge("torch"):
        table = example.video_table(videos)
        for row in table:
            decoder, path = row["video"], str(videos / row["name"])
            assert isinstance(decoder, VideoDecoder)
            batch = example.sampled_frames(decoder, 3)
            expected = reference.ffmpeg_rgb_frames(path)
            indices = cli_indices(path, batch.pts_seconds.numpy())
            assert indices == [0, round((len(expected) - 1) / 2), len(expected) - 1]
            np.testing.assert_array_equal(batch.data.numpy().transpose(0, 2, 3, 1), expected[indices])

        for row in example.audio_table(sounds, 16_000):
            audio, path = row["audio"], str(sounds / row["name"])
            expected = reference.ffmpeg_audio_samples(path, sample_rate=16_000)
            np.testing.assert_array_equal(audio.get_all_samples().data.numpy(), expected, err_msg=path)
            assert audio["sampling_rate"] == 16_000
            np.testing.assert_allclose(audio["array"], expected.mean(axis=0), rtol=0, atol=1e-7)
