"""What the server's periodic work and a client's listing cost as the stored tasks grow: the
sweep, the metrics and ``ListTasks``.

    .venv/bin/python bench/sweep_scale.py [--db sqlite|postgres] [--tasks 128000] [--seed 500]
        [--repeat 5] [--waiting] [--name sweep-scale]

A HITL round trip ends with a completed task that stays stored until retention deletes it, so a
server's file or database holds ever more ended tasks. Work that runs every few seconds whatever
the traffic (the sweep: deadlines, retention, push reconciliation and retries) or at every scrape
of ``/metrics`` (the tasks by state) must not grow with them: on SQLite it runs on the event
loop, and every request waits while it does (issue 14's tail, bench/README.md "Speed, round
twenty-seven": the push reconciliation read every ended task, 112 ms a sweep at 128,000 tasks).
Nor may one client's request: A2A v1.0's ``ListTasks`` counts the tasks its query matches, and
narrowed by a state or a context it must read those, not every task (round twenty-eight: 3.4
to 4.8 s on the loop at 1,024,000 tasks).

``create_app`` on the benchmark's agents, on a fresh SQLite file or PostgreSQL database
(``bench/pgdb.py``), with a 30-day retention so that its job runs (and finds nothing to
delete); ``--seed`` HITL round trips in process (``bench/in_process.py``) give real rows
(with ``--waiting``, only their questions: every task waits for an answer, as thousands may
wait for people, and the deadline sweep looks among them). The
sweep (``TaskManager.sweeper.sweep_once()``), ``GET /metrics`` and three ``ListTasks`` pages of
50 (through httpx's ASGI transport: every task, the tasks in a state none of them is in,
``failed``, and one context's) are timed ``--repeat`` times, each with the event loop's longest
stall meanwhile (a task ticking every 0.5 ms: what a request ready during the call waited);
then the task rows,
the checkpoints and the checkpoint writes are copied with new random ids, doubling, until the
store holds at least ``--tasks`` tasks, and both are timed again. Wall time of each call (the
machine may be busy: compare the two sizes, not the digits). Results: bench/results/NAME.md
and .json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import logging
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import httpx

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))

from bench.agents import build_agents  # noqa: E402
from bench.hitl_client import send_body  # noqa: E402
from bench.in_process import call as call_app  # noqa: E402
from bench.in_process import round_trip, task_in_state  # noqa: E402

RETENTION_SECONDS = 30 * 86400
#: a SQLite id: what ``core/ids.random_id`` gives (uuid4 text), from SQLite's own random bytes
_SQLITE_UUID = ("lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' ||"
                " substr(hex(randomblob(2)), 2) || '-a' || substr(hex(randomblob(2)), 2) || '-' ||"
                " hex(randomblob(6)))")
_SQLITE_KEY = "lower(hex(randomblob(16)))"
_POSTGRES_KEY = "md5(random()::text)"
#: the tables copied, and the columns given new random values (each thread its own, at random:
#: the copies' keys land all over their b-trees, as real ones do)
_COPIED = {
    "sqlite": {"llamon_tasks": {"id": _SQLITE_UUID, "context_id": _SQLITE_KEY},
               "checkpoints": {"thread_id": _SQLITE_KEY}, "writes": {"thread_id": _SQLITE_KEY}},
    "postgres": {"llamon_tasks": {"id": _POSTGRES_KEY, "context_id": _POSTGRES_KEY},
                 "checkpoints": {"thread_id": _POSTGRES_KEY},
                 "checkpoint_blobs": {"thread_id": _POSTGRES_KEY},
                 "checkpoint_writes": {"thread_id": _POSTGRES_KEY}},
}


#: what is timed at each size, in the report's column order
CALLS = ("sweep", "metrics", "list_all", "list_state", "list_context")
_HEADINGS = {"sweep": "the sweep", "metrics": "`GET /metrics`", "list_all": "ListTasks, all",
             "list_state": "ListTasks, a state none is in", "list_context": "ListTasks, a context"}


@dataclass
class Size:
    tasks: int
    #: wall time of each call, by call
    ms: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CALLS})
    #: the event loop's longest wait between two ticks during each call (every request waits it)
    stall_ms: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CALLS})

    def medians(self) -> dict[str, float]:
        """The medians of each call's time and stall, in the report's column order."""
        return medians(self.ms, self.stall_ms, CALLS)


def medians(ms: dict[str, list[float]], stall_ms: dict[str, list[float]],
            calls: tuple[str, ...]) -> dict[str, float]:
    """Each call's median time and median stall, in ``calls``' order."""
    out = {}
    for call in calls:
        out[f"{call}_ms"] = statistics.median(ms[call])
        out[f"{call}_stall_ms"] = statistics.median(stall_ms[call])
    return out


class LoopStalls:
    """A task ticking every ``TICK`` seconds while entered: ``longest`` is the longest time
    between two of its ticks, less the tick, in ms (what a request ready meanwhile waited)."""

    TICK = 0.0005

    def __init__(self) -> None:
        self.longest = 0.0
        self._last = 0.0
        self._task: asyncio.Task[None] | None = None

    def _note(self) -> None:
        now = time.perf_counter()
        self.longest = max(self.longest, (now - self._last - self.TICK) * 1e3)
        self._last = now

    async def _tick(self) -> None:
        self._last = time.perf_counter()
        while True:
            await asyncio.sleep(self.TICK)
            self._note()

    async def __aenter__(self) -> LoopStalls:
        self._task = asyncio.create_task(self._tick())
        await asyncio.sleep(0)  # ticking before the measured call starts
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._task is not None
        self._note()  # the time since the last tick counts too: the call may have just blocked
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def time_periodic_work(app: Any, size: Size, repeat: int) -> None:
    """``repeat`` rounds of every call, into ``size``."""
    sweeper = app.state.manager.sweeper
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench")
    async with client:
        newest = await list_tasks(client, {"pageSize": 1})
        listings: dict[str, dict[str, Any]] = {
            "list_all": {"pageSize": 50},
            "list_state": {"pageSize": 50, "status": "TASK_STATE_FAILED"},
            "list_context": {"pageSize": 50, "contextId": newest["tasks"][0]["contextId"]},
        }
        for _ in range(repeat):
            await _time_once(sweeper, client, size, listings)


async def list_tasks(client: httpx.AsyncClient, params: dict[str, Any]) -> dict[str, Any]:
    """One ``ListTasks`` call's result."""
    response = await client.post(
        "/", json={"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": params},
        headers={"A2A-Version": "1.0"})
    body = response.json()
    if "result" not in body:
        raise RuntimeError(f"ListTasks answered {body}")
    return dict(body["result"])


async def _time_once(sweeper: Any, client: httpx.AsyncClient, size: Size,
                     listings: dict[str, dict[str, Any]]) -> None:
    """Each call once, with its loop stall, into ``size``; ``listings``: ListTasks's params
    by call (a v1.0 method, asked for with ``A2A-Version: 1.0``)."""

    async def sweep() -> None:
        report = await sweeper.sweep_once()
        if report.failed:
            raise RuntimeError(f"sweep jobs failed: {report.failed}")

    async def metrics() -> None:
        status = (await client.get("/metrics")).status_code
        if status != 200:
            raise RuntimeError(f"GET /metrics answered {status}")

    calls: dict[str, Callable[[], Awaitable[Any]]] = {"sweep": sweep, "metrics": metrics}
    for call, params in listings.items():
        calls[call] = functools.partial(list_tasks, client, params)
    for call in CALLS:
        ms, stall = await timed(calls[call])
        size.ms[call].append(ms)
        size.stall_ms[call].append(stall)


async def timed(call: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """``call``'s wall time and the event loop's longest stall meanwhile, both in ms."""
    async with LoopStalls() as stalls:
        started = time.perf_counter()
        await call()
        ms = (time.perf_counter() - started) * 1e3
    return ms, stalls.longest


def _columns_sqlite(conn: sqlite3.Connection, table: str) -> list[str]:
    return [row[1] for row in conn.execute(f"PRAGMA table_info({table})")]


_COUNT = "SELECT count(*) FROM llamon_tasks"


def count_sqlite(path: str) -> int:
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return int(conn.execute(_COUNT).fetchone()[0])


def count_postgres(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(_COUNT).fetchone()
    return int(row[0]) if row else 0


def grow_sqlite(path: str, target: int) -> int:
    """Double the copied tables with new keys until ``llamon_tasks`` holds ``target`` rows;
    returns how many it holds."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        count = int(conn.execute(_COUNT).fetchone()[0])
        while 0 < count < target:
            with conn:
                for table, fresh in _COPIED["sqlite"].items():
                    columns = _columns_sqlite(conn, table)
                    values = ", ".join(fresh.get(c, c) for c in columns)
                    conn.execute(f"INSERT INTO {table} ({', '.join(columns)})"
                                 f" SELECT {values} FROM {table}")
            count = int(conn.execute(_COUNT).fetchone()[0])
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return count


def grow_postgres(url: str, target: int) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        def held_now() -> int:
            row = conn.execute(_COUNT).fetchone()
            return int(row[0]) if row else 0

        held = held_now()
        while 0 < held < target:
            with conn.transaction():
                for table, fresh in _COPIED["postgres"].items():
                    columns = [row[0] for row in conn.execute(
                        "SELECT column_name FROM information_schema.columns WHERE table_name = %s"
                        " AND is_generated = 'NEVER' AND identity_generation IS NULL"
                        " ORDER BY ordinal_position", (table,))]
                    values = ", ".join(fresh.get(c, c) for c in columns)
                    conn.execute(f"INSERT INTO {table} ({', '.join(columns)})"
                                 f" SELECT {values} FROM {table}")
            held = held_now()
        conn.execute("ANALYZE")  # as autovacuum would have by then
    return held


@contextlib.contextmanager
def storage(kind: str, folder: str) -> Iterator[tuple[str, Callable[[int], int],
                                                     Callable[[], int]]]:
    """(``create_app``'s ``db``, a function growing it to N tasks, one counting its tasks)."""
    if kind == "sqlite":
        path = str(Path(folder) / f"sweep-{uuid.uuid4().hex}.sqlite3")
        yield path, lambda target: grow_sqlite(path, target), lambda: count_sqlite(path)
        return
    from bench.pgdb import fresh_database

    with fresh_database("on") as db:
        yield (db.url, lambda target: grow_postgres(db.url, target),
               lambda: count_postgres(db.url))


async def ask(app: Any) -> None:
    """The first half of a HITL round trip: a task that waits for its answer."""
    reply = await call_app(app, send_body("hitl", "start", context_id=uuid.uuid4().hex))
    task_in_state(reply, "input-required")


async def measure(kind: str, seed: int, target: int, repeat: int, *,
                  waiting: bool = False) -> list[Size]:
    """Both sizes timed; ``waiting``: the seeded tasks are asked and never answered, so every
    stored task waits (the deadline sweep's case), else each is a whole round trip."""
    from llamon_agent import create_app

    sizes: list[Size] = []
    with tempfile.TemporaryDirectory(prefix="sweep-scale-") as folder, \
            storage(kind, folder) as (db, grow, count):
        for phase in ("seeded", "grown"):
            if phase == "grown":
                grow(target)
            app = create_app(build_agents(), db=db, retention=RETENTION_SECONDS)
            async with app.router.lifespan_context(app):
                if phase == "seeded":
                    for _ in range(seed):
                        await (ask(app) if waiting else round_trip(app))
                size = Size(tasks=count())
                await time_periodic_work(app, size, repeat)
                sizes.append(size)
    return sizes


def report(kind: str, sizes: list[Size], repeat: int) -> str:
    heads = "".join(f" {_HEADINGS[c]} | its longest loop stall |" for c in CALLS)
    lines = [f"{kind}, medians of {repeat} calls (wall time, ms)", "",
             "| tasks stored |" + heads, "|---:|" + "---:|" * (2 * len(CALLS))]
    for s in sizes:
        lines.append(f"| {s.tasks:,} | " + " | ".join(f"{m:.2f}" for m in s.medians().values())
                     + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--tasks", type=int, default=128_000, help="tasks stored for the second size")
    p.add_argument("--seed", type=int, default=500, help="HITL round trips for the first size")
    p.add_argument("--repeat", type=int, default=5, help="rounds of the calls per size")
    p.add_argument("--waiting", action="store_true",
                   help="every task waits for its answer (asked, never answered)")
    p.add_argument("--name", default="sweep-scale")
    args = p.parse_args()
    if args.seed < 1 or args.repeat < 1 or args.tasks <= args.seed:
        p.error("need --seed >= 1, --repeat >= 1 and --tasks above --seed")
    logging.disable(logging.WARNING)  # the no-authentication warning, once per app
    sizes = asyncio.run(measure(args.db, args.seed, args.tasks, args.repeat,
                                waiting=args.waiting))
    save(args.name, report(args.db, sizes, args.repeat),
         [{**asdict(s), "medians": s.medians()} for s in sizes])


def save(name: str, text: str, payload: Any) -> None:
    """Print the report and write it (``bench/results/NAME.md``) with the raw figures
    (``.json``)."""
    print(text)
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    (out / f"{name}.md").write_text(text + "\n")
    (out / f"{name}.json").write_text(json.dumps(payload, indent=1))
    print(f"written to bench/results/{name}.md and .json")


if __name__ == "__main__":
    main()
