"""What goes with deleted tasks: their checkpoints, human reviews, events and push data.

Retention (``retention.py``) and a principal deleting a context (``context_deletion.py``)
delete task rows; this part deletes what is stored beside them, found by the task ids or by
the context key:

* the **checkpoints** of a context (its LangGraph thread: ``thread_id`` is the context key),
  deleted only by a caller that holds the context's claim and found the context holding
  nothing that must keep them (the graph state holds what every task of the context said);
* the **human reviews** of the deleted tasks (``HumanReviewPort.delete_for_tasks``);
* their **events**: this process's logs, and the Redis streams with Redis events
  (``EventPublisher.forget``);
* what other parts keep per task (push notification configs and deliveries): the hooks given
  to ``also_delete``.

A part that fails is logged and the others still run: the task rows are gone already, and a
second attempt would not find them. Deleting twice is harmless everywhere.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from langgraph.checkpoint.base import BaseCheckpointSaver

from ..core.ports import HumanReviewPort
from .publisher import EventPublisher

__all__ = ["Erasure", "TasksDeleted"]

log = logging.getLogger(__name__)

#: told the ids of tasks just deleted, to delete what it keeps for them (push data)
TasksDeleted = Callable[[Sequence[str]], Awaitable[None]]


class Erasure:
    def __init__(
        self, checkpointer: BaseCheckpointSaver[Any], reviews: HumanReviewPort | None,
        publisher: EventPublisher | None,
    ) -> None:
        self._checkpointer = checkpointer
        self._reviews = reviews
        self._publisher = publisher
        self._hooks: list[TasksDeleted] = []

    def also_delete(self, hook: TasksDeleted) -> None:
        """``hook(task_ids)`` runs after every deletion of tasks, with their ids: the push
        notification store deletes their configs and deliveries there."""
        self._hooks.append(hook)

    async def drop_thread(self, context_key: str) -> None:
        """Delete the context's checkpoints. The caller holds the context's claim (no turn
        runs, none starts) and found nothing in the context that keeps them."""
        await self._checkpointer.adelete_thread(context_key)

    async def tasks_deleted(self, task_ids: Sequence[str]) -> None:
        if not task_ids:
            return
        if self._reviews is not None:
            await _logged("their reviews", task_ids, self._reviews.delete_for_tasks(task_ids))
        if self._publisher is not None:
            await _logged("their events", task_ids, self._publisher.forget(task_ids))
        for hook in self._hooks:
            await _logged(f"{hook!r}", task_ids, hook(task_ids))


async def _logged(what: str, task_ids: Sequence[str], work: Awaitable[Any]) -> None:
    try:
        await work
    except Exception:
        log.exception("%d deleted tasks (%s, ...): %s could not be deleted", len(task_ids),
                      task_ids[0], what)
