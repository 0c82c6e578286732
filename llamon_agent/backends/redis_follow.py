"""Following tasks' Redis streams live: one reader for every subscriber of this process.

A ``StreamFollower`` owns one background task that blocks in ``XREAD`` on every followed
stream at once (one connection, however many subscribers), plus a wake-up stream of its own, so
that a new subscription is read at once instead of after the current block. Each subscription
keeps its own position (the id of the last entry it consumed); the reader reads each stream from
the lowest position among its subscribers and hands an entry only to the subscribers behind it,
so a subscriber that joins late is not skipped and none gets an entry twice.

Like ``events.Subscription``, a subscription buffers at most ``limit`` events: a slow reader is
evicted (its stream ends; it can resubscribe), never waited for. A numbering gap (events the
stream no longer holds, or a turn recovered after a crash numbering again) also ends it: a
follower's stream is gap-free or ended.

A follower never waits forever for a replica that died mid-turn (``kill -9``: nobody writes the
final event). While it waits, a subscription whose stream has been quiet for ``quiet`` seconds
asks ``stale`` (the publisher's check: the stream expired, or the store holds a later, not
running state of the task than the stream gave) and ends when it says so; and whatever
``stale`` says, it ends after ``idle_limit`` seconds without an event (``None``: never). Either
way the client resubscribes, and then reads what the stream or the store says at that time. The
checks run in the subscriber's own iteration (no task per subscription), so a subscriber that
is not reading is not checked: its buffer bounds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..core.background import stop_task
from ..runtime.events import Event
from .redis_stream import CLOSE, Entry, StreamId, decode, format_id, parse_id

__all__ = ["Quiet", "RemoteSubscription", "Stale", "StreamFollower"]

log = logging.getLogger(__name__)

#: ``stale(last_seq)``: has the followed stream stopped for good, the subscriber having seen
#: every event up to ``last_seq``?
Stale = Callable[[int], Awaitable[bool]]


@dataclass(frozen=True)
class Quiet:
    """When a quiet stream is checked (``quiet`` seconds without an event) and when it is let
    go whatever the check says (``idle_limit`` seconds; ``None``: never)."""

    quiet: float = 10.0
    idle_limit: float | None = 300.0

    def __post_init__(self) -> None:
        if not self.quiet > 0:
            raise ValueError(f"quiet must be a positive number of seconds, got {self.quiet!r}")
        if self.idle_limit is not None and not self.idle_limit > 0:
            raise ValueError(
                f"idle_limit must be positive seconds or None, got {self.idle_limit!r}")


class RemoteSubscription:
    def __init__(
        self, follower: StreamFollower, key: str, position: StreamId, last_seq: int,
        backlog: list[Event], limit: int, quiet: Quiet, stale: Stale | None = None,
    ) -> None:
        self._follower = follower
        self.key = key
        self.position = position
        self._last_seq = last_seq
        self._queue: deque[Event] = deque(backlog)
        self._limit = limit
        self._quiet = quiet
        self._stale = stale
        self._heard = asyncio.get_running_loop().time()  # when the last event came
        self._wakeup = asyncio.Event()
        self._closed = False
        self.evicted = False
        if backlog:
            self._wakeup.set()

    def offer(self, entry: Entry) -> None:
        """An entry read from the stream; those at or before the position were seen already."""
        if self._closed or entry.id <= self.position:
            return
        self.position = entry.id
        if entry.kind == CLOSE:
            self.close()
            return
        if entry.seq != self._last_seq + 1:
            log.info("stream %s: event %d after %d; ending the follower", self.key, entry.seq,
                     self._last_seq)
            self.close()
            return
        if len(self._queue) >= self._limit:
            self.evicted = True
            self.close()
            return
        self._last_seq = entry.seq
        self._heard = asyncio.get_running_loop().time()
        self._queue.append(entry.event)
        self._wakeup.set()
        if entry.final:
            self.close()

    def close(self) -> None:
        self._closed = True
        self._wakeup.set()
        self._follower._drop(self)

    @property
    def closed(self) -> bool:
        return self._closed

    async def __aiter__(self) -> AsyncIterator[Event]:
        try:
            while True:
                while self._queue and not self.evicted:
                    yield self._queue.popleft()
                if self._closed:
                    return
                self._wakeup.clear()
                await self._next()
        finally:
            self.close()

    async def _next(self) -> None:
        """Wait for the next entry (or the close); close a stream that stopped for good."""
        loop = asyncio.get_running_loop()
        while not self._wakeup.is_set():
            limit = self._quiet.idle_limit
            left = None if limit is None else self._heard + limit - loop.time()
            if left is not None and left <= 0:
                log.info("stream %s: no event for %s s; ending the follower", self.key, limit)
                self.close()
                return
            try:
                # asyncio.timeout, not wait_for: a cancel of the subscriber is never lost
                async with asyncio.timeout(self._quiet.quiet if left is None
                                           else min(self._quiet.quiet, left)):
                    await self._wakeup.wait()
            except TimeoutError:
                await self._check()

    async def _check(self) -> None:
        seen = self._last_seq
        if self._stale is None or self._closed:
            return
        try:
            stale = await self._stale(seen)
        except Exception:  # Redis or the store away: the idle limit still bounds the wait
            log.exception("stream %s: checking a quiet stream failed", self.key)
            return
        if stale and self._last_seq == seen:  # nothing came while it was checked
            log.info("stream %s: stopped after event %d; ending the follower", self.key, seen)
            self.close()


class StreamFollower:
    """An async context manager: entering starts the reader, leaving stops it and ends every
    subscription (and deletes the wake-up stream)."""

    def __init__(
        self, redis: Any, prefix: str, *, buffer: int = 4096, block: float = 1.0,
        count: int = 256, quiet: Quiet | None = None,
    ) -> None:
        self._redis = redis
        self._quiet = quiet or Quiet()
        self._wake_key = f"{prefix}_wake:{uuid.uuid4().hex}"
        self._wake_cursor = "0-0"
        self._buffer = buffer
        self._block_ms = max(1, int(block * 1000))
        self._count = count
        self._subs: dict[str, set[RemoteSubscription]] = {}
        self._reader: asyncio.Task[None] | None = None

    @property
    def following(self) -> int:
        """Subscriptions open now (for tests and metrics)."""
        return sum(len(subs) for subs in self._subs.values())

    async def __aenter__(self) -> StreamFollower:
        self._wake_cursor = format_id(parse_id(await self._wake()))
        self._reader = asyncio.create_task(self._run(), name="llamon-redis-follower")
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._reader is not None:
            await stop_task(self._reader)  # one cancel may be lost (core/background.py)
            self._reader = None
        for subs in list(self._subs.values()):
            for sub in list(subs):
                sub.close()
        with contextlib.suppress(Exception):  # Redis gone: the key expires on its own
            await self._redis.delete(self._wake_key)

    async def follow(
        self, key: str, position: StreamId, last_seq: int, backlog: list[Event],
        stale: Stale | None = None,
    ) -> RemoteSubscription:
        """A subscription to ``key`` after the entry ``position`` (the last one the caller
        read), whose next event must be numbered ``last_seq + 1``; ``stale`` is asked when
        the stream has gone quiet."""
        if self._reader is None:
            raise RuntimeError("the follower is not running (use it as an async context)")
        sub = RemoteSubscription(self, key, position, last_seq, backlog, self._buffer,
                                 self._quiet, stale)
        self._subs.setdefault(key, set()).add(sub)
        await self._wake()
        return sub

    def _drop(self, sub: RemoteSubscription) -> None:
        subs = self._subs.get(sub.key)
        if subs is not None:
            subs.discard(sub)
            if not subs:
                del self._subs[sub.key]

    async def _wake(self) -> Any:
        """Interrupt the reader's block, so that it reads the streams followed now."""
        async with self._redis.pipeline(transaction=False) as pipe:
            pipe.xadd(self._wake_key, {b"w": b"1"}, maxlen=1)
            pipe.expire(self._wake_key, 3600)
            added, _ = await pipe.execute()
        return added

    async def _run(self) -> None:
        while True:
            streams = {self._wake_key: self._wake_cursor}
            for key, subs in self._subs.items():
                streams[key] = format_id(min(sub.position for sub in subs))
            try:
                result = await self._redis.xread(streams, count=self._count, block=self._block_ms)
            except asyncio.CancelledError:
                raise
            except Exception:  # Redis away: positions are kept, reading resumes where it was
                log.exception("reading the event streams failed; retrying")
                await asyncio.sleep(1.0)
                continue
            for raw_key, entries in result or []:
                key = raw_key.decode() if isinstance(raw_key, bytes) else raw_key
                if key == self._wake_key:
                    self._wake_cursor = format_id(parse_id(entries[-1][0]))
                    continue
                for raw_id, fields in entries:
                    followers = self._subs.get(key)
                    if not followers:
                        break
                    entry = decode(raw_id, fields)
                    for sub in list(followers):
                        sub.offer(entry)
