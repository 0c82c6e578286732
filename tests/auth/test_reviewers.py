"""Named reviewers (issue 10): ``LLAMON_REVIEWER_TOKENS`` beside ``LLAMON_REVIEWER_TOKEN``; every
decision records who made it and when, visible in ``GET /reviews/{id}``."""

from __future__ import annotations

from typing import Any

import pytest

from llamon_agent.settings import Settings
from tests.orchestrator.helpers import HIGH_RISK, serve_loan

ALICE = "rev-alice-77c1"
BOB = "rev-bob-1f02"

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


async def _decided_by(token: str, **kwargs: Any) -> dict[str, Any]:
    """Run a loan to its review, decide with ``token``, and read the review back."""
    async with serve_loan(**kwargs) as h:
        auth = {"Authorization": f"Bearer {token}"}
        task = await h.send_loan(HIGH_RISK, context_id="loan-1")
        await h.client.send("예", context_id="loan-1", agent_id="loan")
        listed = (await h.http.get("/reviews", headers=auth)).json()["reviews"]
        assert [r["taskId"] for r in listed] == [task["id"]]
        review_id = listed[0]["id"]
        before = (await h.http.get(f"/reviews/{review_id}", headers=auth)).json()
        assert (before["decidedBy"], before["decided"]) == (None, None)
        decided = await h.http.post(f"/reviews/{review_id}/decision", headers=auth,
                                    json={"type": "approve"})
        assert decided.status_code == 200
        read = (await h.http.get(f"/reviews/{review_id}", headers=auth)).json()
        assert read == decided.json()
        await h.wait_state(task["id"], {"completed"})
        return read


@pytest.mark.parametrize("db", ["served", "file"])
async def test_a_named_reviewers_decision_records_the_name_and_the_time(
    db: str, tmp_path: Any
) -> None:
    """``served``: the ``backend``'s review port (in memory, or PostgreSQL); ``file``: SQLite."""
    settings = Settings(reviewer_tokens=f"alice={ALICE},bob={BOB}")
    where = {} if db == "served" else {"db": str(tmp_path / "reviews.sqlite3")}
    review = await _decided_by(BOB, settings=settings, **where)
    assert review["status"] == "decided"
    assert review["decidedBy"] == "bob"
    assert review["decided"] is not None and review["decided"] >= review["created"]
    assert review["decision"] == {"type": "approve", "edited": None, "message": None}


async def test_the_single_token_is_the_reviewer_named_reviewer() -> None:
    review = await _decided_by("t-single", reviewer_token="t-single",
                               settings=Settings(reviewer_tokens=f"alice={ALICE}"))
    assert review["decidedBy"] == "reviewer"


async def test_a_named_reviewers_token_is_not_anyone_elses() -> None:
    async with serve_loan(settings=Settings(reviewer_tokens=f"alice={ALICE}")) as h:
        for wrong in ["Bearer " + BOB, "Bearer alice", "Bearer " + ALICE[:-1], ALICE]:
            response = await h.http.get("/reviews", headers={"Authorization": wrong})
            assert response.status_code == 401
        assert (await h.http.get("/reviews", headers={"Authorization": f"Bearer {ALICE}"})
                ).status_code == 200
