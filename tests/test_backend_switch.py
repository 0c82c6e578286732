"""The ``backend`` fixture is not a no-op: under ``postgres+redis`` the in-process server
stores its tasks in the test's PostgreSQL schema and relays its events through Redis under the
test's key prefix; under ``memory`` it touches neither."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest

from tests.conftest import serve, served_on
from tests.runtime.helpers import doc_agent

pytestmark = pytest.mark.usefixtures("backend")


async def test_the_server_runs_on_the_tests_backend(backend: str) -> None:
    on = served_on()
    async with serve([doc_agent()]) as client:
        task = await client.send("이 서류를 검증해줘", context_id="switch")
    assert task["status"]["state"] == "input-required"
    if backend == "memory":
        assert on == {"db": ":memory:"}
        return
    import psycopg
    from redis.asyncio import Redis

    with psycopg.connect(on["db"]) as conn:
        rows = conn.execute("SELECT id, state FROM llamon_tasks").fetchall()
    assert rows == [(task["id"], "input-required")]
    events = urlsplit(on["events"])
    prefix = parse_qs(events.query)["prefix"][0]
    redis = Redis.from_url(events._replace(query="").geturl())
    try:
        keys = [key async for key in redis.scan_iter(match=f"{prefix}*")]
    finally:
        await redis.aclose()
    assert f"{prefix}events:{task['id']}".encode() in keys, keys
