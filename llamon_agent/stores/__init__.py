"""Where tasks and LangGraph checkpoints live between turns (docs/storage.md).

``open_storage(db)`` opens a task store, a checkpointer and a human-review port on one SQLite
file (or ``:memory:``) together; ``TaskStore`` is the interface a second backend implements.
"""

from .base import StoredTask, TaskStore
from .memory import InMemoryTaskStore
from .sqlite import SQLiteTaskStore
from .storage import Storage, open_storage

__all__ = [
    "InMemoryTaskStore",
    "SQLiteTaskStore",
    "Storage",
    "StoredTask",
    "TaskStore",
    "open_storage",
]
