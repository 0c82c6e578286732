"""The benchmark: every server on the same work, in one run, one table.

    .venv/bin/python bench/run.py [--quick] [--db sqlite|postgres]

Creates the official SDK's virtual environment (bench/.venvs/a2a-sdk) when it is missing, then,
for each repetition (server order rotated each time), starts each server on its own port pinned
to core 0 (``taskset``), waits for its agent card, runs the scenarios with the load generator on
core 1, stops it by its PID. Then the memory scenario and LangGraph alone. Prints the medians and
the ratios the targets of issue 3 name; writes them to bench/results/latest.md (raw numbers in
latest.json, server logs in results/logs/). Only 127.0.0.1 is ever contacted; every request
loop is bounded in count and time.

``--db postgres``: ours and sdk-langgraph each run on a freshly created PostgreSQL database
(bench/pgdb.py, dropped at the end; ``synchronous_commit=on``), ours through ``--db
postgresql://...``, the SDK on LangGraph's ``AsyncPostgresSaver``; the CPU per request and per
HITL round trip adds the CPU of PostgreSQL's backends of that server's database, and LangGraph
alone runs its ``postgres`` variant (its own backends counted too) as the CPU target's
denominator. Results: bench/results/latest-postgres.md and .json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import json
import math
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from bench import hitl_client as hc  # noqa: E402
from bench.open_loop import open_loop  # noqa: E402
from bench.procs import (  # noqa: E402
    core_busy_ticks,
    cpu_ticks,
    log_summary,
    pinned,
    proc_status,
    wait_for_card,
)

if TYPE_CHECKING:  # bench/pgdb.py is imported only by --db postgres (compare.py's old checkouts)
    from bench.pgdb import PostgresCpu

RESULTS = BENCH / "results"
SDK_VENV = BENCH / ".venvs" / "a2a-sdk"
SDK_PACKAGES = [
    "a2a-sdk[http-server]==0.3.26",
    "langgraph",
    "langgraph-checkpoint-sqlite",
    "aiosqlite",
    # uvicorn picks httptools when it is installed, as ours serves since round thirteen: both
    # sides parse HTTP with the same C parser, so the parser is no part of a ratio
    "uvicorn",
    "httptools",
]
SERVER_CORE, LOAD_CORE = 0, 1
CLK_TCK = os.sysconf("SC_CLK_TCK")
WRK_INSTALL = "apt-get update && apt-get install -y wrk"
# Users filling the memory scenario: what is measured is memory per waiting task, not
# concurrency, and a server that fails under concurrent load must still give its memory figure.
MEMORY_USERS = 2


@dataclass(frozen=True)
class Spec:
    key: str
    label: str
    module: str
    sdk_venv: bool
    port: int
    db: bool = False
    args: tuple[str, ...] = ()
    hitl: bool = True  # serves the hitl agent and message/stream
    task_id: bool = False  # answers must carry the taskId (the SDK does not resume by contextId)

    def python(self) -> str:
        return str(SDK_VENV / "bin" / "python") if self.sdk_venv else sys.executable


OURS, SDK_LG, SDK_HW, BARE = "ours", "sdk-langgraph", "sdk-handwritten", "bare"
SPECS = [
    Spec(OURS, "llamon-agent (SQLite)", "bench.servers.llamon", False, 9301, db=True),
    # equal durability: the peer's saver at our SQLite settings (WAL, synchronous=NORMAL)
    Spec(SDK_LG, "a2a-sdk + same LangGraph graph (AsyncSqliteSaver, WAL, NORMAL, exit)",
         "bench.servers.a2a_sdk_langgraph", True, 9302, db=True,
         args=("--durability", "exit", "--synchronous", "normal"), task_id=True),
    Spec(SDK_HW, "a2a-sdk hand-written (in memory)", "bench.servers.a2a_sdk_handwritten",
         True, 9303, task_id=True),
    Spec(BARE, "bare Starlette echo", "bench.servers.bare_echo", False, 9304, hitl=False),
]
#: ``--db postgres``: the servers with a database, each on a fresh PostgreSQL database at
#: equal durability (synchronous_commit for every connection of it: a commit returns once its
#: WAL is flushed, on both sides); the rest as on SQLite
SYNCHRONOUS_COMMIT = "on"
_POSTGRES_SPECS = {
    OURS: dataclasses.replace(SPECS[0], label="llamon-agent (PostgreSQL)"),
    SDK_LG: dataclasses.replace(
        SPECS[1], label="a2a-sdk + same LangGraph graph (AsyncPostgresSaver, exit)",
        args=("--durability", "exit")),
}


def specs_for(db: str) -> list[Spec]:
    if db == "sqlite":
        return SPECS
    return [_POSTGRES_SPECS.get(spec.key, spec) for spec in SPECS]


@dataclass
class Settings:
    reps: int
    warmup: float
    duration: float
    streams: int
    memory_counts: tuple[int, ...]
    memory_servers: tuple[str, ...]
    fill_time_limit: float
    resume_samples: int
    alone_seconds: float
    servers: tuple[str, ...]
    db: str = "sqlite"


# --- processes and /proc --------------------------------------------------------------------


def rss_kb(pid: int) -> int:
    return proc_status(pid, "VmRSS")


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


class Server:
    """One server process, pinned to the server core; stopped by its PID. ``root``: the tree
    it runs in (its working directory, so ``python -m`` imports that tree's packages first;
    bench/ab.py passes another checkout)."""

    def __init__(self, spec: Spec, tag: str, db: str = "sqlite", root: Path = ROOT) -> None:
        self.spec = spec
        self.tag = tag
        self.root = root
        self.postgres = db == "postgres"
        self.log_path = RESULTS / "logs" / f"{spec.key}-{tag}.log"
        self.db_path = RESULTS / "db" / f"{spec.key}-{tag}.sqlite3"
        self.proc: subprocess.Popen[bytes] | None = None
        #: ``--db postgres``: the name of this server's database, and what it reported
        self.database: str | None = None
        self.facts: dict[str, str] = {}
        self._databases = contextlib.ExitStack()  # drops the database when the server stops

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 90.0) -> None:
        if port_open(self.spec.port):
            raise SystemExit(f"port {self.spec.port} is already in use; stop what listens there")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        argv = [self.spec.python(), "-m", self.spec.module, "--port", str(self.spec.port),
                *self.spec.args]
        try:
            if self.spec.db:
                argv += ["--db", self._open_database()]
            with self.log_path.open("wb") as log:
                self.proc = subprocess.Popen(pinned(SERVER_CORE, argv), cwd=self.root,
                                             stdout=log, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL)
            if wait_for_card(self.proc, self.spec.port, self.log_path, self.spec.key, timeout):
                return
        except BaseException:  # a server that died at start: its database is dropped too
            self.stop()
            raise
        self.stop()
        raise SystemExit(f"{self.spec.key} did not serve its agent card within {timeout:.0f} s")

    def _open_database(self) -> str:
        """The ``--db`` value: an emptied SQLite file, or a freshly created PostgreSQL database
        (dropped by :meth:`stop`) whose ``synchronous_commit`` is read back as the servers get it."""
        if not self.postgres:
            self.db_path.parent.mkdir(parents=True, exist_ok=True)
            for old in self.db_path.parent.glob(self.db_path.name + "*"):
                old.unlink()
            return str(self.db_path)
        from bench.pgdb import fresh_database, setting

        database = self._databases.enter_context(fresh_database(SYNCHRONOUS_COMMIT))
        self.database = database.name
        self.facts = {"database": database.name,
                      "synchronous_commit": setting(database.url, "synchronous_commit")}
        return database.url

    def stop(self) -> None:
        try:
            if self.proc is not None and self.proc.poll() is None:
                os.kill(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    os.kill(self.proc.pid, signal.SIGKILL)
                    self.proc.wait(timeout=5)
        finally:
            self._databases.close()
            for path in self.db_path.parent.glob(self.db_path.name + "*"):
                path.unlink()

    def stalls(self) -> dict[str, Any] | None:
        """What bench/stalls.py printed at shutdown (``--trace-stalls``), if anything."""
        for line in self.log_path.read_text(errors="replace").splitlines():
            if line.startswith("STALLS "):
                found: dict[str, Any] = json.loads(line.removeprefix("STALLS "))
                return found
        return None

    def log_summary(self) -> dict[str, Any]:
        """Tracebacks in the server's log, and its most frequent message and exception lines."""
        return log_summary(self.log_path, ROOT)


# --- scenarios ------------------------------------------------------------------------------


class Meter:
    """Server CPU and foreign load on the server's core over one measured run; on PostgreSQL
    also the CPU of the backends of the server's database and of the cluster's background
    processes (bench/pgdb.py ``PostgresCpu``, sampled from a thread of this process)."""

    def __init__(self, server: Server) -> None:
        self.pid = server.pid
        self.pg: PostgresCpu | None = None
        if server.database is not None:
            from bench.pgdb import PostgresCpu

            self.pg = PostgresCpu(server.database).__enter__()
        self.t0 = time.monotonic()
        self.cpu0 = cpu_ticks(self.pid)
        self.core0 = core_busy_ticks(SERVER_CORE)
        self.pg_backend_s = self.pg_background_s = 0.0

    def done(self) -> tuple[float, float]:
        """(server CPU seconds, percent of the server core used by other processes: on
        PostgreSQL that includes its processes when they ran on the server's core, as they are
        not pinned). Sets ``pg_backend_s`` and ``pg_background_s`` on PostgreSQL."""
        cpu = cpu_ticks(self.pid) - self.cpu0
        other = core_busy_ticks(SERVER_CORE) - self.core0 - cpu
        elapsed = time.monotonic() - self.t0
        if self.pg is not None:
            self.pg.__exit__(None, None, None)
            self.pg_backend_s = self.pg.backend_ticks / CLK_TCK
            self.pg_background_s = self.pg.background_ticks / CLK_TCK
        return cpu / CLK_TCK, max(0.0, other / CLK_TCK / elapsed * 100)

    def cpu_ms(self, server_s: float, count: int) -> dict[str, float]:
        """CPU per request or round trip: ``cpu_ms`` is the server's plus, on PostgreSQL, its
        database's backends' (the cluster's background processes work for every database, so
        they are apart, with the two parts)."""
        def per(seconds: float) -> float:
            return seconds * 1e3 / count if count else math.nan

        out = {"cpu_ms": per(server_s + self.pg_backend_s)}
        if self.pg is not None:
            out.update(server_cpu_ms=per(server_s), pg_backend_cpu_ms=per(self.pg_backend_s),
                       pg_background_cpu_ms=per(self.pg_background_s),
                       pg_backends=float(self.pg.backends))
        return out


def wrk(port: int, seconds: float, connections: int = 32) -> dict[str, Any]:
    argv = ["wrk", "-t1", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency", "--timeout", "10s",
            "-s", str(BENCH / "wrk" / "send.lua"), f"http://127.0.0.1:{port}/"]
    out = subprocess.run(pinned(LOAD_CORE, argv), capture_output=True, text=True,
                         timeout=seconds + 60, check=False)
    for line in out.stdout.splitlines():
        if line.startswith("BENCH_JSON "):
            result: dict[str, Any] = json.loads(line.removeprefix("BENCH_JSON "))
            return result
    raise RuntimeError(f"wrk printed no result: {out.stdout[-2000:]} {out.stderr[-2000:]}")


def instant(server: Server, s: Settings, connections: int = 32) -> dict[str, Any]:
    wrk(server.spec.port, s.warmup, connections)
    meter = Meter(server)
    w = wrk(server.spec.port, s.duration, connections)
    cpu, other = meter.done()
    seconds = w["duration_us"] / 1e6
    return {
        "req_s": w["completed"] / seconds,
        "p50_ms": w["p50_us"] / 1e3,
        "p99_ms": w["p99_us"] / 1e3,
        **meter.cpu_ms(cpu, w["completed"]),
        "errors": w["errors"] + w["socket_errors"],
        "first_error": w["first_error"],
        "other_load_pct": other,
    }


def hitl(server: Server, s: Settings, users: int = 16) -> dict[str, Any]:
    port, task_id = server.spec.port, server.spec.task_id
    asyncio.run(hc.hitl_load(port, duration=s.warmup, with_task_id=task_id, users=users))
    meter = Meter(server)
    result = asyncio.run(hc.hitl_load(port, duration=s.duration, with_task_id=task_id,
                                      users=users))
    cpu, other = meter.done()
    summary = result.summary()
    summary.update(meter.cpu_ms(cpu, result.round_trips))
    summary["other_load_pct"] = other
    return summary


def stream(server: Server, s: Settings) -> dict[str, Any]:
    asyncio.run(hc.stream_probe(server.spec.port, 20))  # warm-up
    return asyncio.run(hc.stream_probe(server.spec.port, s.streams)).summary()


def run_server(spec: Spec, rep: int, s: Settings) -> dict[str, Any]:
    server = Server(spec, f"rep{rep}", s.db)
    server.start()
    out: dict[str, Any] = {"rss_start_mb": rss_kb(server.pid) / 1024, **server.facts}
    try:
        if spec.hitl:  # on an idle, fresh server first
            out["stream"] = stream(server, s)
        # the matrix of issue 14: instant sends at 16 and 32 connections, HITL round trips
        # at 16 and 32 users
        out["instant16"] = instant(server, s, 16)
        out["instant"] = instant(server, s, 32)
        if spec.hitl:
            out["hitl"] = hitl(server, s, 16)
            out["hitl32"] = hitl(server, s, 32)
        out["rss_end_mb"] = rss_kb(server.pid) / 1024
    finally:
        server.stop()
        out["log"] = server.log_summary()
        stalls = server.stalls()
        if stalls is not None:
            out["stalls"] = stalls
    return out


OPEN_LOOP_LOADS = (0.5, 0.8)


def open_loop_runs(spec: Spec, peaks: dict[str, float], samples: int,
                   db: str, loads: tuple[float, ...] = OPEN_LOOP_LOADS,
                   rep: int = 0) -> list[dict[str, Any]]:
    """On a fresh server: instant sends, then HITL round trips, each at ``loads`` (default 50%
    and 80%) of our own closed-loop peak (``peaks``: instant req/s, HITL round trips/s),
    ``samples`` arrivals per point (bench/open_loop.py)."""
    server = Server(spec, f"open-loop-{rep}", db)
    server.start()
    out: list[dict[str, Any]] = []
    try:
        for kind in ("instant", "hitl"):
            for load in loads:
                rate = peaks[kind] * load
                print(f"  open loop {spec.key} {kind} at {rate:.0f}/s ({load:.0%} of ours) ...",
                      flush=True)
                meter = Meter(server)
                result = asyncio.run(open_loop(spec.port, kind=kind, rate=rate, samples=samples,
                                               with_task_id=spec.task_id))
                cpu, other = meter.done()
                summary = result.summary()
                summary.update(load=load, cpu_s=cpu + meter.pg_backend_s, other_load_pct=other,
                               rep=rep)
                if meter.pg is not None:
                    summary.update(server_cpu_s=cpu, pg_backend_cpu_s=meter.pg_backend_s)
                out.append(summary)
    finally:
        server.stop()
    return out


def memory(spec: Spec, s: Settings) -> dict[str, Any]:
    """RSS with many tasks waiting for input; resume latency with few and with many waiting."""
    server = Server(spec, "memory", s.db)
    server.start()
    port, out = spec.port, dict[str, Any]()
    waiting = hc.Waiting()
    try:
        asyncio.run(hc.hitl_load(port, duration=2.0, with_task_id=spec.task_id))  # warm-up
        out["rss_0_kb"] = rss0 = prev_rss = rss_kb(server.pid)
        prev_n = 0
        for count in s.memory_counts:
            t0 = time.monotonic()
            asyncio.run(hc.fill_waiting(port, count, waiting, users=MEMORY_USERS,
                                        time_limit=s.fill_time_limit))
            n = len(waiting.tasks)
            rss = rss_kb(server.pid)
            out[f"fill_{count}"] = {
                "waiting": n, "seconds": time.monotonic() - t0, "rss_kb": rss,
                "kb_per_task": (rss - rss0) / n if n else math.nan,
                "kb_per_added_task": (rss - prev_rss) / (n - prev_n) if n > prev_n else math.nan,
            }
            if count in (s.memory_counts[0], s.memory_counts[-1]):
                lat, errors = asyncio.run(
                    hc.resume_latency(port, waiting, s.resume_samples, with_task_id=spec.task_id))
                out[f"resume_{count}"] = {"p50_ms": hc.percentile(lat, 50), "samples": len(lat),
                                          "errors": errors.count, "error_samples": errors.samples}
            prev_rss, prev_n = rss_kb(server.pid), len(waiting.tasks)
        out["fill_errors"] = waiting.errors.count
        out["fill_error_samples"] = waiting.errors.samples
    finally:
        server.stop()
        out["log"] = server.log_summary()
    return out


#: LangGraph alone's checkpointers for each --db (bench/langgraph_alone.py --checkpointers)
ALONE_CHECKPOINTERS = {"sqlite": "memory,sqlite,sqlite-llamon", "postgres": "postgres"}


def langgraph_alone(seconds: float, db: str) -> tuple[dict[str, float], dict[str, str]]:
    """CPU ms per round trip of each variant, and the errors of variants that failed."""
    argv = [sys.executable, str(BENCH / "langgraph_alone.py"), "--json", "--seconds", str(seconds),
            "--checkpointers", ALONE_CHECKPOINTERS[db]]
    out = subprocess.run(pinned(SERVER_CORE, argv), capture_output=True, text=True, cwd=ROOT,
                         timeout=seconds * 10 + 300, check=True)
    rows = json.loads(out.stdout)
    return ({r["variant"]: r["cpu_ms_per_round_trip"] for r in rows},
            {r["variant"]: r["error"] for r in rows if r.get("error")})


# --- setup ------------------------------------------------------------------------------------


def ensure_sdk_venv() -> None:
    python = SDK_VENV / "bin" / "python"
    check = [str(python), "-c", "import importlib.metadata as m; print(m.version('a2a-sdk'), "
             "m.version('httptools'))"]
    if python.exists():
        done = subprocess.run(check, capture_output=True, text=True, check=False)
        if done.returncode == 0 and done.stdout.split()[0] == "0.3.26":
            return
        print(f"installing {' '.join(SDK_PACKAGES)} into {SDK_VENV.relative_to(ROOT)} ...",
              flush=True)
    else:
        print(f"creating {SDK_VENV.relative_to(ROOT)} with {' '.join(SDK_PACKAGES)} ...",
              flush=True)
        subprocess.run([sys.executable, "-m", "venv", str(SDK_VENV)], check=True)
    subprocess.run([str(python), "-m", "pip", "install", "-q", *SDK_PACKAGES], check=True)


def machine() -> dict[str, str]:
    model = "unknown"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    sdk_python = SDK_VENV / "bin" / "python"
    sdk = subprocess.run(
        [str(sdk_python), "-c",
         "import importlib.metadata as m; print(m.version('a2a-sdk'), m.version('langgraph'), "
         "m.version('httptools'))"],
        capture_output=True, text=True, check=False).stdout.split() if sdk_python.exists() else []
    import importlib.metadata as md

    return {
        "nproc": str(os.cpu_count()),
        "cpu": model,
        "python": platform.python_version(),
        "kernel": platform.release(),
        "langgraph": md.version("langgraph"),
        "a2a-sdk (SDK venv)": sdk[0] if sdk else "?",
        "langgraph (SDK venv)": sdk[1] if len(sdk) > 1 else "?",
        "httptools (SDK venv)": sdk[2] if len(sdk) > 2 else "none",
        "uvicorn": md.version("uvicorn"),
        "httptools": md.version("httptools"),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }


# --- report -----------------------------------------------------------------------------------


def med(values: list[Any]) -> float:
    clean = [float(v) for v in values if isinstance(v, (int, float)) and not math.isnan(v)]
    return statistics.median(clean) if clean else math.nan


def fmt(v: float, digits: int = 1) -> str:
    return "-" if math.isnan(v) else f"{v:,.{digits}f}"


def with_spread(values: list[Any], digits: int) -> str:
    """The median, and the lowest and highest repetition when there are several."""
    clean = [float(v) for v in values if isinstance(v, (int, float)) and not math.isnan(v)]
    if len(clean) < 2:
        return fmt(med(values), digits)
    return f"{fmt(med(values), digits)} ({fmt(min(clean), digits)} to {fmt(max(clean), digits)})"


def pick(runs: list[dict[str, Any]], *path: str) -> list[Any]:
    out = []
    for run in runs:
        v: Any = run
        for key in path:
            v = v.get(key) if isinstance(v, dict) else None
        out.append(v)
    return out


ALONE_KEY = "native / sqlite-llamon / durability=exit"
#: the CPU target's denominator for each --db: LangGraph alone on the checkpointer ours uses
ALONE_KEYS = {"sqlite": ALONE_KEY, "postgres": "native / postgres / durability=exit"}

ROWS: list[tuple[str, tuple[str, ...], int]] = [
    ("`message/send` instant, req/s (16 connections)", ("instant16", "req_s"), 0),
    ("instant (16) p50 / ms", ("instant16", "p50_ms"), 1),
    ("instant (16) p99 / ms", ("instant16", "p99_ms"), 1),
    ("`message/send` instant, req/s (32 connections)", ("instant", "req_s"), 0),
    ("instant p50 / ms", ("instant", "p50_ms"), 1),
    ("instant p99 / ms", ("instant", "p99_ms"), 1),
    ("server CPU per instant request / ms", ("instant", "cpu_ms"), 2),
    ("instant errors (per run)", ("instant", "errors"), 0),
    ("HITL round trips/s (16 users)", ("hitl", "round_trips_per_s"), 0),
    ("HITL ask (send -> input-required) p50 / ms", ("hitl", "ask_p50_ms"), 1),
    ("HITL ask p99 / ms", ("hitl", "ask_p99_ms"), 1),
    ("HITL answer (-> completed) p50 / ms", ("hitl", "answer_p50_ms"), 1),
    ("HITL answer p99 / ms", ("hitl", "answer_p99_ms"), 1),
    ("server CPU per HITL round trip / ms", ("hitl", "cpu_ms"), 2),
    ("HITL errors (per run)", ("hitl", "errors"), 0),
    ("HITL round trips/s (32 users)", ("hitl32", "round_trips_per_s"), 0),
    ("HITL (32) ask p50 / ms", ("hitl32", "ask_p50_ms"), 1),
    ("HITL (32) ask p99 / ms", ("hitl32", "ask_p99_ms"), 1),
    ("HITL (32) answer p50 / ms", ("hitl32", "answer_p50_ms"), 1),
    ("HITL (32) answer p99 / ms", ("hitl32", "answer_p99_ms"), 1),
    ("server CPU per HITL round trip (32) / ms", ("hitl32", "cpu_ms"), 2),
    ("HITL (32) errors (per run)", ("hitl32", "errors"), 0),
    ("`message/stream` first event p50 / ms (idle)", ("stream", "first_p50_ms"), 2),
    ("`message/stream` final event p50 / ms (idle)", ("stream", "final_p50_ms"), 2),
    ("stream errors (per run)", ("stream", "errors"), 0),
    ("RSS after the runs / MB", ("rss_end_mb",), 0),
    ("server log tracebacks (per run)", ("log", "tracebacks"), 0),
    ("other processes on the server core / % (instant, HITL)", ("instant", "other_load_pct"), 0),
]


_PG_CPU_TITLES = {
    ("instant", "cpu_ms"): "CPU per instant request (32), server + its database's PostgreSQL "
                           "backends / ms",
    ("hitl", "cpu_ms"): "CPU per HITL round trip, server + its database's PostgreSQL backends / ms",
    ("hitl32", "cpu_ms"): "CPU per HITL round trip (32), server + its database's PostgreSQL "
                          "backends / ms",
}


def rows_for(db: str) -> list[tuple[str, tuple[str, ...], int]]:
    """The table's rows; on PostgreSQL each CPU row is server + backends, with its parts and the
    cluster's background processes (not in the sum: they work for every database) below it."""
    if db == "sqlite":
        return ROWS
    out: list[tuple[str, tuple[str, ...], int]] = []
    for title, path, digits in ROWS:
        if path not in _PG_CPU_TITLES:
            out.append((title, path, digits))
            continue
        scenario = path[0]
        out += [(_PG_CPU_TITLES[path], path, digits),
                ("... of which the server process / ms", (scenario, "server_cpu_ms"), 2),
                ("... of which PostgreSQL's backends of its database / ms",
                 (scenario, "pg_backend_cpu_ms"), 2),
                ("PostgreSQL's background processes (whole cluster, not in the sum) / ms",
                 (scenario, "pg_background_cpu_ms"), 2)]
    out.append(("PostgreSQL backends of its database (HITL, 16 users)", ("hitl", "pg_backends"), 0))
    return out


def storage_note(data: dict[str, Any], s: Settings) -> list[str]:
    """What the servers stored in, and at which durability (read back from each database)."""
    if s.db == "sqlite":
        return []
    commits = sorted({str(run.get("synchronous_commit")) for runs in data["runs"].values()
                      for run in runs if run.get("database")})
    return [f"Storage: PostgreSQL, a freshly created database per server run (dropped after it), "
            f"`synchronous_commit={SYNCHRONOUS_COMMIT}` for every connection (ALTER DATABASE; "
            f"read back: {', '.join(commits) or '-'}), the cluster's fsync "
            f"{data['machine'].get('fsync', '?')}. PostgreSQL's processes are not pinned: "
            "'other processes on the server core' includes them when they ran there. "
            "LangGraph alone: the process's CPU plus its database's PostgreSQL backends'.", ""]


#: the cells whose tail issue 14 bounds: (name, scenario, latency prefix)
TAIL_CELLS = [
    ("instant (16 connections)", "instant16", ""),
    ("instant (32 connections)", "instant", ""),
    ("HITL ask (16 users)", "hitl", "ask_"),
    ("HITL answer (16 users)", "hitl", "answer_"),
    ("HITL ask (32 users)", "hitl32", "ask_"),
    ("HITL answer (32 users)", "hitl32", "answer_"),
]


def ratio(a: Any, b: Any) -> float:
    if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or not b:
        return math.nan
    return float(a) / float(b)


def report(data: dict[str, Any], s: Settings) -> str:
    runs: dict[str, list[dict[str, Any]]] = data["runs"]
    specs = specs_for(s.db)
    keys = [spec.key for spec in specs if spec.key in runs]
    labels = {spec.key: spec.label for spec in specs}
    alone_key = ALONE_KEYS[s.db]
    out = [f"Machine: {', '.join(f'{k} {v}' for k, v in data['machine'].items())}.",
           f"Settings: {s.reps} repetition(s), {s.warmup:g} s warm-up + {s.duration:g} s per run, "
           f"{s.streams} streams, medians over repetitions (lowest to highest in brackets).", "",
           *storage_note(data, s)]
    out.append("| what | " + " | ".join(labels[k] for k in keys) + " |")
    out.append("|---|" + "---:|" * len(keys))
    for title, path, digits in rows_for(s.db):
        cells = []
        for k in keys:
            if path == ("instant", "other_load_pct"):
                a, b = med(pick(runs[k], *path)), med(pick(runs[k], "hitl", "other_load_pct"))
                cells.append(f"{fmt(a, 0)}, {fmt(b, 0)}")
            else:
                cells.append(with_spread(pick(runs[k], *path), digits))
        out.append(f"| {title} | " + " | ".join(cells) + " |")
    alone: list[dict[str, float]] = data["langgraph_alone"]
    mem: dict[str, Any] = data.get("memory", {})
    for title, field_path, digits in [
        ("RSS at start (warm) / MB", ("rss_0_kb",), 1),
        *[(f"RSS with {c:,} tasks waiting / MB", (f"fill_{c}", "rss_kb"), 1) for c in s.memory_counts],
        *[(f"RSS per waiting task at {c:,} (growth from warm start / tasks) / KB",
           (f"fill_{c}", "kb_per_task"), 2) for c in s.memory_counts],
        *[(f"RSS growth per task added in the step to {c:,} / KB",
           (f"fill_{c}", "kb_per_added_task"), 2) for c in s.memory_counts[1:]],
        *[(f"resume latency p50 with {c:,} waiting / ms", (f"resume_{c}", "p50_ms"), 1)
          for c in (s.memory_counts[0], s.memory_counts[-1])],
    ]:
        cells = []
        for k in keys:
            v = pick([mem[k]], *field_path)[0] if k in mem else None
            scale = 1 / 1024 if field_path[-1] in ("rss_0_kb", "rss_kb") else 1
            cells.append(fmt(v * scale, digits) if isinstance(v, (int, float)) else "-")
        out.append(f"| {title} | " + " | ".join(cells) + " |")

    def per_rep(fn: Any) -> float:
        return med([fn(i) for i in range(s.reps)])

    def rep_value(key: str, i: int, *path: str) -> Any:
        reps = runs.get(key, [])
        return pick([reps[i]], *path)[0] if i < len(reps) else None

    ours_mem, hi, lo = mem.get(OURS, {}), s.memory_counts[-1], s.memory_counts[0]
    targets = [
        *[(f"{name} p99 / p50, ours (tail)", "<= 2.5",
           per_rep(lambda i, scenario=scenario, step=step: ratio(
               rep_value(OURS, i, scenario, f"{step}p99_ms"),
               rep_value(OURS, i, scenario, f"{step}p50_ms"))), 2)
          for name, scenario, step in TAIL_CELLS],
        *[(f"HITL answer p99 ({users} users), ours / SDK + same graph", "<= 1",
           per_rep(lambda i, scenario=scenario: ratio(
               rep_value(OURS, i, scenario, "answer_p99_ms"),
               rep_value(SDK_LG, i, scenario, "answer_p99_ms"))), 2)
          for users, scenario in ((16, "hitl"), (32, "hitl32"))],
        ("HITL round trips/s (32 users), ours / SDK + same graph", ">= 1.5",
         per_rep(lambda i: ratio(rep_value(OURS, i, "hitl32", "round_trips_per_s"),
                                 rep_value(SDK_LG, i, "hitl32", "round_trips_per_s"))), 2),
        ("instant sends/s (16 connections), ours / SDK + same graph", ">= 1.5",
         per_rep(lambda i: ratio(rep_value(OURS, i, "instant16", "req_s"),
                                 rep_value(SDK_LG, i, "instant16", "req_s"))), 2),
        ("HITL round trips/s, ours / SDK + same graph", ">= 1.5",
         per_rep(lambda i: ratio(rep_value(OURS, i, "hitl", "round_trips_per_s"),
                                 rep_value(SDK_LG, i, "hitl", "round_trips_per_s"))), 2),
        ("instant sends/s, ours / SDK + same graph", ">= 1.5",
         per_rep(lambda i: ratio(rep_value(OURS, i, "instant", "req_s"),
                                 rep_value(SDK_LG, i, "instant", "req_s"))), 2),
        ("instant p99, ours / SDK hand-written", "<= 0.25",
         per_rep(lambda i: ratio(rep_value(OURS, i, "instant", "p99_ms"),
                                 rep_value(SDK_HW, i, "instant", "p99_ms"))), 2),
        (f"CPU per HITL round trip, ours / LangGraph alone ({alone_key}"
         + ("; same checkpointer, PostgreSQL's backends' CPU on both sides)"
            if s.db == "postgres" else ")"),
         "<= 1.3",
         per_rep(lambda i: ratio(rep_value(OURS, i, "hitl", "cpu_ms"),
                                 alone[i].get(alone_key) if i < len(alone) else None)), 2),
        ("`message/stream` first event p50 on an idle server, ours / ms", "<= 5",
         med(pick(runs.get(OURS, []), "stream", "first_p50_ms")), 2),
        (f"RSS per waiting task at {hi:,}, ours / KB", "< 0.5",
         pick([ours_mem], f"fill_{hi}", "kb_per_task")[0] if ours_mem else math.nan, 2),
        (f"resume latency p50, {hi:,} / {lo:,} waiting, ours", "<= 1.3",
         ratio(pick([ours_mem], f"resume_{hi}", "p50_ms")[0],
               pick([ours_mem], f"resume_{lo}", "p50_ms")[0]) if ours_mem else math.nan, 2),
    ]
    out += ["", "| target (issues 3 and 14) | measured | goal |", "|---|---:|---|"]
    for title, goal, value, digits in targets:
        out.append(f"| {title} | {fmt(value if isinstance(value, float) else math.nan, digits)} | {goal} |")
    if alone:
        pg = ", plus its database's PostgreSQL backends'" if s.db == "postgres" else ""
        out += ["", "LangGraph alone, in process (bench/langgraph_alone.py), median CPU per "
                f"interrupt + resume round trip{pg}:", "", "| variant | CPU ms |", "|---|---:|"]
        for variant in alone[0]:
            out.append(f"| {variant} | {fmt(med([a.get(variant) for a in alone]), 2)} |")
    out += open_loop_report(data)
    problems = []
    for k in keys:
        for i, run in enumerate(runs[k]):
            for scenario in ("instant", "hitl", "stream"):
                sc = run.get(scenario) or {}
                samples = sc.get("error_samples") or ([sc["first_error"]] if sc.get("first_error") else [])
                if sc.get("errors"):
                    problems.append(f"- {k} rep {i}: {scenario}: {sc['errors']} errors, e.g. {samples[:2]}")
            log = run.get("log", {})
            if log.get("tracebacks"):
                problems.append(f"- {k} rep {i}: {log['tracebacks']} tracebacks in {log['log']}; "
                                f"most frequent lines: {log['top_lines'][:4]}")
    for k, m in mem.items():
        if m.get("fill_errors") or m.get("log", {}).get("tracebacks"):
            problems.append(f"- {k} memory: {m.get('fill_errors')} fill errors {m.get('fill_error_samples', [])[:2]}; "
                            f"{m['log']['tracebacks']} tracebacks, lines {m['log']['top_lines'][:4]}")
    for variant, error in data.get("langgraph_alone_errors", {}).items():
        problems.append(f"- LangGraph alone {variant}: {error}")
    if problems:
        out += ["", "Errors seen in this run:", "", *problems]
    return "\n".join(out) + "\n"


def open_loop_report(data: dict[str, Any]) -> list[str]:
    """Per server, kind and load: the median over repetitions, with the lowest and highest."""
    runs: dict[str, list[dict[str, Any]]] = data.get("open_loop") or {}
    if not runs:
        return []
    peaks = data["open_loop_peaks"]
    reps = max(len({p.get("rep", 0) for p in points}) for points in runs.values())
    source = ("given (--open-loop-peaks, an earlier run of the same code)"
              if data.get("open_loop_peaks_given") else "this run's medians")
    out = ["", f"Open loop (bench/open_loop.py; {reps} interleaved repetition(s) per point, the "
           f"median with the lowest and highest; latency from each arrival's scheduled time): "
           f"our closed-loop peaks, {source}: {peaks['instant']:.0f} instant req/s, "
           f"{peaks['hitl']:.0f} HITL round trips/s.", "",
           "| server | load | rate /s | achieved /s | samples | what | p50 ms | p99 ms | p99.9 ms "
           "| errors, unfinished (sum) |", "|---|---:|---:|---:|---:|---|---:|---:|---:|---:|"]
    for key, points in runs.items():
        groups: dict[tuple[str, float], list[dict[str, Any]]] = {}
        for point in points:
            groups.setdefault((point["kind"], point["load"]), []).append(point)
        for (kind, load), group in groups.items():
            names = ("send",) if kind == "instant" else ("ask", "answer", "round_trip")
            for name in names:
                def col(field: str, digits: int = 1, group: list[dict[str, Any]] = group) -> str:
                    return with_spread([p[field] for p in group], digits)
                out.append(
                    f"| {key} | {load:.0%} | {group[0]['rate']:.0f} | {col('achieved_per_s', 0)} "
                    f"| {sum(p['done'] for p in group):,} | {kind} {name} | "
                    f"{col(f'{name}_p50_ms')} | {col(f'{name}_p99_ms')} | "
                    f"{col(f'{name}_p99.9_ms')} | {sum(p['errors'] for p in group)}, "
                    f"{sum(p['unfinished'] for p in group)} |")
    return out


# --- main -------------------------------------------------------------------------------------


def settings(args: argparse.Namespace) -> Settings:
    quick = args.quick
    servers = tuple(args.servers.split(",")) if args.servers else tuple(spec.key for spec in SPECS)
    unknown = set(servers) - {spec.key for spec in SPECS}
    if unknown:
        raise SystemExit(f"--servers: unknown {sorted(unknown)}; known: {[s.key for s in SPECS]}")
    mem_servers = (OURS,) if quick else (OURS, SDK_LG)
    if args.memory_servers is not None:
        mem_servers = tuple(x for x in args.memory_servers.split(",") if x)
    return Settings(
        reps=args.reps if args.reps is not None else (1 if quick else 3),
        warmup=1.0 if quick else 2.0,
        duration=args.duration or (3.0 if quick else 10.0),
        streams=50 if quick else 200,
        memory_counts=(1_000, 10_000) if quick else (1_000, 10_000, 50_000),
        memory_servers=tuple(k for k in mem_servers if k in servers),
        fill_time_limit=args.fill_time_limit or (120.0 if quick else 900.0),
        resume_samples=50 if quick else 200,
        alone_seconds=1.0 if quick else 3.0,
        servers=servers,
        db=args.db,
    )


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="1 repetition of 3 s runs, no 50k memory step")
    p.add_argument("--reps", type=int, default=None,
                   help="repetitions (default 3, quick 1; 0 with --open-loop-peaks: none)")
    p.add_argument("--duration", type=float, default=0, help="seconds per measured run (default 10)")
    p.add_argument("--servers", default="", help=f"comma-separated subset of {[s.key for s in SPECS]}")
    p.add_argument("--memory-servers", default=None, help="servers for the memory scenario ('' for none)")
    p.add_argument("--fill-time-limit", type=float, default=0, help="seconds per memory fill step")
    p.add_argument("--skip-langgraph-alone", action="store_true",
                   help="do not run bench/langgraph_alone.py (bench/compare.py: our server only)")
    p.add_argument("--db", choices=("sqlite", "postgres"), default="sqlite",
                   help="storage of ours and sdk-langgraph: a SQLite file, or a fresh PostgreSQL "
                   "database per server run at LLAMON_BENCH_POSTGRES_URL's server (bench/pgdb.py)")
    p.add_argument("--name", default=None,
                   help="result files: bench/results/NAME.md and .json (default latest, "
                   "latest-postgres with --db postgres)")
    p.add_argument("--open-loop", type=int, default=0, metavar="SAMPLES",
                   help="after the repetitions: open-loop runs (bench/open_loop.py) of ours and "
                   "sdk-langgraph at 50%% and 80%% of our median peak, SAMPLES arrivals per point "
                   "(issue 14 asks for 10000)")
    p.add_argument("--open-loop-reps", type=int, default=1,
                   help="interleaved repetitions of every open-loop point (medians and spread "
                   "reported; issue 14 asks for 3)")
    p.add_argument("--open-loop-loads", default="0.5,0.8",
                   help="fractions of our closed-loop peak to run the open loop at")
    p.add_argument("--open-loop-peaks", default="", metavar="INSTANT,HITL",
                   help="our closed-loop peaks (instant req/s, HITL round trips/s) from an "
                   "earlier run of the same code, instead of this run's (then --servers may "
                   "leave out the closed loop with --reps 0)")
    p.add_argument("--trace-stalls", action="store_true",
                   help="our server records garbage collections and event-loop stalls "
                   "(bench/stalls.py); the JSON results get them per run")
    args = p.parse_args()
    if args.name is None:
        args.name = "latest" if args.db == "sqlite" else f"latest-{args.db}"
    if args.trace_stalls:  # read by bench/servers/llamon.py in the server process
        os.environ["LLAMON_BENCH_TRACE_STALLS"] = "1"
    s = settings(args)
    if args.skip_langgraph_alone:
        s.alone_seconds = 0.0
    if shutil.which("wrk") is None:
        raise SystemExit(f"wrk is not installed; install it with: {WRK_INSTALL}")
    if shutil.which("taskset") is None or (os.cpu_count() or 1) < 2:
        print("warning: no taskset or fewer than 2 cores; server and load share the CPU", flush=True)
    else:
        os.sched_setaffinity(0, {LOAD_CORE})  # this process is the HITL load generator
    specs = [spec for spec in specs_for(s.db) if spec.key in s.servers]
    if any(spec.sdk_venv for spec in specs):  # `--servers ours` needs no SDK (nor its install)
        ensure_sdk_venv()
    data: dict[str, Any] = {"machine": machine(), "settings": s.__dict__, "runs": {k.key: [] for k in specs},
                            "langgraph_alone": [], "langgraph_alone_errors": {}, "memory": {}}
    if s.db == "postgres":
        # imported here: postgres_hitl imports this module, and compare.py's older checkouts
        # may lack it
        from bench.pgdb import stop_on_sigterm
        from bench.postgres_hitl import ensure_sdk_postgres
        from bench.postgres_hitl import machine as postgres_machine

        stop_on_sigterm()  # SIGTERM as Ctrl-C: the servers stop and their databases are dropped
        if any(spec.sdk_venv and spec.db for spec in specs):
            ensure_sdk_postgres()
        data["machine"].update({k: v for k, v in postgres_machine().items()
                                if k not in data["machine"]})
    started = time.monotonic()
    for rep in range(s.reps):
        if s.alone_seconds:
            print(f"repetition {rep + 1}/{s.reps}: LangGraph alone ...", flush=True)
            cpu, errors = langgraph_alone(s.alone_seconds, s.db)
            data["langgraph_alone"].append(cpu)
            data["langgraph_alone_errors"].update(errors)
        order = specs[rep % len(specs):] + specs[: rep % len(specs)]
        for spec in order:
            print(f"repetition {rep + 1}/{s.reps}: {spec.key} ...", flush=True)
            data["runs"][spec.key].append(run_server(spec, rep, s))
    if args.open_loop and (OURS in data["runs"] or args.open_loop_peaks):
        if args.open_loop_peaks:  # measured by an earlier run of the same code: say which
            instant, hitl = (float(x) for x in args.open_loop_peaks.split(","))
            peaks = {"instant": instant, "hitl": hitl}
        else:
            ours_runs = data["runs"][OURS]
            peaks = {"instant": med(pick(ours_runs, "instant", "req_s")),
                     "hitl": med(pick(ours_runs, "hitl", "round_trips_per_s"))}
        data["open_loop_peaks"] = peaks
        data["open_loop_peaks_given"] = bool(args.open_loop_peaks)
        data["open_loop"] = {}
        loads = tuple(float(x) for x in args.open_loop_loads.split(","))
        looped = [spec for spec in specs if spec.key in (OURS, SDK_LG)]
        for rep in range(args.open_loop_reps):  # interleaved: the order rotates each time
            for spec in looped[rep % len(looped):] + looped[: rep % len(looped)]:
                print(f"open loop {rep + 1}/{args.open_loop_reps}: {spec.key} ...", flush=True)
                data["open_loop"].setdefault(spec.key, []).extend(
                    open_loop_runs(spec, peaks, args.open_loop, s.db, loads, rep))
    for spec in specs:
        if spec.key in s.memory_servers:
            print(f"memory: {spec.key} (up to {s.memory_counts[-1]:,} waiting tasks) ...", flush=True)
            data["memory"][spec.key] = memory(spec, s)
    data["seconds"] = time.monotonic() - started
    text = report(data, s)
    print()
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.name}.md").write_text(f"# Benchmark results\n\n{text}")
    (RESULTS / f"{args.name}.json").write_text(json.dumps(data, indent=1, default=str))
    print(f"written to {(RESULTS / f'{args.name}.md').relative_to(ROOT)} and {args.name}.json "
          f"({data['seconds']:.0f} s)")


if __name__ == "__main__":
    main()
