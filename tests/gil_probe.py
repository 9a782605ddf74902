"""Whether a call releases the GIL: a helper thread stamps the time about once a millisecond, and
only the stamps that fall strictly inside one call count.

The helper needs the GIL for each stamp. While the probe runs, the interpreter's forced switch
interval is raised to far longer than any call, so the helper can take the GIL only when the
calling thread gives it up of its own accord (a ``with nogil:`` block, a blocking system call).
A call that holds the GIL throughout, or a Python loop over calls that each hold it, therefore
gets no stamp inside it; a call that releases it for d seconds gets about d / 1 ms.
tests/test_gil_probe.py proves both on known calls (sorted() of a big list, time.sleep()).
"""
from __future__ import annotations

import bisect
import dataclasses
import sys
import threading
import time
from typing import Callable

TICK = 0.001                # the helper's sleep between stamps (seconds)
SWITCH_INTERVAL = 10.0      # the forced switch interval while probing: longer than any probed call


@dataclasses.dataclass(frozen=True)
class Probe:
    ticks: int              # the most stamps strictly inside one call
    seconds: float          # that call's duration
    calls: int              # how many calls were made

    def __str__(self) -> str:
        return f"{self.ticks} ticks inside a call of {self.seconds * 1000:.1f} ms (best of {self.calls} calls)"


def ticks_inside(call: Callable[[], object], *, wanted: int = 10, at_most: float = 5.0) -> Probe:
    """Call ``call()`` repeatedly until one call has had ``wanted`` stamps strictly between its
    start and its end, or ``at_most`` seconds have passed (a loaded machine may not wake the helper
    at once); the best call's count."""
    stamps: list[float] = []
    done = threading.Event()

    def stamp() -> None:
        while not done.is_set():
            stamps.append(time.perf_counter())
            time.sleep(TICK)

    interval = sys.getswitchinterval()
    helper = threading.Thread(target=stamp)
    helper.start()
    while not stamps:                                 # the helper runs before the first call
        time.sleep(TICK)
    sys.setswitchinterval(SWITCH_INTERVAL)
    try:
        best, calls, deadline = Probe(0, 0.0, 0), 0, time.perf_counter() + at_most
        while True:
            start = time.perf_counter()
            call()
            end = time.perf_counter()
            calls += 1
            inside = bisect.bisect_left(stamps, end) - bisect.bisect_right(stamps, start)
            if inside >= best.ticks:
                best = Probe(inside, end - start, calls)
            if best.ticks >= wanted or end >= deadline:
                return dataclasses.replace(best, calls=calls)
    finally:
        sys.setswitchinterval(interval)
        done.set()
        helper.join()


def assert_releases_the_gil(call: Callable[[], object], *, wanted: int = 10, at_most: float = 5.0) -> Probe:
    """Fail unless one call of ``call()`` let the helper stamp ``wanted`` times while it ran. The
    call must last well over ``wanted`` milliseconds for a pass to be possible."""
    probe = ticks_inside(call, wanted=wanted, at_most=at_most)
    assert probe.ticks >= wanted, f"the GIL was not released: {probe}"
    return probe
