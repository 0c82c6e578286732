"""The push store in the server's SQLite file (``push_base.py`` says what it keeps).

On the task store's connection, inline on the event loop like every statement of the file
(``sqlite.py``). A write first waits until no large task or checkpoint write holds the file
(``offload.py``), as the task store's do. A statement sequence runs without an ``await`` in
between, so nothing else of the process interleaves with it; one server per file (the file
lock), so the claims need no more than that.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from typing import Any

from ..a2a.types import TERMINAL_STATES, PushNotificationConfig
from .base import StoredTask
from .offload import Offload
from .push_base import NOTIFIED_STATES, Delivery, DeliveryKey, DeliveryRecord, Outcome

__all__ = ["SQLitePushStore"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS llamon_push_configs (
    task_id TEXT NOT NULL,
    config_id TEXT NOT NULL,
    context_id TEXT NOT NULL,
    space TEXT NOT NULL,
    config BLOB NOT NULL,
    seen_seq INTEGER NOT NULL,
    done INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (task_id, config_id)
);
CREATE INDEX IF NOT EXISTS llamon_push_configs_context ON llamon_push_configs (context_id);
CREATE INDEX IF NOT EXISTS llamon_push_configs_open ON llamon_push_configs (task_id)
    WHERE done = 0;
CREATE TABLE IF NOT EXISTS llamon_push_deliveries (
    task_id TEXT NOT NULL,
    config_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    state TEXT NOT NULL,
    body BLOB NOT NULL,
    status TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    next_at REAL NOT NULL,
    claimed_until REAL NOT NULL DEFAULT 0,
    last_error TEXT,
    created REAL NOT NULL,
    updated REAL NOT NULL,
    PRIMARY KEY (task_id, config_id, seq)
);
CREATE INDEX IF NOT EXISTS llamon_push_deliveries_due ON llamon_push_deliveries (next_at)
    WHERE status = 'pending';
"""
_NOTIFIED = tuple(sorted(NOTIFIED_STATES))
_DELIVERY = (
    "SELECT d.task_id, d.config_id, d.seq, d.state, d.body, d.attempts, c.config"
    " FROM llamon_push_deliveries d JOIN llamon_push_configs c"
    " ON c.task_id = d.task_id AND c.config_id = d.config_id"
    " WHERE d.status = 'pending' AND d.next_at <= ? AND d.claimed_until <= ?"
)
_KEY = "task_id = ? AND config_id = ? AND seq = ?"


def _delivery(row: Sequence[Any]) -> Delivery:
    return Delivery(DeliveryKey(row[0], row[1], int(row[2])), row[3], bytes(row[4]),
                    int(row[5]), PushNotificationConfig.model_validate_json(row[6]))


class SQLitePushStore:
    def __init__(self, conn: sqlite3.Connection, *, offload: Offload | None = None) -> None:
        self._conn = conn
        self._offload = offload
        conn.executescript(_SCHEMA)
        conn.commit()
        # whether a config may exist: until one is set, a saved state has nothing to notify,
        # and the one read per turn's end that would say so is skipped. Only this server sets
        # configs in its file (the file lock; ``llamon-agent prune`` only deletes them), so
        # the flag read here at start and set by ``put_config`` is never behind the file
        self._may_have_configs = bool(conn.execute(
            "SELECT EXISTS (SELECT 1 FROM llamon_push_configs)").fetchone()[0])

    async def _writable(self) -> None:
        if self._offload is not None:
            await self._offload.idle()

    async def put_config(self, record: StoredTask, config: PushNotificationConfig, *,
                         max_configs: int) -> bool:
        assert config.id is not None
        await self._writable()
        self._may_have_configs = True  # before the insert: a config is never missed
        with self._conn:
            count, exists = self._conn.execute(
                "SELECT COUNT(*), COALESCE(SUM(config_id = ?), 0) FROM llamon_push_configs"
                " WHERE task_id = ?", (config.id, record.id)).fetchone()
            if not exists and count >= max_configs:
                return False
            self._conn.execute(
                "INSERT INTO llamon_push_configs (task_id, config_id, context_id, space, config,"
                " seen_seq) VALUES (?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (task_id, config_id) DO UPDATE SET config = excluded.config",
                (record.id, config.id, record.context_key, record.space, config.to_json(),
                 record.event_seq))
        return True

    async def get_configs(self, task_id: str) -> list[PushNotificationConfig]:
        rows = self._conn.execute(
            "SELECT config FROM llamon_push_configs WHERE task_id = ? ORDER BY rowid",
            (task_id,)).fetchall()
        return [PushNotificationConfig.model_validate_json(row[0]) for row in rows]

    async def delete_config(self, task_id: str, config_id: str) -> None:
        await self._writable()
        with self._conn:
            self._conn.execute(
                "DELETE FROM llamon_push_deliveries WHERE task_id = ? AND config_id = ?",
                (task_id, config_id))
            self._conn.execute(
                "DELETE FROM llamon_push_configs WHERE task_id = ? AND config_id = ?",
                (task_id, config_id))

    async def enqueue(self, record: StoredTask, body: Callable[[], bytes],
                      now: float, *, just_saved: bool = False) -> list[DeliveryKey]:
        if record.state not in NOTIFIED_STATES or not self._may_have_configs:
            return []
        due = [row[0] for row in self._conn.execute(
            "SELECT config_id FROM llamon_push_configs WHERE task_id = ? AND seen_seq < ?",
            (record.id, record.event_seq))]
        if not due:
            return []
        payload = body()
        await self._writable()
        made = []
        with self._conn:  # read again in the transaction: nothing ran since the await
            for config_id in due:
                updated = self._conn.execute(
                    "UPDATE llamon_push_configs SET seen_seq = ?, done = done OR ?"
                    " WHERE task_id = ? AND config_id = ? AND seen_seq < ?",
                    (record.event_seq, record.state in TERMINAL_STATES, record.id, config_id,
                     record.event_seq))
                if updated.rowcount == 0:
                    continue
                inserted = self._conn.execute(
                    "INSERT OR IGNORE INTO llamon_push_deliveries (task_id, config_id, seq,"
                    " state, body, status, next_at, created, updated)"
                    " VALUES (?, ?, ?, ?, ?, 'pending', ?, ?, ?)",
                    (record.id, config_id, record.event_seq, record.state, payload, now, now,
                     now))
                if inserted.rowcount:
                    made.append(DeliveryKey(record.id, config_id, record.event_seq))
        return made

    async def stale_tasks(self, limit: int) -> list[str]:
        marks = ", ".join("?" * len(_NOTIFIED))
        # CROSS JOIN fixes SQLite's join order: the open configs (few, by their partial index)
        # outside, each task read by its key. Left to the planner, which has no statistics,
        # every task in a notified state was read and probed for a config: a sweep's cost grew
        # with every completed task kept (bench/README.md, "Speed, round twenty-seven").
        rows = self._conn.execute(
            "SELECT DISTINCT c.task_id FROM llamon_push_configs c"
            " CROSS JOIN llamon_tasks t ON t.id = c.task_id"
            f" WHERE c.done = 0 AND t.event_seq > c.seen_seq AND t.state IN ({marks}) LIMIT ?",
            (*_NOTIFIED, limit)).fetchall()
        return [row[0] for row in rows]

    async def claim(self, key: DeliveryKey, now: float, until: float) -> Delivery | None:
        await self._writable()
        row = self._conn.execute(
            f"{_DELIVERY} AND d.task_id = ? AND d.config_id = ? AND d.seq = ?",
            (now, now, key.task_id, key.config_id, key.seq)).fetchone()
        if row is None:
            return None
        with self._conn:
            self._conn.execute(f"UPDATE llamon_push_deliveries SET claimed_until = ? WHERE {_KEY}",
                               (until, key.task_id, key.config_id, key.seq))
        return _delivery(row)

    async def claim_due(self, now: float, until: float, limit: int) -> list[Delivery]:
        await self._writable()
        rows = self._conn.execute(
            f"{_DELIVERY} ORDER BY d.next_at LIMIT ?", (now, now, limit)).fetchall()
        claimed = [_delivery(row) for row in rows]
        with self._conn:
            self._conn.executemany(
                f"UPDATE llamon_push_deliveries SET claimed_until = ? WHERE {_KEY}",
                [(until, d.key.task_id, d.key.config_id, d.key.seq) for d in claimed])
        return claimed

    async def finish(self, key: DeliveryKey, outcome: Outcome, now: float) -> None:
        await self._writable()
        with self._conn:
            self._conn.execute(
                "UPDATE llamon_push_deliveries SET status = ?, attempts = ?, next_at = ?,"
                f" claimed_until = 0, last_error = ?, updated = ? WHERE {_KEY}",
                (outcome.status, outcome.attempts, outcome.next_at, outcome.error, now,
                 key.task_id, key.config_id, key.seq))

    async def deliveries(self, task_id: str) -> list[DeliveryRecord]:
        rows = self._conn.execute(
            "SELECT task_id, config_id, seq, state, status, attempts, next_at, last_error"
            " FROM llamon_push_deliveries WHERE task_id = ? ORDER BY seq, config_id",
            (task_id,)).fetchall()
        return [DeliveryRecord(DeliveryKey(r[0], r[1], int(r[2])), r[3], r[4], int(r[5]),
                               float(r[6]), r[7]) for r in rows]

    async def delete_tasks(self, task_ids: Sequence[str]) -> None:
        if not task_ids:
            return
        await self._writable()
        rows = [(task_id,) for task_id in task_ids]
        with self._conn:
            self._conn.executemany("DELETE FROM llamon_push_deliveries WHERE task_id = ?", rows)
            self._conn.executemany("DELETE FROM llamon_push_configs WHERE task_id = ?", rows)

    async def delete_context(self, context_key: str) -> None:
        await self._writable()
        with self._conn:
            self._conn.execute(
                "DELETE FROM llamon_push_deliveries WHERE task_id IN"
                " (SELECT task_id FROM llamon_push_configs WHERE context_id = ?)",
                (context_key,))
            self._conn.execute("DELETE FROM llamon_push_configs WHERE context_id = ?",
                               (context_key,))
