"""What a turn's end commits together with the task's row: the run's checkpoint writes and the
release of the context's claim.

On PostgreSQL a turn used to end in four commits, each waiting for its own WAL flush and its
own round trip: LangGraph's checkpoint (its blobs and its row, each statement committed on its
own), the interrupt's pending writes, the task's row, then the claim's release. A turn that
holds its writes (``holding``, the worker's ``start`` and ``_run``) has them recorded here instead
of sent (``pg_saver.InlinePostgresSaver``), and the turn's end save sends them with the task's
row and the claim's deletion in one transaction and one pipeline (``postgres.py``): one commit
per turn, and a checkpoint is never stored without the task row that says what it answered.
On SQLite the same holds (``sqlite.InlineSqliteSaver`` records its rows, ``SQLiteTaskStore.save``
runs them before the task's upsert in its one transaction): a HITL round trip commits twice
instead of five times. Claims there are the process's own and cost no statement.

Writes are held only for a task store made for the checkpointer (``commits_held_writes``:
the storage's own pair, on one connection or one pool); any other pair, as
``create_app(task_store=..., checkpointer=...)`` may give, stores each write at once, since a
held write would wait for a save that never sends it.

Only writes that LangGraph itself makes at the run's exit are held (``durability="exit"``, the
default): an agent asking for ``"sync"`` or ``"async"`` wants each step stored as it ends, so
its checkpoints go to the database at once. Nothing here reads a held write: LangGraph reads a
thread's checkpoint only when a run starts, and the next run on a context starts only once the
context's claim is back, which is after the save that sends them.

A context with no stored task has no checkpoint either, since a held checkpoint is stored only
with its task's row: the turn of a new task in such a context (``thread_empty``) does not read
one (``aget_tuple`` answers ``None`` without a query). A context the server has just drawn for a
message that named none (``Located.fresh``) is such a context, and no client can name it before the
turn's first save shows it: its turn reads no task either, and its claim's row is written by
that first save in the same transaction as the task's row (``claim``), so another replica's
recovery never finds the task stored without its claim; when that first save is the end's
(a blocking ``message/send``), the row is neither inserted nor deleted.

The unit travels in a context variable, so it reaches LangGraph's saver calls (LangGraph runs
them in tasks that copy the context) without passing through the graph. A child turn started
from a parent's node copies the parent's context too: every turn enters its own unit
(``holding``) where it saves and runs, and a unit answers only for its own thread (the context
key).

Reads taken with the claim (PostgreSQL): the claim's statement, the context's latest task and,
when there is one, its thread's checkpoint are read in one connection checkout
(``stores/pg_claim_reads.py``) instead of three, and kept here: ``latest`` for the plan,
``checkpoint`` for the run's first ``aget_tuple`` on the thread (``pg_saver.py``). Both are as
current as a read after the claim: nothing else writes a claimed context's tasks or thread.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

from .base import StoredTask

__all__ = [
    "UNREAD", "CheckpointReadAhead", "ClaimRow", "HeldStatement", "TurnWrites", "Unread",
    "checkpoints_held_for", "commits_held_writes", "held_for", "holding",
]


class Unread(enum.Enum):
    """Not read with the claim: whoever needs it reads it as before."""

    UNREAD = "unread"


UNREAD: Final = Unread.UNREAD


@dataclass(frozen=True)
class CheckpointReadAhead:
    """The thread's latest checkpoint (``None``: none) as ``saver`` read it with the claim;
    only that saver's first read of the thread's root checkpoint takes it."""

    saver: object
    found: Any


@dataclass(frozen=True)
class HeldStatement:
    """A checkpoint statement as LangGraph's saver would have executed it."""

    sql: Any  # a string or a ``psycopg.sql.Composable``, as the saver wrote it
    params: Any
    many: bool = False  # ``executemany`` with a sequence of parameter tuples
    #: bytes of the blobs it writes, where the store decides by size where it runs (SQLite)
    size: int = 0


@dataclass(frozen=True)
class ClaimRow:
    """The database row that holds a context's claim (``backends/pg_claims.py``): deleting it
    releases the claim, so the end's save may delete it in its own transaction; a fresh
    context's claim is inserted by the first save (``task_id``, and ``lease`` seconds ahead)."""

    table: str
    key: str
    owner: str
    task_id: str | None = None
    lease: float = 0.0


@dataclass(eq=False)
class TurnWrites:
    """The writes one turn's end commits with its task row. ``checkpoints``: whether the
    saver holds the run's checkpoint writes here (``durability="exit"``)."""

    thread_id: str
    checkpoints: bool = True
    #: no task of the context is stored (it was drawn for this message, or the plan, read
    #: under the claim, found none), so its thread has no checkpoint: a checkpoint is stored
    #: only in the transaction of its task's row, so the run reads none
    thread_empty: bool = False
    statements: list[HeldStatement] = field(default_factory=list)
    #: a fresh context's claim, whose row the first save inserts (then ``claim_stored``)
    claim: ClaimRow | None = None
    claim_stored: bool = False
    release: ClaimRow | None = None
    #: while a save that deletes ``release`` runs: the row may be gone before it returns
    releasing: bool = False
    #: set once a save committed ``release``: the claim is back, nothing more to delete
    released: bool = False
    #: the context's latest task (``None``: it has none), read with the claim
    latest: StoredTask | Unread | None = UNREAD
    #: its thread's checkpoint, read with the claim; taken by the first read of the run
    checkpoint: CheckpointReadAhead | None = None

    @property
    def claim_to_insert(self) -> ClaimRow | None:
        return self.claim if self.claim is not None and not self.claim_stored else None

    @property
    def pending(self) -> bool:
        return (bool(self.statements) or self.release is not None
                or self.claim_to_insert is not None)

    def take(self) -> tuple[list[HeldStatement], ClaimRow | None]:
        """Everything held, for one save; ``restore`` puts it back when that save fails."""
        statements, release = self.statements, self.release
        self.statements, self.release = [], None
        return statements, release

    def restore(self, statements: list[HeldStatement], release: ClaimRow | None) -> None:
        self.statements[:0] = statements
        if self.release is None:
            self.release = release


_current: ContextVar[TurnWrites | None] = ContextVar("llamon_turn_writes", default=None)


@contextmanager
def holding(writes: TurnWrites) -> Iterator[TurnWrites]:
    """Hold the current task's writes on ``writes.thread_id`` in ``writes``."""
    token = _current.set(writes)
    try:
        yield writes
    finally:
        _current.reset(token)


def held_for(thread_id: Any) -> TurnWrites | None:
    """The current turn's unit when it holds writes for ``thread_id``."""
    writes = _current.get()
    if writes is None or writes.thread_id != thread_id:
        return None
    return writes


def checkpoints_held_for(thread_id: Any) -> TurnWrites | None:
    """The current turn's unit when it holds the checkpoint writes of ``thread_id``."""
    writes = held_for(thread_id)
    return writes if writes is not None and writes.checkpoints else None


@runtime_checkable
class CommitsHeldWrites(Protocol):
    """A task store whose ``save`` commits the held checkpoint writes of its turn's unit."""

    def commits_held_writes_of(self, checkpointer: object) -> bool:
        """Whether ``checkpointer`` records its writes into the units this store commits."""
        ...


def commits_held_writes(tasks: object, checkpointer: object) -> bool:
    """Whether turns may hold ``checkpointer``'s writes for ``tasks``' saves: only a pair made
    for each other, so that a held write never waits for a save that would drop it."""
    return isinstance(tasks, CommitsHeldWrites) and tasks.commits_held_writes_of(checkpointer)
