"""The task store interface: where tasks (status, history, artifacts) live between turns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from ..a2a.types import Task
from ..core.principal import ANONYMOUS, context_key, split_key

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
    #: whose task it is: the owner's space (core/principal.py); ``anonymous`` without
    #: authentication, and for every task stored before authentication existed
    space: str = ANONYMOUS
    #: the resume map (interrupt id -> value) of the turn running now, when a person's decision
    #: on a side effect resumes it (a tool review, a reviewer's draft): stored before the turn
    #: runs, so that a takeover after a crash runs the turn again with the same decision
    #: instead of asking again (docs/operations.md, "Takeover"); ``None`` between turns
    resuming: dict[str, Any] | None = None
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

    @property
    def context_key(self) -> str:
        """The storage key of the task's context: the store's context column, the LangGraph
        thread id, the per-context claim."""
        return context_key(self.space, self.task.context_id)


@dataclass(frozen=True)
class UnreadableRow:
    """What is left of a stored task that cannot be decoded: its keys, for recovery to mark
    it ``failed`` (or skip it) without taking down the other tasks. ``context_key`` is the
    stored context key (``context_id`` and ``space`` are read from it)."""

    id: str
    context_key: str
    agent_id: str
    event_seq: int
    reason: str

    @property
    def context_id(self) -> str:
        return split_key(self.context_key)[1]

    @property
    def space(self) -> str:
        return split_key(self.context_key)[0]


class TaskStore(Protocol):
    """Every method returns fresh objects: mutating one never changes what is stored.
    ``get`` and ``latest_in_context`` raise ``UnreadableTaskError`` for a row that cannot be
    decoded."""

    async def get(self, task_id: str) -> StoredTask | None: ...

    async def save(self, record: StoredTask) -> None: ...

    async def latest_in_context(self, context_key: str) -> StoredTask | None:
        """The most recently created task of a context (the only one that may be unfinished);
        ``context_key`` is ``StoredTask.context_key`` (the owner's space and the client's id)."""
        ...

    async def unfinished(self) -> list[StoredTask | UnreadableRow]:
        """Tasks left ``submitted`` or ``working``: runs a stopped process did not finish.
        A row that cannot be decoded comes back as an ``UnreadableRow``, not an error."""
        ...

    async def ping(self) -> None:
        """Raises when the store cannot be reached (``/readyz``)."""
        ...

    async def count_by_state(self) -> dict[str, int]:
        """How many tasks are in each state (metrics)."""
        ...

    async def count_in_state(self, space: str, state: str) -> int:
        """How many of ``space``'s tasks are in ``state`` (quotas)."""
        ...

    async def oldest_in_state(self, state: str) -> float | None:
        """The Unix time of the oldest last update among the tasks in ``state`` (rows stored
        before updates were timed have no known age and are left out)."""
        ...
