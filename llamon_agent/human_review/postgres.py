"""``PostgresReviewPort``: the SQLite review port's semantics on PostgreSQL (psycopg 3 async).

``submit`` is idempotent per task across processes: a partial unique index allows one pending
review per task, so two servers that submit for the same task at once get the same review.
Decision listeners are called in the process that decided (as on SQLite); telling the
listeners of other processes (LISTEN/NOTIFY) comes with replicas.
The table is created by the storage's migrations (``stores/postgres.py``, ``SCHEMA`` here).
"""

from __future__ import annotations

import uuid
from typing import Any

import orjson
from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool

from ..core.clock import now
from ..core.ports import Decision, Review, ReviewNotFoundError
from .port import _closed_error, _Notifying

__all__ = ["SCHEMA", "PostgresReviewPort"]

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
_PENDING_OF_TASK = f"SELECT {_COLUMNS} FROM llamon_reviews WHERE task_id = %s AND status = 'pending'"
_INSERT = (
    f"INSERT INTO llamon_reviews ({_COLUMNS})"
    " VALUES (%s, %s, %s, %s, %s, 'pending', NULL, %s, NULL, NULL, NULL, NULL)"
    " ON CONFLICT (task_id) WHERE status = 'pending' DO NOTHING"
    f" RETURNING {_COLUMNS}"
)


def _row(row: tuple[Any, ...]) -> Review:
    decision = orjson.loads(row[6]) if row[6] else None
    return Review(
        id=row[0], task_id=row[1], context_id=row[2], agent_id=row[3],
        draft=orjson.loads(row[4]), status=row[5],
        decision=Decision(**decision, by=row[11]) if decision else None, created=row[7],
        decided=row[8], closed=row[9], closed_reason=row[10],
    )


class PostgresReviewPort(_Notifying):
    """Reviews in the server's PostgreSQL database; every statement commits on its own."""

    def __init__(self, pool: AsyncConnectionPool[Any]) -> None:
        super().__init__()
        self._pool = pool

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
                return _row(row)
            review = Review(str(uuid.uuid4()), task_id, context_id, agent_id, draft)
            row = await self._one(_INSERT, (review.id, task_id, context_id, agent_id,
                                            orjson.dumps(draft), review.created))
            if row is not None:
                return _row(row)
            # another process opened the task's review between the two statements: read it
            # (and should it be decided in between too, open a new one: the loop again)

    async def get(self, review_id: str) -> Review:
        row = await self._one(f"SELECT {_COLUMNS} FROM llamon_reviews WHERE id = %s",
                              (review_id,))
        if row is None:
            raise ReviewNotFoundError(review_id)
        return _row(row)

    async def pending(self) -> list[Review]:
        rows = await self._all(
            f"SELECT {_COLUMNS} FROM llamon_reviews WHERE status = 'pending' ORDER BY created, id"
        )
        return [_row(r) for r in rows]

    async def decide(self, review_id: str, decision: Decision) -> Review:
        row = await self._one(
            "UPDATE llamon_reviews SET status = 'decided', decision = %s, decided = %s,"
            f" decided_by = %s WHERE id = %s AND status = 'pending' RETURNING {_COLUMNS}",
            (orjson.dumps(decision.to_json()), now(), decision.by, review_id),
        )
        if row is None:
            raise _closed_error(await self.get(review_id))  # get raises when it does not exist
        review = _row(row)
        await self._notify(review)
        return review

    async def close_for_task(self, task_id: str, reason: str) -> list[Review]:
        rows = await self._all(
            "UPDATE llamon_reviews SET status = 'closed', closed = %s, closed_reason = %s"
            f" WHERE task_id = %s AND status = 'pending' RETURNING {_COLUMNS}",
            (now(), reason, task_id),
        )
        return [_row(r) for r in rows]
