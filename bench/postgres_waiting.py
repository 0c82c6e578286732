"""Many tasks waiting for an answer on PostgreSQL: the server's memory, and how fast one resumes.

    .venv/bin/python bench/postgres_waiting.py [--quick] [--users 64] [--samples 200]

``llamon-agent serve --db postgresql://...`` (the example agents, ``app.main:AGENTS``) on a freshly
created database (dropped at the end), pinned to core 0. Tasks of the ``document-review`` agent
(whose first message asks which document to verify) are started over JSON-RPC ``message/send``
by ``--users`` concurrent keep-alive connections and left in ``input-required``, in steps up to
1,000, 10,000 and 100,000 (``--quick``: 1,000 and 10,000). After each step: the server's RSS,
the step's time, the task rows by state in the database, the database's size. At the first and
the last step, ``--samples`` waiting tasks spread over all of them are answered one at a time
("passport": the task resumes and asks its next question, so it still waits) and the time to the
answer is the *resume latency* (p50, p99). bench/results/postgres_waiting.md and .json.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from bench import hitl_client as hc  # noqa: E402
from bench.pgdb import (  # noqa: E402
    ADMIN_URL,
    PostgresCpu,
    count_by_state,
    database_bytes,
    fresh_database,
    setting,
    stop_on_sigterm,
    write_results,
)
from bench.procs import (  # noqa: E402
    ServerProcess,
    log_summary,
    machine_busy_ticks,
    tree_cpu_ticks,
    tree_rss_kb,
)

RESULTS = BENCH / "results"
NAME = "postgres_waiting"
CLK_TCK = os.sysconf("SC_CLK_TCK")
SERVER_CORE, LOAD_CORE = "0", 1
PORT = 9321
LLAMON = str(Path(sys.executable).parent / "llamon-agent")
AGENT = "document-review"
FIRST, ANSWER = "이 서류를 검증해줘", "여권"  # "verify this document", "passport"
WARM_UP_TASKS = 200


class Pool:
    """The waiting tasks: ``fresh`` wait for their first answer, ``answered`` were answered by a
    resume probe and wait for their second (not probed again: that answer would end them)."""

    def __init__(self) -> None:
        self.fresh = hc.Waiting()
        self.answered = 0

    def __len__(self) -> int:
        return len(self.fresh.tasks) + self.answered


def fill(port: int, count: int, pool: Pool, users: int, time_limit: float) -> None:
    asyncio.run(hc.fill_waiting(port, count - pool.answered, pool.fresh, users=users,
                                time_limit=time_limit, agent=AGENT, text=FIRST))


def resume(port: int, pool: Pool, samples: int) -> dict[str, Any]:
    """Answer ``samples`` tasks one at a time; they ask their next question, so still wait."""
    before = len(pool.fresh.tasks)
    latencies, errors = asyncio.run(hc.resume_latency(
        port, pool.fresh, samples, agent=AGENT, text=ANSWER, expect=hc.INPUT_REQUIRED))
    pool.answered += before - len(pool.fresh.tasks)
    return {"p50_ms": hc.percentile(latencies, 50), "p99_ms": hc.percentile(latencies, 99),
            "max_ms": max(latencies, default=math.nan), "samples": len(latencies),
            "errors": errors.count, "error_samples": errors.samples}


def run(s: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"steps": {}}
    with fresh_database(s.synchronous_commit) as db:
        out["synchronous_commit"] = setting(db.url, "synchronous_commit")
        log = RESULTS / "logs" / f"{NAME}.log"
        argv = [LLAMON, "serve", "--port", str(PORT), "--db", db.url, "--log-level", "warning"]
        server = ServerProcess("llamon-agent serve", argv, PORT, log, cores=SERVER_CORE, cwd=ROOT)
        server.start()
        try:
            waiting = Pool()
            fill(PORT, WARM_UP_TASKS, waiting, s.users, s.time_limit)  # warm-up: imports, pool
            out["rss_warm_kb"] = rss0 = tree_rss_kb(server.pid)
            prev_rss, prev_n = rss0, len(waiting)
            warm_n = prev_n
            for count in s.counts:
                print(f"filling to {count:,} waiting tasks ...", end=" ", flush=True)
                cpu0, t0 = tree_cpu_ticks(server.pid), time.monotonic()
                busy0, own0 = machine_busy_ticks(), os.times()
                with PostgresCpu(db.name) as pg:
                    fill(PORT, count, waiting, s.users, s.time_limit)
                seconds = time.monotonic() - t0
                own1 = os.times()
                server_ticks = tree_cpu_ticks(server.pid) - cpu0
                # busy time of the machine that is not the server's, PostgreSQL's or this
                # process's, as a share of one core
                other = ((machine_busy_ticks() - busy0 - server_ticks - pg.backend_ticks
                          - pg.background_ticks) / CLK_TCK
                         - (own1.user + own1.system - own0.user - own0.system))
                added = len(waiting) - prev_n
                rss = tree_rss_kb(server.pid)
                step: dict[str, Any] = {
                    "waiting": len(waiting), "seconds": seconds,
                    "tasks_per_s": added / seconds if seconds else math.nan,
                    "server_cpu_ms_per_task": server_ticks / CLK_TCK * 1e3 / added
                    if added else math.nan,
                    "other_pct": max(0.0, other / seconds * 100) if seconds else math.nan,
                    "pg_cpu_ms_per_task": (pg.backend_ticks + pg.background_ticks) / CLK_TCK
                    * 1e3 / added if added else math.nan,
                    "rss_kb": rss,
                    "kb_per_task": (rss - rss0) / (len(waiting) - warm_n),
                    "kb_per_added_task": (rss - prev_rss) / added if added else math.nan,
                    "rows_by_state": count_by_state(db.url),
                    "database_bytes": database_bytes(db.url),
                    "fill_errors": waiting.fresh.errors.count,
                }
                print(f"{seconds:.0f} s ({step['tasks_per_s']:.0f} tasks/s), RSS "
                      f"{rss / 1024:.1f} MB", flush=True)
                if count in (s.counts[0], s.counts[-1]):
                    step["resume"] = resume(PORT, waiting, s.samples)
                    print(f"  resume latency p50 {step['resume']['p50_ms']:.1f} ms, p99 "
                          f"{step['resume']['p99_ms']:.1f} ms", flush=True)
                out["steps"][str(count)] = step
                prev_rss, prev_n = tree_rss_kb(server.pid), len(waiting)
            out["fill_error_samples"] = waiting.fresh.errors.samples
        finally:
            server.stop()
            out["log"] = log_summary(log, ROOT)
    return out


def report(data: dict[str, Any]) -> str:
    steps: dict[str, dict[str, Any]] = data["steps"]
    counts = list(steps)

    def row(title: str, fn: Any, digits: int) -> str:
        cells = []
        for c in counts:
            v = fn(steps[c])
            cells.append("-" if v is None or (isinstance(v, float) and math.isnan(v))
                         else f"{v:,.{digits}f}")
        return f"| {title} | " + " | ".join(cells) + " |"

    out = [f"Machine: {', '.join(f'{k} {v}' for k, v in data['machine'].items())}.",
           f"{data['users']} users filling, {data['samples']} resume samples, "
           f"synchronous_commit={data['synchronous_commit']}; warm-start RSS "
           f"{data['rss_warm_kb'] / 1024:.1f} MB (after {WARM_UP_TASKS} tasks).", "",
           "| tasks waiting | " + " | ".join(f"{int(c):,}" for c in counts) + " |",
           "|---|" + "---:|" * len(counts),
           row("tasks in `input-required` in the database", lambda st: st["rows_by_state"].get(
               "input-required", 0), 0),
           row("fill step: seconds", lambda st: st["seconds"], 0),
           row("fill step: tasks/s", lambda st: st["tasks_per_s"], 0),
           row("fill step: server CPU per task / ms", lambda st: st["server_cpu_ms_per_task"], 2),
           row("fill step: PostgreSQL CPU per task / ms", lambda st: st["pg_cpu_ms_per_task"], 2),
           row("fill step: other processes / % of one core", lambda st: st["other_pct"], 0),
           row("server RSS / MB", lambda st: st["rss_kb"] / 1024, 1),
           row("RSS growth from warm start per task added since / KB",
               lambda st: st["kb_per_task"], 3),
           row("RSS growth per task added in the step / KB", lambda st: st["kb_per_added_task"], 3),
           row("database size / MB", lambda st: st["database_bytes"] / 2**20, 0),
           row("database bytes per waiting task / KB",
               lambda st: st["database_bytes"] / 1024 / st["waiting"], 1),
           row("resume latency p50 / ms", lambda st: st.get("resume", {}).get("p50_ms"), 1),
           row("resume latency p99 / ms", lambda st: st.get("resume", {}).get("p99_ms"), 1),
           row("resume errors", lambda st: st.get("resume", {}).get("errors"), 0),
           row("fill errors (cumulative)", lambda st: st["fill_errors"], 0)]
    lo, hi = steps[counts[0]].get("resume", {}), steps[counts[-1]].get("resume", {})
    if lo and hi:
        out += ["", f"Resume latency at {int(counts[-1]):,} / at {int(counts[0]):,} waiting: "
                f"p50 {hi['p50_ms'] / lo['p50_ms']:.2f}, p99 {hi['p99_ms'] / lo['p99_ms']:.2f}."]
    if data["log"]["tracebacks"] or data.get("fill_error_samples"):
        out += ["", f"Errors: {data.get('fill_error_samples', [])[:3]}; "
                f"{data['log']['tracebacks']} tracebacks, lines {data['log']['top_lines'][:4]}"]
    return "\n".join(out) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="steps of 1,000 and 10,000 only")
    p.add_argument("--steps", default="", help="waiting-task counts to fill up to, comma-separated "
                   "(default 1000,10000,100000; quick 1000,10000)")
    p.add_argument("--users", type=int, default=64, help="concurrent connections filling (64)")
    p.add_argument("--samples", type=int, default=200, help="tasks answered per resume probe")
    p.add_argument("--time-limit", type=float, default=3600.0, help="seconds per fill step")
    p.add_argument("--synchronous-commit", choices=["on", "off"], default="on")
    p.add_argument("--name", default=NAME, help="result files bench/results/NAME.md and .json")
    s = p.parse_args()
    s.counts = (tuple(int(x) for x in s.steps.split(",")) if s.steps
                else (1_000, 10_000) if s.quick else (1_000, 10_000, 100_000))
    if shutil.which("taskset") and (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {LOAD_CORE})
    started = time.monotonic()
    data = run(s)
    data.update({"users": s.users, "samples": s.samples, "seconds": time.monotonic() - started,
                 "machine": {"nproc": str(os.cpu_count()),
                             "postgresql": setting(ADMIN_URL, "server_version"),
                             "autovacuum": setting(ADMIN_URL, "autovacuum"),
                             "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}})
    write_results(s.name, "Waiting tasks on PostgreSQL", report(data), data)


if __name__ == "__main__":
    stop_on_sigterm()
    main()
