"""What a HITL round trip asks of the asyncio event loop: ours against LangGraph alone.

    .venv/bin/python bench/loop_work.py [--round-trips 200] [--sources 12]

Two runs, each on a fresh SQLite file, one round trip at a time: our app in process
(``create_app`` on the benchmark's agents, called as ASGI by ``bench/in_process.py``'s round
trip: no sockets, no HTTP server) and LangGraph alone on our checkpointer
(``bench/langgraph_alone.py``: the native graph, ``durability="exit"``, the CPU target's
denominator). After the warm-up, the running loop's scheduling methods are wrapped on the loop
object itself, and each call during the measured round trips is counted:

* ``_run_once``: the loop's iterations (asyncio's private method, one per pass over the ready
  callbacks; wrapped here only, for a count);
* ``call_soon``, ``call_later`` / ``call_at``, ``call_soon_threadsafe``: callbacks scheduled
  (a task's every step is one ``call_soon``);
* ``create_task``, ``create_future``, ``run_in_executor``: tasks, futures made through the loop,
  work handed to a thread.

For ``create_task``, ``call_soon_threadsafe`` and ``run_in_executor`` the report also names where
the calls come from (the innermost frames outside asyncio). A count, not a timing: it tells
whether the loop's share of a profile (``asyncio`` in ``bench/profile_groups.py``) is scheduling
that our app adds, or the graph's and the sockets' own (bench/README.md, "Speed, round
twenty-two").
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import traceback
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

WARMUP_ROUND_TRIPS = 20
#: the loop's methods counted, in the report's order
METHODS = ("_run_once", "call_soon", "call_later", "call_at", "call_soon_threadsafe",
           "create_task", "create_future", "run_in_executor")
#: methods whose callers are named in the report
TRACED = frozenset({"create_task", "call_soon_threadsafe", "run_in_executor"})
_FRAMES_NAMED = 3
_ASYNCIO = f"{Path(asyncio.__file__).parent}"


@dataclass
class LoopWork:
    """What the measured round trips asked of the loop."""

    round_trips: int
    calls: Counter[str] = field(default_factory=Counter)
    #: (method, "file:function <- file:function ...") -> calls
    sources: Counter[tuple[str, str]] = field(default_factory=Counter)

    def per_round_trip(self, method: str) -> float:
        return self.calls[method] / self.round_trips


def _caller(stack: list[traceback.FrameSummary]) -> str:
    """The innermost frames outside asyncio and this script, innermost first."""
    outside = [f for f in stack if not f.filename.startswith(_ASYNCIO) and f.filename != __file__]
    named = [f"{Path(f.filename).name}:{f.name}" for f in reversed(outside[-_FRAMES_NAMED:])]
    return " <- ".join(named) or "(asyncio itself)"


def _count_on(loop: asyncio.AbstractEventLoop, work: LoopWork) -> Callable[[], None]:
    """Wrap ``loop``'s scheduling methods to count into ``work``; returns the undo."""
    wrapped: list[str] = []

    def wrap(name: str) -> None:
        original = getattr(loop, name)

        def counting(*args: Any, **kwargs: Any) -> Any:
            work.calls[name] += 1
            if name in TRACED:
                work.sources[(name, _caller(traceback.extract_stack(limit=12)[:-1]))] += 1
            return original(*args, **kwargs)

        setattr(loop, name, counting)
        wrapped.append(name)

    for name in METHODS:
        wrap(name)

    def undo() -> None:
        for name in wrapped:
            delattr(loop, name)  # the instance attribute goes; the class's method shows again

    return undo


async def _measure(round_trip: Callable[[], Awaitable[None]], round_trips: int,
                   warmup: int) -> LoopWork:
    for _ in range(warmup):
        await round_trip()
    work = LoopWork(round_trips)
    undo = _count_on(asyncio.get_running_loop(), work)
    try:
        for _ in range(round_trips):
            await round_trip()
    finally:
        undo()
    return work


async def served(round_trips: int, warmup: int = WARMUP_ROUND_TRIPS) -> LoopWork:
    """Our app in process (``bench/in_process.py``'s round trip) on a fresh SQLite file."""
    from bench.agents import build_agents
    from bench.in_process import round_trip
    from llamon_agent import create_app

    with tempfile.TemporaryDirectory(prefix="loop-work-") as folder:
        app = create_app(build_agents(), db=str(Path(folder) / "served.sqlite3"))
        async with app.router.lifespan_context(app):
            return await _measure(lambda: round_trip(app), round_trips, warmup)


async def langgraph_alone(round_trips: int, warmup: int = WARMUP_ROUND_TRIPS) -> LoopWork:
    """LangGraph alone on our checkpointer: the native graph, ``durability="exit"``."""
    from bench import langgraph_alone as alone

    variant = alone.Variant("sqlite-llamon", "exit")
    with tempfile.TemporaryDirectory(prefix="loop-work-") as folder:
        async with alone.checkpointer(variant.checkpointer, folder) as opened:
            graph = alone.compile_graph(variant, opened.saver)
            return await _measure(lambda: alone.round_trip(graph, variant.durability, False),
                                  round_trips, warmup)


def report(ours: LoopWork, alone: LoopWork, sources: int) -> str:
    lines = [f"Per HITL round trip, one at a time ({ours.round_trips} round trips each):", "",
             "| loop method | ours (app in process) | LangGraph alone | ours less alone |",
             "|---|---:|---:|---:|"]
    for method in METHODS:
        a, b = ours.per_round_trip(method), alone.per_round_trip(method)
        lines.append(f"| `{method}` | {a:.2f} | {b:.2f} | {a - b:+.2f} |")
    for title, work in (("our app", ours), ("LangGraph alone", alone)):
        lines += ["", f"Where {title}'s tasks, threaded callbacks and executor calls come from "
                  "(per round trip):", "", "| method | calls | from (innermost first) |",
                  "|---|---:|---|"]
        for (method, caller), n in work.sources.most_common(sources):
            lines.append(f"| `{method}` | {n / work.round_trips:.2f} | {caller} |")
    return "\n".join(lines)


async def main_async(args: argparse.Namespace) -> None:
    ours = await served(args.round_trips)
    alone = await langgraph_alone(args.round_trips)
    print(report(ours, alone, args.sources))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--round-trips", type=int, default=200, help="measured round trips per side")
    p.add_argument("--sources", type=int, default=12, help="callers named per side")
    args = p.parse_args()
    if args.round_trips < 1 or args.sources < 0:
        p.error("--round-trips: at least 1; --sources: at least 0")
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
