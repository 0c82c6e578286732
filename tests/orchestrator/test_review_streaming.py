"""Streaming while a draft waits for a reviewer: the answer turn's stream stays open in
``working`` (final: false) and delivers the end after the decision; ``tasks/resubscribe``
during the wait gives a snapshot, then the end."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from tests.conftest import send_params
from tests.e2e.test_streaming import LiveStream
from tests.orchestrator.helpers import (
    DRAFT_LOW_RISK,
    DRAFT_WITH_COLLATERAL,
    LOW_RISK,
    QUESTION_PARTS,
    WAITING_TEXT,
    Harness,
    serve_loan,
)

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")

QUIET = 0.4  # how long a stream that must stay open is watched for a stray event


def result(event: dict[str, Any]) -> dict[str, Any]:
    return event["data"]["result"]


def waiting_review_id(event: dict[str, Any]) -> str:
    body = result(event)
    assert body["kind"] == "status-update", body
    assert body["status"]["state"] == "working"
    assert body["final"] is False
    parts = body["status"]["message"]["parts"]
    assert parts[0] == {"kind": "text", "text": WAITING_TEXT}
    return parts[1]["data"]["review"]["id"]


async def events_until_waiting(live: LiveStream) -> list[dict[str, Any]]:
    """Events up to and including the ``working`` status that names the review."""
    events = []
    while True:
        event = await live.next(5.0)
        assert event is not None, f"stream ended before the review wait: {events}"
        events.append(event)
        body = result(event)
        if (
            body["kind"] == "status-update"
            and (body["status"].get("message") or {}).get("parts", [{}])[0].get("text")
            == WAITING_TEXT
        ):
            return events


async def assert_stays_open(live: LiveStream) -> None:
    with pytest.raises(TimeoutError):
        await live.next(QUIET)
    assert not live.closed


async def ask(h: Harness) -> dict[str, Any]:
    task = await h.send_loan({"applicant": "Kim", "amount": 90000, "income": 20000})
    assert task["status"]["message"]["parts"] == QUESTION_PARTS
    return task


async def test_stream_of_the_answer_stays_open_in_working_and_ends_after_approval() -> None:
    async with serve_loan() as h:
        task = await ask(h)
        params = send_params("예", context_id=task["contextId"])
        async with LiveStream(h.app, "message/stream", params) as live:
            before = await events_until_waiting(live)
            review_id = waiting_review_id(before[-1])
            assert all(
                result(e)["id" if result(e)["kind"] == "task" else "taskId"] == task["id"]
                for e in before
            )
            assert not any(result(e).get("final") for e in before)
            await assert_stays_open(live)

            # the blocking reader is still waiting; the reviewer approves
            assert [r["id"] for r in await h.reviews()] == [review_id]
            assert (await h.decide(review_id, {"type": "approve"})).status_code == 200

            after = await live.rest(5.0)
            assert live.closed
        kinds = [result(e)["kind"] for e in after]
        assert "artifact-update" in kinds
        artifact = next(result(e) for e in after if result(e)["kind"] == "artifact-update")
        assert artifact["artifact"]["parts"][0] == {"kind": "data", "data": DRAFT_WITH_COLLATERAL}
        last = result(after[-1])
        assert last["kind"] == "status-update"
        assert last["status"]["state"] == "completed"
        assert last["final"] is True
        assert all(result(e).get("final") is not True for e in after[:-1])
        # event ids keep increasing across the wait
        ids = [int(e["id"]) for e in before + after if e["id"] is not None]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)


async def test_stream_of_a_low_risk_request_ends_rejected_after_a_reject() -> None:
    async with serve_loan() as h:
        params = send_params(data=LOW_RISK, agent_id="loan")
        async with LiveStream(h.app, "message/stream", params) as live:
            before = await events_until_waiting(live)
            review_id = waiting_review_id(before[-1])
            assert (await h.review(review_id))["draft"] == DRAFT_LOW_RISK
            await assert_stays_open(live)
            response = await h.decide(review_id, {"type": "reject", "message": "서류 미비"})
            assert response.status_code == 200
            after = await live.rest(5.0)
        last = result(after[-1])
        assert (last["kind"], last["status"]["state"], last["final"]) == (
            "status-update",
            "rejected",
            True,
        )
        assert last["status"]["message"]["parts"] == [{"kind": "text", "text": "서류 미비"}]


async def test_resubscribe_during_the_wait_gives_the_snapshot_then_the_end() -> None:
    async with serve_loan() as h:
        task, review_id = await h.to_review()
        params = {"id": task["id"]}
        async with LiveStream(h.app, "tasks/resubscribe", params) as live:
            snapshot = await live.next(5.0)
            assert snapshot is not None
            assert snapshot["id"] is None
            body = result(snapshot)
            assert body["kind"] == "task"
            assert body["id"] == task["id"]
            assert body["status"]["state"] == "working"
            assert body["status"]["message"]["parts"][1]["data"] == {"review": {"id": review_id}}
            await assert_stays_open(live)

            assert (await h.decide(review_id, {"type": "approve"})).status_code == 200
            after = await live.rest(5.0)
            assert live.closed
        last = result(after[-1])
        assert (last["kind"], last["status"]["state"], last["final"]) == (
            "status-update",
            "completed",
            True,
        )
        assert any(
            result(e)["kind"] == "artifact-update"
            and result(e)["artifact"]["parts"][0]["data"] == DRAFT_WITH_COLLATERAL
            for e in after
        )


async def test_two_resubscribers_and_the_original_stream_all_get_the_end() -> None:
    async with serve_loan() as h:
        task = await ask(h)
        params = send_params("예", context_id=task["contextId"])
        async with LiveStream(h.app, "message/stream", params, "orig") as original:
            review_id = waiting_review_id((await events_until_waiting(original))[-1])
            async with (
                LiveStream(h.app, "tasks/resubscribe", {"id": task["id"]}, "r1") as first,
                LiveStream(h.app, "tasks/resubscribe", {"id": task["id"]}, "r2") as second,
            ):
                for live in (first, second):
                    snap = await live.next(5.0)
                    assert snap is not None and result(snap)["status"]["state"] == "working"
                await asyncio.sleep(0.05)
                assert (await h.decide(review_id, {"type": "approve"})).status_code == 200
                ends = [await live.rest(5.0) for live in (original, first, second)]
        for events in ends:
            last = result(events[-1])
            assert (last["status"]["state"], last["final"]) == ("completed", True)


async def test_cancel_during_the_wait_ends_the_open_stream_canceled() -> None:
    async with serve_loan() as h:
        task = await ask(h)
        params = send_params("예", context_id=task["contextId"])
        async with LiveStream(h.app, "message/stream", params) as live:
            review_id = waiting_review_id((await events_until_waiting(live))[-1])
            canceled = await h.client.result("tasks/cancel", {"id": task["id"]})
            assert canceled["status"]["state"] == "canceled"
            after = await live.rest(5.0)
            assert live.closed
        last = result(after[-1])
        assert (last["kind"], last["status"]["state"], last["final"]) == (
            "status-update",
            "canceled",
            True,
        )
        response = await h.decide(review_id, {"type": "approve"})
        assert response.status_code in (200, 409)
        assert (await h.get(task["id"]))["status"]["state"] == "canceled"
