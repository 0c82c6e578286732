"""Child agents an orchestrator calls: local agents of the same server, or remote A2A agents."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..a2a.types import DataPart, Task, TextPart
from ..core.ports import ChildCaller
from .timeouts import DEFAULT_CHILD_TIMEOUTS, ChildTimeouts

__all__ = ["ChildCaller", "ChildFailedError", "ChildResult", "RemoteAgent", "child_context"]


@dataclass(frozen=True)
class RemoteAgent:
    """A child reached over A2A: ``url`` is its JSON-RPC endpoint (or any URL of its origin,
    whose agent card names the endpoint); ``agent_id`` goes into ``metadata.agentId``.
    ``timeout``: how long to wait on it (``ChildTimeouts``, or one number of seconds for all of
    its bounds); after construction it is always a ``ChildTimeouts``."""

    id: str
    url: str
    agent_id: str | None = None
    timeout: ChildTimeouts | float = DEFAULT_CHILD_TIMEOUTS

    def __post_init__(self) -> None:
        object.__setattr__(self, "timeout", ChildTimeouts.of(self.timeout))

    @property
    def timeouts(self) -> ChildTimeouts:
        return ChildTimeouts.of(self.timeout)


class ChildFailedError(RuntimeError):
    """A child ended ``failed``/``rejected``/``canceled``, or could not be reached."""


@dataclass(frozen=True)
class ChildResult:
    """What a child's turn produced.

    ``data``: the data parts of the child's result artifacts merged into one object; for a child
    that asks a question, ``{"needs_human": True, "question": text, "hitl": payload}``.
    ``parts``: the child's last message parts (its question, or its reply) in wire form.
    """

    child: str
    state: str
    task_id: str
    context_id: str
    data: dict[str, Any] = field(default_factory=dict)
    parts: list[dict[str, Any]] = field(default_factory=list)
    text: str = ""

    @property
    def needs_human(self) -> bool:
        return self.state == "input-required"

    @property
    def question(self) -> dict[str, Any] | None:
        """The child's ``hitl`` payload when it asks, else ``None``."""
        hitl = self.data.get("hitl") if self.needs_human else None
        return hitl if isinstance(hitl, dict) else None

    @classmethod
    def from_task(cls, child: str, task: Task) -> ChildResult:
        status = task.status
        parts = list(status.message.parts) if status.message is not None else []
        text = "\n".join(p.text for p in parts if isinstance(p, TextPart))
        data: dict[str, Any] = {}
        if status.state == "input-required":
            hitl = next(
                (p.data["hitl"] for p in parts if isinstance(p, DataPart) and "hitl" in p.data),
                {"question": text},
            )
            data = {"needs_human": True, "question": text, "hitl": hitl}
        else:
            for artifact in task.artifacts or []:
                for part in artifact.parts:
                    if isinstance(part, DataPart):
                        data.update(part.data)
                    elif isinstance(part, TextPart) and not text:
                        text = part.text
        return cls(
            child=child, state=status.state, task_id=task.id, context_id=task.context_id,
            data=data, parts=[p.to_wire() for p in parts], text=text,
        )


def child_context(parent_context: str, child: str) -> str:
    """The child's conversation for a parent context: stable, so calling the same child on the
    next turn (or after a restart) continues that conversation."""
    return f"{parent_context}::{child}"
