"""``PostgresReviewPort`` across processes: two servers (two pools) on one database see one
review per task and each other's decisions; the schema migrates once however many start."""

from __future__ import annotations

import asyncio

import pytest

from llamon_agent.human_review import Decision, ReviewClosedError
from llamon_agent.stores.storage import open_storage

psycopg = pytest.importorskip("psycopg", reason="the postgres extra is not installed")
from llamon_agent.stores.postgres import MIGRATIONS  # noqa: E402 (needs psycopg)


async def test_submit_is_idempotent_per_task_across_servers(postgres_url: str) -> None:
    async with open_storage(postgres_url) as a, open_storage(postgres_url) as b:
        reviews = await asyncio.gather(*(
            port.submit(task_id="t1", context_id="c1", agent_id="loan", draft={"n": i})
            for i, port in enumerate([a.reviews, b.reviews] * 10)
        ))
        assert len({r.id for r in reviews}) == 1
        assert [r.id for r in await b.reviews.pending(100)] == [reviews[0].id]
        decided = await b.reviews.decide(reviews[0].id, Decision("approve", by="alice"))
        seen = await a.reviews.get(reviews[0].id)
        assert seen == decided and seen.decided_by == "alice"
        with pytest.raises(ReviewClosedError):
            await a.reviews.decide(reviews[0].id, Decision("reject"))
        again = await a.reviews.submit(task_id="t1", context_id="c1", agent_id="loan", draft={})
        assert again.id != reviews[0].id and again.status == "pending"


async def test_servers_starting_together_migrate_once(postgres_url: str) -> None:
    async def start() -> None:
        async with open_storage(postgres_url) as storage:
            await storage.tasks.ping()

    await asyncio.gather(*(start() for _ in range(6)))
    async with await psycopg.AsyncConnection.connect(postgres_url) as conn:
        cur = await conn.execute("SELECT v FROM llamon_migrations ORDER BY v")
        assert [row[0] for row in await cur.fetchall()] == list(range(len(MIGRATIONS)))
        cur = await conn.execute("SELECT COUNT(*) FROM checkpoint_migrations")
        row = await cur.fetchone()
        assert row is not None and row[0] > 0
