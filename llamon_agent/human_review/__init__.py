"""Human review of drafts by an authenticated reviewer (seed 004's ``HumanReviewPort``).

Not to be confused with tool-call approval (``tool_review/``), where the requester approves
the agent's tool calls: here a separate reviewer decides on a draft the agent produced.
"""

from ..core.ports import (
    Decision,
    HumanReviewPort,
    PendingSummary,
    Review,
    ReviewClosedError,
    ReviewCursor,
    ReviewNotFoundError,
    UnreadableReviewError,
)
from .node import TaskRejected, request_review
from .port import InMemoryReviewPort, SQLiteReviewPort

__all__ = [
    "Decision",
    "HumanReviewPort",
    "InMemoryReviewPort",
    "PendingSummary",
    "Review",
    "ReviewClosedError",
    "ReviewCursor",
    "ReviewNotFoundError",
    "SQLiteReviewPort",
    "TaskRejected",
    "UnreadableReviewError",
    "request_review",
]
