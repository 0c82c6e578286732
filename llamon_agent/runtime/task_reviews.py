"""``TaskReviews``: the human review port as the runs of one task see it.

A task's end closes the reviews still waiting for it (``LocalPublisher.save``): one statement
on a database. Nearly no task ever opens a review, so the end sends it only for a task whose
record says it did (``StoredTask.reviews_opened``). That record must say so before the review
exists: a run may open a review and then die before its end is stored, and the process that
ends the task later (a cancel, a takeover, another replica) reads only the stored record. So
the first review a task's run opens stores the task with the mark first, then opens it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from ..core.ports import (
    Decision,
    HumanReviewPort,
    Listener,
    PendingSummary,
    Review,
    ReviewCursor,
)
from ..stores.base import StoredTask

__all__ = ["SaveTask", "TaskReviews"]

#: stores a task (``EventPublisher.save``: every write of a task goes there)
SaveTask = Callable[[StoredTask], Awaitable[None]]


class TaskReviews:
    """``port`` for the runs of the task ``record`` (the live record of its turn): ``submit``
    marks and stores the record first, once; every other call goes to ``port`` as it is.
    ``request_review`` opens the review of the run's own task, which is the one marked."""

    def __init__(self, port: HumanReviewPort, record: StoredTask, save: SaveTask) -> None:
        self._port = port
        self._record = record
        self._save = save
        # parallel branches may open reviews at once: none goes on before the mark is stored
        self._marking = asyncio.Lock()
        self._stored = record.reviews_opened  # by an earlier run of the task

    async def submit(self, *, task_id: str, context_id: str, agent_id: str, draft: Any) -> Review:
        await self._mark()
        return await self._port.submit(
            task_id=task_id, context_id=context_id, agent_id=agent_id, draft=draft
        )

    async def _mark(self) -> None:
        if self._stored:
            return
        async with self._marking:
            if self._stored:
                return
            # set before the write and left set if it fails: the end then closes reviews
            # that may not exist, never misses one (the next review tries the write again)
            self._record.reviews_opened = True
            await self._save(self._record)
            self._stored = True

    async def get(self, review_id: str) -> Review:
        return await self._port.get(review_id)

    async def pending(self, limit: int, after: ReviewCursor | None = None) -> list[Review]:
        return await self._port.pending(limit, after)

    async def pending_summary(self) -> PendingSummary:
        return await self._port.pending_summary()

    async def decide(self, review_id: str, decision: Decision) -> Review:
        return await self._port.decide(review_id, decision)

    async def close_for_task(self, task_id: str, reason: str) -> list[Review]:
        return await self._port.close_for_task(task_id, reason)

    async def delete_for_tasks(self, task_ids: Sequence[str]) -> int:
        return await self._port.delete_for_tasks(task_ids)

    def on_decision(self, listener: Listener) -> Callable[[], None]:
        return self._port.on_decision(listener)
