"""Reading an ``input-required`` question from a task, and building the answer.

A llamon question is the task's ``status.message``: a text part with the question and a data
part ``{"hitl": payload}``. ``payload["schema"]`` is ``llamon.hitl.question.v1`` for a question
(``choices``: ``[{label, value, description}]``, ``options``: the values) or
``llamon.hitl.review.v1`` for a tool-call review answered with ``{"decisions": [...]}``.
Questions from other A2A agents have only text; they read as a question without choices.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..a2a.types import DataPart, Message, Part, Task, TaskStatusUpdateEvent, TextPart
from ..core.hitl import HITL_QUESTION_SCHEMA

__all__ = [
    "QUESTION_SCHEMA",
    "REVIEW_SCHEMA",
    "Choice",
    "Question",
    "answer_message",
    "approve",
    "edit",
    "question_of",
    "reject",
]

QUESTION_SCHEMA = HITL_QUESTION_SCHEMA
REVIEW_SCHEMA = "llamon.hitl.review.v1"


class _Unset:
    def __repr__(self) -> str:
        return "UNSET"


_UNSET: Any = _Unset()


@dataclass(frozen=True, slots=True)
class Choice:
    label: str
    value: Any
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Question:
    """What an ``input-required`` task asks, and where the answer must go."""

    text: str
    task_id: str
    context_id: str
    choices: tuple[Choice, ...] = ()
    hitl: dict[str, Any] | None = None
    """The raw ``hitl`` payload of the data part (``None`` for a text-only question)."""
    message: Message | None = None

    @property
    def schema(self) -> str | None:
        schema = (self.hitl or {}).get("schema")
        return schema if isinstance(schema, str) else None

    @property
    def is_review(self) -> bool:
        """A tool-call review (``llamon.hitl.review.v1``): answer with ``decisions``."""
        return self.schema == REVIEW_SCHEMA

    @property
    def multi_select(self) -> bool:
        return bool((self.hitl or {}).get("multi_select", False))

    @property
    def free_text_allowed(self) -> bool:
        return bool((self.hitl or {}).get("free_text_allowed", True))

    @property
    def interrupt_id(self) -> str | None:
        value = ((self.message.metadata if self.message else None) or {}).get("interruptId")
        return value if isinstance(value, str) else None

    @property
    def action_requests(self) -> list[dict[str, Any]]:
        """The actions of a review (``action_requests``, or ``actionRequests``)."""
        hitl = self.hitl or {}
        actions = hitl.get("action_requests", hitl.get("actionRequests"))
        return [a for a in actions if isinstance(a, dict)] if isinstance(actions, list) else []

    def choice(self, answer: Any) -> Choice:
        """The choice whose value, else whose label, equals ``answer``."""
        for choice in self.choices:
            if choice.value == answer:
                return choice
        for choice in self.choices:
            if choice.label == answer:
                return choice
        known = ", ".join(f"{c.label}={c.value!r}" for c in self.choices) or "none"
        raise ValueError(f"{answer!r} is not one of the choices ({known})")


def question_of(source: Task | TaskStatusUpdateEvent) -> Question | None:
    """The question of an ``input-required`` task (or final status event); ``None`` otherwise."""
    status = source.status
    if status.state != "input-required":
        return None
    if isinstance(source, Task):
        task_id, context_id = source.id, source.context_id
    else:
        task_id, context_id = source.task_id, source.context_id
    message = status.message
    hitl: dict[str, Any] | None = None
    if message is not None:
        for data in message.data():
            if isinstance(data.get("hitl"), dict):
                hitl = data["hitl"]
                break
    text = (hitl or {}).get("question")
    if not isinstance(text, str):
        text = message.text() if message is not None else ""
    return Question(
        text=text,
        task_id=task_id,
        context_id=context_id,
        choices=_choices(hitl or {}),
        hitl=hitl,
        message=message,
    )


def _choices(hitl: Mapping[str, Any]) -> tuple[Choice, ...]:
    """``choices`` when present and non-empty, else ``options``."""
    for key in ("choices", "options"):
        items = hitl.get(key)
        if isinstance(items, list) and items:
            return tuple(c for c in map(_choice, items) if c is not None)
    return ()


def _choice(item: Any) -> Choice | None:
    if isinstance(item, Mapping):
        if "value" not in item and "label" not in item:
            return None
        value = item.get("value", item.get("label"))
        label = item.get("label")
        description = item.get("description")
        return Choice(
            label=label if isinstance(label, str) else str(value),
            value=value,
            description=description if isinstance(description, str) else None,
        )
    return Choice(label=str(item), value=item)


def approve() -> dict[str, Any]:
    return {"type": "approve"}


def edit(name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "edit", "edited_action": {"name": name, "args": dict(args)}}


def reject(message: str | None = None) -> dict[str, Any]:
    return {"type": "reject"} if message is None else {"type": "reject", "message": message}


def answer_message(
    question: Question | Task | TaskStatusUpdateEvent,
    text: str | None = None,
    *,
    choice: Any = _UNSET,
    value: Any = _UNSET,
    decisions: Sequence[Mapping[str, Any]] | None = None,
    metadata: dict[str, Any] | None = None,
) -> Message:
    """The user's answer, on the question's ``contextId`` and ``taskId``. Give exactly one of:

    - ``text``: the words, as a text part;
    - ``choice``: a choice's value or label, checked against the choices; sent as a data part
      ``{"value": value}`` plus the value as text (for agents that read only text);
    - ``value``: any JSON value, as a data part ``{"value": value}``;
    - ``decisions``: a tool-call review's decisions, as a data part ``{"decisions": [...]}``
      (see :func:`approve`, :func:`edit`, :func:`reject`).

    The answer is bound to the question: ``metadata.interruptId`` is the question's
    (when it has one; ``metadata`` given here is merged over it). Sending the same message
    again after a timeout then returns the task as it stands instead of answering the next
    question; an answer to a question that is no longer pending is refused (``-32602``,
    ``data.reason == "stale answer"``).
    """
    if not isinstance(question, Question):
        found = question_of(question)
        if found is None:
            raise ValueError(f"the task is {question.status.state!r}, not waiting for input")
        question = found
    given = (text is not None, choice is not _UNSET, value is not _UNSET, decisions is not None)
    if sum(given) != 1:
        raise TypeError("answer with exactly one of text, choice, value or decisions")
    parts: list[Part]
    if text is not None:
        parts = [TextPart(kind="text", text=text)]
    elif choice is not _UNSET:
        picked = question.choice(choice).value
        label = picked if isinstance(picked, str) else str(picked)
        parts = [TextPart(kind="text", text=label), DataPart(kind="data", data={"value": picked})]
    elif value is not _UNSET:
        parts = [DataPart(kind="data", data={"value": value})]
    else:
        assert decisions is not None
        listed = [dict(d) for d in decisions]
        if not all(isinstance(d.get("type"), str) for d in listed):
            raise ValueError("every decision needs a 'type' (approve, edit or reject)")
        parts = [DataPart(kind="data", data={"decisions": listed})]
    return Message(
        message_id=str(uuid.uuid4()),
        role="user",
        parts=parts,
        task_id=question.task_id,
        context_id=question.context_id,
        metadata=_bound(question, metadata),
    )


def _bound(question: Question, metadata: dict[str, Any] | None) -> dict[str, Any] | None:
    interrupt_id = question.interrupt_id
    if interrupt_id is None:
        return metadata
    return {"interruptId": interrupt_id, **(metadata or {})}
