"""Storage: a task store and a LangGraph checkpointer opened and closed together."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from .base import TaskStore
from .memory import InMemoryTaskStore
from .sqlite import CommitWithTasks, InlineSqliteSaver, SQLiteTaskStore, connect

__all__ = ["MEMORY", "Storage", "open_storage"]

MEMORY = ":memory:"


@dataclass(frozen=True)
class Storage:
    tasks: TaskStore
    checkpointer: BaseCheckpointSaver[Any]


@asynccontextmanager
async def open_storage(db: str) -> AsyncIterator[Storage]:
    """``db`` is a SQLite file path, or ``:memory:`` for a process-local store."""
    if db == MEMORY:
        yield Storage(tasks=InMemoryTaskStore(), checkpointer=InMemorySaver())
        return
    conn = connect(db)
    try:
        saver = InlineSqliteSaver(CommitWithTasks(conn))  # type: ignore[arg-type]
        saver.setup()
        conn.commit()
        yield Storage(tasks=SQLiteTaskStore(conn), checkpointer=saver)
    finally:
        conn.commit()  # anything a last turn wrote without reaching its task save
        conn.close()
