"""The ``pending_review`` payload (seed 000): what waits for a human, in LangChain's shape.

::

    {"action_requests": [{"name", "args", "description"}, ...],
     "review_configs":  [{"action_name", "allowed_decisions"[, "args_schema"]}, ...]}

Rules: only the tool calls the policy reviews, in the model's order, one item per call, and
plain JSON only. ``review_configs[i]`` belongs to ``action_requests[i]``; ``args_schema`` is
there only when the policy gives one (LangChain's ``ReviewConfig`` has the same optional key).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict

import orjson

from ..core.hitl import DEADLINE_FIELD
from .policy import ReviewPolicy

__all__ = [
    "REVIEW_SCHEMA",
    "ActionRequest",
    "PendingReview",
    "ReviewConfig",
    "build_review_request",
    "is_review_request",
    "reviewed_calls",
]

#: ``data.hitl.schema`` of a review on the A2A wire
REVIEW_SCHEMA = "llamon.hitl.review.v1"


class ActionRequest(TypedDict):
    name: str
    args: dict[str, Any]
    description: str


class ReviewConfig(TypedDict):
    action_name: str
    allowed_decisions: list[str]
    args_schema: NotRequired[dict[str, Any]]


class PendingReview(TypedDict):
    action_requests: list[ActionRequest]
    review_configs: list[ReviewConfig]


def reviewed_calls(
    tool_calls: Sequence[Mapping[str, Any]], policy: ReviewPolicy
) -> list[Mapping[str, Any]]:
    """The calls that wait for a human, in the model's order."""
    return [c for c in tool_calls if policy.config_for(str(c.get("name"))) is not None]


def build_review_request(
    tool_calls: Sequence[Mapping[str, Any]], policy: ReviewPolicy, language: str | None = None
) -> PendingReview | None:
    """The payload for the reviewed calls among ``tool_calls``; ``None`` when none is."""
    actions: list[ActionRequest] = []
    configs: list[ReviewConfig] = []
    waits: list[float] = []
    for call in reviewed_calls(tool_calls, policy):
        name = str(call.get("name"))
        config = policy.config_for(name)
        assert config is not None
        actions.append({
            "name": name,
            "args": _plain(call.get("args") or {}),
            "description": policy.describe(call, language),
        })
        review: ReviewConfig = {
            "action_name": name, "allowed_decisions": list(config.allowed_decisions)
        }
        if config.args_schema is not None:
            review["args_schema"] = _plain(config.args_schema)
        configs.append(review)
        if isinstance(config.expires_in, float):
            waits.append(config.expires_in)
    if not actions:
        return None
    request: PendingReview = {"action_requests": actions, "review_configs": configs}
    if waits:  # private: the server shows ``expires_at`` beside the payload, never inside it
        request[DEADLINE_FIELD] = {"in": min(waits)}  # type: ignore[literal-required]
    return request


def is_review_request(value: Any) -> bool:
    """Is an interrupt value a tool review (ours, or LangChain's ``HITLRequest``)?"""
    return (
        isinstance(value, Mapping)
        and isinstance(value.get("action_requests"), list)
        and isinstance(value.get("review_configs"), list)
    )


def _plain(value: Mapping[str, Any]) -> dict[str, Any]:
    """JSON values only: anything else becomes its text."""
    plain = orjson.loads(orjson.dumps(dict(value), default=str, option=orjson.OPT_NON_STR_KEYS))
    assert isinstance(plain, dict)
    return plain
