"""How long a person may take, and what happens when they take longer.

A question, a tool review and a reviewer's draft may each carry a deadline. When it passes,
the server's sweeper (``runtime/deadlines.py``) applies what the deadline says to do:

- ``AnswerWith(value)``: answer the question with ``value``, normalised as a person's answer
  would be (questions only);
- ``Reject(message)``: reject the tool calls or the draft, as a person rejecting them would;
  the model gets ``message`` as the tool's error result (tool reviews and drafts only);
- ``Cancel(message)``: cancel the task.

A deadline never approves: only a person may (seed 004 trusts only the authenticated
reviewer), so there is no "approve" action, and ``Deadline`` refuses ``AnswerWith`` for
reviews and ``Reject`` for questions.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

__all__ = [
    "DEFAULT_CANCEL_MESSAGE",
    "DEFAULT_REJECT_MESSAGE",
    "MAX_EXPIRES_IN",
    "AnswerWith",
    "Cancel",
    "Deadline",
    "OnExpiry",
    "Reject",
    "WaitPolicy",
    "expiry_from_json",
    "expiry_to_json",
    "seconds_of",
]

#: the longest wait a deadline may name (a year): beyond it, leave the deadline off
MAX_EXPIRES_IN = 366 * 24 * 3600.0
DEFAULT_REJECT_MESSAGE = "Nobody reviewed this in time, so it was rejected."
DEFAULT_CANCEL_MESSAGE = "Nobody answered in time, so the task was canceled."


@dataclass(frozen=True)
class AnswerWith:
    """Answer the expired question with ``value`` (a question's deadline only)."""

    value: Any


@dataclass(frozen=True)
class Reject:
    """Reject the expired tool calls or draft with ``message`` (reviews only)."""

    message: str = DEFAULT_REJECT_MESSAGE


@dataclass(frozen=True)
class Cancel:
    """Cancel the task whose question, review or draft expired."""

    message: str = DEFAULT_CANCEL_MESSAGE


OnExpiry = AnswerWith | Reject | Cancel
WaitKind = Literal["question", "review"]


def seconds_of(value: float | timedelta, what: str = "expires_in") -> float:
    """A wait in seconds, from a number or a ``timedelta``; ``ValueError`` unless it is finite,
    above 0 and at most ``MAX_EXPIRES_IN``."""
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        raise ValueError(f"{what} must be seconds (a number) or a timedelta, got {value!r}")
    if not (math.isfinite(seconds) and 0 < seconds <= MAX_EXPIRES_IN):
        raise ValueError(
            f"{what} must be above 0 and at most {MAX_EXPIRES_IN:.0f} seconds, got {value!r}"
        )
    return float(seconds)


def check_action(then: Any, kind: WaitKind) -> OnExpiry:
    """``then`` if it may end a wait of ``kind``; ``ValueError`` (naming why) otherwise."""
    if not isinstance(then, (AnswerWith, Reject, Cancel)):
        raise ValueError(f"a deadline's action is AnswerWith, Reject or Cancel, got {then!r}")
    if kind == "question" and isinstance(then, Reject):
        raise ValueError("a question's deadline answers with a default value or cancels "
                         "(AnswerWith or Cancel), it does not Reject")
    if kind == "review" and isinstance(then, AnswerWith):
        raise ValueError("a review's deadline rejects or cancels (Reject or Cancel): "
                         "a deadline never approves, only a person may")
    if isinstance(then, (Reject, Cancel)) and not (
        isinstance(then.message, str) and then.message.strip()
    ):
        raise ValueError("a Reject or Cancel needs a non-empty message")
    return then


@dataclass(frozen=True)
class Deadline:
    """Wait at most ``expires_in`` (seconds or a ``timedelta``), then do ``then``."""

    expires_in: float | timedelta
    then: OnExpiry = Cancel()

    def __post_init__(self) -> None:
        object.__setattr__(self, "expires_in", seconds_of(self.expires_in))
        check_action(self.then, "review" if isinstance(self.then, Reject) else "question")

    @property
    def seconds(self) -> float:
        assert isinstance(self.expires_in, float)
        return self.expires_in

    def at(self, moment: datetime) -> datetime:
        return moment + timedelta(seconds=self.seconds)


@dataclass(frozen=True)
class WaitPolicy:
    """An agent's deadlines: ``questions`` for what its graph asks (``HITLInterrupt``,
    ``HITLQuestion``, ``interrupt()``), ``tool_reviews`` for its tool calls waiting for
    approval. A question's own ``expires_in`` / ``on_expiry`` and a tool's
    ``InterruptOnConfig(expires_in=...)`` win over these. ``None``: wait forever."""

    questions: Deadline | None = None
    tool_reviews: Deadline | None = None

    def __post_init__(self) -> None:
        if self.questions is not None:
            check_action(self.questions.then, "question")
        if self.tool_reviews is not None:
            check_action(self.tool_reviews.then, "review")


def expiry_to_json(then: OnExpiry) -> dict[str, Any]:
    """How a stored task remembers what its deadline does."""
    if isinstance(then, AnswerWith):
        return {"answer": then.value}
    if isinstance(then, Reject):
        return {"reject": then.message}
    return {"cancel": then.message}


def expiry_from_json(value: Any) -> OnExpiry:
    """The inverse of ``expiry_to_json``; ``ValueError`` for anything it does not write."""
    if isinstance(value, dict) and len(value) == 1:
        (kind, argument), = value.items()
        if kind == "answer":
            return AnswerWith(argument)
        if kind == "reject" and isinstance(argument, str):
            return Reject(argument)
        if kind == "cancel" and isinstance(argument, str):
            return Cancel(argument)
    raise ValueError(f"not a stored deadline action: {value!r}")
