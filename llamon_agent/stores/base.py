"""The task store interface: where tasks (status, history, artifacts) live between turns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..a2a.types import Task

__all__ = ["Pending", "StoredTask", "TaskStore", "UnreadableRow"]


@dataclass(frozen=True)
class Pending:
    """A pending LangGraph interrupt as the task remembers it (id and value)."""

    id: str
    value: Any


@dataclass
class StoredTask:
    """A task plus the server-side facts that never go on the wire.

    ``event_seq`` is the last SSE event id of the task (ids keep increasing across turns and
    restarts); ``pending_interrupt`` is the LangGraph interrupt id the status message asks;
    ``reask_count`` counts re-asks of that question (seed 004: ask once more, then fall back).
    ``pending`` are the interrupts the task waits on; ``collected`` the answers given so far to
    parallel questions (interrupt id -> resume value); ``answered`` maps an interrupt id to the
    id of the message that answered it (the last few, so a retry is recognised);
    ``added_reviews`` are the tool reviews the client added for this task (``interruptOn``).
    """

    task: Task
    agent_id: str
    event_seq: int = 0
    pending_interrupt: str | None = None
    reask_count: int = 0
    pending: tuple[Pending, ...] = ()
    collected: dict[str, Any] = field(default_factory=dict)
    answered: dict[str, str] = field(default_factory=dict)
    added_reviews: dict[str, Any] = field(default_factory=dict)
    #: bytes of the stored row this record was read from (0 for a new task); never stored:
    #: it lets the task-size bound skip encoding the whole task again for a small message
    stored_bytes: int = field(default=0, compare=False)

    @property
    def id(self) -> str:
        return self.task.id

    @property
    def context_id(self) -> str:
        return self.task.context_id

    @property
    def state(self) -> str:
        return self.task.status.state


@dataclass(frozen=True)
class UnreadableRow:
    """What is left of a stored task that cannot be decoded: its keys, for recovery to mark
    it ``failed`` (or skip it) without taking down the other tasks."""

    id: str
    context_id: str
    agent_id: str
    event_seq: int
    reason: str


class TaskStore(Protocol):
    """Every method returns fresh objects: mutating one never changes what is stored.
    ``get`` and ``latest_in_context`` raise ``UnreadableTaskError`` for a row that cannot be
    decoded."""

    async def get(self, task_id: str) -> StoredTask | None: ...

    async def save(self, record: StoredTask) -> None: ...

    async def latest_in_context(self, context_id: str) -> StoredTask | None:
        """The most recently created task of a context (the only one that may be unfinished)."""
        ...

    async def unfinished(self) -> list[StoredTask | UnreadableRow]:
        """Tasks left ``submitted`` or ``working``: runs a stopped process did not finish.
        A row that cannot be decoded comes back as an ``UnreadableRow``, not an error."""
        ...
