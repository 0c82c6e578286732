"""One node that asks, compiled on a given checkpointer: the smallest graph that stores a
checkpoint and an interrupt's pending writes (the saver and turn-writes tests use it on both
databases)."""

from __future__ import annotations

from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt


class _State(TypedDict, total=False):
    answers: list[str]


def _ask(state: _State) -> dict[str, Any]:
    answer = interrupt({"question": "which document?"})
    return {"answers": [*state.get("answers", []), answer]}


def ask_graph(saver: Any) -> Any:
    graph = StateGraph(_State)
    graph.add_node("ask", _ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    return graph.compile(checkpointer=saver)
