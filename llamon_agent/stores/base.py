"""The task store interface: where tasks (status, history, artifacts) live between turns."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from ..a2a.types import Task
from ..core.deadlines import OnExpiry
from ..core.principal import ANONYMOUS, context_key, split_key
from ..errors import UnreadableTaskError

__all__ = ["LIST_LIMIT", "LIST_PAGE_BYTES", "DeletedTask", "Expiry", "ListedTask", "Pending",
           "Prunable", "StoredTask", "TaskCursor", "TaskPage", "TaskQuery", "TaskStore",
           "UnreadableRow", "check_listing", "choose_page", "listed_task", "listing_condition"]

log = logging.getLogger(__name__)

#: how many expired questions a task remembers, so a late answer to one is told it expired
MAX_EXPIRED = 16


@dataclass(frozen=True)
class Pending:
    """A pending LangGraph interrupt as the task remembers it (id and value)."""

    id: str
    value: Any


@dataclass(frozen=True)
class Expiry:
    """The deadline of what a task waits for now: the interrupt it asks, the moment it
    expires (wire form, ``core/clock.py`` ``iso``; stored in the ``expires_at`` column, which
    the sweeper selects by) and what happens then."""

    interrupt_id: str
    at: str
    then: OnExpiry


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
    #: the deadline of the question or tool review the task waits for (``input-required``
    #: only; docs/hitl.md, "Deadlines")
    deadline: Expiry | None = None
    #: the interrupts whose deadline passed (the last ``MAX_EXPIRED``): a late answer to one
    #: is refused as "question expired"
    expired: tuple[str, ...] = ()
    #: a run of the task opened a reviewer's review (``request_review``); stored before the
    #: review exists, so whichever process ends the task knows to close its pending reviews,
    #: and a task without one (nearly all) ends without a statement for them
    reviews_opened: bool = False
    #: bytes of the stored row this record was read from (0 for a new task); never stored:
    #: it lets the task-size bound skip encoding the whole task again for a small message
    stored_bytes: int = field(default=0, compare=False)

    def twin(self) -> StoredTask:
        """A shallow copy, as ``dataclasses.replace(self)`` makes one, in a fifth of its time
        (it reads and passes every field by name): a turn's ending is built on one (runtime/
        publisher.py)."""
        twin = object.__new__(StoredTask)
        twin.__dict__.update(self.__dict__)
        return twin

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
    def expires_at(self) -> str | None:
        """What the ``expires_at`` column holds: the deadline of a task waiting for input."""
        if self.deadline is None or self.state != "input-required":
            return None
        return self.deadline.at

    def note_expired(self, interrupt_id: str) -> None:
        kept = tuple(i for i in self.expired if i != interrupt_id)
        self.expired = (*kept, interrupt_id)[-MAX_EXPIRED:]

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


#: the most tasks one ``list_tasks`` call returns (the A2A edge bounds a page lower)
LIST_LIMIT = 1000
#: stored bytes of the task rows one ``list_tasks`` page reads: a page holds fewer tasks than
#: its limit once its rows would pass this (always one at least). Every task listed is read
#: whole and parsed (``_codec.decode`` with ``history``), and a task may hold
#: ``max_task_bytes``: before, a page of 100 tasks of 1.3 MB, each decoded whole, held 1 GB and
#: took 4.6 s (bench/README.md, "Speed, round thirty-six")
LIST_PAGE_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class TaskCursor:
    """Where a page of ListTasks ended: the last task's update time and id."""

    updated: float
    id: str


@dataclass(frozen=True)
class TaskQuery:
    """Which tasks ``list_tasks`` lists: always one owner's, optionally narrowed."""

    space: str  # only this owner's tasks (always required)
    #: the stored context key (``core.principal.context_key(space, contextId)``)
    context_key: str | None = None
    state: str | None = None  # a v0.3 TaskState string, e.g. "input-required"
    #: epoch seconds, inclusive: only tasks updated at or after (v1.0's
    #: ``statusTimestampAfter`` is "greater than or equal to")
    updated_since: float | None = None


@dataclass(frozen=True)
class ListedTask:
    """A listed task and its row's last update (epoch seconds)."""

    record: StoredTask
    updated: float


@dataclass(frozen=True)
class TaskPage:
    tasks: list[ListedTask]  # readable tasks of this page, newest update first
    total: int  # how many tasks match the query in all (every page), readable or not
    next: TaskCursor | None  # None on the last page


def listing_condition(query: TaskQuery, mark: str) -> tuple[str, tuple[Any, ...]]:
    """The SQL condition ``query`` puts on task rows and its values; ``mark`` is the driver's
    placeholder (``?`` for SQLite, ``%s`` for psycopg). The columns are fixed here, never
    taken from the query."""
    where = f"space = {mark}"
    params: list[Any] = [query.space]
    for column, value in (("context_id", query.context_key), ("state", query.state)):
        if value is not None:
            where += f" AND {column} = {mark}"
            params.append(value)
    if query.updated_since is not None:
        where += f" AND updated >= {mark}"
        params.append(query.updated_since)
    return where, tuple(params)


def check_listing(query: TaskQuery, limit: int, after: TaskCursor | None) -> None:
    """Raise ``ValueError`` for a listing no store can answer consistently: a limit outside
    1..``LIST_LIMIT``, or a time that is not finite (NaN compares unlike on each backend)."""
    if not 1 <= limit <= LIST_LIMIT:
        raise ValueError(f"limit must be 1..{LIST_LIMIT}, not {limit}")
    times = [query.updated_since, after.updated if after is not None else None]
    if not all(math.isfinite(t) for t in times if t is not None):
        raise ValueError("a listing's times must be finite")


def choose_page(heads: Sequence[tuple[str, float, int | None]], limit: int
                ) -> tuple[list[str], TaskCursor | None]:
    """A listing's page, from its matching rows' ``(id, last update, stored bytes)`` in its
    order (``limit + 1`` of them, or fewer when fewer match): the ids of the rows it reads, at
    most ``limit`` and no more than ``LIST_PAGE_BYTES`` of rows (one at least), and the cursor
    of its last row when rows follow it."""
    length = min(len(heads), limit)
    total = 0
    for n, (_, _, size) in enumerate(heads[:limit]):
        total += size or 0
        if total > LIST_PAGE_BYTES and n > 0:
            length = n
            break
    last = heads[length - 1] if len(heads) > length else None
    return ([task_id for task_id, _, _ in heads[:length]],
            None if last is None else TaskCursor(float(last[1]), last[0]))


def listed_task(decode: Callable[[], StoredTask], task_id: str, updated: float
                ) -> ListedTask | None:
    """The row decoded, or ``None`` (and a warning) when it cannot be: one broken row must
    not fail the listing of every task around it."""
    try:
        return ListedTask(decode(), updated)
    except UnreadableTaskError as exc:
        log.warning("listing skips task %r: its stored row cannot be decoded (%s)",
                    task_id, exc.detail)
        return None


class TaskStore(Protocol):
    """Mutating what a method returns never changes what is stored. Every object returned is
    fresh, except a large task (``StoredTask.task`` of 16 KiB or more), which may be one
    object shared by every reader in the process (``kept_tasks.py``): the runtime never
    changes a task in place, it copies (``a2a/task_json.py``). ``get`` and
    ``latest_in_context`` raise ``UnreadableTaskError`` for a row that cannot be decoded."""

    async def get(self, task_id: str) -> StoredTask | None: ...

    async def save(self, record: StoredTask) -> None: ...

    async def latest_in_context(self, context_key: str) -> StoredTask | None:
        """The most recently created task of a context (the only one that may be unfinished);
        ``context_key`` is ``StoredTask.context_key`` (the owner's space and the client's id)."""
        ...

    async def list_tasks(
        self, query: TaskQuery, limit: int, after: TaskCursor | None = None, *,
        history: int | None = None,
    ) -> TaskPage:
        """At most ``limit`` (1..``LIST_LIMIT``, else ``ValueError``) of the tasks ``query``
        selects, by last update then id, both descending, strictly after ``after`` in that
        order, and no more than ``LIST_PAGE_BYTES`` of stored rows (``choose_page``). A row
        that cannot be decoded is left out of ``tasks`` (a warning names it) but keeps its
        place: ``next``, the cursor of the page's last row when rows follow it, may be an
        unreadable row's, and ``total`` (every matching row, whatever the cursor) counts it.
        ``history``: a listed task may hold only its last ``history`` messages (None: all of
        them), so that a large one need not be decoded whole (``_codec.decode``, ``history``)."""
        ...

    async def unfinished(self) -> list[StoredTask | UnreadableRow]:
        """Tasks left ``submitted`` or ``working``: runs a stopped process did not finish.
        A row that cannot be decoded comes back as an ``UnreadableRow``, not an error."""
        ...

    async def ping(self) -> None:
        """Raises when the store cannot be reached (``/readyz``)."""
        ...

    async def expiring(self, before: str, limit: int) -> list[StoredTask | UnreadableRow]:
        """At most ``limit`` tasks waiting for input whose deadline (``expires_at``, the wire
        form of ``core/clock.py``, which sorts as text) is at or before ``before``, the
        earliest first."""
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

    # Retention (docs/operations.md, "Retention"). "Ended before ``cutoff``": a terminal state
    # (``TERMINAL_STATES``) and a last update (Unix time) above 0 and below ``cutoff``; a row
    # stored before updates were timed (``updated = 0``) is dated first (``date_undated``).

    async def date_undated(self, now: float, limit: int) -> int:
        """Give at most ``limit`` ended tasks of unknown age (``updated = 0``) the time
        ``now``: retention counts their age from the first time it saw them. Returns how
        many it dated."""
        ...

    async def ended_before(self, cutoff: float, limit: int) -> list[DeletedTask]:
        """At most ``limit`` tasks ended before ``cutoff`` (any order): what to delete next."""
        ...

    async def count_ended(self, cutoff: float) -> Prunable:
        """What deleting every task ended before ``cutoff`` would delete (``--dry-run``)."""
        ...

    async def context_outlives(self, context_key: str, cutoff: float) -> bool:
        """Does the context hold a task that is not ended before ``cutoff`` (unfinished,
        waiting, recent, of unknown age)? Then its checkpoints stay."""
        ...

    async def contexts_with_tasks(self, context_keys: Collection[str]) -> set[str]:
        """Which of ``context_keys`` hold at least one task."""
        ...

    async def delete_in_context(
        self, context_key: str, limit: int, *, ended_before: float | None = None
    ) -> list[DeletedTask]:
        """Delete at most ``limit`` of the context's tasks, in one statement: with
        ``ended_before``, only tasks ended before it (the state and the time are the
        statement's condition, so a task saved again meanwhile is kept); without, every task
        whatever its state (the caller holds the context's claim). Returns what it deleted."""
        ...

    async def reclaim_space(self) -> None:
        """Give part of the space deleted rows left back to the file system, in one short
        step (SQLite with incremental auto-vacuum); a store that cannot does nothing."""
        ...


@dataclass(frozen=True)
class DeletedTask:
    """A task row retention or a context deletion selects or removes: what the parts stored
    beside it (checkpoints, reviews, events, push data) are found by."""

    id: str
    context_key: str


@dataclass(frozen=True)
class Prunable:
    """What a retention cutoff would delete: ``tasks`` ended before it, in ``contexts``
    contexts, ``emptied`` of which hold no other task (their checkpoints go too);
    ``undated``: ended tasks of unknown age, which a real run dates now instead."""

    tasks: int
    contexts: int
    emptied: int
    undated: int
