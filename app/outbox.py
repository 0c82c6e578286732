"""The email assistant's outbox: one row per email that was really sent, at most one per tool
call.

It is a table (``outbox``) in the server's own database, so a demo's side effects persist with
its conversations and tests can count them: a SQLite file, or the PostgreSQL database of a
server started with ``--db postgresql://...`` (``app/outbox_tables.py``). ``server_outbox(config)``
is the outbox of the server running a call (its ``RunContext.db``); ``Outbox(db)`` one in
``db``, a database setting as ``--db`` takes it (default ``llamon.sqlite3``, the server's
default). It is opened at the first use. ``":memory:"`` keeps the rows in this process only (one
private database per ``Outbox``).

``send_once(tool_call_id, ...)`` is the tool's write: the key is the tool call's id within its
thread, so a turn that runs again from its checkpoint (the same model message, the same ids:
another replica after a crash) finds the first email and sends none.

Writes run in a worker thread: the server's own connection to the same SQLite file may hold its
write lock for a moment at the end of another turn, and waiting for it must not block the
event loop that will release it. Reads (``rows``, ``count``, ``sent``) are synchronous.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from llamon_agent.core.run_context import run_context
from llamon_agent.settings import DEFAULT_DB
from llamon_agent.stores.url import parse_database_url

from .outbox_tables import PostgresTable, SentEmail, SQLiteTable, Table

__all__ = ["Outbox", "SentEmail", "server_outbox"]


class Outbox:
    def __init__(self, path: str | None = None) -> None:
        self._path = path
        url = parse_database_url(self.path)
        self._table: Table = (
            PostgresTable(url.target) if url.kind == "postgres" else SQLiteTable(url.target)
        )

    @property
    def path(self) -> str:
        """The database setting it was opened with (a file path, ``:memory:`` or a URL)."""
        return self._path or DEFAULT_DB

    async def send_once(self, tool_call_id: str, to: str, subject: str, body: str,
                        thread_id: str | None = None) -> SentEmail:
        """Store one sent email under ``(thread_id, tool_call_id)``; the same key again stores
        nothing and returns the first email (whatever the second call carried)."""
        email = SentEmail(0, thread_id, tool_call_id, to, subject, body)
        return await asyncio.to_thread(self._table.insert, email)

    async def send(self, to: str, subject: str, body: str, thread_id: str | None = None) -> int:
        """Store one sent email without a key (every call is a new email); returns its number."""
        email = SentEmail(0, thread_id, None, to, subject, body)
        return (await asyncio.to_thread(self._table.insert, email)).number

    def sent(self, tool_call_id: str, thread_id: str | None = None) -> SentEmail | None:
        """The email sent under this key, if any."""
        return self._table.find(tool_call_id, thread_id)

    def emails(self, thread_id: str | None = None) -> list[SentEmail]:
        return self._table.select(thread_id)

    def count(self, thread_id: str | None = None) -> int:
        return len(self.emails(thread_id))

    def rows(self, thread_id: str | None = None) -> list[dict[str, Any]]:
        """The emails as dicts (``id``, ``thread_id``, ``tool_call_id``, ``to``, ``subject``,
        ``body``), oldest first."""
        return [
            {"id": e.number, "thread_id": e.thread_id, "tool_call_id": e.tool_call_id,
             "to": e.to, "subject": e.subject, "body": e.body}
            for e in self.emails(thread_id)
        ]

    def close(self) -> None:
        self._table.close()


_opened: dict[str, Outbox] = {}  # one per database, opened by the first call that writes there


def server_outbox(config: Mapping[str, Any] | None) -> Outbox:
    """The outbox in the database of the server running this call (its SQLite file or its
    PostgreSQL database); ``llamon.sqlite3`` for a run that no llamon-agent server started."""
    served = run_context(config)
    path = (served.db if served is not None else None) or DEFAULT_DB
    if path not in _opened:
        _opened[path] = Outbox(path)
    return _opened[path]
