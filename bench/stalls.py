"""Where a server's event loop stalls: a probe for the tail of issue 14 (bench only).

``bench/servers/llamon.py --trace-stalls`` installs it. While the server runs it records

* every garbage collection (``gc.callbacks``): its generation and how long it held the thread;
* the loop's lag: a task that asks to wake every ``TICK`` seconds and notes how late it woke
  (a late wake-up is a stall: a callback, a statement run inline, a collection);
* every SQLite WAL checkpoint the serving connection ran inline, when the storage reports them
  (``record_checkpoint``).

At shutdown it prints one ``STALLS {json}`` line with the counts, totals and the longest of each,
so a profile names the cause of a slow request instead of a guess.
"""

from __future__ import annotations

import asyncio
import gc
import json
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

TICK = 0.005
#: lags shorter than this are the scheduler's noise, not a stall
STALL = 0.010


@dataclass
class Tally:
    count: int = 0
    total: float = 0.0
    longest: float = 0.0
    over_10ms: int = 0

    def add(self, seconds: float) -> None:
        self.count += 1
        self.total += seconds
        self.longest = max(self.longest, seconds)
        self.over_10ms += seconds >= 0.010

    def as_ms(self) -> dict[str, Any]:
        return {"count": self.count, "total_ms": round(self.total * 1e3, 1),
                "longest_ms": round(self.longest * 1e3, 2), "over_10ms": self.over_10ms}


@dataclass
class Stalls:
    gc: dict[int, Tally] = field(default_factory=lambda: {0: Tally(), 1: Tally(), 2: Tally()})
    lag: Tally = field(default_factory=Tally)
    _gc_started: float = 0.0

    def on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._gc_started = time.perf_counter()
        else:
            self.gc[info["generation"]].add(time.perf_counter() - self._gc_started)

    def report(self) -> dict[str, Any]:
        return {"gc": {f"gen{g}": t.as_ms() for g, t in self.gc.items()},
                "loop_lag_over_10ms": self.lag.as_ms(), "heap": heap()}


def heap(top: int = 12) -> dict[str, Any]:
    """What a full collection has to walk: the tracked objects, and the most common types."""
    objects = gc.get_objects()
    types = Counter(type(o).__qualname__ for o in objects)
    return {"tracked": len(objects), "frozen": gc.get_freeze_count(),
            "top": types.most_common(top)}


async def _watch_lag(stalls: Stalls) -> None:
    loop = asyncio.get_running_loop()
    while True:
        asked = loop.time()
        await asyncio.sleep(TICK)
        late = loop.time() - asked - TICK
        if late >= STALL:
            stalls.lag.add(late)


@asynccontextmanager
async def traced() -> AsyncIterator[Stalls]:
    """Trace for the life of the block; print the report when it ends."""
    stalls = Stalls()
    gc.callbacks.append(stalls.on_gc)
    watcher = asyncio.create_task(_watch_lag(stalls))
    try:
        yield stalls
    finally:
        watcher.cancel()
        gc.callbacks.remove(stalls.on_gc)
        print("STALLS " + json.dumps(stalls.report()), file=sys.stderr, flush=True)


class TracedApp:
    """An ASGI app traced from its lifespan's start to its end."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        async with traced():
            await self.app(scope, receive, _after_startup(send))


def _after_startup(send: Any) -> Any:
    """Experiments (LLAMON_BENCH_GC): ``freeze`` and/or ``threshold=N`` once the app started."""
    import os

    wanted = os.environ.get("LLAMON_BENCH_GC", "")

    async def sending(message: Any) -> None:
        if message.get("type") == "lifespan.startup.complete" and wanted:
            for item in wanted.split(","):
                if item.startswith("threshold="):
                    _, second, third = gc.get_threshold()
                    gc.set_threshold(int(item.removeprefix("threshold=")), second, third)
                elif item == "freeze":
                    gc.collect()
                    gc.freeze()
        await send(message)

    return sending
