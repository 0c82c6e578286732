"""The actions of a tool-call review (``llamon.hitl.review.v1``), each with what it allows."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..client import Question

__all__ = ["DEFAULT_DECISIONS", "ReviewAction", "review_actions"]

#: what a review config that names nothing allows (seed 000's ``ALLOWED_DECISIONS``)
DEFAULT_DECISIONS = ("approve", "edit", "reject")
KNOWN_DECISIONS = ("approve", "edit", "reject", "respond")


@dataclass(frozen=True, slots=True)
class ReviewAction:
    name: str
    description: str
    args: dict[str, Any]
    allowed: tuple[str, ...]


def review_actions(question: Question) -> list[ReviewAction]:
    """One per ``action_requests`` entry, in order; ``allowed`` from its ``review_configs``
    entry (matched by ``action_name``), in the order :data:`KNOWN_DECISIONS` lists them."""
    hitl = question.hitl or {}
    configs = hitl.get("review_configs", hitl.get("reviewConfigs"))
    allowed_by_name: dict[str, tuple[str, ...]] = {}
    for config in configs if isinstance(configs, list) else []:
        if not isinstance(config, dict):
            continue
        name = config.get("action_name", config.get("actionName"))
        listed = config.get("allowed_decisions", config.get("allowedDecisions"))
        if isinstance(name, str) and isinstance(listed, list):
            allowed_by_name.setdefault(name, tuple(d for d in KNOWN_DECISIONS if d in listed))
    actions = []
    for request in question.action_requests:
        name = request.get("name")
        name = name if isinstance(name, str) else "?"
        description = request.get("description")
        args = request.get("args")
        actions.append(ReviewAction(
            name=name,
            description=description if isinstance(description, str) else "",
            args=args if isinstance(args, dict) else {},
            allowed=allowed_by_name.get(name) or DEFAULT_DECISIONS,
        ))
    return actions
