"""A question's deadline: shown as ``expires_at``, applied once by the sweeper (a default answer
or a cancel), late answers refused; on both backends."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from app.nodes import document_review_graph
from llamon_agent import Agent
from llamon_agent.core.clock import parse_iso
from llamon_agent.core.deadlines import AnswerWith, Cancel, Deadline, WaitPolicy
from tests.conftest import assert_valid, send_params
from tests.deadlines.helpers import serve_clocked
from tests.runtime.helpers import BIRTHDAY_QUESTION, DOC_PAYLOAD, DOC_QUESTION

pytestmark = pytest.mark.usefixtures("backend")


def doc_agent(policy: WaitPolicy | None) -> Agent:
    return Agent("document-review", document_review_graph(), wait_policy=policy)


def hitl_of(task: dict[str, Any]) -> dict[str, Any]:
    parts = task["status"]["message"]["parts"]
    return next(p["data"]["hitl"] for p in parts if p["kind"] == "data")


def interrupt_of(task: dict[str, Any]) -> str:
    return str(task["status"]["message"]["metadata"]["interruptId"])


async def test_without_a_policy_a_question_has_no_deadline() -> None:
    async with serve_clocked([doc_agent(None)]) as served:
        task = await served.client.send("start")
        assert hitl_of(task) == DOC_PAYLOAD  # seed 004's payload, untouched
        report = await served.later(10 * 365 * 24 * 3600)
        assert report.handled["deadlines"] == 0
        stored = await served.client.result("tasks/get", {"id": task["id"]})
        assert stored["status"]["state"] == "input-required"


async def test_expires_at_is_shown_in_the_hitl_part_beside_the_payload() -> None:
    policy = WaitPolicy(questions=Deadline(600, AnswerWith("passport")))
    async with serve_clocked([doc_agent(policy)]) as served:
        task = await served.client.send("start")
        assert_valid("Task", task)
        hitl = hitl_of(task)
        assert {k: v for k, v in hitl.items() if k != "expires_at"} == DOC_PAYLOAD
        waited = parse_iso(hitl["expires_at"]) - parse_iso(task["status"]["timestamp"])
        assert 599 <= waited.total_seconds() <= 601
        assert hitl["expires_at"].endswith("Z")
        stored = await served.client.result("tasks/get", {"id": task["id"]})
        assert hitl_of(stored)["expires_at"] == hitl["expires_at"]


async def test_a_default_answer_is_given_once_and_the_next_question_gets_its_own_deadline() -> None:
    policy = WaitPolicy(questions=Deadline(600, AnswerWith("passport")))
    async with serve_clocked([doc_agent(policy)]) as served:
        task = await served.client.send("start")
        first = interrupt_of(task)
        assert (await served.later(599)).handled["deadlines"] == 0  # not yet
        report = await served.later(2)
        assert report.handled["deadlines"] == 1
        assert (await served.sweep()).handled["deadlines"] == 0  # once
        after = await served.settled(task["id"])
        assert after["status"]["state"] == "input-required"
        assert after["status"]["message"]["parts"][0]["text"] == BIRTHDAY_QUESTION
        assert interrupt_of(after) != first
        answer = after["history"][-1]
        assert answer["role"] == "user"
        assert answer["parts"] == [{"kind": "text", "text": "passport"}]
        assert answer["metadata"]["answeredBy"] == "deadline"
        next_deadline = parse_iso(hitl_of(after)["expires_at"])
        assert next_deadline > parse_iso(hitl_of(task)["expires_at"])


async def test_a_late_answer_to_the_expired_question_is_refused_and_changes_nothing() -> None:
    policy = WaitPolicy(questions=Deadline(60, AnswerWith("passport")))
    async with serve_clocked([doc_agent(policy)]) as served:
        task = await served.client.send("start")
        first = interrupt_of(task)
        await served.later(61)
        before = await served.settled(task["id"])
        late = send_params("id_card", context_id=task["contextId"])
        late["message"]["metadata"] = {"interruptId": first}
        body = await served.client.call("message/send", late)
        assert body["error"]["code"] == -32602
        assert body["error"]["data"] == {
            "reason": "question expired", "taskId": task["id"], "interruptId": first,
            "expiredAt": None,
        }
        after = await served.client.result("tasks/get", {"id": task["id"]})
        assert after == before
        # a plain message on the context answers the question asked now (normal routing)
        answered = await served.client.send("1990-01-01", context_id=task["contextId"])
        assert answered["status"]["state"] == "completed"


async def test_an_answer_after_the_deadline_but_before_the_sweep_is_refused() -> None:
    policy = WaitPolicy(questions=Deadline(60, AnswerWith("passport")))
    async with serve_clocked([doc_agent(policy)]) as served:
        task = await served.client.send("start")
        served.clock.advance(61)  # the deadline passed; no sweep yet
        body = await served.client.call(
            "message/send", send_params("id_card", context_id=task["contextId"]))
        assert body["error"]["code"] == -32602
        assert body["error"]["data"]["reason"] == "question expired"
        assert body["error"]["data"]["expiredAt"] == hitl_of(task)["expires_at"]
        await served.sweep()  # the policy answers, as if no late answer had come
        after = await served.settled(task["id"])
        assert after["history"][-1]["parts"] == [{"kind": "text", "text": "passport"}]


async def test_a_cancel_policy_cancels_the_task_and_says_why() -> None:
    policy = WaitPolicy(questions=Deadline(60, Cancel("No answer within a minute.")))
    async with serve_clocked([doc_agent(policy)]) as served:
        task = await served.client.send("start")
        first = interrupt_of(task)
        assert (await served.later(61)).handled["deadlines"] == 1
        assert (await served.sweep()).handled["deadlines"] == 0
        after = await served.client.result("tasks/get", {"id": task["id"]})
        assert after["status"]["state"] == "canceled"
        assert after["status"]["message"]["parts"] == [
            {"kind": "text", "text": "No answer within a minute."}]
        assert after["status"]["message"]["metadata"] == {"expiredAt": hitl_of(task)["expires_at"]}
        # a late answer bound to the question: expired; one naming the task: terminal (-32004)
        late = send_params("passport", context_id=task["contextId"])
        late["message"]["metadata"] = {"interruptId": first}
        body = await served.client.call("message/send", late)
        assert body["error"]["data"]["reason"] == "question expired"
        body = await served.client.call(
            "message/send", send_params("passport", task_id=task["id"]))
        assert body["error"]["code"] == -32004
        # a plain message on the context starts a new task (normal routing)
        fresh = await served.client.send("start", context_id=task["contextId"])
        assert fresh["id"] != task["id"]
        assert fresh["status"]["message"]["parts"][0]["text"] == DOC_QUESTION


async def test_a_questions_own_deadline_wins_over_the_agents() -> None:
    from langgraph.graph import END, START, StateGraph
    from typing_extensions import TypedDict

    from llamon_agent import HITLInterrupt, HITLQuestion

    class State(TypedDict, total=False):
        thread_id: str
        hitl_answer: str | None
        result: dict[str, Any]

    async def ask(state: State) -> dict[str, Any] | HITLInterrupt:
        if state.get("hitl_answer") is None:
            question = HITLQuestion("Ship it?", expires_in=30, on_expiry=AnswerWith("no"))
            return HITLInterrupt(question, state["thread_id"])
        return {"result": {"ship": state["hitl_answer"]}}

    graph = StateGraph(State)
    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    policy = WaitPolicy(questions=Deadline(3600, Cancel()))
    async with serve_clocked([Agent("shipper", graph, wait_policy=policy)]) as served:
        task = await served.client.send("go")
        hitl = hitl_of(task)
        assert "__llamon_deadline__" not in hitl
        assert set(hitl) == {"schema", "question", "options", "choices", "multi_select",
                             "free_text_allowed", "expires_at"}
        await served.later(31)
        after = await served.settled(task["id"])
        assert after["status"]["state"] == "completed"
        assert after["artifacts"][0]["parts"][0]["data"] == {"ship": "no"}


async def test_a_cancel_deadline_on_an_orchestrator_cancels_its_waiting_child() -> None:
    from app.orchestrator import FINALIZE, RISK, run_turn
    from llamon_agent import Orchestrator
    from llamon_agent.core.principal import context_key
    from tests.orchestrator.helpers import CHILDREN, HIGH_RISK

    loan = Orchestrator("loan", run_turn,
                        wait_policy=WaitPolicy(questions=Deadline(60, Cancel("too slow"))))
    async with serve_clocked([loan, RISK, FINALIZE]) as served:
        task = await served.client.send(data=HIGH_RISK, agent_id="loan")
        assert task["status"]["state"] == "input-required"
        assert "expires_at" in hitl_of(task)
        manager = served.app.state.manager
        child = await manager._store.latest_in_context(
            context_key(CHILDREN, f"{task['contextId']}::risk"))
        assert child is not None and child.state == "input-required"
        await served.later(61)
        done = await served.settled(task["id"])
        assert done["status"]["state"] == "canceled"
        child_after = await manager._store.get(child.id)
        assert child_after is not None and child_after.state == "canceled"


async def test_in_real_time_the_running_sweeper_applies_a_deadline() -> None:
    """No clock moved, no sweep called: the server's own sweeper (every 50 ms) acts."""
    from tests.conftest import serve

    policy = WaitPolicy(questions=Deadline(0.2, Cancel("gone")))
    async with serve([doc_agent(policy)], sweep_every=0.05) as client:
        task = await client.send("start")
        for _ in range(500):  # generous: 10 s
            done = await client.result("tasks/get", {"id": task["id"]})
            if done["status"]["state"] == "canceled":
                break
            await asyncio.sleep(0.02)
        assert done["status"]["state"] == "canceled"
