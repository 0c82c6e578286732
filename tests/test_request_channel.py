"""core/hitl_graph.py's ``RequestChannel`` holds what LangGraph's ``BinaryOperatorAggregate``
holds for ``Annotated[dict[str, Any], _merge_requests]`` (the channel it replaced, bench/README.md
"Speed, round thirty"): the same value, availability and checkpoint after any updates, copies and
restores, so checkpoints written by either read back the same."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from langgraph.channels.binop import BinaryOperatorAggregate
from langgraph.graph import START, StateGraph
from typing_extensions import TypedDict

from llamon_agent.core.hitl_graph import (
    CLEAR,
    REQUEST_KEY,
    RequestChannel,
    _merge_requests,
    hitl_builder,
)

origins = st.sampled_from(["ask", "book", "pay"])
requests = st.dictionaries(
    st.one_of(origins, st.just(CLEAR)),
    st.one_of(st.none(), st.fixed_dictionaries({"key": st.text(max_size=3),
                                                "payload": st.integers()})),
    max_size=3,
)
steps = st.lists(st.one_of(
    st.tuples(st.just("update"), st.lists(requests, max_size=3)),
    st.tuples(st.just("copy"), st.none()),
    st.tuples(st.just("restore"), st.none()),
), max_size=12)


def theirs() -> Any:
    channel = BinaryOperatorAggregate(dict[str, Any], _merge_requests)
    channel.key = REQUEST_KEY
    return channel


def ours() -> RequestChannel:
    channel = RequestChannel(_merge_requests)
    channel.key = REQUEST_KEY
    return channel


@settings(max_examples=300, deadline=None)
@given(steps)
def test_it_holds_what_langgraphs_reducer_channel_holds(script: list[tuple[str, Any]]) -> None:
    a, b = ours(), theirs()
    for what, values in script:
        if what == "update":
            assert a.update(values) == b.update(values)
        elif what == "copy":
            a, b = a.copy(), b.copy()
        else:  # each restored from the other's checkpoint: the two are interchangeable
            a, b = ours().from_checkpoint(b.checkpoint()), theirs().from_checkpoint(a.checkpoint())
        assert a.get() == b.get()
        assert a.checkpoint() == b.checkpoint()
        assert a.is_available() == b.is_available()
        assert a.key == b.key == REQUEST_KEY


def test_a_thread_without_the_channel_starts_empty() -> None:
    # LangGraph passes a private sentinel for a value the checkpoint lacks (a fresh thread:
    # the compiled graph below runs on one); any value that is not a dict stands for it here
    missing = object()
    restored = ours().from_checkpoint(missing)
    assert restored.get() == {} and restored.is_available()
    assert restored.key == REQUEST_KEY
    assert restored.update([]) is False


def test_a_compiled_graph_runs_on_it() -> None:
    class State(TypedDict):
        result: str

    builder = StateGraph(State)
    builder.add_node("ask", lambda state: {"result": "done"})
    builder.add_edge(START, "ask")
    compiled = hitl_builder(builder).compile()
    channel = compiled.channels[REQUEST_KEY]
    assert isinstance(channel, RequestChannel)
    assert channel == RequestChannel(_merge_requests)
    assert channel != RequestChannel(lambda a, b: {})
    assert channel.ValueType is dict and channel.UpdateType is dict
    assert compiled.invoke({"result": ""})["result"] == "done"
