"""Human-in-the-loop question types (seed 004).

A graph node that lacks information *returns* an :class:`HITLInterrupt`; the SDK turns it
into an ``input-required`` task whose status message carries the question, and resumes the
graph at the same node once the user answers on the same ``contextId``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .deadlines import AnswerWith, Cancel, check_action, expiry_to_json, seconds_of

__all__ = [
    "DEADLINE_FIELD",
    "DEFAULT_ANSWER_KEY",
    "HITL_QUESTION_SCHEMA",
    "INTERRUPT_ID",
    "MAX_INTERRUPT_ID",
    "HITLInterrupt",
    "HITLOption",
    "HITLQuestion",
]

HITL_QUESTION_SCHEMA = "llamon.hitl.question.v1"
DEFAULT_ANSWER_KEY = "hitl_answer"
#: ``message.metadata`` key binding an answer to the question it answers (docs/hitl.md)
INTERRUPT_ID = "interruptId"
#: the private payload key a question's own deadline travels under, from the node to the
#: server (never on the wire: the wire shows ``expires_at`` instead)
DEADLINE_FIELD = "__llamon_deadline__"
MAX_INTERRUPT_ID = 128  # LangGraph's ids are 32 hex digits; a forwarded one may be longer


class HITLOption(BaseModel):
    """One choice of a :class:`HITLQuestion`: what the user sees and what the graph gets."""

    model_config = ConfigDict(frozen=True)

    label: str
    value: str
    description: str | None = None


class HITLQuestion(BaseModel):
    """A question with optional choices; ``to_payload()`` is the wire payload.

    ``expires_in`` (seconds) and ``on_expiry`` (``AnswerWith(value)`` or ``Cancel(message)``)
    override the agent's ``WaitPolicy.questions`` for this question (docs/hitl.md,
    "Deadlines"); ``on_expiry`` alone keeps the policy's wait, ``expires_in`` alone its
    action (cancel when the agent has none)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    prompt: str
    options: list[HITLOption] = Field(default_factory=list)
    multi_select: bool = False
    free_text_allowed: bool = True
    expires_in: float | None = None
    on_expiry: AnswerWith | Cancel | None = None

    @field_validator("expires_in")
    @classmethod
    def _wait(cls, value: float | None) -> float | None:
        return None if value is None else seconds_of(value)

    @field_validator("on_expiry")
    @classmethod
    def _action(cls, value: AnswerWith | Cancel | None) -> AnswerWith | Cancel | None:
        if value is not None:
            check_action(value, "question")
        return value

    def __init__(self, prompt: str | None = None, /, **data: Any) -> None:
        if prompt is not None:
            data["prompt"] = prompt
        super().__init__(**data)

    def to_payload(self) -> dict[str, Any]:
        """The superset payload of seed 004: old clients read ``question``, new ones ``choices``."""
        return {
            "schema": HITL_QUESTION_SCHEMA,
            "question": self.prompt,
            "options": [option.value for option in self.options],
            "choices": [
                {"label": o.label, "value": o.value, "description": o.description}
                for o in self.options
            ],
            "multi_select": self.multi_select,
            "free_text_allowed": self.free_text_allowed,
            **self._deadline(),
        }

    def _deadline(self) -> dict[str, Any]:
        if self.expires_in is None and self.on_expiry is None:
            return {}
        own: dict[str, Any] = {"in": self.expires_in}
        if self.on_expiry is not None:
            own["then"] = expiry_to_json(self.on_expiry)
        return {DEADLINE_FIELD: own}


class HITLInterrupt:
    """Returned (never raised) by a node to ask the user something.

    ``payload`` is plain JSON: ``{"question": ...}`` for free text, or ``HITLQuestion.to_payload()``.
    ``thread_id`` must be the running context (``state["thread_id"]``). After the answer the same
    node runs once more with the normalised answer in ``state[key]`` (``state["hitl_answer"]`` when
    ``key`` is ``None``). ``update`` is an optional state update applied together with the question,
    so a node can record what it consumed before asking again.
    """

    __slots__ = ("key", "payload", "thread_id", "update")

    def __init__(
        self,
        payload: Mapping[str, Any] | HITLQuestion,
        thread_id: str,
        key: str | None = None,
        *,
        update: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(payload, HITLQuestion):
            payload = payload.to_payload()
        if not isinstance(payload, Mapping):
            raise TypeError("HITLInterrupt payload must be a mapping or an HITLQuestion")
        if not isinstance(payload.get("question"), str) or not payload["question"]:
            raise ValueError("HITLInterrupt payload needs a non-empty 'question' string")
        if not isinstance(thread_id, str) or not thread_id:
            raise ValueError("HITLInterrupt needs the thread_id of the running context")
        self.payload: dict[str, Any] = dict(payload)
        self.thread_id = thread_id
        self.key = key or DEFAULT_ANSWER_KEY
        self.update: dict[str, Any] = dict(update or {})

    def __repr__(self) -> str:
        return f"HITLInterrupt(payload={self.payload!r}, thread_id={self.thread_id!r}, key={self.key!r})"
