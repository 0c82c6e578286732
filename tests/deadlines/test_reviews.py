"""Deadlines that never approve: a tool review and a reviewer's draft are rejected (or their
task canceled) once, shown as ``expires_at`` / ``expiresAt``; late decisions are refused."""

from __future__ import annotations

from typing import Any

import pytest

from app.assistant import email_assistant
from app.outbox import Outbox
from llamon_agent import Agent, InterruptOnConfig
from llamon_agent.core.clock import parse_iso
from llamon_agent.core.deadlines import Cancel, Deadline, Reject, WaitPolicy
from tests.conftest import send_params
from tests.deadlines.helpers import MovableClock, serve_clocked
from tests.orchestrator.helpers import serve_loan
from tests.tool_review.helpers import SEED_REQUEST, payload

pytestmark = pytest.mark.usefixtures("backend")


def assistant(outbox: Outbox, policy: WaitPolicy | None = None,
              expires_in: float | None = 300) -> Agent:
    agent = email_assistant(
        outbox, interrupt_on={"send_email": InterruptOnConfig(expires_in=expires_in)})
    agent.wait_policy = policy or WaitPolicy()
    return agent


def hitl_of(task: dict[str, Any]) -> dict[str, Any]:
    parts = task["status"]["message"]["parts"]
    return next(p["data"]["hitl"] for p in parts if p["kind"] == "data")


async def test_a_tool_review_shows_expires_at_beside_the_seed_payload() -> None:
    outbox = Outbox(":memory:")
    async with serve_clocked([assistant(outbox)]) as served:
        task = await served.client.send(SEED_REQUEST)
        hitl = hitl_of(task)
        assert set(hitl) == {"schema", "action_requests", "review_configs", "expires_at"}
        seed = {"action_requests": hitl["action_requests"],
                "review_configs": hitl["review_configs"]}
        assert seed == payload(language="en")  # seed 000's payload (default language), untouched
        waited = parse_iso(hitl["expires_at"]) - parse_iso(task["status"]["timestamp"])
        assert 299 <= waited.total_seconds() <= 301


async def test_an_expired_tool_review_is_rejected_once_and_nothing_is_sent() -> None:
    outbox = Outbox(":memory:")
    policy = WaitPolicy(tool_reviews=Deadline(3600, Reject("Timed out waiting for approval.")))
    async with serve_clocked([assistant(outbox, policy)]) as served:
        task = await served.client.send(SEED_REQUEST)
        interrupt = task["status"]["message"]["metadata"]["interruptId"]
        assert (await served.later(299)).handled["deadlines"] == 0
        assert (await served.later(2)).handled["deadlines"] == 1  # the tool's own 300 s
        assert (await served.sweep()).handled["deadlines"] == 0
        done = await served.settled(task["id"])
        assert done["status"]["state"] == "completed"
        assert outbox.count() == 0
        decisions = done["history"][-1]
        assert decisions["parts"] == [{"kind": "data", "data": {"decisions": [
            {"type": "reject", "message": "Timed out waiting for approval."}]}}]
        assert decisions["metadata"]["decidedBy"] == "deadline"
        values = await served.app.state.manager.thread_values(task["contextId"])
        tool_results = [m for m in values["messages"] if m.type == "tool"]
        assert [m.content for m in tool_results] == ["Timed out waiting for approval."]
        assert [m.status for m in tool_results] == ["error"]
        late = send_params(context_id=task["contextId"], data={"decisions": [{"type": "approve"}]})
        late["message"]["metadata"] = {"interruptId": interrupt}
        body = await served.client.call("message/send", late)
        assert body["error"]["data"]["reason"] == "question expired"
        assert outbox.count() == 0


async def test_an_expired_tool_review_may_cancel_the_task_instead() -> None:
    outbox = Outbox(":memory:")
    policy = WaitPolicy(tool_reviews=Deadline(60, Cancel("Nobody approved the email.")))
    async with serve_clocked([assistant(outbox, policy, expires_in=None)]) as served:
        task = await served.client.send(SEED_REQUEST)
        await served.later(61)
        done = await served.settled(task["id"])
        assert done["status"]["state"] == "canceled"
        assert done["status"]["message"]["parts"] == [
            {"kind": "text", "text": "Nobody approved the email."}]
        assert outbox.count() == 0


async def test_the_rest_api_shows_expires_at_beside_pending_review_and_refuses_late() -> None:
    outbox = Outbox(":memory:")
    async with serve_clocked([assistant(outbox)]) as served:
        http = served.client.http
        first = (await http.post("/hitl/chat", json={"message": SEED_REQUEST})).json()
        assert first["pending_review"] is not None
        assert set(first) == {"thread_id", "reply", "pending_review", "interrupt_id",
                              "expires_at", "messages"}
        assert set(first["pending_review"]) == {"action_requests", "review_configs"}
        assert first["expires_at"].endswith("Z")
        served.clock.advance(301)
        late = await http.post("/hitl/review", json={
            "thread_id": first["thread_id"], "interrupt_id": first["interrupt_id"],
            "decisions": [{"type": "approve"}]})
        assert late.status_code == 409, late.text
        assert outbox.count() == 0


async def test_an_expired_draft_is_rejected_through_the_port_once() -> None:
    clock = MovableClock()
    deadline = Deadline(900, Reject("No reviewer decided within 15 minutes."))
    async with serve_loan(clock=clock, draft_deadline=deadline, sweep_every=3600.0) as h:
        task, review_id = await h.to_review()
        shown = await h.review(review_id)
        waited = parse_iso(shown["expiresAt"]) - parse_iso(shown["created"])
        assert waited.total_seconds() == 900
        assert [r["expiresAt"] for r in await h.reviews()] == [shown["expiresAt"]]
        sweeper = h.manager.sweeper
        clock.advance(899)
        assert (await sweeper.sweep_once()).handled["draft deadlines"] == 0
        clock.advance(2)
        late = await h.decide(review_id, {"type": "approve"})  # after it, before the sweep
        assert late.status_code == 409
        assert late.json()["detail"].startswith("review expired")
        assert (await sweeper.sweep_once()).handled["draft deadlines"] == 1
        assert (await sweeper.sweep_once()).handled["draft deadlines"] == 0
        done = await h.wait_state(task["id"], {"completed", "failed", "rejected", "canceled"})
        assert done["status"]["state"] == "rejected"
        assert [p["text"] for p in done["status"]["message"]["parts"]] == [
            "No reviewer decided within 15 minutes."]
        decided = await h.review(review_id)
        assert decided["decidedBy"] == "deadline"
        assert decided["expiresAt"] is None
        assert (await h.decide(review_id, {"type": "approve"})).status_code == 409


async def test_an_expired_draft_may_cancel_its_task() -> None:
    clock = MovableClock()
    deadline = Deadline(60, Cancel("Review window closed."))
    async with serve_loan(clock=clock, draft_deadline=deadline, sweep_every=3600.0) as h:
        task, review_id = await h.to_review()
        clock.advance(61)
        assert (await h.manager.sweeper.sweep_once()).handled["draft deadlines"] == 1
        done = await h.wait_state(task["id"], {"completed", "failed", "rejected", "canceled"})
        assert done["status"]["state"] == "canceled"
        assert (await h.review(review_id))["status"] == "closed"


def test_a_deadline_never_approves() -> None:
    from llamon_agent.core.deadlines import AnswerWith

    with pytest.raises(ValueError, match="never approves"):
        WaitPolicy(tool_reviews=Deadline(60, AnswerWith("approve")))
    with pytest.raises(ValueError, match="does not Reject"):
        WaitPolicy(questions=Deadline(60, Reject()))
    with pytest.raises(ValueError, match="at most"):
        Deadline(10**12)
    with pytest.raises(ValueError, match="above 0"):
        InterruptOnConfig(expires_in=0)
