"""Reviews and resume points across in-process server restarts, on a SQLite file and on
PostgreSQL (with Redis events): the ``backend`` fixture's database outlives the servers."""

from __future__ import annotations

from pathlib import Path

import pytest

from llamon_agent.human_review import Decision
from llamon_agent.stores.storage import open_storage
from tests.conftest import durable_db
from tests.orchestrator.helpers import (
    DRAFT_WITH_COLLATERAL,
    HIGH_RISK,
    QUESTION_PARTS,
    RESUME_POINT,
    WAITING_TEXT,
    artifact_data,
    review_id_of,
    serve_loan,
)

ENDED = {"completed", "failed", "rejected", "canceled"}

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


async def test_a_waiting_review_survives_a_restart_and_approve_completes(tmp_path: Path) -> None:
    db = durable_db(tmp_path)
    async with serve_loan(db=db) as h:
        task, review_id = await h.to_review()

    async with serve_loan(db=db) as h:
        waiting = await h.get(task["id"])
        assert waiting["status"]["state"] == "working"
        assert waiting["status"]["message"]["parts"][0] == {"kind": "text", "text": WAITING_TEXT}
        assert review_id_of(waiting) == review_id
        reviews = await h.reviews()
        assert [(r["id"], r["taskId"], r["draft"]) for r in reviews] == [
            (review_id, task["id"], DRAFT_WITH_COLLATERAL)
        ]
        assert (await h.decide(review_id, {"type": "approve"})).status_code == 200
        done = await h.wait_state(task["id"], ENDED)
        assert done["status"]["state"] == "completed"
        assert artifact_data(done) == [DRAFT_WITH_COLLATERAL]
        assert await h.resume_point(task["contextId"]) is None


async def test_edit_after_a_restart_completes_with_the_edited_answer(tmp_path: Path) -> None:
    db = durable_db(tmp_path)
    async with serve_loan(db=db) as h:
        task, review_id = await h.to_review()
    async with serve_loan(db=db) as h:
        edited = {"decision": "approve", "amount": 80000}
        assert (await h.decide(review_id, {"type": "edit", "edited": edited})).status_code == 200
        done = await h.wait_state(task["id"], ENDED)
        assert done["status"]["state"] == "completed"
        assert artifact_data(done) == [edited]


async def test_a_decision_taken_while_the_server_is_down_is_applied_at_start(
    tmp_path: Path,
) -> None:
    db = durable_db(tmp_path)
    async with serve_loan(db=db) as h:
        task, review_id = await h.to_review()

    async with open_storage(db) as down:  # the server's database, while no server runs
        port = down.reviews
        assert [r.id for r in await port.pending(100)] == [review_id]
        decided = await port.decide(review_id, Decision("reject", message="서버 중지 중 반려"))
        assert decided.status == "decided"

    async with serve_loan(db=db) as h:
        done = await h.wait_state(task["id"], ENDED)
        assert done["status"]["state"] == "rejected"
        assert done["status"]["message"]["parts"] == [{"kind": "text", "text": "서버 중지 중 반려"}]
        assert (await h.review(review_id))["decision"]["type"] == "reject"


async def test_an_approval_while_down_completes_with_the_draft(tmp_path: Path) -> None:
    db = durable_db(tmp_path)
    async with serve_loan(db=db) as h:
        task, review_id = await h.to_review()
    async with open_storage(db) as down:
        await down.reviews.decide(review_id, Decision("approve"))
    async with serve_loan(db=db) as h:
        done = await h.wait_state(task["id"], ENDED)
        assert done["status"]["state"] == "completed"
        assert artifact_data(done) == [DRAFT_WITH_COLLATERAL]


async def test_the_resume_point_survives_a_restart_and_the_answer_continues_to_review(
    tmp_path: Path,
) -> None:
    db = durable_db(tmp_path)
    async with serve_loan(db=db) as h:
        first = await h.send_loan(HIGH_RISK)
        assert first["status"]["state"] == "input-required"
        context_id = first["contextId"]
        assert await h.resume_point(context_id) == RESUME_POINT

    async with serve_loan(db=db) as h:
        assert await h.resume_point(context_id) == RESUME_POINT
        asked = await h.get(first["id"])
        assert asked["status"]["state"] == "input-required"
        assert asked["status"]["message"]["parts"] == QUESTION_PARTS

        task = await h.client.send("예", context_id=context_id)
        assert task["id"] == first["id"]
        assert task["status"]["state"] == "working"
        review_id = review_id_of(task)
        assert (await h.review(review_id))["draft"] == DRAFT_WITH_COLLATERAL
        # the risk child's conversation continued after the restart too
        child = await h.get_child(await h.child_task_id(f"{context_id}::risk"))
        assert child["status"]["state"] == "completed"
        assert artifact_data(child)[0]["collateral"] == "yes"

    async with serve_loan(db=db) as h:
        assert (await h.decide(review_id, {"type": "approve"})).status_code == 200
        done = await h.wait_state(first["id"], ENDED)
        assert done["status"]["state"] == "completed"
        assert artifact_data(done) == [DRAFT_WITH_COLLATERAL]
        assert await h.resume_point(context_id) is None


async def test_resume_points_are_per_context(tmp_path: Path) -> None:
    db = durable_db(tmp_path)
    async with serve_loan(db=db) as h:
        asked = await h.send_loan(HIGH_RISK)
        other = await h.send_loan({"applicant": "Park", "amount": 50000, "income": 20000})
        assert other["status"]["state"] == "working"
        assert await h.resume_point(asked["contextId"]) == RESUME_POINT
        assert await h.resume_point(other["contextId"]) is None
    async with serve_loan(db=db) as h:
        assert await h.resume_point(asked["contextId"]) == RESUME_POINT
        assert await h.resume_point(other["contextId"]) is None
        # a different context does not answer the question
        fresh = await h.client.send("예", agent_id="loan")
        assert fresh["contextId"] != asked["contextId"]
        assert (await h.get(asked["id"]))["status"]["state"] == "input-required"


async def test_cancel_after_a_restart_is_final_and_a_later_decision_does_not_resurrect(
    tmp_path: Path,
) -> None:
    db = durable_db(tmp_path)
    async with serve_loan(db=db) as h:
        task, review_id = await h.to_review()
    async with serve_loan(db=db) as h:
        canceled = await h.client.result("tasks/cancel", {"id": task["id"]})
        assert canceled["status"]["state"] == "canceled"
        response = await h.decide(review_id, {"type": "approve"})
        assert response.status_code in (200, 409)
    async with serve_loan(db=db) as h:
        after = await h.get(task["id"])
        assert after["status"]["state"] == "canceled"
        assert artifact_data(after) == []
