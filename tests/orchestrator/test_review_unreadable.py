"""A stored review whose draft or decision does not decode takes down only itself, on SQLite and
PostgreSQL: the listing leaves it out and still pages through the rest, the draft deadline
sweep handles the others, a decision on it is refused with nothing written, its own
``GET /reviews/{id}`` is a JSON 500, and closing its task closes it."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.agents import build_agents
from llamon_agent import create_app
from llamon_agent.core.clock import parse_iso
from llamon_agent.core.deadlines import Deadline, Reject
from llamon_agent.human_review import (
    Decision,
    HumanReviewPort,
    Review,
    UnreadableReviewError,
)
from llamon_agent.runtime.deadlines import DraftDeadlineJob
from llamon_agent.stores.storage import open_storage
from tests.orchestrator.test_review_pages import in_order, submit_many, walk

AUTH = {"Authorization": "Bearer t"}


@dataclass
class Stored:
    port: HumanReviewPort
    #: sets one column of one review's row to raw bytes, past the port
    spoil: Callable[[str, str, bytes], None]


@pytest.fixture(params=["sqlite", "postgres"])
async def stored(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stored]:
    if request.param == "sqlite":
        path = str(tmp_path / "reviews.sqlite3")

        def spoil_sqlite(review_id: str, column: str, value: bytes) -> None:
            with sqlite3.connect(path) as conn:
                conn.execute(f"UPDATE llamon_reviews SET {column} = ? WHERE id = ?",
                             (value, review_id))

        async with open_storage(path) as storage:
            yield Stored(storage.reviews, spoil_sqlite)
        return
    import psycopg

    url = request.getfixturevalue("postgres_url")

    def spoil_postgres(review_id: str, column: str, value: bytes) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"UPDATE llamon_reviews SET {column} = %s WHERE id = %s",
                         (value, review_id))

    async with open_storage(url) as storage:
        yield Stored(storage.reviews, spoil_postgres)


async def test_the_listing_leaves_an_unreadable_review_out_and_pages_on(
        stored: Stored, caplog: pytest.LogCaptureFixture) -> None:
    reviews = await submit_many(stored.port, 5)
    order = in_order(reviews)
    stored.spoil(order[1], "draft", b"{not json")
    stored.spoil(order[2], "draft", b"\xff")
    readable = [order[0], *order[3:]]
    # a page of two whose rows hold the unreadable two reads on past them: still full
    assert await walk(stored.port, 2) == [readable[:2], readable[2:]]
    assert [r.id for r in await stored.port.pending(1)] == [order[0]]
    assert (await stored.port.pending_summary()).count == 5  # still pending, counted
    assert f"review {order[1]} left out: stored unreadable" in caplog.text


async def test_a_decision_on_it_is_refused_and_writes_nothing(stored: Stored) -> None:
    review, other = await submit_many(stored.port, 2)
    stored.spoil(review.id, "draft", b"[")
    told: list[Review] = []

    async def listener(decided: Review) -> None:
        told.append(decided)

    stored.port.on_decision(listener)
    with pytest.raises(UnreadableReviewError) as refused:
        await stored.port.decide(review.id, Decision("approve", by="ann"))
    assert refused.value.review_id == review.id
    assert str(refused.value) == f"review {review.id} is stored in a form this server cannot read"
    assert told == []
    # nothing was written: it is still pending (its draft spoiled back, it reads as it was)
    stored.spoil(review.id, "draft", b'{"n": 0}')
    assert (await stored.port.get(review.id)).status == "pending"
    # the other review is decided as ever
    assert (await stored.port.decide(other.id, Decision("approve", by="ann"))).status == "decided"
    assert [r.id for r in told] == [other.id]


async def test_a_spoiled_decision_and_closing_its_task(stored: Stored) -> None:
    review, other = await submit_many(stored.port, 2)
    stored.spoil(review.id, "decision", b'{"kind": "approve"}')  # keys a Decision has not
    with pytest.raises(UnreadableReviewError):
        await stored.port.get(review.id)
    assert [r.id for r in await stored.port.pending(10)] == [other.id]
    assert await stored.port.close_for_task(review.task_id, "the task was canceled") == []
    assert (await stored.port.pending_summary()).count == 1  # closed all the same


async def test_the_deadline_sweep_handles_the_others(stored: Stored) -> None:
    reviews = await submit_many(stored.port, 4)
    order = in_order(reviews)
    stored.spoil(order[0], "draft", b"nope")

    async def cancel(task_id: str, context_id: str) -> Any:
        raise AssertionError("a Reject deadline cancels nothing")

    job = DraftDeadlineJob(stored.port, Deadline(60, Reject()), cancel)
    later = max(parse_iso(r.created) for r in reviews) + timedelta(seconds=61)
    assert await job.sweep(later) == 3
    assert (await stored.port.pending_summary()).count == 1


async def test_its_own_endpoints_answer_a_json_500_and_the_rest_are_served(
        stored: Stored) -> None:
    review, other = await submit_many(stored.port, 2)
    stored.spoil(review.id, "draft", b"{")
    app = create_app(build_agents(), db=":memory:", reviews=stored.port, reviewer_token="t")
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
        unreadable = {"detail": f"review {review.id} is stored in a form this server cannot read"}
        got = await http.get(f"/reviews/{review.id}", headers=AUTH)
        assert (got.status_code, got.json()) == (500, unreadable)
        decided = await http.post(f"/reviews/{review.id}/decision", headers=AUTH,
                                  json={"type": "approve"})
        assert (decided.status_code, decided.json()) == (500, unreadable)
        listed = (await http.get("/reviews", headers=AUTH)).json()
        assert [r["id"] for r in listed["reviews"]] == [other.id]
        ok = await http.post(f"/reviews/{other.id}/decision", headers=AUTH,
                             json={"type": "approve"})
        assert ok.status_code == 200 and ok.json()["status"] == "decided"
