"""LangGraph alone, in process: CPU per interrupt + resume round trip of the benchmark's graph.

The one-node ``interrupt()`` graph of ``bench/agents.py`` (what the official SDK server runs),
no HTTP: ``ainvoke(input)`` until the interrupt, then ``ainvoke(Command(resume=...))`` to the
end, each round trip on a new thread. CPU is ``time.process_time()`` (all threads, so
aiosqlite's worker thread counts) divided by round trips. Checkpointers:

* ``memory``: ``InMemorySaver``;
* ``sqlite``: ``AsyncSqliteSaver.from_conn_string(file)``, as a LangGraph user opens it;
* ``sqlite-llamon``: the checkpointer our server uses (``open_storage``: aiosqlite, WAL,
  ``synchronous=NORMAL``), the denominator of the CPU target;

and durability ``exit`` or LangGraph's default (``async``). ``routed`` is our HITL-routed
compilation of the same node (``Agent.compile``: the node returns ``HITLInterrupt`` and a
generated ``__hitl__`` node calls ``interrupt()``), to show what the routing itself costs.

    python bench/langgraph_alone.py [--seconds 3] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, cast

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.types import Command

from bench.agents import native_hitl_graph, returning_hitl_graph

ANSWER = "an answer"


@dataclass
class Variant:
    checkpointer: str  # memory | sqlite | sqlite-llamon
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
]


@dataclass
class Measured:
    variant: str
    checkpointer: str
    durability: str
    graph: str
    round_trips: int
    cpu_ms_per_round_trip: float
    wall_ms_per_round_trip: float
    error: str | None = None


@asynccontextmanager
async def checkpointer(kind: str, folder: str) -> AsyncIterator[Any]:
    path = str(Path(folder) / f"{kind}-{uuid.uuid4().hex}.sqlite3")
    if kind == "memory":
        yield InMemorySaver()
    elif kind == "sqlite":
        async with AsyncSqliteSaver.from_conn_string(path) as saver:
            yield saver
    else:
        from llamon_agent.stores.storage import open_storage

        async with open_storage(path) as storage:
            yield storage.checkpointer


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
    thread_id = uuid.uuid4().hex
    config: dict[str, Any] = {"configurable": {"thread_id": thread_id}}
    kwargs = {"durability": durability} if durability else {}
    first = {"messages": [HumanMessage(content="start", id=uuid.uuid4().hex)], "thread_id": thread_id}
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
                  max_round_trips: int = 100_000) -> Measured:
    async with checkpointer(variant.checkpointer, folder) as saver:
        graph, routed = compile_graph(variant, saver), variant.graph == "routed"
        for _ in range(warmup):
            await round_trip(graph, variant.durability, routed)
        n = 0
        cpu0, wall0 = time.process_time(), time.perf_counter()
        deadline = wall0 + seconds
        while time.perf_counter() < deadline and n < max_round_trips:
            await round_trip(graph, variant.durability, routed)
            n += 1
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return Measured(variant.name, variant.checkpointer, variant.durability or "default",
                    variant.graph, n, cpu / n * 1e3, wall / n * 1e3)


async def run_all(seconds: float) -> list[Measured]:
    results = []
    with tempfile.TemporaryDirectory(prefix="langgraph-alone-") as folder:
        for v in VARIANTS:
            try:
                results.append(await measure(v, seconds, folder))
            except Exception as exc:  # one broken variant must not hide the others
                nan = float("nan")
                results.append(Measured(v.name, v.checkpointer, v.durability or "default", v.graph,
                                        0, nan, nan, f"{type(exc).__name__}: {exc}"[:300]))
    return results


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=3.0, help="measured seconds per variant")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = p.parse_args()
    results = asyncio.run(run_all(args.seconds))
    if args.json:
        print(json.dumps([asdict(r) for r in results]))
        return
    print("| variant | round trips | CPU ms / round trip | wall ms / round trip |")
    print("|---|---:|---:|---:|")
    for r in results:
        print(f"| {r.variant} | {r.round_trips} | {r.cpu_ms_per_round_trip:.2f} |"
              f" {r.wall_ms_per_round_trip:.2f} |" + (f" error: {r.error}" if r.error else ""))


if __name__ == "__main__":
    main()
