"""LangGraph alone, in process: CPU per interrupt + resume round trip of the benchmark's graph.

The one-node ``interrupt()`` graph of ``bench/agents.py`` (what the official SDK server runs),
no HTTP: ``ainvoke(input)`` until the interrupt, then ``ainvoke(Command(resume=...))`` to the
end, each round trip on a new thread. CPU is ``time.process_time()`` (all threads, so
aiosqlite's worker thread counts) divided by round trips. Checkpointers:

* ``memory``: ``InMemorySaver``;
* ``sqlite``: ``AsyncSqliteSaver.from_conn_string(file)``, as a LangGraph user opens it;
* ``sqlite-llamon``: the checkpointer our server uses (``open_storage``: aiosqlite, WAL,
  ``synchronous=NORMAL``), the denominator of the CPU target;
* ``postgres``: ``AsyncPostgresSaver.from_conn_string(url)`` and ``setup()``, as a LangGraph user
  opens it, on a freshly created database (bench/pgdb.py, ``synchronous_commit=on``, dropped
  after), the denominator of ``run.py --db postgres``. Its CPU is the process's plus that of the
  database's PostgreSQL backend (``PostgresCpu``, read before and after the measured round
  trips, outside the process's own measurement), so PostgreSQL's work counts as it does for
  the servers;

and durability ``exit`` or LangGraph's default (``async``). ``routed`` is our HITL-routed
compilation of the same node (``Agent.compile``: the node returns ``HITLInterrupt`` and a
generated ``__hitl__`` node calls ``interrupt()``), to show what the routing itself costs.

    python bench/langgraph_alone.py [--seconds 3] [--json] [--checkpointers memory,postgres]
                                    [--concurrency 16]

``--concurrency N`` runs N round trips at once on the one loop (each its own thread), as N users
of the served app do: what interleaving alone costs LangGraph (bench/README.md, "Speed, round
twenty").
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command

from bench.agents import native_hitl_graph, returning_hitl_graph
from bench.hitl_client import fresh_id

ANSWER = "an answer"


@dataclass
class Variant:
    checkpointer: str  # memory | sqlite | sqlite-llamon | postgres
    durability: str | None  # None: LangGraph's default
    graph: str = "native"  # native | routed

    @property
    def name(self) -> str:
        return f"{self.graph} / {self.checkpointer} / durability={self.durability or 'default'}"


VARIANTS = [
    Variant("memory", None),
    Variant("memory", "exit"),
    Variant("sqlite", None),
    Variant("sqlite", "exit"),
    Variant("sqlite-llamon", "exit"),
    Variant("sqlite-llamon", "exit", graph="routed"),
    Variant("postgres", None),
    Variant("postgres", "exit"),
]
CHECKPOINTERS = ("memory", "sqlite", "sqlite-llamon", "postgres")
#: synchronous_commit of the postgres variant's database: the servers' (bench/run.py)
SYNCHRONOUS_COMMIT = "on"
CLK_TCK = os.sysconf("SC_CLK_TCK")


@dataclass
class Measured:
    variant: str
    checkpointer: str
    durability: str
    graph: str
    round_trips: int
    cpu_ms_per_round_trip: float  # on postgres: the process and its database's backends
    wall_ms_per_round_trip: float
    error: str | None = None
    pg_backend_cpu_ms_per_round_trip: float | None = None  # postgres: the backends' part


@dataclass
class Saver:
    """An open checkpointer; ``database``: the PostgreSQL database it writes to, if any."""

    saver: Any
    database: str | None = None


@asynccontextmanager
async def checkpointer(kind: str, folder: str) -> AsyncIterator[Saver]:
    path = str(Path(folder) / f"{kind}-{uuid.uuid4().hex}.sqlite3")
    if kind == "memory":
        yield Saver(InMemorySaver())
    elif kind == "sqlite":
        async with AsyncSqliteSaver.from_conn_string(path) as saver:
            yield Saver(saver)
    elif kind == "postgres":
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        from bench.pgdb import fresh_database

        with fresh_database(SYNCHRONOUS_COMMIT) as database:
            async with AsyncPostgresSaver.from_conn_string(database.url) as saver:
                await saver.setup()
                yield Saver(saver, database.name)
    elif kind == "sqlite-llamon":
        from llamon_agent.stores.storage import open_storage

        async with open_storage(path) as storage:
            yield Saver(storage.checkpointer)
    else:
        raise ValueError(f"unknown checkpointer {kind!r}; known: {', '.join(CHECKPOINTERS)}")


@contextmanager
def backend_cpu(database: str | None) -> Iterator[Any]:
    """PostgreSQL's CPU for ``database`` over the block (None without a database). Read at the
    start and the end only (no sampling thread, whose CPU would count as the process's): the
    saver's one connection is a backend that lives through the whole measurement."""
    if database is None:
        yield None
        return
    from bench.pgdb import PostgresCpu

    with PostgresCpu(database, interval=3600.0) as pg:
        yield pg


def compile_graph(variant: Variant, saver: Any) -> Any:
    if variant.graph == "routed":
        from llamon_agent import Agent

        return Agent("hitl", returning_hitl_graph()).compile(saver)
    return native_hitl_graph().compile(checkpointer=saver)


def _resume_value() -> Callable[[Any, Any], Any]:
    """How our runtime turns an answer into a resume value (an envelope, in newer versions)."""
    try:
        from llamon_agent.core.hitl_graph import resume_value
    except ImportError:
        return lambda _value, answer: answer
    return cast(Callable[[Any, Any], Any], resume_value)


async def round_trip(graph: Any, durability: str | None, routed: bool) -> None:
    thread_id = fresh_id()  # as our side's client draws its ids
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    kwargs = {"durability": durability} if durability else {}
    first = {"messages": [HumanMessage(content="start", id=fresh_id())], "thread_id": thread_id}
    out = await graph.ainvoke(first, config, **kwargs)
    if not out.get("__interrupt__"):
        raise RuntimeError(f"expected an interrupt, got {out!r}")
    resume: Any = ANSWER
    if routed:  # as our runtime resumes: an id-keyed map of resume values
        pending = out["__interrupt__"][0]
        resume = {pending.id: _resume_value()(pending.value, ANSWER)}
    out = await graph.ainvoke(Command(resume=resume), config, **kwargs)
    if out.get("result") != {"answer": ANSWER}:
        raise RuntimeError(f"expected the answer as result, got {out!r}")


async def measure(variant: Variant, seconds: float, folder: str, *, warmup: int = 50,
                  max_round_trips: int = 100_000, concurrency: int = 1) -> Measured:
    async with checkpointer(variant.checkpointer, folder) as opened:
        graph, routed = compile_graph(variant, opened.saver), variant.graph == "routed"
        for _ in range(warmup):
            await round_trip(graph, variant.durability, routed)
        n = 0
        with backend_cpu(opened.database) as pg:
            cpu0, wall0 = time.process_time(), time.perf_counter()
            deadline = wall0 + seconds

            async def user() -> None:
                nonlocal n
                while time.perf_counter() < deadline and n < max_round_trips:
                    await round_trip(graph, variant.durability, routed)
                    n += 1

            await asyncio.gather(*(user() for _ in range(concurrency)))
            cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    backend_ms = pg.backend_ticks / CLK_TCK / n * 1e3 if pg is not None else None
    return Measured(variant.name, variant.checkpointer, variant.durability or "default",
                    variant.graph, n, cpu / n * 1e3 + (backend_ms or 0.0), wall / n * 1e3,
                    pg_backend_cpu_ms_per_round_trip=backend_ms)


async def run_all(seconds: float, checkpointers: tuple[str, ...] = CHECKPOINTERS,
                  concurrency: int = 1) -> list[Measured]:
    results = []
    with tempfile.TemporaryDirectory(prefix="langgraph-alone-") as folder:
        for v in VARIANTS:
            if v.checkpointer not in checkpointers:
                continue
            try:
                results.append(await measure(v, seconds, folder, concurrency=concurrency))
            except Exception as exc:  # one broken variant must not hide the others
                nan = float("nan")
                results.append(Measured(v.name, v.checkpointer, v.durability or "default", v.graph,
                                        0, nan, nan, f"{type(exc).__name__}: {exc}"[:300]))
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=3.0, help="measured seconds per variant")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p.add_argument("--checkpointers", default=",".join(CHECKPOINTERS),
                   help=f"comma-separated subset of {','.join(CHECKPOINTERS)} (default: all; "
                   "postgres needs the PostgreSQL at LLAMON_BENCH_POSTGRES_URL)")
    p.add_argument("--concurrency", type=int, default=1,
                   help="round trips run at once on the loop, each on its own thread (default 1, "
                   "the CPU target's denominator; 16: as many as run.py's users)")
    args = p.parse_args()
    if args.concurrency < 1:
        p.error("--concurrency: at least 1")
    chosen = tuple(x for x in args.checkpointers.split(",") if x)
    unknown = set(chosen) - set(CHECKPOINTERS)
    if unknown or not chosen:
        p.error(f"--checkpointers: unknown {sorted(unknown)}; known: {', '.join(CHECKPOINTERS)}")
    results = asyncio.run(run_all(args.seconds, chosen, args.concurrency))
    if args.json:
        print(json.dumps([asdict(r) for r in results]))
        return
    print("| variant | round trips | CPU ms / round trip | of which PostgreSQL backends | "
          "wall ms / round trip |")
    print("|---|---:|---:|---:|---:|")
    for r in results:
        pg = r.pg_backend_cpu_ms_per_round_trip
        print(f"| {r.variant} | {r.round_trips} | {r.cpu_ms_per_round_trip:.2f} |"
              f" {'-' if pg is None else f'{pg:.2f}'} | {r.wall_ms_per_round_trip:.2f} |"
              + (f" error: {r.error}" if r.error else ""))


if __name__ == "__main__":
    main()
