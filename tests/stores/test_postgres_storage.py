"""``open_storage`` on PostgreSQL: what it opens it closes (also when the body fails), an older
schema is upgraded in place, and the password of the URL never reaches the logs."""

from __future__ import annotations

import logging
from urllib.parse import urlsplit, urlunsplit

import pytest

from llamon_agent.a2a.types import Message, Task, TaskStatus, TextPart
from llamon_agent.stores.base import StoredTask, TaskQuery
from llamon_agent.stores.storage import open_storage
from tests.conftest import serve
from tests.runtime.helpers import doc_agent

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")
from llamon_agent.stores.postgres import MIGRATIONS  # noqa: E402 (needs psycopg)


async def _connections(url: str) -> int:
    """Connections to the database of ``url`` other than the one asking."""
    async with await psycopg.AsyncConnection.connect(url) as conn:
        cur = await conn.execute(
            "SELECT COUNT(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        row = await cur.fetchone()
        assert row is not None
        return int(row[0])


async def test_the_pool_is_closed_on_the_way_out_also_when_the_body_fails(
    postgres_url: str,
) -> None:
    idle = await _connections(postgres_url)
    async with open_storage(postgres_url) as storage:
        await storage.tasks.ping()
        assert await _connections(postgres_url) > idle
    assert await _connections(postgres_url) == idle
    with pytest.raises(RuntimeError, match="the app failed"):
        async with open_storage(postgres_url) as storage:
            await storage.reviews.pending(100)
            raise RuntimeError("the app failed")
    assert await _connections(postgres_url) == idle


async def test_an_older_schema_gains_the_later_versions(postgres_url: str) -> None:
    """A database migrated to version 0 (tasks only) gets the reviews table at the next
    start; its rows stay, and the version table records each version once."""
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        await conn.execute("CREATE TABLE llamon_migrations (v INTEGER PRIMARY KEY)")
        await conn.execute(MIGRATIONS[0], prepare=False)
        await conn.execute("INSERT INTO llamon_migrations (v) VALUES (0)")
        await conn.execute(
            "INSERT INTO llamon_tasks (id, context_id, agent_id, state, event_seq,"
            " reask_count, task) VALUES ('old', 'c', 'a', 'completed', 1, 0, %s)",
            (b'{"kind": "task", "id": "old", "contextId": "c", "status": {"state": "completed"}}',),
        )
    async with open_storage(postgres_url) as storage:
        old = await storage.tasks.get("old")
        assert old is not None and (old.state, old.space, old.event_seq) == (
            "completed", "anonymous", 1
        )
        review = await storage.reviews.submit(task_id="t", context_id="c", agent_id="a",
                                              draft={"x": 1})
        assert (await storage.reviews.get(review.id)).draft == {"x": 1}
    async with open_storage(postgres_url):  # nothing left to apply
        pass
    async with await psycopg.AsyncConnection.connect(postgres_url) as conn:
        cur = await conn.execute("SELECT v FROM llamon_migrations ORDER BY v")
        assert [row[0] for row in await cur.fetchall()] == list(range(len(MIGRATIONS)))


async def test_a_large_tasks_row_is_compressed_with_lz4_where_the_server_has_it(
    postgres_url: str,
) -> None:
    """PostgreSQL compresses a row's values of more than about 2 KB; lz4 wrote a 700 KB task
    in 1.6 ms of its CPU against pglz's 7.0 (bench/README.md, "Speed, round thirty-five")."""
    async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as conn:
        try:
            await conn.execute("CREATE TEMP TABLE lz4_here (b BYTEA COMPRESSION lz4)")
        except psycopg.errors.FeatureNotSupported:
            pytest.skip("this PostgreSQL was built without lz4: the migration keeps pglz")
    async with open_storage(postgres_url) as storage:
        await storage.tasks.save(_large_record())
    async with await psycopg.AsyncConnection.connect(postgres_url) as conn:
        cur = await conn.execute(
            "SELECT attname, attcompression FROM pg_attribute WHERE attrelid ="
            " 'llamon_tasks'::regclass AND attname IN ('task', 'extra') ORDER BY attname")
        assert await cur.fetchall() == [("extra", "l"), ("task", "l")]
        cur = await conn.execute(
            "SELECT pg_column_compression(task) FROM llamon_tasks WHERE id = 'large'")
        assert await cur.fetchall() == [("lz4",)]


async def test_every_read_of_a_task_row_comes_in_the_binary_format(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A ``bytea`` in the text format is hex, twice its bytes, which the backend writes and
    psycopg parses: a 1.4 MB row cost 8.8 against 1.8 ms of PostgreSQL's CPU and 4.9 against 1.1
    ms of ours (bench/README.md, "Speed, round thirty-five"). The store's reads, its listing and
    the turn's claim read (``pg_claim_reads.py``) all read the task column as bytes."""
    formats: dict[str, set[int]] = {}
    execute = psycopg.AsyncCursor.execute

    async def recorded(self: psycopg.AsyncCursor, query: object, *args: object,
                       **kwargs: object) -> psycopg.AsyncCursor:
        done = await execute(self, query, *args, **kwargs)  # type: ignore[arg-type]
        text = query if isinstance(query, str) else str(query)
        if text.startswith("SELECT task,") and self.pgresult is not None:
            formats.setdefault(text, set()).add(self.pgresult.fformat(0))
        return done

    monkeypatch.setattr(psycopg.AsyncCursor, "execute", recorded)
    async with open_storage(postgres_url) as storage:
        await storage.tasks.save(_large_record())
        assert await storage.tasks.get("large") is not None
        assert await storage.tasks.latest_in_context(_large_record().context_key) is not None
        assert (await storage.tasks.list_tasks(TaskQuery(space="anonymous"), 5)).tasks
    async with serve([doc_agent()], db=postgres_url) as client:
        asked = await client.send("이 서류를 검증해줘", context_id="binary")
        await client.send("여권", context_id="binary", task_id=asked["id"])  # a claim's read
    assert formats and all(found == {1} for found in formats.values()), formats  # 1: binary
    assert len(formats) >= 3, formats  # by id, by context (the claim's too), a listing's page


def _large_record() -> StoredTask:
    history = [Message(message_id=f"m-{n}", role="user",
                       parts=[TextPart(kind="text", text=f"answer {n} " + "x" * 100)])
               for n in range(100)]
    task = Task(id="large", context_id="c", status=TaskStatus(state="input-required"),
                history=history)
    return StoredTask(task=task, agent_id="a", event_seq=1)


async def test_the_startup_log_masks_the_password(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    parts = urlsplit(postgres_url)
    # the test server trusts local connections: any password is accepted
    with_password = urlunsplit(parts._replace(netloc=f"postgres:s3cret@{parts.hostname}:"
                                                     f"{parts.port or 5432}"))
    caplog.set_level(logging.INFO, logger="llamon_agent.server")
    async with serve([doc_agent()], db=with_password) as client:
        await client.send("이 서류를 검증해줘", context_id="c", agent_id="document-review")
    shown = [m for m in caplog.messages if m.startswith("database: ")]
    assert shown == [f"database: {with_password.replace(':s3cret@', ':***@')}"]
    assert "s3cret" not in caplog.text
