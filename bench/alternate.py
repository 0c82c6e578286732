"""A/B of our server with both sides up at once and the load alternating between them.

    .venv/bin/python bench/alternate.py --base REV [--db postgres|sqlite] [--scenario hitl|instant|stream]
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
of the rate (HITL round trips/s, instant requests/s, or idle streams/s) and of the server's CPU
per operation; the result is the median and the quartiles of those ratios (the quartiles say
how sure it is: when they straddle 1.0 the difference is within noise). ``--scenario stream``
is the matrix's idle stream probe (``message/stream`` one at a time, hitl_client.stream_probe)
for the slice's seconds, and also gives B/A of its median time to the first event.

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


@dataclasses.dataclass(frozen=True)
class Slice:
    rate: float  # operations per second
    cpu_ms: float  # the server's CPU per operation
    first_ms: float | None = None  # stream: median time to the first event


#: the stream probe's cap on streams per slice (it stops at the slice's seconds first)
STREAMS_PER_SLICE = 100_000


def one_slice(server: Server, scenario: str, seconds: float, users: int) -> Slice:
    """What one slice of load measured."""
    before = cpu_ticks(server.pid)
    first_ms = None
    if scenario == "hitl":
        out = asyncio.run(hc.hitl_load(server.spec.port, duration=seconds, users=users))
        done, elapsed, errors = out.round_trips, out.summary()["seconds"], out.summary()["errors"]
    elif scenario == "stream":
        started_at = time.perf_counter()
        probe = asyncio.run(hc.stream_probe(server.spec.port, STREAMS_PER_SLICE,
                                            time_limit=seconds))
        elapsed = time.perf_counter() - started_at
        done, errors = len(probe.first_ms), probe.errors.count
        first_ms = statistics.median(probe.first_ms) if probe.first_ms else None
    else:
        result = wrk(server.spec.port, seconds, users)
        done, elapsed = result["completed"], result["duration_us"] / 1e6
        errors = result["errors"] + result["socket_errors"]
    if errors or not done:
        raise SystemExit(f"{server.tag}: {errors} errors, {done} operations in a slice")
    cpu_ms = (cpu_ticks(server.pid) - before) / CLK_TCK * 1e3
    return Slice(done / elapsed, cpu_ms / done, first_ms)


def quartiles(values: list[float]) -> tuple[float, float, float]:
    if len(values) < 2:
        return values[0], values[0], values[0]
    low, mid, high = statistics.quantiles(values, n=4)
    return low, mid, high


UNITS = {"hitl": "round trips/s", "instant": "req/s", "stream": "streams/s"}
LOAD = {"hitl": "{} users", "instant": "{} wrk connections", "stream": "one stream at a time"}


def report(rows: list[dict[str, Any]], a: Side, b: Side, args: argparse.Namespace) -> str:
    unit = UNITS[args.scenario]
    stream = args.scenario == "stream"
    rate = quartiles([r["rate_ratio"] for r in rows])
    cpu = quartiles([r["cpu_ratio"] for r in rows])
    out = [f"- A: {describe(a)} {args.env_a or ''}".rstrip(),
           f"- B: {describe(b)} {args.env_b or ''}".rstrip(),
           f"- {args.db}, a fresh database per side, both servers up; {args.scenario} "
           f"({LOAD[args.scenario].format(args.users)}), "
           f"{args.rounds} rounds of one {args.slice:g} s slice per side, the order alternating",
           f"- machine: {', '.join(f'{k} {v}' for k, v in machine().items() if v != '?')}", ""]
    first = (" A first event p50 ms | B first event p50 ms | B/A first event |"
             if stream else "")
    out += [f"| round | A {unit} | A CPU ms | B {unit} | B CPU ms | B/A rate | B/A CPU |{first}",
            "|---:|---:|---:|---:|---:|---:|---:|" + ("---:|---:|---:|" if stream else "")]
    for r in rows:
        line = (f"| {r['round']} | {r['a_rate']:.1f} | {r['a_cpu']:.3f} | {r['b_rate']:.1f} | "
                f"{r['b_cpu']:.3f} | {r['rate_ratio']:.3f} | {r['cpu_ratio']:.3f} |")
        if stream:
            line += f" {r['a_first']:.3f} | {r['b_first']:.3f} | {r['first_ratio']:.3f} |"
        out.append(line)
    out += ["", f"B/A {unit}: median {rate[1]:.3f}, quartiles {rate[0]:.3f} to {rate[2]:.3f}",
            f"B/A server CPU per operation: median {cpu[1]:.3f}, quartiles {cpu[0]:.3f} to "
            f"{cpu[2]:.3f}"]
    if stream:
        low, mid, high = quartiles([r["first_ratio"] for r in rows])
        a_first = statistics.median(r["a_first"] for r in rows)
        b_first = statistics.median(r["b_first"] for r in rows)
        out.append(f"B/A median time to the first event: median {mid:.3f}, quartiles {low:.3f} "
                   f"to {high:.3f} (A {a_first:.3f} ms, B {b_first:.3f} ms, medians of the "
                   "rounds)")
    return "\n".join(out) + "\n"


def row(number: int, a: Slice, b: Slice) -> dict[str, Any]:
    """One round's figures and B/A ratios."""
    out: dict[str, Any] = {"round": number, "a_rate": a.rate, "a_cpu": a.cpu_ms,
                           "b_rate": b.rate, "b_cpu": b.cpu_ms, "rate_ratio": b.rate / a.rate,
                           "cpu_ratio": b.cpu_ms / a.cpu_ms}
    if a.first_ms is not None and b.first_ms is not None:
        out.update(a_first=a.first_ms, b_first=b.first_ms, first_ratio=b.first_ms / a.first_ms)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    tree_options(p).add_argument("--same", action="store_true", help="A is this tree too (--env-a/-b)")
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    p.add_argument("--scenario", choices=tuple(UNITS), default="hitl")
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
            rows.append(row(number, got[0], got[1]))
            print(f"round {number}/{args.rounds}: A {got[0].rate:.1f}/s {got[0].cpu_ms:.3f} ms, "
                  f"B {got[1].rate:.1f}/s {got[1].cpu_ms:.3f} ms", flush=True)
        text = report(rows, a, b, args)
    name = args.name or f"alternate-{args.scenario}-{args.db}"
    write_results(name, f"bench/alternate.py: {args.scenario} on {args.db}", text,
                  {"rows": rows, "settings": vars(args),
                   "seconds": time.monotonic() - started_at})


if __name__ == "__main__":
    main()
