"""The index cache (torchcodec/_index_cache.py): a file opened before is opened again from what the
first open learnt (FFmpeg's probe, the exact frame index), and nothing a user can see changes.

The references are the same decoders with the cache off: every metadata field, every index array,
every packet and every frame must be equal. The rest is the cache's own safety: a changed file,
a damaged or foreign entry, a hostile probe state, several processes at once, a full or
unwritable directory, the size bound.
"""
from __future__ import annotations

import multiprocessing
import os
import pickle
import shutil
import subprocess
import sys

import numpy as np
import pytest

import torchcodec
from torchcodec import _index_cache as index_cache
from torchcodec._core._demuxer import PROBE_SKIPPING_FORMATS, unselected_demuxer
from torchcodec.decoders import AudioDecoder, FrameIndex, VideoDecoder

VIDEO_FILES = [
    "h264_bframes.mp4", "h264_editlist.mp4", "h264_10bit.mp4", "h264_rotate90.mp4", "h264_vfr.mkv",
    "h264_offset2.5s.mkv", "h264_offset2.5s.mp4", "h264_bframes.ts", "h264_aac_audio_first.mp4",
    "two_video_streams.mkv", "h264_interlaced.mp4", "hevc_bframes.mp4", "hevc_10bit.mp4", "vp9.webm",
    "vp8.webm", "av1.mp4", "mpeg4_bframes.avi", "mpeg2_mp2.mpg", "h264_sar4_3.mp4", "h264_1080p.mp4",
]
AUDIO_FILES = ["h264_aac.mp4", "h264_aac_audio_first.mp4", "aac_stereo_48000.m4a", "opus_music_48000_8s.webm",
               "flac_offset1.5s.mka", "mp3_stereo_44100.mp3", "vorbis_mono_11025.ogg", "mpeg2_mp2.mpg"]
SKIPS_PROBE = {".mp4", ".m4a", ".mkv", ".mka", ".webm"}     # mov and Matroska: PROBE_SKIPPING_FORMATS


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh, empty cache directory of this test's own (the settings are restored afterwards)."""
    monkeypatch.setattr(index_cache, "_settings", None)
    directory = tmp_path / "index-cache"
    torchcodec.set_index_cache(True, directory=directory)
    return directory


def uncached(make):
    """``make()`` with the cache off: the reference."""
    saved = index_cache._settings
    torchcodec.set_index_cache(False)
    try:
        return make()
    finally:
        index_cache._settings = saved


def entries(directory) -> list[str]:
    return sorted(name for name in os.listdir(directory) if name.endswith(".tcix")) if directory.exists() else []


def index_arrays(decoder) -> dict:
    len(decoder)                                    # the whole index (a lazy one reads to the end)
    index = decoder._frames.index
    return {name: np.asarray(getattr(index, name)) for name in ("pts_seconds", "duration_seconds", "is_key_frame",
                                                                 "key_frame_indices")}


def frame_sample(decoder) -> list[int]:
    n = len(decoder)
    return sorted({0, 1, n // 3, n // 2, n - 2, n - 1} & set(range(n))) if n > 60 else list(range(n))


# ---- the same decoders ---------------------------------------------------------------------------

@pytest.mark.parametrize("name", VIDEO_FILES)
def test_a_reopened_video_is_the_same_decoder(cache, media, name):
    path = media[name]
    reference = uncached(lambda: VideoDecoder(path))
    first = VideoDecoder(path)
    again = VideoDecoder(path)
    # Both read from a demuxer opened from the probe state that has read nothing: the first one
    # after its scan, the second one with the index from the cache. Formats without a probe state
    # are not cached: they scan each time.
    skips = path.suffix in SKIPS_PROBE
    assert first._demuxer.probe_skipped == again._demuxer.probe_skipped == skips
    assert not first._from_cache and again._from_cache == skips
    assert len(entries(cache)) == (1 if skips else 0)
    assert again.stream_index == reference.stream_index
    assert again.metadata == reference.metadata
    for name_, array in index_arrays(reference).items():
        np.testing.assert_array_equal(index_arrays(again)[name_], array, err_msg=name_)
    indices = frame_sample(reference)
    expected, got = reference.get_frames_at(indices), again.get_frames_at(indices)
    np.testing.assert_array_equal(got.data, expected.data)
    np.testing.assert_array_equal(got.pts_seconds, expected.pts_seconds)
    np.testing.assert_array_equal(got.duration_seconds, expected.duration_seconds)
    # Sequential decoding from the start (the reader starts without a seek after a cached open).
    frames = [frame.data for _, frame in zip(range(12), again)]
    np.testing.assert_array_equal(np.stack(frames), reference.get_frames_in_range(0, len(frames)).data)


@pytest.mark.parametrize("name", ["h264_bframes.mp4", "vp9.webm", "h264_vfr.mkv", "h264_bframes.ts"])
def test_approximate_mode_reopens_the_same(cache, media, name):
    path = media[name]
    reference = uncached(lambda: VideoDecoder(path, seek_mode="approximate"))
    VideoDecoder(path, seek_mode="approximate")
    again = VideoDecoder(path, seek_mode="approximate")
    assert again._demuxer.probe_skipped == (path.suffix in SKIPS_PROBE)
    assert again.metadata == reference.metadata
    np.testing.assert_array_equal(again.get_frames_at([0, 5, 40]).data, reference.get_frames_at([0, 5, 40]).data)
    # An approximate open leaves the probe (where it can be skipped: else nothing); an exact open
    # adds the index to the same entry (a file the cache knows is scanned whole, not lazily).
    assert len(entries(cache)) == (1 if path.suffix in SKIPS_PROBE else 0)
    assert index_cache.lookup(path).indices == {}
    exact = VideoDecoder(path)
    if path.suffix in SKIPS_PROBE:
        assert exact._frames.scan is None
        assert len(entries(cache)) == 1 and list(index_cache.lookup(path).indices) == [exact.stream_index]
    else:
        assert entries(cache) == []
    assert VideoDecoder(path).metadata == uncached(lambda: VideoDecoder(path)).metadata == exact.metadata


@pytest.mark.parametrize("name", AUDIO_FILES)
def test_a_reopened_audio_stream_is_the_same_decoder(cache, media, name):
    path = media[name]
    reference = uncached(lambda: AudioDecoder(path))
    AudioDecoder(path)
    again = AudioDecoder(path)
    assert again._demuxer.probe_skipped == (path.suffix in SKIPS_PROBE)
    assert again.stream_index == reference.stream_index
    assert again.metadata == reference.metadata
    expected, got = reference.get_all_samples(), again.get_all_samples()
    np.testing.assert_array_equal(got.data, expected.data)
    assert got.pts_seconds == expected.pts_seconds
    start = reference.metadata.begin_stream_seconds or 0.0
    got_range = again.get_samples_played_in_range(start + 0.25, start + 0.75)
    np.testing.assert_array_equal(got_range.data, reference.get_samples_played_in_range(start + 0.25, start + 0.75).data)


@pytest.mark.parametrize("name", ["h264_aac.mp4", "h264_aac_audio_first.mp4", "two_video_streams.mkv", "vp9.webm",
                                  "h264_offset2.5s.mkv", "aac_stereo_48000.m4a", "av1.mp4", "h264_editlist.mp4"])
def test_without_the_probe_the_packets_and_headers_are_the_same(media, name):
    """A demuxer given the probe state reads exactly the packets, and describes exactly the
    streams, that a probed one does (the claim behind PROBE_SKIPPING_FORMATS)."""
    path = media[name]
    probed = unselected_demuxer(path)
    state = probed._probe_state()
    assert state is not None and state[1] in PROBE_SKIPPING_FORMATS
    restored = unselected_demuxer(path, probe=state)
    assert restored.probe_skipped
    count = restored._num_streams
    assert count == probed._num_streams
    assert restored._container_header() == probed._container_header()
    for i in range(count):
        assert restored._stream_header(i) == probed._stream_header(i)
        if restored._media_type(i) in ("video", "audio"):
            probed._follow(i)
            restored._follow(i)

    def packets(demuxer):
        return [(p.stream_index, p.pts_seconds, p.duration_seconds, p.is_key_frame, p.size) for p in demuxer]

    expected = packets(probed)
    assert expected and packets(restored) == expected


# ---- what is trusted -----------------------------------------------------------------------------

def test_a_changed_file_is_probed_again(cache, media, tmp_path):
    path = tmp_path / "clip.mp4"
    shutil.copyfile(media["h264_bframes.mp4"], path)
    VideoDecoder(path)
    assert VideoDecoder(path)._from_cache
    info = os.stat(path)

    # Rewritten in place, same size and modification time, one byte changed near the end.
    data = bytearray(path.read_bytes())
    data[-100] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))
    assert os.stat(path).st_size == info.st_size and os.stat(path).st_mtime_ns == info.st_mtime_ns
    assert index_cache.lookup(path).probe is None

    # Replaced by another clip: different size.
    shutil.copyfile(media["h264_25fps_2s.mp4"], path)
    assert index_cache.lookup(path).probe is None
    fresh = VideoDecoder(path)
    assert not fresh._from_cache
    reference = uncached(lambda: VideoDecoder(media["h264_25fps_2s.mp4"]))
    assert fresh.metadata == reference.metadata
    again = VideoDecoder(path)
    assert again._from_cache and again.metadata == reference.metadata


def test_the_same_bytes_elsewhere_share_an_entry_but_not_another_path(cache, media, tmp_path):
    copy = tmp_path / "copy.mp4"
    shutil.copyfile(media["h264_bframes.mp4"], copy)
    VideoDecoder(media["h264_bframes.mp4"])
    VideoDecoder(copy)
    assert len(entries(cache)) == 2            # paths are part of the identity


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty", "garbage"])
def test_a_damaged_entry_is_ignored_and_removed(cache, media, damage):
    path = media["h264_bframes.mp4"]
    VideoDecoder(path)
    (entry,) = entries(cache)
    entry_path = cache / entry
    data = bytearray(entry_path.read_bytes())
    if damage == "flip":
        data[len(data) // 2] ^= 0x01
    elif damage == "truncate":
        data = data[:len(data) - 10]
    elif damage == "empty":
        data = bytearray()
    else:
        data = bytearray(os.urandom(len(data)))
    entry_path.write_bytes(bytes(data))
    decoder = VideoDecoder(path)
    assert not decoder._from_cache
    assert decoder.metadata == uncached(lambda: VideoDecoder(path)).metadata
    assert VideoDecoder(path)._from_cache          # rewritten whole by the reopen above


def test_another_files_entry_under_this_key_is_not_trusted(cache, media):
    a, b = media["h264_bframes.mp4"], media["h264_25fps_2s.mp4"]
    VideoDecoder(a)
    (entry_a,) = entries(cache)
    VideoDecoder(b)
    entry_b = next(name for name in entries(cache) if name != entry_a)
    shutil.copyfile(cache / entry_a, cache / entry_b)       # b's key now holds a's (valid) entry
    decoder = VideoDecoder(b)
    assert not decoder._from_cache
    assert decoder.metadata == uncached(lambda: VideoDecoder(b)).metadata
    assert len(decoder) == 50


def test_another_ffmpeg_is_not_trusted(cache, media, monkeypatch):
    path = media["h264_bframes.mp4"]
    VideoDecoder(path)
    monkeypatch.setattr(index_cache, "_ffmpeg_identity", lambda: "61.1.100/61.3.100/59.8.100")
    assert index_cache.lookup(path).probe is None


def hostile_states(state):
    version, name, container, streams, best = state
    first_checks, first_values = streams[0]
    yield [version + 1, name, container, streams, best]
    yield [version, "avi", container, streams, best]
    yield [version, name, container, streams[:-1], best]
    yield [version, name, container[:2], streams, best]
    yield [version, name, [2 ** 70, 0, 0], streams, best]
    yield [version, name, container, streams, {"video": 99, "audio": None}]
    yield [version, name, container, streams, {"video": "0", "audio": None}]
    yield [version, name, container, [[first_checks, first_values[:-1]]] + streams[1:], best]
    yield [version, name, container, [[first_checks, ["x"] + first_values[1:]]] + streams[1:], best]
    yield [version, name, container, [[first_checks, [-1] + first_values[1:]]] + streams[1:], best]
    yield [version, name, container, [[first_checks, [0] * 7 + [2 ** 40] + first_values[8:]]] + streams[1:], best]
    yield [version, name, container, [[first_checks[:1] + [first_checks[1] + 1] + first_checks[2:], first_values]]
           + streams[1:], best]
    yield [version, name, container, [[first_checks[:3] + [first_checks[3] ^ 1] + first_checks[4:], first_values]]
           + streams[1:], best]
    yield "not a state"
    yield [1, 2, 3]
    yield {"a": 1}


def test_a_state_that_does_not_fit_runs_the_probe(media):
    path = media["h264_aac.mp4"]
    probed = unselected_demuxer(path)
    headers = [probed._stream_header(i) for i in range(probed._num_streams)]
    for bad in hostile_states(probed._probe_state()):
        demuxer = unselected_demuxer(path, probe=bad)
        assert not demuxer.probe_skipped, bad
        assert [demuxer._stream_header(i) for i in range(demuxer._num_streams)] == headers


@pytest.mark.parametrize("name", ["mpeg4_bframes.avi", "h264_bframes.ts", "mpeg2_mp2.mpg"])
def test_formats_outside_the_list_are_not_cached(cache, media, name):
    """Without a probe state there is no demuxer that has read nothing to decode from after a scan,
    and these demuxers index what they read: a cached index could decode otherwise than a scan."""
    path = media[name]
    assert unselected_demuxer(path)._probe_state() is None
    reference = uncached(lambda: VideoDecoder(path))
    first = VideoDecoder(path)
    assert entries(cache) == [] and index_cache.lookup(path).indices == {}
    again = VideoDecoder(path)
    assert not first._demuxer.probe_skipped and not again._demuxer.probe_skipped
    assert again.metadata == reference.metadata
    indices = frame_sample(reference)
    np.testing.assert_array_equal(again.get_frames_at(indices).data, reference.get_frames_at(indices).data)


@pytest.mark.parametrize("kind", ["path", "bytes"])
def test_after_a_scan_the_reader_starts_on_an_unread_demuxer(media, kind):
    """Demuxer._unread: the same source again (a shared in-memory source rewound), the same
    followed streams, the probe skipped, nothing read; its packets are those of a fresh open."""
    path = media["h264_aac.mp4"]
    source = path if kind == "path" else path.read_bytes()
    demuxer = unselected_demuxer(source)
    demuxer._follow(0)
    demuxer._scan(0)
    unread = demuxer._unread()
    assert unread.probe_skipped and [s.index for s in unread.streams] == [0]
    fresh = unselected_demuxer(path)
    fresh._follow(0)
    packets = [(p.pts_seconds, p.size, p.is_key_frame) for _, p in zip(range(40), unread)]
    assert packets == [(p.pts_seconds, p.size, p.is_key_frame) for _, p in zip(range(40), fresh)]


def test_file_objects_are_read_from_the_demuxer_that_opened_them(media):
    """A second open of a file object (or a URL) would fetch its header again, through Python or
    the network: it is read as TorchCodec reads it, and never cached."""
    with open(media["h264_aac.mp4"], "rb") as file:
        demuxer = unselected_demuxer(file)
        assert demuxer._probe_state() is not None and demuxer._unread() is None
        file.seek(0)
        decoder = VideoDecoder(file)
        assert not decoder._demuxer.probe_skipped
        reference = VideoDecoder(media["h264_aac.mp4"])
        np.testing.assert_array_equal(decoder.get_frames_at([0, 7, 20]).data, reference.get_frames_at([0, 7, 20]).data)


# ---- sources ---------------------------------------------------------------------------------------

def test_in_memory_sources_are_keyed_by_their_content(cache, media):
    data = media["h264_bframes.mp4"].read_bytes()
    VideoDecoder(data)
    assert VideoDecoder(bytes(data))._from_cache
    assert VideoDecoder(memoryview(data))._from_cache
    assert VideoDecoder(np.frombuffer(data, np.uint8))._from_cache
    changed = bytearray(data)
    changed[-50] ^= 0xFF
    assert not VideoDecoder(changed)._from_cache
    assert len(entries(cache)) == 2


def test_file_objects_and_urls_are_not_cached(cache, media):
    with open(media["h264_bframes.mp4"], "rb") as file:
        assert index_cache.lookup(file) is None
        VideoDecoder(file)
    assert index_cache.lookup("https://example.com/clip.mp4") is None
    assert index_cache.lookup(media["h264_bframes.mp4"].parent) is None     # a directory: not a regular file
    assert entries(cache) == []


# ---- the directory ---------------------------------------------------------------------------------

def test_off_means_nothing_is_written(cache, media):
    torchcodec.set_index_cache(False)
    assert not torchcodec.get_index_cache().enabled
    assert index_cache.lookup(media["h264_bframes.mp4"]) is None
    VideoDecoder(media["h264_bframes.mp4"])
    AudioDecoder(media["h264_aac.mp4"])
    assert not cache.exists()


def test_an_unwritable_directory_costs_only_time(media, tmp_path, monkeypatch):
    monkeypatch.setattr(index_cache, "_settings", None)
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"")
    torchcodec.set_index_cache(True, directory=blocker / "cache")     # its parent is a file: cannot be made
    decoder = VideoDecoder(media["h264_bframes.mp4"])
    assert decoder.metadata == uncached(lambda: VideoDecoder(media["h264_bframes.mp4"])).metadata
    assert not VideoDecoder(media["h264_bframes.mp4"])._from_cache


def test_prune_removes_the_least_recently_used_down_to_the_bound(cache, media, tmp_path):
    names = ["h264_bframes.mp4", "h264_25fps_2s.mp4", "vp9.webm", "h264_vfr.mkv", "av1.mp4"]
    for age, name in enumerate(names):
        VideoDecoder(media[name])
    paths = {name: index_cache.lookup(media[name]).path for name in names}
    for age, name in enumerate(names):                         # the first opened is the oldest
        os.utime(paths[name], (1_000_000 + age, 1_000_000 + age))
    sizes = {name: os.path.getsize(paths[name]) for name in names}
    bound = sum(sizes.values()) - 1
    stale = cache / "123-456-7.part"
    stale.write_bytes(b"left by a writer that died")
    os.utime(stale, (1_000_000, 1_000_000))
    index_cache.prune(str(cache), bound)
    kept = [name for name in names if os.path.exists(paths[name])]
    assert kept == names[len(names) - len(kept):]              # oldest removed first
    assert sum(sizes[name] for name in kept) <= bound * 3 // 4
    assert not stale.exists()
    assert VideoDecoder(media[names[-1]])._from_cache


def test_writes_keep_the_directory_within_its_bound(cache, media, monkeypatch):
    monkeypatch.setattr(index_cache, "PRUNE_EVERY", 1)
    torchcodec.set_index_cache(True, directory=cache, max_bytes=12_000)
    for name in ["h264_bframes.mp4", "h264_25fps_2s.mp4", "vp9.webm", "h264_vfr.mkv", "av1.mp4", "vp8.webm"]:
        VideoDecoder(media[name])
        assert sum(os.path.getsize(cache / entry) for entry in entries(cache)) <= 12_000 + 12_000
    assert sum(os.path.getsize(cache / entry) for entry in entries(cache)) <= 12_000


def test_clear_removes_every_entry(cache, media):
    VideoDecoder(media["h264_bframes.mp4"])
    VideoDecoder(media["vp9.webm"])
    assert torchcodec.clear_index_cache() == 2
    assert entries(cache) == []


def test_settings_from_the_environment(tmp_path):
    code = ("import torchcodec; s = torchcodec.get_index_cache(); print(s.enabled, s.directory, s.max_bytes)")

    def settings(**env):
        environment = {key: value for key, value in os.environ.items() if not key.startswith("TORCHCODEC_INDEX")}
        environment.update(env)
        return subprocess.run([sys.executable, "-P", "-c", code], env=environment, capture_output=True, text=True,
                              check=True).stdout.split()

    assert settings(TORCHCODEC_INDEX_CACHE="0")[0] == "False"
    assert settings(TORCHCODEC_INDEX_CACHE="off")[0] == "False"
    assert settings(TORCHCODEC_INDEX_CACHE=str(tmp_path))[:2] == ["True", str(tmp_path)]
    assert settings(TORCHCODEC_INDEX_CACHE_SIZE="1M", XDG_CACHE_HOME=str(tmp_path)) == [
        "True", str(tmp_path / "torchcodec" / "index"), str(1 << 20)]
    assert settings(HOME=str(tmp_path))[1:] == [str(tmp_path / ".cache" / "torchcodec" / "index"), str(256 << 20)]


def test_setting_errors():
    with pytest.raises(TypeError):
        torchcodec.set_index_cache("yes")
    with pytest.raises(ValueError):
        torchcodec.set_index_cache(True, max_bytes=0)
    with pytest.raises(ValueError):
        torchcodec.set_index_cache(True, max_bytes=True)


def _open_many(directory, paths, rounds, queue):
    torchcodec.set_index_cache(True, directory=directory)
    results = []
    for _ in range(rounds):
        for path in paths:
            decoder = VideoDecoder(path)
            frame = decoder.get_frame_at(len(decoder) // 2).data
            results.append((path, len(decoder), decoder.metadata.duration_seconds, int(np.asarray(frame).sum())))
    queue.put(results)


def test_several_processes_share_one_directory(cache, media):
    paths = [str(media[name]) for name in ["h264_bframes.mp4", "vp9.webm", "h264_vfr.mkv", "mpeg4_bframes.avi"]]
    expected = {}
    for path in paths:
        decoder = uncached(lambda: VideoDecoder(path))
        expected[path] = (len(decoder), decoder.metadata.duration_seconds,
                          int(np.asarray(decoder.get_frame_at(len(decoder) // 2).data).sum()))
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    workers = [context.Process(target=_open_many, args=(str(cache), paths, 4, queue)) for _ in range(4)]
    for worker in workers:
        worker.start()
    results = [queue.get(timeout=120) for _ in workers]
    for worker in workers:
        worker.join(timeout=60)
        assert worker.exitcode == 0
    for result in results:
        assert len(result) == 4 * len(paths)
        for path, *values in result:
            assert tuple(values) == expected[path]
    cached = paths[:-1]                     # not the AVI (test_formats_outside_the_list_are_not_cached)
    assert len(entries(cache)) == len(cached)
    assert not [name for name in os.listdir(cache) if name.endswith(".part")]
    assert all(index_cache.lookup(path).indices for path in cached)


# ---- the serialized index ----------------------------------------------------------------------------

def test_the_frame_index_round_trips_through_bytes_and_pickle(media):
    decoder = VideoDecoder(media["h264_vfr.mkv"])
    len(decoder)                                    # the whole index (it is lazy)
    index = decoder._frames.index
    assert len(index) > 0
    for copy in (FrameIndex._from_bytes(index._to_bytes()), pickle.loads(pickle.dumps(index))):
        assert len(copy) == len(index) and copy.pts_from_dts == index.pts_from_dts
        for name in ("pts_seconds", "duration_seconds", "is_key_frame", "key_frame_indices"):
            np.testing.assert_array_equal(np.asarray(getattr(copy, name)), np.asarray(getattr(index, name)))
        assert copy._to_bytes() == index._to_bytes()


def test_damaged_index_bytes_are_refused(media):
    decoder = VideoDecoder(media["h264_bframes.mp4"])
    len(decoder)                                             # the whole index (it is lazy)
    data = bytearray(decoder._frames.index._to_bytes())
    for bad in (bytes(data[:-1]), bytes(data[:10]), b"", bytes(data) + b"\0"):
        with pytest.raises(ValueError):
            FrameIndex._from_bytes(bad)
    flag = bytearray(data)
    flag[25 + 24] = 7                                        # the first frame's key flag
    with pytest.raises(ValueError):
        FrameIndex._from_bytes(bytes(flag))
    order = bytearray(data)
    order[25 + 25:25 + 33] = (-5).to_bytes(8, "little", signed=True)    # the second frame before the first
    with pytest.raises(ValueError):
        FrameIndex._from_bytes(bytes(order))
