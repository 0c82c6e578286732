"""SQLite storage for one machine: tasks and LangGraph checkpoints in one WAL file.

Every statement runs inline on the event loop thread. In WAL mode with ``synchronous=NORMAL`` a
write is a page-cache write plus a WAL append (no fsync until a checkpoint), tens of
microseconds; handing each statement to a worker thread (aiosqlite) costs a thread wake-up and
a loop wake-up per statement and was measured as the largest cost of a turn (bench/README.md).
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Sequence
from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.sqlite import SqliteSaver

from . import _codec
from .base import StoredTask

__all__ = ["InlineSqliteSaver", "SQLiteTaskStore", "connect"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llamon_tasks (
    id TEXT PRIMARY KEY,
    context_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    state TEXT NOT NULL,
    event_seq INTEGER NOT NULL,
    pending_interrupt TEXT,
    reask_count INTEGER NOT NULL,
    task BLOB NOT NULL,
    extra BLOB,
    created INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS llamon_tasks_context ON llamon_tasks (context_id, created);
CREATE INDEX IF NOT EXISTS llamon_tasks_state ON llamon_tasks (state);
"""

_COLUMNS = "task, agent_id, event_seq, pending_interrupt, reask_count, extra"


def connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=5000")
    return conn


class SQLiteTaskStore:
    """Every ``save`` commits before it returns: a task the client saw is durable."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        conn.executescript(_SCHEMA)
        conn.commit()
        row = conn.execute("SELECT COALESCE(MAX(created), 0) FROM llamon_tasks").fetchone()
        self._created = int(row[0])

    async def get(self, task_id: str) -> StoredTask | None:
        row = self._conn.execute(
            f"SELECT {_COLUMNS} FROM llamon_tasks WHERE id = ?", (task_id,)
        ).fetchone()
        return None if row is None else _codec.decode(*row)

    async def save(self, record: StoredTask) -> None:
        self._created += 1
        with self._conn:
            self._conn.execute(
                "INSERT INTO llamon_tasks (id, context_id, agent_id, state, event_seq,"
                " pending_interrupt, reask_count, task, extra, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT(id) DO UPDATE SET state = excluded.state,"
                " event_seq = excluded.event_seq, pending_interrupt = excluded.pending_interrupt,"
                " reask_count = excluded.reask_count, task = excluded.task, extra = excluded.extra",
                (
                    record.id,
                    record.context_id,
                    record.agent_id,
                    record.state,
                    record.event_seq,
                    record.pending_interrupt,
                    record.reask_count,
                    _codec.encode_task(record),
                    _codec.encode_extra(record),
                    self._created,
                ),
            )

    async def latest_in_context(self, context_id: str) -> StoredTask | None:
        row = self._conn.execute(
            f"SELECT {_COLUMNS} FROM llamon_tasks WHERE context_id = ?"
            " ORDER BY created DESC LIMIT 1",
            (context_id,),
        ).fetchone()
        return None if row is None else _codec.decode(*row)

    async def unfinished(self) -> list[StoredTask]:
        rows = self._conn.execute(
            f"SELECT {_COLUMNS} FROM llamon_tasks WHERE state IN ('submitted', 'working')"
        ).fetchall()
        return [_codec.decode(*row) for row in rows]


class InlineSqliteSaver(SqliteSaver):
    """LangGraph's ``SqliteSaver`` with its async API served inline (see the module docstring)."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return self.get_tuple(config)

    async def alist(
        self,
        config: RunnableConfig | None,
        *,
        filter: dict[str, Any] | None = None,
        before: RunnableConfig | None = None,
        limit: int | None = None,
    ) -> AsyncIterator[CheckpointTuple]:
        for item in self.list(config, filter=filter, before=before, limit=limit):
            yield item

    async def aput(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        return self.put(config, checkpoint, metadata, new_versions)

    async def aput_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self.put_writes(config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        self.delete_thread(thread_id)

    async def aget_delta_channel_history(self, *, config: RunnableConfig, channels: Sequence[str]) -> Any:
        return self.get_delta_channel_history(config=config, channels=channels)
