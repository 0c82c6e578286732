"""``InlinePostgresSaver``: LangGraph's ``AsyncPostgresSaver`` with its serialisation run on the
event loop instead of in a worker thread.

``AsyncPostgresSaver`` serialises channel values and pending writes in the default executor
(``asyncio.to_thread`` in ``aput``, ``aput_writes`` and ``aget_tuple``): several thread hops per
turn, each waking a worker thread, handing the result back through the loop's self-pipe and
passing the GIL twice, for values the edge bounds (``core/bounds.py``). Under 16 HITL users on
PostgreSQL the server did 14-20% more round trips per second, with 0.7 ms less CPU per round
trip, once the serialisation ran inline (bench/README.md, "Speed, round five"). The SQLite
saver serialises inline too (``sqlite.InlineSqliteSaver``). What the saver stores, and how, is
``AsyncPostgresSaver``'s, unchanged: a plain ``AsyncPostgresSaver`` reads it.

How, and why here: ``langgraph.checkpoint.postgres.aio`` calls ``asyncio.to_thread`` through its
module global ``asyncio``. Importing this module replaces that global, once, by a proxy whose
``to_thread`` runs a call inline when it is a method of an ``InlinePostgresSaver`` and hands
every other call to ``asyncio.to_thread`` as before, so other ``AsyncPostgresSaver``s in the
process keep their threads. This is the only use of langgraph-checkpoint-postgres's internals;
the dependency is capped to the tested minor version in ``pyproject.toml``, and
tests/stores/test_pg_saver.py fails when the module no longer calls through that global.

Held writes (``turn_writes.py``): inside a turn that holds its writes, ``aput`` and
``aput_writes`` on the turn's own thread run ``AsyncPostgresSaver``'s code unchanged, but the
cursor it asks ``_cursor`` for records each statement instead of sending it; the turn's end
save sends them in its transaction. ``_cursor`` is the saver's private method (the second and
last use of its internals here, under the same cap): overriding it keeps LangGraph's SQL and
parameters LangGraph's own instead of a copy of ``aput``. Reads never go through a recording
cursor.

Read with the claim (``turn_writes.py``, ``pg_claim_reads.py``): ``read_on`` runs
``aget_tuple``, LangGraph's query and decoding unchanged, on a connection the caller has checked
out already (``_cursor`` gives a cursor on it, as LangGraph's own would on a pooled connection,
without the saver's lock, which guards a single shared connection and not a pool's). The
run's first ``aget_tuple`` of the thread's root checkpoint then takes what it read.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

import langgraph.checkpoint.postgres.aio as _aio
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
    get_checkpoint_id,
)
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg import AsyncConnection
from psycopg.rows import dict_row

from .saver_signatures import signatures_worked_out_once
from .turn_writes import (
    CheckpointReadAhead,
    HeldStatement,
    TurnWrites,
    checkpoints_held_for,
    held_for,
)

__all__ = ["InlinePostgresSaver"]

_T = TypeVar("_T")


#: the held unit an ``aput`` or ``aput_writes`` of this task records into
_recording: ContextVar[TurnWrites | None] = ContextVar("llamon_recording", default=None)
#: the connection a ``read_on`` of this task reads on
_reading_on: ContextVar[AsyncConnection[Any] | None] = ContextVar("llamon_reading_on",
                                                                   default=None)


class _RecordingCursor:
    """What ``aput`` and ``aput_writes`` do with their cursor, recorded in order. Any other
    use of it fails loudly: a LangGraph release that reads through it must be looked at."""

    def __init__(self, writes: TurnWrites) -> None:
        self._writes = writes

    async def execute(self, query: Any, params: Any = None) -> None:
        self._writes.statements.append(HeldStatement(query, params))

    async def executemany(self, query: Any, params_seq: Any) -> None:
        self._writes.statements.append(HeldStatement(query, list(params_seq), many=True))


def _turn_writes(config: RunnableConfig) -> TurnWrites | None:
    """The current turn's unit for the config's thread, when it holds its checkpoints."""
    return checkpoints_held_for(config.get("configurable", {}).get("thread_id"))


@signatures_worked_out_once
class InlinePostgresSaver(AsyncPostgresSaver):
    """``AsyncPostgresSaver`` whose serialisation runs on the event loop, and whose writes a
    turn may hold for its end save (module docstring)."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        ahead = self._read_ahead(config)
        if ahead is not None:
            return ahead.found
        writes = _turn_writes(config)
        if writes is not None and writes.thread_empty:
            return None  # no task of the context is stored, so no checkpoint either
        return await super().aget_tuple(config)

    def _read_ahead(self, config: RunnableConfig) -> CheckpointReadAhead | None:
        """What this saver read with the claim, once, for the root checkpoint of the unit's
        own thread; later reads (the run's own writes may have moved it) query again."""
        configurable = config.get("configurable", {})
        writes = held_for(configurable.get("thread_id"))
        if writes is None or writes.checkpoint is None or writes.checkpoint.saver is not self:
            return None
        if configurable.get("checkpoint_ns", "") != "" or get_checkpoint_id(config):
            return None
        ahead, writes.checkpoint = writes.checkpoint, None
        return ahead

    async def read_on(self, conn: AsyncConnection[Any], thread_id: str) -> CheckpointReadAhead:
        """The thread's latest root checkpoint, read on ``conn`` (module docstring)."""
        token = _reading_on.set(conn)
        try:
            found = await super().aget_tuple({"configurable": {"thread_id": thread_id,
                                                               "checkpoint_ns": ""}})
        finally:
            _reading_on.reset(token)
        return CheckpointReadAhead(self, found)

    async def aput(
        self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        token = _recording.set(_turn_writes(config))
        try:
            return await super().aput(config, checkpoint, metadata, new_versions)
        finally:
            _recording.reset(token)

    async def aput_writes(
        self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
        task_path: str = "",
    ) -> None:
        token = _recording.set(_turn_writes(config))
        try:
            await super().aput_writes(config, writes, task_id, task_path)
        finally:
            _recording.reset(token)

    @asynccontextmanager
    async def _cursor(self, *, pipeline: bool = False) -> AsyncIterator[Any]:
        conn = _reading_on.get()
        if conn is not None:  # ``read_on``: one read, on the caller's connection
            async with conn.cursor(binary=True, row_factory=dict_row) as cursor:
                yield cursor
            return
        writes = _recording.get()
        if writes is None:
            async with super()._cursor(pipeline=pipeline) as cursor:
                yield cursor
            return
        yield _RecordingCursor(writes)


class _AsyncioAsTheSaversSeeIt:
    """``asyncio`` for ``langgraph.checkpoint.postgres.aio``: itself, but for ``to_thread``."""

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    @staticmethod
    async def to_thread(func: Callable[..., _T], /, *args: Any, **kwargs: Any) -> _T:
        if isinstance(getattr(func, "__self__", None), InlinePostgresSaver):
            return func(*args, **kwargs)
        return await asyncio.to_thread(func, *args, **kwargs)


def _install() -> None:
    if getattr(_aio, "asyncio", None) is not asyncio and not isinstance(
        getattr(_aio, "asyncio", None), _AsyncioAsTheSaversSeeIt
    ):
        raise ImportError(
            "langgraph.checkpoint.postgres.aio no longer calls asyncio through its module "
            "global; llamon_agent/stores/pg_saver.py must be revised for this version"
        )
    _aio.asyncio = _AsyncioAsTheSaversSeeIt()  # type: ignore[assignment]


_install()
