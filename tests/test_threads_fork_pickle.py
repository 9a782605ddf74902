"""Decoders in threads, after fork, and through pickle."""
from __future__ import annotations

import io
import multiprocessing
import pickle
import subprocess
import threading

import numpy as np
import pytest

import reference
from gil_probe import assert_releases_the_gil
from torchcodec.decoders import VideoDecoder


@pytest.fixture(scope="module")
def expected(media):
    return reference.ffmpeg_rgb_frames(media["h264_bframes.mp4"])


def test_another_thread_runs_while_a_decode_is_in_progress(media):
    decoder = VideoDecoder(media["hevc_bframes.mp4"])
    assert_releases_the_gil(decoder.get_all_frames)


def test_a_shared_decoder_gives_the_same_frames_in_threads(h264, expected):
    decoder = VideoDecoder(h264, dimension_order="NHWC")
    rng = np.random.default_rng(1)
    plans = [rng.integers(0, 90, size=12).tolist() for _ in range(4)]
    results = {}

    def work(k):
        results[k] = [decoder.get_frames_at(plan[i:i + 3]).data for plan in [plans[k]] for i in range(0, 12, 3)]

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, plan in enumerate(plans):
        np.testing.assert_array_equal(np.concatenate(results[k]), expected[plan])


def test_many_decoders_in_many_threads(media, expected):
    def work(out, k):
        out[k] = VideoDecoder(media["h264_bframes.mp4"], dimension_order="NHWC").get_frames_at([k * 10, 89 - k]).data

    out = {}
    threads = [threading.Thread(target=work, args=(out, k)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k in range(4):
        np.testing.assert_array_equal(out[k], expected[[k * 10, 89 - k]])


@pytest.mark.parametrize("kind", ["path", "bytes"])
def test_pickle_round_trip_reopens_the_source_with_the_same_options(h264, expected, kind):
    source = str(h264) if kind == "path" else h264.read_bytes()
    decoder = VideoDecoder(source, seek_mode="approximate", dimension_order="NHWC")
    decoder[40]
    copy = pickle.loads(pickle.dumps(decoder))
    assert copy._seek_mode == "approximate" and copy._dimension_order == "NHWC"
    assert len(copy) == len(decoder)
    np.testing.assert_array_equal(copy[41], expected[41])


def test_pickling_a_file_object_decoder_is_refused(h264):
    with pytest.raises(TypeError, match="file object"):
        pickle.dumps(VideoDecoder(io.BytesIO(h264.read_bytes())))


def _child_frames(decoder, indices, queue):
    queue.put(decoder.get_frames_at(indices).data)


@pytest.mark.parametrize("threads", [1, 2])
def test_decoder_opened_in_parent_works_in_forked_child(h264, expected, threads):
    decoder = VideoDecoder(h264, dimension_order="NHWC", num_ffmpeg_threads=threads)
    decoder[50]                                 # the parent has decoded: state, threads, file position
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child_frames, args=(decoder, [3, 77, 3], queue))
    child.start()
    frames = queue.get(timeout=60)
    child.join(timeout=60)
    assert child.exitcode == 0
    np.testing.assert_array_equal(frames, expected[[3, 77, 3]])
    np.testing.assert_array_equal(decoder[51], expected[51])     # the parent is unaffected


def test_torch_dataloader_with_workers(h264, media, expected):
    torch = pytest.importorskip("torch")
    import torchcodec

    class Clips(torch.utils.data.Dataset):
        def __init__(self):
            self.decoders = [VideoDecoder(h264, dimension_order="NHWC"),
                             VideoDecoder(media["h264_bframes.ts"], dimension_order="NHWC")]

        def __len__(self):
            return 8

        def __getitem__(self, i):
            return self.decoders[i % 2].get_frames_at([i, i + 5]).data

    with torchcodec.bridge("torch"):
        loader = torch.utils.data.DataLoader(Clips(), batch_size=2, num_workers=2,
                                             multiprocessing_context="fork")
        batches = list(loader)
    ts_frames = reference.ffmpeg_rgb_frames(media["h264_bframes.ts"])
    items = [item for batch in batches for item in batch]
    assert len(items) == 8
    for i, item in enumerate(items):
        reference_frames = expected if i % 2 == 0 else ts_frames
        np.testing.assert_array_equal(item.numpy(), reference_frames[[i, i + 5]])


def test_pickle_of_array_sources_and_mapping_files(h264, expected, tmp_path):
    mappings = tmp_path / "frames.json"
    mappings.write_text(subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "0", "-show_frames", "-show_entries",
         "frame=pts,duration,pkt_duration,key_frame", "-of", "json", str(h264)],
        check=True, capture_output=True, text=True).stdout)
    with open(mappings, "rb") as f:
        decoder = VideoDecoder(np.frombuffer(h264.read_bytes(), np.uint8), custom_frame_mappings=f,
                               dimension_order="NHWC")
    copy = pickle.loads(pickle.dumps(decoder))
    np.testing.assert_array_equal(copy[12], expected[12])


def test_pickle_of_a_tensor_source(h264, expected):
    torch = pytest.importorskip("torch")
    import torchcodec
    decoder = VideoDecoder(torch.frombuffer(bytearray(h264.read_bytes()), dtype=torch.uint8), dimension_order="NHWC")
    with torchcodec.bridge("numpy"):
        np.testing.assert_array_equal(pickle.loads(pickle.dumps(decoder))[4], expected[4])
