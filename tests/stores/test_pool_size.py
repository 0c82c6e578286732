"""``--db-pool-size`` / ``LLAMON_DB_POOL_SIZE`` / ``create_app(db_pool_size=)``: PostgreSQL's
connection pool is the size the operator sets, never larger under load; a pool of one still
serves concurrent HITL round trips and tool approvals (no path holds one pooled connection
while it waits for another); ``/metrics`` shows the pool. Out-of-range sizes are refused
before anything opens; a size set for SQLite is said to be ignored."""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest

from app.assistant import email_assistant
from app.outbox import Outbox
from llamon_agent import create_app, open_storage
from llamon_agent.server.pool_metrics import PoolCollector, pool_metrics
from llamon_agent.settings import MAX_DB_POOL_SIZE, Settings, parse_pool_size
from tests.conftest import A2AClient, serve
from tests.runtime.helpers import doc_agent, result_data, state_of, status_parts

#: at once: well above a pool of one or three, so a pool that grew past its size would show
CONCURRENT = 12


def _series(text: str) -> dict[str, float]:
    """``name{labels} value`` lines of an exposition, without comments or ``_created``."""
    found = {}
    for line in text.splitlines():
        if line.startswith("llamon_db_pool") and "_created" not in line:
            name, value = line.rsplit(" ", 1)
            found[name] = float(value)
    return found


async def _scrape(client: A2AClient) -> dict[str, float]:
    response = await client.http.get("/metrics")
    assert response.status_code == 200
    return _series(response.text)


async def _document_round_trip(client: A2AClient, context_id: str) -> dict[str, Any]:
    """The document agent's two questions answered: the task completes."""
    first = await client.send("이 서류를 검증해줘", context_id=context_id,
                              agent_id="document-review")
    assert state_of(first) == "input-required"
    second = await client.send("여권", context_id=context_id, agent_id="document-review")
    assert (second["id"], state_of(second)) == (first["id"], "input-required")
    done = await client.send("1990-01-01", context_id=context_id, agent_id="document-review")
    assert state_of(done) == "completed", done["status"]
    return done


async def test_the_pool_never_grows_past_its_size_under_load(postgres_url: str) -> None:
    async with serve([doc_agent()], db=postgres_url, db_pool_size=3) as client:
        assert (await _scrape(client))["llamon_db_pool_max"] == 3
        done = await asyncio.wait_for(asyncio.gather(*(
            _document_round_trip(client, f"pool-{n}") for n in range(CONCURRENT))), 60)
        assert all(result_data(d) == {"doc_type": "passport", "birthday": "1990-01-01"}
                   for d in done)
        series = await _scrape(client)
    held = (series["llamon_db_pool_connections_in_use"]
            + series["llamon_db_pool_connections_idle"])
    assert 1 <= held <= 3
    assert series["llamon_db_pool_waiting"] == 0
    assert series["llamon_db_pool_requests_total"] >= CONCURRENT * 3
    assert series["llamon_db_pool_queued_total"] > 0  # the load did contend for the three
    assert series["llamon_db_pool_errors_total"] == 0


async def test_a_pool_of_one_serves_concurrent_round_trips_and_approvals(
    postgres_url: str,
) -> None:
    outbox = Outbox(":memory:")
    request = "Send an email to alice@example.com about Meeting: The meeting is at 10."

    async def approved(client: A2AClient, context_id: str) -> None:
        task = await client.send(request, context_id=context_id, agent_id="email-assistant")
        assert state_of(task) == "input-required"
        done = await client.send(data={"decisions": [{"type": "approve"}]},
                                 context_id=context_id, agent_id="email-assistant")
        assert (done["id"], state_of(done)) == (task["id"], "completed"), done["status"]
        assert status_parts(done)[0]["text"].startswith("Sent an email to alice@example.com")

    try:
        async with serve([doc_agent(), email_assistant(outbox)], db=postgres_url,
                         db_pool_size=1) as client:
            # a path that held its connection while it waited for a second one would wait
            # for ever on a pool of one (psycopg_pool's own timeout is 30 s)
            await asyncio.wait_for(asyncio.gather(
                *(_document_round_trip(client, f"one-{n}") for n in range(CONCURRENT // 2)),
                *(approved(client, f"mail-{n}") for n in range(CONCURRENT // 2))), 60)
            series = await _scrape(client)
        assert series["llamon_db_pool_max"] == 1
        assert series["llamon_db_pool_queued_total"] > 0
        assert outbox.count() == CONCURRENT // 2
    finally:
        outbox.close()


async def test_the_pool_size_comes_from_the_environment(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMON_DB_POOL_SIZE", "4")
    async with serve([doc_agent()], db=postgres_url) as client:
        assert (await _scrape(client))["llamon_db_pool_max"] == 4
    async with serve([doc_agent()], db=postgres_url, db_pool_size=2) as client:  # wins
        assert (await _scrape(client))["llamon_db_pool_max"] == 2


async def test_the_startup_log_names_the_pool(postgres_url: str,
                                              caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with serve([doc_agent()], db=postgres_url, db_pool_size=5):
        pass
    lines = [r.getMessage() for r in caplog.records]
    assert "database pool: up to 5 connections" in lines
    assert lines.index("database pool: up to 5 connections") == 1 + next(
        n for n, line in enumerate(lines) if line.startswith("database: postgresql://"))


async def test_sqlite_has_no_pool_and_says_a_size_set_for_it_is_ignored(
    tmp_path: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    async with serve([doc_agent()], db=str(tmp_path / "a.sqlite3"), db_pool_size=7) as client:
        assert await _scrape(client) == {}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "db_pool_size 7 ignored: only PostgreSQL storage has a connection pool" in warnings
    caplog.clear()
    async with serve([doc_agent()], db=str(tmp_path / "b.sqlite3")):
        pass
    assert not [r for r in caplog.records
                if r.getMessage().startswith(("db_pool_size", "database pool"))]


@pytest.mark.parametrize("size", [0, -1, MAX_DB_POOL_SIZE + 1, 2.5, "20", True, None])
def test_create_app_refuses_a_pool_size_out_of_range(size: Any) -> None:
    if size is None:  # None is "unset": the settings' size, which is checked the same way
        with pytest.raises(ValueError, match="db_pool_size must be a whole number from 1 to 1000"):
            create_app([doc_agent()], db=":memory:", settings=Settings(db_pool_size=0))
        return
    with pytest.raises(ValueError, match=re.escape(f"from 1 to 1000, got {size!r}")):
        create_app([doc_agent()], db=":memory:", db_pool_size=size)


async def test_open_storage_refuses_a_pool_size_out_of_range(tmp_path: Any) -> None:
    with pytest.raises(ValueError, match=r"^pool_size must be a whole number from 1 to 1000, got 0$"):
        async with open_storage(str(tmp_path / "never.sqlite3"), pool_size=0):
            pass
    assert not (tmp_path / "never.sqlite3").exists()  # refused before anything opened


@given(st.text(max_size=12))
def test_a_pool_size_variable_is_a_whole_number_from_1_to_1000_or_an_error(text: str) -> None:
    try:
        value = parse_pool_size(text)
    except ValueError as exc:
        assert str(exc).startswith(("expected a whole number", "must be at least 1",
                                    "must be a whole number from 1 to 1000"))
        return
    assert value == int(text) and 1 <= value <= MAX_DB_POOL_SIZE


class _Stats:
    def __init__(self, stats: dict[str, int]) -> None:
        self.stats = stats

    def get_stats(self) -> dict[str, int]:
        return dict(self.stats)


def test_the_collector_names_psycopg_pools_counts() -> None:
    registry = CollectorRegistry()
    source = _Stats({"pool_min": 1, "pool_max": 8, "pool_size": 5, "pool_available": 2,
                     "requests_waiting": 3, "requests_num": 40, "requests_queued": 6,
                     "requests_wait_ms": 1250, "requests_errors": 1})
    registry.register(PoolCollector(source))
    assert _series(generate_latest(registry).decode()) == {
        "llamon_db_pool_max": 8.0,
        "llamon_db_pool_connections_in_use": 3.0,
        "llamon_db_pool_connections_idle": 2.0,
        "llamon_db_pool_waiting": 3.0,
        "llamon_db_pool_requests_total": 40.0,
        "llamon_db_pool_queued_total": 6.0,
        "llamon_db_pool_wait_seconds_total": 1.25,
        "llamon_db_pool_errors_total": 1.0,
    }
    source.stats = {"pool_max": 8}  # psycopg_pool leaves out counters that never moved
    assert _series(generate_latest(registry).decode())["llamon_db_pool_queued_total"] == 0


def test_the_series_leave_with_the_pool() -> None:
    registry = CollectorRegistry()
    with pool_metrics(registry, _Stats({"pool_max": 2})):
        assert "llamon_db_pool_max 2.0" in generate_latest(registry).decode()
    assert "llamon_db_pool" not in generate_latest(registry).decode()
    with pool_metrics(registry, None):
        assert "llamon_db_pool" not in generate_latest(registry).decode()
