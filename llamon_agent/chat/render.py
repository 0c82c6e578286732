"""Events, questions, reviews and errors as the lines the terminal shows. Pure: every text
from the server is :func:`~.sanitize.clean`-ed and bounded here, before anything prints it."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from ..a2a.types import (
    DataPart,
    Message,
    Part,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatusUpdateEvent,
    TextPart,
)
from ..client import AgentCard, Question
from ..client.errors import (
    A2AAuthenticationError,
    A2AClientError,
    A2AHTTPStatusError,
    A2ARPCError,
)
from ..client.rpc import A2AEvent
from .agents import ListedAgent
from .review import ReviewAction
from .sanitize import clean, shortened

__all__ = [
    "TurnRenderer",
    "action_lines",
    "agent_list_lines",
    "card_lines",
    "error_lines",
    "question_lines",
    "time_left",
]

MAX_TEXT_CHARS = 20_000
MAX_JSON_CHARS = 4_000
MAX_ERROR_CHARS = 1_000


def _text(value: str, limit: int = MAX_TEXT_CHARS) -> str:
    return shortened(clean(value), limit)


def _json(value: Any, indent: int | None = None) -> str:
    text = json.dumps(value, ensure_ascii=False, indent=indent, default=str)
    return _text(text, MAX_JSON_CHARS)


def _part_lines(parts: list[Part]) -> list[str]:
    lines: list[str] = []
    for part in parts:
        if isinstance(part, TextPart):
            lines.extend(_text(part.text).splitlines() or [""])
        elif isinstance(part, DataPart):
            lines.append("data: " + _json(part.data))
        else:
            lines.append(f"[{part.kind} part]")
    return lines


class TurnRenderer:
    """Follows the events of one stream: a line per state change, ``working`` progress, the
    result's parts; a final status text that only repeats the result is not shown twice."""

    def __init__(self, state: str | None = None) -> None:
        self.state = state
        self._shown: set[str] = set()

    def event(self, event: A2AEvent) -> list[str]:
        if isinstance(event, Message):
            return _part_lines(event.parts)
        if isinstance(event, TaskArtifactUpdateEvent):
            for part in event.artifact.parts:
                if isinstance(part, TextPart):
                    self._shown.add(part.text.strip())
            return _part_lines(event.artifact.parts)
        lines = self._state(event.status.state)
        if isinstance(event, TaskStatusUpdateEvent):
            lines += self._status_text(event.status.state, event.status.message)
        return lines

    def whole(self, result: Task | Message) -> list[str]:
        """A reply that came whole (``message/send``): the task's result, then its state."""
        if isinstance(result, Message):
            return _part_lines(result.parts)
        lines: list[str] = []
        for artifact in result.artifacts or []:
            lines += self.event(TaskArtifactUpdateEvent(
                task_id=result.id, context_id=result.context_id, artifact=artifact))
        lines += self._state(result.status.state)
        return lines + self._status_text(result.status.state, result.status.message)

    def _status_text(self, state: str, message: Message | None) -> list[str]:
        if message is None or state == "input-required":  # a question: see question_lines
            return []
        if state == "working":
            return [f"  ... {line}" for line in _part_lines(_texts(message.parts))]
        text = message.text().strip()
        if not text or text in self._shown:
            return []
        return _part_lines(_texts(message.parts))

    def _state(self, state: str) -> list[str]:
        if state == self.state:
            return []
        self.state = state
        return [f"[{clean(state)}]"]


def _texts(parts: list[Part]) -> list[Part]:
    return [p for p in parts if isinstance(p, TextPart)]


def time_left(expires_at: str, now: datetime) -> str | None:
    """``4m 05s``, ``2h 01m``, ``expired``; ``None`` for something that is not a time."""
    try:
        deadline = datetime.fromisoformat(expires_at.replace("Z", "+00:00"))
    except ValueError:
        return None
    if deadline.tzinfo is None:
        deadline = deadline.replace(tzinfo=UTC)
    seconds = int((deadline - now).total_seconds())
    if seconds <= 0:
        return "expired"
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {seconds:02d}s"
    return f"{seconds}s"


def _deadline_lines(hitl: dict[str, Any] | None, now: datetime) -> list[str]:
    expires_at = (hitl or {}).get("expires_at", (hitl or {}).get("expiresAt"))
    if not isinstance(expires_at, str) or len(expires_at) > 64:
        return []
    left = time_left(expires_at, now)
    if left is None:
        return []
    return [f"  time left: {left} (until {clean(expires_at)})"]


def question_lines(question: Question, now: datetime) -> list[str]:
    """The question, its numbered choices and how to answer, and its deadline."""
    text = _text(question.text) or "(the agent waits for input)"
    metadata = (question.message.metadata if question.message else None) or {}
    again = " (asked again: the answer was not clear)" if metadata.get("reask") is True else ""
    first, *more = text.splitlines() or [""]
    lines = [f"? {first}{again if not more else ''}", *(f"  {line}" for line in more)]
    if more and again:
        lines.append(f" {again.strip()}")
    for number, choice in enumerate(question.choices, 1):
        label = _text(choice.label, 500)
        value = choice.value if isinstance(choice.value, str) else _json(choice.value)
        shown = f"  {number}) {label}"
        if value != choice.label:
            shown += f" ({_text(value, 500)})"
        if choice.description:
            shown += f": {_text(choice.description, 1000)}"
        lines.append(shown)
    if question.choices:
        several = ", several separated by commas" if question.multi_select else ""
        own = ", or your own answer" if question.free_text_allowed else ""
        lines.append(f"  type a number{several}, a label{own}")
    return lines + _deadline_lines(question.hitl, now)


def action_lines(question: Question, index: int, action: ReviewAction,
                 now: datetime) -> list[str]:
    """One action of a review: name, description, arguments, deadline, allowed decisions."""
    count = len(question.action_requests)
    lines = [f"! tool call {index + 1} of {count}: {_text(action.name, 200)}"]
    if action.description:
        lines += [f"  {line}" for line in _text(action.description, 2000).splitlines()]
    lines.append("  arguments:")
    lines += [f"    {line}" for line in _json(action.args, indent=2).splitlines()]
    lines += _deadline_lines(question.hitl, now)
    lines.append("  decide: " + "  ".join(f"{n}) {d}" for n, d in enumerate(action.allowed, 1)))
    hints = []
    if "edit" in action.allowed:
        hints.append("edit alone opens the arguments for editing; edit {JSON} replaces them")
    if "reject" in action.allowed:
        hints.append("reject MESSAGE gives the reason")
    if "respond" in action.allowed:
        hints.append("respond MESSAGE answers instead of the tool")
    if hints:
        lines.append(f"  ({'; '.join(hints)})")
    return lines


def error_lines(error: A2AClientError) -> list[str]:
    """What went wrong, in words."""
    if isinstance(error, A2AAuthenticationError):
        return [f"error: the server refused the credentials (HTTP {error.status_code}): give "
                "the right key with --api-key or $LLAMON_API_KEY"]
    if isinstance(error, A2ARPCError):
        detail = f"JSON-RPC error {error.code}"
        reason = error.data.get("reason") if isinstance(error.data, dict) else None
        if isinstance(reason, str):
            detail += f", {reason}"
        return [f"error: the server refused this: {_text(error.message, MAX_ERROR_CHARS)} "
                f"({_text(detail, 200)})"]
    if isinstance(error, A2AHTTPStatusError):
        body = f": {_text(error.body, 300)}" if error.body else ""
        return [f"error: the server answered HTTP {error.status_code}{body}"]
    return [f"error: {_text(str(error), MAX_ERROR_CHARS)}"]


def card_lines(card: AgentCard, endpoint: str) -> list[str]:
    lines = [f"{_text(card.name, 200)}: {_text(card.description, 1000)}",
             f"  A2A {_text(card.protocol_version, 20)} at {_text(endpoint, 500)}"
             + ("" if card.streaming else " (no streaming: replies come whole)")]
    return lines


def agent_list_lines(agents: list[ListedAgent]) -> list[str]:
    lines = ["This server has several agents:"]
    for number, agent in enumerate(agents, 1):
        about = f": {_text(agent.description, 300)}" if agent.description else ""
        lines.append(f"  {number}) {_text(agent.name, 200)} [{_text(agent.id, 200)}]{about}")
    return lines


def task_lines(task: Task) -> list[str]:
    """A task found with ``tasks/get`` (``--context``): its state."""
    return [f"[{clean(task.status.state)}] task {clean(task.id)}"]
