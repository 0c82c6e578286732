"""The turns in progress in this process, by task id.

While a turn runs, its record is the truth for reads (``tasks/get``, routing a retry): the store
holds the task as it was when the turn began, and is written again when the turn ends.
"""

from __future__ import annotations

from ..stores.base import StoredTask, TaskStore
from .turn import Turn

__all__ = ["LiveTurns"]


class LiveTurns:
    def __init__(self, store: TaskStore) -> None:
        self._store = store
        self._turns: dict[str, Turn] = {}

    def add(self, turn: Turn) -> None:
        self._turns[turn.record.id] = turn

    def remove(self, turn: Turn) -> None:
        if self._turns.get(turn.record.id) is turn:
            del self._turns[turn.record.id]

    def get(self, task_id: str) -> Turn | None:
        return self._turns.get(task_id)

    def running(self) -> list[Turn]:
        return [t for t in self._turns.values() if t.runner is not None]

    async def load(self, task_id: str, space: str) -> StoredTask | None:
        """The task as it stands (its live record while a turn runs, else the stored one), if
        it is ``space``'s: another caller's task is as unknown as a task that does not exist."""
        turn = self._turns.get(task_id)
        record = turn.record if turn is not None else await self._store.get(task_id)
        return record if record is not None and record.space == space else None
