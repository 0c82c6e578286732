"""``Admission``: how many JSON-RPC requests are served at once while the event loop is saturated.

A server whose loop has no idle time gains no throughput from starting one more request: the
request only waits for the loop beside the others. It costs, though: every request in flight
holds its objects (the parsed body, the task, a LangGraph run and its checkpoint) while the
loop turns through all the others, so the more are in flight, the colder each one's memory when
its turn comes. On PostgreSQL, 32 connections sending at once cost each request about a
third more of the server's CPU than 16 did, and the rate fell by as much (bench/README.md,
"Speed, round fourteen"). Holding the requests beyond ``limit`` until one finishes took that
back.

A limit alone would starve servers whose agents mostly wait (for a model's API, for a child
agent): their requests use little of the loop, and a request waiting for a child agent on the
same server must not wait long for its child's admission. So a request is held only while the
loop is saturated: over the last ``window`` seconds, the loop thread was running, or ready to
run and waiting for a core, at least ``busy`` of the time. Its CPU time alone would read a
loop that shares its core with other processes as having time to spare; Linux gives both
times in ``/proc/thread-self/schedstat`` (elsewhere the CPU time, ``time.thread_time``, is
read). A waiting request is let in when a served one finishes (one for one, in arrival
order), or once the loop is no longer saturated (checked every ``window`` while requests
wait, so within two windows): a loop with time to spare lets every waiting request in.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

__all__ = ["Admission", "loop_thread_demand"]

_SCHEDSTAT = "/proc/thread-self/schedstat"


def loop_thread_demand() -> Callable[[], float]:
    """A clock of the seconds the calling thread ran or was ready to run (Linux's schedstat:
    its time on a core plus its time waiting in a run queue), or its CPU time where that
    file cannot be read."""
    try:
        with open(_SCHEDSTAT, "rb") as stats:
            _read_demand(stats.read())
    except (OSError, ValueError):
        return time.thread_time
    return _demand


def _demand() -> float:
    try:
        with open(_SCHEDSTAT, "rb") as stats:
            return _read_demand(stats.read())
    except (OSError, ValueError):  # readable when checked: a failure now reads as
        return 0.0  # idle for one window, and the next success as busy for one


def _read_demand(text: bytes) -> float:
    running, waiting, *_ = text.split()
    return (int(running) + int(waiting)) / 1e9


class Admission:
    """``async with admission.admitted():`` around the serving of one request.

    ``limit`` of ``None`` admits everything at once (the gate is off). ``cpu_clock`` is the
    seconds the loop thread has been busy (default :func:`loop_thread_demand`: other threads,
    such as SQLite's, never make the loop look busy) and ``clock`` the time it is compared
    with."""

    def __init__(
        self, limit: int | None, *, window: float = 0.05, busy: float = 0.75,
        cpu_clock: Callable[[], float] | None = None,
        clock: Callable[[], float] = time.monotonic,
        observe: Callable[[int], None] | None = None,
    ) -> None:
        if limit is not None and limit < 1:
            raise ValueError(f"the limit must be at least 1, got {limit!r}")
        if window <= 0 or not 0 < busy <= 1:
            raise ValueError("window must be above 0 and busy within (0, 1]")
        self._limit = limit
        self._window = window
        self._busy = busy
        self._cpu_clock = cpu_clock or loop_thread_demand()
        self._clock = clock
        self._active = 0
        self._waiting: deque[asyncio.Future[None]] = deque()
        self._recheck: asyncio.TimerHandle | None = None
        self._since = clock()
        self._cpu_since = self._cpu_clock()
        self._load = 0.0  # the loop's busy share over the last whole window
        #: told +1 when a request starts waiting, -1 when it stops (admitted or gone)
        self._observe = observe or (lambda change: None)

    def start(self) -> None:
        """The app starts serving: the load is read from now on (building the app and
        opening its storage kept the loop busy, and says nothing about the requests)."""
        self._since, self._cpu_since, self._load = self._clock(), self._cpu_clock(), 0.0

    @property
    def limit(self) -> int | None:
        """Requests served at once while the loop is saturated; ``None``: no limit."""
        return self._limit

    @property
    def active(self) -> int:
        """Requests being served now."""
        return self._active

    @property
    def waiting(self) -> int:
        """Requests waiting for admission now."""
        return sum(1 for waiter in self._waiting if not waiter.done())

    @asynccontextmanager
    async def admitted(self) -> AsyncIterator[None]:
        if self._limit is not None and self._active >= self._limit and self._saturated():
            await self._wait()  # the slot is handed over already counted
        else:
            self._active += 1
        try:
            yield
        finally:
            self._leave()

    def _saturated(self) -> bool:
        now = self._clock()
        elapsed = now - self._since
        if elapsed >= self._window:
            cpu = self._cpu_clock()
            self._load = (cpu - self._cpu_since) / elapsed
            self._since, self._cpu_since = now, cpu
        return self._load >= self._busy

    async def _wait(self) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        self._observe(1)
        self._arm()
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._leave()  # admitted as it was cancelled: the slot goes to the next one
            raise
        finally:
            self._observe(-1)

    def _leave(self) -> None:
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():  # a cancelled one is done: skipped
                waiter.set_result(None)  # the slot passes on; the count stays
                return
        self._active -= 1

    def _arm(self) -> None:
        if self._recheck is None:
            loop = asyncio.get_running_loop()
            self._recheck = loop.call_later(self._window, self._check_waiting)

    def _check_waiting(self) -> None:
        """While requests wait: once the loop has time to spare, let every one of them in."""
        self._recheck = None
        if not self._saturated():
            while self._waiting:
                waiter = self._waiting.popleft()
                if not waiter.done():
                    self._active += 1
                    waiter.set_result(None)
        if self._waiting:
            self._arm()

    def close(self) -> None:
        """The app stops: every waiting request is let in (the shutdown's grace decides how
        long each may run), and the recheck timer stops."""
        if self._recheck is not None:
            self._recheck.cancel()
            self._recheck = None
        while self._waiting:
            waiter = self._waiting.popleft()
            if not waiter.done():
                self._active += 1
                waiter.set_result(None)
