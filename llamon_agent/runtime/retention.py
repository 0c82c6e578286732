"""Retention: tasks that ended longer ago than the configured age are deleted, with their
checkpoints, reviews, events and push data (docs/operations.md, "Retention").

A ``SweepJob`` of the server's sweeper (``--retention 30d``) and the body of ``llamon-agent
prune --older-than 30d``. Deleted: tasks in a terminal state (completed, canceled, rejected,
failed) whose last update is older than ``keep`` seconds. Never deleted: a task that is
unfinished (submitted, working, input-required, auth-required), whatever its age.

Work goes context by context:

1. a context that also holds a newer or unfinished task keeps its checkpoints (its graph
   state is that task's too): only its old ended tasks are deleted, without its claim;
2. a context that holds nothing but ended tasks old enough is claimed (the claim a message
   takes to route; a context claimed now is left to a later sweep), so that no turn runs and no
   task starts in it meanwhile, and checked again; its checkpoints are deleted **first**: a
   crash after this step leaves ended tasks the next sweep deletes, never checkpoints nobody
   would delete;
3. tasks are deleted in statements of at most ``batch`` rows whose condition is the state and
   the time, so a task saved again meanwhile is kept; their reviews, events and push data go
   too (``erasure.py``).

Every replica sweeps at once: two that meet on a context to empty are serialised by its claim,
and the second finds nothing left; two deleting rows delete each row once. A sweep does at most ``max_batches`` selections of ``batch`` tasks
(the next sweep goes on), so it never holds a lock, nor the sweeper, for long.

Rows stored before updates were timed (``updated = 0``) have no known age: each sweep first
dates those that ended with the sweep's time, so they are deleted one retention period after
the first sweep that saw them, never at once.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime

from ..stores.base import DeletedTask, Prunable, TaskStore
from .claims import ClaimTaken, ContextClaims
from .erasure import Erasure

__all__ = ["BATCH", "MAX_BATCHES", "Pruned", "Retention"]

#: tasks one statement selects, dates or deletes
BATCH = 200
#: selections of ``BATCH`` tasks in one sweep of the server's sweeper (``None`` for a prune by
#: hand, which goes on until nothing is left)
MAX_BATCHES = 5


@dataclass(frozen=True)
class Pruned:
    """What one pass deleted: ``tasks`` in ``contexts`` contexts, ``emptied`` of which held
    nothing else (their checkpoints were deleted); ``dated``: ended tasks of unknown age dated
    now; ``busy``: contexts left for later because a turn held them."""

    tasks: int = 0
    contexts: int = 0
    emptied: int = 0
    dated: int = 0
    busy: int = 0


class Retention:
    """``keep``: seconds an ended task is kept after its last update."""

    name = "retention"

    def __init__(
        self, store: TaskStore, claims: ContextClaims, erasure: Erasure, keep: float, *,
        batch: int = BATCH, max_batches: int | None = MAX_BATCHES,
    ) -> None:
        if not keep > 0:
            raise ValueError(f"the retention period must be above 0 seconds, got {keep!r}")
        self.keep = keep
        self._store = store
        self._claims = claims
        self._erasure = erasure
        self._batch = batch
        self._max_batches = max_batches

    def cutoff(self, now: datetime) -> float:
        """The Unix time before which an ended task's last update makes it old enough."""
        return now.timestamp() - self.keep

    async def sweep(self, now: datetime) -> int:
        return (await self.prune(now)).tasks

    async def preview(self, now: datetime) -> Prunable:
        """What ``prune(now)`` would delete, changing nothing (``--dry-run``)."""
        return await self._store.count_ended(self.cutoff(now))

    async def prune(self, now: datetime) -> Pruned:
        cutoff = self.cutoff(now)
        dating = _Budget(self._max_batches)  # a budget each: dating never starves deleting
        dated = 0
        while dating.take():
            found = await self._store.date_undated(now.timestamp(), self._batch)
            dated += found
            if found < self._batch:
                break
        tasks, emptied = 0, 0
        pruned: set[str] = set()
        busy: set[str] = set()
        deleting = _Budget(self._max_batches)
        while deleting.take():
            keys = _keys(await self._store.ended_before(cutoff, self._batch)) - busy
            if not keys:
                break
            for key in keys:
                outcome = await self._prune_context(key, cutoff)
                if outcome is None:
                    busy.add(key)
                    continue
                deleted, dropped = outcome
                if deleted:
                    tasks += len(deleted)
                    emptied += dropped
                    pruned.add(key)
            await asyncio.sleep(0)  # between batches, the requests that are ready go first
        if tasks:
            await self._store.reclaim_space()
        return Pruned(tasks, len(pruned), emptied, dated, len(busy))

    async def _prune_context(self, key: str, cutoff: float) -> tuple[list[str], bool] | None:
        """The context's old ended tasks deleted (and its checkpoints, when nothing else keeps
        them); ``None`` when its claim is held."""
        if await self._store.context_outlives(key, cutoff):
            # its checkpoints stay: rows alone need no claim (the statement's condition keeps
            # what is not old and ended), and a reviewer's decision or an answer for the task
            # that keeps the context is never told the context is busy
            return await self._delete_ended(key, cutoff), False
        try:
            claim = await self._claims.acquire(key)
        except ClaimTaken:
            return None
        try:
            emptied = not await self._store.context_outlives(key, cutoff)  # under the claim
            if emptied:
                await self._erasure.drop_thread(key)  # first: see the module's docstring
            return await self._delete_ended(key, cutoff), emptied
        finally:
            await self._claims.release(claim)

    async def _delete_ended(self, key: str, cutoff: float) -> list[str]:
        deleted: list[str] = []
        while True:
            chunk = await self._store.delete_in_context(key, self._batch, ended_before=cutoff)
            deleted.extend(task.id for task in chunk)
            if len(chunk) < self._batch:
                break
        await self._erasure.tasks_deleted(deleted)
        return deleted


def _keys(tasks: list[DeletedTask]) -> set[str]:
    return {task.context_key for task in tasks}


class _Budget:
    """At most ``batches`` statements of ``BATCH`` rows in one pass (``None``: no bound)."""

    def __init__(self, batches: int | None) -> None:
        self._left = batches

    def take(self) -> bool:
        if self._left is None:
            return True
        if self._left <= 0:
            return False
        self._left -= 1
        return True
