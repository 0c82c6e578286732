"""How a turn ends: the task's next state, its message, its artifact, what it waits on."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from ..a2a.types import Artifact, DataPart, Message, Part, TextPart
from ..errors import InvalidAgentResponseError
from ..human_review.node import is_review_wait
from ..stores.base import Pending, StoredTask
from . import messages
from .runner import TurnOutcome

__all__ = ["Ending", "ending_of", "failure_message", "rejection_message", "waiting_message"]


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
