"""The lazy index (exact mode): VideoDecoder scans a file only as far as its requests need, and
nothing a user can see changes.

The reference is the same decoder with the lazy index off (``_LAZY_INDEX``, which
TORCHCODEC_LAZY_INDEX=0 sets): the whole file scanned at construction, as TorchCodec does. Every
frame, pts, duration, error, metadata field and index entry must be equal. IndexBuilder, which
decides which entries are final, is checked against a sort of all the packets.
"""
from __future__ import annotations

import pickle
import random
import threading

import numpy as np
import pytest

import torchcodec
from torchcodec import _index_cache as index_cache
from torchcodec._core._frame_index import IndexBuilder
from torchcodec.decoders import VideoDecoder
from torchcodec.decoders import _factory

# Files of the formats whose probe can be skipped (mov, Matroska): the lazy index applies to them.
LAZY_FILES = ["h264_bframes.mp4", "h264_editlist.mp4", "h264_vfr.mkv", "h264_offset2.5s.mkv", "h264_offset2.5s.mp4",
              "h264_aac_audio_first.mp4", "hevc_bframes.mp4", "hevc_temporal_layers.mp4", "vp9.webm", "av1.mp4",
              "h264_rotate90.mp4", "two_video_streams.mkv", "h264_interlaced.mp4", "h264_10bit.mp4"]
# Formats it does not apply to: scanned whole at construction, as before.
EAGER_FILES = ["h264_bframes.ts", "mpeg4_bframes.avi", "mpeg2_mp2.mpg"]


@pytest.fixture(autouse=True)
def no_cache(monkeypatch):
    """The index cache off (it would answer every open after the first): a fresh scan each time."""
    monkeypatch.setattr(index_cache, "_settings", None)
    torchcodec.set_index_cache(False)
    yield
    monkeypatch.setattr(index_cache, "_settings", None)


def opened(source, lazy_index: bool, **kwargs) -> VideoDecoder:
    saved = _factory.LAZY_INDEX
    _factory.LAZY_INDEX = lazy_index
    try:
        return VideoDecoder(source, **kwargs)
    finally:
        _factory.LAZY_INDEX = saved


def eager(source, **kwargs) -> VideoDecoder:
    """The reference: the whole file scanned at construction."""
    return opened(source, False, **kwargs)


def lazy(source, **kwargs) -> VideoDecoder:
    return opened(source, True, **kwargs)


def same_frame(a, b):
    np.testing.assert_array_equal(np.asarray(a.data), np.asarray(b.data))
    assert (a.pts_seconds, a.duration_seconds) == (b.pts_seconds, b.duration_seconds)


def same_batch(a, b):
    np.testing.assert_array_equal(np.asarray(a.data), np.asarray(b.data))
    np.testing.assert_array_equal(np.asarray(a.pts_seconds), np.asarray(b.pts_seconds))
    np.testing.assert_array_equal(np.asarray(a.duration_seconds), np.asarray(b.duration_seconds))


def index_entries(decoder):
    """(pts, key flag, duration) of every entry of the decoder's index as it stands."""
    index = decoder._frames.index
    return list(zip([index.pts(i) for i in range(len(index))], np.asarray(index.is_key_frame).tolist(),
                    np.asarray(index.duration_seconds).tolist()))


# ---- IndexBuilder: which entries are final ---------------------------------------------------------

def full_sort(packets):
    """What the index must hold at the end: every entry, in presentation order (ties by position,
    duration and key flag, as compare_entries breaks them)."""
    return sorted((pts if pts is not None else dts, pos, duration, key) for pts, dts, duration, key, pos in packets)


def decodable_packets(rng, count):
    """Packets as an encoder with B-frames writes them: dts increasing, pts >= dts, reordered in
    small groups; some pts repeat (ties), some durations vary."""
    packets, dts = [], 0
    order = []
    for group in range(count // 4 + 1):
        base = group * 4 * 10
        order += [base + 30, base, base + 10, base + 20] if rng.random() < 0.7 else [base, base + 10, base + 20, base + 30]
    for k, pts in enumerate(order[:count]):
        pts += 20              # the reorder delay: pts >= dts
        if rng.random() < 0.05 and packets:
            pts = max(packets[-1][0], dts)      # a repeated pts
        packets.append((pts, dts, rng.choice([10, 10, 20]), k % 12 == 0, 1000 + 37 * k))
        dts += 10
    return packets


@pytest.mark.parametrize("seed", range(8))
def test_builder_final_entries_are_a_prefix_of_the_full_sort(seed, engine_probe):
    rng = random.Random(seed)
    packets = decodable_packets(rng, 200)
    expected = full_sort(packets)
    builder = IndexBuilder((1, 90000))
    final_counts = []
    for k, packet in enumerate(packets):
        engine_probe.index_add(builder, *packet)
        index = builder.index
        got = [index.pts(i) for i in range(len(index))]
        assert got == [e[0] for e in expected[:len(got)]]
        # Final means: no later packet comes before it.
        if got:
            assert all(p[0] >= got[-1] for p in packets[k + 1:])
        final_counts.append(len(got))
    assert builder.ordered and not builder.ended
    assert final_counts[-1] > 150               # most entries were final before the end
    engine_probe.index_end(builder)
    index = builder.index
    assert builder.ended and not builder.prefix_changed
    assert [index.pts(i) for i in range(len(index))] == [e[0] for e in expected]
    assert np.asarray(index.is_key_frame).tolist() == [bool(e[3]) for e in expected]
    assert np.asarray(index.duration_seconds).tolist() == [e[2] / 90000 for e in expected]
    keys = [k for k, e in enumerate(expected) if e[3]]
    assert np.asarray(index.key_frame_indices).tolist() == keys


def test_builder_end_time_is_the_latest_frame_end(engine_probe):
    builder = IndexBuilder((1, 1000))
    for packet in [(0, 0, 40, True, 0), (80, 10, 40, False, 1), (40, 20, 100, False, 2), (60, 30, 10, False, 3)]:
        engine_probe.index_add(builder, *packet)
    engine_probe.index_end(builder)
    assert builder.end_ticks == 140            # 40 + 100: not the last pts's end (80 + 40)
    assert builder.index.end_stream_seconds_from_content == 0.14


@pytest.mark.parametrize("breaker", ["pts_before_dts", "dts_backwards", "no_pts", "pts_before_final"])
def test_builder_out_of_order_packets_end_sorted_like_the_whole_scan(breaker, engine_probe):
    packets = decodable_packets(random.Random(3), 100)
    k = 60
    pts, dts, duration, key, pos = packets[k]
    if breaker == "pts_before_dts":
        packets[k] = (dts - 25, dts, duration, key, pos)
    elif breaker == "dts_backwards":
        packets[k] = (pts, dts - 200, duration, key, pos)
    elif breaker == "no_pts":
        packets[k] = (None, dts, duration, key, pos)
    else:
        # Earlier than an entry already final: the final prefix was wrong, and ``end`` says so.
        packets.append((5, packets[-1][1] + 10, 10, False, 99999))
    builder = IndexBuilder((1, 90000))
    for packet in packets:
        engine_probe.index_add(builder, *packet)
    assert not builder.ordered
    before = [builder.index.pts(i) for i in range(len(builder.index))]
    engine_probe.index_end(builder)
    index = builder.index
    after = [index.pts(i) for i in range(len(index))]
    assert after == [e[0] for e in full_sort(packets)]
    assert index.pts_from_dts == (breaker == "no_pts")
    assert builder.prefix_changed == (after[:len(before)] != before)
    if breaker == "pts_before_final":
        assert before and builder.prefix_changed


def test_builder_without_dts_keeps_entries_pending_until_the_end(engine_probe):
    builder = IndexBuilder((1, 1000))
    for k, pts in enumerate([0, 30, 10, 20]):
        engine_probe.index_add(builder, pts, None, 10, k == 0, k)
    assert len(builder.index) == 0 and builder.ordered
    engine_probe.index_end(builder)
    assert [builder.index.pts(i) for i in range(4)] == [0, 10, 20, 30]


# ---- VideoDecoder: lazy answers are the whole scan's -----------------------------------------------

def requests_of(n):
    """Index requests covering the start, the middle, the end and the edges."""
    return sorted({0, 1, 2, n // 3, n // 2, n - 2, n - 1} & set(range(n)))


@pytest.mark.parametrize("name", LAZY_FILES)
def test_lazy_decoder_answers_as_the_whole_scan(media, name):
    reference = eager(media[name])
    n = len(reference)
    index_requests = requests_of(n)
    begin, end = reference.metadata.begin_stream_seconds, reference.metadata.end_stream_seconds
    times = [begin, begin + (end - begin) * 0.37, (begin + end) / 2, end - 1e-3]

    # One request at a time on fresh lazy decoders: each reads only what it needs.
    for i in index_requests:
        same_frame(lazy(media[name]).get_frame_at(i), reference.get_frame_at(i))
    for t in times:
        same_frame(lazy(media[name]).get_frame_played_at(t), reference.get_frame_played_at(t))
    same_batch(lazy(media[name]).get_frames_at(index_requests[::-1]), reference.get_frames_at(index_requests[::-1]))
    same_batch(lazy(media[name]).get_frames_played_at(times), reference.get_frames_played_at(times))
    middle = (begin + end) / 2
    same_batch(lazy(media[name]).get_frames_played_in_range(begin, middle),
               reference.get_frames_played_in_range(begin, middle))
    same_batch(lazy(media[name]).get_frames_played_in_range(begin, middle, fps=7.5),
               reference.get_frames_played_in_range(begin, middle, fps=7.5))
    same_batch(lazy(media[name]).get_frames_in_range(1, min(n, 9), 2), reference.get_frames_in_range(1, min(n, 9), 2))
    np.testing.assert_array_equal(np.asarray(lazy(media[name])[2:6]), np.asarray(reference[2:6]))

    # A sequence of requests on one lazy decoder, forward then back, then what needs the whole index.
    decoder = lazy(media[name])
    for i in index_requests + index_requests[::-1]:
        same_frame(decoder.get_frame_at(i), reference.get_frame_at(i))
    same_frame(decoder.get_frame_at(-1), reference.get_frame_at(-1))
    assert len(decoder) == n
    assert decoder.metadata == reference.metadata
    assert index_entries(decoder) == index_entries(reference)
    same_batch(decoder.get_all_frames(), reference.get_all_frames())


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "vp9.webm"])
def test_lazy_errors_are_the_whole_scans(media, name):
    reference = eager(media[name])
    n = len(reference)
    end = reference.metadata.end_stream_seconds
    begin = reference.metadata.begin_stream_seconds
    calls = [lambda d: d.get_frame_at(n), lambda d: d.get_frame_at(-n - 1), lambda d: d.get_frames_at([0, n]),
             lambda d: d.get_frame_played_at(end), lambda d: d.get_frame_played_at(begin - 1),
             lambda d: d.get_frames_played_at([begin, end + 1]), lambda d: d.get_frames_played_in_range(begin, end + 1),
             lambda d: d.get_frames_played_in_range(end, end + 1), lambda d: d.get_frame_played_at(float("nan"))]
    for call in calls:
        with pytest.raises(Exception) as expected:
            call(reference)
        with pytest.raises(type(expected.value)) as got:
            call(lazy(media[name]))
        assert str(got.value) == str(expected.value)
    # Requests at the very end: the lazy index reads to the end and agrees.
    same_batch(lazy(media[name]).get_frames_played_in_range(begin, end), reference.get_frames_played_in_range(begin, end))
    same_frame(lazy(media[name]).get_frame_at(n - 1), reference.get_frame_at(n - 1))


def long_file(tmp_path_factory):
    """12 s at 25 fps in 360 frames of 64x48: long enough that the start needs a small part of the index."""
    import subprocess
    path = tmp_path_factory.mktemp("lazy") / "long.mp4"
    subprocess.run(["ffmpeg", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:rate=30",
                    "-t", "12", "-c:v", "libx264", "-g", "30", "-bf", "2", str(path)], check=True)
    return path


@pytest.fixture(scope="module")
def long_video(tmp_path_factory):
    return long_file(tmp_path_factory)


def test_early_requests_read_only_the_start_of_the_file(long_video):
    decoder = lazy(long_video)
    assert decoder._frames.scan is not None and len(decoder._frames.index) == 0      # nothing read at construction
    decoder.get_frame_at(10)
    known = len(decoder._frames.index)
    assert 10 + _factory.LAZY_MARGIN < known < 200 and decoder._frames.scan is not None
    decoder.get_frame_played_at(2.0)
    assert decoder._frames.scan is not None and len(decoder._frames.index) < 200
    assert len(decoder) == 360 and decoder._frames.scan is None
    assert decoder.metadata.num_frames == 360 and decoder.metadata.end_stream_seconds == 12.0


def test_lazy_from_bytes_and_shared_between_threads(long_video):
    data = long_video.read_bytes()
    reference = eager(long_video)
    decoder = lazy(data)
    targets = [5, 300, 17, 200, 359, 0, 120, 64]
    results, errors = {}, []

    def work(offset):
        try:
            for i in targets[offset:] + targets[:offset]:
                results.setdefault(i, []).append(decoder.get_frame_at(i))
        except Exception as error:          # noqa: BLE001  # reported below
            errors.append(error)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    for i, frames in results.items():
        assert len(frames) == 4
        for frame in frames:
            same_frame(frame, reference.get_frame_at(i))
    assert decoder.metadata == reference.metadata


def test_pickled_lazy_decoder_and_the_cache_get_the_whole_index(long_video, tmp_path, monkeypatch):
    decoder = lazy(long_video)
    decoder.get_frame_at(3)
    clone = pickle.loads(pickle.dumps(decoder))
    same_frame(clone.get_frame_at(300), eager(long_video).get_frame_at(300))
    # With the cache on, the index is stored once the lazy scan completes, and a reopen reads it back.
    monkeypatch.setattr(index_cache, "_settings", None)
    torchcodec.set_index_cache(True, directory=tmp_path / "cache")
    first = lazy(long_video)
    first.get_frame_at(1)
    assert not index_cache.lookup(str(long_video)).indices        # not complete: nothing stored
    assert len(first) == 360
    assert set(index_cache.lookup(str(long_video)).indices) == {first.stream_index}
    again = lazy(long_video)
    assert again._frames.scan is None and again._from_cache and len(again._frames.index) == 360
    same_frame(again.get_frame_at(300), eager(long_video).get_frame_at(300))


def test_a_file_opened_before_is_scanned_whole_once(long_video, tmp_path, monkeypatch):
    # A training job opens the same files every epoch and may never ask for the whole index: the
    # first open reads only what it needs, the second scans the whole file and stores the index,
    # the later ones read it back.
    monkeypatch.setattr(index_cache, "_settings", None)
    torchcodec.set_index_cache(True, directory=tmp_path / "cache")
    first = lazy(long_video)
    same_frame(first.get_frame_played_at(3.0), eager(long_video).get_frame_played_at(3.0))
    assert first._frames.scan is not None
    del first
    second = lazy(long_video)
    assert second._frames.scan is None and second._from_cache and len(second._frames.index) == 360
    assert set(index_cache.lookup(str(long_video)).indices) == {second.stream_index}
    third = lazy(long_video)
    assert third._frames.scan is None and len(third._frames.index) == 360
    same_frame(third.get_frame_played_at(3.0), eager(long_video).get_frame_played_at(3.0))


@pytest.mark.parametrize("name", EAGER_FILES)
def test_other_formats_scan_at_construction(media, name):
    decoder = lazy(media[name])
    assert decoder._frames.scan is None
    assert index_entries(decoder) == index_entries(eager(media[name]))
