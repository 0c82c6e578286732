"""The push store on PostgreSQL (``push_base.py`` says what it keeps), on the storage's pool.

Several servers share the tables. A change is enqueued once whoever enqueues it: the configs'
``seen_seq`` moves forward in the same transaction as the delivery rows are inserted, and the
update waits for a concurrent one on the same config row, then finds nothing left to do. A
delivery is claimed with ``FOR UPDATE SKIP LOCKED`` and a lease (``claimed_until``): servers
claiming at once get different rows, and a server that died with a claim leaves it to the
others once the lease lapsed.

The tables are created by the storage's migrations (``stores/postgres.py``: ``SCHEMA`` here).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from psycopg.rows import tuple_row
from psycopg_pool import AsyncConnectionPool

from ..a2a.types import TERMINAL_STATES, PushNotificationConfig
from .base import StoredTask
from .push_base import NOTIFIED_STATES, Delivery, DeliveryKey, DeliveryRecord, Outcome

__all__ = ["SCHEMA", "UNSEEN_AFTER_UPSERT", "PostgresPushStore", "UnseenConfigs"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS llamon_push_configs (
    task_id TEXT NOT NULL,
    config_id TEXT NOT NULL,
    context_id TEXT NOT NULL,
    space TEXT NOT NULL,
    config BYTEA NOT NULL,
    seen_seq BIGINT NOT NULL,
    done BOOLEAN NOT NULL DEFAULT FALSE,
    position BIGINT GENERATED ALWAYS AS IDENTITY,
    PRIMARY KEY (task_id, config_id)
);
CREATE INDEX IF NOT EXISTS llamon_push_configs_context ON llamon_push_configs (context_id);
CREATE INDEX IF NOT EXISTS llamon_push_configs_open ON llamon_push_configs (task_id)
    WHERE NOT done;
CREATE TABLE IF NOT EXISTS llamon_push_deliveries (
    task_id TEXT NOT NULL,
    config_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    state TEXT NOT NULL,
    body BYTEA NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at DOUBLE PRECISION NOT NULL,
    claimed_until DOUBLE PRECISION NOT NULL DEFAULT 0,
    last_error TEXT,
    created DOUBLE PRECISION NOT NULL,
    updated DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (task_id, config_id, seq)
);
CREATE INDEX IF NOT EXISTS llamon_push_deliveries_due ON llamon_push_deliveries (next_at)
    WHERE status = 'pending';
"""
_NOTIFIED = sorted(NOTIFIED_STATES)
_COUNT = (
    "SELECT COUNT(*), COUNT(*) FILTER (WHERE config_id = %s) FROM llamon_push_configs"
    " WHERE task_id = %s"
)
_UPSERT = (
    "INSERT INTO llamon_push_configs (task_id, config_id, context_id, space, config, seen_seq)"
    " VALUES (%s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (task_id, config_id) DO UPDATE SET config = excluded.config"
)
_SEEN = (
    "UPDATE llamon_push_configs SET seen_seq = %s, done = done OR %s"
    " WHERE task_id = %s AND seen_seq < %s RETURNING config_id"
)
#: whether any config of the task has not seen this change: most tasks have no config at all
_ANY_UNSEEN = "SELECT 1 FROM llamon_push_configs WHERE task_id = %s AND seen_seq < %s LIMIT 1"
#: the same question put by the task's upsert itself (``PostgresTaskStore.save``), so that a
#: notified save costs one statement, not two (params: the task's id and ``event_seq``)
UNSEEN_AFTER_UPSERT = (
    " RETURNING EXISTS (SELECT 1 FROM llamon_push_configs WHERE task_id = %s"
    " AND seen_seq < %s)"
)
_INSERT = (
    "INSERT INTO llamon_push_deliveries (task_id, config_id, seq, state, body, status, next_at,"
    " created, updated) VALUES (%s, %s, %s, %s, %s, 'pending', %s, %s, %s)"
    " ON CONFLICT DO NOTHING RETURNING config_id"
)
# the pending rows due and unclaimed, locked so that a concurrent claim skips them, then
# leased; the config comes along (a config deleted meanwhile took its rows with it)
_CLAIM = (
    "WITH due AS (SELECT task_id, config_id, seq FROM llamon_push_deliveries"
    " WHERE status = 'pending' AND next_at <= %(now)s AND claimed_until <= %(now)s {only}"
    " ORDER BY next_at LIMIT %(limit)s FOR UPDATE SKIP LOCKED)"
    " UPDATE llamon_push_deliveries d SET claimed_until = %(until)s FROM due"
    " WHERE d.task_id = due.task_id AND d.config_id = due.config_id AND d.seq = due.seq"
    " RETURNING d.task_id, d.config_id, d.seq, d.state, d.body, d.attempts,"
    " (SELECT c.config FROM llamon_push_configs c"
    "  WHERE c.task_id = d.task_id AND c.config_id = d.config_id)"
)
_CLAIM_DUE = _CLAIM.format(only="")
_CLAIM_ONE = _CLAIM.format(
    only="AND task_id = %(task)s AND config_id = %(config)s AND seq = %(seq)s")
_KEY = "task_id = %s AND config_id = %s AND seq = %s"


def _deliveries(rows: list[tuple[Any, ...]]) -> list[Delivery]:
    return [Delivery(DeliveryKey(r[0], r[1], int(r[2])), r[3], bytes(r[4]), int(r[5]),
                     PushNotificationConfig.model_validate_json(bytes(r[6])))
            for r in sorted(rows, key=lambda r: (r[0], r[1], r[2])) if r[6] is not None]


class UnseenConfigs:
    """What this process's last upserts of tasks said (``UNSEEN_AFTER_UPSERT``): whether a
    push config of the task had not seen the change saved. The enqueue that follows a save
    takes the answer instead of asking again; it is forgotten once taken, and only the latest
    ``limit`` tasks' are kept (a store without push notifications never takes them)."""

    def __init__(self, limit: int = 1024) -> None:
        self._limit = limit
        self._said: dict[str, tuple[int, bool]] = {}  # task id -> (event_seq, unseen)

    def note(self, task_id: str, event_seq: int, unseen: bool) -> None:
        self._said.pop(task_id, None)  # to the end: the oldest go first
        self._said[task_id] = (event_seq, unseen)
        if len(self._said) > self._limit:
            del self._said[next(iter(self._said))]

    def take(self, task_id: str, event_seq: int) -> bool | None:
        """The answer for this very change, if the save of it was made here."""
        said = self._said.pop(task_id, None)
        return said[1] if said is not None and said[0] == event_seq else None


class PostgresPushStore:
    """``unseen``: the task store's answers (``PostgresTaskStore.unseen_push``), when both
    are one storage's."""

    def __init__(self, pool: AsyncConnectionPool[Any], unseen: UnseenConfigs | None = None
                 ) -> None:
        self._pool = pool
        self._unseen = unseen

    async def _rows(self, sql: str, params: Any = ()) -> list[tuple[Any, ...]]:
        async with self._pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(sql, params)
            return await cur.fetchall() if cur.description is not None else []

    async def put_config(self, record: StoredTask, config: PushNotificationConfig, *,
                         max_configs: int) -> bool:
        assert config.id is not None
        async with self._pool.connection() as conn, conn.transaction(), \
                conn.cursor(row_factory=tuple_row) as cur:
            # the task's configs are counted under a lock of their own, so two servers
            # setting at once cannot both take the last place
            await cur.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 7))",
                              (record.id,))
            await cur.execute(_COUNT, (config.id, record.id))
            row = await cur.fetchone()
            count, exists = (int(row[0]), int(row[1])) if row is not None else (0, 0)
            if not exists and count >= max_configs:
                return False
            await cur.execute(_UPSERT, (record.id, config.id, record.context_key, record.space,
                                        config.to_json(), record.event_seq))
        return True

    async def get_configs(self, task_id: str) -> list[PushNotificationConfig]:
        rows = await self._rows(
            "SELECT config FROM llamon_push_configs WHERE task_id = %s ORDER BY position",
            (task_id,))
        return [PushNotificationConfig.model_validate_json(bytes(row[0])) for row in rows]

    async def delete_config(self, task_id: str, config_id: str) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(
                "DELETE FROM llamon_push_deliveries WHERE task_id = %s AND config_id = %s",
                (task_id, config_id))
            await conn.execute(
                "DELETE FROM llamon_push_configs WHERE task_id = %s AND config_id = %s",
                (task_id, config_id))

    async def enqueue(self, record: StoredTask, body: Callable[[], bytes],
                      now: float, *, just_saved: bool = False) -> list[DeliveryKey]:
        if record.state not in NOTIFIED_STATES:
            return []
        seq = record.event_seq
        # the save's own answer, else one read, instead of a transaction (BEGIN, UPDATE,
        # COMMIT: three round trips on every saved state of every task): a config created
        # after that answer is found by the reconciliation sweep (``stale_tasks``), as a
        # failed enqueue is
        unseen = (self._unseen.take(record.id, seq)
                  if just_saved and self._unseen is not None else None)
        if unseen is None:
            unseen = bool(await self._rows(_ANY_UNSEEN, (record.id, seq)))
        if not unseen:
            return []
        async with self._pool.connection() as conn, conn.transaction(), \
                conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(_SEEN, (seq, record.state in TERMINAL_STATES, record.id, seq))
            due = [row[0] for row in await cur.fetchall()]
            if not due:
                return []
            payload = body()
            made = []
            for config_id in due:
                await cur.execute(_INSERT, (record.id, config_id, seq, record.state, payload,
                                            now, now, now))
                if await cur.fetchone() is not None:
                    made.append(DeliveryKey(record.id, config_id, seq))
        return made

    async def stale_tasks(self, limit: int) -> list[str]:
        rows = await self._rows(
            "SELECT DISTINCT c.task_id FROM llamon_push_configs c"
            " JOIN llamon_tasks t ON t.id = c.task_id"
            " WHERE NOT c.done AND t.event_seq > c.seen_seq AND t.state = ANY(%s) LIMIT %s",
            (_NOTIFIED, limit))
        return [row[0] for row in rows]

    async def claim(self, key: DeliveryKey, now: float, until: float) -> Delivery | None:
        rows = await self._rows(_CLAIM_ONE, {
            "now": now, "until": until, "limit": 1, "task": key.task_id,
            "config": key.config_id, "seq": key.seq})
        claimed = _deliveries(rows)
        return claimed[0] if claimed else None

    async def claim_due(self, now: float, until: float, limit: int) -> list[Delivery]:
        if limit <= 0:
            return []
        rows = await self._rows(_CLAIM_DUE, {"now": now, "until": until, "limit": limit})
        return _deliveries(rows)

    async def finish(self, key: DeliveryKey, outcome: Outcome, now: float) -> None:
        await self._rows(
            "UPDATE llamon_push_deliveries SET status = %s, attempts = %s, next_at = %s,"
            f" claimed_until = 0, last_error = %s, updated = %s WHERE {_KEY}",
            (outcome.status, outcome.attempts, outcome.next_at, outcome.error, now,
             key.task_id, key.config_id, key.seq))

    async def deliveries(self, task_id: str) -> list[DeliveryRecord]:
        rows = await self._rows(
            "SELECT task_id, config_id, seq, state, status, attempts, next_at, last_error"
            " FROM llamon_push_deliveries WHERE task_id = %s ORDER BY seq, config_id",
            (task_id,))
        return [DeliveryRecord(DeliveryKey(r[0], r[1], int(r[2])), r[3], r[4], int(r[5]),
                               float(r[6]), r[7]) for r in rows]

    async def delete_tasks(self, task_ids: Sequence[str]) -> None:
        if not task_ids:
            return
        ids = list(task_ids)
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute("DELETE FROM llamon_push_deliveries WHERE task_id = ANY(%s)",
                               (ids,))
            await conn.execute("DELETE FROM llamon_push_configs WHERE task_id = ANY(%s)",
                               (ids,))

    async def delete_context(self, context_key: str) -> None:
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(
                "DELETE FROM llamon_push_deliveries WHERE task_id IN"
                " (SELECT task_id FROM llamon_push_configs WHERE context_id = %s)",
                (context_key,))
            await conn.execute("DELETE FROM llamon_push_configs WHERE context_id = %s",
                               (context_key,))
