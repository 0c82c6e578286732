"""Issue 9: an ``Agent`` whose graph can produce no output the SDK reads warns at construction.

LangGraph drops a node's update for a key the state schema lacks without a word, so before this
warning such an agent completed every task with no artifact and nobody was told.
"""

from __future__ import annotations

import warnings
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AnyMessage
from langgraph.graph import START, StateGraph
from langgraph.graph.message import add_messages

from llamon_agent import Agent
from llamon_agent.agent import OutputlessGraphWarning
from tests.conftest import serve


class NoOutput(TypedDict, total=False):
    thread_id: str
    doc_type: str


class WithResult(TypedDict, total=False):
    thread_id: str
    result: Any


class WithMessages(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


class Output(TypedDict, total=False):
    result: Any


async def _answer(state: Any) -> dict[str, Any]:
    return {"result": {"ok": True}}


def _builder(schema: Any, **kw: Any) -> StateGraph[Any, Any, Any, Any]:
    graph: StateGraph[Any, Any, Any, Any] = StateGraph(schema, **kw)
    graph.add_node("answer", _answer)
    graph.add_edge(START, "answer")
    return graph


def test_a_state_without_result_or_messages_warns_naming_the_agent_and_the_keys() -> None:
    with pytest.warns(OutputlessGraphWarning, match=r"agent 'silent'.*'result'.*'messages'"):
        Agent("silent", _builder(NoOutput))


def test_a_compiled_graph_without_output_keys_warns_too() -> None:
    with pytest.warns(OutputlessGraphWarning):
        Agent("silent", _builder(NoOutput).compile())


def test_the_warning_is_a_user_warning() -> None:
    assert issubclass(OutputlessGraphWarning, UserWarning)


@pytest.mark.parametrize("builder", [
    _builder(WithResult), _builder(WithMessages), _builder(NoOutput, output_schema=Output),
], ids=["result", "messages", "output-schema"])
def test_a_graph_with_a_key_the_sdk_reads_does_not_warn(builder: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Agent("speaks", builder)


def test_the_example_agents_do_not_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from app.main import AGENTS

        for agent in AGENTS:
            Agent(agent.id, agent.graph)


async def test_what_the_warning_is_about_a_silent_graph_completes_with_no_artifact() -> None:
    with pytest.warns(OutputlessGraphWarning):
        agent = Agent("silent", _builder(NoOutput))
    async with serve([agent]) as client:
        task = await client.send("hello")
    assert task["status"]["state"] == "completed"
    assert task.get("artifacts", []) == []
