"""Two workers against one on PostgreSQL, both servers up at once and the load alternating
between them: total CPU per HITL round trip (servers + PostgreSQL + Redis), B/A per round.

    .venv/bin/python bench/workers_alternate.py [--a ours-pg] [--b ours-pg-2w] [--rounds 12]
        [--slice 6] [--stagger 0] [--name workers-alternate]

``bench/postgres_hitl.py`` runs each server on its own, one after another: on this machine the
ratio of two such runs moved from 0.92 to 1.51 within one run of 8 repetitions (bench/README.md,
"Speed, round eighteen"), too much to judge a bound of 1.15. Here, as in ``bench/alternate.py``,
both servers run for the whole measurement (every process on core 0, this load generator on core
1), each on its own fresh database and Redis key prefix, and the 16 users go to one of them at a
time for ``--slice`` seconds, A then B, then B then A. An idle server costs almost nothing, so
each slice measures one side: its process tree's CPU, its database's PostgreSQL backends' and
Redis's (an idle side writes nothing there). A drift slower than a slice hits both sides of a
round alike. Each slice opens new connections; for a side of several workers the report says
how the slice's connections spread over them (``ss``: a burst of 16 usually lands on one worker,
``--stagger`` spaces the users' connections). The sides are ``bench/postgres_hitl.py``'s
variants of ours on PostgreSQL. Results: bench/results/NAME.md and .json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from bench import hitl_client as hc  # noqa: E402
from bench.alternate import quartiles  # noqa: E402
from bench.pgdb import PostgresCpu, stop_on_sigterm, write_results  # noqa: E402
from bench.postgres_hitl import (  # noqa: E402
    LOAD_CORE,
    REDIS_URL,
    RESULTS,
    SERVER_CORE,
    VARIANTS,
    Variant,
    argv,
    connection_split,
    redis_pids,
    redis_prefix,
    redis_ticks,
    storage,
)
from bench.procs import ServerProcess, tree_cpu_ticks  # noqa: E402

CLK_TCK = os.sysconf("SC_CLK_TCK")
#: postgres_hitl.py's variants of ours on PostgreSQL
CHOICES = {v.key: v for v in VARIANTS if v.postgres and not v.sdk}


@dataclass
class Side:
    variant: Variant
    server: ServerProcess
    database: str
    slices: list[dict[str, Any]] = field(default_factory=list)


@contextlib.contextmanager
def started(v: Variant, tag: str) -> Iterator[Side]:
    with storage(v, tag, "on") as (db, facts), \
            (redis_prefix() if v.events else contextlib.nullcontext()) as prefix:
        events = f"{REDIS_URL}?prefix={prefix}" if prefix else None
        log = RESULTS / "logs" / f"workers-alternate-{v.key}-{tag}.log"
        server = ServerProcess(v.key, argv(v, db, events), v.port, log, cores=SERVER_CORE,
                               cwd=ROOT)
        server.start()
        try:
            yield Side(v, server, facts["database"])
        finally:
            server.stop()


def one_slice(side: Side, seconds: float, stagger: float) -> dict[str, Any]:
    """One slice of 16 users on ``side``: its total CPU per round trip, and the split of the
    slice's connections over its processes (sampled halfway)."""
    redis = redis_pids()
    split: list[int] = []
    sampler = threading.Timer(seconds / 2, lambda: split.extend(connection_split(side.variant.port)))
    pg = PostgresCpu(side.database)
    cpu0, redis0 = tree_cpu_ticks(side.server.pid), redis_ticks(redis)
    with pg:
        sampler.start()
        try:
            result = asyncio.run(hc.hitl_load(side.variant.port, duration=seconds,
                                              stagger=stagger))
        finally:
            sampler.cancel()
            sampler.join()
    server = tree_cpu_ticks(side.server.pid) - cpu0
    relay = redis_ticks(redis) - redis0
    done = result.round_trips
    if side.server.proc is not None and side.server.proc.poll() is not None:
        # the port answered, but not from this server (another one holds it)
        raise SystemExit(f"{side.variant.key} exited; is port {side.variant.port} taken?")
    if result.errors.count or not done:
        raise SystemExit(f"{side.variant.key}: {result.errors.count} errors "
                         f"{result.errors.samples[:2]}, {done} round trips in a slice")

    def per(ticks: int) -> float:
        return ticks / CLK_TCK * 1e3 / done

    return {"round_trips_per_s": done / result.seconds, "server_ms": per(server),
            "postgres_ms": per(pg.backend_ticks), "redis_ms": per(relay),
            "total_ms": per(server + pg.backend_ticks + relay), "split": split}


def report(a: Side, b: Side, args: argparse.Namespace) -> str:
    ratios = [y["total_ms"] / x["total_ms"] for x, y in zip(a.slices, b.slices, strict=True)]
    rates = [y["round_trips_per_s"] / x["round_trips_per_s"]
             for x, y in zip(a.slices, b.slices, strict=True)]
    low, mid, high = quartiles(ratios)
    rlow, rmid, rhigh = quartiles(rates)
    out = [f"- A: `{a.variant.key}` ({a.variant.label}); B: `{b.variant.key}` ({b.variant.label})",
           f"- PostgreSQL (synchronous_commit=on), a fresh database per side, both servers up; "
           f"16 HITL users (connecting {args.stagger:g} s apart), {args.rounds} rounds of one "
           f"{args.slice:g} s slice per side, the order alternating", "",
           "| round | A total CPU ms | B total CPU ms | of B: server, PostgreSQL, Redis | B's "
           "connections per process | B/A total CPU |", "|---:|---:|---:|---|---|---:|"]
    for number, (x, y, ratio) in enumerate(zip(a.slices, b.slices, ratios, strict=True), 1):
        split = "/".join(map(str, y["split"])) or "?"
        out.append(f"| {number} | {x['total_ms']:.3f} | {y['total_ms']:.3f} | "
                   f"{y['server_ms']:.2f}, {y['postgres_ms']:.2f}, {y['redis_ms']:.2f} | "
                   f"{split} | {ratio:.3f} |")
    out += ["", f"B/A total CPU per round trip: median **{mid:.3f}**, quartiles {low:.3f} to "
            f"{high:.3f}", f"B/A round trips/s: median {rmid:.3f}, quartiles {rlow:.3f} to "
            f"{rhigh:.3f}"]
    return "\n".join(out) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", choices=sorted(CHOICES), default="ours-pg")
    p.add_argument("--b", choices=sorted(CHOICES), default="ours-pg-2w")
    p.add_argument("--rounds", type=int, default=12)
    p.add_argument("--slice", type=float, default=6.0, help="seconds of load per slice")
    p.add_argument("--warmup", type=float, default=3.0, help="seconds of load per side first")
    p.add_argument("--stagger", type=float, default=0.0,
                   help="seconds between two users' first connections in a slice")
    p.add_argument("--name", default="workers-alternate", help="bench/results/NAME.md and .json")
    args = p.parse_args()
    if args.a == args.b:
        p.error("--a and --b must differ (they share a port)")
    if not (1 <= args.rounds <= 100 and 1 <= args.slice <= 60 and 0 <= args.stagger <= 1):
        p.error("--rounds 1-100, --slice 1-60 s, --stagger 0-1 s")
    stop_on_sigterm()
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {LOAD_CORE})
    started_at = time.monotonic()
    with started(CHOICES[args.a], "a") as a, started(CHOICES[args.b], "b") as b:
        for side in (a, b):
            asyncio.run(hc.hitl_load(side.variant.port, duration=args.warmup,
                                     stagger=args.stagger))
        for number in range(1, args.rounds + 1):
            for side in ((a, b) if number % 2 else (b, a)):
                side.slices.append(one_slice(side, args.slice, args.stagger))
            x, y = a.slices[-1], b.slices[-1]
            print(f"round {number}/{args.rounds}: A {x['total_ms']:.3f} ms, B {y['total_ms']:.3f} "
                  f"ms ({'/'.join(map(str, y['split']))}), B/A "
                  f"{y['total_ms'] / x['total_ms']:.3f}", flush=True)
        text = report(a, b, args)
        data = {"settings": vars(args), "a": a.slices, "b": b.slices,
                "seconds": time.monotonic() - started_at}
    write_results(args.name, "bench/workers_alternate.py: two workers against one, alternating",
                  text, data)


if __name__ == "__main__":
    main()
