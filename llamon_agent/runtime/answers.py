"""What a user's message means to the graph: new input, or answers to pending questions."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from langchain_core.messages import HumanMessage

from ..a2a.types import Message
from ..core.bounds import Limits
from ..core.hitl import INTERRUPT_ID, MAX_INTERRUPT_ID
from ..core.hitl_graph import CLEAR, REQUEST_KEY, public_payload
from ..core.principal import principal_of_space
from ..errors import InvalidParamsError, ReviewPendingError
from ..stores.base import Pending, StoredTask
from ..tool_review import catalog
from ..tool_review.decisions import validate_decisions
from ..tool_review.payload import is_review_request

__all__ = [
    "answered_by",
    "answers_in",
    "bound_interrupt",
    "carries_decisions",
    "graph_input",
    "remember_answer",
    "review_resume",
]

DECISIONS = "decisions"
_MAX_ANSWERED = 16  # a retry comes soon after its answer: the last few questions are enough

_INTERRUPT_ID = re.compile(r"^[0-9a-f]{32}$")


def graph_input(
    record: StoredTask, message: Message, input_keys: frozenset[str] | None
) -> dict[str, Any]:
    """Documented input keys; only those in the graph's input schema are passed."""
    candidate: dict[str, Any] = {
        "messages": [HumanMessage(content=message.text(), id=message.message_id)],
        "thread_id": record.context_id,
        "a2a_principal": principal_of_space(record.space),
        "a2a_task_id": record.id,
        "a2a_message_id": message.message_id,
        "a2a_data": message.data(),
        "a2a_metadata": dict(message.metadata or {}),
        REQUEST_KEY: {CLEAR: None},  # a canceled turn may have left a routed question behind
    }
    if input_keys is None:
        return candidate
    return {k: v for k, v in candidate.items() if k in input_keys}


def answers_in(message: Message, pending: Sequence[Pending], asked: Pending) -> dict[str, Any]:
    """The answer(s) a message carries, keyed by interrupt id.

    Accepted: a data part ``{"decisions": [...]}`` (a tool review's answer, kept whole); a data
    part ``{"value": v}``; a data part ``{"resume": v}`` or an id-keyed map
    ``{"resume": {interrupt_id: v}}`` (LangGraph server's form); else the text parts.
    Unknown interrupt ids are refused (LangGraph would silently ignore them).
    """
    for data in message.data():
        if DECISIONS in data:
            return {asked.id: {DECISIONS: data[DECISIONS]}}
        if "value" in data:
            return {asked.id: data["value"]}
        if "resume" in data:
            resume = data["resume"]
            if isinstance(resume, Mapping) and resume and all(
                isinstance(k, str) and _INTERRUPT_ID.match(k) for k in resume
            ):
                known = {p.id for p in pending}
                unknown = sorted(set(resume) - known)
                if unknown:
                    raise InvalidParamsError(
                        "Unknown interrupt id: not pending on this task",
                        data={"unknown": unknown, "pending": sorted(known)},
                    )
                return dict(resume)
            return {asked.id: resume}
    text = message.text()
    if not text.strip():
        raise InvalidParamsError(
            "The task is waiting for an answer: send a text part or a data part {\"value\": ...}"
        )
    return {asked.id: text}


def bound_interrupt(message: Message) -> str | None:
    """The question a message answers, when it says (``metadata.interruptId``).

    Plain text cannot say which question it answers: a client that retries after a timeout
    would answer the next question with it. Bound to an interrupt id, an answer can be told
    apart from its own retry (same ``messageId``) and from a stale copy (another one)."""
    value = (message.metadata or {}).get(INTERRUPT_ID)
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_INTERRUPT_ID:
        raise InvalidParamsError(
            f"metadata.{INTERRUPT_ID} must be a non-empty string of at most "
            f"{MAX_INTERRUPT_ID} characters (the interruptId of the question answered)",
            data={"field": f"message.metadata.{INTERRUPT_ID}"},
        )
    return value


def answered_by(record: StoredTask, interrupt_id: str) -> str | None:
    """The id of the message that answered ``interrupt_id`` on this task, if remembered."""
    return record.answered.get(interrupt_id)


def remember_answer(record: StoredTask, interrupt_id: str, message_id: str) -> None:
    """Note which message answered which question (the last ``_MAX_ANSWERED`` of them), so a
    retry of it is recognised. Kept only when the turn that took the answer is stored."""
    answered = {k: v for k, v in record.answered.items() if k != interrupt_id}
    answered[interrupt_id] = message_id
    record.answered = dict(list(answered.items())[-_MAX_ANSWERED:])


def carries_decisions(message: Message) -> bool:
    """Does the message answer a tool review (a data part ``{"decisions": ...}``)?"""
    return any(DECISIONS in data for data in message.data())


def is_review(pending: Pending) -> bool:
    return is_review_request(public_payload(pending.value))


def review_resume(
    pending: Pending, raw: Any, language: str | None, limits: Limits | None = None
) -> dict[str, Any]:
    """The resume value ``{"decisions": [...]}`` for a pending tool review, checked first.

    A text answer is refused with ``ReviewPendingError`` (seed 000: no new message while
    actions wait); decisions that do not fit are refused by ``validate_decisions``. Both are
    ``-32602`` on the wire and nothing is resumed or stored.
    """
    if not isinstance(raw, Mapping) or DECISIONS not in raw:
        raise ReviewPendingError(catalog.text("review_pending", language))
    decisions = validate_decisions(
        raw[DECISIONS], public_payload(pending.value), language=language, limits=limits
    )
    return {DECISIONS: decisions}
