"""Instructions per HITL round trip, counted by valgrind: our app in process against LangGraph
alone on our checkpointer. A measure of the work itself, which this machine's drift cannot move.

    .venv/bin/python bench/instructions.py [--sides ours,langgraph] [--short 20] [--long 120]
        [--warmup 30] [--ablate PARTS] [--name NAME]

Issue 14's CPU target compares our served CPU per round trip with LangGraph alone's. On this
shared machine a CPU figure moves by 3-7% between two runs of the same code minutes apart
(``alternate.py --same`` with nothing changed, bench/README.md "Speed, round twenty-five"), so a
change worth 1% cannot be told from the noise, and rounds eighteen to twenty-four found no one
part of our work worth more than 3%. What CPython runs is two thirds of what the app adds
(``native_split.py``); the instructions it executes to do so hardly move between runs.

Each side runs in its own process under ``valgrind --tool=callgrind`` (no cache simulation:
instructions only, about 50 times slower than native), one round trip at a time, twice: with
``--short`` and with ``--long`` measured round trips after the same ``--warmup``. The difference
of the two totals over the difference of the counts is the side's instructions per round trip:
start-up, imports and warm-up cancel out. Both runs of a side start at once (two cores), so a
side takes about as long as its longer run.

* ``ours``: ``create_app`` on the benchmark's agents and a fresh SQLite file, each request an
  ASGI call (``bench/in_process.py``: no HTTP server, parser or socket, which ``overhead.py``'s
  HTTP alone measures), with ``--ablate`` (``bench/ablate.py``) taking parts out;
* ``langgraph``: ``bench/langgraph_alone.py``'s denominator: the native graph on our saver
  (``sqlite-llamon``), ``durability="exit"``.

``PYTHONHASHSEED=0`` in both. Instructions are not time: a cache miss or a system call costs
more than its instructions (the kernel's are not counted at all), so the ratio here is of the
interpreter's and the libraries' user-space work, not of CPU time; it says whether a change cuts
work, and by how much, where a CPU A/B cannot. Results: bench/results/NAME.md and .json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

SIDES = ("ours", "langgraph")
_COLLECTED = re.compile(r"^==\d+== Collected : (\d+)$", re.MULTILINE)


@dataclass
class Count:
    side: str
    ablated: str
    short_round_trips: int
    long_round_trips: int
    short_instructions: int
    long_instructions: int

    @property
    def per_round_trip(self) -> float:
        return (self.long_instructions - self.short_instructions) / (
            self.long_round_trips - self.short_round_trips)


# ---------------------------------------------------------------- the child: round trips


@contextlib.asynccontextmanager
async def round_trips(side: str, folder: str) -> AsyncIterator[Callable[[], Awaitable[None]]]:
    """One HITL round trip of ``side``, ready to call, on a fresh store in ``folder``: ours
    (``create_app`` in process, with ``$LLAMON_BENCH_ABLATE``'s parts taken out) or LangGraph
    alone on our saver. Each call raises unless the task asks, then completes. Shared with
    ``bench/bytecodes.py``."""
    if side == "ours":
        from bench.ablate import make_app, parts_from_env
        from bench.agents import build_agents
        from bench.in_process import round_trip
        from llamon_agent import create_app

        app = make_app(create_app, build_agents(), str(Path(folder) / "tasks.db"),
                       parts_from_env())
        async with app.router.lifespan_context(app):
            yield lambda: round_trip(app)
        return
    from bench.langgraph_alone import Variant, checkpointer, compile_graph
    from bench.langgraph_alone import round_trip as alone

    variant = Variant("sqlite-llamon", "exit")
    async with checkpointer(variant.checkpointer, folder) as opened:
        graph = compile_graph(variant, opened.saver)
        yield lambda: alone(graph, variant.durability, False)


async def _run(side: str, folder: str, count: int) -> int:
    done = 0
    async with round_trips(side, folder) as round_trip:
        for _ in range(count):
            await round_trip()
            done += 1
    return done


def child(side: str, warmup: int, measured: int) -> None:
    import logging

    logging.disable(logging.WARNING)  # the no-authentication warning, once per app
    with tempfile.TemporaryDirectory(prefix="instructions-") as folder:
        done = asyncio.run(_run(side, folder, warmup + measured))
    print(f"{side}: {done} round trips")


# ---------------------------------------------------------------- the parent: valgrind


def collected(log: str) -> int:
    """The total of instructions callgrind reports at exit."""
    found = _COLLECTED.findall(log)
    if len(found) != 1:
        raise RuntimeError(f"expected one 'Collected :' line from callgrind, got: {log[-2000:]}")
    return int(found[0])


def valgrind_argv(side: str, warmup: int, measured: int) -> list[str]:
    return ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
            sys.executable, str(Path(__file__).resolve()), "--child", side,
            "--warmup", str(warmup), "--measured", str(measured)]


def count(side: str, warmup: int, short: int, long: int, ablated: str) -> Count:
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    env.pop("LLAMON_BENCH_ABLATE", None)
    if ablated:
        env["LLAMON_BENCH_ABLATE"] = ablated
    runs = [subprocess.Popen(valgrind_argv(side, warmup, n), cwd=ROOT, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for n in (short, long)]
    totals = []
    for run in runs:
        out, err = run.communicate()
        if run.returncode != 0:
            raise RuntimeError(f"{side} under valgrind exited {run.returncode}: "
                               f"{(out + err)[-2000:]}")
        totals.append(collected(err))
    return Count(side, ablated, short, long, totals[0], totals[1])


def report(counts: list[Count]) -> str:
    lines = ["| side | ablated | instructions per round trip |", "|---|---|---:|"]
    for c in counts:
        lines.append(f"| {c.side} | {c.ablated or '-'} | {c.per_round_trip:,.0f} |")
    by_side = {c.side: c.per_round_trip for c in counts}
    if "ours" in by_side and "langgraph" in by_side:
        lines.append("")
        lines.append(f"ours / LangGraph alone: **{by_side['ours'] / by_side['langgraph']:.3f}**")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sides", default=",".join(SIDES))
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--short", type=int, default=20)
    p.add_argument("--long", type=int, default=120)
    p.add_argument("--ablate", default="", help="bench/ablate.py's parts, for ours")
    p.add_argument("--name", default="instructions")
    p.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    p.add_argument("--measured", type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args.child, args.warmup, args.measured)
        return
    sides = [s for s in args.sides.split(",") if s]
    unknown = sorted(set(sides) - set(SIDES))
    if unknown or not sides:
        p.error(f"--sides: unknown {', '.join(unknown) or '(none)'}; known: {', '.join(SIDES)}")
    if not 0 <= args.short < args.long or args.warmup < 1:
        p.error("need --warmup >= 1 and 0 <= --short < --long")
    if args.ablate:
        from bench.ablate import parts_from_env

        parts_from_env(args.ablate)  # an unknown part is refused here, before valgrind starts
    started = time.monotonic()
    counts = [count(side, args.warmup, args.short, args.long,
                    args.ablate if side == "ours" else "") for side in sides]
    text = report(counts)
    print(text)
    out = BENCH / "results"
    out.mkdir(exist_ok=True)
    (out / f"{args.name}.md").write_text(text + "\n")
    (out / f"{args.name}.json").write_text(json.dumps(
        [{**asdict(c), "per_round_trip": c.per_round_trip} for c in counts], indent=1))
    print(f"written to bench/results/{args.name}.md and .json "
          f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
