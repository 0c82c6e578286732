"""PostgreSQL for the benchmarks: a fresh database per run, and PostgreSQL's own CPU.

The PostgreSQL server at ``LLAMON_BENCH_POSTGRES_URL`` (default
``postgresql://postgres@127.0.0.1:5432/test``, the tests' server) is shared with other work, so a
run only ever touches the database it created: ``llamon_bench_<random>``, made from a connection
to the URL's database and dropped ``WITH (FORCE)`` at the end (also on an error or Ctrl-C). The
URL's own database (``test``) is only connected to, never changed.

PostgreSQL's CPU is read from ``/proc`` (same machine, readable by the user running the
benchmark): each connection is a backend process whose title names its database
(``postgres: 15/main: postgres llamon_bench_... 127.0.0.1(40000) idle``), so the backends of the
run's database are found without a query (which would cost PostgreSQL CPU itself). The cluster's
background processes (WAL writer, checkpointer, background writer, autovacuum launcher, ...) are
counted apart: they work for every database of the cluster.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from bench.procs import cpu_ticks

ADMIN_URL = os.environ.get("LLAMON_BENCH_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
#: process titles of the cluster's background processes (PostgreSQL 13-17)
_BACKGROUND = ("checkpointer", "background writer", "walwriter", "autovacuum launcher",
               "logical replication launcher", "stats collector", "archiver")


@dataclass(frozen=True)
class Database:
    name: str
    url: str  # for the servers: the admin URL with this database


def _with_database(url: str, name: str) -> str:
    return urlunsplit(urlsplit(url)._replace(path=f"/{name}"))


@contextlib.contextmanager
def fresh_database(synchronous_commit: str, admin_url: str = ADMIN_URL) -> Iterator[Database]:
    """A new empty database whose every connection has ``synchronous_commit`` set (``ALTER
    DATABASE ... SET``: the same for every client, whatever its URL), dropped at the end."""
    import psycopg

    name = f"llamon_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
        try:
            admin.execute(f'ALTER DATABASE "{name}" SET synchronous_commit = '
                          + {"on": "on", "off": "off", "local": "local"}[synchronous_commit])
            yield Database(name, _with_database(admin_url, name))
        finally:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def setting(url: str, name: str) -> str:
    """``SHOW name`` on a new connection to ``url`` (what the servers' connections get)."""
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        row = conn.execute(f"SHOW {name}").fetchone()
    return str(row[0]) if row else "?"


def database_bytes(url: str) -> int:
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        row = conn.execute("SELECT pg_database_size(current_database())").fetchone()
    return int(row[0]) if row else 0


def count_by_state(url: str) -> dict[str, int]:
    """Task rows by state in ``llamon_tasks`` (what the server stored)."""
    import psycopg

    with psycopg.connect(url, autocommit=True, connect_timeout=5) as conn:
        rows = conn.execute("SELECT state, COUNT(*) FROM llamon_tasks GROUP BY state").fetchall()
    return {str(state): int(count) for state, count in rows}


def _postgres_processes(database: str) -> tuple[list[int], list[int]]:
    """(backends of ``database``, the cluster's background processes), by process title."""
    backends, background = [], []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            title = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if not title.startswith("postgres: "):
            continue
        words = title.split()
        if database in words:  # "... <user> <database> <host(port)> <activity>"
            backends.append(int(entry.name))
        elif any(name in title for name in _BACKGROUND):
            background.append(int(entry.name))
    return backends, background


@dataclass
class _Seen:
    start: int  # ticks when first seen (0 for a process started during the measurement)
    last: int


@dataclass
class PostgresCpu:
    """PostgreSQL CPU over one measured run, sampled from a thread (every ``interval`` s, so a
    backend that ends between two samples loses at most that much of its time; the servers'
    pools keep their connections, so that is rare)."""

    database: str
    interval: float = 0.2
    _backends: dict[int, _Seen] = field(default_factory=dict)
    _background: dict[int, _Seen] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _sample(self, first: bool) -> None:
        backends, background = _postgres_processes(self.database)
        for pids, seen in ((backends, self._backends), (background, self._background)):
            for pid in pids:
                try:
                    ticks = cpu_ticks(pid)
                except OSError:
                    continue
                if pid in seen:
                    seen[pid].last = ticks
                else:
                    seen[pid] = _Seen(ticks if first else 0, ticks)

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample(first=False)

    def __enter__(self) -> PostgresCpu:
        self._sample(first=True)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self._sample(first=False)

    @property
    def backend_ticks(self) -> int:
        return sum(s.last - s.start for s in self._backends.values())

    @property
    def background_ticks(self) -> int:
        return sum(s.last - s.start for s in self._background.values())

    @property
    def backends(self) -> int:
        return len(self._backends)


def write_results(name: str, title: str, text: str, data: dict[str, Any]) -> None:
    """Print the table and write it (``bench/results/NAME.md``) with the raw numbers (``.json``)."""
    results = Path(__file__).resolve().parent / "results"
    print()
    print(text)
    results.mkdir(exist_ok=True)
    (results / f"{name}.md").write_text(f"# {title}\n\n{text}")
    (results / f"{name}.json").write_text(json.dumps(data, indent=1, default=str))
    print(f"written to bench/results/{name}.md and .json ({data['seconds']:.0f} s)")


def stop_on_sigterm() -> None:
    """SIGTERM stops a run as Ctrl-C does: its servers stop and its database is dropped."""
    def interrupt(_signum: int, _frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, interrupt)
