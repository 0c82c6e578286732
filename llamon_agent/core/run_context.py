"""``RunContext``: what the server hands a graph's run besides its state.

It travels in the LangGraph config (``configurable``, under a key only this module knows), so
nodes of any layer (tool review, human review, orchestrators) read it with ``run_context`` and
never import the runtime. A graph run outside the server (``review_graph`` compiled by a user)
has none: ``run_context`` returns ``None`` and the nodes use their defaults.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .bounds import Limits
from .ports import ChildCaller, HumanReviewPort

__all__ = ["RunContext", "context_id_of", "run_context", "with_run_context"]

# LangGraph copies only str/int/float/bool configurable values into checkpoint metadata, so this
# object (and the ports it holds) is never serialised
_KEY = "llamon"


@dataclass(frozen=True)
class RunContext:
    """The request's settings (``language``; ``interrupt_on``: the tool reviews the client added
    for the task) and what nodes use to reach the server: the task and agent ids, the human
    review port, the children caller of an orchestrator; ``db``: the server's SQLite file (or
    ``:memory:``), where an application may keep its own tables."""

    language: str | None = None
    interrupt_on: Mapping[str, Any] = field(default_factory=dict)
    task_id: str | None = None
    agent_id: str | None = None
    reviews: HumanReviewPort | None = None
    children: ChildCaller | None = None
    db: str | None = None
    #: the server's edge limits: tool arguments are held to the same bounds as what a client
    #: sends (``None`` outside the server: the defaults)
    limits: Limits | None = None
    #: the caller whose task runs (``anonymous`` without authentication), and the context as
    #: that caller named it (the LangGraph ``thread_id`` is a storage key: core/principal.py)
    principal: str | None = None
    context_id: str | None = None


def run_context(config: Mapping[str, Any] | None) -> RunContext | None:
    """The run's context, ``None`` for a run the server did not start."""
    configurable = (config or {}).get("configurable") or {}
    found = configurable.get(_KEY) if isinstance(configurable, Mapping) else None
    return found if isinstance(found, RunContext) else None


def context_id_of(config: Mapping[str, Any] | None) -> str:
    """The context id as the client named it: ``RunContext.context_id`` in a run the server
    started, else the LangGraph ``thread_id`` (a graph run on its own)."""
    served = run_context(config)
    if served is not None and served.context_id is not None:
        return served.context_id
    configurable = (config or {}).get("configurable") or {}
    return str(configurable["thread_id"])


def with_run_context(configurable: dict[str, Any], context: RunContext) -> dict[str, Any]:
    """``configurable`` carrying ``context`` (a new dict)."""
    return {**configurable, _KEY: context}
