"""The garbage collector while an app serves (issue 14; bench/README.md, "Tail latency").

A profile of the server under HITL load (``bench/run.py --trace-stalls``) showed the tail: a
full (generation 2) collection every 0.7 s, each holding the event loop for 60 to 140 ms, so
every request in flight waited that long; 52 of them took 4.4 s of a 40 s run. Two causes: the
collector walked the whole heap built at start (the modules, the compiled graphs: 220,000
objects) every time, and a turn's short-lived objects outlived the young generation's tiny
threshold (700 allocations) and were promoted, so the oldest generation kept growing.

While an app serves: the objects that exist once it has started are frozen (``gc.freeze``: a
full collection no longer walks them; they are still freed by reference counting), and the
youngest generation collects after ``FIRST_GENERATION`` allocations, so what a request leaves
behind dies young. Nothing is switched off: every generation still collects, and the
thresholds and the frozen objects are given back when the last serving app stops.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["FIRST_GENERATION", "tuned_collector"]

#: allocations between two collections of the youngest generation (Python's default: 700)
FIRST_GENERATION = 20_000


class _Tuning:
    """Process-wide: the first app to serve tunes the collector, the last to stop restores it
    (tests run many apps in one process, some at once)."""

    def __init__(self) -> None:
        self.holders = 0
        self.saved: tuple[int, int, int] | None = None

    def enter(self, first_generation: int) -> None:
        if self.holders == 0:
            self.saved = gc.get_threshold()
            gc.freeze()
            gc.set_threshold(first_generation, self.saved[1], self.saved[2])
        self.holders += 1

    def leave(self) -> None:
        self.holders -= 1
        if self.holders == 0 and self.saved is not None:
            gc.set_threshold(*self.saved)
            gc.unfreeze()
            self.saved = None


_TUNING = _Tuning()


@contextmanager
def tuned_collector(first_generation: int = FIRST_GENERATION) -> Iterator[None]:
    _TUNING.enter(first_generation)
    try:
        yield
    finally:
        _TUNING.leave()
