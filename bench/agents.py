"""The benchmark graphs: one node each, the same logic for every server.

* ``instant``: one node that returns a result at once (the task completes in one turn).
* ``hitl``: one node that asks one free-text question, then completes with the answer.

Our server gets ``AGENTS`` (the question is *returned* as an ``HITLInterrupt``); the official
SDK server and ``langgraph_alone.py`` use :func:`native_hitl_graph`, the same node written
with LangGraph's own ``interrupt()``. This module imports ``llamon_agent`` only when
``AGENTS`` is read, so the SDK's virtual environment (without ``llamon_agent``) can import it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.types import interrupt

QUESTION = "What should I record?"
INSTANT, HITL = "instant", "hitl"

Node = Callable[..., Awaitable[Any]]


class BenchState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    thread_id: str
    hitl_answer: str | None
    result: dict[str, Any]


def _one_node(name: str, node: Node) -> StateGraph[Any, Any, Any, Any]:
    graph: StateGraph[Any, Any, Any, Any] = StateGraph(BenchState)
    graph.add_node(name, node)
    graph.add_edge(START, name)
    graph.add_edge(name, END)
    return graph


async def instant(state: BenchState) -> dict[str, Any]:
    return {"result": {"ok": True}}


async def ask_native(state: BenchState) -> dict[str, Any]:
    answer = interrupt({"question": QUESTION})
    return {"result": {"answer": answer}}


def instant_graph() -> StateGraph[Any, Any, Any, Any]:
    return _one_node("instant", instant)


def native_hitl_graph() -> StateGraph[Any, Any, Any, Any]:
    """What a LangGraph user writes: ``interrupt()`` inside the node."""
    return _one_node("ask", ask_native)


def returning_hitl_graph() -> StateGraph[Any, Any, Any, Any]:
    """The same node for llamon-agent: it returns the question, and runs again with the answer."""
    from llamon_agent.core.hitl import HITLInterrupt

    async def ask(state: BenchState) -> dict[str, Any] | HITLInterrupt:
        answer = state.get("hitl_answer")
        if answer is not None:
            return {"result": {"answer": answer}}
        return HITLInterrupt(payload={"question": QUESTION}, thread_id=state["thread_id"])

    return _one_node("ask", ask)


def build_agents() -> list[Any]:
    from llamon_agent import Agent

    return [
        Agent(INSTANT, instant_graph(), description="Completes at once."),
        Agent(HITL, returning_hitl_graph(), description="Asks one question, then completes."),
    ]


def __getattr__(name: str) -> Any:
    if name == "AGENTS":  # ``llamon-agent serve bench.agents:AGENTS``
        return build_agents()
    raise AttributeError(name)
