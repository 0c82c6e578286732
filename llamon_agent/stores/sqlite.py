"""SQLite task store (aiosqlite, WAL): the default for one machine."""

from __future__ import annotations

import aiosqlite

from . import _codec
from .base import StoredTask

__all__ = ["SQLiteTaskStore"]

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


class SQLiteTaskStore:
    """One connection; every write commits before ``save`` returns (a task is durable)."""

    def __init__(self, conn: aiosqlite.Connection) -> None:
        self._conn = conn
        self._created = 0

    @classmethod
    async def open(cls, conn: aiosqlite.Connection) -> SQLiteTaskStore:
        await conn.executescript(_SCHEMA)
        await conn.commit()
        store = cls(conn)
        async with conn.execute("SELECT COALESCE(MAX(created), 0) FROM llamon_tasks") as cur:
            row = await cur.fetchone()
        store._created = int(row[0]) if row else 0
        return store

    async def get(self, task_id: str) -> StoredTask | None:
        async with self._conn.execute(
            f"SELECT {_COLUMNS} FROM llamon_tasks WHERE id = ?", (task_id,)
        ) as cur:
            row = await cur.fetchone()
        return None if row is None else _codec.decode(*row)

    async def save(self, record: StoredTask) -> None:
        self._created += 1
        await self._conn.execute(
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
        await self._conn.commit()

    async def latest_in_context(self, context_id: str) -> StoredTask | None:
        async with self._conn.execute(
            f"SELECT {_COLUMNS} FROM llamon_tasks WHERE context_id = ?"
            " ORDER BY created DESC LIMIT 1",
            (context_id,),
        ) as cur:
            row = await cur.fetchone()
        return None if row is None else _codec.decode(*row)

    async def unfinished(self) -> list[StoredTask]:
        async with self._conn.execute(
            f"SELECT {_COLUMNS} FROM llamon_tasks WHERE state IN ('submitted', 'working')"
        ) as cur:
            rows = await cur.fetchall()
        return [_codec.decode(*row) for row in rows]
