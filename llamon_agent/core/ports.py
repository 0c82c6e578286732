"""The interfaces graph nodes reach the server through, and the values they exchange.

``RunContext`` (``run_context.py``) hands a run these ports; the server implements them
(``human_review/port.py``: ``InMemoryReviewPort``, ``SQLiteReviewPort``; ``runtime/children.py``:
the children of an orchestrator). They live here, below every package that uses or implements
them, so that no layer imports upward (``docs/architecture.md``, "Layers").
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..a2a.types import Task
from ..errors import LlamonError
from .clock import now

__all__ = [
    "ChildCaller",
    "Decision",
    "DecisionType",
    "HumanReviewPort",
    "PendingSummary",
    "Review",
    "ReviewClosedError",
    "ReviewCursor",
    "ReviewNotFoundError",
    "UnreadableReviewError",
]

DecisionType = Literal["approve", "edit", "reject"]
Listener = Callable[["Review"], Awaitable[None]]


class ReviewNotFoundError(LlamonError):
    """No review with that id."""


class UnreadableReviewError(LlamonError):
    """A stored review this server cannot decode (its draft or its decision): an error for that
    review only. A listing of pending reviews leaves it out (and logs it), a decision on it is
    refused before anything is written, and closing its task closes it."""

    def __init__(self, review_id: str, reason: str) -> None:
        super().__init__(f"review {review_id} is stored in a form this server cannot read")
        self.review_id = review_id
        self.reason = reason


class ReviewClosedError(LlamonError):
    """The review was already decided, or closed because its task ended; ``str(exc)`` says
    which (``"review already decided"``, ``"review closed: the task was canceled"``)."""

    def __init__(self, review_id: str, message: str = "review already decided") -> None:
        super().__init__(message)
        self.review_id = review_id
        self.message = message


@dataclass(frozen=True)
class Decision:
    """A reviewer's decision. ``by`` names the reviewer (the reviewer endpoints set it from
    the token's name); it is recorded with the review, not sent to the graph: ``to_json`` is
    the value the waiting node resumes with."""

    type: DecisionType
    edited: Any = None
    message: str | None = None
    by: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"type": self.type, "edited": self.edited, "message": self.message}


@dataclass(frozen=True)
class Review:
    id: str
    task_id: str
    context_id: str
    agent_id: str
    draft: Any
    status: Literal["pending", "decided", "closed"] = "pending"
    decision: Decision | None = None
    created: str = field(default_factory=now)
    decided: str | None = None
    closed: str | None = None  # when its task ended before a decision
    closed_reason: str | None = None  # e.g. "the task was canceled"

    @property
    def decided_by(self) -> str | None:
        """Who decided (``None`` before a decision, or when it came without a name)."""
        return self.decision.by if self.decision is not None else None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "taskId": self.task_id,
            "contextId": self.context_id,
            "agentId": self.agent_id,
            "draft": self.draft,
            "status": self.status,
            "decision": self.decision.to_json() if self.decision else None,
            "created": self.created,
            "decided": self.decided,
            "decidedBy": self.decided_by,
            "closed": self.closed,
            "closedReason": self.closed_reason,
        }


@dataclass(frozen=True)
class ReviewCursor:
    """Where a page of pending reviews ended: its last review's ``created`` and ``id`` (the
    order of ``HumanReviewPort.pending``)."""

    created: str
    id: str

    @classmethod
    def after(cls, review: Review) -> ReviewCursor:
        return cls(review.created, review.id)


@dataclass(frozen=True)
class PendingSummary:
    """How many reviews are pending, and when the oldest of them was submitted (``None``
    when none is)."""

    count: int
    oldest: str | None


class HumanReviewPort(Protocol):
    """Where drafts wait for a reviewer. ``submit`` is idempotent per task: a node that runs
    again after a restart finds its review instead of opening a second one."""

    async def submit(self, *, task_id: str, context_id: str, agent_id: str, draft: Any) -> Review: ...

    async def get(self, review_id: str) -> Review: ...

    async def pending(self, limit: int, after: ReviewCursor | None = None) -> list[Review]:
        """Up to ``limit`` pending reviews, the oldest first (by ``created``, then ``id``),
        from just after ``after``. Always a page: thousands may wait for people, and a
        reader of them all would hold the event loop (bench/README.md, "Speed, round
        thirty-four")."""
        ...

    async def pending_summary(self) -> PendingSummary:
        """The pending reviews' count and oldest ``created``, without reading them."""
        ...

    async def decide(self, review_id: str, decision: Decision) -> Review:
        """Raises ``ReviewClosedError`` when the review is decided or closed."""
        ...

    async def close_for_task(self, task_id: str, reason: str) -> list[Review]:
        """Close the task's pending reviews (its task ended: ``reason`` says how); they leave
        ``pending`` and ``decide`` refuses them. Returns the reviews it closed."""
        ...

    async def delete_for_tasks(self, task_ids: Sequence[str]) -> int:
        """Delete every review (pending, decided or closed) of these tasks: retention or a
        context deletion removed them (docs/operations.md, "Retention"). Returns how many."""
        ...

    def on_decision(self, listener: Listener) -> Callable[[], None]:
        """Called after every decision (the runtime resumes the waiting task). Returns the
        call that removes the listener (a stopped runtime must not be resumed)."""
        ...


class ChildCaller(Protocol):
    """Sends one message to a child on the child's own context and returns its task."""

    async def call(
        self, child: str, context_id: str, *, text: str | None, data: dict[str, Any] | None
    ) -> Task: ...

    async def cancel(self, child: str, task_id: str) -> None:
        """Cancel a child task that an ended parent task left waiting (no error if it ended)."""
        ...
