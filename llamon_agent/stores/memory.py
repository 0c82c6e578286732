"""In-memory task store: the default for tests and ``--db :memory:``."""

from __future__ import annotations

import time
from collections.abc import Collection
from functools import partial

from ..a2a.types import RUNNING_STATES, TERMINAL_STATES
from ..errors import UnreadableTaskError
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
    listed_task,
)

__all__ = ["InMemoryTaskStore"]

_Row = tuple[bytes, str, int, str | None, int, bytes, str, str, str, float, str | None]


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
            record.expires_at,
        )

    async def latest_in_context(self, context_key: str) -> StoredTask | None:
        task_id = self._latest.get(context_key)
        return None if task_id is None else await self.get(task_id)

    async def list_tasks(
        self, query: TaskQuery, limit: int, after: TaskCursor | None = None, *,
        history: int | None = None,
    ) -> TaskPage:
        check_listing(query, limit, after)
        matching = sorted(
            ((row[9], task_id) for task_id, row in self._rows.items()
             if row[8] == query.space
             and (query.context_key is None or row[7] == query.context_key)
             and (query.state is None or row[6] == query.state)
             and (query.updated_since is None or row[9] >= query.updated_since)),
            reverse=True,
        )
        start = (matching if after is None else
                 [key for key in matching if key < (after.updated, after.id)])
        ids, following = choose_page(
            [(task_id, updated, len(self._rows[task_id][0]))
             for updated, task_id in start[:limit + 1]], limit)
        found = [listed_task(partial(_codec.decode, *self._rows[task_id][:6],
                                     task_id=task_id, history=history), task_id,
                             self._rows[task_id][9])
                 for task_id in ids]
        return TaskPage(tasks=[task for task in found if task is not None],
                        total=len(matching), next=following)

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

    async def expiring(self, before: str, limit: int) -> list[StoredTask | UnreadableRow]:
        due = sorted(
            (row[10], task_id) for task_id, row in self._rows.items()
            if row[10] is not None and row[10] <= before and row[6] == "input-required"
        )[:limit]
        found: list[StoredTask | UnreadableRow] = []
        for _, task_id in due:
            row = self._rows[task_id]
            try:
                found.append(_codec.decode(*row[:6], task_id=task_id))
            except UnreadableTaskError as exc:
                found.append(UnreadableRow(task_id, row[7], row[1], row[2], exc.detail))
        return found

    async def count_by_state(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in self._rows.values():
            counts[row[6]] = counts.get(row[6], 0) + 1
        return counts

    async def count_in_state(self, space: str, state: str) -> int:
        return sum(1 for row in self._rows.values() if row[8] == space and row[6] == state)

    async def oldest_in_state(self, state: str) -> float | None:
        return min((row[9] for row in self._rows.values() if row[6] == state), default=None)

    # ------------------------------------------------------------------ retention

    def _ended_before(self, row: _Row, cutoff: float) -> bool:
        return row[6] in TERMINAL_STATES and 0 < row[9] < cutoff

    async def date_undated(self, now: float, limit: int) -> int:
        undated = [i for i, row in self._rows.items()
                   if row[6] in TERMINAL_STATES and row[9] <= 0][:limit]
        for task_id in undated:
            row = self._rows[task_id]
            self._rows[task_id] = (*row[:9], now, *row[10:])
        return len(undated)

    async def ended_before(self, cutoff: float, limit: int) -> list[DeletedTask]:
        found = [DeletedTask(i, row[7]) for i, row in self._rows.items()
                 if self._ended_before(row, cutoff)]
        return found[:limit]

    async def count_ended(self, cutoff: float) -> Prunable:
        ended = [row for row in self._rows.values() if self._ended_before(row, cutoff)]
        contexts = {row[7] for row in ended}
        kept = {row[7] for row in self._rows.values() if not self._ended_before(row, cutoff)}
        undated = sum(1 for row in self._rows.values()
                      if row[6] in TERMINAL_STATES and row[9] <= 0)
        return Prunable(len(ended), len(contexts), len(contexts - kept), undated)

    async def context_outlives(self, context_key: str, cutoff: float) -> bool:
        return any(row[7] == context_key and not self._ended_before(row, cutoff)
                   for row in self._rows.values())

    async def contexts_with_tasks(self, context_keys: Collection[str]) -> set[str]:
        wanted = set(context_keys)
        return {row[7] for row in self._rows.values() if row[7] in wanted}

    async def delete_in_context(
        self, context_key: str, limit: int, *, ended_before: float | None = None
    ) -> list[DeletedTask]:
        doomed = [i for i, row in self._rows.items() if row[7] == context_key and (
            ended_before is None or self._ended_before(row, ended_before))][:limit]
        for task_id in doomed:
            del self._rows[task_id]
        if doomed and self._latest.get(context_key) in doomed:
            # rows keep their creation order (an update replaces a value in place)
            left = [i for i, row in self._rows.items() if row[7] == context_key]
            if left:
                self._latest[context_key] = left[-1]
            else:
                del self._latest[context_key]
        deleted = [DeletedTask(i, context_key) for i in doomed]
        _codec.forget(d.id for d in deleted)
        return deleted

    async def reclaim_space(self) -> None:
        return None
