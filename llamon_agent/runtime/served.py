"""The agents a server runs: each compiled once, with the server's part of its runs' context."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.pregel import Pregel

from ..agent import Agent
from ..core.bounds import Limits
from ..core.clock import Clock, system_clock
from ..core.ports import HumanReviewPort
from ..core.run_context import RunContext
from .children import CancelLocal, Children, SendLocal

__all__ = ["ServedAgent", "checked_agents", "serve_agents"]


@dataclass
class ServedAgent:
    """An agent as this server runs it. ``context`` is the server's part of its runs'
    ``RunContext`` (agent id, review port, db, limits); a turn adds the request's and the
    children bound to its caller."""

    agent: Agent
    graph: Pregel[Any, Any, Any, Any]
    input_keys: frozenset[str] | None
    context: RunContext = field(default_factory=RunContext)
    children: Children | None = None
    #: the server's clock: deadlines are set from it (tests move it instead of sleeping)
    clock: Clock = system_clock


def checked_agents(agents: Sequence[Agent]) -> list[Agent]:
    if not agents:
        raise ValueError("serve at least one agent")
    ids = [a.id for a in agents]
    if len(set(ids)) != len(ids):
        raise ValueError(f"agent ids must be unique, got {ids}")
    return list(agents)


def serve_agents(
    agents: Sequence[Agent], checkpointer: BaseCheckpointSaver[Any], *,
    reviews: HumanReviewPort | None, db: str | None, limits: Limits, http: httpx.AsyncClient,
    send_local: SendLocal, cancel_local: CancelLocal, clock: Clock = system_clock,
) -> dict[str, ServedAgent]:
    """Compile every agent; give each the context its runs see, with one child caller built
    once (an orchestrator's children may be any other agent of the server)."""
    ids = {agent.id for agent in agents}
    served: dict[str, ServedAgent] = {}
    for agent in agents:
        context = RunContext(agent_id=agent.id, reviews=reviews, db=db, limits=limits)
        children = Children(agent, ids, send_local, cancel_local, http)
        served[agent.id] = ServedAgent(
            agent, agent.compile(checkpointer), agent.input_keys(), context, children, clock
        )
    return served
