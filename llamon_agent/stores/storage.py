"""Storage: a task store and a LangGraph checkpointer opened and closed together."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import ExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from ..core.ports import HumanReviewPort
from ..human_review.port import InMemoryReviewPort, SQLiteReviewPort
from .base import TaskStore
from .file_lock import lock_file
from .memory import InMemoryTaskStore
from .offload import Offload
from .sqlite import InlineSqliteSaver, SQLiteTaskStore, connect

__all__ = ["MEMORY", "Storage", "open_storage"]

MEMORY = ":memory:"


@dataclass(frozen=True)
class Storage:
    tasks: TaskStore
    checkpointer: BaseCheckpointSaver[Any]
    reviews: HumanReviewPort = field(default_factory=InMemoryReviewPort)
    #: the SQLite file (or ``:memory:``) it was opened on; ``None`` for stores given in code.
    #: Runs see it as ``RunContext.db`` (an application may keep its own tables there).
    db: str | None = None


@asynccontextmanager
async def open_storage(db: str) -> AsyncIterator[Storage]:
    """``db`` is a SQLite file path, or ``:memory:`` for a process-local store.

    A file is locked for the storage's life (``file_lock.py``) before anything connects to it
    or creates a table: a file another server holds raises ``StorageInUseError`` and is left
    exactly as it was.
    """
    if db == MEMORY:
        yield Storage(tasks=InMemoryTaskStore(), checkpointer=InMemorySaver(),
                      reviews=InMemoryReviewPort(), db=db)
        return
    with ExitStack() as opened:  # closed in reverse: offload, connection, then the lock
        lock = lock_file(db)
        opened.callback(lock.release)  # last: closing our descriptor drops SQLite's locks
        conn = connect(db)
        opened.callback(conn.close)
        offload = Offload(db, connect)  # large writes: a worker thread and its own connection
        opened.callback(offload.close)
        saver = InlineSqliteSaver(conn, offload=offload)
        saver.setup()
        yield Storage(tasks=SQLiteTaskStore(conn, offload=offload), checkpointer=saver,
                      reviews=SQLiteReviewPort(conn), db=db)
