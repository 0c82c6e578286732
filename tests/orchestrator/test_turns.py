"""Orchestrator turns with small test agents: the notice flow, resume points read once and
cleared at completion, forwarded free-text questions, child failures, ``ctx.data``."""

from __future__ import annotations

from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from llamon_agent import Agent
from llamon_agent.core.hitl import HITLInterrupt
from llamon_agent.orchestrator import Emission, Orchestrator, TurnContext
from tests.orchestrator.helpers import AUTH, TOKEN, artifact_data, review_id_of, serve_app

NOTICE = "담당자가 확인 후 연락드리겠습니다."  # "a person in charge will check and get back to you"
FIRST = "What is the case number?"
SECOND = "Anything else?"
ENDED = {"completed", "failed", "rejected", "canceled"}

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


class AskState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    thread_id: str
    first: str | None
    second: str | None
    result: dict[str, Any]


def asker() -> Agent:
    """Asks FIRST then SECOND (free text), then returns both answers."""

    async def begin(state: AskState) -> dict[str, Any]:
        return {"first": None, "second": None}

    async def ask_first(state: AskState) -> dict[str, Any] | HITLInterrupt:
        if state.get("first") is None:
            return HITLInterrupt({"question": FIRST}, thread_id=state["thread_id"], key="first")
        return {}

    async def ask_second(state: AskState) -> dict[str, Any] | HITLInterrupt:
        if state.get("second") is None:
            return HITLInterrupt({"question": SECOND}, thread_id=state["thread_id"], key="second")
        return {}

    async def finish(state: AskState) -> dict[str, Any]:
        result = {"first": state.get("first"), "second": state.get("second")}
        return {"result": result, "messages": [AIMessage(content="done")]}

    graph = StateGraph(AskState)
    for name, node in [
        ("begin", begin),
        ("ask_first", ask_first),
        ("ask_second", ask_second),
        ("finish", finish),
    ]:
        graph.add_node(name, node)
    graph.add_edge(START, "begin")
    graph.add_edge("begin", "ask_first")
    graph.add_edge("ask_first", "ask_second")
    graph.add_edge("ask_second", "finish")
    graph.add_edge("finish", END)
    return Agent("asker", graph, name="Asker")


class BoomState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


def boom() -> Agent:
    async def explode(state: BoomState) -> dict[str, Any]:
        raise ValueError("child exploded")

    graph = StateGraph(BoomState)
    graph.add_node("explode", explode)
    graph.add_edge(START, "explode")
    graph.add_edge("explode", END)
    return Agent("boom", graph, name="Boom")


# ---------------------------------------------------------------------------- the notice flow


async def test_the_human_review_notice_flow_completes_with_no_resume_point_and_no_review() -> None:
    seen: list[Any] = []

    async def run_turn(ctx: TurnContext) -> Emission:
        seen.append(ctx.get_resume())
        return ctx.emit({"notice": NOTICE, "request": ctx.data})

    async with serve_app([Orchestrator("notice", run_turn)], reviewer_token=TOKEN) as h:
        task = await h.client.send("대출 문의", data={"amount": 1})
        assert task["status"]["state"] == "completed"
        assert artifact_data(task) == [
            {"notice": NOTICE, "request": {"text": "대출 문의", "amount": 1}}
        ]
        assert await h.resume_point(task["contextId"]) is None
        assert await h.reviews() == []
        assert (await h.app.state.reviews.pending(100)) == []

        # the next message on the context is a new task, not an answer
        again = await h.client.send("또 문의", context_id=task["contextId"])
        assert again["id"] != task["id"]
        assert again["status"]["state"] == "completed"
        assert seen == [None, None]


async def test_a_plain_text_notice_is_the_completed_answer() -> None:
    async def run_turn(ctx: TurnContext) -> Emission:
        return ctx.emit(NOTICE)

    async with serve_app([Orchestrator("notice", run_turn)], reviewer_token=TOKEN) as h:
        task = await h.client.send("hi")
        assert task["status"]["state"] == "completed"
        texts = [p["text"] for p in task["status"]["message"]["parts"] if p["kind"] == "text"]
        assert texts == [NOTICE]
        assert await h.reviews() == []


async def test_a_resume_point_set_on_a_turn_that_completes_does_not_survive_it() -> None:
    seen: list[Any] = []

    async def run_turn(ctx: TurnContext) -> Emission:
        seen.append(ctx.get_resume())
        ctx.set_resume(intent="문의", next_action="call_back")
        return ctx.emit({"notice": NOTICE})

    async with serve_app([Orchestrator("notice", run_turn)]) as h:
        task = await h.client.send("hi")
        assert task["status"]["state"] == "completed"
        assert await h.resume_point(task["contextId"]) is None
        await h.client.send("again", context_id=task["contextId"])
        assert seen == [None, None]


# ---------------------------------------------------------------------------- resume points


async def test_a_resume_point_lives_until_the_reviewer_ends_the_task() -> None:
    seen: list[Any] = []
    point = {"intent": "검수", "next_action": "await_reviewer", "step": 2}

    async def run_turn(ctx: TurnContext) -> Emission:
        seen.append(ctx.get_resume())
        ctx.set_resume(intent="검수", next_action="await_reviewer", step=2)
        return ctx.emit({"answer": 42}, review=True)

    agent = Orchestrator("reviewed", run_turn)
    async with serve_app([agent], reviewer_token=TOKEN, review_wait=0.2) as h:
        task = await h.client.send("go")
        assert task["status"]["state"] == "working"
        assert await h.resume_point(task["contextId"]) == point
        review_id = review_id_of(task)
        assert (await h.review(review_id))["draft"] == {"answer": 42}
        assert (await h.decide(review_id, {"type": "approve"})).status_code == 200
        done = await h.wait_state(task["id"], ENDED)
        assert done["status"]["state"] == "completed"
        assert artifact_data(done) == [{"answer": 42}]
        assert await h.resume_point(task["contextId"]) is None

        # the next task on the context starts without it
        second = await h.client.send("again", context_id=task["contextId"])
        assert second["id"] != task["id"]
        assert seen == [None, None]


async def test_forwarded_free_text_questions_and_a_resume_point_read_once() -> None:
    seen: list[tuple[Any, dict[str, Any]]] = []

    async def run_turn(ctx: TurnContext) -> Emission:
        resume = ctx.get_resume()
        seen.append((resume, dict(ctx.data)))
        child = await ctx.call("asker", data=ctx.data)
        if child.needs_human and resume is None:
            ctx.set_resume(intent="case", next_action="answer_asker")
        return ctx.emit(child)

    agents = [Orchestrator("orch", run_turn), asker()]
    async with serve_app(agents) as h:
        first = await h.client.send("start", data={"case": "A"})
        context_id = first["contextId"]
        assert first["status"]["state"] == "input-required"
        assert first["status"]["message"]["parts"] == [
            {"kind": "text", "text": FIRST},
            {"kind": "data", "data": {"hitl": {"question": FIRST}}},
        ]
        assert await h.resume_point(context_id) == {"intent": "case", "next_action": "answer_asker"}

        second = await h.client.send("C-17", context_id=context_id)
        assert second["id"] == first["id"]
        assert second["status"]["state"] == "input-required"
        assert second["status"]["message"]["parts"][0] == {"kind": "text", "text": SECOND}
        # read once: this turn did not set it again, so it is gone
        assert await h.resume_point(context_id) is None

        third = await h.client.send("nothing", context_id=context_id)
        assert third["status"]["state"] == "completed"
        assert artifact_data(third) == [{"first": "C-17", "second": "nothing"}]

        assert seen == [
            (None, {"text": "start", "case": "A"}),
            ({"intent": "case", "next_action": "answer_asker"}, {"text": "C-17"}),
            (None, {"text": "nothing"}),
        ]
        child = await h.get_child(await h.child_task_id(f"{context_id}::asker"))
        assert child["status"]["state"] == "completed"
        assert child["contextId"] == f"{context_id}::asker"


# ---------------------------------------------------------------------------- failures


async def test_a_failing_local_child_fails_the_task_with_a_message_naming_it() -> None:
    async def run_turn(ctx: TurnContext) -> Emission:
        return ctx.emit(await ctx.call("boom", data=ctx.data))

    async with serve_app([Orchestrator("orch", run_turn), boom()]) as h:
        task = await h.client.send("go")
        assert task["status"]["state"] == "failed"
        text = task["status"]["message"]["parts"][0]["text"]
        assert "'boom'" in text
        assert "failed" in text


async def test_an_unknown_child_fails_the_task_naming_it() -> None:
    async def run_turn(ctx: TurnContext) -> Emission:
        return ctx.emit(await ctx.call("nobody", data=ctx.data))

    async with serve_app([Orchestrator("orch", run_turn)]) as h:
        task = await h.client.send("go")
        assert task["status"]["state"] == "failed"
        assert "'nobody'" in task["status"]["message"]["parts"][0]["text"]


async def test_run_turn_must_return_an_emission() -> None:
    async def run_turn(ctx: TurnContext) -> Any:
        return {"not": "emitted"}

    async with serve_app([Orchestrator("orch", run_turn)]) as h:
        task = await h.client.send("go")
        assert task["status"]["state"] == "failed"
        assert "ctx.emit" in task["status"]["message"]["parts"][0]["text"]


async def test_the_review_endpoints_list_only_pending_reviews() -> None:
    async def run_turn(ctx: TurnContext) -> Emission:
        return ctx.emit(ctx.data, review=True)

    async with serve_app(
        [Orchestrator("orch", run_turn)], reviewer_token=TOKEN, review_wait=0.05
    ) as h:
        a = await h.client.send("a")
        b = await h.client.send("b")
        ids = {review_id_of(a), review_id_of(b)}
        assert {r["id"] for r in await h.reviews()} == ids
        assert (await h.decide(review_id_of(a), {"type": "approve"})).status_code == 200
        await h.wait_state(a["id"], ENDED)
        listed = (await h.http.get("/reviews", headers=AUTH)).json()["reviews"]
        listed_ids = {r["id"] for r in listed}
        assert review_id_of(b) in listed_ids
        assert review_id_of(a) not in listed_ids
