"""A/B of our server with both sides up at once and the load alternating between them.

    .venv/bin/python bench/alternate.py --base REV [--db postgres|sqlite] [--scenario hitl|instant]
        [--rounds 10] [--slice 4] [--users 16] [--env-a K=V,...] [--env-b K=V,...] [--name NAME]
    .venv/bin/python bench/alternate.py --other PATH [...]
    .venv/bin/python bench/alternate.py --same --env-a K=V --env-b K=V [...]

bench/ab.py runs one side at a time, 10 s each, on a fresh database; on a shared virtual machine
whose speed drifts by 10-30% within minutes (bench/README.md, "Speed, round seven": up to 10%
of the cores' time stolen by the hypervisor) a pair's two runs can land in different spells.
Here both servers run for the whole measurement, each pinned to the server core, each on its
own fresh database, and the load goes to one at a time for ``--slice`` seconds, A then B, then B
then A in the next round, ``--rounds`` times. The idle one uses no CPU, so each slice measures
one server; a drift slower than a slice hits both sides of a round alike. Each round gives B/A
of the rate (HITL round trips/s or instant requests/s) and of the server's CPU per operation;
the result is the median and the quartiles of those ratios (the quartiles say how sure it is:
when they straddle 1.0 the difference is within noise).

A is ``--base REV`` (a temporary ``git worktree``, bench/compare.py's ``checkouts``), ``--other
PATH`` or, with ``--same``, this tree again; B is this working tree. ``--env-a``/``--env-b`` set
environment variables of one side's server only (``--same`` compares two settings of one tree).
Results go to bench/results/NAME.md and .json (default alternate-SCENARIO-DB). Only 127.0.0.1
is contacted; every loop is bounded in count and time.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import statistics
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from bench import hitl_client as hc  # noqa: E402
from bench.ab import check_running, describe, sides, tree_options  # noqa: E402
from bench.compare import WORKTREE, Side  # noqa: E402
from bench.pgdb import stop_on_sigterm, write_results  # noqa: E402
from bench.procs import cpu_ticks  # noqa: E402
from bench.run import CLK_TCK, LOAD_CORE, OURS, Server, machine, specs_for, wrk  # noqa: E402

#: side B's port is side A's plus this (run.py's ports are 9301-9304)
B_PORT_OFFSET = 50


def environment(pairs: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for pair in filter(None, pairs.split(",")):
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise SystemExit(f"expected K=V, got {pair!r}")
        found[key] = value
    return found


@contextlib.contextmanager
def started(side: Side, env: dict[str, str], db: str, port: int) -> Iterator[Server]:
    """The side's server on its own fresh database, with ``env`` on top of this environment."""
    spec = dataclasses.replace(next(s for s in specs_for(db) if s.key == OURS), port=port)
    server = Server(spec, f"alternate-{side.name}", db, root=side.checkout)
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update(env)
    try:
        server.start()
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    try:
        check_running(server, side)
        yield server
    finally:
        server.stop()


def one_slice(server: Server, scenario: str, seconds: float, users: int) -> tuple[float, float]:
    """(operations per second, server CPU ms per operation) over one slice of load."""
    before = cpu_ticks(server.pid)
    if scenario == "hitl":
        out = asyncio.run(hc.hitl_load(server.spec.port, duration=seconds, users=users))
        done, elapsed, errors = out.round_trips, out.summary()["seconds"], out.summary()["errors"]
    else:
        result = wrk(server.spec.port, seconds, users)
        done, elapsed = result["completed"], result["duration_us"] / 1e6
        errors = result["errors"] + result["socket_errors"]
    if errors or not done:
        raise SystemExit(f"{server.tag}: {errors} errors, {done} operations in a slice")
    cpu_ms = (cpu_ticks(server.pid) - before) / CLK_TCK * 1e3
    return done / elapsed, cpu_ms / done


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return values[0], values[0], values[0]
    low, mid, high = statistics.quantiles(values, n=4)
    return low, mid, high


def report(rows: list[dict[str, Any]], a: Side, b: Side, args: argparse.Namespace) -> str:
    unit = "round trips/s" if args.scenario == "hitl" else "req/s"
    rate = quartiles([r["rate_ratio"] for r in rows])
    cpu = quartiles([r["cpu_ratio"] for r in rows])
    out = [f"- A: {describe(a)} {args.env_a or ''}".rstrip(),
           f"- B: {describe(b)} {args.env_b or ''}".rstrip(),
           f"- {args.db}, a fresh database per side, both servers up; {args.scenario} "
           f"({args.users} {'users' if args.scenario == 'hitl' else 'wrk connections'}), "
           f"{args.rounds} rounds of one {args.slice:g} s slice per side, the order alternating",
           f"- machine: {', '.join(f'{k} {v}' for k, v in machine().items() if v != '?')}", "",
           f"| round | A {unit} | A CPU ms | B {unit} | B CPU ms | B/A rate | B/A CPU |",
           "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        out.append(f"| {r['round']} | {r['a_rate']:.1f} | {r['a_cpu']:.3f} | {r['b_rate']:.1f} | "
                   f"{r['b_cpu']:.3f} | {r['rate_ratio']:.3f} | {r['cpu_ratio']:.3f} |")
    out += ["", f"B/A {unit}: median {rate[1]:.3f}, quartiles {rate[0]:.3f} to {rate[2]:.3f}",
            f"B/A server CPU per operation: median {cpu[1]:.3f}, quartiles {cpu[0]:.3f} to "
            f"{cpu[2]:.3f}"]
    return "\n".join(out) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    tree_options(p).add_argument("--same", action="store_true", help="A is this tree too (--env-a/-b)")
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--scenario", choices=("hitl", "instant"), default="hitl")
    p.add_argument("--rounds", type=int, default=10, help="slices per side")
    p.add_argument("--slice", type=float, default=4.0, help="seconds of load per slice")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds of load per side first")
    p.add_argument("--users", type=int, default=16,
                   help="HITL users, or wrk connections for instant")
    p.add_argument("--env-a", default="", help="K=V,... for side A's server only")
    p.add_argument("--env-b", default="", help="K=V,... for side B's server only")
    p.add_argument("--name", help="results file name (default alternate-SCENARIO-DB)")
    args = p.parse_args()
    if not (1 <= args.rounds <= 100 and 1 <= args.slice <= 60 and 1 <= args.users <= 256):
        p.error("--rounds 1-100, --slice 1-60 s, --users 1-256")
    stop_on_sigterm()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {LOAD_CORE})  # this process is the HITL load generator
    started_at = time.monotonic()
    with contextlib.ExitStack() as stack:
        if args.same:
            a = Side("A", WORKTREE, None, ROOT)
            b = Side("B", WORKTREE, None, ROOT)
        else:
            a, b = stack.enter_context(sides(args.base, args.other))
        port = next(s for s in specs_for(args.db) if s.key == OURS).port
        servers = (stack.enter_context(started(a, environment(args.env_a), args.db, port)),
                   stack.enter_context(started(b, environment(args.env_b), args.db,
                                               port + B_PORT_OFFSET)))
        for server in servers:
            one_slice(server, args.scenario, args.warmup, args.users)
        rows = []
        for number in range(1, args.rounds + 1):
            order = (0, 1) if number % 2 else (1, 0)
            got = {index: one_slice(servers[index], args.scenario, args.slice, args.users)
                   for index in order}
            (a_rate, a_cpu), (b_rate, b_cpu) = got[0], got[1]
            rows.append({"round": number, "a_rate": a_rate, "a_cpu": a_cpu, "b_rate": b_rate,
                         "b_cpu": b_cpu, "rate_ratio": b_rate / a_rate,
                         "cpu_ratio": b_cpu / a_cpu})
            print(f"round {number}/{args.rounds}: A {a_rate:.1f}/s {a_cpu:.3f} ms, "
                  f"B {b_rate:.1f}/s {b_cpu:.3f} ms", flush=True)
        text = report(rows, a, b, args)
    name = args.name or f"alternate-{args.scenario}-{args.db}"
    write_results(name, f"bench/alternate.py: {args.scenario} on {args.db}", text,
                  {"rows": rows, "settings": vars(args),
                   "seconds": time.monotonic() - started_at})


if __name__ == "__main__":
    main()
