"""A deadline that passed while no server ran is applied by the first sweep after the start."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from app.nodes import document_review_graph
from llamon_agent import Agent
from llamon_agent.core.deadlines import Cancel, Deadline, WaitPolicy
from tests.deadlines.helpers import MovableClock, serve_clocked

AGENT = Agent("document-review", document_review_graph(),
              wait_policy=WaitPolicy(questions=Deadline(3600, Cancel("expired while down"))))


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return str(tmp_path / "tasks.sqlite3")
    return str(request.getfixturevalue("postgres_url"))


async def test_a_deadline_that_passed_while_stopped_is_applied_at_start(database: str) -> None:
    clock = MovableClock()
    async with serve_clocked([AGENT], clock, db=database) as served:
        task = await served.client.send("start")
        assert task["status"]["state"] == "input-required"
    clock.advance(2 * 3600)  # the server is down while the deadline passes
    async with serve_clocked([AGENT], clock, db=database) as served:
        # the sweeper swept once as the server started; no sweep is called here
        for _ in range(500):  # generous: 10 s
            done = await served.client.result("tasks/get", {"id": task["id"]})
            if done["status"]["state"] == "canceled":
                break
            await asyncio.sleep(0.02)
        assert done["status"]["state"] == "canceled"
        assert done["status"]["message"]["parts"][0]["text"] == "expired while down"
