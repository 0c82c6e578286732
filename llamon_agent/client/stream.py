"""Typed events of ``message/stream`` and ``tasks/resubscribe``, and the task they build up."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Self

import httpx

from ..a2a.types import (
    INTERRUPTED_STATES,
    TERMINAL_STATES,
    Artifact,
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from .errors import A2AClientError, A2AStreamInterruptedError
from .rpc import A2AEvent, decode_json, parse_event, translate_errors, unwrap
from .sse import aiter_sse

__all__ = ["EventStream", "StreamEvent", "apply_event"]

Opener = Callable[[], Awaitable[httpx.Response]]


@dataclass(frozen=True, slots=True)
class StreamEvent:
    """One event: the typed ``result`` and the SSE event id (``None`` when the server sent none).

    ``id`` follows the SSE rules: it is the last ``id:`` seen on the stream so far, which is the
    value to send back as ``Last-Event-ID`` when resubscribing.
    """

    result: A2AEvent
    id: str | None = None

    @property
    def kind(self) -> str:
        return self.result.kind

    @property
    def final(self) -> bool:
        """The stream ends here: a ``final`` status update, or a ``Message`` result."""
        if isinstance(self.result, TaskStatusUpdateEvent):
            return self.result.final
        return isinstance(self.result, Message)

    @property
    def task_id(self) -> str | None:
        if isinstance(self.result, Task):
            return self.result.id
        return self.result.task_id

    @property
    def context_id(self) -> str | None:
        return self.result.context_id

    @property
    def state(self) -> TaskState | None:
        if isinstance(self.result, Task | TaskStatusUpdateEvent):
            return self.result.status.state
        return None


def apply_event(task: Task | None, event: A2AEvent) -> Task | None:
    """``task`` updated by ``event`` (new objects; the inputs are not modified)."""
    if isinstance(event, Task):
        return event
    if isinstance(event, Message):
        return task
    if task is None or task.id != event.task_id:
        # no snapshot yet (a resubscription with Last-Event-ID starts with the events after it)
        task = Task(
            id=event.task_id, context_id=event.context_id, status=TaskStatus(state="unknown")
        )
    if isinstance(event, TaskStatusUpdateEvent):
        return task.model_copy(update={"status": event.status})
    return task.model_copy(update={"artifacts": _merge_artifact(task.artifacts, event)})


def _merge_artifact(
    artifacts: list[Artifact] | None, event: TaskArtifactUpdateEvent
) -> list[Artifact]:
    merged = list(artifacts or [])
    new = event.artifact
    for i, old in enumerate(merged):
        if old.artifact_id == new.artifact_id:
            if event.append:
                new = old.model_copy(update={"parts": [*old.parts, *new.parts]})
            merged[i] = new
            return merged
    merged.append(new)
    return merged


class EventStream:
    """An open event stream. Iterate it for :class:`StreamEvent` objects; it closes itself when
    the server ends the stream (after the final event). ``async with`` (or :meth:`aclose`)
    releases the connection early. ``finished``: the latest event was a final one.

    Raises :class:`~.errors.A2ARPCError` for an error event, and
    :class:`~.errors.A2AStreamInterruptedError` when the stream ends (or the connection drops)
    before the final event: resubscribe with ``task_id`` and ``last_event_id`` to continue.
    ``task`` is the task as the events built it up (with a Task snapshot: history included).
    """

    def __init__(
        self,
        open_response: Opener,
        request_id: str,
        *,
        task_id: str | None = None,
        last_event_id: str | None = None,
    ) -> None:
        self.task_id = task_id
        self.last_event_id = last_event_id
        self.task: Task | None = None
        self.message: Message | None = None
        self.finished = False
        self._open = open_response
        self._request_id = request_id
        self._events = self._run()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> StreamEvent:
        return await self._events.__anext__()

    async def aclose(self) -> None:
        await self._events.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    async def collect(self) -> list[StreamEvent]:
        """Every remaining event, until the stream ends."""
        return [event async for event in self]

    async def result(self) -> Task | Message:
        """Read to the end; the final ``Message``, or the task the events built up."""
        async for _ in self:
            pass
        if self.message is not None:
            return self.message
        if self.task is None:
            raise A2AClientError("the stream ended without a task or a message")
        return self.task

    def _accept(self, result: A2AEvent, event_id: str | None) -> StreamEvent:
        event = StreamEvent(result, event_id)
        if event_id is not None:
            self.last_event_id = event_id
        self.task_id = event.task_id or self.task_id
        if isinstance(result, Message):
            self.message = result
        else:
            self.task = apply_event(self.task, result)
        self.finished = event.final
        return event

    async def _run(self) -> AsyncGenerator[StreamEvent, None]:
        response = await self._open()
        try:
            if not response.headers.get("content-type", "").startswith("text/event-stream"):
                # a plain JSON-RPC answer: an error before the stream started, or one result
                with translate_errors():
                    await response.aread()
                raw = unwrap(decode_json(response.content, "the response"), self._request_id)
                event = self._accept(parse_event(raw), None)
                self.finished = True
                yield event
                return
            last: StreamEvent | None = None
            try:
                # to the end of the stream, not to the first final event: a replay after
                # Last-Event-ID may span several turns, each with its own final event
                async for message in aiter_sse(response.aiter_bytes(), self.last_event_id):
                    envelope = decode_json(message.data, "an SSE event")
                    last = self._accept(parse_event(unwrap(envelope, self._request_id)), message.id)
                    yield last
            except httpx.TransportError as exc:
                if self.finished:
                    return  # the connection failed after the final event: nothing was lost
                raise self._interrupted(f"the stream broke: {exc!r}") from exc
            if self.finished:
                return
            if last is not None and isinstance(last.result, Task) and (
                last.result.status.state in TERMINAL_STATES | INTERRUPTED_STATES
            ):
                self.finished = True  # a lone Task in a final state: as good as a final event
                return
            raise self._interrupted("the stream ended before its final event")
        finally:
            await response.aclose()

    def _interrupted(self, reason: str) -> A2AStreamInterruptedError:
        where = f" (task {self.task_id}, last event id {self.last_event_id})" if self.task_id else ""
        return A2AStreamInterruptedError(
            reason + where, task_id=self.task_id, last_event_id=self.last_event_id
        )
