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
from ..core.deadlines import Deadline
from ..core.ids import random_id
from ..core.ports import HumanReviewPort
from ..core.principal import ANONYMOUS, context_key
from ..errors import TaskNotCancelableError, TaskNotFoundError
from ..push.service import PushNotifications
from ..stores.base import Expiry, StoredTask, TaskCursor, TaskPage, TaskQuery
from ..stores.storage import Storage
from ..stores.turn_writes import TurnWrites, commits_held_writes
from .cancel_relay import CancelRelay, LocalCancelRelay
from .child_cancel import cancel_children
from .children import ChildCall
from .claims import ClaimTaken, ContextClaims, LocalClaims, busy_refusal
from .context_deletion import ContextDeletion, DeletedContext
from .deadlines import (
    DeadlineJob,
    DraftDeadlineJob,
    cancel_note,
    expiry_message,
    mark_expired,
)
from .erasure import Erasure
from .events import Event, settled
from .live import LiveTurns
from .messages import response_copy
from .observer import NO_OBSERVER, TaskObserver
from .publisher import EventPublisher, LocalPublisher
from .recovery import LeaseRecovery, LocalRecovery, Recovery
from .remote_cancel import cancel_elsewhere
from .requests import Request, checked_request
from .resumer import Resumer
from .retention import Retention
from .review_decisions import ReviewDecisions
from .router import Router
from .run_settings import remember_reviews, run_settings
from .served import ServedAgent, checked_agents, serve_agents
from .sweeper import Sweeper
from .task_bound import check_task_bytes, state_meter
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
        cancel_wait: float = 10.0, sweeper: Sweeper | None = None,
        draft_deadline: Deadline | None = None, retention: float | None = None,
        push: PushNotifications | None = None,
    ) -> None:
        """Replicas pass shared ``claims``, ``publisher`` and ``cancel_relay`` and a
        ``takeover_every`` period: recovery then takes over only runs whose claim is free
        (``LeaseRecovery``), at start and every period; without it, recovery takes every
        unfinished task once at start (one server). A cancel of a run on another replica waits
        up to ``cancel_wait`` seconds for it to end. With ``retention`` (seconds), the sweeper
        deletes tasks that ended longer ago (``retention.py``). ``push`` delivers push
        notifications: it hears of every stored write, retries from the sweeper and deletes
        with the tasks (without it, a push config is ``-32003``)."""
        self._agents = checked_agents(agents)
        self._storage = storage
        self._state_meter = state_meter(storage.checkpointer)
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
        #: deadlines, push retries and retention (``sweeper.py``); its clock is the runtime's
        self.sweeper = sweeper or Sweeper()
        self._router = Router(self._served, self._agents[0].id, self._store, self._live,
                              self._limits, max_waiting_tasks, clock=self.sweeper.clock)
        decisions = (
            ReviewDecisions(reviews, self._store, self._served, self._live) if reviews else None
        )
        self._worker = TurnWorker(
            self._publisher, self._claims, self._live, shutdown_grace=shutdown_grace,
            on_parked=lambda record: self._resumer.apply_decided(record), observer=observer,
            hold_checkpoints=commits_held_writes(self._store, storage.checkpointer),
        )
        self._resumer = Resumer(self._claims, self._publisher, self._worker, decisions,
                                self._recovery)
        self.sweeper.add(DeadlineJob(self._store, self._expire))
        if reviews is not None and draft_deadline is not None:
            self.sweeper.add(DraftDeadlineJob(reviews, draft_deadline, self._cancel_draft))
        #: what goes with deleted tasks; ``erasure.also_delete(hook)`` adds what another part
        #: keeps per task (push notification configs and deliveries)
        self.erasure = Erasure(storage.checkpointer, reviews, self._publisher)
        self._contexts = ContextDeletion(self._store, self._claims, self.erasure,
                                         [agent.id for agent in self._agents])
        if retention is not None:
            self.sweeper.add(Retention(self._store, self._claims, self.erasure, retention))
        self.push = push
        if push is not None:
            self._publisher.on_saved(push.saved)
            self.erasure.also_delete(push.delete_tasks)
            self.sweeper.add(push)
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
                clock=self.sweeper.clock,
            ))
            await self._stack.enter_async_context(self._worker)
            if self._reviews is not None:
                self._stack.callback(self._reviews.on_decision(self._resumer.on_review_decision))
            self._stack.callback(self._relay.listen(self._cancel_here))
            await self._resumer.recover()
            if self._takeover_every is not None:
                await self._stack.enter_async_context(
                    self._resumer.sweeping(self._takeover_every))
            await self._stack.enter_async_context(self.sweeper)
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

    async def list_tasks(
        self, query: TaskQuery, limit: int, after: TaskCursor | None = None, *,
        history: int | None = None,
    ) -> TaskPage:
        """The tasks of ``query.space``, last updated first (A2A v1.0's ``ListTasks``), each
        with at least its last ``history`` messages (None: all). Every state change is saved
        before it is told, so the store is as new as any stream."""
        return await self._store.list_tasks(query, limit, after, history=history)

    async def owned(self, task_id: str, *, space: str = ANONYMOUS) -> StoredTask:
        """The caller's task as the runtime holds it (the live record while a turn runs);
        ``TaskNotFoundError`` for another space's task as for an unknown one."""
        return await self._owned(task_id, space)

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
        request = checked_request(params, self._served, language, space,
                                  push=self.push is not None)
        return await self._begin_request(request, subscribe=subscribe)

    async def _begin_request(self, request: Request, *, subscribe: bool = False) -> Turn | StoredTask:
        space, language = request.space, request.language
        located = await self._router.locate(request)
        if located.replayed is not None:
            return located.replayed
        # the claim is taken with the task the turn is for: the one the message names, else the
        # id a new task will get (the plan uses it), so the claim row is written once with it;
        # an answer without taskId resumes the context's waiting task instead, whose id the
        # turn then gives the claim (``TurnWorker.start``)
        task_id = request.message.task_id or random_id()
        key = context_key(space, located.context_id)
        writes = TurnWrites(key)
        try:
            claim = await (self._claims.claim_fresh(key, task_id, writes) if located.fresh
                           else self._claims.acquire_for(key, task_id, writes))
        except ClaimTaken as taken:  # told with the client's own context id, never the key
            if located.unread:  # a wrong task id is told as such, busy or not
                await self._router.check_named(request)
            await self._router.refuse_if_stale(request, located.context_id)
            raise await busy_refusal(self._store, context_key(space, located.context_id),
                                     located.context_id, taken) from None
        try:
            plan = await self._router.plan(request, located.context_id, new_task_id=task_id,
                                           fresh=located.fresh, latest=writes.latest)
            writes.thread_empty = plan.thread_empty
            if request.expiring is not None:
                mark_expired(plan.record, request.expiring)
            # a context drawn for this message has no graph state to measure: none can exist;
            # nor has one with no stored task whose turn holds its checkpoint writes, since a
            # held checkpoint is stored only with its task's row (``stores/turn_writes.py``:
            # the run reads none either)
            unmeasured = located.fresh or (
                plan.thread_empty and self._worker.holds_checkpoints(plan.served))
            await check_task_bytes(plan.record, self._limits,
                                   None if unmeasured else self._state_meter)
            remember_reviews(plan.record, request.added_reviews)
            if request.push_config is not None and self.push is not None:
                # before the turn runs: its first change is told
                await self.push.set(plan.record, request.push_config,
                                    "params.configuration.pushNotificationConfig")
            turn = Turn.of(plan, self._publisher.open(plan.record.id, plan.record.event_seq),
                           claim, blocking=request.blocking, writes=writes)
        except BaseException:
            await self._claims.release(claim)
            raise
        turn.settings = run_settings(plan.record, language)
        if subscribe:
            turn.subscription = turn.log.subscribe()
        await self._worker.start(turn)
        return turn

    # ------------------------------------------------------------------ cancel

    async def cancel(self, task_id: str, *, space: str = ANONYMOUS) -> Task:
        record = await self._owned(task_id, space)
        in_flight = self._child_calls(record)
        stopped = await self._worker.cancel(task_id)
        if stopped is not None:
            if stopped.record.state != "canceled":
                raise TaskNotCancelableError(
                    data={"taskId": task_id, "state": stopped.record.state}
                )
            await self.cancel_children(stopped.record, in_flight)
            return response_copy(stopped.record)
        if record.state in TERMINAL_STATES:
            raise TaskNotCancelableError(data={"taskId": task_id, "state": record.state})
        try:
            claim = await self._claims.acquire(record.context_key)  # routing, or asking
        except ClaimTaken as taken:
            if not self._relay.reaches_others:
                raise await busy_refusal(self._store, record.context_key, record.context_id,
                                         taken) from None
            return await cancel_elsewhere(self._relay, self._store, record, self._cancel_wait)
        served = self._served.get(record.agent_id) or next(iter(self._served.values()))
        await self._worker.report(Plan(record, served, runs=False), claim, "canceled")
        await self.cancel_children(record)
        return response_copy(record)

    async def cancel_children(
        self, record: StoredTask, in_flight: Sequence[ChildCall] = ()
    ) -> None:
        """Cancel the child tasks of ``record``, an orchestrator's task just canceled (by a
        client, or by a deadline whose policy cancels): the children it waits on, as its
        checkpoint remembers them, and ``in_flight``, the calls its turn had in flight
        (``_child_calls``, read before that turn was cancelled). Best effort, bounded by each
        remote child's timeouts; never raises for a child (``child_cancel.py``)."""
        served = self._served.get(record.agent_id)
        if served is not None:
            await cancel_children(record, served, self._live, self._store, in_flight)

    def _child_calls(self, record: StoredTask) -> list[ChildCall]:
        served = self._served.get(record.agent_id)
        children = served.children if served is not None else None
        return children.calls_of(record.id) if children is not None else []

    # ------------------------------------------------------------------ deadlines

    async def _expire(self, record: StoredTask) -> bool:
        """Apply the deadline of what ``record`` waits for (the sweeper found it passed):
        answer with the default, reject the tool calls, or cancel, as if a person had. A
        context busy meanwhile, or a question answered meanwhile, raises an ``A2AError`` and
        changes nothing (another replica's sweeper may have acted first). False: nothing was
        done here (no deadline, or another replica's copy of the same answer was taken)."""
        deadline = record.deadline
        if deadline is None:
            return False
        message = expiry_message(record, deadline)
        if message is None:  # Cancel
            return await self._cancel_expired(record, deadline)
        request = Request(message=message, agent_hint=None, added_reviews={}, blocking=False,
                          history_length=None, language=None, space=record.space,
                          expiring=deadline.interrupt_id)
        return isinstance(await self._begin_request(request), Turn)

    async def _cancel_expired(self, record: StoredTask, deadline: Expiry) -> bool:
        served = self._served.get(record.agent_id) or next(iter(self._served.values()))
        try:
            claim = await self._claims.acquire(record.context_key)
        except ClaimTaken:  # a turn or another replica's sweep holds it: the next sweep sees
            return False
        try:
            current = await self._store.get(record.id)
            if (current is None or current.state != "input-required"
                    or current.pending_interrupt != deadline.interrupt_id):
                await self._claims.release(claim)
                return False  # answered or ended meanwhile
            current.note_expired(deadline.interrupt_id)
        except BaseException:
            await self._claims.release(claim)
            raise
        note = cancel_note(current, deadline)
        await self._worker.report(Plan(current, served, runs=False), claim, "canceled", note)
        await self.cancel_children(current)  # an orchestrator's children end with it
        return True

    async def _cancel_draft(self, task_id: str, context_id: str) -> None:
        """A draft's deadline cancels its task (the sweeper does not know its owner)."""
        record = await self._store.get(task_id)
        if record is not None and record.state not in TERMINAL_STATES:
            await self.cancel(task_id, space=record.space)

    # ------------------------------------------------------------------ deletion

    async def delete_context(self, context_id: str, *, space: str = ANONYMOUS) -> DeletedContext:
        """Delete ``space``'s context ``context_id`` with every task of it, its checkpoints
        and its children's conversations (``context_deletion.py``): ``TaskNotFoundError`` for
        an unknown context, the busy ``-32004`` while a turn runs in it."""
        return await self._contexts.delete(context_id, space)

    async def _cancel_here(self, task_id: str) -> None:
        """Another replica asks: cancel the turn if it runs in this process (and its children:
        its calls in flight are known here only)."""
        running = self._live.get(task_id)
        in_flight = self._child_calls(running.record) if running is not None else []
        stopped = await self._worker.cancel(task_id)
        if stopped is not None and stopped.record.state == "canceled":
            await self.cancel_children(stopped.record, in_flight)

