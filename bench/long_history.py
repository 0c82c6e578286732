"""What a task's history costs each answer as it grows: the answer's CPU, its wall time and the
event loop's longest stall meanwhile, and a ``tasks/get`` of the task.

    .venv/bin/python bench/long_history.py [--db sqlite|postgres] [--at 100,500,1000,2000]
        [--answer-chars 1] [--repeat 10] [--replicas 1] [--name long-history]

A task's row is its whole history, and an ``until-done`` task (the example agents) takes one
answer after another: every answer adds two messages (the question it answers, then the
answer). Before round thirty-five, routing each answer decoded the task and encoding its next
version took time in proportion to it, on the event loop (docs/storage.md, "Not bounded
here").

``create_app`` with the example agents on a fresh SQLite file or PostgreSQL database
(``bench/pgdb.py``), each request handed to the app as ASGI (``in_process.call_raw``: no
sockets, and only the head of each answer read, so that the client's parsing of a large task
does not count as the server's work). One task is answered with answers of
``--answer-chars`` characters; when it has taken each ``--at`` count, ``--repeat`` answers and
then ``--repeat`` ``tasks/get`` of it run for their CPU, the mean a call
(``time.process_time()``: every thread, the SQLite worker's too, plus PostgreSQL's backends on
PostgreSQL), then as many again, each timed: wall time and the event loop's longest stall
meanwhile (``sweep_scale.timed``), medians. The answers measured are answers taken too.
Results: bench/results/NAME.md and .json.

``--replicas 2`` (PostgreSQL): two apps on the one database, every request to the next in turn
as a round-robin balancer sends them, so that each answer reads the row the other replica
wrote. Each app has the kept tasks of a process of its own (``stores/kept_tasks.py``'s
``KEPT``, swapped in for each of its requests: they run one at a time).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.hitl_client import send_body
from bench.in_process import call_raw, database, task_id_in_state
from bench.langgraph_alone import CLK_TCK, backend_cpu
from bench.sweep_scale import save, timed
from llamon_agent.stores import kept_tasks

CALLS = ("answer", "get")
_HEADINGS = {"answer": "answer", "get": "`tasks/get`"}


@dataclass
class Mark:
    answers: int
    messages: int = 0
    task_bytes: int = 0
    cpu_ms: dict[str, float] = field(default_factory=dict)
    ms: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CALLS})
    stall_ms: dict[str, list[float]] = field(default_factory=lambda: {c: [] for c in CALLS})

    def medians(self) -> dict[str, float]:
        out = {}
        for call in CALLS:
            out[f"{call}_cpu_ms"] = self.cpu_ms[call]
            out[f"{call}_ms"] = statistics.median(self.ms[call])
            out[f"{call}_stall_ms"] = statistics.median(self.stall_ms[call])
        return out


class Task:
    """The one task, answered through the app as uvicorn would hand each request over
    (``in_process.call_raw``); an answer is checked by its head only, so that the client's
    parsing of a large answer is not counted as the server's work."""

    def __init__(self, apps: list[Any], chars: int) -> None:
        self.apps = apps
        #: each app's own, as each process of a replica has its own
        self.kept = [kept_tasks.KeptTasks() for _ in apps]
        self.calls = 0
        self.text = "x" * chars
        self.id = ""
        self.context_id = uuid.uuid4().hex
        self.taken = 0

    def app(self) -> Any:
        """The next replica's app, its kept tasks in place."""
        replica = self.calls % len(self.apps)
        self.calls += 1
        kept_tasks.KEPT = self.kept[replica]
        return self.apps[replica]

    async def start(self) -> None:
        answer = await call_raw(self.app(), send_body("until-done", "start",
                                                      context_id=self.context_id))
        self.id = task_id_in_state(answer, "input-required")

    async def answer(self) -> None:
        answer = await call_raw(self.app(), send_body("until-done", self.text,
                                                      context_id=self.context_id,
                                                      task_id=self.id))
        task_id_in_state(answer, "input-required")
        self.taken += 1

    async def get(self) -> None:
        task_id_in_state(await call_raw(self.app(), self._get_body()), "input-required")

    async def messages(self) -> int:
        """Messages in the task's history (parsed whole: not measured)."""
        found = orjson.loads(await call_raw(self.app(), self._get_body()))["result"]
        return len(found.get("history", []))

    def _get_body(self) -> bytes:
        return orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "tasks/get",
                             "params": {"id": self.id}})


async def measured(call: Callable[[], Awaitable[None]], database: str | None, mark: Mark,
                   name: str, repeat: int) -> None:
    """``repeat`` calls for the CPU (their mean: PostgreSQL's backends count in clock ticks),
    then ``repeat`` more, each timed with the loop's stalls (whose probe costs CPU too)."""
    cpu = time.process_time()
    with backend_cpu(database) as pg:
        for _ in range(repeat):
            await call()
    backend = pg.backend_ticks / CLK_TCK if pg is not None else 0.0
    mark.cpu_ms[name] = (time.process_time() - cpu + backend) * 1e3 / repeat
    for _ in range(repeat):
        ms, stall = await timed(call)
        mark.ms[name].append(ms)
        mark.stall_ms[name].append(stall)


async def measure(kind: str, at: list[int], chars: int, repeat: int,
                  replicas: int = 1) -> list[Mark]:
    from app.main import AGENTS
    from llamon_agent import create_app

    marks = []
    kept = kept_tasks.KEPT
    with tempfile.TemporaryDirectory(prefix="long-history-") as folder, \
            database(kind, folder) as (db, name), contextlib.ExitStack() as restore:
        restore.callback(setattr, kept_tasks, "KEPT", kept)
        apps = [create_app(AGENTS, db=db) for _ in range(replicas)]
        async with contextlib.AsyncExitStack() as running:
            for app in apps:
                await running.enter_async_context(app.router.lifespan_context(app))
            task = Task(apps, chars)
            await task.start()
            for count in at:
                while task.taken < count:
                    await task.answer()
                mark = Mark(answers=count, messages=await task.messages(),
                            task_bytes=await stored_bytes(db, task.id))
                await measured(task.answer, name, mark, "answer", repeat)
                await measured(task.get, name, mark, "get", repeat)
                marks.append(mark)
    return marks


async def stored_bytes(db: str, task_id: str) -> int:
    sql = "SELECT length(task) FROM llamon_tasks WHERE id = ?"
    if db.startswith("postgresql"):
        import psycopg

        async with await psycopg.AsyncConnection.connect(db) as pg:
            cur = await pg.execute(sql.replace("?", "%s"), (task_id,))
            row = await cur.fetchone()
    else:
        import sqlite3

        with contextlib.closing(sqlite3.connect(db)) as conn:
            row = conn.execute(sql, (task_id,)).fetchone()
    return int(row[0]) if row else 0


def report(kind: str, marks: list[Mark], repeat: int, chars: int) -> str:
    heads = "".join(f" {_HEADINGS[c]}: CPU | wall | longest loop stall |" for c in CALLS)
    lines = [f"{kind}, answers of {chars} characters; CPU: the mean of {repeat} calls, wall "
             f"and stall: medians of {repeat} (ms)", "",
             "| answers taken | messages in history | task row, bytes |" + heads,
             "|---:|---:|---:|" + "---:|" * (3 * len(CALLS))]
    for m in marks:
        lines.append(f"| {m.answers:,} | {m.messages:,} | {m.task_bytes:,} | "
                     + " | ".join(f"{v:.2f}" for v in m.medians().values()) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--at", default="100,500,1000,2000",
                   help="answers taken at each measurement, comma-separated, increasing")
    p.add_argument("--answer-chars", type=int, default=1)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--replicas", type=int, choices=(1, 2), default=1,
                   help="apps on the one database, each request to the next (PostgreSQL)")
    p.add_argument("--name", default="long-history")
    args = p.parse_args()
    at = [int(c) for c in args.at.split(",")]
    if at != sorted(set(at)) or at[0] < 0 or args.repeat < 1 or args.answer_chars < 1:
        p.error("--at must be increasing counts >= 0, --repeat and --answer-chars >= 1")
    if args.replicas > 1 and args.db != "postgres":
        p.error("--replicas 2 needs --db postgres: replicas share a PostgreSQL database")
    logging.disable(logging.WARNING)
    marks = asyncio.run(measure(args.db, at, args.answer_chars, args.repeat, args.replicas))
    kind = args.db if args.replicas == 1 else f"{args.db}, {args.replicas} replicas in turn"
    save(args.name, report(kind, marks, args.repeat, args.answer_chars),
         [{**asdict(m), "medians": m.medians()} for m in marks])


if __name__ == "__main__":
    main()
