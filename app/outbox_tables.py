"""The outbox's table in the server's database: SQLite (a file, or ``:memory:``) or PostgreSQL.

Both keep one row per email and a unique index on ``(thread_id, tool_call_id)``, so a second
write with the same key stores nothing: ``insert`` then returns the row that was there. Every
method is synchronous and thread-safe; ``Outbox`` runs the writes in a worker thread.
"""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # the postgres extra is imported only when a PostgreSQL outbox opens
    from psycopg_pool import ConnectionPool

__all__ = ["PostgresTable", "SQLiteTable", "SentEmail", "Table"]


@dataclass(frozen=True)
class SentEmail:
    """One email of the outbox; ``number`` is its row id (``Email #number``)."""

    number: int
    thread_id: str | None
    tool_call_id: str | None
    to: str
    subject: str
    body: str


class Table(Protocol):
    def insert(self, email: SentEmail) -> SentEmail:
        """Store ``email`` (its ``number`` is ignored) unless its key is already there; returns
        the stored email: the new one, or the first with that key."""
        ...

    def find(self, tool_call_id: str, thread_id: str | None) -> SentEmail | None: ...

    def select(self, thread_id: str | None) -> list[SentEmail]: ...

    def close(self) -> None: ...


_COLUMNS = "id, thread_id, tool_call_id, to_address, subject, body"
# NULL thread ids are one thread, not each its own (NULLs are distinct in a unique index)
_KEY_MATCH = "COALESCE(thread_id, '') = COALESCE({p}, '') AND tool_call_id = {p}"
_INSERT = (
    "INSERT INTO outbox (thread_id, tool_call_id, to_address, subject, body, sent_at)"
    " VALUES ({p}, {p}, {p}, {p}, {p}, {p}) ON CONFLICT DO NOTHING RETURNING id"
)


def _email(row: tuple[Any, ...]) -> SentEmail:
    number, thread_id, tool_call_id, to, subject, body = row
    return SentEmail(int(number), thread_id, tool_call_id, to, subject, body)


def _values(email: SentEmail, sent_at: Any) -> tuple[Any, ...]:
    return (email.thread_id, email.tool_call_id, email.to, email.subject, email.body, sent_at)


def _find(conn: Any, p: str, tool_call_id: str, thread_id: str | None) -> SentEmail | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM outbox WHERE " + _KEY_MATCH.format(p=p),
                       (thread_id, tool_call_id)).fetchone()
    return _email(row) if row is not None else None


def _insert_once(conn: Any, p: str, email: SentEmail, sent_at: Any) -> SentEmail:
    """``conn``: a sqlite3 or psycopg connection (the same DB-API calls), ``p`` its
    placeholder."""
    key = email.tool_call_id
    if key is not None:  # look first: a conflicting insert would spend a number
        found = _find(conn, p, key, email.thread_id)
        if found is not None:
            return found
    row = conn.execute(_INSERT.format(p=p), _values(email, sent_at)).fetchone()
    if row is not None:
        return replace(email, number=int(row[0]))
    # another process stored the key since the look-up (only a key can conflict)
    found = _find(conn, p, str(key), email.thread_id)
    assert found is not None
    return found


def _select(placeholder: str, thread_id: str | None) -> tuple[str, tuple[Any, ...]]:
    query = f"SELECT {_COLUMNS} FROM outbox"
    if thread_id is None:
        return query + " ORDER BY id", ()
    return query + f" WHERE thread_id = {placeholder} ORDER BY id", (thread_id,)


# ----------------------------------------------------------------------------------- SQLite

_SQLITE_TABLE = """
CREATE TABLE IF NOT EXISTS outbox (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    thread_id TEXT,
    to_address TEXT NOT NULL,
    subject TEXT NOT NULL,
    body TEXT NOT NULL,
    sent_at TEXT NOT NULL,
    tool_call_id TEXT
)
"""
_SQLITE_KEY = (
    "CREATE UNIQUE INDEX IF NOT EXISTS outbox_tool_call"
    " ON outbox (COALESCE(thread_id, ''), tool_call_id)"
)


class SQLiteTable:
    """One connection, opened at the first use, shared by threads under a lock."""

    def __init__(self, path: str) -> None:
        self._path = path
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.Lock()

    def insert(self, email: SentEmail) -> SentEmail:
        sent_at = datetime.now(UTC).isoformat(timespec="seconds")
        with self._lock:
            conn = self._connection()
            with conn:
                return _insert_once(conn, "?", email, sent_at)

    def find(self, tool_call_id: str, thread_id: str | None) -> SentEmail | None:
        with self._lock:
            return _find(self._connection(), "?", tool_call_id, thread_id)

    def select(self, thread_id: str | None) -> list[SentEmail]:
        query, args = _select("?", thread_id)
        with self._lock:
            rows = self._connection().execute(query, args).fetchall()
        return [_email(row) for row in rows]

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            conn = sqlite3.connect(self._path, check_same_thread=False, timeout=30)
            try:
                if self._path != ":memory:":
                    conn.execute("PRAGMA journal_mode=WAL")
                _sqlite_schema(conn)
            except BaseException:
                conn.close()
                raise
            self._conn = conn
        return self._conn


def _sqlite_schema(conn: sqlite3.Connection) -> None:
    """The table, and the key on a table written before it had one (a column added)."""
    conn.execute("BEGIN IMMEDIATE")  # two processes opening an old file add the column once
    try:
        conn.execute(_SQLITE_TABLE)
        columns = {row[1] for row in conn.execute("PRAGMA table_info(outbox)")}
        if "tool_call_id" not in columns:
            conn.execute("ALTER TABLE outbox ADD COLUMN tool_call_id TEXT")
        conn.execute(_SQLITE_KEY)
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise


# ------------------------------------------------------------------------------- PostgreSQL

_POSTGRES_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS outbox (
        id BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        thread_id TEXT,
        tool_call_id TEXT,
        to_address TEXT NOT NULL,
        subject TEXT NOT NULL,
        body TEXT NOT NULL,
        sent_at TIMESTAMPTZ NOT NULL
    )""",
    "CREATE UNIQUE INDEX IF NOT EXISTS outbox_tool_call"
    " ON outbox ((COALESCE(thread_id, '')), tool_call_id)",
)
#: ``pg_advisory_xact_lock`` key of the outbox's schema ("lmoutbox" in ASCII): servers that
#: open a new database together would race on ``CREATE TABLE IF NOT EXISTS``
_SCHEMA_LOCK = int.from_bytes(b"lmoutbox", "big")


class PostgresTable:
    """A small connection pool (psycopg_pool: a connection that broke is replaced), opened at
    the first use; the schema is created then, under an advisory lock."""

    def __init__(self, url: str) -> None:
        self._url = url
        self._pool: ConnectionPool | None = None
        self._lock = threading.Lock()

    def insert(self, email: SentEmail) -> SentEmail:
        with self._pool_of().connection() as conn, conn.transaction():
            return _insert_once(conn, "%s", email, datetime.now(UTC))

    def find(self, tool_call_id: str, thread_id: str | None) -> SentEmail | None:
        with self._pool_of().connection() as conn:
            return _find(conn, "%s", tool_call_id, thread_id)

    def select(self, thread_id: str | None) -> list[SentEmail]:
        query, args = _select("%s", thread_id)
        with self._pool_of().connection() as conn:
            rows = conn.execute(query, args).fetchall()
        return [_email(row) for row in rows]

    def close(self) -> None:
        with self._lock:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def _pool_of(self) -> ConnectionPool:
        with self._lock:
            if self._pool is None:
                self._pool = _open_pool(self._url)
            return self._pool


def _open_pool(url: str) -> ConnectionPool:
    from psycopg_pool import ConnectionPool  # the postgres extra: only on a PostgreSQL server

    pool = ConnectionPool(url, min_size=1, max_size=4, open=False,
                          kwargs={"autocommit": True},
                          check=ConnectionPool.check_connection, name="llamon-outbox")
    try:
        pool.open(wait=True, timeout=30)
        with pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            for statement in _POSTGRES_SCHEMA:
                conn.execute(statement)
    except BaseException:
        pool.close()
        raise
    return pool
