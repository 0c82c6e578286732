"""HITL round trips on PostgreSQL against SQLite, ours and the official SDK's, with PostgreSQL's
own CPU counted.

    .venv/bin/python bench/postgres_hitl.py [--quick] [--workers 1,2] [--synchronous-commit on]

Servers (each run on a fresh SQLite file or a freshly created PostgreSQL database, dropped at
the end): ``llamon-agent serve bench.agents:AGENTS --db FILE|postgresql://...``, and the official
a2a-sdk with the same LangGraph graph on ``AsyncSqliteSaver`` or ``AsyncPostgresSaver``
(bench/servers/a2a_sdk_langgraph.py). ``--workers 2`` adds ``llamon-agent serve --workers 2``
(PostgreSQL and ``--events redis://``) when the CLI has the flag, and says so when it does not;
``ours-pg-events`` is one worker with the same Redis events, so that what two workers cost splits
into the relay (``ours-pg-events`` against ``ours-pg``) and the second process (``ours-pg-2w``
against ``ours-pg-events``).
Every server runs on core 0, its workers too, and the load generator on core 1. Per
repetition (order rotated) each server gets 2 s of warm-up and ``--duration`` s of 16 users doing
HITL round trips (bench/hitl_client.py); measured: round trips/s, latencies, the server's
CPU (all its processes), PostgreSQL's CPU (the backends of the run's database, and the
cluster's background processes apart), Redis's CPU (its server processes, by title: the
events of ``--workers 2``), and the rest of the machine's busy time. Medians over
repetitions; bench/results/postgres_hitl.md and .json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib.metadata as md
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from bench import hitl_client as hc  # noqa: E402
from bench.pgdb import (  # noqa: E402
    ADMIN_URL,
    PostgresCpu,
    fresh_database,
    setting,
    stop_on_sigterm,
    write_results,
)
from bench.procs import (  # noqa: E402
    ServerProcess,
    cpu_ticks,
    log_summary,
    machine_busy_ticks,
    tree_cpu_ticks,
    tree_rss_kb,
)
from bench.run import SDK_VENV, ensure_sdk_venv  # noqa: E402

RESULTS = BENCH / "results"
NAME = "postgres_hitl"
CLK_TCK = os.sysconf("SC_CLK_TCK")
SERVER_CORE, LOAD_CORE = "0", 1
REDIS_URL = os.environ.get("LLAMON_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
LLAMON = str(Path(sys.executable).parent / "llamon-agent")


@dataclass(frozen=True)
class Variant:
    key: str
    label: str
    sdk: bool  # the official SDK (its own virtual environment), else llamon-agent serve
    postgres: bool
    workers: int = 1
    port: int = 9311
    events: bool = False  # stream events through Redis (--events redis://...)


VARIANTS = [
    Variant("ours-sqlite", "llamon-agent, SQLite", False, False, port=9311),
    Variant("ours-pg", "llamon-agent, PostgreSQL", False, True, port=9312),
    Variant("ours-pg-2w", "llamon-agent, PostgreSQL, --workers 2 + Redis events", False, True,
            workers=2, port=9313, events=True),
    # one worker with the events of two: splits what two workers cost into the relay through
    # Redis (this against ours-pg) and the second process (ours-pg-2w against this)
    Variant("ours-pg-events", "llamon-agent, PostgreSQL, 1 worker + Redis events", False, True,
            port=9316, events=True),
    Variant("sdk-sqlite", "a2a-sdk + same graph, AsyncSqliteSaver", True, False, port=9314),
    Variant("sdk-pg", "a2a-sdk + same graph, AsyncPostgresSaver", True, True, port=9315),
]


def workers_flag() -> bool:
    """Whether ``llamon-agent serve`` takes ``--workers`` (the lead is adding it)."""
    out = subprocess.run([LLAMON, "serve", "--help"], capture_output=True, text=True, check=False)
    return "--workers" in out.stdout


def ensure_sdk_postgres() -> None:
    """The SDK's environment with LangGraph's Postgres checkpointer, the versions of ours."""
    python = str(SDK_VENV / "bin" / "python")
    check = [python, "-c", "import langgraph.checkpoint.postgres.aio, psycopg"]
    if subprocess.run(check, capture_output=True, check=False).returncode == 0:
        return
    packages = [f"langgraph-checkpoint-postgres=={md.version('langgraph-checkpoint-postgres')}",
                f"psycopg[binary]=={md.version('psycopg')}"]
    print(f"installing {' '.join(packages)} into {SDK_VENV.relative_to(ROOT)} ...", flush=True)
    subprocess.run([python, "-m", "pip", "install", "-q", *packages], check=True)


@contextmanager
def redis_prefix() -> Iterator[str]:
    """A Redis key prefix of this run; its keys are deleted at the end (never anything else)."""
    import redis

    prefix = f"llamon_bench_{uuid.uuid4().hex[:12]}:"
    try:
        yield prefix
    finally:
        client = redis.Redis.from_url(REDIS_URL)
        try:
            keys = list(client.scan_iter(match=f"{prefix}*", count=1000))
            if keys:
                client.delete(*keys)
        finally:
            client.close()


@contextmanager
def storage(v: Variant, tag: str, synchronous_commit: str) -> Iterator[tuple[str, dict[str, str]]]:
    """(the --db value, facts about it) for one run: a fresh database or file, removed after."""
    if v.postgres:
        with fresh_database(synchronous_commit) as db:
            yield db.url, {"database": db.name,
                           "synchronous_commit": setting(db.url, "synchronous_commit")}
        return
    path = RESULTS / "db" / f"{NAME}-{v.key}-{tag}.sqlite3"
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in path.parent.glob(path.name + "*"):
        old.unlink()
    try:
        yield str(path), {}
    finally:
        for old in path.parent.glob(path.name + "*"):
            old.unlink()


def argv(v: Variant, db: str, events: str | None) -> list[str]:
    if v.sdk:
        # on SQLite at our durability (WAL, synchronous=NORMAL; issue 14); on PostgreSQL both
        # sides commit as the database's synchronous_commit says
        same_durability = [] if v.postgres else ["--synchronous", "normal"]
        return [str(SDK_VENV / "bin" / "python"), "-m", "bench.servers.a2a_sdk_langgraph",
                "--port", str(v.port), "--db", db, "--durability", "exit", *same_durability]
    out = [LLAMON, "serve", "bench.agents:AGENTS", "--port", str(v.port), "--db", db,
           "--log-level", "warning"]
    if v.workers > 1:
        out += ["--workers", str(v.workers)]
    if events:
        out += ["--events", events]
    return out


def redis_pids() -> list[int]:
    """The machine's Redis server processes (``redis-server`` by process title): their CPU is
    counted in the total as PostgreSQL's is, since workers publish their events through it."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                title = (entry / "cmdline").read_bytes().split(b"\0")[0]
            except OSError:
                continue
            if title.rsplit(b"/", 1)[-1].startswith(b"redis-server"):
                found.append(int(entry.name))
    return found


def redis_ticks(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        with contextlib.suppress(OSError):  # gone meanwhile: its ticks are not counted
            total += cpu_ticks(pid)
    return total


def connection_split(port: int) -> list[int]:
    """The load's connections to ``port`` now, counted per server process holding them (``ss``),
    most first: with ``--workers 2`` the kernel hands each new connection to whichever worker
    accepts first, so one run's 16 users may land 8/8 or 16/0."""
    try:
        listing = subprocess.run(
            ["ss", "-Htnp", "state", "established", f"( sport = :{port} )"],
            capture_output=True, text=True, timeout=5, check=False).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    holders = Counter(tuple(sorted(set(re.findall(r"pid=(\d+)", line))))
                      for line in listing.splitlines())
    return sorted(holders.values(), reverse=True)


def measure(server: ServerProcess, v: Variant, database: str | None, warmup: float,
            duration: float, stagger: float = 0.0) -> dict[str, Any]:
    task_id = v.sdk  # the SDK does not resume a task by contextId
    asyncio.run(hc.hitl_load(v.port, duration=warmup, with_task_id=task_id, stagger=stagger))
    pg = PostgresCpu(database) if database else None
    redis = redis_pids()
    busy0, own0, cpu0 = machine_busy_ticks(), os.times(), tree_cpu_ticks(server.pid)
    redis0 = redis_ticks(redis)
    t0 = time.monotonic()
    if pg:
        pg.__enter__()
    split: list[int] = []
    sampler = threading.Timer(duration / 2, lambda: split.extend(connection_split(v.port)))
    sampler.start()
    try:
        result = asyncio.run(hc.hitl_load(v.port, duration=duration, with_task_id=task_id,
                                          stagger=stagger))
    finally:
        sampler.cancel()
        sampler.join()
        if pg:
            pg.__exit__(None, None, None)
    elapsed = time.monotonic() - t0
    server_s = (tree_cpu_ticks(server.pid) - cpu0) / CLK_TCK
    redis_s = (redis_ticks(redis) - redis0) / CLK_TCK
    own1 = os.times()
    load_s = own1.user + own1.system - own0.user - own0.system
    busy_s = (machine_busy_ticks() - busy0) / CLK_TCK
    backends_s = pg.backend_ticks / CLK_TCK if pg else 0.0
    background_s = pg.background_ticks / CLK_TCK if pg else 0.0
    n = result.round_trips
    out = result.summary()

    def per(seconds: float) -> float:
        return seconds * 1e3 / n if n else math.nan

    out.update({
        "server_cpu_ms": per(server_s),
        "pg_backend_cpu_ms": per(backends_s),
        "pg_background_cpu_ms": per(background_s),
        "redis_cpu_ms": per(redis_s),
        "total_cpu_ms": per(server_s + backends_s + background_s + redis_s),
        "load_generator_cpu_ms": per(load_s),
        "pg_backends": pg.backends if pg else 0,
        # busy time of the machine not accounted for by the server, PostgreSQL or this
        # process, as a share of one core
        "other_pct": max(0.0, (busy_s - server_s - backends_s - background_s - redis_s - load_s)
                         / elapsed * 100),
        "rss_mb": tree_rss_kb(server.pid) / 1024,
        "connections_per_process": split,
    })
    return out


def run_variant(v: Variant, rep: int, s: argparse.Namespace) -> dict[str, Any]:
    tag = f"rep{rep}"
    with storage(v, tag, s.synchronous_commit) as (db, facts), \
            (redis_prefix() if v.events else _none()) as prefix:
        events = f"{REDIS_URL}?prefix={prefix}" if prefix else None
        log = RESULTS / "logs" / f"{NAME}-{v.key}-{tag}.log"
        # every variant on the server core, workers too (they inherit the parent's affinity):
        # unpinned, two workers also ran on the load generator's core, and their total CPU per
        # round trip was 1.53x one pinned worker's, against 1.27x with both pinned
        # (bench/README.md, "Speed, round nine"); the load generator keeps core 1 to itself
        server = ServerProcess(v.key, argv(v, db, events), v.port, log, cores=SERVER_CORE,
                               cwd=ROOT)
        server.start()
        try:
            out = measure(server, v, facts.get("database"), s.warmup, s.duration, s.stagger)
        finally:
            server.stop()
        out.update(facts)
        out["log"] = log_summary(log, ROOT)
        return out


@contextmanager
def _none() -> Iterator[None]:
    yield None


# --- report -----------------------------------------------------------------------------------


ROWS: list[tuple[str, str, int]] = [
    ("HITL round trips/s (16 users)", "round_trips_per_s", 0),
    ("round trip p50 / ms", "round_trip_p50_ms", 1),
    ("round trip p99 / ms", "round_trip_p99_ms", 1),
    ("ask (send -> input-required) p50 / ms", "ask_p50_ms", 1),
    ("answer (-> completed) p50 / ms", "answer_p50_ms", 1),
    ("server CPU per round trip / ms", "server_cpu_ms", 2),
    ("PostgreSQL backends' CPU per round trip / ms", "pg_backend_cpu_ms", 2),
    ("PostgreSQL background processes' CPU per round trip / ms", "pg_background_cpu_ms", 2),
    ("Redis's CPU per round trip / ms (the relayed events; idle otherwise)", "redis_cpu_ms", 2),
    ("total CPU per round trip (server + PostgreSQL + Redis) / ms", "total_cpu_ms", 2),
    ("load generator CPU per round trip / ms", "load_generator_cpu_ms", 2),
    ("PostgreSQL backends of the run's database", "pg_backends", 0),
    ("server RSS after the run / MB", "rss_mb", 0),
    ("errors (per run)", "errors", 0),
    ("server log tracebacks (per run)", "tracebacks", 0),
    ("other processes / % of one core", "other_pct", 0),
]


def fmt(v: float, digits: int) -> str:
    return "-" if math.isnan(v) else f"{v:,.{digits}f}"


def med(values: list[Any]) -> float:
    clean = [float(x) for x in values if isinstance(x, (int, float)) and not math.isnan(x)]
    return statistics.median(clean) if clean else math.nan


def value(run: dict[str, Any], key: str) -> Any:
    return run["log"]["tracebacks"] if key == "tracebacks" else run.get(key)


def report(data: dict[str, Any]) -> str:
    runs: dict[str, list[dict[str, Any]]] = data["runs"]
    keys = [v.key for v in VARIANTS if runs.get(v.key)]
    labels = {v.key: v.label for v in VARIANTS}
    s = data["settings"]
    out = [f"Machine: {', '.join(f'{k} {v}' for k, v in data['machine'].items())}.",
           f"Settings: {s['reps']} repetition(s), {s['warmup']:g} s warm-up + {s['duration']:g} s "
           f"per run, 16 users (connecting {s.get('stagger', 0.0):g} s apart), "
           f"synchronous_commit={s['synchronous_commit']} on every PostgreSQL "
           "connection (ALTER DATABASE), medians over repetitions.", ""]
    if data.get("workers_note"):
        out += [data["workers_note"], ""]
    out.append("| what | " + " | ".join(f"`{k}`: {labels[k]}" for k in keys) + " |")
    out.append("|---|" + "---:|" * len(keys))
    for title, key, digits in ROWS:
        cells = [fmt(med([value(r, key) for r in runs[k]]), digits) for k in keys]
        out.append(f"| {title} | " + " | ".join(cells) + " |")

    def ratio(a: str, b: str, key: str) -> float:
        if a not in runs or b not in runs:
            return math.nan
        return med([x[key] / y[key] if y.get(key) else math.nan
                    for x, y in zip(runs[a], runs[b], strict=False)])

    out += ["", "| ratio (per repetition, then the median) | measured |", "|---|---:|"]
    for a, b, key, title in [
        ("ours-pg", "sdk-pg", "round_trips_per_s", "round trips/s, ours / SDK, both on PostgreSQL"),
        ("ours-pg", "sdk-pg", "total_cpu_ms", "total CPU per round trip, ours / SDK, both on PostgreSQL"),
        ("ours-pg", "ours-sqlite", "round_trips_per_s", "round trips/s, ours: PostgreSQL / SQLite"),
        ("ours-pg", "ours-sqlite", "total_cpu_ms", "total CPU per round trip, ours: PostgreSQL / SQLite"),
        ("sdk-pg", "sdk-sqlite", "round_trips_per_s", "round trips/s, SDK: PostgreSQL / SQLite"),
        ("ours-pg-2w", "ours-pg", "round_trips_per_s", "round trips/s, ours on PostgreSQL: 2 workers / 1"),
        ("ours-pg-2w", "ours-pg", "total_cpu_ms",
         "total CPU per round trip (servers + PostgreSQL + Redis), ours: 2 workers / 1"),
        ("ours-pg-events", "ours-pg", "total_cpu_ms",
         "the relay: total CPU per round trip, 1 worker with Redis events / without"),
        ("ours-pg-2w", "ours-pg-events", "total_cpu_ms",
         "the second process: total CPU per round trip, 2 workers / 1, both with Redis events"),
    ]:
        r = ratio(a, b, key)
        if not math.isnan(r):
            out.append(f"| {title} | {r:.2f} |")
    if "ours-pg-2w" in runs and "ours-pg" in runs:
        relayed = runs.get("ours-pg-events") or []
        out += ["", "| repetition | 2 workers: the load's connections per worker | total CPU per "
                "round trip, 2 workers / 1 | 1 worker: with Redis events / without | 2 workers / "
                "1, both with Redis events |", "|---:|---|---:|---:|---:|"]
        for i, (two, one) in enumerate(zip(runs["ours-pg-2w"], runs["ours-pg"], strict=False)):
            split = "/".join(map(str, two.get("connections_per_process") or [])) or "?"
            relay = relayed[i]["total_cpu_ms"] if i < len(relayed) else math.nan
            out.append(f"| {i + 1} | {split} | {two['total_cpu_ms'] / one['total_cpu_ms']:.2f} | "
                       f"{fmt(relay / one['total_cpu_ms'], 2)} | "
                       f"{fmt(two['total_cpu_ms'] / relay, 2)} |")
    problems = [f"- {k} rep {i}: {r['errors']} errors {r['error_samples'][:2]}; "
                f"{r['log']['tracebacks']} tracebacks, lines {r['log']['top_lines'][:3]}"
                for k in keys for i, r in enumerate(runs[k])
                if r.get("errors") or r["log"]["tracebacks"]]
    if problems:
        out += ["", "Errors seen in this run:", "", *problems]
    return "\n".join(out) + "\n"


def machine() -> dict[str, str]:
    sdk_python = SDK_VENV / "bin" / "python"
    sdk = subprocess.run(
        [str(sdk_python), "-c", "import importlib.metadata as m; "
         "print(m.version('a2a-sdk'), m.version('langgraph-checkpoint-postgres'))"],
        capture_output=True, text=True, check=False).stdout.split() if sdk_python.exists() else []
    return {
        "nproc": str(os.cpu_count()),
        "postgresql": setting(ADMIN_URL, "server_version"),
        "fsync": setting(ADMIN_URL, "fsync"),
        "autovacuum": setting(ADMIN_URL, "autovacuum"),
        "langgraph": md.version("langgraph"),
        "langgraph-checkpoint-postgres": md.version("langgraph-checkpoint-postgres"),
        "a2a-sdk (SDK venv)": sdk[0] if sdk else "?",
        "langgraph-checkpoint-postgres (SDK venv)": sdk[1] if len(sdk) > 1 else "?",
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="1 repetition of 3 s runs")
    p.add_argument("--reps", type=int, default=0, help="repetitions (default 3, quick 1)")
    p.add_argument("--duration", type=float, default=0, help="seconds per measured run (default 10)")
    p.add_argument("--servers", default="", help=f"subset of {[v.key for v in VARIANTS]}")
    p.add_argument("--workers", default="1,2",
                   help="worker counts of our server on PostgreSQL (default 1,2; 2 needs "
                        "`llamon-agent serve --workers`, skipped with a note when it is missing)")
    p.add_argument("--synchronous-commit", choices=["on", "off"], default="on",
                   help="PostgreSQL's synchronous_commit for every connection of both servers")
    p.add_argument("--stagger", type=float, default=0.0,
                   help="seconds between two users' first connections (default 0: all at once, "
                        "and a burst of connections lands on one worker of --workers 2)")
    p.add_argument("--name", default=NAME, help="result files bench/results/NAME.md and .json")
    s = p.parse_args()
    s.reps = s.reps or (1 if s.quick else 3)
    s.duration = s.duration or (3.0 if s.quick else 10.0)
    s.warmup = 1.0 if s.quick else 2.0
    counts = {int(x) for x in s.workers.split(",") if x}
    chosen = set(s.servers.split(",")) if s.servers else {v.key for v in VARIANTS}
    variants = [v for v in VARIANTS if v.key in chosen and (v.workers == 1 or v.workers in counts)]
    note = ""
    if any(v.workers > 1 for v in variants) and not workers_flag():
        note = ("`llamon-agent serve` has no `--workers` flag in this code, so the 2-worker "
                "case was not run.")
        print(note, flush=True)
        variants = [v for v in variants if v.workers == 1]
    if shutil.which("taskset") and (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {LOAD_CORE})  # this process is the load generator
    if any(v.sdk for v in variants):
        ensure_sdk_venv()
        if any(v.sdk and v.postgres for v in variants):
            ensure_sdk_postgres()
    data: dict[str, Any] = {
        "machine": machine(), "workers_note": note, "runs": {v.key: [] for v in variants},
        "settings": {"reps": s.reps, "warmup": s.warmup, "duration": s.duration,
                     "synchronous_commit": s.synchronous_commit, "stagger": s.stagger},
    }
    started = time.monotonic()
    for rep in range(s.reps):
        order = variants[rep % len(variants):] + variants[: rep % len(variants)]
        for v in order:
            print(f"repetition {rep + 1}/{s.reps}: {v.key} ...", end=" ", flush=True)
            r = run_variant(v, rep, s)
            data["runs"][v.key].append(r)
            print(f"{r['round_trips_per_s']:.0f} round trips/s, {r['total_cpu_ms']:.2f} ms CPU "
                  f"each (server {r['server_cpu_ms']:.2f}, PostgreSQL {r['pg_backend_cpu_ms']:.2f}"
                  f" + {r['pg_background_cpu_ms']:.2f}), errors {r['errors']}, connections per "
                  f"process {'/'.join(map(str, r['connections_per_process'])) or '?'}", flush=True)
    data["seconds"] = time.monotonic() - started
    write_results(s.name, "PostgreSQL HITL benchmark", report(data), data)


if __name__ == "__main__":
    stop_on_sigterm()
    main()
