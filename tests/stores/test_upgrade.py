"""A SQLite file written by the release before typed stored-task fields opens and resumes.

``fixtures/llamon-v1.sqlite3`` was made by ``make_fixture_v1.py`` with that release: its tasks
keep their server-side facts as a string-keyed ``extra`` object (``pending``, ``answered``,
``interrupt_on``). Every waiting task must be answerable by ``contextId`` and complete.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from tests.orchestrator.helpers import HIGH_RISK, serve_app

FIXTURE = Path(__file__).parent / "fixtures" / "llamon-v1.sqlite3"
DONE = {"completed", "failed", "rejected", "canceled"}
EMAIL = "Send an email to alice@example.com about Meeting: The meeting is at 10."


def _extra(db: Path, context_id: str) -> dict[str, Any]:
    conn = sqlite3.connect(db)
    try:
        row = conn.execute(
            "SELECT extra FROM llamon_tasks WHERE context_id = ? ORDER BY created DESC LIMIT 1",
            (context_id,),
        ).fetchone()
    finally:
        conn.close()
    extra: dict[str, Any] = json.loads(row[0])
    return extra


async def test_a_v1_database_resumes_every_waiting_task(tmp_path: Path) -> None:
    from app.main import AGENTS

    db = tmp_path / "upgrade.sqlite3"
    shutil.copyfile(FIXTURE, db)
    async with serve_app(AGENTS, db=str(db), reviewer_token="t", review_wait=0.3) as h:
        c = h.client
        doc = await c.send("passport", context_id="v1-doc")
        assert doc["status"]["state"] == "input-required", doc["status"]
        doc = await c.send("1990-01-01", context_id="v1-doc")
        assert doc["status"]["state"] == "completed", doc["status"]
        assert doc["artifacts"][0]["parts"][0]["data"] == {
            "doc_type": "passport", "birthday": "1990-01-01"}

        bday = await c.send("1991-02-03", context_id="v1-bday")
        assert bday["status"]["state"] == "completed", bday["status"]
        assert bday["artifacts"][0]["parts"][0]["data"] == {
            "doc_type": "passport", "birthday": "1991-02-03"}

        notes = await c.send("done", context_id="v1-notes")
        assert notes["status"]["state"] == "completed", notes["status"]

        email = await c.send(data={"decisions": [{"type": "approve"}]}, context_id="v1-email")
        while email["status"]["state"] == "input-required":
            hitl = email["status"]["message"]["parts"][1]["data"]["hitl"]
            approvals = [{"type": "approve"} for _ in hitl["action_requests"]]
            email = await c.send(data={"decisions": approvals}, context_id="v1-email")
        assert email["status"]["state"] == "completed", email["status"]

        reviews = await h.reviews()
        assert len(reviews) == 1, reviews
        assert (await h.decide(reviews[0]["id"], {"type": "approve"})).status_code == 200
        loan = await h.wait_state(reviews[0]["taskId"], DONE)
        assert loan["status"]["state"] == "completed", loan["status"]
        assert loan["artifacts"], loan

        # and new work runs on the upgraded file
        fresh, _ = await h.to_review(dict(HIGH_RISK, applicant="After"))
        assert fresh["status"]["state"] == "working"


async def test_a_v1_row_is_read_as_it_was_and_rewritten_as_v2_when_saved(tmp_path: Path) -> None:
    from app.main import AGENTS

    db = tmp_path / "upgrade.sqlite3"
    shutil.copyfile(FIXTURE, db)
    before = _extra(db, "v1-notes")
    assert "v" not in before and set(before) == {"answered", "pending"}
    async with serve_app(AGENTS, db=str(db), reviewer_token="t", review_wait=0.3) as h:
        notes = await h.client.send("buy eggs", context_id="v1-notes")
        assert notes["status"]["state"] == "input-required", notes["status"]
        assert notes["status"]["message"]["parts"][0]["text"].startswith("Noted (2).")
    after = _extra(db, "v1-notes")
    assert after["v"] == 2
    assert list(after["answered"].items())[:1] == list(before["answered"].items())
    assert len(after["answered"]) == 2
    assert len(after["pending"]) == 1
    assert after["pending"][0]["id"] not in {p["id"] for p in before["pending"]}


async def test_the_stored_facts_are_typed_fields(tmp_path: Path) -> None:
    from app.main import AGENTS

    db = tmp_path / "fresh.sqlite3"
    async with serve_app(AGENTS, db=str(db)) as h:
        params: dict[str, Any] = {
            "message": {"kind": "message", "role": "user", "messageId": "m-1",
                        "contextId": "typed", "parts": [{"kind": "text", "text": EMAIL}]},
            "metadata": {"agentId": "email-assistant",
                         "interruptOn": {"search_contacts": {"allowedDecisions": ["approve"]}}},
        }
        task = await h.client.result("message/send", params)
        assert task["status"]["state"] == "input-required"
    extra = _extra(db, "typed")
    assert set(extra) == {"v", "pending", "added_reviews"}
    assert extra["v"] == 2
    assert extra["added_reviews"] == {"search_contacts": {"allowed_decisions": ["approve"]}}
    assert [p["value"]["action_requests"][0]["name"] for p in extra["pending"]] == ["send_email"]


@pytest.mark.parametrize("extra", [b'{"v": 3}', b'{"v": 2, "pending": {"id": "x"}}',
                                   b'{"answered": {"i": 1}}', b'{"collected_answers": []}'])
async def test_a_stored_extra_of_no_known_shape_is_unreadable(
    tmp_path: Path, extra: bytes
) -> None:
    from app.main import AGENTS

    db = tmp_path / "upgrade.sqlite3"
    shutil.copyfile(FIXTURE, db)
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE llamon_tasks SET extra = ? WHERE context_id = 'v1-doc'", (extra,))
        task_id = conn.execute(
            "SELECT id FROM llamon_tasks WHERE context_id = 'v1-doc'").fetchone()[0]
    conn.close()
    async with serve_app(AGENTS, db=str(db)) as h:
        body = await h.client.call("tasks/get", {"id": task_id})
        assert body["error"]["code"] == -32603
        assert body["error"]["data"] == {"taskId": task_id, "reason": "unreadable stored task"}
        notes = await h.client.send("done", context_id="v1-notes")  # the others still work
        assert notes["status"]["state"] == "completed"


async def test_a_task_parked_for_a_reviewer_before_reviews_opened_still_closes_its_review(
    tmp_path: Path,
) -> None:
    """A row written before ``StoredTask.reviews_opened`` has no such key; a task parked for
    a reviewer (a review wait among its pending interrupts) is read as having opened its
    review, so canceling it still closes the review. A row waiting for an answer is not."""
    from app.main import AGENTS

    db = tmp_path / "upgrade.sqlite3"
    shutil.copyfile(FIXTURE, db)
    async with serve_app(AGENTS, db=str(db), reviewer_token="t", review_wait=0.3) as h:
        [review] = await h.reviews()
        loan = await h.manager._store.get(review["taskId"])
        doc = await h.manager._store.latest_in_context("v1-doc")
        assert loan is not None and doc is not None
        assert (loan.reviews_opened, doc.reviews_opened) == (True, False)
        await h.client.result("tasks/cancel", {"id": review["taskId"]})
        assert await h.reviews() == []
        assert (await h.review(review["id"]))["closedReason"] == "the task was canceled"


def test_reviews_opened_is_stored_only_when_true_and_read_back() -> None:
    from dataclasses import replace

    from llamon_agent.errors import UnreadableTaskError
    from llamon_agent.stores import _codec
    from tests.stores.test_task_store_contract import record

    plain = record("t1")
    opened = replace(plain, reviews_opened=True)
    assert "reviews_opened" not in json.loads(_codec.encode_extra(plain))
    assert json.loads(_codec.encode_extra(opened))["reviews_opened"] is True
    task = _codec.encode_task(plain)
    for stored in (plain, opened):
        got = _codec.decode(task, "a", 1, None, 0, _codec.encode_extra(stored))
        assert got.reviews_opened is stored.reviews_opened
    with pytest.raises(UnreadableTaskError):
        _codec.decode(task, "a", 1, None, 0, b'{"v": 2, "reviews_opened": "yes"}')
