"""Asking a human reviewer from inside a graph node."""

from __future__ import annotations

from typing import Any

from langchain_core.runnables import RunnableConfig
from langgraph.types import interrupt

from .._langgraph import resume_waiting
from ..core.ports import Decision
from ..core.run_context import context_id_of, run_context
from ..errors import LlamonError

__all__ = ["REVIEW_WAIT_SCHEMA", "TaskRejected", "is_review_wait", "request_review"]

REVIEW_WAIT_SCHEMA = "llamon.review.wait.v1"


class TaskRejected(LlamonError):
    """Raised by a node to end its task ``rejected`` (for example after a reviewer's reject)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def is_review_wait(value: Any) -> bool:
    return isinstance(value, dict) and value.get("schema") == REVIEW_WAIT_SCHEMA


async def request_review(draft: Any, config: RunnableConfig) -> Decision:
    """Submit ``draft`` to the server's ``HumanReviewPort`` and wait for the decision.

    The task waits in ``working`` (this is not a question to the requester) until a reviewer
    decides through the port; then the node runs again and this call returns the decision.
    Submitting is idempotent per task, so the second run finds the same review.
    """
    served = run_context(config)
    if served is None or served.task_id is None or served.agent_id is None:
        raise LlamonError("request_review runs only inside a task served by llamon-agent")
    port = served.reviews
    if port is None:
        raise LlamonError("no HumanReviewPort is configured for this server")
    if resume_waiting(config):
        # the reviewer's decision resumes this node: the review it opened is decided, so
        # submitting again would open a second one
        answer = interrupt(None)
    else:
        review = await port.submit(
            task_id=served.task_id,
            context_id=context_id_of(config),
            agent_id=served.agent_id,
            draft=draft,
        )
        answer = interrupt({"schema": REVIEW_WAIT_SCHEMA, "review_id": review.id, "draft": draft})
    return Decision(
        type=answer["type"], edited=answer.get("edited"), message=answer.get("message")
    )
