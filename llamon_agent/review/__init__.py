"""Tool-call approval in LangChain's HITL format (seeds 000, 002, 003).

* ``policy``    which tool calls wait for a human (``interrupt_on``, ``InterruptOnConfig``)
* ``payload``   the ``pending_review`` payload (``build_review_request``)
* ``decisions`` the seed's constants and ``validate_decisions``
* ``catalog``   every user-visible text, English and Indonesian
* ``node``      ``review_graph``: ``llm_call`` / ``human_review`` / ``tool_node``
* ``chat``      ``ReviewedChatUseCase`` and ``ChatTurn`` (on the A2A task runtime)
"""

from __future__ import annotations

from typing import Any

from ..errors import InvalidReviewDecisionError, NoPendingReviewError, ReviewPendingError
from .decisions import (
    ALLOWED_DECISIONS,
    DECISION_TYPES,
    NO_DECISION,
    REJECTED_BY_USER_MESSAGE,
    validate_decisions,
)
from .node import HUMAN_REVIEW, LLM_CALL, TOOL_NODE, ReviewState, review_graph
from .payload import REVIEW_SCHEMA, PendingReview, build_review_request, is_review_request
from .policy import InterruptOnConfig, ReviewPolicy

__all__ = [
    "ALLOWED_DECISIONS",
    "DECISION_TYPES",
    "HUMAN_REVIEW",
    "LLM_CALL",
    "NO_DECISION",
    "REJECTED_BY_USER_MESSAGE",
    "REVIEW_SCHEMA",
    "TOOL_NODE",
    "ChatTurn",
    "InterruptOnConfig",
    "InvalidReviewDecisionError",
    "NoPendingReviewError",
    "PendingReview",
    "ReviewPendingError",
    "ReviewPolicy",
    "ReviewState",
    "ReviewedChatUseCase",
    "build_review_request",
    "is_review_request",
    "review_graph",
    "validate_decisions",
]


def __getattr__(name: str) -> Any:
    """``chat`` needs the task runtime, which needs this package: import it on first use."""
    if name in {"ChatTurn", "ReviewedChatUseCase"}:
        from . import chat

        return getattr(chat, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
