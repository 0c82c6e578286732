"""In-memory task store: the default for tests and ``--db :memory:``."""

from __future__ import annotations

from . import _codec
from .base import StoredTask

__all__ = ["InMemoryTaskStore"]

_RUNNING = frozenset({"submitted", "working"})
_Row = tuple[bytes, str, int, str | None, int, bytes, str]


class InMemoryTaskStore:
    """Keeps encoded rows, so every read builds new objects (no shared mutable state)."""

    def __init__(self) -> None:
        self._rows: dict[str, _Row] = {}
        self._latest: dict[str, str] = {}

    async def get(self, task_id: str) -> StoredTask | None:
        row = self._rows.get(task_id)
        return None if row is None else _codec.decode(*row[:6])

    async def save(self, record: StoredTask) -> None:
        if record.id not in self._rows:
            self._latest[record.context_id] = record.id
        self._rows[record.id] = (
            _codec.encode_task(record),
            record.agent_id,
            record.event_seq,
            record.pending_interrupt,
            record.reask_count,
            _codec.encode_extra(record),
            record.state,
        )

    async def latest_in_context(self, context_id: str) -> StoredTask | None:
        task_id = self._latest.get(context_id)
        return None if task_id is None else await self.get(task_id)

    async def unfinished(self) -> list[StoredTask]:
        return [
            _codec.decode(*row[:6])
            for row in self._rows.values()
            if row[6] in _RUNNING
        ]
