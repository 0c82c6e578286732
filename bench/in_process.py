"""Our app in process, no sockets: CPU per HITL round trip of ``create_app`` called as ASGI.

The same app the benchmark serves (``create_app(build_agents(), db=...)``, bench/servers/
llamon.py), with its lifespan, but each request handed to it directly as an ASGI call: no
uvicorn, no HTTP parser, no socket. Between LangGraph alone (bench/langgraph_alone.py, the
graph and its checkpointer only) and the served app (bench/run.py, bench/alternate.py), it says
how much of the server's CPU per round trip is the app (JSON-RPC, the edge's bounds, the task
rows, the runtime around LangGraph) and how much is serving it over HTTP.

A round trip is the benchmark's (bench/hitl_client.py): ``message/send`` to the ``hitl`` agent,
``input-required``, the answer on the same context, ``completed``; each user runs them one
after another, ``--users`` of them at once. CPU is ``time.process_time()`` (every thread of the
process: the SQLite offload thread counts), plus, on PostgreSQL, the database's backends
(bench/pgdb.py ``PostgresCpu``), as for the servers. ``--profile`` runs the measured round trips
under cProfile and prints where the time goes by package (cProfile's own cost inflates every
figure, most where calls are many and short: read the shares, not the milliseconds).

``--events redis://HOST:PORT`` relays the events through Redis as replicas do (under a key prefix
of the run's own, deleted after), and adds the Redis server's CPU to the figure, as
bench/postgres_hitl.py does for two workers.

    .venv/bin/python bench/in_process.py [--db sqlite|postgres] [--users 16] [--seconds 5]
        [--repeat 3] [--events URL] [--profile]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import cProfile
import pstats
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.agents import build_agents
from bench.hitl_client import fresh_id, send_body
from bench.langgraph_alone import CLK_TCK, backend_cpu
from bench.postgres_hitl import redis_pids, redis_prefix, redis_ticks

#: synchronous_commit of the postgres database: the servers' (bench/run.py)
SYNCHRONOUS_COMMIT = "on"
WARMUP_ROUND_TRIPS = 50
#: packages the profile's time is grouped by, first match of the file's path
GROUPS = (
    ("llamon_agent", "ours (llamon_agent)"),
    ("langgraph", "LangGraph"),
    ("langchain_core", "langchain_core"),
    ("starlette", "Starlette"),
    ("pydantic", "pydantic"),
    ("psycopg", "psycopg"),
    ("asyncio", "asyncio"),
    ("redis", "redis-py"),
)


async def call(app: Any, body: bytes) -> Any:
    """One POST / to the app, as uvicorn would hand it over; the parsed JSON answer."""
    return orjson.loads(await call_raw(app, body))


async def call_raw(app: Any, body: bytes) -> bytes:
    """One POST / to the app, as uvicorn would hand it over; the answer's bytes."""
    delivered = False
    chunks: list[bytes] = []

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # the client never disconnects
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
        "scheme": "http", "path": "/", "raw_path": b"/", "query_string": b"", "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode())],
        "client": ("127.0.0.1", 40000), "server": ("127.0.0.1", 8000), "state": {},
    }
    await app(scope, receive, send)
    return b"".join(chunks)


def task_in_state(answer: Any, expected: str) -> dict[str, Any]:
    task = answer.get("result") if isinstance(answer, dict) else None
    if not isinstance(task, dict) or task.get("status", {}).get("state") != expected:
        raise RuntimeError(f"expected a task in {expected}, got {answer!r}")
    return task


#: the head of a blocking ``message/send``'s answer as the server writes it (bench/README.md,
#: "Speed, round thirty-two"): the task's id, and its state
_TASK_ANSWER = re.compile(
    rb'\{"jsonrpc":"2\.0","id":[^,]*,"result":\{"kind":"task","id":"([^"\\]+)",'
    rb'"contextId":"[^"\\]*","status":\{"state":"([a-z-]+)"')


def task_id_in_state(answer: bytes, expected: str) -> str:
    """The id of the task ``answer`` holds in state ``expected``, read from the answer's head;
    an answer whose head is not that (an error, another state) is parsed and refused as
    ``task_in_state`` refuses it. The client's parsing is not the server's work: parsing
    every answer whole was 0.5% of the instructions counted as the app's."""
    head = _TASK_ANSWER.match(answer)
    if head is not None and head.group(2) == expected.encode():
        return head.group(1).decode()
    return str(task_in_state(orjson.loads(answer), expected)["id"])


async def round_trip(app: Any) -> None:
    context_id = fresh_id()
    task_id = task_id_in_state(
        await call_raw(app, send_body("hitl", "start", context_id=context_id)), "input-required")
    task_id_in_state(await call_raw(app, send_body("hitl", "an answer", context_id=context_id,
                                                   task_id=task_id)), "completed")


@contextlib.contextmanager
def database(kind: str, folder: str) -> Iterator[tuple[str, str | None]]:
    """(the ``db`` argument of ``create_app``, the PostgreSQL database's name or None)."""
    if kind == "sqlite":
        yield str(Path(folder) / f"in-process-{uuid.uuid4().hex}.sqlite3"), None
        return
    from bench.pgdb import fresh_database

    with fresh_database(SYNCHRONOUS_COMMIT) as db:
        yield db.url, db.name


@contextlib.contextmanager
def events_setting(url: str | None) -> Iterator[str | None]:
    """``create_app``'s ``events`` for one run: ``url`` under a fresh key prefix, or None."""
    if url is None:
        yield None
        return
    with redis_prefix() as prefix:
        yield f"{url}{'&' if '?' in url else '?'}prefix={prefix}"


async def measure(kind: str, users: int, seconds: float, profiler: cProfile.Profile | None,
                  folder: str, events: str | None = None) -> tuple[float, int]:
    """(CPU ms per round trip, round trips) of one run on a fresh database."""
    from llamon_agent import create_app

    with database(kind, folder) as (db, name), events_setting(events) as relay:
        app = create_app(build_agents(), db=db, events=relay)
        redis = redis_pids() if relay is not None else []
        async with app.router.lifespan_context(app):
            for _ in range(WARMUP_ROUND_TRIPS):
                await round_trip(app)
            done = 0
            deadline = time.perf_counter() + seconds

            async def user() -> None:
                nonlocal done
                while time.perf_counter() < deadline:
                    await round_trip(app)
                    done += 1

            with backend_cpu(name) as pg:
                cpu0, redis0 = time.process_time(), redis_ticks(redis)
                if profiler is not None:
                    profiler.enable()
                await asyncio.gather(*(user() for _ in range(users)))
                if profiler is not None:
                    profiler.disable()
                cpu = time.process_time() - cpu0
                cpu += (redis_ticks(redis) - redis0) / CLK_TCK
    backend = pg.backend_ticks / CLK_TCK if pg is not None else 0.0
    return (cpu + backend) / done * 1e3, done


def profile_table(profiler: cProfile.Profile, round_trips: int) -> str:
    stats = pstats.Stats(profiler)
    by_group: collections.Counter[str] = collections.Counter()
    total = 0.0
    for (file, _line, _name), (_cc, _nc, own, _cum, _callers) in stats.stats.items():  # type: ignore[attr-defined]
        total += own
        group = next((g for key, g in GROUPS if key in file), None)
        if group is None:
            group = "built-ins (C: sqlite3, orjson, ...)" if file == "~" else "other Python"
        by_group[group] += own
    lines = ["| where (own time, by file) | share | ms per round trip, profiled |",
             "|---|---:|---:|"]
    for group, own in by_group.most_common():
        lines.append(f"| {group} | {own / total:.1%} | {own / round_trips * 1e3:.3f} |")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="in-process-") as folder:
        figures = []
        for _ in range(args.repeat):
            cpu, done = await measure(args.db, args.users, args.seconds, None, folder,
                                      args.events)
            figures.append(cpu)
            relay = ", events through Redis" if args.events else ""
            print(f"{args.db}{relay}, {args.users} users: {cpu:.3f} ms CPU per round trip "
                  f"({done} round trips)", flush=True)
        print(f"median {statistics.median(figures):.3f} ms (min {min(figures):.3f}, "
              f"max {max(figures):.3f})")
        if args.profile:
            profiler = cProfile.Profile()
            _, done = await measure(args.db, args.users, args.seconds, profiler, folder,
                                    args.events)
            print(profile_table(profiler, done))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--users", type=int, default=16)
    p.add_argument("--seconds", type=float, default=5.0, help="measured seconds per run")
    p.add_argument("--repeat", type=int, default=3, help="runs, each on a fresh database")
    p.add_argument("--events", metavar="URL",
                   help="relay events through this Redis (redis://HOST:PORT[/DB]), as replicas do")
    p.add_argument("--profile", action="store_true",
                   help="one more run under cProfile: its time by package")
    args = p.parse_args()
    if args.users < 1 or args.seconds <= 0 or args.repeat < 1:
        raise SystemExit("--users and --repeat must be positive, --seconds above 0")
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
