"""Retention by the server's sweeper (``create_app(retention=...)``), on SQLite and on the
``backend`` fixture's backends (in process; PostgreSQL with Redis events), with a clock the
test moves: ended tasks older than the retention period are gone with their checkpoints,
reviews and event streams; waiting and working tasks of any age stay, and so do the
checkpoints of a context that still holds one."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.orchestrator.helpers import Harness, serve_loan

from .helpers import DAY, NEVER, MovingClock, has_checkpoint, stream_exists, sweep, task_error

Served = Callable[..., AbstractAsyncContextManager[Harness]]


def on_sqlite(tmp_path: Path) -> Served:
    return _served(db=str(tmp_path / "llamon.sqlite3"))


def on_backend() -> Served:
    """The ``backend`` fixture's storage and events (the test requests the fixture)."""
    return _served()


def _served(**extra: Any) -> Served:
    @asynccontextmanager
    async def serve(clock: MovingClock, **kwargs: Any) -> AsyncIterator[Harness]:
        async with serve_loan(clock=clock, sweep_every=NEVER, retention=timedelta(days=30),
                              **extra, **kwargs) as harness:
            yield harness

    return serve


async def notes(harness: Harness, text: str, context_id: str | None = None) -> dict[str, Any]:
    """A message to the until-done agent: a new task waiting for a note, or an answer."""
    kw: dict[str, Any] = {"agent_id": "until-done"}
    if context_id is not None:
        kw = {"context_id": context_id}
    return await harness.client.send(text, **kw)


async def test_ended_tasks_older_than_the_period_go_with_their_checkpoints_sqlite(
    tmp_path: Path,
) -> None:
    await ended_tasks_go_with_their_checkpoints(on_sqlite(tmp_path))


@pytest.mark.usefixtures("backend")
async def test_ended_tasks_older_than_the_period_go_with_their_checkpoints() -> None:
    await ended_tasks_go_with_their_checkpoints(on_backend())


async def ended_tasks_go_with_their_checkpoints(served: Served) -> None:
    clock = MovingClock()
    async with served(clock) as h:
        a1 = await notes(h, "note A")
        a1 = await notes(h, "done", a1["contextId"])  # completed
        b1 = await notes(h, "note B")
        b1 = await notes(h, "done", b1["contextId"])  # completed, then a new task waits
        b2 = await notes(h, "note B again", b1["contextId"])
        c1 = await notes(h, "note C")  # waits
        e1 = await notes(h, "note E")
        e1 = await h.client.result("tasks/cancel", {"id": e1["id"]})
        states = [t["status"]["state"] for t in (a1, b1, b2, c1, e1)]
        assert states == ["completed", "completed", "input-required", "input-required",
                          "canceled"]
        assert b2["id"] != b1["id"] and b2["contextId"] == b1["contextId"]
        ended, kept = [a1, b1, e1], [b2, c1]
        assert await stream_exists(a1["id"]) is not False  # Redis events: the stream is there

        clock.advance_to(29 * DAY)  # younger than the period: nothing goes
        assert await sweep(h) == 0
        for task in ended + kept:
            assert await task_error(h, task["id"]) is None

        clock.advance_to(31 * DAY)
        assert await sweep(h) == 3
        for task in ended:
            assert await task_error(h, task["id"]) == -32001
        for task in kept:
            assert (await h.get(task["id"]))["status"] == task["status"]
        assert not await has_checkpoint(h, a1["contextId"])
        assert not await has_checkpoint(h, e1["contextId"])
        assert await has_checkpoint(h, b1["contextId"])  # b2 waits in it
        assert await has_checkpoint(h, c1["contextId"])
        assert await stream_exists(a1["id"]) is not True  # and now gone
        assert await stream_exists(c1["id"]) is not False
        assert await sweep(h) == 0  # twice is harmless

        # the waiting tasks go on as if nothing happened
        await notes(h, "milk", b2["contextId"])
        done = await notes(h, "done", b2["contextId"])
        assert done["id"] == b2["id"] and done["status"]["state"] == "completed"
        assert done["artifacts"][0]["parts"][0]["data"] == {"notes": ["milk"]}

        # a new message on a pruned context starts afresh: a new task, an empty state
        a2 = await notes(h, "note A2", a1["contextId"])
        assert a2["id"] != a1["id"] and a2["status"]["state"] == "input-required"
        said = [m.content for m in (await h.manager.thread_values(a1["contextId"]))["messages"]]
        assert "note A" not in said and "done" not in said and "note A2" in said


async def test_waiting_and_working_tasks_of_any_age_stay_with_their_reviews_sqlite(
    tmp_path: Path,
) -> None:
    await working_tasks_stay_with_their_reviews(on_sqlite(tmp_path))


@pytest.mark.usefixtures("backend")
async def test_waiting_and_working_tasks_of_any_age_stay_with_their_reviews() -> None:
    await working_tasks_stay_with_their_reviews(on_backend())


async def working_tasks_stay_with_their_reviews(served: Served) -> None:
    """A loan parked for a reviewer (``working``, no turn running) stays with its pending
    review; a decided, completed loan goes with its review and its children's tasks."""
    clock = MovingClock()
    async with served(clock) as h:
        parked, parked_review = await h.to_review()
        decided, decided_review = await h.to_review()
        assert (await h.decide(decided_review, {"type": "approve"})).status_code == 200
        await h.wait_state(decided["id"], {"completed"})
        child = await h.child_task_id(f"{decided['contextId']}::risk")

        clock.advance_to(3650 * DAY)
        assert await sweep(h) >= 2  # the loan and its children's tasks
        assert await task_error(h, decided["id"]) == -32001
        assert (await h.http.get(f"/reviews/{decided_review}",
                                 headers={"Authorization": "Bearer t"})).status_code == 404
        assert await h.manager._store.get(child) is None
        assert not await has_checkpoint(h, decided["contextId"])

        assert (await h.get(parked["id"]))["status"]["state"] == "working"
        assert (await h.review(parked_review))["status"] == "pending"
        assert await has_checkpoint(h, parked["contextId"])
        # the reviewer's decision still resumes it
        assert (await h.decide(parked_review, {"type": "approve"})).status_code == 200
        assert (await h.wait_state(parked["id"], {"completed"}))["status"]["state"] == "completed"


async def test_rows_of_unknown_age_are_dated_then_kept_a_whole_period(tmp_path: Path) -> None:
    """A row stored before updates were timed (``updated = 0``) is not deleted at once: the
    first sweep dates it, and it goes one period later."""
    clock = MovingClock()
    db = tmp_path / "llamon.sqlite3"
    async with serve_loan(db=str(db), clock=clock, sweep_every=NEVER,
                          retention=timedelta(days=30)) as h:
        task = await notes(h, "note")
        task = await notes(h, "done", task["contextId"])
        conn = sqlite3.connect(db)
        with conn:
            conn.execute("UPDATE llamon_tasks SET updated = 0 WHERE id = ?", (task["id"],))
        clock.advance_to(400 * DAY)
        assert await sweep(h) == 0  # dated now (day 400)
        dated = conn.execute("SELECT updated FROM llamon_tasks WHERE id = ?",
                             (task["id"],)).fetchone()[0]
        assert abs(dated - clock().timestamp()) < 60
        clock.advance_to(429 * DAY)
        assert await sweep(h) == 0
        clock.advance_to(431 * DAY)
        assert await sweep(h) == 1
        assert await task_error(h, task["id"]) == -32001
        conn.close()


async def test_without_retention_nothing_is_deleted(tmp_path: Path) -> None:
    clock = MovingClock()
    async with serve_loan(db=str(tmp_path / "x.sqlite3"), clock=clock,
                          sweep_every=NEVER) as h:
        task = await notes(h, "note")
        task = await notes(h, "done", task["contextId"])
        clock.advance_to(36500 * DAY)
        report = await h.manager.sweeper.sweep_once()
        assert "retention" not in report.handled
        assert await task_error(h, task["id"]) is None
