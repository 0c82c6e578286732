"""Per-task event logs with numbered events, replay and live fan-out.

Every event of a task gets the next sequence number (the SSE ``id:``). A log keeps the latest
events of its task so that ``tasks/resubscribe`` with ``Last-Event-ID`` can replay exactly what a
client missed. Publishing never blocks and never awaits: a subscriber whose buffer is full is
evicted (its stream ends and it can resubscribe), so one slow reader cannot wedge a run.
Subscribing is synchronous, so taking a snapshot and registering cannot miss an event.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import OrderedDict, deque
from collections.abc import AsyncIterator
from itertools import islice
from typing import Any

from pydantic import ValidationError

from ..a2a.types import Message, Task, TaskArtifactUpdateEvent, TaskStatusUpdateEvent, WireModel

__all__ = ["Event", "EventHub", "EventLog", "Subscription", "iterate", "prepend", "settled"]

Event = tuple[int, WireModel]  # immutable wire objects: serialised only when delivered
#: an event of a finished log, kept as its kind and its wire JSON (``EventLog.close``)
_Packed = tuple[int, str, bytes]

_KINDS: dict[str, type[WireModel]] = {
    "status-update": TaskStatusUpdateEvent, "artifact-update": TaskArtifactUpdateEvent,
    "message": Message,
}


def _unpack(event: Event | _Packed) -> Event:
    if len(event) == 2:
        return event
    seq, kind, data = event
    return seq, _KINDS[kind].model_validate_json(data)


class Subscription:
    def __init__(self, log: EventLog, backlog: list[Event], limit: int) -> None:
        self._log = log
        self._queue: deque[Event] = deque(backlog)
        self._limit = limit
        self._wakeup = asyncio.Event()
        self._closed = False
        self.evicted = False
        #: set once the reader has handled its first event: it came back for the next one,
        #: or it is gone (``first_handled``)
        self._handled = asyncio.Event()
        if backlog:
            self._wakeup.set()

    def _push(self, event: Event) -> None:
        if len(self._queue) >= self._limit:
            self.evicted = True
            self._close()
            return
        self._queue.append(event)
        self._wakeup.set()

    def _close(self) -> None:
        self._closed = True
        self._wakeup.set()

    def close(self) -> None:
        self._log._subscribers.discard(self)
        self._close()

    async def first_handled(self, timeout: float) -> None:
        """Wait, at most ``timeout`` seconds, until the reader has handled its first event.

        A streamed turn waits here before its graph runs: the run otherwise takes the event
        loop for its first steps while the stream's response is still being set up, and the
        client's first event (the task, stored) waited for them (bench/README.md, "Speed,
        round four"). The bound keeps a reader that never reads from holding the run."""
        if self._handled.is_set():
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._handled.wait()

    async def __aiter__(self) -> AsyncIterator[Event]:
        try:
            while True:
                while self._queue and not self.evicted:
                    yield self._queue.popleft()
                    self._handled.set()
                if self._closed:
                    return
                self._wakeup.clear()
                await self._wakeup.wait()
        finally:
            self._handled.set()
            self.close()


class EventLog:
    def __init__(self, task_id: str, last_seq: int, retain: int, buffer: int) -> None:
        self.task_id = task_id
        self.seq = last_seq
        self.events: deque[Event | _Packed] = deque(maxlen=retain)
        self.snapshot: Any = None  # the latest Task object, for resubscribe
        self.finished = True
        self._subscribers: set[Subscription] = set()
        self._buffer = buffer
        self._dropped = 0  # the latest seq of an event dropped from the middle of ``events``
        #: events at the end of ``events`` not packed yet: this turn's (``close`` packs them)
        self._unpacked = 0

    def publish(self, seq: int, payload: WireModel, *, final: bool = False) -> None:
        self.seq = seq
        if isinstance(payload, Task):
            self._drop_snapshots()
        event = (seq, payload)
        self.events.append(event)
        self._unpacked += 1
        for sub in list(self._subscribers):
            sub._push(event)
        if final:
            self.close()

    def close(self) -> None:
        """The turn is over: end every live subscription (a no-op after a final event).

        A finished log lets go of its task: of the latest Task (a resubscribe to a task that
        is not running reads it from the store), and of the turn's Task event, which held
        the whole task as the turn began. The hub keeps up to ``keep_finished`` logs; a copy of
        each task besides the store's was most of a gigabyte of the large-answers benchmark
        (docs/storage.md), and encoding it was a third of what ending a turn cost its events
        (bench/README.md, "Speed, round thirty-one"). A replay from before it falls back to the store, as for
        events no longer retained: the task as it stands, then its latest status.

        The turn's other events are kept as their wire JSON from here on: the hub's finished
        logs hold the most objects of a busy server (about 100 per task as pydantic models,
        each a dict and a set), all long-lived, so every collection of the older generations
        walked them and they set its length (bench/README.md, "Speed, round four"). Bytes
        hold no references: the collector skips them. A late replay reads them back
        (``replay_after``). Only this turn's events are packed: the earlier turns' were."""
        self.finished = True
        self.snapshot = None
        self._pack_turn()
        for sub in list(self._subscribers):
            sub._close()
        self._subscribers.clear()

    def _pack_turn(self) -> None:
        events = self.events
        turn = [events.pop() for _ in range(min(self._unpacked, len(events)))]
        self._unpacked = 0
        for seq, payload in reversed(turn):  # type: ignore[misc]  # this turn's: unpacked
            if isinstance(payload, Task):
                self._dropped = max(self._dropped, seq)
            else:
                kind: str = getattr(payload, "kind")  # every event of _KINDS has one  # noqa: B009
                events.append((seq, kind, payload.to_json()))

    def _drop_snapshots(self) -> None:
        """Keep one Task snapshot: each turn starts with one holding the whole task, read anew
        from the store, so keeping every turn's held turns x history (a task of many small
        answers: hundreds of MB, and pauses of over a second; docs/storage.md).
        Replays from before a dropped snapshot fall back as for events no longer retained.
        Only the running turn's events can hold one: ``close`` drops a turn's."""
        if not self._unpacked:
            return
        kept: deque[Event | _Packed] = deque(maxlen=self.events.maxlen)
        for event in self.events:
            if isinstance(event[1], Task):
                self._dropped = max(self._dropped, event[0])
            else:
                kept.append(event)
        self.events = kept
        self._unpacked = sum(len(event) == 2 for event in kept)

    def replay_after(self, seq: int) -> list[Event] | None:
        """Events after ``seq``, or ``None`` when some of them are no longer retained."""
        if seq >= self.seq:
            return []
        if self._dropped > seq or not self.events or self.events[0][0] > seq + 1:
            return None
        try:
            return [_unpack(e) for e in self.events if e[0] > seq]
        except ValidationError:  # written by this process, so never expected: read the store
            return None

    def subscribe(self, backlog: list[Event] | None = None) -> Subscription:
        sub = Subscription(self, backlog or [], self._buffer)
        if self.finished:
            sub._close()
        else:
            self._subscribers.add(sub)
        return sub


class EventHub:
    """Logs of running tasks, plus the most recently finished ones for late replays."""

    def __init__(self, keep_finished: int = 1024, retain: int = 1024, buffer: int = 4096) -> None:
        self._logs: OrderedDict[str, EventLog] = OrderedDict()
        self._keep = keep_finished
        self._retain = retain
        self._buffer = buffer

    def get(self, task_id: str) -> EventLog | None:
        return self._logs.get(task_id)

    def open(self, task_id: str, last_seq: int) -> EventLog:
        log = self._logs.get(task_id)
        if log is None:
            log = self._logs[task_id] = self.new_log(task_id, last_seq, self._retain, self._buffer)
        self._logs.move_to_end(task_id)
        log.finished = False
        self._trim()
        return log

    def new_log(self, task_id: str, last_seq: int, retain: int, buffer: int) -> EventLog:
        """A new task's log. A hub for replicas returns a log that also relays its events
        (``backends/redis_events.py``)."""
        return EventLog(task_id, last_seq, retain, buffer)

    def discard(self, task_id: str) -> None:
        """Close and forget a task's log (a task whose recovery failed: readers go to the
        store, which says ``failed``)."""
        log = self._logs.pop(task_id, None)
        if log is not None:
            log.close()

    def _trim(self) -> None:
        """Forget the oldest finished logs beyond ``keep_finished`` (oldest first, stop early)."""
        excess = len(self._logs) - self._keep
        if excess <= 0:
            return
        # picked while walking (stopping at the last one needed), deleted after: a full hub
        # trims one log per new task, and copying the first eighth of the hub's ids each time
        # cost more than the trim itself
        doomed: list[str] = []
        for task_id, log in islice(self._logs.items(), excess + len(self._logs) // 8):
            if log.finished:
                doomed.append(task_id)
                if len(doomed) == excess:
                    break
        for task_id in doomed:
            del self._logs[task_id]


async def iterate(events: list[Event]) -> AsyncIterator[Event]:
    for event in events:
        yield event


async def prepend(first: list[Event], rest: AsyncIterator[Event]) -> AsyncIterator[Event]:
    for event in first:
        yield event
    async for event in rest:
        yield event


async def settled(log: EventLog, timeout: float) -> None:
    """Wait until ``log`` publishes a final event, at most ``timeout`` seconds."""
    subscription = log.subscribe()

    async def drain() -> None:
        async for _ in subscription:
            pass

    try:
        await asyncio.wait_for(drain(), timeout)
    except TimeoutError:
        pass
    finally:
        subscription.close()
