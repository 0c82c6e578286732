"""Turns no request waits for: a reviewer's decision, and the runs recovery continues.

Each comes as a ``Plan`` (``review_decisions.py``, ``recovery.py``); the resumer claims its
context and hands it to the worker. A context busy meanwhile keeps its task as it is (the
turn that holds it looks at the review port again when it parks).
"""

from __future__ import annotations

import logging

from ..core.ports import Review
from ..stores.base import StoredTask
from .claims import ClaimTaken, ContextClaims
from .publisher import EventPublisher
from .recovery import Recovery
from .review_decisions import ReviewDecisions
from .turn import Plan, Turn
from .worker import TurnWorker

__all__ = ["Resumer"]

log = logging.getLogger(__name__)


class Resumer:
    def __init__(
        self, claims: ContextClaims, publisher: EventPublisher, worker: TurnWorker,
        decisions: ReviewDecisions | None, recovery: Recovery,
    ) -> None:
        self._claims = claims
        self._publisher = publisher
        self._worker = worker
        self._decisions = decisions
        self._recovery = recovery

    async def start(self, plan: Plan) -> None:
        record = plan.record
        try:
            claim = await self._claims.acquire(record.context_key)
        except ClaimTaken:
            log.warning("task %s not resumed: its context is busy", record.id)
            return
        events = self._publisher.open(record.id, record.event_seq)
        await self._worker.start(Turn.of(plan, events, claim, blocking=False))

    async def on_review_decision(self, review: Review) -> None:
        """A reviewer decided through the port: resume the task that waits for it."""
        plan = await self._decisions.plan_for(review) if self._decisions else None
        if plan is not None:
            await self.start(plan)

    async def apply_decided(self, record: StoredTask) -> None:
        """A task parked for a reviewer whose decision the port already has: apply it."""
        review = await self._decisions.decided_review(record) if self._decisions else None
        if review is not None:
            await self.on_review_decision(review)

    async def recover(self) -> None:
        recovered = await self._recovery.recover()
        for plan in recovered.resume:
            try:
                await self.start(plan)
            except Exception as exc:  # one bad task never stops the server from starting
                log.exception("recovery: task %s could not be resumed", plan.record.id)
                await self._recovery.fail(plan.record, f"it could not be recovered ({exc})")
        for record in recovered.parked:
            await self.apply_decided(record)
