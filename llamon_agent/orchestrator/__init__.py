"""Orchestrators: agents whose turn calls child agents (seed 004)."""

from .agent import Orchestrator, RunTurn
from .children import ChildFailedError, ChildResult, RemoteAgent
from .context import Emission, TurnContext

__all__ = [
    "ChildFailedError",
    "ChildResult",
    "Emission",
    "Orchestrator",
    "RemoteAgent",
    "RunTurn",
    "TurnContext",
]
