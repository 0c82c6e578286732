"""Where the CPU of a HITL round trip goes, measured interleaved: LangGraph alone, our app
served, and HTTP alone.

    .venv/bin/python bench/overhead.py [--db sqlite|postgres] [--reps 3] [--seconds 5]
        [--users 16] [--name overhead]

Issue 14's overhead target compares our served CPU per HITL round trip with LangGraph alone on
the same checkpointer (``bench/run.py``'s matrix). This machine's speed moves by up to 1.3x
between runs minutes apart, so the figures that split the difference are taken in one run, in
rotating order within each repetition, every one on core 0 (the load generator, where there is
one, on core 1):

* **LangGraph alone**: ``bench/langgraph_alone.py`` on the checkpointer our server uses
  (``sqlite-llamon``, or ``postgres``), the graph and its checkpointer only, as ``run.py``'s
  denominator;
* **served**: the app as ``run.py`` serves it (``bench/servers/llamon.py``), 16 users of
  ``bench/hitl_client.py``;
* **HTTP alone**: the same users against ``bench/servers/canned.py``, an app that answers the
  same exchange from canned tasks of the same shape, served the same way: what serving two
  requests costs before any of the app's work.

CPU is the process tree's (all threads), plus, on PostgreSQL, the run's database's backends
(``bench/pgdb.py``): each server gets a fresh database. The report gives each figure's median
and range, and per repetition: what the app itself adds (served, less HTTP alone, less LangGraph
alone), and how much of that the target leaves room for. ``bench/in_process.py`` (the app called
as ASGI) is not used here: its figure moved by up to 1.4x between runs a minute apart, where
these three moved by a few percent (bench/README.md, "Speed, round eighteen"). Results:
bench/results/NAME.md and .json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from bench import hitl_client as hc  # noqa: E402
from bench.pgdb import PostgresCpu, fresh_database, write_results  # noqa: E402
from bench.procs import ServerProcess, tree_cpu_ticks  # noqa: E402

SERVER_CORE, LOAD_CORE = "0", 1
CLK_TCK = os.sysconf("SC_CLK_TCK")
#: the checkpointer of LangGraph alone for each --db, and its row (bench/run.py ALONE_KEYS)
ALONE = {"sqlite": ("sqlite-llamon", "native / sqlite-llamon / durability=exit"),
         "postgres": ("postgres", "native / postgres / durability=exit")}
STEPS = ("langgraph", "served", "http-alone")
TITLES = {
    "langgraph": "LangGraph alone (the graph and its checkpointer)",
    "served": "our app served (HTTP, 16 users)",
    "http-alone": "HTTP alone (canned answers, served the same way)",
}
PORTS = {"served": 9341, "http-alone": 9342}
WARMUP = 2.0


def pinned(argv: list[str]) -> list[str]:
    return ["taskset", "-c", SERVER_CORE, *argv]


def langgraph_alone(db: str, seconds: float) -> float:
    checkpointer, row = ALONE[db]
    out = subprocess.run(
        pinned([sys.executable, str(BENCH / "langgraph_alone.py"), "--json", "--seconds",
                str(seconds), "--checkpointers", checkpointer]),
        capture_output=True, text=True, cwd=ROOT, timeout=seconds * 10 + 300, check=True)
    [found] = [r for r in json.loads(out.stdout) if r["variant"] == row]
    if found.get("error"):
        raise RuntimeError(f"LangGraph alone failed: {found['error']}")
    return float(found["cpu_ms_per_round_trip"])


def served(step: str, db: str, seconds: float, users: int, folder: str) -> float:
    """CPU ms per round trip of the server (its process tree, plus its database's backends)."""
    script = "llamon.py" if step == "served" else "canned.py"
    port = PORTS[step]
    needs_database = db == "postgres" and step == "served"
    with (fresh_database("on") if needs_database else contextlib.nullcontext()) as database:
        argv = [sys.executable, "-m", f"bench.servers.{script[:-3]}", "--port", str(port)]
        if step == "served":
            url = database.url if database is not None else str(
                Path(folder) / f"served-{uuid.uuid4().hex}.sqlite3")
            argv += ["--db", url]
        log = BENCH / "results" / "logs" / f"overhead-{step}.log"
        server = ServerProcess(step, argv, port, log, cores=SERVER_CORE, cwd=ROOT)
        server.start()
        try:
            asyncio.run(hc.hitl_load(port, users=users, duration=WARMUP))
            cpu0 = tree_cpu_ticks(server.pid)
            with (PostgresCpu(database.name) if database is not None
                  else contextlib.nullcontext()) as pg:
                result = asyncio.run(hc.hitl_load(port, users=users, duration=seconds))
            ticks = tree_cpu_ticks(server.pid) - cpu0 + (pg.backend_ticks if pg else 0)
        finally:
            server.stop()
    if result.errors.count or not result.round_trips:
        raise RuntimeError(f"{step}: {result.errors.count} errors, e.g. {result.errors.samples[:2]}")
    return ticks / CLK_TCK * 1e3 / result.round_trips


def measure_all(args: argparse.Namespace) -> dict[str, list[float]]:
    os.sched_setaffinity(0, {LOAD_CORE} if (os.cpu_count() or 1) >= 2 else {0})
    figures: dict[str, list[float]] = {step: [] for step in STEPS}
    with tempfile.TemporaryDirectory(prefix="overhead-") as folder:
        runs: dict[str, Callable[[], float]] = {
            "langgraph": lambda: langgraph_alone(args.db, args.seconds),
            "served": lambda: served("served", args.db, args.seconds, args.users, folder),
            "http-alone": lambda: served("http-alone", args.db, args.seconds, args.users, folder),
        }
        for rep in range(args.reps):
            order = STEPS[rep % len(STEPS):] + STEPS[:rep % len(STEPS)]
            for step in order:
                cpu = runs[step]()
                figures[step].append(cpu)
                print(f"repetition {rep + 1}/{args.reps}: {step}: {cpu:.3f} ms CPU per round trip",
                      flush=True)
    return figures


def _spread(values: list[float]) -> str:
    return (f"**{statistics.median(values):.3f}** ({min(values):.3f} to {max(values):.3f})"
            if values else "-")


def report(data: dict[str, Any]) -> str:
    figures: dict[str, list[float]] = data["figures"]
    s = data["settings"]
    reps = min(len(v) for v in figures.values())

    def per_rep(fn: Callable[[int], float]) -> list[float]:
        return [fn(i) for i in range(reps)]

    lg, srv, http = (figures[k] for k in STEPS)
    out = [f"{s['db']}, {s['users']} users, {s['reps']} repetitions of {s['seconds']:g} s per "
           f"figure (order rotated), date {data['date']}; CPU ms per HITL round trip, median "
           "(min to max):", "", "| what | CPU ms per round trip |", "|---|---:|"]
    out += [f"| {TITLES[k]} | {_spread(figures[k])} |" for k in STEPS]
    rows = [
        ("ratio served / LangGraph alone (run.py's overhead target: <= 1.3)",
         per_rep(lambda i: srv[i] / lg[i])),
        ("the app's own work: served less HTTP alone less LangGraph alone / ms",
         per_rep(lambda i: srv[i] - http[i] - lg[i])),
        ("what the target leaves the app: 0.3 x LangGraph alone less HTTP alone / ms",
         per_rep(lambda i: 0.3 * lg[i] - http[i])),
        ("HTTP alone / LangGraph alone", per_rep(lambda i: http[i] / lg[i])),
    ]
    out += ["", "| per repetition, then the median | median (min to max) |", "|---|---:|"]
    out += [f"| {title} | {_spread(values)} |" for title, values in rows]
    return "\n".join(out) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--db", choices=tuple(ALONE), default="sqlite")
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seconds", type=float, default=5.0, help="measured seconds per figure")
    p.add_argument("--users", type=int, default=16)
    p.add_argument("--name", default="overhead", help="bench/results/NAME.md and .json")
    args = p.parse_args()
    if args.reps < 1 or args.seconds <= 0 or args.users < 1:
        raise SystemExit("--reps and --users must be positive, --seconds above 0")
    started = time.monotonic()
    figures = measure_all(args)
    data = {"settings": vars(args), "figures": figures,
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "seconds": time.monotonic() - started}
    text = report(data)
    write_results(args.name, f"Where a HITL round trip's CPU goes ({args.db})", text, data)


if __name__ == "__main__":
    main()
