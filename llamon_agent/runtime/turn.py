"""One turn of a task: what it runs, how it ends, and what the agent's side says."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import orjson
from langgraph.pregel import Pregel

from ..a2a.types import Artifact, DataPart, Message, Part, Task, TextPart
from ..agent import Agent
from ..core.run_context import RunContext, with_run_context
from ..errors import InvalidAgentResponseError
from ..reviewer.node import is_review_wait
from ..stores.base import Pending, StoredTask
from . import messages
from .events import EventLog, Subscription
from .runner import TurnOutcome

__all__ = [
    "Ending",
    "Pending",
    "ServedAgent",
    "Turn",
    "answered_history",
    "config_for",
    "ending_of",
    "failure_message",
    "rejection_message",
    "response_copy",
    "waiting_message",
]


@dataclass
class ServedAgent:
    agent: Agent
    graph: Pregel[Any, Any, Any, Any]
    input_keys: frozenset[str] | None


@dataclass(eq=False)
class Turn:
    """From routing a message to the turn's final event.

    ``graph_input`` is new input, a ``Command(resume=...)``, or ``None`` to continue a stopped
    run from its checkpoint. ``runs`` is false for turns that only report a status (a re-ask,
    the next of several questions, a cancel, a recovered question).
    """

    record: StoredTask
    served: ServedAgent
    graph_input: Any
    log: EventLog
    blocking: bool = True
    runs: bool = True
    done: asyncio.Event = field(default_factory=asyncio.Event)
    runner: asyncio.Task[None] | None = None
    canceled: bool = False
    subscription: Subscription | None = None
    parked: bool = False  # the turn ended waiting for a reviewer (task stays ``working``)
    settings: RunContext | None = None  # the request's part of the runs' context

    @property
    def seen_early(self) -> bool:
        """Does a client learn this task's id before the turn ends (so it must be stored)?"""
        return self.subscription is not None or not self.blocking


@dataclass(frozen=True)
class Ending:
    """How a turn ends. ``final`` is false only for a task parked in ``working`` while a
    reviewer decides (its stream stays open; the reviewer's decision starts the next turn)."""

    state: str
    message: Message | None = None
    artifact: Artifact | None = None
    pending: tuple[Pending, ...] = ()
    final: bool = True

    @property
    def parked(self) -> bool:
        return not self.final


def config_for(context_id: str, context: RunContext | None = None) -> dict[str, Any]:
    """The LangGraph config of a context's runs; nodes read ``context`` with ``run_context``."""
    configurable: dict[str, Any] = {"thread_id": context_id}
    if context is not None:
        configurable = with_run_context(configurable, context)
    return {"configurable": configurable}


def ending_of(outcome: TurnOutcome, record: StoredTask, language: str | None = None) -> Ending:
    """How a finished graph turn ends the task; raises on output that cannot go on the wire."""
    if outcome.interrupts:
        pending = tuple(Pending(i.id, i.value) for i in outcome.interrupts)
        try:
            orjson.dumps([p.value for p in pending])
        except TypeError as exc:
            raise InvalidAgentResponseError(
                f"Invalid agent response: the question is not JSON ({exc})"
            ) from exc
        asked = pending[0]
        if is_review_wait(asked.value):
            return Ending("working", waiting_message(asked.value, record), pending=pending, final=False)
        question = messages.question_message(
            asked.value, asked.id, record.id, record.context_id, language=language
        )
        return Ending("input-required", question, pending=pending)
    artifact = messages.result_artifact(outcome.result, outcome.texts)
    reply = None
    if outcome.texts:
        reply = messages.agent_message(
            [TextPart(kind="text", text="\n\n".join(outcome.texts))], record.id, record.context_id
        )
    return Ending("completed", reply, artifact)


def waiting_message(value: dict[str, Any], record: StoredTask) -> Message:
    parts: list[Part] = [
        TextPart(kind="text", text="A reviewer is checking the answer."),
        DataPart(kind="data", data={"review": {"id": value.get("review_id")}}),
    ]
    return messages.agent_message(parts, record.id, record.context_id)


def rejection_message(reason: str, record: StoredTask) -> Message:
    return messages.agent_message(
        [TextPart(kind="text", text=reason)], record.id, record.context_id
    )


def failure_message(exc: BaseException, record: StoredTask) -> Message:
    text = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return messages.agent_message(
        [TextPart(kind="text", text=f"The agent failed: {text}")], record.id, record.context_id
    )


def response_copy(record: StoredTask, history_length: int | None = None) -> Task:
    """The response copy of a task; ``historyLength`` never touches what is stored."""
    task = record.task
    if history_length is None or task.history is None:
        return task
    history = task.history[-history_length:] if history_length else None
    return task.model_copy(update={"history": history})


def answered_history(record: StoredTask, message: Message) -> list[Message]:
    """History after an answer: the question that was asked, then the answer."""
    inbound = message.model_copy(update={"task_id": record.id, "context_id": record.context_id})
    history = list(record.task.history or [])
    if record.task.status.message is not None:
        history.append(record.task.status.message)
    history.append(inbound)
    return history
