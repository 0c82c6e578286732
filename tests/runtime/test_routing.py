"""Which task a message lands on: resume vs new task, cancel, completed contexts, agents."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from llamon_agent import Agent
from llamon_agent.core.hitl import HITLInterrupt
from tests.conftest import assert_valid, send_params, serve

from .helpers import (
    BIRTHDAY_PARTS,
    BIRTHDAY_QUESTION,
    DOC_PARTS,
    DOC_QUESTION,
    doc_agent,
    question_text,
    result_data,
    state_of,
    status_parts,
)

REQUEST = "이 서류를 검증해줘"

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


async def test_context_only_answer_resumes_the_waiting_task() -> None:
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="ctx-r1")
        second = await client.send("여권", context_id="ctx-r1")
        assert second["id"] == first["id"]
        assert second["contextId"] == "ctx-r1"
        assert status_parts(second) == BIRTHDAY_PARTS
        history = second["history"]
        assert [m["role"] for m in history] == ["user", "agent", "user"]
        assert history[1]["parts"] == DOC_PARTS
        assert history[2]["parts"] == [{"kind": "text", "text": "여권"}]


async def test_explicit_task_id_answer_resumes_that_task() -> None:
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="ctx-r2")
        second = await client.send("주민등록증", task_id=first["id"])
        assert second["id"] == first["id"]
        assert status_parts(second) == BIRTHDAY_PARTS
        done = await client.send("1990-01-01", task_id=first["id"], context_id="ctx-r2")
    assert done["id"] == first["id"]
    assert result_data(done) == {"doc_type": "id_card", "birthday": "1990-01-01"}


async def test_other_context_starts_a_new_task_and_never_resumes() -> None:
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="ctx-a")
        other = await client.send("여권", context_id="ctx-b")
        assert other["id"] != first["id"]
        assert other["contextId"] == "ctx-b"
        # a fresh run: the first question again, "여권" was the request, not an answer
        assert status_parts(other) == DOC_PARTS
        still = await client.result("tasks/get", {"id": first["id"]})
        assert state_of(still) == "input-required"
        assert status_parts(still) == DOC_PARTS
        resumed = await client.send("passport", context_id="ctx-a")
        assert resumed["id"] == first["id"]
        assert question_text(resumed) == BIRTHDAY_QUESTION
        done_b = await client.send("주민등록증", context_id="ctx-b")
        done_b = await client.send("2001-01-01", context_id="ctx-b")
        done_a = await client.send("1990-01-01", context_id="ctx-a")
    assert result_data(done_a) == {"doc_type": "passport", "birthday": "1990-01-01"}
    assert result_data(done_b) == {"doc_type": "id_card", "birthday": "2001-01-01"}


async def test_message_after_cancel_starts_a_new_task_from_the_beginning() -> None:
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="ctx-c")
        await client.send("여권", context_id="ctx-c")  # now waiting for the birthday
        canceled = await client.result("tasks/cancel", {"id": first["id"]})
        assert canceled["id"] == first["id"]
        assert state_of(canceled) == "canceled"
        fresh = await client.send("1990-01-01", context_id="ctx-c")
        assert fresh["id"] != first["id"]
        assert fresh["contextId"] == "ctx-c"
        assert_valid("Task", fresh)
        # never folded into the canceled question: the first question is asked again
        assert state_of(fresh) == "input-required"
        assert status_parts(fresh) == DOC_PARTS
        old = await client.result("tasks/get", {"id": first["id"]})
        assert state_of(old) == "canceled"
        second = await client.send("주민등록증", context_id="ctx-c")
        assert second["id"] == fresh["id"]
        assert status_parts(second) == BIRTHDAY_PARTS
        done = await client.send("2002-02-02", context_id="ctx-c")
    assert done["id"] == fresh["id"]
    assert result_data(done) == {"doc_type": "id_card", "birthday": "2002-02-02"}


async def test_answer_by_task_id_to_a_canceled_task_is_refused() -> None:
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="ctx-c2")
        await client.result("tasks/cancel", {"id": first["id"]})
        body = await client.call(
            "message/send", send_params("여권", task_id=first["id"], context_id="ctx-c2")
        )
    assert body["error"]["code"] == -32004


class TurnState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    thread_id: str
    a2a_task_id: str
    turns: int
    name: str | None
    result: dict[str, Any]


def turn_counting_graph() -> StateGraph:
    async def count(state: TurnState) -> dict[str, Any]:
        return {"turns": state.get("turns", 0) + 1}

    async def ask_name(state: TurnState) -> dict[str, Any] | HITLInterrupt:
        if not state.get("name"):
            return HITLInterrupt({"question": "name?"}, state["thread_id"], key="name")
        return {}

    async def finish(state: TurnState) -> dict[str, Any]:
        return {
            "result": {
                "turns": state["turns"],
                "name": state["name"],
                "said": [m.text for m in state["messages"] if m.type == "human"],
                "task": state["a2a_task_id"],
            }
        }

    g = StateGraph(TurnState)
    g.add_node("count", count)
    g.add_node("ask_name", ask_name)
    g.add_node("finish", finish)
    g.add_edge(START, "count")
    g.add_edge("count", "ask_name")
    g.add_edge("ask_name", "finish")
    g.add_edge("finish", END)
    return g


async def test_completed_context_next_message_is_a_new_task_on_the_same_thread() -> None:
    async with serve([Agent("turns", turn_counting_graph())]) as client:
        first = await client.send("hello", context_id="ctx-t")
        assert question_text(first) == "name?"
        done1 = await client.send("Ann", context_id="ctx-t")
        assert done1["id"] == first["id"]
        assert result_data(done1) == {
            "turns": 1,
            "name": "Ann",
            "said": ["hello"],
            "task": first["id"],
        }
        done2 = await client.send("again", context_id="ctx-t")
        assert done2["id"] != first["id"]
        assert done2["contextId"] == "ctx-t"
        assert result_data(done2) == {
            "turns": 2,
            "name": "Ann",
            "said": ["hello", "again"],
            "task": done2["id"],
        }
        old = await client.result("tasks/get", {"id": first["id"]})
    assert state_of(old) == "completed"
    assert result_data(old)["turns"] == 1


async def test_completed_doc_review_context_starts_a_fresh_review() -> None:
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="ctx-again")
        await client.send("여권", context_id="ctx-again")
        await client.send("1990-01-01", context_id="ctx-again")
        fresh = await client.send(REQUEST, context_id="ctx-again")
    assert fresh["id"] != first["id"]
    assert status_parts(fresh) == DOC_PARTS
    assert fresh.get("artifacts") in (None, [])


def simple_asker() -> StateGraph:
    async def ask(state: TurnState) -> dict[str, Any] | HITLInterrupt:
        if not state.get("name"):
            return HITLInterrupt({"question": "agent b asks"}, state["thread_id"], key="name")
        return {"result": {"agent": "b", "name": state["name"]}}

    g = StateGraph(TurnState)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    return g


async def test_context_sticks_to_its_agent() -> None:
    agents = [doc_agent(agent_id="agent-a"), Agent("agent-b", simple_asker())]
    async with serve(agents) as client:
        first = await client.send("start", context_id="ctx-b", agent_id="agent-b")
        assert question_text(first) == "agent b asks"
        wrong = await client.call(
            "message/send", send_params("여권", context_id="ctx-b", agent_id="agent-a")
        )
        assert wrong["error"]["code"] == -32602
        still = await client.result("tasks/get", {"id": first["id"]})
        assert state_of(still) == "input-required"
        done = await client.send("Bo", context_id="ctx-b")  # no agentId
        assert done["id"] == first["id"]
        assert result_data(done) == {"agent": "b", "name": "Bo"}
        wrong_after = await client.call(
            "message/send", send_params("again", context_id="ctx-b", agent_id="agent-a")
        )
        assert wrong_after["error"]["code"] == -32602
        # the default agent (first served) still serves contexts without history
        other = await client.send(REQUEST, context_id="ctx-a")
    assert status_parts(other) == DOC_PARTS
    assert question_text(other) == DOC_QUESTION
