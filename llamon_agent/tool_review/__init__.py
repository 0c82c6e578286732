"""Tool-call approval in LangChain's HITL format (seeds 000, 002, 003).

* ``policy``    which tool calls wait for a human (``interrupt_on``, ``InterruptOnConfig``)
* ``payload``   the ``pending_review`` payload (``build_review_request``)
* ``decisions`` the seed's constants and ``validate_decisions``
* ``catalog``   every user-visible text, English and Indonesian
* ``node``      ``review_graph``: ``llm_call`` / ``human_review`` / ``tool_node``
* ``chat``      ``ReviewedChatUseCase`` and ``ChatTurn`` (over a ``TaskRuntime``)

Not to be confused with the human review of drafts (``human_review/``). The review errors
(``NoPendingReviewError``, ``ReviewPendingError``, ``InvalidReviewDecisionError``) live in
``llamon_agent.errors``.
"""

from __future__ import annotations

from .chat import ChatTurn, ReviewedChatUseCase
from .decisions import ALLOWED_DECISIONS, NO_DECISION, REJECTED_BY_USER_MESSAGE, validate_decisions
from .node import ReviewState, review_graph
from .payload import PendingReview, build_review_request
from .policy import InterruptOnConfig, ReviewPolicy

__all__ = [
    "ALLOWED_DECISIONS",
    "NO_DECISION",
    "REJECTED_BY_USER_MESSAGE",
    "ChatTurn",
    "InterruptOnConfig",
    "PendingReview",
    "ReviewPolicy",
    "ReviewState",
    "ReviewedChatUseCase",
    "build_review_request",
    "review_graph",
    "validate_decisions",
]
