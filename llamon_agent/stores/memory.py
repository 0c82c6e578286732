"""In-memory task store: the default for tests and ``--db :memory:``."""

from __future__ import annotations

import time

from ..a2a.types import RUNNING_STATES
from ..errors import UnreadableTaskError
from . import _codec
from .base import StoredTask, UnreadableRow

__all__ = ["InMemoryTaskStore"]

_Row = tuple[bytes, str, int, str | None, int, bytes, str, str, str, float]


class InMemoryTaskStore:
    """Keeps encoded rows, so every read builds new objects (no shared mutable state)."""

    def __init__(self) -> None:
        self._rows: dict[str, _Row] = {}
        self._latest: dict[str, str] = {}

    async def get(self, task_id: str) -> StoredTask | None:
        row = self._rows.get(task_id)
        return None if row is None else _codec.decode(*row[:6], task_id=task_id)

    async def save(self, record: StoredTask) -> None:
        if record.id not in self._rows:
            self._latest[record.context_key] = record.id
        self._rows[record.id] = (
            _codec.encode_task(record),
            record.agent_id,
            record.event_seq,
            record.pending_interrupt,
            record.reask_count,
            _codec.encode_extra(record),
            record.state,
            record.context_key,
            record.space,
            time.time(),
        )

    async def latest_in_context(self, context_key: str) -> StoredTask | None:
        task_id = self._latest.get(context_key)
        return None if task_id is None else await self.get(task_id)

    async def unfinished(self) -> list[StoredTask | UnreadableRow]:
        found: list[StoredTask | UnreadableRow] = []
        for task_id, row in self._rows.items():
            if row[6] not in RUNNING_STATES:
                continue
            try:
                found.append(_codec.decode(*row[:6], task_id=task_id))
            except UnreadableTaskError as exc:
                found.append(UnreadableRow(task_id, row[7], row[1], row[2], exc.detail))
        return found

    async def ping(self) -> None:
        return None

    async def count_by_state(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in self._rows.values():
            counts[row[6]] = counts.get(row[6], 0) + 1
        return counts

    async def count_in_state(self, space: str, state: str) -> int:
        return sum(1 for row in self._rows.values() if row[8] == space and row[6] == state)

    async def oldest_in_state(self, state: str) -> float | None:
        return min((row[9] for row in self._rows.values() if row[6] == state), default=None)
