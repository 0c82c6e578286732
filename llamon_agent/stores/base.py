"""The task store interface: where tasks (status, history, artifacts) live between turns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from ..a2a.types import Task

__all__ = ["StoredTask", "TaskStore", "UnreadableRow"]


@dataclass
class StoredTask:
    """A task plus the server-side facts that never go on the wire.

    ``event_seq`` is the last SSE event id of the task (ids keep increasing across turns and
    restarts); ``pending_interrupt`` is the LangGraph interrupt id the status message asks;
    ``reask_count`` counts re-asks of that question (seed 004: ask once more, then fall back).
    """

    task: Task
    agent_id: str
    event_seq: int = 0
    pending_interrupt: str | None = None
    reask_count: int = 0
    extra: dict[str, object] = field(default_factory=dict)

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
