"""``TaskManager``: the front of the task runtime (send, stream, get, cancel, resubscribe).

It wires the parts and passes values between them; each part owns one concept
(docs/architecture.md, "The request path")::

    message/send|stream ─► requests.checked_request()   the request alone: role, agentId, modes
                           router.locate()              its context; a retry of a taken answer
                           claims.acquire()             one turn per context (else -32004 busy)
                           router.plan()                new task | answer (collect.py) | refusal
                           task_bound.check_task_bytes()
                           worker.start(Turn)           publisher: store, then publish
                             └► worker._run()           run_turn ─► Ending ─► publisher.end()
                                                        finally: release the claim, wake senders

Reviewer decisions (``review_decisions.py``) and recovery (``recovery.py``) also return plans
that this front claims and starts.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from contextlib import AsyncExitStack, suppress
from typing import Any

import httpx

from ..a2a.types import TERMINAL_STATES, MessageSendParams, Task
from ..agent import Agent
from ..core.bounds import Limits
from ..core.ports import HumanReviewPort
from ..core.principal import ANONYMOUS, context_key
from ..errors import TaskNotCancelableError, TaskNotFoundError
from ..stores.base import StoredTask
from ..stores.storage import Storage
from ..tool_review import catalog
from .cancel_relay import CancelRelay, LocalCancelRelay
from .claims import ClaimTaken, ContextClaims, LocalClaims, busy_error
from .events import Event, settled
from .live import LiveTurns
from .messages import response_copy
from .observer import NO_OBSERVER, TaskObserver
from .publisher import EventPublisher, LocalPublisher
from .recovery import LeaseRecovery, LocalRecovery, Recovery
from .remote_cancel import cancel_elsewhere
from .requests import checked_request
from .resumer import Resumer
from .review_decisions import ReviewDecisions
from .router import Router
from .run_settings import remember_reviews, run_settings
from .served import ServedAgent, checked_agents, serve_agents
from .task_bound import check_task_bytes
from .turn import Plan, Turn
from .worker import TurnWorker

__all__ = ["TaskManager"]

log = logging.getLogger(__name__)


class TaskManager:
    """An async context manager: entering compiles the agents, starts the turn worker and
    recovers what a stopped process left; leaving lets running turns finish (``shutdown_grace``
    seconds) and closes what entering opened."""

    def __init__(
        self, agents: Sequence[Agent], storage: Storage, *, shutdown_grace: float = 10.0,
        reviews: HumanReviewPort | None = None, review_wait: float = 5.0,
        limits: Limits | None = None, claims: ContextClaims | None = None,
        publisher: EventPublisher | None = None, recovery: Recovery | None = None,
        observer: TaskObserver = NO_OBSERVER, max_waiting_tasks: int | None = None,
        cancel_relay: CancelRelay | None = None, takeover_every: float | None = None,
        cancel_wait: float = 10.0,
    ) -> None:
        """Replicas pass shared ``claims``, ``publisher`` and ``cancel_relay`` and a
        ``takeover_every`` period: recovery then takes over only runs whose claim is free
        (``LeaseRecovery``), at start and every period; without it, recovery takes every
        unfinished task once at start (one server). A cancel of a run on another replica waits
        up to ``cancel_wait`` seconds for it to end."""
        self._agents = checked_agents(agents)
        self._storage = storage
        self._store = storage.tasks
        self._reviews = reviews
        self._review_wait = review_wait
        self._limits = limits or Limits()
        self._served: dict[str, ServedAgent] = {}
        self._live = LiveTurns(self._store)
        self._claims = claims or LocalClaims()
        self._publisher = publisher or LocalPublisher(self._store, reviews, observer=observer)
        self._relay = cancel_relay or LocalCancelRelay()
        self._takeover_every = takeover_every
        self._cancel_wait = cancel_wait
        self._recovery = recovery or (
            LeaseRecovery(self._store, self._served, self._publisher, self._claims)
            if takeover_every is not None
            else LocalRecovery(self._store, self._served, self._publisher))
        self._router = Router(self._served, self._agents[0].id, self._store, self._live,
                              self._limits, max_waiting_tasks)
        decisions = (
            ReviewDecisions(reviews, self._store, self._served, self._live) if reviews else None
        )
        self._worker = TurnWorker(
            self._publisher, self._claims, self._live, shutdown_grace=shutdown_grace,
            on_parked=lambda record: self._resumer.apply_decided(record), observer=observer,
        )
        self._resumer = Resumer(self._claims, self._publisher, self._worker, decisions,
                                self._recovery)
        self._stack = AsyncExitStack()

    @property
    def agents(self) -> list[Agent]:
        return list(self._agents)

    async def __aenter__(self) -> TaskManager:
        """Everything opened here is on ``_stack``: a step that fails (recovery raising) closes
        what the earlier steps opened instead of leaking the client, the worker's turns and the
        review listener."""
        try:
            http = await self._stack.enter_async_context(httpx.AsyncClient(timeout=60))
            self._served.update(serve_agents(
                self._agents, self._storage.checkpointer, reviews=self._reviews,
                db=self._storage.db, limits=self._limits, http=http,
                send_local=lambda params, space: self.send(params, space=space),
                cancel_local=lambda task_id, space: self.cancel(task_id, space=space),
            ))
            await self._stack.enter_async_context(self._worker)
            if self._reviews is not None:
                self._stack.callback(self._reviews.on_decision(self._resumer.on_review_decision))
            self._stack.callback(self._relay.listen(self._cancel_here))
            await self._resumer.recover()
            if self._takeover_every is not None:
                await self._stack.enter_async_context(
                    self._resumer.sweeping(self._takeover_every))
        except BaseException as exc:
            # handing ``exc`` to the stack makes the worker cancel the turns recovery started
            # (instead of awaiting them); the caller gets ``exc``
            with suppress(BaseException):
                await self._stack.__aexit__(type(exc), exc, exc.__traceback__)
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    # ------------------------------------------------------------------ reads

    # Every call takes the caller's ``space`` (core/principal.py): another caller's task or
    # context is exactly as unknown as one that does not exist.

    async def get_task(
        self, task_id: str, history_length: int | None = None, *, space: str = ANONYMOUS
    ) -> Task:
        return response_copy(await self._owned(task_id, space), history_length)

    async def _owned(self, task_id: str, space: str) -> StoredTask:
        record = await self._live.load(task_id, space)
        if record is None:
            raise TaskNotFoundError(data={"taskId": task_id})
        return record

    async def context_agent(self, context_id: str, *, space: str = ANONYMOUS) -> str | None:
        """The agent a context belongs to (``None`` for a context without tasks)."""
        return await self._router.context_agent(context_key(space, context_id))

    async def thread_values(self, context_id: str, *, space: str = ANONYMOUS) -> dict[str, Any]:
        """The graph state of a context's thread as its last checkpoint holds it."""
        return await self._router.thread_values(context_key(space, context_id))

    async def resubscribe(
        self, task_id: str, last_event_id: int | None, *, space: str = ANONYMOUS
    ) -> AsyncIterator[Event]:
        await self._owned(task_id, space)
        return await self._publisher.resubscribe(task_id, last_event_id)

    # ------------------------------------------------------------------ send / stream

    async def send(
        self, params: MessageSendParams, *, language: str | None = None, space: str = ANONYMOUS
    ) -> Task:
        """``language`` is the request's (``Accept-Language``); review texts use it."""
        turn = await self._begin(params, language=language, space=space)
        history_length = params.configuration.history_length if params.configuration else None
        if isinstance(turn, StoredTask):  # a retry of an answer already taken
            return response_copy(turn, history_length)
        if turn.blocking:
            await turn.done.wait()
            if turn.parked:  # waiting for a reviewer: wait a bounded time for the end
                await settled(turn.log, self._review_wait)
                record = await self._live.load(turn.record.id, space) or turn.record
                return response_copy(record, history_length)
        return response_copy(turn.record, history_length)

    async def stream(
        self, params: MessageSendParams, *, language: str | None = None, space: str = ANONYMOUS
    ) -> AsyncIterator[Event]:
        """Validates and starts the turn before returning; the iterator only delivers events."""
        turn = await self._begin(params, subscribe=True, language=language, space=space)
        if isinstance(turn, StoredTask):  # a retry of an answer already taken: the task as is
            return await self.resubscribe(turn.id, None, space=space)
        assert turn.subscription is not None
        return turn.subscription.__aiter__()

    async def _begin(
        self, params: MessageSendParams, *, subscribe: bool = False, language: str | None,
        space: str,
    ) -> Turn | StoredTask:
        """The turn the message starts, or the task it already answered (a retry)."""
        request = checked_request(params, self._served, language, space)
        located = await self._router.locate(request)
        if located.replayed is not None:
            return located.replayed
        try:
            claim = await self._claims.acquire(context_key(space, located.context_id))
        except ClaimTaken as taken:  # told with the client's own context id, never the key
            await self._router.refuse_if_stale(request, located.context_id)
            raise busy_error(located.context_id, taken.task_id) from None
        try:
            plan = await self._router.plan(request, located.context_id)
            await check_task_bytes(plan.record, self._limits, self._storage.checkpointer)
            remember_reviews(plan.record, request.added_reviews)
            turn = Turn.of(plan, self._publisher.open(plan.record.id, plan.record.event_seq),
                           claim, blocking=request.blocking)
        except BaseException:
            await self._claims.release(claim)
            raise
        turn.settings = run_settings(plan.record, catalog.resolve(language))
        if subscribe:
            turn.subscription = turn.log.subscribe()
        await self._worker.start(turn)
        return turn

    # ------------------------------------------------------------------ cancel

    async def cancel(self, task_id: str, *, space: str = ANONYMOUS) -> Task:
        record = await self._owned(task_id, space)
        stopped = await self._worker.cancel(task_id)
        if stopped is not None:
            if stopped.record.state != "canceled":
                raise TaskNotCancelableError(
                    data={"taskId": task_id, "state": stopped.record.state}
                )
            return response_copy(stopped.record)
        if record.state in TERMINAL_STATES:
            raise TaskNotCancelableError(data={"taskId": task_id, "state": record.state})
        try:
            claim = await self._claims.acquire(record.context_key)  # routing, or asking
        except ClaimTaken as taken:
            if not self._relay.reaches_others:
                raise busy_error(record.context_id, taken.task_id) from None
            return await cancel_elsewhere(self._relay, self._store, record, self._cancel_wait)
        served = self._served.get(record.agent_id) or next(iter(self._served.values()))
        await self._worker.report(Plan(record, served, runs=False), claim, "canceled")
        return response_copy(record)

    async def _cancel_here(self, task_id: str) -> None:
        """Another replica asks: cancel the turn if it runs in this process."""
        await self._worker.cancel(task_id)

