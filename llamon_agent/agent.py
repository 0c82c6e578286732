"""``Agent``: a LangGraph graph served over A2A."""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import StateGraph
from langgraph.pregel import Pregel

from ._langgraph import channel_names, compiled_builder, input_keys
from .core.deadlines import WaitPolicy
from .core.hitl_graph import REQUEST_KEY, hitl_builder, route_compiled

__all__ = ["Agent", "OutputlessGraphWarning"]

#: the state keys a finished turn is read from (runtime/runner.py): ``result`` becomes the
#: artifact's data part, new AI ``messages`` its text parts
_OUTPUT_KEYS = frozenset({"result", "messages"})


class OutputlessGraphWarning(UserWarning):
    """The graph's state has no key the SDK reads a turn's output from.

    LangGraph drops a node's update for a key its state schema lacks without a word, so a graph
    whose state has neither ``result`` nor ``messages`` completes every task with no artifact.
    """


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
    ``on_takeover``: what a live server does with a run of this agent that a stopped server
    (a restart, a replica killed) left unfinished: ``"continue"`` runs the turn again from its
    last checkpoint (tools must be idempotent: docs/tool-review.md), ``"fail"`` ends the task
    ``failed`` with a message. A question is asked again either way.
    ``wait_policy``: how long its questions and tool reviews may wait for a person, and what
    happens then (``WaitPolicy``; docs/hitl.md, "Deadlines"); none: they wait forever.
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
        on_takeover: Literal["continue", "fail"] = "continue",
        wait_policy: WaitPolicy | None = None,
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
        if on_takeover not in ("continue", "fail"):
            raise ValueError(f"on_takeover must be 'continue' or 'fail', got {on_takeover!r}")
        self.on_takeover = on_takeover
        if wait_policy is not None and not isinstance(wait_policy, WaitPolicy):
            raise TypeError(f"wait_policy must be a WaitPolicy, got {wait_policy!r}")
        self.wait_policy = wait_policy or WaitPolicy()
        _warn_if_outputless(id, graph)

    def compile(self, checkpointer: BaseCheckpointSaver[Any]) -> Pregel[Any, Any, Any, Any]:
        """The graph the server runs: HITL-routed and bound to ``checkpointer``."""
        graph = self.graph
        if isinstance(graph, StateGraph):
            return hitl_builder(graph).compile(checkpointer=checkpointer, name=self.id)
        if compiled_builder(graph) is not None:
            return route_compiled(graph, checkpointer)
        return graph.copy(update={"checkpointer": checkpointer})

    def input_keys(self) -> frozenset[str] | None:
        """Keys of the graph's input schema, or ``None`` when the graph takes any input."""
        builder = self.graph if isinstance(self.graph, StateGraph) else compiled_builder(self.graph)
        if not isinstance(builder, StateGraph):
            return None
        return input_keys(builder) | {REQUEST_KEY}

    def card_entry(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "description": self.description}


def _warn_if_outputless(
    agent_id: str, graph: StateGraph[Any, Any, Any, Any] | Pregel[Any, Any, Any, Any]
) -> None:
    builder = graph if isinstance(graph, StateGraph) else compiled_builder(graph)
    if not isinstance(builder, StateGraph):
        return  # a graph without a builder: its channels are not known here
    if _OUTPUT_KEYS & channel_names(builder):
        return
    warnings.warn(
        f"agent {agent_id!r}: the graph's state has neither a 'result' nor a 'messages' key, "
        "so its tasks complete with no artifact (LangGraph drops updates to keys the state "
        "lacks); add `result: Any` or `messages` to the state schema (docs/hitl.md §3.5)",
        OutputlessGraphWarning,
        stacklevel=3,
    )
