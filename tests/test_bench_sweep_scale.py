"""bench/sweep_scale.py grows a real server's storage by copying its rows with new keys, and
times the sweep, ``GET /metrics`` and ``ListTasks`` at both sizes; small sizes here, on SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from bench.sweep_scale import CALLS, Size, count_sqlite, grow_sqlite, measure, report


async def test_a_sqlite_file_grows_by_copies_with_their_own_keys_and_both_sizes_are_timed(
) -> None:
    seeded, grown = await measure("sqlite", seed=3, target=20, repeat=2)
    assert seeded.tasks == 3 and grown.tasks == 24  # 3, doubled three times
    for size in (seeded, grown):
        assert set(size.ms) == set(size.stall_ms) == set(CALLS)
        assert all(len(size.ms[c]) == len(size.stall_ms[c]) == 2 for c in CALLS)
        assert all(ms > 0 for c in CALLS for ms in size.ms[c])
    text = report("sqlite", [seeded, grown], 2)
    assert "| 3 |" in text and "| 24 |" in text


def test_the_copies_take_new_task_and_context_ids_and_threads(tmp_path: Path) -> None:
    path = str(tmp_path / "g.sqlite3")
    with sqlite3.connect(path) as conn:
        conn.executescript(
            "CREATE TABLE llamon_tasks (id TEXT PRIMARY KEY, context_id TEXT, state TEXT);"
            "CREATE TABLE checkpoints (thread_id TEXT, checkpoint_id TEXT);"
            "CREATE TABLE writes (thread_id TEXT, idx INTEGER);"
            "INSERT INTO llamon_tasks VALUES ('a', 'ctx', 'completed');"
            "INSERT INTO checkpoints VALUES ('ctx', 'c1');"
            "INSERT INTO writes VALUES ('ctx', 0);")
    assert grow_sqlite(path, 5) == 8 == count_sqlite(path)
    with sqlite3.connect(path) as conn:
        ids = [row[0] for row in conn.execute("SELECT id FROM llamon_tasks")]
        contexts = {row[0] for row in conn.execute("SELECT context_id FROM llamon_tasks")}
        threads = {row[0] for row in conn.execute("SELECT thread_id FROM checkpoints")}
        states = {row[0] for row in conn.execute("SELECT state FROM llamon_tasks")}
    assert len(set(ids)) == 8 and len(contexts) == 8 and len(threads) == 8
    assert states == {"completed"}  # every other column copied as it was
    assert all(len(i) == 36 and i[14] == "4" for i in ids if i != "a")  # uuid4 text, as ours


@pytest.mark.usefixtures("postgres_url")
async def test_a_postgres_database_grows_and_is_timed_the_same_way() -> None:
    sizes = await measure("postgres", seed=2, target=5, repeat=1)
    assert [s.tasks for s in sizes] == [2, 8]


def test_the_report_reads_the_medians() -> None:
    size = Size(tasks=128_000)
    for n, call in enumerate(CALLS):
        size.ms[call] = [3.0 + n, 1.0 + n, 2.0 + n]
        size.stall_ms[call] = [0.5, 0.1, 0.3 + n]
    text = report("sqlite", [size], 3)
    assert ("| 128,000 | 2.00 | 0.30 | 3.00 | 0.50 | 4.00 | 0.50 | 5.00 | 0.50 | 6.00 | 0.50 |"
            in text), text
    assert "ListTasks, a context" in text.splitlines()[2]


async def test_each_listing_is_the_one_it_names(tmp_path: Path) -> None:
    """The timed ListTasks calls list what their columns say: every task, none in a state no
    task is in, one context's."""
    import httpx

    from bench.agents import build_agents
    from bench.in_process import round_trip
    from bench.sweep_scale import list_tasks
    from llamon_agent import create_app

    app = create_app(build_agents(), db=str(tmp_path / "l.sqlite3"))
    async with app.router.lifespan_context(app):
        for _ in range(3):
            await round_trip(app)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://b") as client:
            every = await list_tasks(client, {"pageSize": 50})
            failed = await list_tasks(client, {"pageSize": 50, "status": "TASK_STATE_FAILED"})
            context = every["tasks"][0]["contextId"]
            one = await list_tasks(client, {"pageSize": 50, "contextId": context})
    assert (every["totalSize"], failed["totalSize"], one["totalSize"]) == (3, 0, 1)
    assert one["tasks"][0]["contextId"] == context


async def test_a_blocking_call_is_seen_as_a_stall_and_an_awaiting_one_is_not() -> None:
    import asyncio
    import time

    from bench.sweep_scale import LoopStalls

    async with LoopStalls() as stalls:
        time.sleep(0.03)  # the loop blocked, as a scan on its thread blocks it
    assert stalls.longest >= 25
    async with LoopStalls() as stalls:
        await asyncio.sleep(0.03)  # the loop free meanwhile
    assert stalls.longest < 25


async def test_with_waiting_every_stored_task_waits_for_its_answer(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``--waiting`` seeds questions that nobody answers: the file holds waiting tasks only,
    and the copies wait too (the deadline sweep's case)."""
    from bench import sweep_scale

    counted: list[dict[str, int]] = []
    grow = sweep_scale.grow_sqlite

    def grow_and_count(path: str, target: int) -> int:
        held = grow(path, target)
        with sqlite3.connect(path) as conn:
            counted.append(dict(conn.execute(
                "SELECT state, COUNT(*) FROM llamon_tasks GROUP BY state").fetchall()))
        return held

    monkeypatch.setattr(sweep_scale, "grow_sqlite", grow_and_count)
    seeded, grown = await measure("sqlite", seed=2, target=7, repeat=1, waiting=True)
    assert (seeded.tasks, grown.tasks) == (2, 8)
    assert counted == [{"input-required": 8}]
