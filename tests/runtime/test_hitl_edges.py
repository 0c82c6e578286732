"""A wrapped node follows its static edges itself (``core/hitl_graph.py``, ``_onward``): to
``__hitl__`` when it asked, else where the edges went. What a node returns must reach the
graph as it did with the edges in the graph: a ``Command``'s own ``goto`` beside the edges, a
list of outputs, and LangGraph's error for an output it cannot take."""

from __future__ import annotations

import operator
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.errors import InvalidUpdateError
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command

from llamon_agent import Agent
from llamon_agent.core.hitl import HITLInterrupt
from llamon_agent.core.hitl_graph import HITL_NODE
from tests.conftest import serve

from .helpers import question_text, result_data


class State(TypedDict, total=False):
    thread_id: str
    log: Annotated[list[str], operator.add]
    a: str | None
    result: Any


def logger(name: str, out: Any = None) -> Callable[[State], Awaitable[Any]]:
    async def node(state: State) -> Any:
        return {"log": [name]} if out is None else out

    return node


def graph_with(first_out: Any, *, edges: tuple[str, ...] = ("second",)) -> StateGraph[Any]:
    """``first`` returns ``first_out`` and has static edges to ``edges``."""
    g: StateGraph[Any] = StateGraph(State)
    g.add_node("first", logger("first", first_out))
    g.add_node("second", logger("second"))
    g.add_node("third", logger("third"))
    g.add_edge(START, "first")
    for target in edges:
        g.add_edge("first", target)
    g.add_edge("second", END)
    g.add_edge("third", END)
    return g


async def run(g: StateGraph[Any]) -> dict[str, Any]:
    compiled = Agent("edges", g).compile(InMemorySaver())
    return await compiled.ainvoke({"log": []}, {"configurable": {"thread_id": "t"}})


async def test_a_dict_goes_along_every_static_edge() -> None:
    out = await run(graph_with({"log": ["first"]}, edges=("second", "third")))
    assert sorted(out["log"]) == ["first", "second", "third"]


async def test_a_node_without_static_edges_ends_its_branch() -> None:
    out = await run(graph_with({"log": ["first"]}, edges=()))
    assert out["log"] == ["first"]


async def test_a_commands_goto_is_followed_beside_the_static_edges() -> None:
    command = Command(update={"log": ["first"]}, goto="third")
    out = await run(graph_with(command))
    assert sorted(out["log"]) == ["first", "second", "third"]


async def test_a_list_of_outputs_applies_each_and_follows_the_edges() -> None:
    outputs = [Command(update={"log": ["first"]}, goto="third"), {"log": ["first again"]}]
    out = await run(graph_with(outputs))
    assert sorted(out["log"]) == ["first", "first again", "second", "third"]


async def test_none_writes_nothing_and_follows_the_edges() -> None:
    async def silent(state: State) -> None:
        return None

    g: StateGraph[Any] = StateGraph(State)
    g.add_node("first", silent)
    g.add_node("second", logger("second"))
    g.add_edge(START, "first")
    g.add_edge("first", "second")
    out = await run(g)
    assert out["log"] == ["second"]


@pytest.mark.parametrize("bad", ["a string", 42, ("log", ["x"])])
async def test_an_output_langgraph_cannot_take_is_its_error(bad: Any) -> None:
    with pytest.raises(InvalidUpdateError, match="Expected dict"):
        await run(graph_with(bad))


def test_the_drawing_shows_the_edges_and_the_hitl_node() -> None:
    drawn = Agent("edges", graph_with({}, edges=("second", "third"))).compile(
        InMemorySaver()).get_graph()
    out_of_first = {(e.target, e.conditional) for e in drawn.edges if e.source == "first"}
    assert out_of_first == {("second", True), ("third", True), (HITL_NODE, True)}


async def test_a_node_asking_with_an_update_goes_to_the_hitl_node_alone() -> None:
    """Its update is kept, and its static edge is followed only once it has its answer."""
    ran: list[str] = []

    async def ask(state: State) -> Any:
        ran.append("ask")
        if state.get("a") is None:
            return HITLInterrupt({"question": "a?"}, state["thread_id"], key="a",
                                 update={"log": ["asked"]})
        return {"log": ["answered"]}

    async def after(state: State) -> dict[str, Any]:
        ran.append("after")
        return {"result": {"a": state.get("a"), "log": state.get("log")}}

    g: StateGraph[Any] = StateGraph(State)
    g.add_node("ask", ask)
    g.add_node("after", after)
    g.add_edge(START, "ask")
    g.add_edge("ask", "after")
    async with serve([Agent("asker", g)]) as client:
        first = await client.send("go", context_id="ctx-edges")
        assert question_text(first) == "a?"
        assert ran == ["ask"]
        done = await client.send("yes", context_id="ctx-edges")
    assert ran == ["ask", "ask", "after"]
    assert result_data(done) == {"a": "yes", "log": ["asked", "answered"]}
