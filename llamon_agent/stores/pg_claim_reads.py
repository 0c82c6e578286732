"""The reads a turn's claim brings along on PostgreSQL: one connection checkout, not three.

A message on a known context used to take three pooled connections before its graph ran, one
after the other: the claim's row (``backends/pg_claims.py``), the context's latest task (the
plan, ``Router.plan``), then the thread's checkpoint (LangGraph's ``aget_tuple``, at the
run's start). ``PostgresClaimReads`` sends the claim's statement and the task's read in one
pipeline (one round trip; PostgreSQL runs them in order in one transaction, so the read
starts once the claim is taken, after any transaction that released it has committed), then,
when the claim was taken and the context has a task, reads the checkpoint on the same
connection (``InlinePostgresSaver.read_on``). What it read is kept in the turn's unit
(``turn_writes.py``): as current as a read made later under the claim would be, since only
the claim's holder writes the context's tasks and thread.

Nothing is kept from a claim not taken, and nothing that cannot be read: a task row that does
not decode is read again by the plan, which says what is wrong with it as before, and a
checkpoint read that fails is left to the run's own read.
"""

from __future__ import annotations

import logging
from typing import Any

from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool

from ..errors import UnreadableTaskError
from .pg_saver import InlinePostgresSaver
from .postgres import LATEST_IN_CONTEXT, binary_cursor, decode_task_row
from .turn_writes import TurnWrites

__all__ = ["PostgresClaimReads"]

log = logging.getLogger(__name__)


class PostgresClaimReads:
    """Called by ``PostgresClaims`` with its claim statement (``RETURNING`` a row when the
    claim is taken) for the turn whose unit is ``writes``; returns that statement's rows."""

    def __init__(self, pool: AsyncConnectionPool[Any], saver: InlinePostgresSaver) -> None:
        self._pool = pool
        self._saver = saver

    async def __call__(
        self, claim_sql: str, params: tuple[Any, ...], writes: TurnWrites
    ) -> list[tuple[Any, ...]]:
        key = writes.thread_id
        async with (
            self._pool.connection() as conn,
            conn.cursor(row_factory=tuple_row) as claim,
            binary_cursor(conn) as task,
        ):
            async with conn.pipeline():  # its end sends the Sync: both run, and commit
                await claim.execute(claim_sql, params)
                await task.execute(LATEST_IN_CONTEXT, (key,))
            taken = await claim.fetchall()
            if not taken:
                return taken
            rows = await task.fetchall()
            try:
                writes.latest = decode_task_row(rows[0]) if rows else None
            except UnreadableTaskError:
                return taken  # left unread: the plan reads it, and refuses it as before
            if rows:
                try:
                    writes.checkpoint = await self._saver.read_on(conn, key)
                except Exception as exc:  # the run reads it again, and fails there if it must
                    log.debug("the checkpoint of %r was not read with its claim: %s", key, exc)
        return taken
