"""Storage: a task store and a LangGraph checkpointer opened and closed together."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import aiosqlite
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

from .base import TaskStore
from .memory import InMemoryTaskStore
from .sqlite import SQLiteTaskStore

__all__ = ["MEMORY", "Storage", "open_storage"]

MEMORY = ":memory:"


@dataclass(frozen=True)
class Storage:
    tasks: TaskStore
    checkpointer: BaseCheckpointSaver[str]


async def _connect(path: str) -> aiosqlite.Connection:
    conn = await aiosqlite.connect(path)
    await conn.execute("PRAGMA journal_mode=WAL")
    await conn.execute("PRAGMA synchronous=NORMAL")
    await conn.execute("PRAGMA busy_timeout=5000")
    return conn


@asynccontextmanager
async def open_storage(db: str) -> AsyncIterator[Storage]:
    """``db`` is a SQLite file path, or ``:memory:`` for a process-local store."""
    if db == MEMORY:
        yield Storage(tasks=InMemoryTaskStore(), checkpointer=InMemorySaver())
        return
    task_conn = await _connect(db)
    try:
        graph_conn = await _connect(db)
        try:
            saver = AsyncSqliteSaver(graph_conn)
            await saver.setup()
            yield Storage(tasks=await SQLiteTaskStore.open(task_conn), checkpointer=saver)
        finally:
            await graph_conn.close()
    finally:
        await task_conn.close()
