"""The ``HumanReviewPort`` contract, run against ``InMemoryReviewPort``, ``SQLiteReviewPort`` and
``PostgresReviewPort`` (skipped with a reason without a PostgreSQL server; more PostgreSQL cases
in tests/stores/test_review_port_postgres.py)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from llamon_agent.human_review import (
    Decision,
    HumanReviewPort,
    Review,
    ReviewClosedError,
    ReviewNotFoundError,
    SQLiteReviewPort,
)
from llamon_agent.stores.sqlite import connect

DRAFT = {"decision": "approve", "risk": "low", "amount": 50000.0, "intent": "대출 심사"}


async def submit(port: HumanReviewPort, task: str = "task-1", draft: Any = DRAFT) -> Review:
    return await port.submit(task_id=task, context_id=f"ctx-{task}", agent_id="loan", draft=draft)


def recorder() -> tuple[list[Review], Callable[[Review], Any]]:
    calls: list[Review] = []

    async def listener(review: Review) -> None:
        calls.append(review)

    return calls, listener


async def test_submit_stores_a_pending_review(port: HumanReviewPort) -> None:
    review = await submit(port)
    assert review.status == "pending"
    assert review.decision is None
    assert review.decided is None
    assert (review.task_id, review.context_id, review.agent_id) == ("task-1", "ctx-task-1", "loan")
    assert review.draft == DRAFT
    stored = await port.get(review.id)
    assert stored == review
    assert stored.to_json() == {
        "id": review.id,
        "taskId": "task-1",
        "contextId": "ctx-task-1",
        "agentId": "loan",
        "draft": DRAFT,
        "status": "pending",
        "decision": None,
        "created": review.created,
        "decided": None,
        "decidedBy": None,
        "closed": None,
        "closedReason": None,
    }


async def test_submit_is_idempotent_per_task_while_pending(port: HumanReviewPort) -> None:
    first = await submit(port)
    again = await submit(port, draft={"other": "draft"})
    assert again.id == first.id
    assert again.draft == DRAFT
    other = await submit(port, task="task-2")
    assert other.id != first.id
    assert sorted(r.id for r in await port.pending(100)) == sorted([first.id, other.id])


async def test_pending_lists_only_undecided_reviews(port: HumanReviewPort) -> None:
    assert await port.pending(100) == []
    a = await submit(port, "a")
    b = await submit(port, "b")
    c = await submit(port, "c")
    await port.decide(b.id, Decision("reject", message="no"))
    assert sorted(r.id for r in await port.pending(100)) == sorted([a.id, c.id])
    assert all(r.status == "pending" for r in await port.pending(100))


@pytest.mark.parametrize(
    "decision",
    [
        Decision("approve"),
        Decision("edit", edited={"decision": "decline", "note": "수정"}),
        Decision("edit", edited="plain text answer"),
        Decision("reject", message="소득 증빙 부족"),
        Decision("approve", by="alice"),
    ],
    ids=["approve", "edit-object", "edit-text", "reject", "named-reviewer"],
)
async def test_decide_records_the_decision(port: HumanReviewPort, decision: Decision) -> None:
    review = await submit(port)
    decided = await port.decide(review.id, decision)
    assert decided.id == review.id
    assert decided.status == "decided"
    assert decided.decision == decision
    assert decided.decided is not None
    assert decided.draft == DRAFT
    assert await port.get(review.id) == decided
    assert decided.to_json()["decision"] == {
        "type": decision.type,
        "edited": decision.edited,
        "message": decision.message,
    }
    # issue 10: who decided is recorded beside when, and is not part of the graph's value
    assert decided.decided_by == decision.by
    assert decided.to_json()["decidedBy"] == decision.by
    assert decided.to_json()["decided"] == decided.decided


async def test_deciding_twice_raises_review_closed_and_keeps_the_first(
    port: HumanReviewPort,
) -> None:
    review = await submit(port)
    await port.decide(review.id, Decision("approve"))
    with pytest.raises(ReviewClosedError):
        await port.decide(review.id, Decision("reject", message="late"))
    assert (await port.get(review.id)).decision == Decision("approve")


async def test_an_unknown_review_raises_review_not_found(port: HumanReviewPort) -> None:
    with pytest.raises(ReviewNotFoundError):
        await port.get("no-such-review")
    with pytest.raises(ReviewNotFoundError):
        await port.decide("no-such-review", Decision("approve"))


async def test_the_listener_is_called_once_per_decision(port: HumanReviewPort) -> None:
    calls, listener = recorder()
    port.on_decision(listener)
    review = await submit(port)
    assert calls == []
    decided = await port.decide(review.id, Decision("approve"))
    assert calls == [decided]
    with pytest.raises(ReviewClosedError):
        await port.decide(review.id, Decision("approve"))
    with pytest.raises(ReviewNotFoundError):
        await port.decide("no-such-review", Decision("approve"))
    assert len(calls) == 1


async def test_every_listener_is_called(port: HumanReviewPort) -> None:
    first, one = recorder()
    second, two = recorder()
    port.on_decision(one)
    port.on_decision(two)
    review = await submit(port)
    await port.decide(review.id, Decision("reject"))
    assert [r.id for r in first] == [review.id]
    assert [r.id for r in second] == [review.id]


async def test_sqlite_reviews_survive_a_new_connection(tmp_path: Path) -> None:
    path = str(tmp_path / "reviews.sqlite3")
    conn = connect(path)
    try:
        port = SQLiteReviewPort(conn)
        pending = await submit(port, "p")
        decided = await submit(port, "d")
        await port.decide(decided.id, Decision("edit", edited=[1, "둘"]))
    finally:
        conn.close()

    conn = sqlite3.connect(path)
    try:
        port = SQLiteReviewPort(conn)
        assert [r.id for r in await port.pending(100)] == [pending.id]
        assert (await port.get(pending.id)).draft == DRAFT
        assert (await port.get(decided.id)).decision == Decision("edit", edited=[1, "둘"])
        # still idempotent for the pending task after reopening
        assert (await submit(port, "p")).id == pending.id
    finally:
        conn.close()


async def test_close_for_task_closes_only_that_tasks_pending_reviews(port: HumanReviewPort) -> None:
    """Issue 8, finding 7: a task's end closes its pending review; deciding it then fails."""
    waiting = await submit(port, "ended")
    other = await submit(port, "running")
    decided = await submit(port, "decided")
    await port.decide(decided.id, Decision("approve"))

    closed = await port.close_for_task("ended", "the task was canceled")
    assert [r.id for r in closed] == [waiting.id]
    stored = await port.get(waiting.id)
    assert closed == [stored]
    assert (stored.status, stored.closed_reason, stored.decision) == (
        "closed", "the task was canceled", None
    )
    assert stored.closed is not None and stored.decided is None
    assert stored.to_json()["status"] == "closed"
    assert stored.to_json()["closedReason"] == "the task was canceled"
    assert stored.to_json()["closed"] == stored.closed
    assert [r.id for r in await port.pending(100)] == [other.id]

    with pytest.raises(ReviewClosedError) as info:
        await port.decide(waiting.id, Decision("approve"))
    assert str(info.value) == "review closed: the task was canceled"
    assert (await port.get(waiting.id)).status == "closed"
    with pytest.raises(ReviewClosedError) as twice:
        await port.decide(decided.id, Decision("reject"))
    assert str(twice.value) == "review already decided"

    # nothing left to close; a decided review is never closed
    assert await port.close_for_task("ended", "again") == []
    assert await port.close_for_task("decided", "the task was completed") == []
    assert (await port.get(decided.id)).status == "decided"
    # a new review for the same task opens fresh (the closed one is not reused)
    fresh = await submit(port, "ended")
    assert fresh.id != waiting.id and fresh.status == "pending"


async def test_close_for_task_does_not_notify_decision_listeners(port: HumanReviewPort) -> None:
    calls, listener = recorder()
    port.on_decision(listener)
    await submit(port, "t")
    await port.close_for_task("t", "the task failed")
    assert calls == []


async def test_a_reviews_table_of_an_earlier_version_gains_the_closed_columns(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "old.sqlite3")
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE llamon_reviews (
            id TEXT PRIMARY KEY, task_id TEXT NOT NULL, context_id TEXT NOT NULL,
            agent_id TEXT NOT NULL, draft BLOB NOT NULL, status TEXT NOT NULL, decision BLOB,
            created TEXT NOT NULL, decided TEXT
        );
        INSERT INTO llamon_reviews VALUES
            ('r1', 't1', 'c1', 'loan', '{"a": 1}', 'pending', NULL, '2025-01-01T00:00:00.000Z',
             NULL);
    """)
    conn.commit()
    try:
        port = SQLiteReviewPort(conn)
        old = await port.get("r1")
        assert (old.status, old.closed, old.closed_reason, old.draft) == (
            "pending", None, None, {"a": 1}
        )
        [closed] = await port.close_for_task("t1", "the task was rejected")
        assert (closed.id, closed.status, closed.closed_reason) == (
            "r1", "closed", "the task was rejected"
        )
        SQLiteReviewPort(conn)  # opening it again migrates nothing twice
    finally:
        conn.close()


async def test_a_reviews_table_before_named_reviewers_gains_decided_by(tmp_path: Path) -> None:
    """Issue 10: the table of issue 8 (no ``decided_by``) is migrated in place; a decision
    stored before reviewers had names reads back with ``decidedBy`` null, a new one with its
    reviewer, also after reopening."""
    path = str(tmp_path / "issue8.sqlite3")
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE llamon_reviews (
            id TEXT PRIMARY KEY, task_id TEXT NOT NULL, context_id TEXT NOT NULL,
            agent_id TEXT NOT NULL, draft BLOB NOT NULL, status TEXT NOT NULL, decision BLOB,
            created TEXT NOT NULL, decided TEXT, closed TEXT, closed_reason TEXT
        );
        INSERT INTO llamon_reviews VALUES
            ('old', 't1', 'c1', 'loan', '{"a": 1}', 'decided',
             '{"type": "approve", "edited": null, "message": null}',
             '2025-01-01T00:00:00.000Z', '2025-01-01T00:01:00.000Z', NULL, NULL),
            ('new', 't2', 'c2', 'loan', '{"a": 2}', 'pending', NULL,
             '2025-01-01T00:00:00.000Z', NULL, NULL, NULL);
    """)
    conn.commit()
    try:
        port = SQLiteReviewPort(conn)
        old = await port.get("old")
        assert (old.decision, old.decided_by, old.decided) == (
            Decision("approve"), None, "2025-01-01T00:01:00.000Z"
        )
        assert old.to_json()["decidedBy"] is None
        await port.decide("new", Decision("reject", message="no", by="bob"))
    finally:
        conn.close()
    conn = sqlite3.connect(path)
    try:
        new = await SQLiteReviewPort(conn).get("new")
        assert (new.decision, new.decided_by) == (Decision("reject", message="no", by="bob"), "bob")
        assert new.decision is not None and new.decision.to_json() == {
            "type": "reject", "edited": None, "message": "no"
        }
        columns = [row[1] for row in conn.execute("PRAGMA table_info(llamon_reviews)")]
        assert columns.count("decided_by") == 1
    finally:
        conn.close()
