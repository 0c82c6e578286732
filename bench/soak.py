"""A long HITL load on one server: do memory, the WAL and dead rows stay bounded?

    .venv/bin/python bench/soak.py [--minutes 10] [--users 16] [--db sqlite|postgres]
                                   [--window 20] [--vacuum-every SECONDS]

Starts ``llamon-agent serve bench.agents:AGENTS`` on a fresh SQLite file (WAL, as it serves)
or a fresh PostgreSQL database (``bench/pgdb.py``), then runs ``--users`` users doing HITL
round trips (``bench/hitl_client.py``) for ``--minutes``, in windows of ``--window`` seconds.
After each window it records the window's round trips/s and latencies, the server's RSS, and
the storage: on SQLite the database and ``-wal`` file sizes, on PostgreSQL the database size,
the size of the run's tables with their indexes and their dead rows (``n_dead_tup``). Every task
stays stored (no retention is configured), so the database grows with the tasks by design; what
must not grow without bound is the memory, the WAL and the dead rows. Results:
bench/results/soak-DB.md and .json.

PostgreSQL: the shared service runs with autovacuum off (``SHOW autovacuum``, recorded in the
results), so dead rows would grow whatever the server does. Standing in for autovacuum, which a
production PostgreSQL has on, the script runs ``VACUUM (VERBOSE, ANALYZE)`` on the run's tables
from a connection of its own, between windows (the load paused), every ``--vacuum-every``
seconds (default: every window; 0: never). Per window: the dead rows and sizes read before the
vacuum, the rows the vacuum removed and those it could not remove yet (dead but still visible to
an open transaction), and the vacuum's time. The server's settings are not changed.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import re
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
from bench.pgdb import fresh_database, setting, write_results  # noqa: E402
from bench.procs import ServerProcess, tree_cpu_ticks, tree_file_io, tree_rss_kb  # noqa: E402

RESULTS = BENCH / "results"  # the server's log goes to RESULTS / logs
LLAMON = str(Path(sys.executable).parent / "llamon-agent")
PORT = 9331
#: VACUUM VERBOSE's line per table (PostgreSQL 15-17): removed, remaining, not yet removable
_TUPLES = re.compile(r"tuples: (\d+) removed, (\d+) remain, (\d+) are dead but not yet removable")


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
    """The database's size, and its tables' (the server's: the database is the run's own)
    size with indexes and TOAST, live and dead rows (the statistics' counts)."""
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        rows = conn.execute(
            "SELECT n_live_tup, n_dead_tup, pg_total_relation_size(relid)"
            " FROM pg_stat_user_tables").fetchall()
    out: dict[str, float] = {"db_mb": (size[0] if size else 0) / 2**20}
    out["tables_mb"] = sum(r[2] for r in rows) / 2**20
    out["dead_rows"] = float(sum(r[1] for r in rows))
    out["live_rows"] = float(sum(r[0] for r in rows))
    return out


def vacuum(url: str) -> dict[str, float]:
    """``VACUUM (VERBOSE, ANALYZE)`` of every table of the run's database, from a connection of
    its own (autovacuum's stand-in): its time, and the rows it removed and could not remove
    yet, summed from its per-table report (NaN when this PostgreSQL words it otherwise)."""
    import psycopg
    from psycopg import sql

    reports: list[str] = []
    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        names = conn.execute("SELECT schemaname, relname FROM pg_stat_user_tables").fetchall()
        conn.add_notice_handler(lambda notice: reports.append(notice.message_primary or ""))
        t0 = time.perf_counter()
        if names:
            conn.execute(sql.SQL("VACUUM (VERBOSE, ANALYZE) {}").format(
                sql.SQL(", ").join(sql.Identifier(schema, name) for schema, name in names)))
        seconds = time.perf_counter() - t0
    counts = [tuple(int(x) for x in m.groups()) for r in reports for m in _TUPLES.finditer(r)]
    return {
        "vacuum_ms": seconds * 1e3,
        "vacuum_removed_rows": float(sum(c[0] for c in counts)) if counts else math.nan,
        "not_removable_rows": float(sum(c[2] for c in counts)) if counts else math.nan,
    }


async def soak(args: argparse.Namespace, target: Any) -> list[dict[str, Any]]:
    windows: list[dict[str, Any]] = []
    ticks = os.sysconf("SC_CLK_TCK")
    end = time.monotonic() + args.minutes * 60
    started = last_vacuum = time.monotonic()
    while time.monotonic() < end:
        cpu0, io0 = tree_cpu_ticks(args.pid), tree_file_io(args.pid)
        result = await hc.hitl_load(PORT, users=args.users, duration=args.window)
        cpu = (tree_cpu_ticks(args.pid) - cpu0) / ticks
        read, written = (b - a for a, b in zip(io0, tree_file_io(args.pid), strict=True))
        round_trips = max(1, result.round_trips)
        summary = result.summary()
        sizes = postgres_sizes(target) if args.db == "postgres" else sqlite_sizes(target)
        window = {
            "at_s": round(time.monotonic() - started),
            "round_trips_per_s": summary["round_trips_per_s"],
            "answer_p50_ms": summary["answer_p50_ms"],
            "answer_p99_ms": summary["answer_p99_ms"],
            "server_cpu_ms_per_rt": cpu * 1e3 / round_trips,
            "file_read_kb_per_rt": read / 1024 / round_trips,
            "file_written_kb_per_rt": written / 1024 / round_trips,
            "rss_mb": tree_rss_kb(args.pid) / 1024,
            "errors": summary["errors"],
            **sizes,
        }
        if args.db == "postgres":  # after the sizes: they are what the vacuum finds
            done = {"vacuum_ms": 0.0, "vacuum_removed_rows": 0.0, "not_removable_rows": 0.0}
            # since the end of the last vacuum: a window lasts at least --window seconds, so
            # the default (one window) vacuums after every window
            if args.vacuum_every and time.monotonic() - last_vacuum >= args.vacuum_every:
                done = vacuum(target)
                last_vacuum = time.monotonic()
            window.update(done)
        windows.append(window)
        print(" ".join(f"{k}={v:.1f}" if isinstance(v, float) else f"{k}={v}"
                       for k, v in window.items()), flush=True)
    return windows


def report(args: argparse.Namespace, windows: list[dict[str, Any]]) -> str:
    keys = [k for k in windows[0] if k != "errors"]
    lines = []
    if args.db == "postgres":
        every = (f"every {args.vacuum_every:g} s" if args.vacuum_every else "never (0)")
        lines += [f"PostgreSQL, a fresh database, `synchronous_commit={args.synchronous_commit}`; "
                  f"the cluster's autovacuum: {args.autovacuum}. **The vacuum is this script's "
                  "stand-in for autovacuum** (which a production PostgreSQL has on, and this "
                  "shared service has off): `VACUUM (VERBOSE, ANALYZE)` of the run's tables from "
                  f"a connection of its own, between windows with the load paused, {every}. "
                  "`dead_rows` (`n_dead_tup`) and `tables_mb` (tables with their indexes and "
                  "TOAST) are read before the vacuum; `vacuum_removed_rows` and "
                  "`not_removable_rows` are from the vacuum's own report; `vacuum_ms` is its "
                  "time (0: no vacuum after that window).", ""]
    lines += ["| " + " | ".join(keys) + " |", "|" + "---|" * len(keys)]
    for w in windows:
        lines.append("| " + " | ".join(f"{w[k]:.1f}" if isinstance(w[k], float) else str(w[k])
                                       for k in keys) + " |")
    half = len(windows) // 2
    first, second = windows[1:half] or windows[:1], windows[half:]

    def med(ws: list[dict[str, Any]], key: str) -> float:
        return statistics.median(w[key] for w in ws)

    lines += ["", "| between the first and second half (medians) | first | second |", "|---|---|---|"]
    storage_keys = (("wal_mb",) if args.db == "sqlite"
                    else ("dead_rows", "tables_mb", "vacuum_ms"))
    for key in ("rss_mb", "round_trips_per_s", "answer_p99_ms", *storage_keys):
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
    parser.add_argument("--vacuum-every", type=float, default=None, metavar="SECONDS",
                        help="PostgreSQL: VACUUM (ANALYZE) the run's tables between windows at "
                        "most this often, standing in for autovacuum (default: every window; "
                        "0: never)")
    args = parser.parse_args()
    if args.vacuum_every is not None and args.db != "postgres":
        parser.error("--vacuum-every applies to --db postgres")
    if args.vacuum_every is not None and args.vacuum_every < 0:
        parser.error("--vacuum-every: seconds, 0 or more")
    if args.vacuum_every is None and args.db == "postgres":
        args.vacuum_every = args.window
    with storage(args.db) as (db, target):
        if args.db == "postgres":  # what the results say the run had
            args.autovacuum = setting(target, "autovacuum")
            args.synchronous_commit = setting(target, "synchronous_commit")
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
