"""Where tasks and LangGraph checkpoints live between turns (docs/storage.md).

``open_storage(db)`` opens a task store, a checkpointer and a human-review port together, on one
SQLite file, ``:memory:``, or a PostgreSQL database (``url.py`` parses the setting;
``postgres.py`` needs the ``postgres`` extra and is imported only for a PostgreSQL URL);
``TaskStore`` is the interface each backend implements.
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
