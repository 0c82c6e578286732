"""A long HITL load on one server: do memory, the WAL and dead rows stay bounded?

    .venv/bin/python bench/soak.py [--minutes 10] [--users 16] [--db sqlite|postgres]
                                   [--window 20]

Starts ``llamon-agent serve bench.agents:AGENTS`` on a fresh SQLite file (WAL, as it serves)
or a fresh PostgreSQL database (``bench/pgdb.py``), then runs ``--users`` users doing HITL
round trips (``bench/hitl_client.py``) for ``--minutes``, in windows of ``--window`` seconds.
After each window it records the window's round trips/s and latencies, the server's RSS, and
the storage: on SQLite the database and ``-wal`` file sizes, on PostgreSQL the database size
and the dead tuples of the busiest tables (autovacuum's backlog). Every task stays stored
(no retention is configured), so the database grows with the tasks by design; what must not
grow without bound is the memory, the WAL and the dead rows. Results: bench/results/soak-DB.md
and .json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from bench import hitl_client as hc  # noqa: E402
from bench.pgdb import fresh_database, write_results  # noqa: E402
from bench.procs import ServerProcess, tree_cpu_ticks, tree_rss_kb  # noqa: E402

RESULTS = BENCH / "results"  # the server's log goes to RESULTS / logs
LLAMON = str(Path(sys.executable).parent / "llamon-agent")
PORT = 9331
_TABLES = ("llamon_tasks", "llamon_claims", "checkpoints", "checkpoint_blobs",
           "checkpoint_writes", "llamon_push_configs")


@contextmanager
def storage(kind: str) -> Iterator[tuple[str, Any]]:
    if kind == "postgres":
        with fresh_database("on") as database:
            yield database.url, database.url
        return
    with tempfile.TemporaryDirectory(prefix="llamon-soak-") as folder:
        path = Path(folder) / "soak.sqlite3"
        yield str(path), path


def sqlite_sizes(path: Path) -> dict[str, float]:
    def mb(p: Path) -> float:
        return p.stat().st_size / 2**20 if p.exists() else 0.0
    return {"db_mb": mb(path), "wal_mb": mb(path.with_name(path.name + "-wal"))}


def postgres_sizes(url: str) -> dict[str, float]:
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        rows = conn.execute(
            "SELECT relname, n_live_tup, n_dead_tup FROM pg_stat_user_tables"
            " WHERE relname = ANY(%s)", (list(_TABLES),)).fetchall()
    out: dict[str, float] = {"db_mb": (size[0] if size else 0) / 2**20}
    out["dead_rows"] = float(sum(r[2] for r in rows))
    out["live_rows"] = float(sum(r[1] for r in rows))
    return out


async def soak(args: argparse.Namespace, target: Any) -> list[dict[str, Any]]:
    windows: list[dict[str, Any]] = []
    ticks = os.sysconf("SC_CLK_TCK")
    end = time.monotonic() + args.minutes * 60
    started = time.monotonic()
    while time.monotonic() < end:
        cpu0 = tree_cpu_ticks(args.pid)
        result = await hc.hitl_load(PORT, users=args.users, duration=args.window)
        cpu = (tree_cpu_ticks(args.pid) - cpu0) / ticks
        summary = result.summary()
        sizes = postgres_sizes(target) if args.db == "postgres" else sqlite_sizes(target)
        window = {
            "at_s": round(time.monotonic() - started),
            "round_trips_per_s": summary["round_trips_per_s"],
            "answer_p50_ms": summary["answer_p50_ms"],
            "answer_p99_ms": summary["answer_p99_ms"],
            "server_cpu_ms_per_rt": cpu * 1e3 / max(1, result.round_trips),
            "rss_mb": tree_rss_kb(args.pid) / 1024,
            "errors": summary["errors"],
            **sizes,
        }
        windows.append(window)
        print(" ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in window.items()), flush=True)
    return windows


def report(args: argparse.Namespace, windows: list[dict[str, Any]]) -> str:
    keys = [k for k in windows[0] if k != "errors"]
    lines = ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for w in windows:
        lines.append("| " + " | ".join(f"{w[k]:.1f}" if isinstance(w[k], float) else str(w[k])
                                       for k in keys) + " |")
    half = len(windows) // 2
    first, second = windows[1:half] or windows[:1], windows[half:]

    def med(ws: list[dict[str, Any]], key: str) -> float:
        return statistics.median(w[key] for w in ws)

    lines += ["", "| between the first and second half (medians) | first | second |", "|---|---|---|"]
    for key in ("rss_mb", "round_trips_per_s", "answer_p99_ms",
                "wal_mb" if args.db == "sqlite" else "dead_rows"):
        lines.append(f"| {key} | {med(first, key):.1f} | {med(second, key):.1f} |")
    peak = "wal_mb" if args.db == "sqlite" else "dead_rows"
    lines.append(f"| peak {peak} | {max(w[peak] for w in windows):.1f} | |")
    lines.append(f"| errors (all windows) | {sum(w['errors'] for w in windows)} | |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--users", type=int, default=16)
    parser.add_argument("--window", type=float, default=20.0)
    parser.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite")
    args = parser.parse_args()
    with storage(args.db) as (db, target):
        log = RESULTS / "logs" / f"soak-{args.db}.log"
        server = ServerProcess("ours", [LLAMON, "serve", "bench.agents:AGENTS", "--port",
                                        str(PORT), "--db", db, "--log-level", "warning"],
                               PORT, log, cores=None, cwd=ROOT)
        server.start()
        try:
            args.pid = server.pid
            windows = asyncio.run(soak(args, target))
        finally:
            server.stop()
    write_results(f"soak-{args.db}",
                  f"Soak: {args.minutes:g} min of HITL round trips, {args.users} users, {args.db}",
                  report(args, windows),
                  {"args": {k: v for k, v in vars(args).items() if k != "pid"},
                   "windows": windows, "seconds": args.minutes * 60})


if __name__ == "__main__":
    main()
