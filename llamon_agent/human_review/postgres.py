"""``PostgresReviewPort``: the SQLite review port's semantics on PostgreSQL (psycopg 3 async).

``submit`` is idempotent per task across processes: a partial unique index allows one pending
review per task, so two servers that submit for the same task at once get the same review.

Every port on a schema tells its listeners of every decision taken on that schema, whichever
process took it, exactly once per listener (docs/storage.md, "PostgreSQL"):

* ``decide`` numbers the decision (``decided_seq``, from the one-row counter
  ``llamon_review_decisions``, whose row lock it holds until it commits: decisions commit in the
  order of their numbers) and sends ``NOTIFY`` with the review id in the same transaction, so a
  notification exists only for a committed decision.
* Each port listens on a connection of its own, outside the pool (autocommit, ``LISTEN``), in a
  task it owns from ``__aenter__`` (or its first ``on_decision``) to ``aclose``. For each
  notification it reads the review from the table and tells the listeners, in commit order. A
  dropped connection is opened again with backoff, and the decisions numbered after the last one
  it saw are read and told before it follows notifications again.
* A decision taken through this port is told by ``decide`` itself, before it returns, and its
  notification is skipped: the deciding process keeps the SQLite port's order (listeners told
  before ``decide`` returns) and needs no round trip through the listening connection, which may
  be down at that moment. The number, registered before the commit, is how the listening task
  recognises it.

The tables are created by the storage's migrations (``stores/postgres.py``: ``SCHEMA``, then
``DECISION_ORDER`` here).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import uuid
from collections.abc import Callable, Sequence
from contextlib import aclosing
from typing import Any

import orjson
from psycopg import AsyncConnection, Rollback, sql
from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool

from ..core.background import stop_task
from ..core.clock import now
from ..core.ports import (
    Decision,
    Listener,
    PendingSummary,
    Review,
    ReviewCursor,
    ReviewNotFoundError,
)
from .port import _closed_error, _Notifying, readable, readable_page, review_of_row

__all__ = ["DECISION_ORDER", "LISTENER_NAME", "RECONNECT_DELAYS", "SCHEMA", "WAITING_INDEX",
           "PostgresReviewPort"]

log = logging.getLogger(__name__)

#: the listening connection's ``application_name`` and the name of the task that reads it
LISTENER_NAME = "llamon review listener"
#: seconds before opening a dropped listening connection again: the first delay, doubled at
#: each failure up to the second
RECONNECT_DELAYS = (0.1, 5.0)
_CATCH_UP_BATCH = 200  # decisions read per query when catching up after a reconnection

SCHEMA = """
CREATE TABLE IF NOT EXISTS llamon_reviews (
    id TEXT PRIMARY KEY,
    task_id TEXT NOT NULL,
    context_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    draft BYTEA NOT NULL,
    status TEXT NOT NULL,
    decision BYTEA,
    created TEXT NOT NULL,
    decided TEXT,
    closed TEXT,
    closed_reason TEXT,
    decided_by TEXT
);
CREATE UNIQUE INDEX IF NOT EXISTS llamon_reviews_one_pending
    ON llamon_reviews (task_id) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS llamon_reviews_status ON llamon_reviews (status, created);
"""
_COLUMNS = (
    "id, task_id, context_id, agent_id, draft, status, decision, created, decided, closed,"
    " closed_reason, decided_by"
)
#: the next migration: every decision numbered in commit order (``decide``), so that a port whose
#: listening connection dropped can read what it missed; reviews decided before it have none
DECISION_ORDER = """
ALTER TABLE llamon_reviews ADD COLUMN IF NOT EXISTS decided_seq BIGINT;
CREATE INDEX IF NOT EXISTS llamon_reviews_decided_seq ON llamon_reviews (decided_seq)
    WHERE decided_seq IS NOT NULL;
CREATE TABLE IF NOT EXISTS llamon_review_decisions (
    one BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
    last BIGINT NOT NULL
);
INSERT INTO llamon_review_decisions (one, last) VALUES (TRUE, 0) ON CONFLICT DO NOTHING;
"""
#: the channel of the schema's decisions. NOTIFY never crosses databases; the schema (the one
#: the tables are created in) is hashed because a channel is an identifier of at most 63 bytes
_CHANNEL = (
    "'llamon_reviews_' || left(encode(sha256(convert_to(current_schema(), 'UTF8')), 'hex'), 32)"
)
#: pending reviews in code point order (``COLLATE "C"``), as in memory and on SQLite, whatever
#: the database's collation
_WAITING_ORDER = 'created COLLATE "C", id COLLATE "C"'
_PENDING_FIRST = (f"SELECT {_COLUMNS} FROM llamon_reviews WHERE status = 'pending'"
                  f" ORDER BY {_WAITING_ORDER} LIMIT %s")
_PENDING_AFTER = (f"SELECT {_COLUMNS} FROM llamon_reviews WHERE status = 'pending'"
                  f" AND ({_WAITING_ORDER}) > (%s, %s) ORDER BY {_WAITING_ORDER} LIMIT %s")
_PENDING_SUMMARY = ("SELECT COUNT(*), MIN(created COLLATE \"C\") FROM llamon_reviews"
                    " WHERE status = 'pending'")
#: the migration of the pending reviews' pages (``stores/postgres.py``)
WAITING_INDEX = f"""
DROP INDEX IF EXISTS llamon_reviews_status;
CREATE INDEX IF NOT EXISTS llamon_reviews_waiting ON llamon_reviews ({_WAITING_ORDER})
    WHERE status = 'pending';
"""
_PENDING_OF_TASK = f"SELECT {_COLUMNS} FROM llamon_reviews WHERE task_id = %s AND status = 'pending'"
_INSERT = (
    f"INSERT INTO llamon_reviews ({_COLUMNS})"
    " VALUES (%s, %s, %s, %s, %s, 'pending', NULL, %s, NULL, NULL, NULL, NULL)"
    " ON CONFLICT (task_id) WHERE status = 'pending' DO NOTHING"
    f" RETURNING {_COLUMNS}"
)
_NEXT_DECISION = "UPDATE llamon_review_decisions SET last = last + 1 RETURNING last"
_DECIDE = (
    "UPDATE llamon_reviews SET status = 'decided', decision = %s, decided = %s,"
    " decided_by = %s, decided_seq = %s"
    f" WHERE id = %s AND status = 'pending' RETURNING {_COLUMNS}, decided_seq"
)
_DECIDED = f"SELECT {_COLUMNS}, decided_seq FROM llamon_reviews"


async def _reconnect_pause(delay: float) -> None:
    await asyncio.sleep(delay)


async def _resolved(value: Any) -> Any:
    """A pool's ``conninfo`` or ``kwargs``: the value, or what its (async) callable returns."""
    if callable(value):
        value = value()
        if inspect.isawaitable(value):
            value = await value
    return value


class PostgresReviewPort(_Notifying):
    """Reviews in the server's PostgreSQL database; every statement commits on its own, but a
    decision, which is one transaction. An async context manager: inside, it listens to the
    decisions of the other processes on the same schema (the module's docstring); so does a
    port not entered once it is given a listener, until ``aclose``."""

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        super().__init__()
        self._pool = pool
        #: the channel it listens on (``None`` until it listens): per database and schema
        self.channel: str | None = None
        self._feed: asyncio.Task[None] | None = None
        self._listening: asyncio.Future[None] | None = None  # its first LISTEN, or why not
        self._conn: AsyncConnection[tuple[Any, ...]] | None = None
        self._seen: int | None = None  # the last decision number the feed dealt with
        #: decisions of this process not yet seen by the feed, by number: ``True`` once
        #: ``decide`` committed and tells the listeners itself, ``False`` when it failed
        #: after registering (had it committed, the feed tells them)
        self._told_here: dict[int, asyncio.Future[bool]] = {}

    async def __aenter__(self) -> PostgresReviewPort:
        """Returns once the port listens; fails when the first listening connection does."""
        self._start()
        assert self._listening is not None
        try:
            await asyncio.shield(self._listening)
        except BaseException:
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Stops listening: the task is cancelled and awaited, the connection closed."""
        feed, self._feed, self._listening = self._feed, None, None
        if feed is not None:
            await stop_task(feed)  # psycopg_pool's wait_for may lose one cancel
        await self._drop_connection()
        self._seen, self.channel = None, None
        self._told_here.clear()

    def on_decision(self, listener: Listener) -> Callable[[], None]:
        remove = super().on_decision(listener)
        self._start()
        return remove

    async def _one(self, sql: str, params: tuple[Any, ...]) -> tuple[Any, ...] | None:
        async with self._pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(sql, params)
            return await cur.fetchone()

    async def _all(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        async with self._pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(sql, params)
            return await cur.fetchall()

    async def submit(self, *, task_id: str, context_id: str, agent_id: str, draft: Any) -> Review:
        while True:
            row = await self._one(_PENDING_OF_TASK, (task_id,))
            if row is not None:
                return review_of_row(row)
            review = Review(str(uuid.uuid4()), task_id, context_id, agent_id, draft)
            row = await self._one(_INSERT, (review.id, task_id, context_id, agent_id,
                                            orjson.dumps(draft), review.created))
            if row is not None:
                return review_of_row(row)
            # another process opened the task's review between the two statements: read it
            # (and should it be decided in between too, open a new one: the loop again)

    async def get(self, review_id: str) -> Review:
        if "\x00" in review_id:  # no text column holds NUL: unknown, not a DataError (500)
            raise ReviewNotFoundError(review_id)
        row = await self._one(f"SELECT {_COLUMNS} FROM llamon_reviews WHERE id = %s",
                              (review_id,))
        if row is None:
            raise ReviewNotFoundError(review_id)
        return review_of_row(row)

    async def pending(self, limit: int, after: ReviewCursor | None = None) -> list[Review]:
        return await readable_page(self._pending_rows, limit, after)

    async def _pending_rows(self, limit: int,
                            after: ReviewCursor | None) -> list[tuple[Any, ...]]:
        # the partial index llamon_reviews_waiting (a migration of ``stores/postgres.py``)
        # holds exactly these, in this order
        if after is None:
            return await self._all(_PENDING_FIRST, (limit,))
        return await self._all(_PENDING_AFTER, (after.created, after.id, limit))

    async def pending_summary(self) -> PendingSummary:
        row = await self._one(_PENDING_SUMMARY, ())
        assert row is not None  # an aggregate has its row
        return PendingSummary(row[0], row[1])

    async def decide(self, review_id: str, decision: Decision) -> Review:
        if "\x00" in review_id:  # as in ``get``
            raise ReviewNotFoundError(review_id)
        row: tuple[Any, ...] | None = None
        told_here: asyncio.Future[bool] | None = None
        try:
            async with self._pool.connection() as conn, conn.transaction():
                cur = conn.cursor(row_factory=tuple_row)
                # the counter's row stays locked until the commit: decisions commit in the
                # order of their numbers, so "every number above the last one seen" is exactly
                # what a reconnecting port missed
                await cur.execute(_NEXT_DECISION)
                counted = await cur.fetchone()
                assert counted is not None
                await cur.execute(_DECIDE, (orjson.dumps(decision.to_json()), now(),
                                            decision.by, counted[0], review_id))
                row = await cur.fetchone()
                if row is None:
                    raise Rollback()  # not pending: leave the counter as it was
                # decoded before the commit: a review that does not decode is left as it was
                review = review_of_row(row)
                await cur.execute(f"SELECT pg_notify({_CHANNEL}, %s)", (review_id,))
                if self._feed is not None:
                    # registered before the commit, so the feed cannot read it first
                    told_here = asyncio.get_running_loop().create_future()
                    self._told_here[counted[0]] = told_here
        except BaseException:
            if told_here is not None:
                told_here.set_result(False)
            raise
        if row is None:
            raise _closed_error(await self.get(review_id))  # get raises when it does not exist
        if told_here is not None:
            told_here.set_result(True)
        await self._tell(review)
        return review

    async def close_for_task(self, task_id: str, reason: str) -> list[Review]:
        rows = await self._all(
            "UPDATE llamon_reviews SET status = 'closed', closed = %s, closed_reason = %s"
            f" WHERE task_id = %s AND status = 'pending' RETURNING {_COLUMNS}",
            (now(), reason, task_id),
        )
        return readable(rows)  # one that does not decode is closed all the same

    async def delete_for_tasks(self, task_ids: Sequence[str]) -> int:
        # the index ``llamon_reviews_task`` (a migration of ``stores/postgres.py``) finds them
        rows = await self._all(
            "DELETE FROM llamon_reviews WHERE task_id = ANY(%s) RETURNING id", (list(task_ids),)
        )
        return len(rows)

    # ------------------------------------------------------------------ listening

    async def _tell(self, review: Review) -> None:
        """Every listener, whatever the ones before it raised."""
        for listener in list(self._listeners):  # a listener may remove itself
            try:
                await listener(review)
            except Exception:
                log.exception("review %s: a decision listener failed", review.id)

    def _start(self) -> None:
        if self._feed is not None:
            return
        loop = asyncio.get_running_loop()
        self._listening = listening = loop.create_future()
        # read here when no one awaits it (a port not entered), so a failure is never
        # reported as "never retrieved": the feed logs it
        listening.add_done_callback(lambda done: done.cancelled() or done.exception())
        self._feed = loop.create_task(self._follow(listening), name=LISTENER_NAME)

    async def _follow(self, listening: asyncio.Future[None]) -> None:
        delay = RECONNECT_DELAYS[0]
        while True:
            try:
                conn = await self._listen()
                if not listening.done():
                    listening.set_result(None)
                delay = RECONNECT_DELAYS[0]
                # closed on the way out, so it never stays suspended holding the connection
                async with aclosing(conn.notifies()) as notes:
                    async for note in notes:
                        await self._heard(note.payload)
            except Exception as exc:
                if not listening.done():
                    listening.set_exception(exc)
                log.warning("review decisions: the listening connection failed (%s: %s);"
                            " opening it again in %.1f s", type(exc).__name__, exc, delay)
            await self._drop_connection()
            await _reconnect_pause(delay)
            delay = min(delay * 2, RECONNECT_DELAYS[1])

    async def _listen(self) -> AsyncConnection[tuple[Any, ...]]:
        """A new listening connection; the decisions committed before it listened are dealt
        with when it returns: the ones since the last seen are told, or, at the first
        connection, the number to start from is taken."""
        kwargs = dict(await _resolved(self._pool.kwargs) or {})
        kwargs.update(autocommit=True, row_factory=tuple_row, application_name=LISTENER_NAME)
        conn = self._conn = await AsyncConnection.connect(
            await _resolved(self._pool.conninfo) or "", **kwargs)
        cur = await conn.execute(f"SELECT {_CHANNEL}")
        found = await cur.fetchone()
        assert found is not None
        await conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(found[0])))
        self.channel = found[0]
        if self._seen is None:
            # waits for a decision committing now (it holds the row), so one whose ``decide``
            # did not register it (the feed did not exist yet) is at or below the start: only
            # that ``decide`` tells it
            cur = await conn.execute("SELECT last FROM llamon_review_decisions FOR UPDATE")
            last = await cur.fetchone()
            assert last is not None
            self._advance(last[0])
            return conn
        while True:  # what was decided while no connection listened
            cur = await conn.execute(
                f"{_DECIDED} WHERE decided_seq > %s ORDER BY decided_seq LIMIT %s",
                (self._seen, _CATCH_UP_BATCH),
            )
            rows = await cur.fetchall()
            for row in rows:
                await self._deliver_row(row)
            if len(rows) < _CATCH_UP_BATCH:
                return conn

    async def _heard(self, review_id: str) -> None:
        row = await self._one(f"{_DECIDED} WHERE id = %s", (review_id,))
        if row is not None and row[-1] is not None:
            await self._deliver_row(row)

    async def _deliver_row(self, row: tuple[Any, ...]) -> None:
        """``_deliver`` of a row of ``_DECIDED``; one that does not decode (decided by a
        version that wrote what this one cannot read) is logged and passed over."""
        for review in readable([row[:-1]]):
            await self._deliver(review, row[-1])

    async def _deliver(self, review: Review, seq: int) -> None:
        """Tells a decision the feed read, once: notifications and the catch-up overlap, and
        the decisions of this process are told by ``decide``."""
        if self._seen is not None and seq <= self._seen:
            return
        told_here = self._told_here.pop(seq, None)
        self._advance(seq)
        # shielded: a cancelled feed must not cancel the future ``decide`` resolves
        if told_here is not None and await asyncio.shield(told_here):
            return
        await self._tell(review)

    def _advance(self, seq: int) -> None:
        self._seen = seq
        # decisions commit in number order: one of this process numbered up to ``seq`` that the
        # feed has not seen never committed (``decide`` told the listeners of the others)
        for stale in [n for n in self._told_here if n <= seq]:
            del self._told_here[stale]

    async def _drop_connection(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await conn.close()
