"""The example outbox sends once per tool call: ``Outbox.send_once(tool_call_id, ...)`` stores
the email under ``(thread_id, tool_call_id)`` in the server's own database (a SQLite file, or
PostgreSQL), so a turn re-run from its checkpoint (another replica, after a crash) finds the
first email instead of sending a second one."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.outbox import Outbox, SentEmail, server_outbox
from llamon_agent.core.run_context import RunContext, with_run_context


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The server's database setting: a SQLite file, or a PostgreSQL URL (its own schema)."""
    if request.param == "postgres":
        pytest.importorskip("psycopg", reason="the postgres extra is not installed")
        return str(request.getfixturevalue("postgres_url"))
    return str(tmp_path / "server.sqlite3")


@pytest.fixture
def outbox(database: str) -> Iterator[Outbox]:
    box = Outbox(database)
    yield box
    box.close()


async def test_the_same_call_id_sent_twice_is_one_email(outbox: Outbox) -> None:
    first = await outbox.send_once("call_1", "alice@example.com", "Meeting", "At 10.", "t1")
    again = await outbox.send_once("call_1", "alice@example.com", "Meeting", "At 10.", "t1")
    assert first == SentEmail(number=1, thread_id="t1", tool_call_id="call_1",
                              to="alice@example.com", subject="Meeting", body="At 10.")
    assert again == first
    assert outbox.rows() == [{"id": 1, "thread_id": "t1", "tool_call_id": "call_1",
                              "to": "alice@example.com", "subject": "Meeting", "body": "At 10."}]


async def test_a_second_send_returns_the_first_email_whatever_it_carries(outbox: Outbox) -> None:
    first = await outbox.send_once("call_1", "alice@example.com", "Meeting", "At 10.", "t1")
    again = await outbox.send_once("call_1", "bob@example.com", "Other", "Other.", "t1")
    assert again == first
    assert [(r["to"], r["subject"]) for r in outbox.rows()] == [("alice@example.com", "Meeting")]


async def test_another_outbox_on_the_same_database_finds_the_first_email(database: str) -> None:
    """What a second replica (another process, its own connection) sees."""
    one, other = Outbox(database), Outbox(database)
    try:
        first = await one.send_once("call_1", "alice@example.com", "Meeting", "At 10.", "t1")
        assert other.sent("call_1", "t1") == first
        assert await other.send_once("call_1", "alice@example.com", "Meeting", "At 10.",
                                     "t1") == first
        assert other.count() == 1
        assert one.count() == 1
    finally:
        one.close()
        other.close()


async def test_concurrent_sends_of_one_call_store_one_email(database: str) -> None:
    boxes = [Outbox(database) for _ in range(3)]
    try:
        sent = await asyncio.gather(*(
            box.send_once("call_7", "alice@example.com", "Meeting", "At 10.", "t1")
            for box in boxes for _ in range(3)
        ))
        assert len(set(sent)) == 1  # every caller got the one email
        assert boxes[0].emails() == [sent[0]]
    finally:
        for box in boxes:
            box.close()


async def test_the_key_is_the_call_id_within_its_thread(outbox: Outbox) -> None:
    """The offline planner numbers calls per thread (``call_1`` in every conversation): the
    same id in another thread is another email."""
    a = await outbox.send_once("call_1", "alice@example.com", "Meeting", "At 10.", "t1")
    b = await outbox.send_once("call_1", "bob@example.com", "Meeting", "At 10.", "t2")
    c = await outbox.send_once("call_1", "citra@example.co.id", "Meeting", "At 10.")
    assert (a.number, b.number, c.number) == (1, 2, 3)
    assert await outbox.send_once("call_1", "x@example.com", "X", "X.") == c  # no thread: one too
    assert outbox.count("t1") == 1
    assert outbox.count("t2") == 1
    assert outbox.count() == 3
    assert outbox.sent("call_1", "t3") is None


async def test_sends_without_a_key_are_never_deduplicated(outbox: Outbox) -> None:
    assert await outbox.send("alice@example.com", "Meeting", "At 10.", "t1") == 1
    assert await outbox.send("alice@example.com", "Meeting", "At 10.", "t1") == 2
    assert [r["tool_call_id"] for r in outbox.rows("t1")] == [None, None]


async def test_the_servers_outbox_is_in_the_servers_database(database: str) -> None:
    """On PostgreSQL too (it was a private in-memory SQLite there: a re-run in another process
    would have sent again)."""
    config = {"configurable": with_run_context({"thread_id": "t1"}, RunContext(db=database))}
    box = server_outbox(config)
    assert box.path == database
    assert server_outbox(config) is box
    sent = await box.send_once("call_1", "alice@example.com", "Meeting", "At 10.", "t1")
    reader = Outbox(database)
    try:
        assert reader.sent("call_1", "t1") == sent
    finally:
        reader.close()
        box.close()


async def test_a_memory_outbox_deduplicates_in_its_process() -> None:
    box = Outbox(":memory:")
    try:
        first = await box.send_once("call_1", "alice@example.com", "Meeting", "At 10.", "t1")
        assert await box.send_once("call_1", "alice@example.com", "Meeting", "At 10.",
                                   "t1") == first
        assert box.count() == 1
    finally:
        box.close()


async def test_an_outbox_table_from_before_gets_the_key(tmp_path: Path) -> None:
    """A SQLite file written by the outbox of 0.x (no ``tool_call_id`` column) keeps its rows."""
    db = tmp_path / "old.sqlite3"
    conn = sqlite3.connect(db)
    conn.executescript(
        "CREATE TABLE outbox (id INTEGER PRIMARY KEY AUTOINCREMENT, thread_id TEXT,"
        " to_address TEXT NOT NULL, subject TEXT NOT NULL, body TEXT NOT NULL,"
        " sent_at TEXT NOT NULL);"
        "INSERT INTO outbox (thread_id, to_address, subject, body, sent_at)"
        " VALUES ('t0', 'old@example.com', 'Old', 'Old.', '2024-01-01T00:00:00+00:00');"
    )
    conn.close()
    box = Outbox(str(db))
    try:
        first = await box.send_once("call_1", "alice@example.com", "Meeting", "At 10.", "t1")
        assert await box.send_once("call_1", "alice@example.com", "Meeting", "At 10.",
                                   "t1") == first
        assert [(r["id"], r["tool_call_id"], r["to"]) for r in box.rows()] == [
            (1, None, "old@example.com"), (2, "call_1", "alice@example.com")
        ]
    finally:
        box.close()
