"""``RedisPublisher``: the event publisher for replicas (``runtime.publisher.EventPublisher``).

It is the in-process ``LocalPublisher`` (storing, numbering, local fan-out: a state is stored
before any client sees it) whose task logs also relay every numbered event to a Redis stream per
task (``<prefix><task id>``, ``XADD ... MAXLEN ~ retain``), in the order of the numbers. A
turn's end, a final event and an event stored with the task are awaited until Redis has them
(with every event of the task queued before them): a client that reads that state on another
replica finds the stream as far. Every write is sent at once on the relay's own connection
(``redis_pipe.py``), behind the writes still waiting for their replies: the streams stay in
order and a turn waits for nobody's round trip but its own (bench/README.md, "Speed, rounds
sixteen and seventeen"); a Redis that answers nothing for ``write_timeout`` seconds fails the
writes due (logged), and the turns go on. Any other event (a snapshot not stored, ``working``,
progress) is written by a background writer about ``relay_delay`` seconds later, or sooner with
the next awaited one: the turn does not wait for it, and one write carries several events,
also of other turns (bench/README.md, "Speed, round ten"). Once ``_BACKLOG`` events are queued a
turn waits for the write: it never runs far ahead of Redis. A stream whose task's turn ended
expires after ``finished_ttl`` seconds; one still running (or parked for a reviewer) after
``running_ttl``, renewed by every batch written to it.

``resubscribe`` on any replica: a task running in this process is served from its log, as in
one process; otherwise the task's stream is read (``XRANGE``) and decides:

* the stream shows the turn running: it is followed live (``redis_follow.StreamFollower``, one
  ``XREAD BLOCK`` for all subscribers) until the final event. ``Last-Event-ID`` replays exactly
  the events after it while the stream holds them (an id past the stream's last event is read
  again once, after twice ``relay_delay``: the owner may not have relayed it yet); otherwise a
  snapshot comes first (the turn's ``Task`` event from the stream, with id 0, then the events
  after it), as in ``LocalPublisher``. This replica's store need not know the task: it is
  read to see whether it holds an end the stream never got (then it answers, as below), and
  for the snapshot only when the stream lost the turn's ``Task`` event;
* the stream holds the turn's final event: ``Last-Event-ID`` replays what is missing and ends;
  otherwise the task as stored and its final status (``LocalPublisher``'s answer), or, when
  this replica's store does not know the task, the turn's snapshot and events from the stream;
* the stream says nothing (expired, or never written): the store.

A follower never waits forever for a replica that died mid-turn (``kill -9``), which leaves a
stream that looks running until ``running_ttl``. Once a followed stream has been quiet for
``quiet`` seconds, the follower checks it: it ends if the stream is gone (expired), or if the
store holds a state that is not running and numbered after the last event the follower got (the
owner stored its ending and died before relaying it; a resubscribe then reads the store, for
the same reason). Whatever the checks say, it ends after ``idle_limit`` seconds without any
event (``None``: never), which bounds a dead owner whose task the store still shows running
(until a replica takes it over, which numbers again: the follower sees the gap). A turn parked
for a reviewer is quiet for as long as the reviewer takes: its followers end at the idle limit
too. In every case the client resubscribes (with ``Last-Event-ID``) and gets what the stream or
the store says then.

Redis failing is logged and does not stop a turn (the store is the truth): a follower elsewhere
that then misses events sees the numbering gap and its stream ends; the client resubscribes.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import hiredis

from ..a2a.types import RUNNING_STATES, Task, TaskStatusUpdateEvent, WireModel
from ..core.background import stop_task
from ..core.ports import HumanReviewPort
from ..errors import TaskNotFoundError
from ..runtime.ending import Ending
from ..runtime.events import Event, EventHub, EventLog, iterate, prepend
from ..runtime.observer import NO_OBSERVER, TaskObserver
from ..runtime.publisher import LocalPublisher
from ..runtime.turn import Turn
from ..stores.base import StoredTask, TaskStore
from .redis_follow import Quiet, StreamFollower
from .redis_pipe import Command, RedisPipe
from .redis_stream import Entry, decode, encode, replay_after, run_of

__all__ = ["RedisPublisher"]

log = logging.getLogger(__name__)

_KEYS_PER_DELETE = 500  # one DEL per this many deleted tasks' streams
_BACKLOG = 256  # events queued for Redis at which a publishing turn waits for the write
_RELAY_MARGIN = 0.05  # seconds a relayed write may take beyond its delay


@dataclass(frozen=True)
class _Outgoing:
    task_id: str
    seq: int
    payload: WireModel | None  # None: a close marker
    final: bool


class _RelayedLog(EventLog):
    """A task's log that hands every event (and a close without a final event) to the relay."""

    def __init__(
        self, task_id: str, last_seq: int, retain: int, buffer: int,
        relay: Callable[[_Outgoing], None],
    ) -> None:
        super().__init__(task_id, last_seq, retain, buffer)
        self._relay = relay
        self._ending = False

    def publish(self, seq: int, payload: WireModel, *, final: bool = False) -> None:
        self._relay(_Outgoing(self.task_id, seq, payload, final))
        self._ending = final
        try:
            super().publish(seq, payload, final=final)
        finally:
            self._ending = False

    def close(self) -> None:
        if not self.finished and not self._ending:
            self._relay(_Outgoing(self.task_id, self.seq, None, False))
        super().close()


class _RelayHub(EventHub):
    def __init__(self, relay: Callable[[_Outgoing], None], *, keep_finished: int, retain: int,
                 buffer: int) -> None:
        super().__init__(keep_finished=keep_finished, retain=retain, buffer=buffer)
        self._relay = relay

    def new_log(self, task_id: str, last_seq: int, retain: int, buffer: int) -> EventLog:
        return _RelayedLog(task_id, last_seq, retain, buffer, self._relay)


class RedisPublisher(LocalPublisher):
    """An async context manager: entering connects (given a URL) and starts the follower and
    the relay's writer; leaving writes what is still queued, ends every follower's stream and
    closes the connection it opened (a client passed in is left open)."""

    def __init__(
        self, store: TaskStore, reviews: HumanReviewPort | None, redis: Any, *,
        prefix: str = "llamon:events:", retain: int = 1024, buffer: int = 4096,
        keep_finished: int = 1024, finished_ttl: float = 600.0, running_ttl: float = 86400.0,
        block: float = 1.0, quiet: float = 10.0, idle_limit: float | None = 300.0,
        relay_delay: float = 0.02, write_timeout: float = 10.0,
        observer: TaskObserver = NO_OBSERVER,
    ) -> None:
        hub = _RelayHub(self._enqueue, keep_finished=keep_finished, retain=retain, buffer=buffer)
        super().__init__(store, reviews, hub, observer=observer)
        self._url = redis if isinstance(redis, str) else None
        self._redis: Any = None if isinstance(redis, str) else redis
        self._prefix = prefix
        self._retain = retain
        self._buffer = buffer
        self._block = block
        if not relay_delay >= 0:
            raise ValueError(f"relay_delay must be seconds >= 0, got {relay_delay!r}")
        self._relay_delay = relay_delay
        self._quiet = Quiet(quiet, idle_limit)
        self._finished_ms = int(finished_ttl * 1000)
        self._running_ms = int(running_ttl * 1000)
        self._outbox: deque[_Outgoing] = deque()
        self._pending = asyncio.Event()
        #: per task, the latest write in flight that carries its events (done when it is)
        self._writing: dict[str, asyncio.Future[list[Any]]] = {}
        if not write_timeout > 0:
            raise ValueError(f"write_timeout must be seconds > 0, got {write_timeout!r}")
        self._write_timeout = write_timeout
        self._pipe: RedisPipe | None = None
        self._writer: asyncio.Task[None] | None = None
        self._follower: StreamFollower | None = None

    def key(self, task_id: str) -> str:
        return f"{self._prefix}{task_id}"

    async def forget(self, task_ids: Sequence[str]) -> None:
        """The deleted tasks' streams go too (a stream expires ``finished_ttl`` after its
        task's turn ends anyway; a context deleted sooner must not leave its events)."""
        await super().forget(task_ids)
        keys = [self.key(task_id) for task_id in task_ids]
        for start in range(0, len(keys), _KEYS_PER_DELETE):
            await self._redis.delete(*keys[start:start + _KEYS_PER_DELETE])

    @property
    def following(self) -> int:
        """Subscriptions to other processes' streams open now."""
        return self._follower.following if self._follower is not None else 0

    # ------------------------------------------------------------------ lifecycle

    async def __aenter__(self) -> RedisPublisher:
        if self._url is not None:
            from redis.asyncio import Redis

            self._redis = Redis.from_url(self._url)
        try:
            self._pipe = await RedisPipe(self._redis, reply_timeout=self._write_timeout).__aenter__()
            self._follower = StreamFollower(self._redis, self._prefix, buffer=self._buffer,
                                            block=self._block, quiet=self._quiet)
            await self._follower.__aenter__()
            self._writer = asyncio.create_task(self._write_forever(), name="llamon-redis-relay")
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._writer is not None:
            await stop_task(self._writer)  # one cancel may be lost (core/background.py)
            self._writer = None
        if self._redis is not None:
            await self._drain()  # close markers queued by the last turns' ends
        if self._pipe is not None:  # kept: a write after this fails (logged), as Redis gone
            await self._pipe.__aexit__(*exc)
        if self._follower is not None:
            await self._follower.__aexit__(*exc)
            self._follower = None
        if self._url is not None and self._redis is not None:
            await self._redis.aclose()
            self._redis = None

    # ------------------------------------------------------------------ relay

    def _enqueue(self, item: _Outgoing) -> None:
        self._outbox.append(item)
        self._pending.set()

    async def _write_forever(self) -> None:
        """Writes what no turn's end flushed: the events before a turn's end (after
        ``relay_delay``, so that they share a pipeline) and a synchronous close's marker."""
        while True:
            await self._pending.wait()
            await asyncio.sleep(self._relay_delay)
            await self._drain()

    async def _drain(self, task_id: str | None = None) -> None:
        """Return once the events queued so far of ``task_id`` (of every task: ``None``) are in
        Redis, or given up on (Redis failed: logged).

        What is queued is sent now, on the one connection of the relay's writes
        (``redis_pipe.py``), right behind the writes in flight, whose replies it does not wait
        for: a stream's events stay in the order sent, and a turn waits for its own round trip
        only. Waiting behind the other turns' writes, as one write at a time did, kept every
        turn that ended meanwhile (its request, its objects) waiting too, and that cost about a
        quarter of the server's CPU per round trip (bench/README.md, "Speed, round sixteen");
        a redis-py pipeline per write cost about a tenth ("Speed, round seventeen")."""
        if self._outbox:
            self._write_queued()  # sent before this returns: a turn cancelled now drops nothing
        # the write that carries the task's latest events: this call's, or an earlier one's
        if task_id is None:
            waits = set(self._writing.values())
        elif task_id in self._writing:
            waits = {self._writing[task_id]}
        else:
            return
        if waits:  # asyncio.wait neither raises a failed write's error nor cancels the write
            await asyncio.wait(waits)

    def _write_queued(self) -> None:
        """Send what is queued now, after every earlier write; each of the batch's tasks'
        ``_writing`` entry follows it until Redis has answered."""
        if self._pipe is None:
            raise RuntimeError("the publisher is not running (use it as an async context)")
        batch = list(self._outbox)
        self._outbox.clear()
        self._pending.clear()
        commands: list[Command] = []
        expiry: dict[str, int] = {}  # a stream's last event in the batch decides
        for item in batch:
            key = self.key(item.task_id)
            ends = item.final or item.payload is None
            fields = encode(item.seq, item.payload, item.final)
            commands.append((b"XADD", key, b"MAXLEN", b"~", self._retain, b"*",
                             *(part for pair in fields.items() for part in pair)))
            expiry[key] = self._finished_ms if ends else self._running_ms
        commands.extend((b"PEXPIRE", key, ms) for key, ms in expiry.items())
        done = self._pipe.send(commands)
        task_ids = {item.task_id for item in batch}
        for task_id in task_ids:
            self._writing[task_id] = done
        done.add_done_callback(functools.partial(self._written, len(batch), task_ids))

    def _written(self, events: int, task_ids: set[str], done: asyncio.Future[list[Any]]) -> None:
        for task_id in task_ids:
            if self._writing.get(task_id) is done:
                del self._writing[task_id]
        # followers see the numbering gap of what Redis did not take and end their streams
        exc = done.exception()
        if exc is not None:
            log.error("%d events could not be written to Redis: %s", events, exc)
            return
        refused = [reply for reply in done.result() if isinstance(reply, hiredis.ReplyError)]
        if refused:
            log.error("Redis refused %d of the commands writing %d events: %s",
                      len(refused), events, refused[0])

    async def publish(
        self, turn: Turn, payload: WireModel, *, save: bool, final: bool = False
    ) -> None:
        await super().publish(turn, payload, save=save, final=final)
        # a stored state or a final event: a client may read it on any replica now (a
        # ``tasks/get``, a resubscribe), and the stream there must not be behind the store
        if save or final or len(self._outbox) >= _BACKLOG:
            await self._drain(turn.record.id)

    async def end(self, turn: Turn, ending: Ending) -> None:
        await super().end(turn, ending)
        await self._drain(turn.record.id)

    # ------------------------------------------------------------------ resubscribe

    async def resubscribe(self, task_id: str, last_event_id: int | None) -> AsyncIterator[Event]:
        local = self._hub.get(task_id)
        if local is not None and not local.finished:  # its turn runs here
            return await super().resubscribe(task_id, last_event_id)
        if self._follower is None:
            raise RuntimeError("the publisher is not running (use it as an async context)")
        key = self.key(task_id)
        entries = await self._entries(key)
        if last_event_id is not None and _short_of(entries, last_event_id):
            # the client saw events on the owner that its writer has not relayed yet
            await asyncio.sleep(2 * self._relay_delay + _RELAY_MARGIN)
            entries = await self._entries(key)
        if not entries:  # expired, or never written: only the store knows
            return self._stored(task_id, await self._store.get(task_id))
        run = run_of(entries)
        if entries[-1].closes:
            return await self._finished(task_id, run, last_event_id)
        record = await self._store.get(task_id)
        if _ahead(record, run[-1].seq):  # the owner stored an end it never relayed
            return self._stored(task_id, record)
        if last_event_id is not None:
            backlog = replay_after(entries, last_event_id)
            if backlog:
                return (await self._follow(task_id, entries, backlog)).__aiter__()
        turn = _turn_of(run)
        if turn is not None:
            task, backlog = turn
            sub = await self._follow(task_id, entries, backlog)
            return prepend([(0, task)], sub.__aiter__())
        if record is None:  # the stream lost the turn's start, and the store never knew it
            raise TaskNotFoundError(data={"taskId": task_id})
        sub = await self._follow(task_id, entries, [])
        return prepend([(0, record.task)], sub.__aiter__())

    async def _entries(self, key: str) -> list[Entry]:
        return [decode(i, f) for i, f in await self._redis.xrange(key, "-", "+")]

    async def _finished(
        self, task_id: str, run: list[Entry], last_event_id: int | None
    ) -> AsyncIterator[Event]:
        """A turn whose final event (or close) is on the stream: what is missing after
        ``last_event_id``; else the task as stored; else, when the store does not know it,
        the turn as the stream holds it."""
        if last_event_id is not None:
            backlog = replay_after(run, last_event_id)
            if backlog:
                return iterate(backlog)
        record = await self._store.get(task_id)
        turn = _turn_of(run)
        if record is None and turn is not None:
            task, events = turn
            return iterate([(0, task), *events])
        return self._stored(task_id, record)

    async def _follow(self, task_id: str, entries: list[Entry], backlog: list[Event]) -> Any:
        assert self._follower is not None
        key = self.key(task_id)
        run = run_of(entries)
        last_seq = run[-1].seq if run else 0
        return await self._follower.follow(
            key, entries[-1].id, last_seq, backlog,
            stale=functools.partial(self._stale, key, task_id),
        )

    async def _stale(self, key: str, task_id: str, last_seq: int) -> bool:
        """Has a quiet stream stopped for good: expired, or behind what the store holds?"""
        if not await self._redis.exists(key):
            return True
        return _ahead(await self._store.get(task_id), last_seq)

    def _stored(self, task_id: str, record: StoredTask | None) -> AsyncIterator[Event]:
        """The task as stored, then its final status (as ``LocalPublisher`` for a task that does
        not run)."""
        if record is None:
            raise TaskNotFoundError(data={"taskId": task_id})
        final = TaskStatusUpdateEvent(
            task_id=record.id, context_id=record.context_id, status=record.task.status,
            final=True,
        )
        events: list[Event] = [(0, record.task), (record.event_seq, final)]
        return iterate(events)


def _ahead(record: StoredTask | None, seq: int) -> bool:
    """Does the store hold an end of the task numbered after ``seq``? (A new turn's first
    write may come after its first events: a stored state that is still running, or numbered
    before them, is not ahead.)"""
    return record is not None and record.state not in RUNNING_STATES and record.event_seq > seq


def _short_of(entries: list[Entry], last_event_id: int) -> bool:
    """Does the stream show a turn running whose events stop before ``last_event_id``?"""
    if not entries or entries[-1].closes:
        return False
    run = run_of(entries)
    return bool(run) and run[-1].seq < last_event_id


def _turn_of(run: list[Entry]) -> tuple[Task, list[Event]] | None:
    """The run's latest ``Task`` event and the events after it, or ``None`` (trimmed away)."""
    for i in range(len(run) - 1, -1, -1):
        if run[i].kind == "task":
            task = run[i].event[1]
            assert isinstance(task, Task)
            return task, [e.event for e in run[i + 1:]]
    return None
