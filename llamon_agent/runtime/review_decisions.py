"""A reviewer's decision (``HumanReviewPort``) as the next turn of the task that waits for it.

Returns the ``Plan``; the caller claims the context and starts it. A decision can come before
the turn that asked has parked (the reviewer saw the draft at once): that turn's end asks
``decided_review`` again when it parks, and so does recovery for tasks parked at a restart.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from langgraph.types import Command

from ..core.ports import HumanReviewPort, Review, ReviewNotFoundError
from ..human_review.node import is_review_wait
from ..stores.base import StoredTask, TaskStore
from .collect import pending_of
from .live import LiveTurns
from .served import ServedAgent
from .turn import Plan

__all__ = ["ReviewDecisions"]

log = logging.getLogger(__name__)


class ReviewDecisions:
    def __init__(
        self, reviews: HumanReviewPort, store: TaskStore, served: Mapping[str, ServedAgent],
        live: LiveTurns,
    ) -> None:
        self._reviews = reviews
        self._store = store
        self._served = served
        self._live = live

    async def context_key_of(self, review: Review) -> str | None:
        """The context key of the task ``review`` belongs to (``None``: no such task)."""
        record = await self._store.get(review.task_id)
        return record.context_key if record is not None else None

    async def plan_for(self, review: Review) -> Plan | None:
        """The turn that resumes the task with ``review``'s decision; ``None`` when the task
        does not wait for it (yet: a running turn asks again when it parks)."""
        if review.decision is None or self._live.get(review.task_id) is not None:
            return None
        record = await self._store.get(review.task_id)
        served = self._served.get(record.agent_id) if record is not None else None
        if record is None or served is None or record.state != "working":
            log.warning("review %s decided but task %s is not waiting for it", review.id,
                        review.task_id)
            return None
        waiting = next(
            (p for p in await pending_of(served, record)
             if is_review_wait(p.value) and p.value.get("review_id") == review.id),
            None,
        )
        if waiting is None:
            log.warning("task %s does not wait for review %s", record.id, review.id)
            return None
        record.pending = ()
        record.pending_interrupt = None
        record.resuming = {waiting.id: review.decision.to_json()}  # stored before it runs
        return Plan(record, served, Command(resume=record.resuming))

    async def decided_review(self, record: StoredTask) -> Review | None:
        """The review a parked task waits for, when the port already has its decision."""
        value = record.pending[0].value if record.pending else None
        review_id = value.get("review_id") if isinstance(value, dict) else None
        if not isinstance(review_id, str):
            return None
        try:
            review = await self._reviews.get(review_id)
        except ReviewNotFoundError:
            return None
        return review if review.status == "decided" else None
