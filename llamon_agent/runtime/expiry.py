"""Deadlines on what a task waits for: set when the task starts waiting, shown to the client.

When a task stops in ``input-required`` (a question, a tool review), ``stamp`` gives it the
deadline its agent's ``WaitPolicy`` or the question itself names, and writes ``expires_at``
into the ``hitl`` data part of its status message: inside a question's payload (seed 004's
payload is a superset anyway), beside ``action_requests`` and ``review_configs`` for a tool
review (never inside seed 000's payload). Asking the same question again (a re-ask, recovery)
keeps its deadline; a new question gets its own. The sweeper applies it (``deadlines.py``).
"""

from __future__ import annotations

from typing import Any

from ..a2a.types import DataPart, Message, Part
from ..core.clock import iso
from ..core.deadlines import (
    AnswerWith,
    Cancel,
    Deadline,
    OnExpiry,
    Reject,
    WaitPolicy,
    expiry_from_json,
    seconds_of,
)
from ..core.hitl import DEADLINE_FIELD
from ..core.hitl_graph import public_payload
from ..stores.base import Expiry, StoredTask
from ..tool_review.payload import is_review_request
from .served import ServedAgent

__all__ = ["EXPIRES_AT", "deadline_for", "stamp"]

#: the key of the deadline in a ``hitl`` data part and in the REST responses
EXPIRES_AT = "expires_at"


def deadline_for(value: Any, policy: WaitPolicy) -> Deadline | None:
    """The deadline of an interrupt ``value`` under ``policy``: the value's own (a question's
    ``expires_in``/``on_expiry``, a reviewed tool's ``InterruptOnConfig.expires_in``) first."""
    own = value.get(DEADLINE_FIELD) if isinstance(value, dict) else None
    own = own if isinstance(own, dict) else {}
    review = is_review_request(public_payload(value))
    fallback = policy.tool_reviews if review else policy.questions
    seconds = own.get("in")
    if seconds is None and fallback is not None:
        seconds = fallback.seconds
    if seconds is None:
        return None
    then: OnExpiry
    if "then" in own and not review:
        then = expiry_from_json(own["then"])
    elif fallback is not None:
        then = fallback.then
    else:
        then = Reject() if review else Cancel()
    if review and isinstance(then, AnswerWith):  # a deadline never approves
        then = Reject()
    return Deadline(seconds_of(seconds), then)


def stamp(record: StoredTask, served: ServedAgent) -> None:
    """Set (or keep, or clear) the deadline of what ``record`` waits for, and show it."""
    asked = record.pending_interrupt
    if record.state != "input-required" or asked is None:
        record.deadline = None
        return
    if record.deadline is None or record.deadline.interrupt_id != asked:
        value = next((p.value for p in record.pending if p.id == asked), None)
        rule = deadline_for(value, served.agent.wait_policy)
        record.deadline = (
            None if rule is None else Expiry(asked, iso(rule.at(served.clock())), rule.then)
        )
    if record.deadline is not None:
        status = record.task.status
        if status.message is not None:
            message = _shown(status.message, record.deadline.at)
            record.task = record.task.model_copy(
                update={"status": status.model_copy(update={"message": message})}
            )


def _shown(message: Message, expires_at: str) -> Message:
    parts: list[Part] = []
    for part in message.parts:
        if isinstance(part, DataPart) and isinstance(part.data.get("hitl"), dict):
            hitl = {**part.data["hitl"], EXPIRES_AT: expires_at}
            part = part.model_copy(update={"data": {**part.data, "hitl": hitl}})
        parts.append(part)
    return message.model_copy(update={"parts": parts})
