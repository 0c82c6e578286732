"""``PostgresReviewPort`` across replicas: every port on a schema tells its listeners of every
decision taken on that schema, through whichever port (LISTEN/NOTIFY, then a read of the table),
exactly once; a port whose listening connection dropped catches up after it reconnects.

Each ``open_storage`` below is one replica (its own pool, its own listening connection). A
replica's feed tells decisions in the order they were committed, so once a listener heard a
decision another replica took *last*, it has heard everything before it: the tests wait for such
a marker and then assert the whole list (a decision told twice would show up before it).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from llamon_agent.human_review import Decision, HumanReviewPort, Review
from llamon_agent.stores.storage import open_storage

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")
from psycopg_pool import AsyncConnectionPool  # noqa: E402 (needs psycopg)

from llamon_agent.human_review import postgres as pg_reviews  # noqa: E402
from llamon_agent.human_review.postgres import (  # noqa: E402
    LISTENER_NAME,
    PostgresReviewPort,
)
from llamon_agent.stores.postgres import CONNECTION_KWARGS, migrate  # noqa: E402
from tests.backends import _with_schema  # noqa: E402

WAIT = 10.0  # seconds: a bound on waiting for a delivery, never an expectation of speed


class Heard:
    """A decision listener that records what it is told and lets a test wait for a review."""

    def __init__(self) -> None:
        self.reviews: list[Review] = []
        self._changed = asyncio.Event()

    async def __call__(self, review: Review) -> None:
        self.reviews.append(review)
        self._changed.set()

    async def until(self, review: Review) -> list[Review]:
        async with asyncio.timeout(WAIT):
            while review.id not in {r.id for r in self.reviews}:
                self._changed.clear()
                await self._changed.wait()
        return self.reviews


def port_of(storage: Any) -> PostgresReviewPort:
    port = storage.reviews
    assert isinstance(port, PostgresReviewPort)
    return port


async def decided(port: HumanReviewPort, task: str, decision: Decision) -> Review:
    review = await port.submit(task_id=task, context_id=f"ctx-{task}", agent_id="loan",
                               draft={"task": task})
    return await port.decide(review.id, decision)


def running_tasks() -> set[asyncio.Task[Any]]:
    return {t for t in asyncio.all_tasks() if not t.done()} - {asyncio.current_task()}


@pytest.fixture
def other_schema_url(postgres_database: str) -> Iterator[str]:
    """A second schema of the session's database (``postgres_url`` gives one per test)."""
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_database, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    try:
        yield _with_schema(postgres_database, schema)
    finally:
        with psycopg.connect(postgres_database, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


async def test_a_decision_through_any_replica_is_heard_once_by_every_replica(
    postgres_url: str,
) -> None:
    async with (open_storage(postgres_url) as a, open_storage(postgres_url) as b,
                open_storage(postgres_url) as c):
        heard_a, heard_b = Heard(), Heard()
        a.reviews.on_decision(heard_a)
        b.reviews.on_decision(heard_b)

        first = await decided(b.reviews, "t1", Decision("approve", by="alice"))
        assert heard_b.reviews == [first]  # the deciding replica: told before decide returned
        await heard_a.until(first)
        second = await decided(a.reviews, "t2", Decision("edit", edited={"n": 2}, by="bob"))
        marker = await decided(c.reviews, "t3", Decision("reject", message="no"))

        assert await heard_a.until(marker) == [first, second, marker]
        assert await heard_b.until(marker) == [first, second, marker]
        assert (first.status, first.decided_by, second.decision) == (
            "decided", "alice", Decision("edit", edited={"n": 2}, by="bob")
        )


async def test_ports_on_other_schemas_hear_nothing_of_each_other(
    postgres_url: str, other_schema_url: str
) -> None:
    async with (open_storage(postgres_url) as x, open_storage(postgres_url) as x2,
                open_storage(other_schema_url) as y):
        heard_x, heard_y = Heard(), Heard()
        x.reviews.on_decision(heard_x)
        y.reviews.on_decision(heard_y)
        channel_x, channel_y = port_of(x).channel, port_of(y).channel
        assert channel_x is not None and channel_y is not None
        assert channel_x == port_of(x2).channel
        assert channel_x != channel_y

        async with await psycopg.AsyncConnection.connect(other_schema_url,
                                                         autocommit=True) as watch:
            await watch.execute(f'LISTEN "{channel_y}"')
            on_x = await decided(x2.reviews, "t1", Decision("approve"))
            on_y = await decided(y.reviews, "t1", Decision("approve"))
            on_x_again = await decided(x2.reviews, "t2", Decision("reject"))

            payloads: list[str] = []
            async for note in watch.notifies(timeout=WAIT):
                payloads.append(note.payload)
                if note.payload == on_y.id:
                    break
            assert payloads == [on_y.id]  # the other schema's decision was not sent on its channel

        assert await heard_x.until(on_x_again) == [on_x, on_x_again]
        assert heard_y.reviews == [on_y]


async def test_a_decision_taken_while_the_listening_connection_was_down_is_heard_after(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pauses: list[float] = []
    paused, release = asyncio.Event(), asyncio.Event()

    async def held(delay: float) -> None:  # the pause before reconnecting, held by the test
        pauses.append(delay)
        paused.set()
        await release.wait()

    monkeypatch.setattr(pg_reviews, "_reconnect_pause", held)
    async with (open_storage(postgres_url) as a, open_storage(postgres_url) as b,
                open_storage(postgres_url) as c):
        heard_a, heard_b = Heard(), Heard()
        a.reviews.on_decision(heard_a)
        b.reviews.on_decision(heard_b)
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as admin:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = current_database() AND application_name = %s",
                (LISTENER_NAME,),
            )
        async with asyncio.timeout(WAIT):
            while len(pauses) < 3:  # the three replicas noticed and wait to reconnect
                paused.clear()
                await paused.wait()

        while_down = await decided(b.reviews, "t1", Decision("approve", by="alice"))
        assert (heard_a.reviews, heard_b.reviews) == ([], [while_down])
        release.set()
        marker = await decided(c.reviews, "t2", Decision("approve"))

        assert await heard_a.until(marker) == [while_down, marker]
        assert await heard_b.until(marker) == [while_down, marker]
        assert pauses == [pg_reviews.RECONNECT_DELAYS[0]] * 3


async def test_a_failing_listener_is_logged_and_the_others_are_still_told(
    postgres_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def broken(review: Review) -> None:
        raise RuntimeError(f"listener broke on {review.id}")

    async with open_storage(postgres_url) as a, open_storage(postgres_url) as b:
        heard_a, heard_b = Heard(), Heard()
        for port, heard in ((a.reviews, heard_a), (b.reviews, heard_b)):
            port.on_decision(broken)
            port.on_decision(heard)

        first = await decided(b.reviews, "t1", Decision("approve"))  # does not raise
        second = await decided(b.reviews, "t2", Decision("reject"))
        assert heard_b.reviews == [first, second]
        assert await heard_a.until(second) == [first, second]

    failures = [r for r in caplog.records
                if r.name == pg_reviews.__name__ and r.levelno == logging.ERROR]
    assert sorted(str(r.exc_info[1]) for r in failures if r.exc_info) == sorted(
        [f"listener broke on {first.id}", f"listener broke on {second.id}"] * 2
    )
    assert len(failures) == 4


async def test_closing_the_storage_stops_the_listening_task_and_connection(
    postgres_url: str,
) -> None:
    before = running_tasks()
    async with open_storage(postgres_url) as storage:
        storage.reviews.on_decision(Heard())
        assert [t.get_name() for t in running_tasks() - before
                if t.get_name() == LISTENER_NAME] == [LISTENER_NAME]
    assert running_tasks() == before
    await no_listening_backend(postgres_url)


async def test_a_port_not_entered_starts_listening_at_its_first_listener(
    postgres_url: str,
) -> None:
    await migrate(postgres_url)
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        postgres_url, min_size=1, kwargs=CONNECTION_KWARGS, open=False
    )
    async with pool, open_storage(postgres_url) as other:
        port = PostgresReviewPort(pool)
        before = running_tasks()
        heard = Heard()
        port.on_decision(heard)
        assert [t.get_name() for t in running_tasks() - before] == [LISTENER_NAME]
        async with port:  # waits until it listens; closing it stops listening
            review = await decided(other.reviews, "t1", Decision("approve"))
            assert await heard.until(review) == [review]
        assert running_tasks() == before
    await no_listening_backend(postgres_url)


async def no_listening_backend(url: str) -> None:
    """Waits until the server has no listening connection of the test's database (a closed
    connection's backend leaves ``pg_stat_activity`` a moment after the client closed it)."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as admin:
        async with asyncio.timeout(WAIT):
            while True:
                cur = await admin.execute(
                    "SELECT COUNT(*) FROM pg_stat_activity"
                    " WHERE datname = current_database() AND application_name = %s",
                    (LISTENER_NAME,),
                )
                row = await cur.fetchone()
                if row is not None and row[0] == 0:
                    return
                await asyncio.sleep(0.02)
