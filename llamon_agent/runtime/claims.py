"""The per-context claim: one turn at a time runs a context's graph.

A context is claimed from routing until its turn ends. A message that finds the claim taken is
refused with ``-32004`` busy, never queued: a queued answer could answer the next question.

``ContextClaims`` is the seam for many processes: the in-process version below holds claims in
a dict; a version for replicas holds them where every replica sees them (an advisory lock, a
Redis key) behind the same three calls.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

from ..a2a.types import TERMINAL_STATES
from ..errors import UnsupportedOperationError
from ..stores.base import TaskStore
from ..stores.turn_writes import TurnWrites

__all__ = ["Claim", "ClaimTaken", "ContextClaims", "LocalClaims", "busy_error", "busy_refusal"]


@dataclass(eq=False)
class Claim:
    """A held claim on a context key (``StoredTask.context_key``). ``task_id`` is set once the
    turn's task is known, so that a refused message can be told which task keeps it busy."""

    key: str
    task_id: str | None = None


class ClaimTaken(Exception):
    """The context is claimed; ``task_id`` is the holder's task, when known. The caller answers
    ``busy_error`` with the client's own ``contextId`` (the key is never shown)."""

    def __init__(self, task_id: str | None) -> None:
        super().__init__(task_id)
        self.task_id = task_id


def busy_error(context_id: str, task_id: str | None) -> UnsupportedOperationError:
    return UnsupportedOperationError(
        "This operation is not supported: task is busy",
        data={"contextId": context_id, "taskId": task_id, "reason": "task is busy"},
    )


async def busy_refusal(
    store: TaskStore, key: str, context_id: str, taken: ClaimTaken
) -> UnsupportedOperationError:
    """``busy_error`` naming the task that keeps the context ``key`` busy: its unfinished task
    when it has one, else the task the claim names (a new task's id, taken with the claim).
    The claim's own id is not enough: an answer without ``taskId`` takes the claim with an id
    drawn before its turn knows it answers the waiting task, and on PostgreSQL the turn's
    task is written to the claim row only at its renewal. Read on a refusal's path only."""
    latest = await store.latest_in_context(key)
    if latest is not None and latest.state not in TERMINAL_STATES:
        return busy_error(context_id, latest.id)
    return busy_error(context_id, taken.task_id)


class ContextClaims(Protocol):
    async def acquire(self, key: str, task_id: str | None = None) -> Claim:
        """The claim on the context ``key``; raises ``ClaimTaken`` while another holds it.
        ``task_id``: the task the claim is for, when the caller knows it already (an answer
        naming its task, the id a new task will get), so that it is written with the claim
        instead of after it."""
        ...

    async def acquire_for(self, key: str, task_id: str | None, writes: TurnWrites) -> Claim:
        """``acquire`` for the turn whose unit is ``writes``. Where the claims live in the task
        store's database, the reads the turn makes next may come in the same round trip: the
        context's latest task (``writes.latest``) and its thread's checkpoint
        (``writes.checkpoint``; ``stores/turn_writes.py``); elsewhere, ``acquire``."""
        ...

    async def release(self, claim: Claim) -> None:
        """Give the claim back (a claim already released, or replaced, is left alone)."""
        ...

    async def claim_fresh(self, key: str, task_id: str, writes: TurnWrites) -> Claim:
        """The claim on a context the server has just drawn (``Located.fresh``): no other
        holder can exist and no client can name it before the turn's first save. Where the
        claims live in the task store's database, its row is written by that save, in its
        transaction (``writes.claim``), and not at all when that save ends the turn."""
        ...

    def release_with(self, claim: Claim, writes: TurnWrites) -> None:
        """Offer the turn's end save to release ``claim`` in its own transaction
        (``stores/turn_writes.py``), when the claims live in the task store's database;
        ``release`` still follows, and then only forgets a claim that save released."""
        ...

    async def held(self, key: str) -> bool: ...

    async def held_among(self, keys: Collection[str]) -> set[str]:
        """Which of ``keys`` are claimed now (by anyone): one question for a recovery sweep
        instead of one attempt per running task."""
        ...


class LocalClaims:
    """Claims of one process (one event loop): a dict, so acquiring never awaits."""

    def __init__(self) -> None:
        self._held: dict[str, Claim] = {}

    async def acquire(self, key: str, task_id: str | None = None) -> Claim:
        holder = self._held.get(key)
        if holder is not None:
            raise ClaimTaken(holder.task_id)
        claim = self._held[key] = Claim(key, task_id)
        return claim

    async def acquire_for(self, key: str, task_id: str | None, writes: TurnWrites) -> Claim:
        return await self.acquire(key, task_id)  # reads nothing: nothing to save here

    async def release(self, claim: Claim) -> None:
        if self._held.get(claim.key) is claim:
            del self._held[claim.key]

    async def claim_fresh(self, key: str, task_id: str, writes: TurnWrites) -> Claim:
        return await self.acquire(key, task_id)  # costs no statement either way

    def release_with(self, claim: Claim, writes: TurnWrites) -> None:
        """Nothing to do: releasing a claim of this process costs no statement."""

    async def held(self, key: str) -> bool:
        return key in self._held

    async def held_among(self, keys: Collection[str]) -> set[str]:
        return {key for key in keys if key in self._held}
