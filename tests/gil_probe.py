"""Whether a workload releases the GIL: a counter thread ticks while the work runs on this thread."""
from __future__ import annotations

import threading
import time
from typing import Callable


def ticks_during(work: Callable[[], object], *, wanted: int = 10, at_least: float = 0.5,
                 at_most: float = 10.0) -> tuple[int, float, int]:
    """Run ``work()`` repeatedly for ``at_least`` seconds, and on until a counter thread (sleeping
    1 ms between ticks, so it needs the GIL about once a millisecond) has ticked ``wanted`` times
    meanwhile, or ``at_most`` seconds have passed (a loaded machine may not schedule it at once).
    Returns (ticks while the work ran, seconds it ran, times it ran). Work that held the GIL
    throughout would see no tick at all."""
    ticks: list[float] = []
    done = threading.Event()

    def count() -> None:
        while not done.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    counter = threading.Thread(target=count)
    counter.start()
    try:
        while not ticks:                          # the counter runs before the work starts
            time.sleep(0.001)
        start = time.perf_counter()
        runs = 0
        while True:
            work()
            runs += 1
            now = time.perf_counter()
            during = sum(1 for t in ticks if start < t < now)
            if now - start >= at_least and (during >= wanted or now - start >= at_most):
                return during, now - start, runs
    finally:
        done.set()
        counter.join()
