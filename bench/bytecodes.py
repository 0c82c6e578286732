"""Where the Python work of a HITL round trip goes: bytecodes executed per function, our app in
process against LangGraph alone on our checkpointer.

    .venv/bin/python bench/bytecodes.py [--round-trips 100] [--top 40] [--name NAME]

``bench/instructions.py`` counts how much work a round trip is, but callgrind sees the
interpreter's C functions, not which Python function ran them: what our app adds over LangGraph
alone (about 3.5 million instructions) was known only as "the interpreter, spread thin"
(bench/README.md, rounds twenty-five and twenty-six). This script counts, with
``sys.settrace``'s opcode events, the bytecodes each Python function executes (its own, not
its callees', without the RESUME each call starts with) and its calls (a coroutine's
resumptions count as calls, as in cProfile), and the bytecodes executed from each call until it
returns, its callees' included (per resumption for a coroutine; a recursive function's counts
overlap), over ``--round-trips`` round trips after 30 of
warm-up, one at a time, on each side; and, with ``sys.setprofile``'s ``c_call`` events, the calls
into C functions (a validation, a serialisation, an SQLite statement), whose work the bytecode
that calls them carries:

* ``ours``: ``create_app`` in process on a fresh SQLite file (``bench/in_process.py``'s round
  trip: its client's few bytecodes count too);
* ``langgraph``: ``bench/langgraph_alone.py``'s denominator, the native graph on our saver.

A bytecode is not an instruction: one that calls into C (a serialiser, SQLite, a regular
expression) carries that call's work, which the map cannot see. Round thirty's scan of a
request's text removed 940 bytecodes a round trip and added 52,000 instructions, all in the
regular expression engine. So the map says where Python runs and which C functions it calls how
often; a cut chosen from it is judged by ``bench/instructions.py``, before and after, on its
own. Only the event loop's thread is traced (the SQLite offload thread runs C). Tracing is slow
(about 50 ms a round trip). Two runs of the same code differ by under 0.1% (the event loop's
turns depend on timing), where CPU figures here move by 3-7%. Results: bench/results/NAME.md
and .json.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import logging
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.instructions import SIDES
from bench.instructions import round_trips as side_round_trips

BENCH = Path(__file__).resolve().parent
WARMUP = 30
#: the first part of a file's path that names its package, for the report's groups
GROUPS = ("llamon_agent", "langgraph", "langchain_core", "starlette", "pydantic",
          "prometheus_client", "asyncio", "bench")

Function = tuple[str, int, str]  # (file, first line, name)


@dataclass
class Census:
    """What one side's round trips executed, per round trip."""

    side: str
    round_trips: int
    bytecodes: dict[Function, int] = field(default_factory=dict)
    calls: dict[Function, int] = field(default_factory=dict)
    #: calls of C functions, by qualified name (``Connection.execute``, ``dumps``)
    c_calls: dict[str, int] = field(default_factory=dict)
    #: bytecodes from each call to its return, callees included
    inclusive: dict[Function, int] = field(default_factory=dict)

    def total(self) -> float:
        return sum(self.bytecodes.values()) / self.round_trips

    def total_calls(self) -> float:
        return sum(self.calls.values()) / self.round_trips

    def per_round_trip(self, function: Function) -> float:
        return self.bytecodes.get(function, 0) / self.round_trips


class _Tracer:
    """``sys.settrace``'s hook: each frame counts its own opcodes under its code's key."""

    def __init__(self) -> None:
        self.bytecodes: collections.Counter[Function] = collections.Counter()
        self.calls: collections.Counter[Function] = collections.Counter()
        self.inclusive: collections.Counter[Function] = collections.Counter()
        self.c_calls: collections.Counter[str] = collections.Counter()
        self.executed = 0  # every bytecode traced so far

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        """``sys.setprofile``'s hook: counts each call of a C function by its name."""
        if event == "c_call":
            self.c_calls[getattr(arg, "__qualname__", None) or repr(arg)] += 1

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event != "call":
            return None
        code = frame.f_code
        key = (code.co_filename, code.co_firstlineno, code.co_name)
        self.calls[key] += 1
        frame.f_trace_opcodes = True
        frame.f_trace_lines = False
        counts, inclusive, started = self.bytecodes, self.inclusive, self.executed

        def local(frame: FrameType, event: str, arg: Any) -> Any:
            if event == "opcode":
                counts[key] += 1
                self.executed += 1
            elif event == "return":
                inclusive[key] += self.executed - started
            return local

        return local


async def _traced(round_trip: Callable[[], Awaitable[None]], measured: int,
                  census: Census) -> None:
    for _ in range(WARMUP):
        await round_trip()
    tracer = _Tracer()
    sys.settrace(tracer)
    sys.setprofile(tracer.profile)
    try:
        for _ in range(measured):
            await round_trip()
    finally:
        sys.setprofile(None)
        sys.settrace(None)
    census.bytecodes, census.calls = dict(tracer.bytecodes), dict(tracer.calls)
    census.inclusive = dict(tracer.inclusive)
    census.c_calls = dict(tracer.c_calls)


def count(side: str, round_trips: int) -> Census:
    census = Census(side, round_trips)

    async def run(folder: str) -> None:
        async with side_round_trips(side, folder) as round_trip:
            await _traced(round_trip, round_trips, census)

    with tempfile.TemporaryDirectory(prefix="bytecodes-") as folder:
        asyncio.run(run(folder))
    return census


def group_of(file: str) -> str:
    for name in GROUPS:
        if f"/{name}/" in file:
            return name
    if file.startswith("<"):
        return file  # generated code: dataclasses' and namedtuples' __init__ are "<string>"
    return "the standard library and the rest"


def _where(function: Function) -> str:
    file, line, name = function
    for marker in ("site-packages/", "llamon_agent/", "bench/"):
        if marker in file:
            file = (marker if marker != "site-packages/" else "") + file.split(marker, 1)[1]
            break
    else:
        file = file.rsplit("/", 1)[-1]
    return f"`{file}:{line}` {name}"


def _by(census: Census, key: Callable[[Function], str | None]) -> collections.Counter[str]:
    found: collections.Counter[str] = collections.Counter()
    for function, n in census.bytecodes.items():
        name = key(function)
        if name is not None:
            found[name] += n
    return found


def report(ours: Census, alone: Census, top: int) -> str:
    lines = [
        "| side | bytecodes per round trip | Python calls per round trip |",
        "|---|---:|---:|",
        f"| ours | {ours.total():,.0f} | {ours.total_calls():,.0f} |",
        f"| langgraph | {alone.total():,.0f} | {alone.total_calls():,.0f} |",
        "",
        f"ours / LangGraph alone: **{ours.total() / alone.total():.3f}** in bytecodes; ours adds "
        f"{ours.total() - alone.total():,.0f} a round trip.",
        "",
        "| where (by package) | ours | LangGraph alone | added |",
        "|---|---:|---:|---:|",
    ]
    mine, theirs = _by(ours, lambda f: group_of(f[0])), _by(alone, lambda f: group_of(f[0]))
    for name in sorted(set(mine) | set(theirs), key=lambda g: -(mine[g] / ours.round_trips)):
        a, b = mine[name] / ours.round_trips, theirs[name] / alone.round_trips
        lines.append(f"| {name} | {a:,.0f} | {b:,.0f} | {a - b:+,.0f} |")
    modules = _by(ours, lambda f: f[0].split("llamon_agent/", 1)[1]
                  if "/llamon_agent/" in f[0] else None)
    lines += ["", "| our module | bytecodes per round trip |", "|---|---:|"]
    for name, n in modules.most_common(top):
        lines.append(f"| `llamon_agent/{name}` | {n / ours.round_trips:,.0f} |")
    added = {f: ours.per_round_trip(f) - alone.per_round_trip(f)
             for f in set(ours.bytecodes) | set(alone.bytecodes)}
    lines += ["", "| function (its own bytecodes) | added per round trip | calls, ours |",
              "|---|---:|---:|"]
    for function in sorted(added, key=lambda f: -added[f])[:top]:
        calls = ours.calls.get(function, 0) / ours.round_trips
        lines.append(f"| {_where(function)} | {added[function]:+,.0f} | {calls:.1f} |")
    with_callees = {f: (ours.inclusive.get(f, 0) / ours.round_trips
                        - alone.inclusive.get(f, 0) / alone.round_trips)
                    for f in set(ours.inclusive) | set(alone.inclusive)}
    lines += ["", "| function with its callees | added per round trip | ours | calls, ours |",
              "|---|---:|---:|---:|"]
    for function in sorted(with_callees, key=lambda f: -with_callees[f])[:top]:
        whole = ours.inclusive.get(function, 0) / ours.round_trips
        calls = ours.calls.get(function, 0) / ours.round_trips
        lines.append(f"| {_where(function)} | {with_callees[function]:+,.0f} | {whole:,.0f} "
                     f"| {calls:.1f} |")
    c_added = {name: (ours.c_calls.get(name, 0) / ours.round_trips
                      - alone.c_calls.get(name, 0) / alone.round_trips)
               for name in set(ours.c_calls) | set(alone.c_calls)}
    lines += ["", "| C function | calls per round trip, ours | LangGraph alone | added |",
              "|---|---:|---:|---:|"]
    for name in sorted(c_added, key=lambda n: (-c_added[n], n))[:top]:
        a = ours.c_calls.get(name, 0) / ours.round_trips
        b = alone.c_calls.get(name, 0) / alone.round_trips
        lines.append(f"| `{name}` | {a:,.1f} | {b:,.1f} | {a - b:+,.1f} |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--round-trips", type=int, default=100)
    p.add_argument("--top", type=int, default=40, help="rows of the module and function tables")
    p.add_argument("--name", default="bytecodes")
    args = p.parse_args()
    if args.round_trips < 1 or args.top < 1:
        p.error("--round-trips and --top must be positive")
    logging.disable(logging.WARNING)  # the no-authentication warning, once per app
    started = time.monotonic()
    ours, alone = (count(side, args.round_trips) for side in SIDES)
    text = report(ours, alone, args.top)
    print(text)
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    (out / f"{args.name}.md").write_text(text + "\n")
    (out / f"{args.name}.json").write_text(json.dumps({
        c.side: {"round_trips": c.round_trips, "bytecodes": c.total(), "calls": c.total_calls(),
                 "functions": [[*f, n / c.round_trips] for f, n in c.bytecodes.items()],
                 "with_callees": [[*f, n / c.round_trips] for f, n in c.inclusive.items()],
                 "c_calls": {name: n / c.round_trips for name, n in c.c_calls.items()}}
        for c in (ours, alone)}, indent=1))
    print(f"written to bench/results/{args.name}.md and .json "
          f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
