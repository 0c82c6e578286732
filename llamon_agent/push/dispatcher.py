"""Attempts off the turn's path: each in a task of its own, at most ``concurrency`` at once.

Two ways in: ``kick`` right after a change was enqueued (the first attempt goes out at once,
not at the next sweep), and ``start`` for what a sweep claimed (retries, catch-up). An attempt
runs only under the delivery's claim; one that does not fit (``concurrency`` attempts already
run) is left in the store, due, for the next sweep: a slow or dead receiver fills the places
at worst, and never holds a turn, a request or the sweeper. Leaving (shutdown) cancels the
attempts in flight: their claims lapse and another server, or the next start, tries again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from types import TracebackType

from ..core.background import stop_task
from ..core.clock import Clock
from ..stores.push_base import Delivery, DeliveryKey, Outcome, PushStore
from .guard import Destination, WebhookRefused
from .policy import PushPolicy
from .sender import Attempt, WebhookSender

__all__ = ["PushDispatcher"]

log = logging.getLogger(__name__)

#: ``url`` -> the checked address to deliver to (``guard.check_webhook`` with the server's
#: settings), or ``WebhookRefused``
Check = Callable[[str], Awaitable[Destination]]


class PushDispatcher:
    def __init__(self, store: PushStore, policy: PushPolicy, clock: Clock, check: Check,
                 headers: Callable[[Delivery], dict[str, str]]) -> None:
        self._store = store
        self._policy = policy
        self._clock = clock
        self._check = check
        self._headers = headers
        self._sender = WebhookSender(timeout=policy.timeout, concurrency=policy.concurrency)
        self._running: set[asyncio.Task[None]] = set()
        self._idle = asyncio.Event()
        self._idle.set()
        self._open = False

    async def __aenter__(self) -> PushDispatcher:
        await self._sender.__aenter__()
        self._open = True
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        self._open = False
        # an attempt's database call may swallow one cancel (Python 3.11's wait_for)
        await asyncio.gather(*(stop_task(task) for task in list(self._running)))
        await self._sender.__aexit__(exc_type, exc, tb)

    def free(self) -> int:
        """Places for more attempts now."""
        return self._policy.concurrency - len(self._running) if self._open else 0

    def kick(self, keys: Sequence[DeliveryKey]) -> None:
        """First attempts of deliveries just enqueued, as far as places allow."""
        for key in keys[: self.free()]:
            self._spawn(self._claim_and_attempt(key))

    def start(self, claimed: Sequence[Delivery]) -> None:
        """Attempts of deliveries the caller claimed (no more than ``free()``)."""
        for delivery in claimed:
            self._spawn(self._attempt(delivery))

    async def settle(self) -> None:
        """Return once no attempt is in flight (tests; a sweep's attempts ended)."""
        await self._idle.wait()

    def _spawn(self, work: Awaitable[None]) -> None:
        task: asyncio.Task[None] = asyncio.ensure_future(work)
        self._running.add(task)
        self._idle.clear()
        task.add_done_callback(self._done)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._running.discard(task)
        if not self._running:
            self._idle.set()
        if not task.cancelled() and task.exception() is not None:
            log.error("push delivery failed unexpectedly", exc_info=task.exception())

    def _now(self) -> float:
        return self._clock().timestamp()

    async def _claim_and_attempt(self, key: DeliveryKey) -> None:
        now = self._now()
        delivery = await self._store.claim(key, now, now + self._policy.lease)
        if delivery is not None:
            await self._attempt(delivery)

    async def _attempt(self, delivery: Delivery) -> None:
        try:
            destination = await self._check(delivery.config.url)
        except WebhookRefused as refused:
            # the address changed to one the server must not call: no retry would be safer
            log.warning("push delivery %s for task %s given up: webhook refused: %s",
                        delivery.key.delivery_id, delivery.key.task_id, refused)
            await self._finish(delivery, Attempt(False, f"webhook refused: {refused}"),
                               final=True)
            return
        attempt = await self._sender.post(destination, delivery.body, self._headers(delivery))
        await self._finish(delivery, attempt)

    async def _finish(self, delivery: Delivery, attempt: Attempt, *, final: bool = False
                      ) -> None:
        attempts = delivery.attempts + 1
        now = self._now()
        if attempt.ok:
            outcome = Outcome("delivered", attempts)
        elif final or attempts >= self._policy.max_attempts:
            outcome = Outcome("failed", attempts, error=attempt.error)
            log.warning("push delivery %s for task %s (%s) given up after %d attempts: %s",
                        delivery.key.delivery_id, delivery.key.task_id, delivery.state,
                        attempts, attempt.error)
        else:
            outcome = Outcome("pending", attempts, now + self._policy.retry_delay(attempts),
                              attempt.error)
        await self._store.finish(delivery.key, outcome, now)
