"""Interleaved A/B of our server at two code trees: one scenario, both sides in the same run.

    .venv/bin/python bench/ab.py --base REV [--db postgres|sqlite] [--pairs 3] [--duration 10]
        [--warmup 3] [--users 16] [--scenario hitl|instant] [--name NAME]
    .venv/bin/python bench/ab.py --other PATH [...]

A is the base: ``--base REV`` checked out with ``git worktree add --detach`` in a temporary
directory outside the repository (bench/compare.py's ``checkouts``; removed at the end, also on
a failure, Ctrl-C or SIGTERM), or ``--other PATH``, an existing tree. B is this working tree,
uncommitted changes included. Pair 1 runs A then B, pair 2 B then A, and so on, so a slow spell
of a shared machine hits both sides.

Each run is bench/run.py's ``Server`` for our server (``python -m bench.servers.llamon`` from
this virtual environment, pinned to core 0) with its working directory in the side's tree:
``-m`` puts that directory first on ``sys.path``, so the server imports that tree's
``llamon_agent`` and bench/servers/ (each tree's import is checked before the first pair, and
each server's ``/proc`` cwd and command line after its start). Every run gets a fresh database:
a new SQLite file, or a newly created PostgreSQL database with ``synchronous_commit=on``
(bench/pgdb.py). The load runs on core 1 through run.py's scenarios: ``hitl`` (``--users``
users, each answering its question by context) or ``instant`` (wrk ``message/send`` with
``--users`` connections), a warm-up, then the measured run.

Prints per run and the medians per side: round trips/s (instant: requests/s), answer p50/p99
(instant: request), and CPU per round trip (request) of the server, of its database's PostgreSQL
backends, and both; written to bench/results/NAME.md and .json (default ab-SCENARIO-DB, server
logs in results/logs/). bench/compare.py is the wider before/after: a whole run.py per side, on
SQLite. Only 127.0.0.1 is ever contacted; every request loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from bench.compare import WORKTREE, Side, check_import, checkouts  # noqa: E402
from bench.pgdb import ADMIN_URL, setting, stop_on_sigterm, write_results  # noqa: E402
from bench.run import (  # noqa: E402
    LOAD_CORE,
    OURS,
    WRK_INSTALL,
    Server,
    Settings,
    fmt,
    hitl,
    instant,
    machine,
    med,
    specs_for,
    stream,
)

SERVER_MODULE = Path("bench/servers/llamon.py")
#: (key in run.py's summary, column title, digits) per scenario; the CPU columns are shared
FIGURES = {
    "hitl": [("round_trips_per_s", "round trips/s", 1), ("answer_p50_ms", "answer p50 ms", 1),
             ("answer_p99_ms", "answer p99 ms", 1)],
    "instant": [("req_s", "req/s", 1), ("p50_ms", "p50 ms", 1), ("p99_ms", "p99 ms", 1)],
    # one idle stream at a time: no CPU per request (run.py's probe measures latency only)
    "stream": [("first_p50_ms", "first event p50 ms", 2), ("first_p99_ms", "first event p99 ms", 2),
               ("final_p50_ms", "final event p50 ms", 2)],
}
CPU = [("server_cpu_ms", "server CPU ms", 2), ("pg_backend_cpu_ms", "PG backends CPU ms", 2),
       ("cpu_ms", "total CPU ms", 2)]
#: not speed figures: no ratio of them
NOISE = [("other_load_pct", "other load on server core %", 0), ("errors", "errors", 0)]


def columns(scenario: str, db: str) -> list[tuple[str, str, int]]:
    if scenario == "stream":
        return FIGURES[scenario] + [NOISE[1]]
    cpu = CPU if db == "postgres" else [CPU[0]]  # on SQLite the server's CPU is the total
    return FIGURES[scenario] + cpu + NOISE


@contextlib.contextmanager
def sides(base: str | None, other: str | None) -> Iterator[tuple[Side, Side]]:
    """(A, B): A the base revision's temporary worktree or the other tree, B this working tree."""
    if base is not None:
        with checkouts(base, WORKTREE) as (a, b):
            a.name, b.name = "A", "B"
            yield a, b
        return
    assert other is not None
    tree = Path(other).resolve()
    if not (tree / SERVER_MODULE).is_file():
        raise SystemExit(f"--other {other}: no {SERVER_MODULE} in it")
    a, b = Side("A", other, None, tree), Side("B", WORKTREE, None, ROOT)
    for side in (a, b):
        check_import(side)  # the tree's own llamon_agent wins over the venv's editable install
    yield a, b


def describe(side: Side) -> str:
    if side.commit is None and side.checkout != ROOT:  # --other: neither a commit nor this tree
        return f"the tree `{side.rev}`"
    return side.describe()


def check_running(server: Server, side: Side) -> None:
    """The server is this venv's python running ``-m bench.servers.llamon`` in the side's tree,
    so the tree is first on its ``sys.path`` (what check_import verified for that tree)."""
    cwd = Path(os.readlink(f"/proc/{server.pid}/cwd"))
    argv = Path(f"/proc/{server.pid}/cmdline").read_bytes().decode().split("\0")
    expected = [sys.executable, "-m", server.spec.module]
    if cwd != side.checkout.resolve() or argv[:3] != expected:
        raise SystemExit(f"{side.name}: the server runs {argv[:3]} in {cwd}, "
                         f"not {expected} in {side.checkout}")


def run_side(side: Side, pair: int, scenario: str, users: int, s: Settings) -> dict[str, Any]:
    """One server of the side's tree on a fresh database: run.py's warm-up and measured run."""
    spec = next(spec for spec in specs_for(s.db) if spec.key == OURS)
    server = Server(spec, f"ab-{side.name}{pair}", s.db, root=side.checkout)
    server.start()
    try:
        check_running(server, side)
        if scenario == "stream":
            out = stream(server, s)
            out["cpu_ms"] = out["server_cpu_ms"] = float("nan")  # not measured by the probe
        else:
            out = (hitl if scenario == "hitl" else instant)(server, s, users)
        out.update(server.facts)
    finally:
        server.stop()
    out["log"] = server.log_summary()
    out["server_cpu_ms"] = out.get("server_cpu_ms", out["cpu_ms"])  # SQLite: no backends
    return out


def report(runs: list[dict[str, Any]], a: Side, b: Side, args: argparse.Namespace,
           facts: dict[str, str]) -> str:
    cols = columns(args.scenario, args.db)
    load = {"hitl": f"{args.users} HITL users answering by context",
            "instant": f"instant `message/send`, wrk with {args.users} connections",
            "stream": f"{args.streams} idle `message/stream`s one at a time, no warm-up "
                      "beyond the probe's own 20"}[args.scenario]
    out = [f"- A: {describe(a)}", f"- B: {describe(b)}",
           f"- {args.db}, fresh database per run; {load}; {args.warmup:g} s warm-up + "
           f"{args.duration:g} s measured; {args.pairs} pair(s), the order alternating",
           f"- machine: {', '.join(f'{k} {v}' for k, v in facts.items() if v != '?')}", "",
           "| pair | side | " + " | ".join(title for _, title, _ in cols) + " |",
           "|---:|---|" + "---:|" * len(cols)]
    for run in runs:
        out.append(f"| {run['pair']} | {run['side']} | "
                   + " | ".join(fmt(float(run.get(key, float("nan"))), digits)
                                for key, _, digits in cols) + " |")
    medians = {name: {key: med([r.get(key) for r in runs if r["side"] == name])
                      for key, _, _ in cols} for name in ("A", "B")}
    for name in ("A", "B"):
        out.append(f"| median | {name} | "
                   + " | ".join(fmt(medians[name][key], d) for key, _, d in cols) + " |")
    ratios = [fmt(medians["B"][key] / medians["A"][key], 3)
              if (key, title, d) not in NOISE and medians["A"][key] else "-"
              for key, title, d in cols]
    out.append("| B / A | medians | " + " | ".join(ratios) + " |")
    speed, title, _ = cols[0]
    per_pair = [by_side["B"][speed] / by_side["A"][speed]
                for by_side in ({r["side"]: r for r in runs if r["pair"] == p}
                                for p in range(1, args.pairs + 1))
                if by_side["A"][speed]]
    out += ["", f"B / A {title} per pair: " + ", ".join(f"{x:.3f}" for x in per_pair)
            + (f" (median {statistics.median(per_pair):.3f})" if per_pair else "")]
    problems = [f"- pair {r['pair']} {r['side']}: {r['errors']} errors, e.g. "
                f"{(r.get('error_samples') or [r.get('first_error')])[:2]}; "
                f"{r['log']['tracebacks']} tracebacks in {r['log']['log']}"
                for r in runs if r["errors"] or r["log"]["tracebacks"]]
    if problems:
        out += ["", "Errors seen (the figures of these runs are not comparable):", "", *problems]
    return "\n".join(out) + "\n"


def tree_options(p: argparse.ArgumentParser) -> argparse._MutuallyExclusiveGroup:
    """``--base REV`` or ``--other PATH``, what ``sides`` takes (bench/alternate.py adds one)."""
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--base", help="git revision measured as A, in a temporary worktree")
    which.add_argument("--other", metavar="PATH", help="an existing tree measured as A")
    return which


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    tree_options(p)
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite",
                   help="a fresh SQLite file, or a fresh PostgreSQL database at "
                   "LLAMON_BENCH_POSTGRES_URL's server (bench/pgdb.py), per run")
    p.add_argument("--pairs", type=int, default=3, help="A/B pairs, the order alternating")
    p.add_argument("--duration", type=float, default=10.0, help="seconds per measured run")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds of warm-up per run")
    p.add_argument("--users", type=int, default=16,
                   help="HITL users, or wrk connections for instant")
    p.add_argument("--scenario", choices=("hitl", "instant", "stream"), default="hitl",
                   help="stream: run.py's idle message/stream probe, --streams one at a time")
    p.add_argument("--streams", type=int, default=1000,
                   help="streams per run of the stream scenario")
    p.add_argument("--name", default=None,
                   help="bench/results/NAME.md and .json (default ab-SCENARIO-DB)")
    args = p.parse_args()
    if args.pairs < 1 or args.duration <= 0 or args.warmup < 0 or args.users < 1:
        raise SystemExit("--pairs and --users must be at least 1, --duration positive")
    name = args.name or f"ab-{args.scenario}-{args.db}"
    if args.scenario == "instant" and shutil.which("wrk") is None:
        raise SystemExit(f"wrk is not installed; install it with: {WRK_INSTALL}")
    if shutil.which("taskset") is None or (os.cpu_count() or 1) < 2:
        print("warning: no taskset or fewer than 2 cores; server and load share the CPU", flush=True)
    else:
        os.sched_setaffinity(0, {LOAD_CORE})  # this process is the HITL load generator
    stop_on_sigterm()  # SIGTERM as Ctrl-C: the server stops, its database and the worktree go
    # run.py's scenarios read only warmup, duration, streams and db of these
    s = Settings(reps=args.pairs, warmup=args.warmup, duration=args.duration,
                 streams=args.streams,
                 memory_counts=(), memory_servers=(), fill_time_limit=0.0, resume_samples=0,
                 alone_seconds=0.0, servers=(OURS,), db=args.db)
    facts = {k: v for k, v in machine().items() if "SDK" not in k}
    if args.db == "postgres":
        facts["postgresql"] = setting(ADMIN_URL, "server_version")
    started = time.monotonic()
    runs: list[dict[str, Any]] = []
    with sides(args.base, args.other) as (a, b):
        print(f"A: {describe(a)}\nB: {describe(b)}", flush=True)
        for pair in range(1, args.pairs + 1):
            for side in (a, b) if pair % 2 else (b, a):
                print(f"pair {pair}/{args.pairs}: {side.name} ...", end=" ", flush=True)
                run = {"pair": pair, "side": side.name, **run_side(side, pair, args.scenario,
                                                                    args.users, s)}
                runs.append(run)
                speed, title, _ = FIGURES[args.scenario][0]
                print(f"{run[speed]:.1f} {title}, {run['cpu_ms']:.2f} ms CPU each, "
                      f"errors {run['errors']}", flush=True)
        text = report(runs, a, b, args, facts)
        data = {"machine": facts, "settings": vars(args), "a": describe(a), "b": describe(b),
                "a_commit": a.commit, "runs": runs, "seconds": time.monotonic() - started}
    write_results(name, f"Interleaved A/B of our server (bench/ab.py, {args.scenario}, "
                  f"{args.db})", text, data)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        raise SystemExit("interrupted: the server was stopped, its database and the worktree "
                         "removed") from None
