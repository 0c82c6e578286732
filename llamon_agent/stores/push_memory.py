"""The push store of a memory storage (``--db :memory:``, tests): the SQLite store's semantics
in dicts; a process that stops keeps nothing, as for its tasks."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from ..a2a.types import TERMINAL_STATES, PushNotificationConfig
from .base import StoredTask
from .push_base import (
    NOTIFIED_STATES,
    Delivery,
    DeliveryKey,
    DeliveryRecord,
    DeliveryStatus,
    Outcome,
)

__all__ = ["InMemoryPushStore"]


@dataclass
class _Config:
    context_key: str
    config: bytes  # wire JSON: every read builds a new object
    seen_seq: int
    done: bool = False


@dataclass
class _Row:
    state: str
    body: bytes
    status: DeliveryStatus = "pending"
    attempts: int = 0
    next_at: float = 0.0
    claimed_until: float = 0.0
    last_error: str | None = None


class InMemoryPushStore:
    def __init__(self) -> None:
        self._configs: dict[str, dict[str, _Config]] = {}  # task id -> config id -> config
        self._rows: dict[DeliveryKey, _Row] = {}

    async def put_config(self, record: StoredTask, config: PushNotificationConfig, *,
                         max_configs: int) -> bool:
        assert config.id is not None
        configs = self._configs.setdefault(record.id, {})
        old = configs.get(config.id)
        if old is None and len(configs) >= max_configs:
            return False
        encoded = config.to_json()
        if old is not None:
            old.config = encoded
        else:
            configs[config.id] = _Config(record.context_key, encoded, record.event_seq)
        return True

    async def get_configs(self, task_id: str) -> list[PushNotificationConfig]:
        return [PushNotificationConfig.model_validate_json(c.config)
                for c in self._configs.get(task_id, {}).values()]

    async def delete_config(self, task_id: str, config_id: str) -> None:
        self._configs.get(task_id, {}).pop(config_id, None)
        for key in [k for k in self._rows if k.task_id == task_id and k.config_id == config_id]:
            del self._rows[key]

    async def enqueue(self, record: StoredTask, body: Callable[[], bytes],
                      now: float, *, just_saved: bool = False) -> list[DeliveryKey]:
        if record.state not in NOTIFIED_STATES:
            return []
        due = [(cid, c) for cid, c in self._configs.get(record.id, {}).items()
               if c.seen_seq < record.event_seq]
        if not due:
            return []
        payload = body()
        made = []
        for config_id, config in due:
            config.seen_seq = record.event_seq
            config.done = config.done or record.state in TERMINAL_STATES
            key = DeliveryKey(record.id, config_id, record.event_seq)
            if key not in self._rows:
                self._rows[key] = _Row(record.state, payload, next_at=now)
                made.append(key)
        return made

    async def stale_tasks(self, limit: int) -> list[str]:
        # no task row to compare with here: every task with an open config is a candidate
        # (the caller re-reads each); memory has no crash to catch up after anyway
        return [task_id for task_id, configs in self._configs.items()
                if any(not c.done for c in configs.values())][:limit]

    def _claimed(self, key: DeliveryKey, row: _Row, until: float) -> Delivery | None:
        config = self._configs.get(key.task_id, {}).get(key.config_id)
        if config is None:
            return None
        row.claimed_until = until
        return Delivery(key, row.state, row.body, row.attempts,
                        PushNotificationConfig.model_validate_json(config.config))

    async def claim(self, key: DeliveryKey, now: float, until: float) -> Delivery | None:
        row = self._rows.get(key)
        if row is None or not _due(row, now):
            return None
        return self._claimed(key, row, until)

    async def claim_due(self, now: float, until: float, limit: int) -> list[Delivery]:
        due = sorted((key for key, row in self._rows.items() if _due(row, now)),
                     key=lambda k: (self._rows[k].next_at, k.task_id, k.config_id, k.seq))
        claimed = []
        for key in due[:limit]:
            delivery = self._claimed(key, self._rows[key], until)
            if delivery is not None:
                claimed.append(delivery)
        return claimed

    async def finish(self, key: DeliveryKey, outcome: Outcome, now: float) -> None:
        row = self._rows.get(key)
        if row is None:
            return
        self._rows[key] = replace(row, status=outcome.status, attempts=outcome.attempts,
                                  next_at=outcome.next_at, claimed_until=0.0,
                                  last_error=outcome.error)

    async def deliveries(self, task_id: str) -> list[DeliveryRecord]:
        return [DeliveryRecord(key, row.state, row.status, row.attempts, row.next_at,
                               row.last_error)
                for key, row in sorted(self._rows.items(),
                                       key=lambda item: (item[0].seq, item[0].config_id))
                if key.task_id == task_id]

    async def delete_tasks(self, task_ids: Sequence[str]) -> None:
        gone = set(task_ids)
        for task_id in gone:
            self._configs.pop(task_id, None)
        for key in [k for k in self._rows if k.task_id in gone]:
            del self._rows[key]

    async def delete_context(self, context_key: str) -> None:
        await self.delete_tasks([
            task_id for task_id, configs in self._configs.items()
            if any(c.context_key == context_key for c in configs.values())
        ])


def _due(row: _Row, now: float) -> bool:
    return row.status == "pending" and row.next_at <= now and row.claimed_until <= now
