"""The loan example in process: forwarded question, resume point, review, approve/edit/reject.

``app.main.AGENTS`` with ``reviewer_token="t"`` and ``review_wait=0.3``; the loan request is a
data part sent to agent ``loan``, the children ``risk`` and ``finalize`` are local agents.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from llamon_agent.human_review import InMemoryReviewPort, Review
from tests.orchestrator.helpers import (
    CHILDREN,
    DRAFT_LOW_RISK,
    DRAFT_WITH_COLLATERAL,
    HIGH_RISK,
    LOW_RISK,
    QUESTION_PARTS,
    RESUME_POINT,
    REVIEW_WAIT,
    WAITING_TEXT,
    artifact_data,
    review_id_of,
    serve_loan,
)

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


def texts(message: dict[str, Any]) -> list[str]:
    return [p["text"] for p in message["parts"] if p["kind"] == "text"]


async def test_high_risk_request_forwards_exactly_the_risk_childs_question() -> None:
    async with serve_loan() as h:
        task = await h.send_loan(HIGH_RISK)
        context_id = task["contextId"]

        assert task["status"]["state"] == "input-required"
        assert task["status"]["message"]["parts"] == QUESTION_PARTS
        assert task["status"]["message"]["role"] == "agent"
        assert "artifacts" not in task or not task["artifacts"]

        # the child asked on its own context, mapped from the parent's
        child_context = f"{context_id}::risk"
        assert await h.manager.context_agent(child_context, space=CHILDREN) == "risk"
        child = await h.get_child(await h.child_task_id(child_context))
        assert child["contextId"] == child_context
        assert child["status"]["state"] == "input-required"
        assert child["status"]["message"]["parts"] == task["status"]["message"]["parts"]

        # the resume point is set after the forwarded question
        assert await h.resume_point(context_id) == RESUME_POINT
        assert await h.reviews() == []


async def test_answer_parks_the_task_working_for_a_reviewer_after_review_wait() -> None:
    async with serve_loan() as h:
        first = await h.send_loan(HIGH_RISK)
        context_id = first["contextId"]
        child_context = f"{context_id}::risk"
        child_id = await h.child_task_id(child_context)

        started = time.monotonic()
        task = await h.client.send("예", context_id=context_id)
        elapsed = time.monotonic() - started

        assert task["id"] == first["id"]
        assert task["status"]["state"] == "working"
        assert REVIEW_WAIT * 0.8 <= elapsed < REVIEW_WAIT + 3.0, elapsed
        message = task["status"]["message"]
        assert texts(message) == [WAITING_TEXT]
        review_id = review_id_of(task)
        assert "artifacts" not in task or not task["artifacts"]

        # the reviewer sees the draft
        reviews = await h.reviews()
        assert [r["id"] for r in reviews] == [review_id]
        review = reviews[0]
        assert review["draft"] == DRAFT_WITH_COLLATERAL
        assert review["taskId"] == first["id"]
        assert review["contextId"] == context_id
        assert review["agentId"] == "loan"
        assert review["status"] == "pending"
        assert review["decision"] is None
        assert await h.review(review_id) == review

        # the answer continued the same child conversation: same child task, now completed
        assert await h.child_task_id(child_context) == child_id
        child = await h.get_child(child_id)
        assert child["contextId"] == child_context
        assert child["status"]["state"] == "completed"
        assert artifact_data(child)[0]["collateral"] == "yes"
        assert artifact_data(child)[0]["risk"] == "medium"
        assert (await h.manager.thread_values(child_context, space=CHILDREN))["collateral"] == "yes"

        # still working for tasks/get as well
        assert (await h.get(first["id"]))["status"]["state"] == "working"


async def test_approve_completes_the_task_with_the_draft_and_clears_the_resume_point() -> None:
    async with serve_loan() as h:
        task, review_id = await h.to_review()
        response = await h.decide(review_id, {"type": "approve"})
        assert response.status_code == 200, response.text
        assert response.json()["status"] == "decided"
        assert response.json()["decision"] == {"type": "approve", "edited": None, "message": None}

        done = await h.wait_state(task["id"], {"completed", "failed", "rejected", "canceled"})
        assert done["status"]["state"] == "completed"
        assert artifact_data(done) == [DRAFT_WITH_COLLATERAL]
        assert await h.resume_point(task["contextId"]) is None
        decided = await h.review(review_id)
        assert decided["status"] == "decided"
        assert decided["decision"] == {"type": "approve", "edited": None, "message": None}


@pytest.mark.parametrize(
    ("body", "state"),
    [
        ({"type": "approve"}, "completed"),
        ({"type": "edit", "edited": {"decision": "decline"}}, "completed"),
        ({"type": "reject", "message": "no"}, "rejected"),
    ],
    ids=["approve", "edit", "reject"],
)
async def test_a_decided_review_leaves_no_pending_review_behind(
    body: dict[str, Any], state: str
) -> None:
    """Once the reviewer decided and the task ended, the reviewer's queue is empty: the
    resumed review node must not open a second review for the same task."""
    async with serve_loan() as h:
        task, review_id = await h.to_review()
        assert (await h.decide(review_id, body)).status_code == 200
        done = await h.wait_state(task["id"], {"completed", "failed", "rejected", "canceled"})
        assert done["status"]["state"] == state
        pending = await h.reviews()
        assert [(r["taskId"], r["status"]) for r in pending] == []


async def test_edit_completes_the_task_with_the_edited_answer() -> None:
    edited = {"decision": "decline", "risk": "high", "amount": 90000, "note": "담보 부족"}
    async with serve_loan() as h:
        task, review_id = await h.to_review()
        response = await h.decide(review_id, {"type": "edit", "edited": edited})
        assert response.status_code == 200, response.text
        done = await h.wait_state(task["id"], {"completed", "failed", "rejected", "canceled"})
        assert done["status"]["state"] == "completed"
        assert artifact_data(done) == [edited]
        assert await h.resume_point(task["contextId"]) is None


async def test_reject_ends_the_task_rejected_with_the_reviewers_message() -> None:
    reason = "소득 증빙이 부족합니다."
    async with serve_loan() as h:
        task, review_id = await h.to_review()
        response = await h.decide(review_id, {"type": "reject", "message": reason})
        assert response.status_code == 200, response.text
        done = await h.wait_state(task["id"], {"completed", "failed", "rejected", "canceled"})
        assert done["status"]["state"] == "rejected"
        assert texts(done["status"]["message"]) == [reason]
        assert artifact_data(done) == []


async def test_answer_no_drafts_a_decline() -> None:
    async with serve_loan() as h:
        first = await h.send_loan(HIGH_RISK)
        task = await h.client.send("아니오", context_id=first["contextId"])
        assert task["status"]["state"] == "working"
        review = await h.review(review_id_of(task))
        assert review["draft"] == {
            "decision": "decline",
            "risk": "high",
            "amount": 90000.0,
            "intent": "대출 심사",
        }


async def test_low_risk_request_goes_straight_to_review_without_a_question() -> None:
    async with serve_loan() as h:
        started = time.monotonic()
        task = await h.send_loan(LOW_RISK)
        elapsed = time.monotonic() - started
        assert task["status"]["state"] == "working"
        assert REVIEW_WAIT * 0.8 <= elapsed < REVIEW_WAIT + 3.0, elapsed
        roles = [m["role"] for m in task.get("history") or []]
        assert roles == ["user"]  # no question was ever asked
        review_id = review_id_of(task)
        assert (await h.review(review_id))["draft"] == DRAFT_LOW_RISK
        assert await h.resume_point(task["contextId"]) is None

        assert (await h.decide(review_id, {"type": "approve"})).status_code == 200
        done = await h.wait_state(task["id"], {"completed", "failed", "rejected", "canceled"})
        assert done["status"]["state"] == "completed"
        assert artifact_data(done) == [DRAFT_LOW_RISK]


async def test_blocking_send_returns_the_end_when_the_reviewer_decides_within_the_wait() -> None:
    async with serve_loan(review_wait=5.0) as h:
        first = await h.send_loan(HIGH_RISK)

        async def approve_when_listed() -> None:
            while not (pending := await h.reviews()):
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.1)
            assert (await h.decide(pending[0]["id"], {"type": "approve"})).status_code == 200

        reviewer = asyncio.create_task(approve_when_listed())
        started = time.monotonic()
        task = await h.client.send("예", context_id=first["contextId"])
        elapsed = time.monotonic() - started
        await asyncio.wait_for(reviewer, 5)
        assert task["status"]["state"] == "completed"
        assert elapsed < 4.0, elapsed
        assert artifact_data(task) == [DRAFT_WITH_COLLATERAL]


async def test_second_request_on_the_context_calls_the_same_child_context_again() -> None:
    async with serve_loan() as h:
        task, review_id = await h.to_review()
        context_id = task["contextId"]
        assert (await h.decide(review_id, {"type": "approve"})).status_code == 200
        await h.wait_state(task["id"], {"completed"})
        first_child = await h.child_task_id(f"{context_id}::risk")

        again = await h.client.send(data=HIGH_RISK, context_id=context_id)
        assert again["id"] != task["id"]
        assert again["status"]["state"] == "input-required"
        assert again["status"]["message"]["parts"] == QUESTION_PARTS
        second_child = await h.child_task_id(f"{context_id}::risk")
        assert second_child != first_child
        assert (await h.get_child(second_child))["contextId"] == f"{context_id}::risk"


async def test_a_decision_taken_as_soon_as_the_review_is_listed_is_not_lost() -> None:
    """A fast reviewer (or an automated one) decides the moment the review appears in the
    port, before the turn has finished parking the task; the task must still complete."""
    port = InMemoryReviewPort()
    submitted: list[Review] = []
    original_submit = port.submit

    async def submit(**kw: Any) -> Review:
        review = await original_submit(**kw)
        submitted.append(review)
        return review

    port.submit = submit  # type: ignore[method-assign]
    async with serve_loan(reviews=port) as h:

        async def fast_reviewer() -> None:
            while not submitted:
                await asyncio.sleep(0)
            response = await h.decide(submitted[0].id, {"type": "approve"})
            assert response.status_code == 200, response.text

        reviewer = asyncio.create_task(fast_reviewer())
        task = await h.send_loan(LOW_RISK, configuration={"blocking": False})
        await asyncio.wait_for(reviewer, 5)
        done = await h.wait_state(task["id"], {"completed", "failed", "rejected", "canceled"}, 3.0)
        assert done["status"]["state"] == "completed"
        assert artifact_data(done) == [DRAFT_LOW_RISK]


async def test_cancel_of_a_task_waiting_for_review_is_final() -> None:
    async with serve_loan() as h:
        task, review_id = await h.to_review()
        canceled = await h.client.result("tasks/cancel", {"id": task["id"]})
        assert canceled["status"]["state"] == "canceled"
        assert (await h.get(task["id"]))["status"]["state"] == "canceled"

        # a later decision does not resurrect it
        response = await h.decide(review_id, {"type": "approve"})
        assert response.status_code in (200, 409), response.text
        await asyncio.sleep(REVIEW_WAIT)
        after = await h.get(task["id"])
        assert after["status"]["state"] == "canceled"
        assert artifact_data(after) == []

        # and canceling again is refused (-32002 TaskNotCancelable)
        again = await h.client.call("tasks/cancel", {"id": task["id"]})
        assert again["error"]["code"] == -32002


async def test_the_completed_status_message_is_the_final_answer() -> None:
    async with serve_loan() as h:
        task, review_id = await h.to_review()
        await h.decide(review_id, {"type": "approve"})
        done = await h.wait_state(task["id"], {"completed"})
        assert [json.loads(t) for t in texts(done["status"]["message"])] == [DRAFT_WITH_COLLATERAL]


async def test_a_new_request_after_canceling_the_forwarded_question_starts_over() -> None:
    """The user cancels the task that waits on the forwarded collateral question, then sends a
    new loan request on the same context: it is a new task and gets the question again."""
    async with serve_loan() as h:
        first = await h.send_loan(HIGH_RISK)
        assert first["status"]["state"] == "input-required"
        canceled = await h.client.result("tasks/cancel", {"id": first["id"]})
        assert canceled["status"]["state"] == "canceled"

        again = await h.client.send(data=HIGH_RISK, context_id=first["contextId"])
        assert again["id"] != first["id"]
        assert again["status"]["state"] == "input-required", again["status"]
        assert again["status"]["message"]["parts"] == QUESTION_PARTS
