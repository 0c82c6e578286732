"""Routing: which task a message is for, and what it asks of it. Returns values; starts nothing.

::

    locate()  the context (from taskId, contextId, or a new one) and, for an answer bound to
              its question (metadata.interruptId), the task it already answered: a retry.
              A message naming both its task and its context is not read here: ``plan``
              reads its task under the claim and checks what this read would have checked
    plan()    under the context's claim: new input (a new task), an answer (collect.py:
              resume, ask the next question, or ask again), or a refusal
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..a2a.types import RUNNING_STATES, TERMINAL_STATES, Message, Task
from ..core.bounds import Limits
from ..core.clock import Clock, iso, system_clock
from ..core.hitl import INTERRUPT_ID
from ..core.ids import random_id
from ..core.principal import context_key
from ..errors import (
    InvalidParamsError,
    NoPendingReviewError,
    QuestionExpiredError,
    QuotaExceededError,
    StaleAnswerError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from ..stores.base import StoredTask, TaskStore
from ..stores.kept_tasks import message_ids
from ..stores.turn_writes import UNREAD, Unread
from ..tool_review import catalog
from . import messages
from .answers import answered_by, bound_interrupt, carries_decisions, graph_input
from .claims import busy_error
from .collect import collect_answer
from .live import LiveTurns
from .requests import Request
from .served import ServedAgent
from .turn import Plan, config_for

__all__ = ["Located", "Router"]


@dataclass(frozen=True)
class Located:
    """Where a message goes: its context, and the task it already answered (a retry).
    ``unread``: the task the message names was not read to find its context (the message
    names that too); ``plan`` reads it under the claim, ``check_named`` on a busy refusal."""

    context_id: str
    replayed: StoredTask | None = None
    unread: bool = False
    #: the context was drawn here for a message that named none: nothing of it is stored
    fresh: bool = False


class Router:
    def __init__(
        self, served: Mapping[str, ServedAgent], default_agent: str, store: TaskStore,
        live: LiveTurns, limits: Limits, max_waiting: int | None = None,
        clock: Clock = system_clock,
    ) -> None:
        self._served = served
        self._default = default_agent
        self._store = store
        self._live = live
        self._limits = limits
        self._max_waiting = max_waiting
        self._clock = clock

    async def locate(self, request: Request) -> Located:
        message = request.message
        if (message.task_id is not None and message.context_id is not None
                and (message.metadata or {}).get(INTERRUPT_ID) is None):
            # the usual answer: its task is read once, under the claim (``plan``)
            return Located(message.context_id, unread=True)
        if message.task_id is not None:
            context_id = (await self.check_named(request)).context_id
        else:
            context_id = message.context_id or random_id()
        bound = bound_interrupt(message)
        if bound is None:
            return Located(context_id, fresh=message.context_id is None
                           and message.task_id is None)
        # looked at before the claim: a retry that arrives while its answer's turn still runs
        # is answered with the task as it stands, not "busy"
        return Located(context_id, await self._replayed(request, context_id, bound))

    async def check_named(self, request: Request) -> StoredTask:
        """The task the message names, as it stands, when it is the caller's and in the
        context the message names (if it names one); raises what the client is told otherwise."""
        message = request.message
        assert message.task_id is not None
        found = await self._live.load(message.task_id, request.space)
        if found is None:
            raise _not_found(message.task_id)
        _check_context(message, found)
        return found

    async def _replayed(self, request: Request, context_id: str, bound: str) -> StoredTask | None:
        """The task (live or stored) on which this very message already answered ``bound``."""
        message, space = request.message, request.space
        task_id = message.task_id
        if task_id is None:
            latest = await self._store.latest_in_context(context_key(space, context_id))
            task_id = latest.id if latest is not None else None
        record = await self._live.load(task_id, space) if task_id is not None else None
        if record is not None and answered_by(record, bound) == message.message_id:
            return record
        return None

    async def refuse_if_stale(self, request: Request, context_id: str) -> None:
        """Raise ``StaleAnswerError`` when the message answers a question that is no longer
        asked, as ``plan`` would. Asked when the context is busy: an answer whose question was
        taken is stale for good, and saying so beats "busy" (on replicas another copy may hold
        the claim only to be refused as stale itself)."""
        if bound_interrupt(request.message) is None:
            return
        latest = await self._store.latest_in_context(context_key(request.space, context_id))
        try:
            target = await self._target(request.message, latest, request.space)
        except TaskNotFoundError:
            return  # not stored yet: the turn that holds the context decides
        self._refuse_expired(request, target, latest)
        self._check_target(request.message, context_id, target, latest)

    async def context_agent(self, key: str) -> str | None:
        latest = await self._store.latest_in_context(key)
        return latest.agent_id if latest is not None else None

    async def thread_values(self, key: str) -> dict[str, Any]:
        owner = await self.context_agent(key)
        served = self._served.get(owner) if owner is not None else None
        if served is None:
            return {}
        snapshot = await served.graph.aget_state(config_for(key))  # type: ignore[arg-type]
        return dict(snapshot.values) if isinstance(snapshot.values, dict) else {}

    async def plan(
        self, request: Request, context_id: str, *, new_task_id: str | None = None,
        fresh: bool = False, latest: StoredTask | Unread | None = UNREAD,
    ) -> Plan:
        """Called with the context claimed, so the tasks it reads cannot change meanwhile.
        ``new_task_id``: the id of the task the message starts, if it starts one (drawn by
        the caller before it took the claim, so that the claim names it from the start).
        ``fresh``: the context was drawn for this message (``Located.fresh``): no task of it
        can be stored, so none is read. ``latest``: the context's latest task, when it was read
        with the claim (``ContextClaims.acquire_for``)."""
        message, hint = request.message, request.agent_hint
        if fresh:
            latest = None
        elif latest is UNREAD:
            latest = await self._store.latest_in_context(context_key(request.space, context_id))
        target = await self._target(message, latest, request.space)  # a named task first
        owner = latest.agent_id if latest is not None else None
        if hint is not None and owner is not None and hint != owner:
            raise InvalidParamsError(
                f"Context {context_id} belongs to agent {owner!r}, not {hint!r}",
                data={"contextId": context_id, "agentId": owner},
            )
        agent_id = owner or hint or self._default
        served = self._served.get(agent_id)
        if served is None:
            raise InvalidParamsError(
                f"Context {context_id} belongs to agent {agent_id!r}, which is not served here"
            )
        self._refuse_expired(request, target, latest)
        self._check_target(message, context_id, target, latest)
        if target is None:
            if carries_decisions(message):
                raise NoPendingReviewError(catalog.text("no_pending_review", request.language))
            await self._check_waiting_quota(request.space)
            plan = self._new_task(served, context_id, message, request.space,
                                  new_task_id or random_id())
            plan.thread_empty = latest is None
            return plan
        return await collect_answer(
            served, target, message, language=request.language, limits=self._limits
        )

    async def _target(
        self, message: Message, latest: StoredTask | None, space: str
    ) -> StoredTask | None:
        """The task the message is for: the one it names, else the context's open task."""
        if message.task_id is None:
            return latest if latest is not None and latest.state not in TERMINAL_STATES else None
        # the context's latest task, read under the claim, is the one an answer usually names
        target = latest if latest is not None and latest.id == message.task_id \
            else await self._store.get(message.task_id)
        if target is None or target.space != space:  # stored a moment ago, or lost with a
            # turn a restart dropped
            raise _not_found(message.task_id)
        _check_context(message, target)  # what ``locate`` left to this read (``unread``)
        return target

    async def _check_waiting_quota(self, space: str) -> None:
        """A caller with ``max_waiting_tasks`` tasks waiting for input starts no more."""
        maximum = self._max_waiting
        if maximum is None or await self._store.count_in_state(space, "input-required") < maximum:
            return
        raise QuotaExceededError(
            f"Quota exceeded: {maximum} tasks already wait for input; answer or cancel one",
            what="tasks waiting for input", quota="max_waiting_tasks", maximum=maximum,
        )

    def _refuse_expired(
        self, request: Request, target: StoredTask | None, latest: StoredTask | None
    ) -> None:
        """A late answer: to a question whose deadline passed (bound to it by ``interruptId``,
        or sent to the task while it still waits for the sweeper to act) changes nothing."""
        bound = bound_interrupt(request.message)
        shown = target or latest
        if bound is not None and shown is not None and bound in shown.expired:
            raise QuestionExpiredError(shown.id, bound, None)
        deadline = target.deadline if target is not None else None
        if (target is None or deadline is None or request.expiring is not None
                or target.state != "input-required"):
            return
        if deadline.at <= iso(self._clock()):  # the sweeper acts within one period
            raise QuestionExpiredError(target.id, deadline.interrupt_id, deadline.at)

    @staticmethod
    def _check_target(
        message: Message, context_id: str, target: StoredTask | None, latest: StoredTask | None
    ) -> None:
        bound = bound_interrupt(message)
        if bound is not None and (
            target is None or target.state in TERMINAL_STATES or target.pending_interrupt != bound
        ):
            # the question it answers was answered (by another message) or never asked here:
            # taking it would answer whatever is asked now (a task parked for a reviewer asks
            # nothing the client can answer)
            shown = target or latest
            raise StaleAnswerError(
                shown.id if shown is not None else None, bound,
                shown.pending_interrupt if shown is not None else None,
            )
        if target is None:
            return
        if target.state in TERMINAL_STATES:
            raise UnsupportedOperationError(
                f"Task {target.id} is in a terminal state: {target.state}",
                data={"taskId": target.id, "state": target.state,
                      "reason": "task is in a terminal state"},
            )
        if target.state in RUNNING_STATES:
            raise busy_error(context_id, target.id)
        if _delivered(message.message_id, target.task):
            raise UnsupportedOperationError(
                f"Message {message.message_id} was already delivered to task {target.id}",
                data={"taskId": target.id, "messageId": message.message_id,
                      "reason": "duplicate message"},
            )

    @staticmethod
    def _new_task(
        served: ServedAgent, context_id: str, message: Message, space: str, task_id: str
    ) -> Plan:
        inbound = message.model_copy(update={"task_id": task_id, "context_id": context_id})
        record = StoredTask(
            task=Task(
                id=task_id, context_id=context_id, status=messages.status("submitted"),
                history=[inbound],
            ),
            agent_id=served.agent.id,
            space=space,
        )
        return Plan(record, served, graph_input(record, inbound, served.input_keys))


def _not_found(task_id: str) -> TaskNotFoundError:
    return TaskNotFoundError(f"Task {task_id} was specified but does not exist",
                             data={"taskId": task_id})


def _check_context(message: Message, task: StoredTask) -> None:
    if message.context_id is not None and message.context_id != task.context_id:
        raise InvalidParamsError(
            "bad context id: the task belongs to another context",
            data={"taskId": task.id, "contextId": message.context_id},
        )


#: histories shorter than this are looked through (a few microseconds), not asked for their ids
_SHORT_HISTORY = 32


def _delivered(message_id: str, task: Task) -> bool:
    """Whether ``task``'s history holds a message with this id. A long one's ids come from the
    kept task's set (``stores/kept_tasks.py``): looking through 4,001 messages took 3 ms of the
    event loop an answer (bench/README.md, "Speed, round thirty-five")."""
    history = task.history or ()
    ids = message_ids(task) if len(history) >= _SHORT_HISTORY else None
    if ids is not None:
        return message_id in ids
    return any(m.message_id == message_id for m in history)
