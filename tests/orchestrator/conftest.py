"""Real-process fixtures of ``tests/process`` (``launch``) for the remote-child tests, and the
``HumanReviewPort`` of each storage for the port's contract."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from llamon_agent.human_review import HumanReviewPort, InMemoryReviewPort, SQLiteReviewPort
from llamon_agent.stores.sqlite import connect
from llamon_agent.stores.storage import open_storage
from tests.process.conftest import launch  # noqa: F401


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def port(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[HumanReviewPort]:
    if request.param == "memory":
        yield InMemoryReviewPort()
        return
    if request.param == "postgres":
        async with open_storage(request.getfixturevalue("postgres_url")) as storage:
            yield storage.reviews
        return
    conn = connect(str(tmp_path / "reviews.sqlite3"))
    try:
        yield SQLiteReviewPort(conn)
    finally:
        conn.close()
