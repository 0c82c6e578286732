"""Orchestrators: agents whose turn calls child agents (seed 004)."""

from .agent import Orchestrator, RunTurn
from .children import ChildCaller, ChildFailedError, ChildResult, RemoteAgent, child_context
from .context import Emission, TurnContext

__all__ = [
    "ChildCaller",
    "ChildFailedError",
    "ChildResult",
    "Emission",
    "Orchestrator",
    "RemoteAgent",
    "RunTurn",
    "TurnContext",
    "child_context",
]
