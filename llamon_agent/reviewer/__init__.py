"""Human review of drafts by an authenticated reviewer (seed 004's ``HumanReviewPort``)."""

from .node import REVIEW_WAIT_SCHEMA, TaskRejected, is_review_wait, request_review
from .port import (
    Decision,
    HumanReviewPort,
    InMemoryReviewPort,
    Review,
    ReviewClosedError,
    ReviewNotFoundError,
    SQLiteReviewPort,
)

__all__ = [
    "REVIEW_WAIT_SCHEMA",
    "Decision",
    "HumanReviewPort",
    "InMemoryReviewPort",
    "Review",
    "ReviewClosedError",
    "ReviewNotFoundError",
    "SQLiteReviewPort",
    "TaskRejected",
    "is_review_wait",
    "request_review",
]
