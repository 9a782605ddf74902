"""The output pool (torchcodec.set_output_pool): CPU outputs of 256 KiB or more reuse the memory of freed ones.

The references are the same requests with the pool off: every byte must be equal. The rest is the
pool's own rules: only freed memory is handed out again, only to an output of about its size,
within its bound in bytes and blocks (for large outputs and for medium ones), and small outputs
are the bridge's own.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import torchcodec
from torchcodec import _memory, _outputs
from torchcodec._outputs._host_array import HostArray
from torchcodec._outputs._pool import DEFAULT_POOL_BYTES, MEDIUM_MIN_BYTES, POOL_MIN_BYTES, output_pool_stats
from torchcodec.decoders import AudioDecoder, VideoDecoder

MIB = 1 << 20


@pytest.fixture(autouse=True)
def pool():
    """Each test starts with an empty pool of the default size, and leaves one behind."""
    torchcodec.set_output_pool(0)
    torchcodec.set_output_pool(DEFAULT_POOL_BYTES)
    yield
    torchcodec.set_output_pool(0)
    torchcodec.set_output_pool(DEFAULT_POOL_BYTES)


def address(array) -> int:
    return array.__array_interface__["data"][0]


def owner(array):
    """What owns an array's memory: the end of its chain of bases (a memoryview's: its object)."""
    while not isinstance(array, HostArray):
        base = array.obj if isinstance(array, memoryview) else array.base
        if base is None:
            break
        array = base
    return array


def allocate(nbytes: int):
    return _outputs.allocate((nbytes,), "uint8", bridge="numpy").data


def round_up(nbytes: int, unit: int) -> int:
    return (nbytes + unit - 1) // unit * unit


def test_a_freed_batch_is_reused_and_frames_are_unchanged(media):
    path = media["h264_1080p.mp4"]
    decoder = VideoDecoder(path)
    assert 12 * 1080 * 1920 * 3 >= POOL_MIN_BYTES and len(decoder) >= 24
    first = decoder.get_frames_in_range(0, 12).data
    assert isinstance(owner(first), HostArray)
    where = address(first)
    del first
    assert output_pool_stats()[0] == 1
    reused_before = output_pool_stats()[2]
    second = decoder.get_frames_in_range(12, 24).data
    assert address(second) == where and output_pool_stats()[2] == reused_before + 1
    torchcodec.set_output_pool(0)
    reference = VideoDecoder(path).get_frames_in_range(12, 24).data
    assert not isinstance(owner(reference), HostArray)
    np.testing.assert_array_equal(second, reference)


def test_memory_in_use_is_never_handed_out(media):
    decoder = VideoDecoder(media["h264_1080p.mp4"])
    kept = decoder.get_frames_in_range(0, 12).data
    copy = kept.copy()
    other = decoder.get_frames_in_range(12, 24).data
    assert address(other) != address(kept)
    frame = kept[3]                              # a view keeps the whole block alive
    del kept
    third = decoder.get_frames_in_range(0, 12).data
    np.testing.assert_array_equal(frame, copy[3])
    np.testing.assert_array_equal(third, copy)
    assert not np.shares_memory(third, frame)


def test_small_outputs_are_the_bridges_own(media):
    small = VideoDecoder(media["h264_bt709.mp4"]).get_frame_at(0).data          # 320x240 RGB: 225 KiB
    assert small.nbytes < MEDIUM_MIN_BYTES and not isinstance(owner(small), HostArray)
    frame = VideoDecoder(media["h264_1080p.mp4"]).get_frame_at(0).data          # 6 MiB: the medium class
    assert MEDIUM_MIN_BYTES <= frame.nbytes < POOL_MIN_BYTES and isinstance(owner(frame), HostArray)
    assert not isinstance(owner(allocate(MEDIUM_MIN_BYTES - 1)), HostArray)
    assert isinstance(owner(allocate(MEDIUM_MIN_BYTES)), HostArray)
    assert isinstance(owner(allocate(POOL_MIN_BYTES)), HostArray)


def test_medium_outputs_freed_together_are_all_reused():
    """100 one-second stereo float32 audio ranges kept, then freed: the next 100 get the same memory
    (glibc would trim its heap and fault it in again), and stay writable and apart."""
    size = 2 * 48000 * 4
    first = [allocate(size) for _ in range(100)]
    where = {address(block) for block in first}
    del first
    assert output_pool_stats()[:2] == (100, 100 * round_up(size, 4096))
    reused_before, allocated_before = output_pool_stats()[2:]
    second = [allocate(size) for _ in range(100)]
    assert {address(block) for block in second} == where
    assert output_pool_stats()[2:] == (reused_before + 100, allocated_before)
    for k, block in enumerate(second):
        block[:] = k % 251
    assert all(block[0] == block[-1] == k % 251 for k, block in enumerate(second))


def test_a_medium_output_that_no_idle_block_fits_leaves_them_waiting():
    kept = allocate(1 * MIB)
    where = address(kept)
    del kept
    other = allocate(300 << 10)                  # 1 MiB is more than a quarter larger than asked
    assert isinstance(owner(other), HostArray) and address(other) != where
    assert output_pool_stats()[:2] == (1, MIB)
    again = allocate(MIB - 4096)
    assert address(again) == where and output_pool_stats()[0] == 0


def test_the_medium_class_keeps_its_bounds():
    blocks = [allocate(MEDIUM_MIN_BYTES) for _ in range(150)]
    del blocks
    count, idle = output_pool_stats()[:2]
    assert count == 128 and idle == 128 * MEDIUM_MIN_BYTES     # at most 128 medium blocks wait
    torchcodec.set_output_pool(0)
    torchcodec.set_output_pool(DEFAULT_POOL_BYTES)
    blocks = [allocate(8 * MIB) for _ in range(12)]
    del blocks
    count, idle = output_pool_stats()[:2]
    assert count == 8 and idle == 64 * MIB                     # and at most 64 MiB of them
    torchcodec.set_output_pool(2 * MIB)         # a smaller pool bounds the medium class too
    assert output_pool_stats()[:2] == (0, 0)
    assert not isinstance(owner(allocate(4 * MIB)), HostArray)
    assert isinstance(owner(allocate(MIB)), HostArray)
    torchcodec.set_output_pool(0)
    assert not isinstance(owner(allocate(MIB)), HostArray)


def test_audio_ranges_from_the_pool_equal_those_without_it(media):
    path = media["aac_music_44100_8s.m4a"]
    ranges = [(0.5, 1.5), (3.25, 4.25), (0.75, 1.75), (6.0, 7.0)]
    decoder = AudioDecoder(path)
    pooled = [decoder.get_samples_played_in_range(start, stop).data for start, stop in ranges]
    assert all(isinstance(owner(samples), HostArray) for samples in pooled)
    torchcodec.set_output_pool(0)
    decoder = AudioDecoder(path)
    for (start, stop), samples in zip(ranges, pooled):
        np.testing.assert_array_equal(samples, decoder.get_samples_played_in_range(start, stop).data)


def test_a_block_goes_only_to_an_output_of_about_its_size():
    block = allocate(64 * MIB)
    where = address(block)
    del block
    assert output_pool_stats()[:2] == (1, 64 * MIB)
    fits = allocate(56 * MIB)                    # a block may be at most a quarter larger than asked
    assert address(fits) == where and output_pool_stats()[0] == 0
    fits[:] = 7                                  # all of it is writable
    assert fits.sum() == 7 * 56 * MIB
    del fits
    assert output_pool_stats()[:2] == (1, 64 * MIB)
    # An output that no idle block fits frees them first: idle memory never adds to a peak.
    smaller = allocate(40 * MIB)
    assert output_pool_stats()[:2] == (0, 0)
    del smaller
    larger = allocate(65 * MIB)
    assert output_pool_stats()[:2] == (0, 0) and isinstance(owner(larger), HostArray)


def test_the_pool_keeps_its_bounds():
    blocks = [allocate((33 + i) * MIB) for i in range(6)]
    del blocks
    count, idle = output_pool_stats()[:2]
    assert count == 4 and idle <= DEFAULT_POOL_BYTES    # at most four blocks wait
    torchcodec.set_output_pool(80 * MIB)                        # a smaller bound frees the oldest now
    count, idle = output_pool_stats()[:2]
    assert count == 2 and idle <= 80 * MIB
    big = allocate(100 * MIB)                   # larger than the pool: never pooled, freed at once
    assert not isinstance(owner(big), HostArray)
    torchcodec.set_output_pool(0)
    assert output_pool_stats()[:2] == (0, 0)
    assert not isinstance(owner(allocate(64 * MIB)), HostArray)
    assert torchcodec.get_output_pool() == 0


def test_torch_outputs_use_the_pool_too(media):
    torch = pytest.importorskip("torch")
    decoder = VideoDecoder(media["h264_1080p.mp4"])
    with torchcodec.bridge("torch"):
        first = decoder.get_frames_in_range(0, 12).data
        assert isinstance(first, torch.Tensor)
        where = first.data_ptr()
        del first
        second = decoder.get_frames_in_range(12, 24).data
        assert second.data_ptr() == where
    torchcodec.set_output_pool(0)
    reference = VideoDecoder(media["h264_1080p.mp4"]).get_frames_in_range(12, 24).data
    np.testing.assert_array_equal(second.numpy(), reference)


@pytest.mark.parametrize("bad", [-1, 1.5, "1G", True, None])
def test_setting_errors(bad):
    with pytest.raises(ValueError, match="output pool"):
        torchcodec.set_output_pool(bad)


@pytest.mark.parametrize("value, expected", [("0", 0), ("1G", 1 << 30), ("64M", 64 << 20), ("", 512 << 20),
                                             ("lots", 512 << 20)])
def test_the_environment_sets_the_default(value, expected):
    code = ("import warnings, torchcodec\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    print(torchcodec.get_output_pool(), len(caught))\n")
    result = subprocess.run([sys.executable, "-P", "-c", code], capture_output=True, text=True, check=True,
                            env={**os.environ, "TORCHCODEC_OUTPUT_POOL": value})
    size, warned = map(int, result.stdout.split())
    assert size == expected and warned == (value == "lots")


def test_idle_blocks_are_freed_before_a_request_is_refused(monkeypatch):
    """Under the default limit (the memory available now), what the pool holds idle is this
    process's to give back: a request it would otherwise refuse frees the idle blocks first."""
    monkeypatch.delenv(_memory.ENVIRONMENT_VARIABLE, raising=False)
    torchcodec.set_memory_limit(None)
    block = allocate(64 * MIB)
    del block
    assert output_pool_stats()[0] == 1
    monkeypatch.setattr(_memory, "_available_memory",
                        lambda: (200 if output_pool_stats()[0] == 0 else 100) * MIB)
    assert _memory.check_request("a test", other_bytes=150 * MIB) == 150 * MIB
    assert output_pool_stats()[:2] == (0, 0)
    with pytest.raises(MemoryError, match="the memory available now"):
        _memory.check_request("a test", other_bytes=250 * MIB)

