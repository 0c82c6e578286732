"""In-memory task store: the default for tests and ``--db :memory:``."""

from __future__ import annotations

from ..a2a.types import RUNNING_STATES
from ..errors import UnreadableTaskError
from . import _codec
from .base import StoredTask, UnreadableRow

__all__ = ["InMemoryTaskStore"]

_Row = tuple[bytes, str, int, str | None, int, bytes, str, str]


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
            self._latest[record.context_id] = record.id
        self._rows[record.id] = (
            _codec.encode_task(record),
            record.agent_id,
            record.event_seq,
            record.pending_interrupt,
            record.reask_count,
            _codec.encode_extra(record),
            record.state,
            record.context_id,
        )

    async def latest_in_context(self, context_id: str) -> StoredTask | None:
        task_id = self._latest.get(context_id)
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
