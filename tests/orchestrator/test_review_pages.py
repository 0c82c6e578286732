"""Pending reviews a page at a time: the port's ``pending(limit, after)`` and
``pending_summary()`` on every storage, ``GET /reviews?pageSize=&pageToken=`` on the wire, and
the two readers that used to read every pending review (the metrics and the draft deadline
sweep) reading what they need (bench/README.md, "Speed, round thirty-four")."""

from __future__ import annotations

import base64
import sqlite3
import threading
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from bench.agents import build_agents
from llamon_agent import create_app
from llamon_agent.core.clock import parse_iso
from llamon_agent.core.deadlines import Deadline, Reject
from llamon_agent.human_review import (
    Decision,
    HumanReviewPort,
    InMemoryReviewPort,
    PendingSummary,
    Review,
    ReviewClosedError,
    ReviewCursor,
)
from llamon_agent.human_review import port as review_port
from llamon_agent.runtime.deadlines import BATCH, DraftDeadlineJob
from llamon_agent.server.human_review_rest import DEFAULT_PAGE, MAX_PAGE, PageAsked, page_asked
from llamon_agent.stores.storage import open_storage

TOKEN = "t"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


async def submit_many(port: HumanReviewPort, count: int) -> list[Review]:
    """``count`` reviews, several submitted within one millisecond (equal ``created``: the id
    orders them)."""
    return [await port.submit(task_id=f"task-{i}", context_id=f"ctx-{i}", agent_id="loan",
                              draft={"n": i}) for i in range(count)]


def in_order(reviews: list[Review]) -> list[str]:
    return [r.id for r in sorted(reviews, key=lambda r: (r.created, r.id))]


async def walk(port: HumanReviewPort, size: int) -> list[list[str]]:
    """Every page of ``size``, following the cursor."""
    pages: list[list[str]] = []
    after = None
    while page := await port.pending(size, after):
        assert len(page) <= size
        pages.append([r.id for r in page])
        after = ReviewCursor.after(page[-1])
    return pages


# ---------------------------------------------------------------------------- the port


async def test_pages_list_every_pending_review_once_oldest_first(port: HumanReviewPort) -> None:
    reviews = await submit_many(port, 23)
    pages = await walk(port, 5)
    assert [len(p) for p in pages] == [5, 5, 5, 5, 3]
    assert [i for p in pages for i in p] == in_order(reviews)
    assert await port.pending_summary() == PendingSummary(23, min(r.created for r in reviews))


async def test_a_page_skips_reviews_decided_or_closed_meanwhile(port: HumanReviewPort) -> None:
    reviews = await submit_many(port, 9)
    ordered = in_order(reviews)
    first = await port.pending(3)
    # the page's last review is decided before the next page is read: the cursor still holds
    await port.decide(first[-1].id, Decision("approve", by="ann"))
    await port.close_for_task(next(r.task_id for r in reviews if r.id == ordered[4]), "ended")
    rest = [r.id for r in await port.pending(100, ReviewCursor.after(first[-1]))]
    assert rest == [i for i in ordered[3:] if i != ordered[4]]
    assert (await port.pending_summary()).count == 7
    await port.delete_for_tasks([r.task_id for r in reviews])
    assert await port.pending(100) == []
    assert await port.pending_summary() == PendingSummary(0, None)


async def test_a_cursor_past_every_review_gives_an_empty_page(port: HumanReviewPort) -> None:
    await submit_many(port, 3)
    assert await port.pending(10, ReviewCursor("9999-12-31T23:59:59.999Z", "")) == []
    assert len(await port.pending(10, ReviewCursor("", ""))) == 3


# ---------------------------------------------------------------------------- GET /reviews


def listing_app(port: HumanReviewPort, **kw: Any) -> Any:
    return create_app(build_agents(), db=":memory:", reviews=port, reviewer_token=TOKEN, **kw)


async def get(http: httpx.AsyncClient, query: str = "") -> httpx.Response:
    return await http.get(f"/reviews{query}", headers=AUTH)


async def test_get_reviews_pages_with_next_page_tokens() -> None:
    port = InMemoryReviewPort()
    reviews = await submit_many(port, 7)
    app = listing_app(port)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
        seen: list[str] = []
        token = ""
        sizes = []
        while True:
            response = await get(http, f"?pageSize=3&pageToken={token}")
            assert response.status_code == 200
            body = response.json()
            assert set(body) == {"reviews", "nextPageToken"}
            sizes.append(len(body["reviews"]))
            seen += [r["id"] for r in body["reviews"]]
            token = body["nextPageToken"]
            if not token:
                break
        assert sizes == [3, 3, 1]
        assert seen == in_order(reviews)
        # exactly a page's worth left: the page before the last says so without a token
        body = (await get(http, "?pageSize=7")).json()
        assert len(body["reviews"]) == 7 and body["nextPageToken"] == ""
        first = (await get(http)).json()["reviews"][0]
        assert set(first) == {"id", "taskId", "contextId", "agentId", "draft", "status",
                              "decision", "created", "decided", "decidedBy", "closed",
                              "closedReason", "expiresAt"}


async def test_the_default_page_is_fifty_and_a_page_at_most_a_hundred() -> None:
    port = InMemoryReviewPort()
    await submit_many(port, 120)
    app = listing_app(port)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
        assert len((await get(http)).json()["reviews"]) == 50
        assert len((await get(http, "?pageSize=100")).json()["reviews"]) == 100
        assert (await get(http, "?pageSize=101")).status_code == 400


def _token(*parts: Any) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(list(parts))).rstrip(b"=").decode()


_NUL_TOKEN = _token("a", "b\x00")  # no text column holds NUL: ours never do


@pytest.mark.parametrize(("query", "detail"), [
    ("?pageSize=0", "pageSize must be a whole number from 1 to 100"),
    ("?pageSize=-1", "pageSize must be a whole number from 1 to 100"),
    ("?pageSize=1.5", "pageSize must be a whole number from 1 to 100"),
    ("?pageSize=", "pageSize must be a whole number from 1 to 100"),
    ("?pageSize=%D9%A3", "pageSize must be a whole number from 1 to 100"),  # Arabic-Indic 3
    ("?pageSize=99999999999999999999", "pageSize must be a whole number from 1 to 100"),
    # past Python's 4,300 digits, int() itself raises
    (f"?pageSize={'1' * 5000}", "pageSize must be a whole number from 1 to 100"),
    ("?pageSize=2&pageSize=3", "pageSize is given more than once"),
    ("?page_size=2", "unknown query parameter 'page_size': GET /reviews takes pageSize and"
                     " pageToken"),
    ("?pageToken=x", "pageToken is not a page token of this server (use the nextPageToken of"
                     " a previous page)"),
    (f"?pageToken={_token(1.0, 'id')}", "pageToken is not a page token of this server (use the"
                                        " nextPageToken of a previous page)"),
    (f"?pageToken={_token('a', 'b', 'c')}", "pageToken is not a page token of this server"
                                            " (use the nextPageToken of a previous page)"),
    (f"?pageToken={_NUL_TOKEN}", "pageToken is not a page token of this server (use the"
                                 " nextPageToken of a previous page)"),
    (f"?pageToken={'A' * 600}", "pageToken is not a page token of this server (use the"
                                " nextPageToken of a previous page)"),
])
async def test_a_bad_query_is_a_400_that_says_what_is_wrong(query: str, detail: str) -> None:
    app = listing_app(InMemoryReviewPort())
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
        response = await get(http, query)
        assert response.status_code == 400
        assert response.json() == {"detail": detail}


def test_page_asked_takes_what_the_listing_writes() -> None:
    asked = page_asked([("pageSize", str(MAX_PAGE)), ("pageToken", _token("2026-12-07", "r"))])
    assert asked == PageAsked(MAX_PAGE, ReviewCursor("2026-12-07", "r"))
    assert page_asked([("pageToken", "")]) == PageAsked(DEFAULT_PAGE, None)


# ---------------------------------------------------------------------------- the readers


class CountingPort(InMemoryReviewPort):
    """Counts the reviews each ``pending`` call returned."""

    def __init__(self) -> None:
        super().__init__()
        self.read: list[int] = []

    async def pending(self, limit: int, after: ReviewCursor | None = None) -> list[Review]:
        page = await super().pending(limit, after)
        self.read.append(len(page))
        return page


async def test_a_sweep_with_no_draft_due_reads_one_review() -> None:
    port = CountingPort()
    reviews = await submit_many(port, 300)
    job = DraftDeadlineJob(port, Deadline(3600, Reject()), cancel=_never_cancel)
    assert await job.sweep(parse_iso(reviews[0].created)) == 0
    assert port.read == [1]


async def test_due_drafts_are_rejected_a_batch_a_sweep_oldest_first() -> None:
    port = CountingPort()
    reviews = await submit_many(port, 2 * BATCH + 30)
    job = DraftDeadlineJob(port, Deadline(60, Reject()), cancel=_never_cancel)
    later = max(parse_iso(r.created) for r in reviews) + timedelta(seconds=61)
    handled = [await job.sweep(later) for _ in range(4)]
    assert handled == [1 + BATCH, BATCH, 2 * BATCH + 30 - (1 + 2 * BATCH), 0]
    assert await port.pending(10) == []
    decided = [await port.get(r.id) for r in reviews]
    assert {(r.status, r.decided_by) for r in decided} == {("decided", "deadline")}
    assert max(port.read) == BATCH


async def test_a_draft_that_stays_pending_holds_up_none_after_it() -> None:
    port = CountingPort()
    reviews = await submit_many(port, 3 * BATCH)
    stuck = {r.id for r in reviews[:BATCH + 1]}
    original = port.decide

    async def decide(review_id: str, decision: Decision) -> Review:
        if review_id in stuck:  # as a busy task's draft: the deadline is not applied now
            raise ReviewClosedError(review_id)
        return await original(review_id, decision)

    port.decide = decide  # type: ignore[method-assign]
    job = DraftDeadlineJob(port, Deadline(60, Reject()), cancel=_never_cancel)
    later = max(parse_iso(r.created) for r in reviews) + timedelta(seconds=61)
    for _ in range(5):
        await job.sweep(later)
    assert {r.id for r in await port.pending(1000)} == stuck


async def _never_cancel(task_id: str, context_id: str) -> None:
    raise AssertionError("a Reject deadline cancels nothing")


async def test_metrics_count_every_pending_review_past_a_page() -> None:
    port = CountingPort()
    reviews = await submit_many(port, 130)
    await port.decide(reviews[0].id, Decision("approve", by="ann"))
    app = listing_app(port)
    async with app.router.lifespan_context(app), httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url="http://t") as http:
        text = (await http.get("/metrics")).text
    assert "llamon_reviews_pending 129.0" in text
    assert port.read == []  # counted, not read


async def test_sqlite_counts_the_pending_reviews_in_the_storage_worker_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[str] = []
    count = review_port._pending_summary

    def traced(conn: sqlite3.Connection) -> tuple[int, str | None]:
        threads.append(threading.current_thread().name)
        return count(conn)

    monkeypatch.setattr(review_port, "_pending_summary", traced)
    async with open_storage(str(tmp_path / "reviews.sqlite3")) as storage:
        reviews = await submit_many(storage.reviews, 3)
        summary = await storage.reviews.pending_summary()
    assert summary == PendingSummary(3, min(r.created for r in reviews))
    assert len(threads) == 1 and threads[0].startswith("llamon-sqlite-writer"), threads
