"""Answers that are refused, keyed, concurrent or looping; streaming a resume."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph

from app.nodes import until_done_graph
from llamon_agent import Agent
from llamon_agent.core.hitl import HITLInterrupt
from tests.conftest import parse_sse, rpc, send_params, serve

from .helpers import (
    BIRTHDAY_PARTS,
    DOC_PARTS,
    doc_agent,
    question_text,
    result_data,
    state_of,
    status_parts,
)

REQUEST = "이 서류를 검증해줘"

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


async def test_empty_answer_is_refused_and_the_question_stays() -> None:
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="ctx-e")
        body = await client.call("message/send", send_params("   ", context_id="ctx-e"))
        assert body["error"]["code"] == -32602
        got = await client.result("tasks/get", {"id": first["id"]})
        assert state_of(got) == "input-required"
        assert status_parts(got) == DOC_PARTS
        second = await client.send("여권", context_id="ctx-e")
    assert status_parts(second) == BIRTHDAY_PARTS


async def test_unknown_interrupt_id_is_refused_and_a_retry_succeeds() -> None:
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="ctx-id")
        interrupt_id = first["status"]["message"]["metadata"]["interruptId"]
        assert len(interrupt_id) == 32
        unknown = "0" * 32 if interrupt_id != "0" * 32 else "1" * 32
        body = await client.call(
            "message/send",
            send_params(None, context_id="ctx-id", data={"resume": {unknown: "passport"}}),
        )
        assert body["error"]["code"] == -32602
        got = await client.result("tasks/get", {"id": first["id"]})
        assert state_of(got) == "input-required"
        assert status_parts(got) == DOC_PARTS
        second = await client.send(
            None, context_id="ctx-id", data={"resume": {interrupt_id: "주민등록증"}}
        )
        assert second["id"] == first["id"]
        assert status_parts(second) == BIRTHDAY_PARTS
        done = await client.send("1990-01-01", context_id="ctx-id")
    assert result_data(done)["doc_type"] == "id_card"


async def test_reask_keeps_the_same_interrupt_id() -> None:
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="ctx-rid")
        reask = await client.send("모르겠어", context_id="ctx-rid")
    assert (
        reask["status"]["message"]["metadata"]["interruptId"]
        == first["status"]["message"]["metadata"]["interruptId"]
    )
    assert reask["status"]["message"]["messageId"] != first["status"]["message"]["messageId"]


class GateState(TypedDict, total=False):
    thread_id: str
    a: str | None
    result: dict[str, Any]


async def test_second_answer_while_the_resume_runs_is_refused_busy() -> None:
    runs: list[Any] = []
    entered = asyncio.Event()
    release = asyncio.Event()

    async def ask(state: GateState) -> dict[str, Any] | HITLInterrupt:
        runs.append(state.get("a"))
        if state.get("a") is None:
            return HITLInterrupt({"question": "a?"}, state["thread_id"], key="a")
        entered.set()
        await release.wait()
        return {"result": {"a": state["a"]}}

    g = StateGraph(GateState)
    g.add_node("ask", ask)
    g.add_edge(START, "ask")
    g.add_edge("ask", END)
    async with serve([Agent("gate", g)]) as client:
        first = await client.send("go", context_id="ctx-busy")
        pending = await client.send(
            "first answer", context_id="ctx-busy", configuration={"blocking": False}
        )
        assert pending["id"] == first["id"]
        await asyncio.wait_for(entered.wait(), 5)
        body = await client.call(
            "message/send", send_params("second answer", context_id="ctx-busy")
        )
        assert body["error"]["code"] == -32004
        release.set()
        for _ in range(200):
            done = await client.result("tasks/get", {"id": first["id"]})
            if state_of(done) == "completed":
                break
            await asyncio.sleep(0.01)
    assert result_data(done) == {"a": "first answer"}
    assert runs == [None, "first answer"]


async def test_until_done_agent_loops_without_replaying_answers() -> None:
    async with serve([Agent("until-done", until_done_graph())]) as client:
        first = await client.send("take notes", context_id="ctx-notes")
        assert question_text(first) == "What should I note? Say 'done' when you are finished."
        second = await client.send("milk", context_id="ctx-notes")
        assert question_text(second) == (
            "Noted (1). Anything else? Say 'done' when you are finished."
        )
        third = await client.send("eggs", context_id="ctx-notes")
        assert question_text(third) == (
            "Noted (2). Anything else? Say 'done' when you are finished."
        )
        done = await client.send(" DONE ", context_id="ctx-notes")
    assert {second["id"], third["id"], done["id"]} == {first["id"]}
    assert result_data(done) == {"notes": ["milk", "eggs"]}
    texts = [p["text"] for p in done["artifacts"][0]["parts"] if p["kind"] == "text"]
    assert texts == ["Done. 2 note(s): milk; eggs"]


async def test_streamed_answer_ends_completed_with_the_artifact() -> None:
    async with serve([doc_agent()]) as client:
        first = await client.send(REQUEST, context_id="ctx-s")
        await client.send("여권", context_id="ctx-s")
        params = send_params("1990-01-01", context_id="ctx-s")
        async with client.http.stream("POST", "/", json=rpc("message/stream", params)) as resp:
            assert resp.status_code == 200
            raw = (await resp.aread()).decode()
    events = [e["data"]["result"] for e in parse_sse(raw.replace("\r\n", "\n"))]
    assert all(e.get("taskId", e.get("id")) == first["id"] for e in events)
    artifacts = [e for e in events if e["kind"] == "artifact-update"]
    assert len(artifacts) == 1
    assert artifacts[0]["artifact"]["parts"][0] == {
        "kind": "data",
        "data": {"doc_type": "passport", "birthday": "1990-01-01"},
    }
    last = events[-1]
    assert last["kind"] == "status-update"
    assert last["final"] is True
    assert last["status"]["state"] == "completed"
    assert not any(
        e["kind"] == "status-update" and e["status"]["state"] == "input-required" for e in events
    )
