"""Turns no request waits for: a reviewer's decision, and the runs recovery continues.

Each comes as a ``Plan`` (``review_decisions.py``, ``recovery.py``); the resumer claims its
context and hands it to the worker. A context busy meanwhile keeps its task as it is (the
turn that holds it looks at the review port again when it parks).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from ..core.background import stop_task
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
            claim = plan.claim or await self._claims.acquire(record.context_key)
        except ClaimTaken:
            log.warning("task %s not resumed: its context is busy", record.id)
            return
        events = self._publisher.open(record.id, record.event_seq)
        await self._worker.start(Turn.of(plan, events, claim, blocking=False))

    async def on_review_decision(self, review: Review) -> None:
        """A reviewer decided through the port: resume the task that waits for it. The plan
        is made under the context's claim: every replica hears the decision, and one that
        planned before another ran the turn would run it a second time."""
        key = await self._decisions.context_key_of(review) if self._decisions else None
        if key is None or self._decisions is None:
            return
        try:
            claim = await self._claims.acquire(key)
        except ClaimTaken:  # a turn holds it; the turn asks the port again when it parks
            return
        try:
            plan = await self._decisions.plan_for(review)
        except BaseException:
            await self._claims.release(claim)
            raise
        if plan is None:
            await self._claims.release(claim)
            return
        plan.claim = claim
        await self.start(plan)

    async def apply_decided(self, record: StoredTask) -> None:
        """A task parked for a reviewer whose decision the port already has: apply it."""
        review = await self._decisions.decided_review(record) if self._decisions else None
        if review is not None:
            await self.on_review_decision(review)

    @contextlib.asynccontextmanager
    async def sweeping(self, every: float) -> AsyncIterator[None]:
        """While inside: take over what stopped replicas left, every ``every`` seconds."""
        sweeper = asyncio.create_task(self._sweep(every))
        try:
            yield
        finally:
            # a cancel landing in psycopg_pool's ``wait_for`` may be lost (core/background.py)
            await stop_task(sweeper)

    async def _sweep(self, every: float) -> None:
        """A failed sweep is logged and the next one tries again."""
        while True:
            await asyncio.sleep(every)
            try:
                await self.recover()
            except Exception:
                log.exception("recovery: the takeover sweep failed; trying again")

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
