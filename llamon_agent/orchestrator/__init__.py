"""Orchestrators: agents whose turn calls child agents (seed 004)."""

from .agent import Orchestrator, RunTurn
from .children import ChildFailedError, ChildResult, RemoteAgent
from .context import Emission, TurnContext
from .timeouts import DEFAULT_CHILD_TIMEOUTS, ChildTimeouts

__all__ = [
    "DEFAULT_CHILD_TIMEOUTS",
    "ChildFailedError",
    "ChildResult",
    "ChildTimeouts",
    "Emission",
    "Orchestrator",
    "RemoteAgent",
    "RunTurn",
    "TurnContext",
]
