"""PostgreSQL storage (``--db postgresql://...``): tasks, human reviews and LangGraph checkpoints
in one database, through one psycopg 3 connection pool (the ``postgres`` extra).

The task rows are the SQLite store's (``_codec.py`` encodes them, the same columns); ``created``
is an identity column, so "the latest task of a context" is the order PostgreSQL gave the
inserts, whichever process made them. Checkpoints are LangGraph's own ``AsyncPostgresSaver``
(every checkpoint kept, as LangGraph writes them: no pruning as on SQLite), serialising on the
event loop (``pg_saver.py``).

The schema is created and migrated at start by :func:`migrate`, under one advisory lock, so
servers that start together on a new database do not race on ``CREATE TABLE``
(docs/storage.md, "PostgreSQL").
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Collection, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from functools import lru_cache
from typing import Any

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from psycopg import AsyncConnection, AsyncCursor
from psycopg.rows import dict_row, tuple_row
from psycopg.sql import SQL, Identifier
from psycopg_pool import AsyncConnectionPool

from ..a2a.types import RUNNING_STATES, TERMINAL_STATES
from ..errors import UnreadableTaskError
from ..human_review.postgres import DECISION_ORDER as REVIEW_DECISION_ORDER
from ..human_review.postgres import SCHEMA as REVIEWS_SCHEMA
from ..human_review.postgres import WAITING_INDEX as REVIEWS_WAITING_INDEX
from ..human_review.postgres import PostgresReviewPort
from ..settings import DEFAULT_DB_POOL_SIZE
from . import _codec
from .base import (
    DeletedTask,
    Prunable,
    StoredTask,
    TaskCursor,
    TaskPage,
    TaskQuery,
    UnreadableRow,
    check_listing,
    choose_page,
    listing_condition,
)
from .pg_saver import InlinePostgresSaver
from .push_base import NOTIFIED_STATES
from .push_postgres import SCHEMA as PUSH_SCHEMA
from .push_postgres import UNSEEN_AFTER_UPSERT, UnseenConfigs
from .turn_writes import ClaimRow, HeldStatement, TurnWrites, held_for

__all__ = ["LATEST_IN_CONTEXT", "MIGRATIONS", "PostgresTaskStore", "binary_cursor",
           "decode_task_row", "migrate", "open_postgres"]

#: the advisory lock key of schema changes ("llamon" in ASCII): every server takes it at start
SCHEMA_LOCK = 0x6C6C616D6F6E

#: the package's schema; the position is the version (``llamon_migrations``). A new version is
#: a new entry at the end; an entry is never edited once released.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS llamon_tasks (
        id TEXT PRIMARY KEY,
        context_id TEXT NOT NULL,
        agent_id TEXT NOT NULL,
        state TEXT NOT NULL,
        event_seq BIGINT NOT NULL,
        pending_interrupt TEXT,
        reask_count INTEGER NOT NULL,
        task BYTEA NOT NULL,
        extra BYTEA,
        created BIGINT GENERATED ALWAYS AS IDENTITY,
        space TEXT NOT NULL DEFAULT 'anonymous',
        updated DOUBLE PRECISION NOT NULL DEFAULT 0
    );
    CREATE INDEX IF NOT EXISTS llamon_tasks_context ON llamon_tasks (context_id, created);
    CREATE INDEX IF NOT EXISTS llamon_tasks_state ON llamon_tasks (state, updated);
    CREATE INDEX IF NOT EXISTS llamon_tasks_space ON llamon_tasks (space, state);
    """,
    REVIEWS_SCHEMA,
    REVIEW_DECISION_ORDER,  # decisions numbered in commit order: told across servers
    # deadlines (docs/hitl.md, "Deadlines"): the sweep reads only the tasks that have one
    """
    ALTER TABLE llamon_tasks ADD COLUMN IF NOT EXISTS expires_at TEXT;
    CREATE INDEX IF NOT EXISTS llamon_tasks_expiry ON llamon_tasks (expires_at)
        WHERE expires_at IS NOT NULL;
    """,
    # retention deletes the reviews of deleted tasks (docs/operations.md, "Retention")
    "CREATE INDEX IF NOT EXISTS llamon_reviews_task ON llamon_reviews (task_id);",
    PUSH_SCHEMA,  # push notification configs and deliveries (docs/operations.md)
    # ListTasks (A2A): one owner's tasks newest update first, a page at a time in index
    # order; ids in code point order ("C"), as in memory and on SQLite, whatever the
    # database's collation
    """
    CREATE INDEX IF NOT EXISTS llamon_tasks_recent
        ON llamon_tasks (space, updated DESC, id COLLATE "C" DESC);
    """,
    # the same, ascending, read backwards: descending, every save put the task's entry at the
    # left edge of the owner's tasks, where a full leaf is split in half; at the right edge
    # PostgreSQL splits the rightmost leaf leaving the old one full (1.11 against 0.63 MB of
    # index at 5,500 tasks; bench/README.md, "Speed, round twenty-nine"). One build over
    # every task, once.
    """
    DROP INDEX IF EXISTS llamon_tasks_recent;
    CREATE INDEX llamon_tasks_recent ON llamon_tasks (space, updated, id COLLATE "C");
    """,
    # GET /reviews a page at a time, and the metrics' count without reading the reviews
    # (bench/README.md, "Speed, round thirty-four")
    REVIEWS_WAITING_INDEX,
    # a large task's row with lz4, not pglz: 1.6 against 7.0 ms of PostgreSQL's CPU to write a
    # 700 KB task, the same size stored (bench/README.md, "Speed, round thirty-five"). Only
    # values written from now on; a server built without lz4 (feature_not_supported) or older
    # than PostgreSQL 14 (which cannot say it: syntax_error) keeps pglz
    """
    DO $$
    BEGIN
        EXECUTE 'ALTER TABLE llamon_tasks ALTER COLUMN task SET COMPRESSION lz4, '
                'ALTER COLUMN extra SET COMPRESSION lz4';
    EXCEPTION WHEN feature_not_supported OR syntax_error THEN
        NULL;
    END
    $$;
    """,
)
_MIGRATIONS_TABLE = "CREATE TABLE IF NOT EXISTS llamon_migrations (v INTEGER PRIMARY KEY)"
_LOCK_POLL = 0.05  # seconds between attempts at the schema lock
_LOCK_WAIT = 120.0  # a server that cannot take it this long gives up with a clear error

_COLUMNS = "task, agent_id, event_seq, pending_interrupt, reask_count, extra, id, context_id"
_RUNNING = sorted(RUNNING_STATES)
#: the context's latest task (its one parameter: the context key), as ``decode_task_row`` reads
LATEST_IN_CONTEXT = (f"SELECT {_COLUMNS} FROM llamon_tasks WHERE context_id = %s"
                     " ORDER BY created DESC LIMIT 1")
_ENDED_STATES = sorted(TERMINAL_STATES)
#: "ended before the cutoff" (its parameters: ``_ENDED_STATES``, then the cutoff); the index
#: ``llamon_tasks_state (state, updated)`` serves it
_ENDED = "state = ANY(%s) AND updated > 0 AND updated < %s"
_DATE_UNDATED = (
    "UPDATE llamon_tasks SET updated = %s WHERE id IN (SELECT id FROM llamon_tasks"
    " WHERE state = ANY(%s) AND updated <= 0 LIMIT %s) AND updated <= 0"
)
_COUNT_EMPTIED = (
    "SELECT COUNT(DISTINCT t.context_id) FROM llamon_tasks t"
    " WHERE t.state = ANY(%s) AND t.updated > 0 AND t.updated < %s"
    " AND NOT EXISTS (SELECT 1 FROM llamon_tasks o WHERE o.context_id = t.context_id"
    " AND NOT (o.state = ANY(%s) AND o.updated > 0 AND o.updated < %s))"
)
_DELETE_IN_CONTEXT = (
    "DELETE FROM llamon_tasks WHERE id IN"
    " (SELECT id FROM llamon_tasks WHERE context_id = %s LIMIT %s) RETURNING id"
)
# the condition twice: the subquery picks; the outer condition is checked again on the row as
# it is when the delete locks it (READ COMMITTED), so a task saved meanwhile is kept
_DELETE_ENDED_IN_CONTEXT = (
    "DELETE FROM llamon_tasks WHERE id IN"
    f" (SELECT id FROM llamon_tasks WHERE context_id = %s AND {_ENDED} LIMIT %s)"
    f" AND {_ENDED} RETURNING id"
)
_UPSERT_TASK = (
    "INSERT INTO llamon_tasks (id, context_id, agent_id, state, event_seq,"
    " pending_interrupt, reask_count, task, extra, space, updated, expires_at)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (id) DO UPDATE SET state = excluded.state,"
    " event_seq = excluded.event_seq, pending_interrupt = excluded.pending_interrupt,"
    " reask_count = excluded.reask_count, task = excluded.task, extra = excluded.extra,"
    " updated = excluded.updated, expires_at = excluded.expires_at"
)
#: what every pooled connection is: autocommit (each statement commits on its own), and the
#: settings ``AsyncPostgresSaver`` needs (dict rows, statements prepared at once)
CONNECTION_KWARGS: dict[str, Any] = {
    "autocommit": True, "prepare_threshold": 0, "row_factory": dict_row,
}


@lru_cache(maxsize=16)
def _claim_inserted_with(table: str, upsert: str) -> str:
    """``upsert`` that also inserts a claim's row (its first four parameters: key, owner,
    task id, lease seconds). A string, built once: psycopg prepares it as any other."""
    return SQL("WITH claimed AS (INSERT INTO {} (key, owner, task_id, expires_at) VALUES "
               "(%s, %s, %s, now() + make_interval(secs => %s))) ").format(
        Identifier(table)).as_string(None) + upsert


@lru_cache(maxsize=16)
def _claim_deleted_with(table: str, upsert: str) -> str:
    """``upsert`` that also deletes a claim's row (its first two parameters: key, owner)."""
    return SQL("WITH released AS (DELETE FROM {} WHERE key = %s AND owner = %s) ").format(
        Identifier(table)).as_string(None) + upsert


def binary_cursor(conn: AsyncConnection[Any]) -> AsyncCursor[tuple[Any, ...]]:
    """A cursor whose results come in PostgreSQL's binary format: a task's ``bytea`` as its
    bytes, not as hex text (a 1.4 MB row: 1.8 against 8.8 ms of the backend's CPU and 1.1
    against 4.9 ms of ours; bench/README.md, "Speed, round thirty-five")."""
    return conn.cursor(row_factory=tuple_row, binary=True)


def decode_task_row(row: Sequence[Any]) -> StoredTask:
    """A task row as ``LATEST_IN_CONTEXT`` selects it; ``UnreadableTaskError`` if it is not."""
    return _codec.decode(*row[:6], task_id=row[6])


def _decode_or_unreadable(row: Sequence[Any]) -> StoredTask | UnreadableRow:
    try:
        return decode_task_row(row)
    except UnreadableTaskError as exc:
        return UnreadableRow(row[6], row[7], row[1], row[2], exc.detail)


class PostgresTaskStore:
    """Every ``save`` commits before it returns: a task the client saw is durable."""

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        self._pool = pool
        #: what each notified save found of the task's push configs, for the push store
        self.unseen_push = UnseenConfigs()

    def commits_held_writes_of(self, checkpointer: object) -> bool:
        """Its saves send what an ``InlinePostgresSaver`` on the same pool held."""
        return isinstance(checkpointer, InlinePostgresSaver) and checkpointer.conn is self._pool

    async def _rows(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        async with self._pool.connection() as conn, binary_cursor(conn) as cur:
            await cur.execute(sql, params)
            return await cur.fetchall()

    async def get(self, task_id: str) -> StoredTask | None:
        if "\x00" in task_id:  # no text column holds NUL: unknown, as on SQLite (no DataError)
            return None
        rows = await self._rows(f"SELECT {_COLUMNS} FROM llamon_tasks WHERE id = %s", (task_id,))
        return decode_task_row(rows[0]) if rows else None

    async def save(self, record: StoredTask) -> None:
        """One upsert; inside a turn that holds its writes (``turn_writes.py``), in one
        transaction and one pipeline with the held checkpoint statements (first) and the
        claim's release (last)."""
        row = (record.id, record.context_key, record.agent_id, record.state, record.event_seq,
               record.pending_interrupt, record.reask_count, _codec.encode_task(record),
               _codec.encode_extra(record), record.space, time.time(), record.expires_at)
        notified = record.state in NOTIFIED_STATES
        sql, params = ((_UPSERT_TASK + UNSEEN_AFTER_UPSERT, (*row, record.id, record.event_seq))
                       if notified else (_UPSERT_TASK, row))
        held = held_for(record.context_key)
        if held is not None and held.pending:
            found = await self._save_with_held(held, sql, params, returns=notified)
        elif notified:
            found = await self._rows(sql, params)
        else:
            async with self._pool.connection() as conn:
                await conn.execute(sql, params)
            return
        if notified:
            self.unseen_push.note(record.id, record.event_seq, bool(found and found[0][0]))

    async def _save_with_held(
        self, held: TurnWrites, sql: str, params: tuple[Any, ...], *, returns: bool
    ) -> list[tuple[Any, ...]]:
        """One pipeline, one transaction (``_send_held``)."""
        statements, release = held.take()
        insert = held.claim_to_insert
        # the first save is the end's: the claim's row would be born and gone in one
        # transaction, so it is neither inserted nor deleted
        born_and_gone = insert is not None and release is not None
        # a renewal of the claim that runs meanwhile may find the row deleted before this
        # coroutine hears of the commit: it must not take the claim for lost
        held.releasing = release is not None
        try:
            async with self._pool.connection() as conn:
                found = await self._send_held(
                    conn, statements, None if born_and_gone else insert,
                    None if born_and_gone else release, sql, params, returns)
        except BaseException:
            held.restore(statements, release)  # nothing was committed: a later save sends them
            raise
        finally:
            held.releasing = False
        if insert is not None:
            held.claim_stored = True
        if release is not None:
            held.released = True
        return found

    @staticmethod
    async def _send_held(
        conn: AsyncConnection[Any], statements: list[HeldStatement], insert: ClaimRow | None,
        release: ClaimRow | None, sql: str, params: tuple[Any, ...], returns: bool,
    ) -> list[tuple[Any, ...]]:
        """The held statements and the task's upsert as one implicit transaction: PostgreSQL
        runs what a pipeline sends before its Sync in one transaction (psycopg sends the Sync
        only when the pipeline ends), which commits at the Sync, or rolls back whole when one
        of its statements fails. No ``BEGIN`` and ``COMMIT`` statements: they were two of the
        five statements of an instant task's end (bench/README.md, "Speed, round eight"); nor
        ``conn.transaction()``, which syncs the pipeline at both ends (round six: twice the
        CPU of the whole save).

        What fails on this side before the Sync (a value psycopg cannot send, such as NUL in
        text, or the task being cancelled midway) must not let the pipeline's end send it,
        which would commit the statements before the failure: the connection is closed
        instead, and PostgreSQL rolls back a transaction whose connection is gone. The pool
        replaces the connection."""
        # the claim's row goes in the task's upsert, one statement: a fresh context's is
        # inserted (no other holder can exist), the end's release deletes it
        if insert is not None:
            sql = _claim_inserted_with(insert.table, sql)
            params = (insert.key, insert.owner, insert.task_id, insert.lease, *params)
        elif release is not None:
            sql = _claim_deleted_with(release.table, sql)
            params = (release.key, release.owner, *params)
        async with (
            # binary, as AsyncPostgresSaver's own cursor sends them
            conn.cursor(binary=True) as checkpoints,
            conn.cursor(row_factory=tuple_row) as task,
        ):
            async with conn.pipeline():
                try:
                    for held_sql in statements:
                        if held_sql.many:
                            await checkpoints.executemany(held_sql.sql, held_sql.params)
                        else:
                            await checkpoints.execute(held_sql.sql, held_sql.params)
                    await task.execute(sql, params)
                except BaseException:
                    await conn.close()  # never the Sync: nothing of it commits
                    raise
            # the pipeline's end synced: committed, and the upsert's result is in
            return await task.fetchall() if returns else []

    async def latest_in_context(self, context_key: str) -> StoredTask | None:
        if "\x00" in context_key:  # as in ``get``
            return None
        rows = await self._rows(LATEST_IN_CONTEXT, (context_key,))
        return decode_task_row(rows[0]) if rows else None

    async def list_tasks(
        self, query: TaskQuery, limit: int, after: TaskCursor | None = None, *,
        history: int | None = None,
    ) -> TaskPage:
        check_listing(query, limit, after)
        if any("\x00" in value for value in (query.space, query.context_key, query.state)
               if value is not None):
            return TaskPage([], 0, None)  # no text column holds NUL (as in ``get``)
        where, params = listing_condition(query, "%s")
        page_where, page_params = where, params
        if after is not None:
            # no stored id holds NUL either, and NUL sorts first: an id is before "b\x00..."
            # exactly when it is "b" or before it
            prefix, nul, _ = after.id.partition("\x00")
            page_where += f' AND (updated, id COLLATE "C") {"<=" if nul else "<"} (%s, %s)'
            page_params = (*params, after.updated, prefix)
        async with self._pool.connection() as conn, binary_cursor(conn) as cur:
            await cur.execute(f"SELECT COUNT(*) FROM llamon_tasks WHERE {where}", params)
            counted = await cur.fetchone()
            # the page's rows are chosen by their sizes (``choose_page``), then read: a row
            # past the page is not read whole (``octet_length`` of a TOASTed value reads its
            # pointer, not its bytes)
            await cur.execute(
                f"SELECT id, updated, octet_length(task) FROM llamon_tasks WHERE {page_where}"
                ' ORDER BY updated DESC, id COLLATE "C" DESC LIMIT %s',
                (*page_params, limit + 1),
            )
            ids, following = choose_page(await cur.fetchall(), limit)
            rows = []
            if ids:
                await cur.execute(
                    f"SELECT {_COLUMNS}, updated FROM llamon_tasks WHERE id = ANY(%s)", (ids,))
                rows = await cur.fetchall()
        return TaskPage(tasks=await _codec.decode_page(ids, rows, history),
                        total=int(counted[0]) if counted is not None else 0, next=following)

    async def unfinished(self) -> list[StoredTask | UnreadableRow]:
        rows = await self._rows(
            f"SELECT {_COLUMNS} FROM llamon_tasks WHERE state = ANY(%s) ORDER BY created",
            (_RUNNING,),
        )
        return [_decode_or_unreadable(row) for row in rows]

    async def ping(self) -> None:
        await self._rows("SELECT 1 FROM llamon_tasks LIMIT 1")

    async def expiring(self, before: str, limit: int) -> list[StoredTask | UnreadableRow]:
        rows = await self._rows(
            f"SELECT {_COLUMNS} FROM llamon_tasks WHERE expires_at IS NOT NULL"
            " AND expires_at <= %s AND state = 'input-required' ORDER BY expires_at LIMIT %s",
            (before, limit),
        )
        return [_decode_or_unreadable(row) for row in rows]

    async def count_by_state(self) -> dict[str, int]:
        rows = await self._rows("SELECT state, COUNT(*) FROM llamon_tasks GROUP BY state")
        return {str(state): int(count) for state, count in rows}

    async def count_in_state(self, space: str, state: str) -> int:
        rows = await self._rows(
            "SELECT COUNT(*) FROM llamon_tasks WHERE space = %s AND state = %s", (space, state)
        )
        return int(rows[0][0])

    async def oldest_in_state(self, state: str) -> float | None:
        rows = await self._rows(
            # as on SQLite: a row with no known age (updated = 0) is left out
            "SELECT MIN(updated) FROM llamon_tasks WHERE state = %s AND updated > 0", (state,)
        )
        return None if rows[0][0] is None else float(rows[0][0])

    # ------------------------------------------------------------------ retention

    async def date_undated(self, now: float, limit: int) -> int:
        async with self._pool.connection() as conn:
            cur = await conn.execute(_DATE_UNDATED, (now, _ENDED_STATES, limit))
            return max(cur.rowcount, 0)

    async def ended_before(self, cutoff: float, limit: int) -> list[DeletedTask]:
        rows = await self._rows(
            f"SELECT id, context_id FROM llamon_tasks WHERE {_ENDED} LIMIT %s",
            (_ENDED_STATES, cutoff, limit),
        )
        return [DeletedTask(row[0], row[1]) for row in rows]

    async def count_ended(self, cutoff: float) -> Prunable:
        ended = (_ENDED_STATES, cutoff)
        rows = await self._rows(
            f"SELECT COUNT(*), COUNT(DISTINCT context_id) FROM llamon_tasks WHERE {_ENDED}",
            ended,
        )
        emptied = await self._rows(_COUNT_EMPTIED, ended * 2)
        undated = await self._rows(
            "SELECT COUNT(*) FROM llamon_tasks WHERE state = ANY(%s) AND updated <= 0",
            (_ENDED_STATES,),
        )
        return Prunable(int(rows[0][0]), int(rows[0][1]), int(emptied[0][0]),
                        int(undated[0][0]))

    async def context_outlives(self, context_key: str, cutoff: float) -> bool:
        rows = await self._rows(
            f"SELECT 1 FROM llamon_tasks WHERE context_id = %s AND NOT ({_ENDED}) LIMIT 1",
            (context_key, _ENDED_STATES, cutoff),
        )
        return bool(rows)

    async def contexts_with_tasks(self, context_keys: Collection[str]) -> set[str]:
        rows = await self._rows(
            "SELECT DISTINCT context_id FROM llamon_tasks WHERE context_id = ANY(%s)",
            (list(context_keys),),
        )
        return {row[0] for row in rows}

    async def delete_in_context(
        self, context_key: str, limit: int, *, ended_before: float | None = None
    ) -> list[DeletedTask]:
        if ended_before is None:
            rows = await self._rows(_DELETE_IN_CONTEXT, (context_key, limit))
        else:
            ended = (_ENDED_STATES, ended_before)
            rows = await self._rows(_DELETE_ENDED_IN_CONTEXT, (context_key, *ended, limit, *ended))
        deleted = [DeletedTask(row[0], context_key) for row in rows]
        _codec.forget(d.id for d in deleted)
        return deleted

    async def reclaim_space(self) -> None:
        return None  # autovacuum makes deleted rows' space reusable (docs/storage.md)


async def _take_schema_lock(conn: AsyncConnection[Any]) -> None:
    """A session advisory lock, taken by polling: LangGraph's migrations include ``CREATE
    INDEX CONCURRENTLY``, which cannot run in a transaction (so no ``pg_advisory_xact_lock``)
    and waits for every older transaction of the database, so a server must not wait for the
    lock inside a statement (it would be such a transaction, and the two would deadlock)."""
    waited = 0.0
    while True:
        cur = await conn.execute("SELECT pg_try_advisory_lock(%s)", (SCHEMA_LOCK,))
        row = await cur.fetchone()
        if row is not None and next(iter(row.values())):
            return
        if waited >= _LOCK_WAIT:
            raise TimeoutError(
                f"another server has held the schema lock for {_LOCK_WAIT:.0f} s "
                f"(pg_advisory_lock {SCHEMA_LOCK})"
            )
        await asyncio.sleep(_LOCK_POLL)
        waited += _LOCK_POLL


async def migrate(url: str) -> None:
    """Create or upgrade the package's tables and LangGraph's checkpoint tables, once per
    database whatever the number of servers starting: under one advisory lock, the package's
    missing versions in one transaction, then ``AsyncPostgresSaver.setup()`` (its own
    versioned migrations)."""
    async with await AsyncConnection.connect(url, **CONNECTION_KWARGS) as conn:
        await _take_schema_lock(conn)
        try:
            async with conn.transaction():
                await conn.execute(_MIGRATIONS_TABLE)
                cur = await conn.execute("SELECT COALESCE(MAX(v), -1) AS v FROM llamon_migrations")
                row = await cur.fetchone()
                done = int(row["v"]) if row is not None else -1
                for version in range(done + 1, len(MIGRATIONS)):
                    await conn.execute(MIGRATIONS[version], prepare=False)  # several statements
                    await conn.execute("INSERT INTO llamon_migrations (v) VALUES (%s)", (version,))
            await AsyncPostgresSaver(conn).setup()
        finally:
            if not conn.closed:
                await conn.execute("SELECT pg_advisory_unlock(%s)", (SCHEMA_LOCK,))


@asynccontextmanager
async def open_postgres(
    url: str, *, pool_size: int = DEFAULT_DB_POOL_SIZE
) -> AsyncIterator[
    tuple[PostgresTaskStore, PostgresReviewPort, AsyncPostgresSaver, AsyncConnectionPool[Any]]
]:
    """The schema migrated, then one pool of up to ``pool_size`` connections for the task
    store, the review port and the checkpointer (the review port listens on one more, its
    own); the pool is closed on the way out, also when opening fails half-way. No path holds
    one pooled connection while it waits for another, so a pool of one serves, slowly."""
    await migrate(url)  # a connection of its own: an unreachable server fails here, clearly
    async with AsyncExitStack() as opened:
        pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
            url, min_size=1, max_size=pool_size, kwargs=CONNECTION_KWARGS, open=False,
            name="llamon",
        )
        await pool.open(wait=True, timeout=30)
        opened.push_async_callback(pool.close)
        # closed before the pool (the stack unwinds in reverse): it stops listening first
        reviews = await opened.enter_async_context(PostgresReviewPort(pool))
        yield PostgresTaskStore(pool), reviews, InlinePostgresSaver(pool), pool
