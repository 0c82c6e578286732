"""Storage: a task store and a LangGraph checkpointer opened and closed together."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from ..reviewer.port import HumanReviewPort, InMemoryReviewPort, SQLiteReviewPort
from .base import TaskStore
from .memory import InMemoryTaskStore
from .sqlite import InlineSqliteSaver, SQLiteTaskStore, connect

__all__ = ["MEMORY", "Storage", "open_storage"]

MEMORY = ":memory:"


@dataclass(frozen=True)
class Storage:
    tasks: TaskStore
    checkpointer: BaseCheckpointSaver[Any]
    reviews: HumanReviewPort = field(default_factory=InMemoryReviewPort)


@asynccontextmanager
async def open_storage(db: str) -> AsyncIterator[Storage]:
    """``db`` is a SQLite file path, or ``:memory:`` for a process-local store."""
    if db == MEMORY:
        yield Storage(tasks=InMemoryTaskStore(), checkpointer=InMemorySaver(),
                      reviews=InMemoryReviewPort())
        return
    conn = connect(db)
    try:
        saver = InlineSqliteSaver(conn)
        saver.setup()
        yield Storage(tasks=SQLiteTaskStore(conn), checkpointer=saver,
                      reviews=SQLiteReviewPort(conn))
    finally:
        conn.close()
