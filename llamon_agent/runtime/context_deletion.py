"""A principal deletes one of its contexts: every task of it, its checkpoints, reviews, events
and push data, and the child conversations an orchestrator held for it
(``DELETE /contexts/{contextId}``, docs/operations.md, "Retention").

* The context is looked up in the caller's space: another principal's context is exactly as
  unknown as one that does not exist (``-32001``, REST 404).
* The context's claim is taken first and held to the end, so no turn runs and none starts
  meanwhile; a context whose claim is held (a turn is running) is refused busy (``-32004``,
  REST 409) and nothing is deleted. So are child conversations that are busy.
* A task waiting for input (``input-required``, ``auth-required``) or parked for a reviewer
  (``working`` with no turn running) is deleted with the rest: the user asked to forget the
  conversation, and a reviewer's pending review of it goes too.
* An orchestrator's child conversations on this server live in the principal's internal
  space under ``<contextId>::<child>`` (``orchestrator/children.py``), and a child that is
  itself an orchestrator has its own; they are found level by level among the served agents
  (at most ``MAX_CHILD_LEVELS`` levels, ``MAX_CHILD_CONTEXTS`` contexts) and deleted too. A
  remote child's tasks live on its own server and stay there.

Each context's checkpoints are deleted before its tasks: a crash in between leaves tasks that a
second ``DELETE`` (or retention) removes, never checkpoints without a task.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from ..core.principal import context_key, principal_of_space, space_of
from ..errors import TaskNotFoundError
from ..orchestrator.children import child_context
from ..stores.base import TaskStore
from .claims import Claim, ClaimTaken, ContextClaims, busy_refusal
from .erasure import Erasure
from .retention import BATCH

__all__ = ["MAX_CHILD_CONTEXTS", "MAX_CHILD_LEVELS", "ContextDeletion", "DeletedContext"]

#: levels of nested orchestrators whose child conversations go with a context
MAX_CHILD_LEVELS = 8
#: child conversations one deletion removes at most (the rest stay for retention)
MAX_CHILD_CONTEXTS = 256


@dataclass(frozen=True)
class DeletedContext:
    """``tasks``: the context's own tasks deleted; ``child_contexts`` and ``child_tasks``: the
    child conversations (and their tasks) deleted with it."""

    context_id: str
    tasks: int
    child_contexts: int
    child_tasks: int


class ContextDeletion:
    """``agent_ids``: the agents this server serves (the children an orchestrator may call
    in process)."""

    def __init__(
        self, store: TaskStore, claims: ContextClaims, erasure: Erasure,
        agent_ids: Collection[str],
    ) -> None:
        self._store = store
        self._claims = claims
        self._erasure = erasure
        self._agent_ids = sorted(agent_ids)

    async def delete(self, context_id: str, space: str) -> DeletedContext:
        """Raises ``TaskNotFoundError`` for a context without tasks in ``space`` and the busy
        ``UnsupportedOperationError`` while a turn holds it; then nothing was deleted."""
        key = context_key(space, context_id)
        held: list[Claim] = []
        try:
            held.append(await self._claim(key, context_id))
            if not await self._store.contexts_with_tasks([key]):
                raise TaskNotFoundError("Context not found", data={"contextId": context_id})
            children = await self._children(context_id, space)
            for child in children:
                held.append(await self._claim(child, context_id))
            own = await self._delete(key)
            child_tasks = 0
            for child in children:
                child_tasks += await self._delete(child)
        finally:
            for claim in held:
                await self._claims.release(claim)
        await self._store.reclaim_space()
        return DeletedContext(context_id, own, len(children), child_tasks)

    async def _claim(self, key: str, context_id: str) -> Claim:
        try:
            return await self._claims.acquire(key)
        except ClaimTaken as taken:  # told with the client's own id, never a key
            raise await busy_refusal(self._store, key, context_id, taken) from None

    async def _children(self, context_id: str, space: str) -> list[str]:
        """The keys of the child conversations under ``context_id`` that hold tasks."""
        internal = space_of(principal_of_space(space), internal=True)
        found: list[str] = []
        parents = [context_id]
        for _ in range(MAX_CHILD_LEVELS):
            candidates = {
                context_key(internal, child_context(parent, agent)): child_context(parent, agent)
                for parent in parents for agent in self._agent_ids
            }
            present = await self._store.contexts_with_tasks(candidates)
            level = [k for k in candidates if k in present and k not in found]
            level = level[:MAX_CHILD_CONTEXTS - len(found)]
            if not level:
                break
            found.extend(level)
            parents = [candidates[k] for k in level]
        return found

    async def _delete(self, key: str) -> int:
        """Every task of the context ``key`` (its claim is held), its checkpoints first."""
        await self._erasure.drop_thread(key)
        deleted: list[str] = []
        while True:
            chunk = await self._store.delete_in_context(key, BATCH)
            deleted.extend(task.id for task in chunk)
            if len(chunk) < BATCH:
                break
        await self._erasure.tasks_deleted(deleted)
        return len(deleted)
