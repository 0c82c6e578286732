"""What a turn is: the work one message, one reviewer decision or one recovery causes on a task.

A ``Plan`` says what the turn does (router, answer collection, recovery and reviewer decisions
return one and start nothing); a ``Turn`` is a plan in progress: its claim on the context, its
event log, whether a client waits for it, and the asyncio task that runs it (``worker.py``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.principal import principal_of_space, space_of
from ..core.run_context import RunContext, with_run_context
from ..stores.base import StoredTask
from ..stores.turn_writes import TurnWrites
from .claims import Claim
from .events import EventLog, Subscription
from .run_settings import RunSettings, run_settings
from .served import ServedAgent
from .task_reviews import SaveTask, TaskReviews

__all__ = ["Plan", "Turn", "config_for"]


@dataclass(eq=False)
class Plan:
    """What a turn will do to ``record``. ``graph_input`` is new input, a
    ``Command(resume=...)``, or ``None`` to continue a stopped run from its checkpoint. ``runs``
    is false for turns that only report a status (a re-ask, the next of several questions, a
    cancel, a recovered question)."""

    record: StoredTask
    served: ServedAgent
    graph_input: Any = None
    runs: bool = True
    #: the context's claim, when the part that made the plan already holds it (a takeover)
    claim: Claim | None = None
    #: the plan, read under the claim, found no task of the context stored: its thread has no
    #: checkpoint to read (``TurnWrites.thread_empty``)
    thread_empty: bool = False


@dataclass(eq=False)
class Turn:
    """A plan in progress, from its claim to its final event."""

    record: StoredTask
    served: ServedAgent
    graph_input: Any
    log: EventLog
    claim: Claim | None  # None for a turn recovery reports while nothing else can run
    blocking: bool = True
    runs: bool = True
    done: asyncio.Event = field(default_factory=asyncio.Event)
    runner: asyncio.Task[None] | None = None
    canceled: bool = False
    started: bool = False  # its runner began (a runner cancelled before that never runs)
    cancel_seen: bool = False  # the runner caught its cancel (no need to cancel it again)
    #: called once the turn's end is stored, before its final event is published (the worker
    #: gives the context's claim back there); it is given the turn rather than closing over
    #: it, so a turn is freed by reference counting, not left to the garbage collector
    on_stored: Callable[[Turn], Awaitable[None]] | None = None
    subscription: Subscription | None = None
    parked: bool = False  # the turn ended waiting for a reviewer (task stays ``working``)
    settings: RunSettings | None = None  # the request's part of the runs' context
    observed: str | None = None  # the last state the observer was told of
    #: what the turn's saves commit together (``stores/turn_writes.py``); the worker makes it
    #: when the request did not (a fresh context's request does, for its claim)
    writes: TurnWrites | None = None

    @classmethod
    def of(cls, plan: Plan, log: EventLog, claim: Claim | None, *, blocking: bool = True,
           writes: TurnWrites | None = None) -> Turn:
        return cls(plan.record, plan.served, plan.graph_input, log, claim, blocking, plan.runs,
                   writes=writes)

    @property
    def seen_early(self) -> bool:
        """Does a client learn this task's id before the turn ends (so it must be stored)?"""
        return self.subscription is not None or not self.blocking

    def run_context(self, *, save: SaveTask) -> RunContext:
        """The context of this turn's run: the server's part, the request's, the task id;
        its review port stores the task with ``save`` before the task's first review
        (``task_reviews.py``)."""
        settings = self.settings or run_settings(self.record)
        principal = principal_of_space(self.record.space)
        children = self.served.children
        reviews = self.served.context.reviews
        return RunContext(
            language=settings.language,
            interrupt_on=settings.interrupt_on,
            task_id=self.record.id,
            agent_id=self.served.agent.id,
            reviews=TaskReviews(reviews, self.record, save) if reviews is not None else None,
            children=(children.bound(space_of(principal, internal=True), self.record.id)
                      if children else None),
            db=self.served.context.db,
            limits=self.served.context.limits,
            principal=principal,
            context_id=self.record.context_id,
        )


def config_for(context_id: str, context: RunContext | None = None) -> dict[str, Any]:
    """The LangGraph config of a context's runs; nodes read ``context`` with ``run_context``."""
    configurable: dict[str, Any] = {"thread_id": context_id}
    if context is not None:
        configurable = with_run_context(configurable, context)
    return {"configurable": configurable}
