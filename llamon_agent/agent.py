"""``Agent``: a LangGraph graph served over A2A."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel

from .runtime.hitl_graph import REQUEST_KEY, hitl_builder, route_compiled, state_keys

__all__ = ["Agent"]

Durability = Literal["sync", "async", "exit"]
_AGENT_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")


class Agent:
    """An A2A agent backed by a LangGraph graph.

    ``graph`` is a ``StateGraph`` builder (compiled once with the server's checkpointer, with
    ``HITLInterrupt`` returns routed) or an already compiled graph (recompiled from its builder
    when it has one, so returns are routed too; otherwise the checkpointer is attached).
    ``llm`` classifies free-text answers to option questions. ``durability`` is LangGraph's
    checkpoint durability: the default ``"exit"`` writes once per turn, which is all a task
    needs because a turn always ends at an interrupt or at the end of the graph.
    """

    def __init__(
        self,
        id: str,
        graph: StateGraph[Any, Any, Any, Any] | Pregel[Any, Any, Any, Any],
        *,
        name: str | None = None,
        description: str | None = None,
        skills: Sequence[Mapping[str, Any]] | None = None,
        llm: BaseChatModel | None = None,
        durability: Durability = "exit",
    ) -> None:
        if not isinstance(id, str) or not _AGENT_ID.match(id):
            raise ValueError(f"agent id must match {_AGENT_ID.pattern}, got {id!r}")
        if not isinstance(graph, (StateGraph, Pregel)):
            raise TypeError("graph must be a langgraph StateGraph or a compiled graph")
        self.id = id
        self.graph = graph
        self.name = name or id
        self.description = description or f"LangGraph agent {self.name}"
        self.skills = [dict(s) for s in skills] if skills else [
            {"id": id, "name": self.name, "description": self.description, "tags": ["langgraph"]}
        ]
        self.llm = llm
        self.durability: Durability = durability

    def compile(self, checkpointer: BaseCheckpointSaver[Any]) -> Pregel[Any, Any, Any, Any]:
        """The graph the server runs: HITL-routed and bound to ``checkpointer``."""
        graph = self.graph
        if isinstance(graph, StateGraph):
            return hitl_builder(graph).compile(checkpointer=checkpointer, name=self.id)
        if isinstance(getattr(graph, "builder", None), StateGraph):
            return route_compiled(graph, checkpointer)
        return graph.copy(update={"checkpointer": checkpointer})

    def input_keys(self) -> frozenset[str] | None:
        """Keys of the graph's input schema, or ``None`` when the graph takes any input."""
        builder = self.graph if isinstance(self.graph, StateGraph) else getattr(self.graph, "builder", None)
        if not isinstance(builder, StateGraph):
            return None
        return state_keys(builder) | {REQUEST_KEY}

    def card_entry(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "description": self.description}

