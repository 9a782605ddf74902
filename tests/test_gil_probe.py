"""The GIL probe (tests/gil_probe.py) against calls whose GIL use is known: it must fail a call that
holds the GIL, alone or in a Python loop, and pass one that releases it, or the package's GIL
tests (test_threads_fork_pickle, test_blocks, test_image_safety) prove nothing."""
from __future__ import annotations

import random
import sys
import time

import pytest

from gil_probe import TICK, assert_releases_the_gil, ticks_inside

pytestmark = pytest.mark.skipif(not getattr(sys, "_is_gil_enabled", lambda: True)(),
                                reason="a free-threaded Python runs without the GIL")

# sorted() of a list of ints runs in C and holds the GIL throughout (its comparisons call no Python);
# shuffled, so that it takes ~0.2 s (a run that is already ordered is sorted in one pass).
UNSORTED = random.Random(1).sample(range(1 << 30), 800_000)


def _sorted_call_seconds() -> float:
    start = time.perf_counter()
    sorted(UNSORTED)
    return time.perf_counter() - start


def test_the_probe_fails_a_call_that_holds_the_gil():
    # long enough that a call releasing the GIL as long would pass several times over
    assert _sorted_call_seconds() > 4 * 10 * TICK
    with pytest.raises(AssertionError, match="the GIL was not released"):
        assert_releases_the_gil(lambda: sorted(UNSORTED), at_most=1.0)
    assert ticks_inside(lambda: sorted(UNSORTED), at_most=1.0).ticks <= 1


def test_the_probe_fails_a_python_loop_over_calls_that_hold_the_gil():
    """The interpreter hands the GIL over between bytecodes every 5 ms: the probe must not count
    those hand-offs as a release (they happen with any Python loop)."""
    chunks = [UNSORTED[i::8] for i in range(8)]

    def loop() -> None:
        for chunk in chunks:
            sorted(chunk)

    with pytest.raises(AssertionError, match="the GIL was not released"):
        assert_releases_the_gil(loop, at_most=1.0)


def test_the_probe_passes_a_call_that_releases_the_gil():
    probe = assert_releases_the_gil(lambda: time.sleep(0.05))
    assert probe.ticks <= probe.seconds / TICK + 1
