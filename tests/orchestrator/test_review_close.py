"""A task's end closes the reviews still waiting for it (issue 8, finding 7).

Before: canceling a ``loan`` task parked for its reviewer left the review pending, and a later
approve answered 200 ``decided`` and moved nothing. Now every terminal state (completed,
canceled, rejected, failed) closes the task's pending reviews: they leave ``GET /reviews``,
``GET /reviews/{id}`` shows ``closed`` with when and why, and deciding one is 409.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from llamon_agent import Agent
from llamon_agent.core.run_context import run_context
from llamon_agent.human_review import request_review
from tests.conftest import durable_db
from tests.orchestrator.helpers import (
    DRAFT_WITH_COLLATERAL,
    REVIEW_WAIT,
    TOKEN,
    serve_app,
    serve_loan,
)

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


def assert_closed(review: dict[str, Any], reason: str) -> None:
    assert review["status"] == "closed"
    assert review["closedReason"] == reason
    assert TIMESTAMP.match(review["closed"]), review["closed"]
    assert review["decision"] is None and review["decided"] is None


async def test_cancel_closes_the_pending_review_and_a_later_approve_is_409() -> None:
    async with serve_loan() as h:
        task, review_id = await h.to_review()
        assert [r["id"] for r in await h.reviews()] == [review_id]

        canceled = await h.client.result("tasks/cancel", {"id": task["id"]})
        assert canceled["status"]["state"] == "canceled"

        assert await h.reviews() == []
        review = await h.review(review_id)
        assert_closed(review, "the task was canceled")
        assert (review["taskId"], review["draft"]) == (task["id"], DRAFT_WITH_COLLATERAL)

        response = await h.decide(review_id, {"type": "approve"})
        assert response.status_code == 409
        assert response.json() == {"detail": "review closed: the task was canceled"}
        assert (await h.review(review_id))["status"] == "closed"
        after = await h.get(task["id"])
        assert after["status"]["state"] == "canceled"
        assert not after.get("artifacts")


async def test_a_decided_review_stays_decided_when_its_task_completes() -> None:
    async with serve_loan() as h:
        task, review_id = await h.to_review()
        assert (await h.decide(review_id, {"type": "approve"})).status_code == 200
        await h.wait_state(task["id"], {"completed"})
        review = await h.review(review_id)
        assert review["status"] == "decided" and review["closed"] is None
        again = await h.decide(review_id, {"type": "approve"})
        assert again.status_code == 409
        assert again.json() == {"detail": "review already decided"}


class _State(TypedDict, total=False):
    draft: str
    result: str


def _failing_while_reviewed(opened: list[str]) -> Agent:
    """One branch opens a review and waits; the other fails once the review is open (its id
    goes to ``opened``): the task fails with its review still pending."""

    async def ask_reviewer(state: _State, config: RunnableConfig) -> dict[str, Any]:
        decision = await request_review({"text": "draft"}, config)
        return {"result": decision.type}

    async def explode(state: _State, config: RunnableConfig) -> dict[str, Any]:
        served = run_context(config)
        assert served is not None and served.reviews is not None
        for _ in range(500):  # until the other branch's review is open
            mine = [r.id for r in await served.reviews.pending(100)
                    if r.task_id == served.task_id]
            if mine:
                opened.extend(mine)
                raise RuntimeError("the ledger is unreachable")
            await asyncio.sleep(0.01)
        raise AssertionError("the review was never opened")

    graph = StateGraph(_State)
    graph.add_node("ask_reviewer", ask_reviewer)
    graph.add_node("explode", explode)
    graph.add_edge(START, "ask_reviewer")
    graph.add_edge(START, "explode")
    graph.add_edge("ask_reviewer", END)
    graph.add_edge("explode", END)
    return Agent("fragile", graph)


async def test_a_task_that_fails_closes_its_pending_review() -> None:
    opened: list[str] = []
    async with serve_app([_failing_while_reviewed(opened)], reviewer_token=TOKEN) as h:
        task = await h.client.send("go")
        assert task["status"]["state"] == "failed"
        assert task["status"]["message"]["parts"] == [
            {"kind": "text", "text": "The agent failed: RuntimeError: the ledger is unreachable"}
        ]
        assert await h.reviews() == []
        [review_id] = opened
        review = await h.review(review_id)
        assert_closed(review, "the task failed")
        response = await h.decide(review_id, {"type": "reject", "message": "late"})
        assert response.status_code == 409
        assert response.json() == {"detail": "review closed: the task failed"}


async def test_a_task_failed_at_restart_closes_its_review(tmp_path: Path) -> None:
    """The server restarts without the ``loan`` agent: recovery fails the parked task, and its
    review (in the same SQLite file) is closed."""
    from app.main import AGENTS

    db = durable_db(tmp_path)
    async with serve_loan(db=db) as h:
        task, review_id = await h.to_review()
    others = [a for a in AGENTS if a.id != "loan"]
    async with serve_app(others, db=db, reviewer_token=TOKEN) as h:
        failed = await h.get(task["id"])
        assert failed["status"]["state"] == "failed"
        assert await h.reviews() == []
        assert_closed(await h.review(review_id), "the task failed")
        response = await h.decide(review_id, {"type": "approve"})
        assert response.status_code == 409
        assert response.json() == {"detail": "review closed: the task failed"}


async def test_only_a_task_that_opened_a_review_closes_reviews_when_it_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Closing a task's reviews is a statement on a database (``UPDATE llamon_reviews``); a
    task that never opened one (nearly all) ends without it: completed, canceled while asking,
    and an answer that ended it. The parked loan, canceled, still closes its review."""
    async with serve_loan() as h:
        port = h.app.state.reviews
        close = port.close_for_task
        closed_for: list[str] = []

        async def recorded(task_id: str, reason: str) -> list[Any]:
            closed_for.append(task_id)
            return await close(task_id, reason)

        monkeypatch.setattr(port, "close_for_task", recorded)
        notes = await h.client.send("take notes", context_id="notes", agent_id="until-done")
        assert notes["status"]["state"] == "input-required"
        done = await h.client.send("done", context_id="notes")
        assert done["status"]["state"] == "completed"
        asked = await h.client.send("이 서류를 검증해줘", context_id="doc",
                                    agent_id="document-review")
        assert asked["status"]["state"] == "input-required"
        canceled = await h.client.result("tasks/cancel", {"id": asked["id"]})
        assert canceled["status"]["state"] == "canceled"
        assert closed_for == []

        task, review_id = await h.to_review()
        await h.client.result("tasks/cancel", {"id": task["id"]})
        assert closed_for == [task["id"]]
        assert_closed(await h.review(review_id), "the task was canceled")


def _watched_review(opened: asyncio.Event, go_on: asyncio.Event, task_ids: list[str]) -> Agent:
    """One branch opens a review; the other waits until it is open (the task's id goes to
    ``task_ids``, ``opened`` is set), then for ``go_on``: the run is still going on while the
    review waits."""

    async def ask_reviewer(state: _State, config: RunnableConfig) -> dict[str, Any]:
        decision = await request_review({"text": "draft"}, config)
        return {"result": decision.type}

    async def watch(state: _State, config: RunnableConfig) -> dict[str, Any]:
        served = run_context(config)
        assert served is not None and served.reviews is not None and served.task_id
        for _ in range(500):
            if any(r.task_id == served.task_id for r in await served.reviews.pending(100)):
                task_ids.append(served.task_id)
                opened.set()
                await go_on.wait()
                return {}
            await asyncio.sleep(0.01)
        raise AssertionError("the review was never opened")

    graph = StateGraph(_State)
    graph.add_node("ask_reviewer", ask_reviewer)
    graph.add_node("watch", watch)
    graph.add_edge(START, "ask_reviewer")
    graph.add_edge(START, "watch")
    graph.add_edge("ask_reviewer", END)
    graph.add_edge("watch", END)
    return Agent("watched", graph)


async def test_a_task_is_stored_as_having_a_review_before_the_review_is_open() -> None:
    """Whoever ends a task decides from its stored record whether to close its reviews: the
    record says so before the review exists, so a run that dies after opening it (its end
    never stored) leaves a task that another process still closes the review of."""
    opened, go_on = asyncio.Event(), asyncio.Event()
    task_ids: list[str] = []
    agent = _watched_review(opened, go_on, task_ids)
    async with serve_app([agent], reviewer_token=TOKEN, review_wait=REVIEW_WAIT) as h:
        sending = asyncio.create_task(h.client.send("go"))
        try:
            await asyncio.wait_for(opened.wait(), 10)
            [task_id] = task_ids
            stored = await h.manager._store.get(task_id)  # the row, not the live record
            assert stored is not None
            assert (stored.state, getattr(stored, "reviews_opened", None)) == ("working", True)
        finally:
            go_on.set()
        task = await sending
        assert task["status"]["state"] == "working"  # parked for the reviewer
        [review] = await h.reviews()
        await h.client.result("tasks/cancel", {"id": task_id})
        assert await h.reviews() == []
        assert_closed(await h.review(review["id"]), "the task was canceled")
