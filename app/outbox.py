"""The email assistant's outbox: one row per email that was really sent.

It is a table (``outbox``) in the server's own SQLite file, so a demo's side effects persist
with its conversations and tests can count them. ``server_outbox(config)`` is the outbox in the
file of the server running a call (its ``RunContext.db``: ``llamon-agent serve --db``);
``Outbox(path)`` one in ``path`` (default ``llamon.sqlite3``, the server's default). The file is
opened at the first use. ``":memory:"`` keeps the rows in this process only (one private
database per ``Outbox``).

Writes run in a worker thread: the server's own connection to the same file may hold its
write lock for a moment at the end of another turn, and waiting for it must not block the
event loop that will release it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from llamon_agent.core.run_context import run_context
from llamon_agent.settings import DEFAULT_DB
from llamon_agent.stores.url import parse_database_url

__all__ = ["Outbox", "server_outbox"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT,
    to_address TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    sent_at TEXT NOT NULL
)
"""


class Outbox:
    def __init__(self, path: str | None = None) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    @property
    def path(self) -> str:
        return self._path or DEFAULT_DB

    async def send(self, to: str, subject: str, body: str, thread_id: str | None = None) -> int:
        """Store one sent email; returns its number."""
        return await asyncio.to_thread(self._insert, to, subject, body, thread_id)

    def count(self, thread_id: str | None = None) -> int:
        return len(self.rows(thread_id))

    def rows(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        query = "SELECT id, thread_id, to_address, subject, body FROM outbox"
        args: tuple[Any, ...] = ()
        if thread_id is not None:
            query, args = query + " WHERE thread_id = ?", (thread_id,)
        with self._lock:
            cursor = self._connection().execute(query + " ORDER BY id", args)
            rows = cursor.fetchall()
        keys = ("id", "thread_id", "to", "subject", "body")
        return [dict(zip(keys, row, strict=True)) for row in rows]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _insert(self, to: str, subject: str, body: str, thread_id: str | None) -> int:
        sent_at = datetime.now(UTC).isoformat(timespec="seconds")
        with self._lock:
            conn = self._connection()
            with conn:
                cursor = conn.execute(
                    "INSERT INTO outbox (thread_id, to_address, subject, body, sent_at)"
                    " VALUES (?, ?, ?, ?, ?)",
                    (thread_id, to, subject, body, sent_at),
                )
            return int(cursor.lastrowid or 0)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self.path, check_same_thread=False, timeout=30)
            if self.path != ":memory:":
                conn.execute("PRAGMA journal_mode=WAL")
            conn.executescript(_SCHEMA)
            conn.commit()
            self._conn = conn
        return self._conn


_opened: dict[str, Outbox] = {}  # one per file, opened by the first call that writes there


def server_outbox(config: Mapping[str, Any] | None) -> Outbox:
    """The outbox in the database of the server running this call; ``llamon.sqlite3`` for a
    run that no llamon-agent server started; in this process's memory on PostgreSQL."""
    served = run_context(config)
    path = (served.db if served is not None else None) or DEFAULT_DB
    if parse_database_url(path).kind == "postgres":
        # the outbox is a SQLite table: on a PostgreSQL server it lives in this process until
        # it moves into the database (issue 11, next part: deduplicated by tool_call_id)
        path = ":memory:"
    if path not in _opened:
        _opened[path] = Outbox(path)
    return _opened[path]
