"""Events of a task: numbered, stored before they are published, replayed on resubscribe.

A task is stored before any client can see its id (a stream or a non-blocking send) and
whenever a turn ends, always before the event that shows that state is published: no client
sees a state a crash could take back. While a turn runs, its live record is the truth for
reads, so one write per turn is enough.

``EventPublisher`` is the seam for many processes: ``LocalPublisher`` fans events out to this
process's subscribers (``events.py``); a version for replicas also publishes where the other
replicas' subscribers read (Redis), behind the same calls.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Protocol

from ..a2a.types import (
    TERMINAL_STATES,
    DataPart,
    Message,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
    TextPart,
    WireModel,
)
from ..core.ports import HumanReviewPort
from ..errors import TaskNotFoundError
from ..stores.base import StoredTask, TaskStore
from . import messages
from .ending import Ending
from .events import Event, EventHub, EventLog, iterate, prepend
from .expiry import stamp
from .observer import NO_OBSERVER, TaskObserver, notify_state
from .turn import Turn

__all__ = ["EventPublisher", "LocalPublisher"]

log = logging.getLogger(__name__)

#: told of every stored write of a task (``EventPublisher.on_saved``)
SaveListener = Callable[[StoredTask], Awaitable[None]]


class EventPublisher(Protocol):
    def open(self, task_id: str, last_seq: int) -> EventLog:
        """The task's event log for a new turn (numbering goes on from ``last_seq``)."""
        ...

    def discard(self, task_id: str) -> None: ...

    async def forget(self, task_ids: Sequence[str]) -> None:
        """The events of deleted tasks (retention, a context deletion): this process's logs,
        and wherever else they are kept (a Redis stream)."""
        ...

    async def save(self, record: StoredTask) -> None: ...

    def on_saved(self, listener: SaveListener) -> None:
        """``listener(record)`` runs after every stored write of a task (push notifications)."""
        ...

    async def publish(
        self, turn: Turn, payload: WireModel, *, save: bool, final: bool = False
    ) -> None: ...

    async def set_status(
        self, turn: Turn, state: str, message: Message | None = None, *,
        final: bool = False, save: bool = True,
    ) -> None: ...

    async def publish_status(self, turn: Turn, *, final: bool, save: bool) -> None: ...

    async def end(self, turn: Turn, ending: Ending) -> None: ...

    async def progress(self, turn: Turn, chunk: Any) -> None: ...

    async def resubscribe(
        self, task_id: str, last_event_id: int | None
    ) -> AsyncIterator[Event]: ...


class LocalPublisher:
    def __init__(
        self, store: TaskStore, reviews: HumanReviewPort | None, hub: EventHub | None = None,
        observer: TaskObserver = NO_OBSERVER,
    ) -> None:
        self._store = store
        self._reviews = reviews
        self._hub = hub or EventHub()
        self._observer = observer
        self._saved: list[SaveListener] = []

    def open(self, task_id: str, last_seq: int) -> EventLog:
        return self._hub.open(task_id, last_seq)

    def discard(self, task_id: str) -> None:
        """Close and forget a task's log: readers go to the store."""
        self._hub.discard(task_id)

    async def forget(self, task_ids: Sequence[str]) -> None:
        for task_id in task_ids:
            self._hub.discard(task_id)

    def on_saved(self, listener: SaveListener) -> None:
        self._saved.append(listener)

    async def save(self, record: StoredTask) -> None:
        """Every write of a task goes here. A terminal state closes the task's pending reviews,
        so a reviewer deciding afterwards is told (409) instead of deciding nothing; only for
        a task that opened one (``StoredTask.reviews_opened``, stored before any review of it
        exists: ``task_reviews.py``), the others cost no statement. The listeners (push
        notifications) hear of every write once it is stored."""
        await self._store.save(record)
        for listener in self._saved:
            try:
                await listener(record)
            except Exception:  # the write is stored: a listener never undoes or stops it
                log.exception("a listener of task %s's write failed", record.id)
        if (record.state not in TERMINAL_STATES or self._reviews is None
                or not record.reviews_opened):
            return
        try:
            ended = "failed" if record.state == "failed" else f"was {record.state}"
            await self._reviews.close_for_task(record.id, f"the task {ended}")
        except Exception:  # the task's end is stored: report it even so
            log.exception("reviews of task %s could not be closed", record.id)

    async def publish(
        self, turn: Turn, payload: WireModel, *, save: bool, final: bool = False
    ) -> None:
        """Number the event; store first when asked."""
        record = turn.record
        record.event_seq += 1
        if save:
            await self.save(record)
        if final and turn.on_stored is not None:
            await turn.on_stored(turn)
        turn.log.snapshot = record.task
        turn.log.publish(record.event_seq, payload, final=final)
        self._observe(turn)

    def _observe(self, turn: Turn) -> None:
        if turn.observed != turn.record.state:
            turn.observed = turn.record.state
            notify_state(self._observer, turn.record)

    async def set_status(
        self, turn: Turn, state: str, message: Message | None = None, *,
        final: bool = False, save: bool = True,
    ) -> None:
        record = turn.record
        record.task = record.task.model_copy(update={"status": messages.status(state, message)})
        await self.publish_status(turn, final=final, save=save)

    async def publish_status(self, turn: Turn, *, final: bool, save: bool) -> None:
        record = turn.record
        stamp(record, turn.served)
        event = TaskStatusUpdateEvent(
            task_id=record.id, context_id=record.context_id, status=record.task.status, final=final
        )
        await self.publish(turn, event, final=final, save=save)

    async def end(self, turn: Turn, ending: Ending) -> None:
        """One write for the whole ending, then its events: the artifact, the final status.

        The ending is built on a copy and becomes the live record only once it is stored and
        the context's claim is back (``Turn.on_stored``): a client that reads the end (a
        ``tasks/get`` while the turn runs reads the live record) finds the context free."""
        live = turn.record
        record = live.twin()
        record.resuming = None  # the turn is over: a takeover has nothing to run again
        record.pending_interrupt = ending.pending[0].id if ending.pending else None
        if ending.pending:
            record.pending = tuple(ending.pending)
        update: dict[str, Any] = {"status": messages.status(ending.state, ending.message)}
        if ending.artifact is not None:
            update["artifacts"] = [*(record.task.artifacts or []), ending.artifact]
        record.task = record.task.model_copy(update=update)
        stamp(record, turn.served)  # a question's deadline, shown in its ``hitl`` part
        events: list[WireModel] = []
        if ending.artifact is not None:
            events.append(TaskArtifactUpdateEvent(
                task_id=record.id, context_id=record.context_id, artifact=ending.artifact,
                append=False, last_chunk=True,
            ))
        events.append(TaskStatusUpdateEvent(
            task_id=record.id, context_id=record.context_id, status=record.task.status,
            final=ending.final,
        ))
        turn.parked = ending.parked
        first = record.event_seq + 1
        record.event_seq += len(events)  # the stored task knows the ids of its final events
        await self.save(record)
        if turn.on_stored is not None:
            await turn.on_stored(turn)
        live.__dict__.update(record.__dict__)  # the same object: every holder sees the end
        turn.log.snapshot = record.task
        for offset, payload in enumerate(events):
            last = offset == len(events) - 1
            turn.log.publish(first + offset, payload, final=last and ending.final)
        self._observe(turn)

    async def progress(self, turn: Turn, chunk: Any) -> None:
        """``get_stream_writer()`` output: a ``working`` status update, not persisted."""
        part = (
            TextPart(kind="text", text=chunk)
            if isinstance(chunk, str)
            else DataPart(
                kind="data", data=chunk if isinstance(chunk, dict) else {"value": chunk}
            )
        )
        record = turn.record
        note = messages.agent_message([part], record.id, record.context_id)
        event = TaskStatusUpdateEvent(
            task_id=record.id, context_id=record.context_id,
            status=messages.status("working", note), final=False,
        )
        await self.publish(turn, event, save=False)

    async def resubscribe(self, task_id: str, last_event_id: int | None) -> AsyncIterator[Event]:
        """Snapshot first (no event id), then live events; or, given ``Last-Event-ID``, exactly
        the events after it while they are retained. Snapshot and subscription are taken in
        one step of the event loop, so no event falls between them."""
        live = self._hub.get(task_id)
        if live is not None and last_event_id is not None:
            backlog = live.replay_after(last_event_id)
            if backlog:
                return live.subscribe(backlog).__aiter__()
        if live is not None and not live.finished and live.snapshot is not None:
            return prepend([(0, live.snapshot)], live.subscribe().__aiter__())
        record = await self._store.get(task_id)
        if record is None:
            raise TaskNotFoundError(data={"taskId": task_id})
        final = TaskStatusUpdateEvent(
            task_id=record.id, context_id=record.context_id, status=record.task.status,
            final=True,
        )
        return iterate([(0, record.task), (record.event_seq, final)])
