"""The example email assistant writes to the outbox in the database its server runs on, told
by the run context, not by an environment variable (``llamon-agent serve --db``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.assistant import email_assistant
from app.outbox import Outbox
from tests.conftest import durable_db
from tests.tool_review.helpers import rest_server

#: the server's database on both backends: a SQLite file, and PostgreSQL (+ Redis events)
pytestmark = pytest.mark.usefixtures("backend")


async def test_an_approved_email_lands_in_the_servers_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a stray default file would land here
    monkeypatch.delenv("LLAMON_DB", raising=False)
    db = durable_db(tmp_path, "server.sqlite3")
    async with rest_server(email_assistant(), db=db) as rest:
        body = await rest.pending()
        done = await rest.review(body["thread_id"], [{"type": "approve"}])
        assert done.status_code == 200, done.text
    box = Outbox(db)
    assert box.count(body["thread_id"]) == 1
    box.close()
    assert not (tmp_path / "llamon.sqlite3").exists()
