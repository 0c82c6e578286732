"""Large answers: does one client's large task state stall everyone else? (issue 8, finding 5)

    .venv/bin/python bench/large_answers.py                # 60 s of load (the issue's run)
    .venv/bin/python bench/large_answers.py --seconds 10   # a short run

Starts a real ``llamon-agent serve`` (the example agents, ``app.main:AGENTS``) on a fresh SQLite
file under ``bench/results/large_answers/`` with the default limits, pinned to core 0 when the
machine has two cores (the clients run on core 1). Then, at once:

* ``--clients`` writers (4), each on its own keep-alive connection: start an ``until-done`` task
  (which keeps every answer in its state), then answer it with the largest answer the default
  limits accept (a request of ``max_body_bytes``, text parts of at most ``max_text_chars``)
  until the server refuses one with a limit error (``-32602``, ``data.limit``); then check the
  refused task still waits (``tasks/get``: ``input-required``, history unchanged) and start a
  new task. ``--answers-per-task N`` starts a new task after N accepted answers instead.
* one sampler, in its own process (so that the writers' JSON work never delays its clock), that
  reads an unrelated task (a ``document-review`` task waiting for its answer) with ``tasks/get``,
  one call at a time on one keep-alive connection.

The load runs for ``--seconds`` and until the sampler has ``--min-samples`` reads (5,000), at
most ``--max-seconds`` (ten times ``--seconds``, plus 30). Reported: p50/p99/max of those reads, accepted answers per second and
their latency (by answer number within a task), refusals, the database size (main file + WAL),
the bytes stored per task (task row + its thread's checkpoints + writes, read from the SQLite
file afterwards) and the server's peak RSS (``VmHWM``). Written to
``bench/results/large_answers/latest.json`` (git-ignored, with the server's log; the database
file is deleted afterwards) and printed as a table.
Only 127.0.0.1 is ever contacted; every loop is bounded in time.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import shlex
import signal
import socket
import sqlite3
import statistics
import subprocess
import sys
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from multiprocessing.connection import Connection as Pipe
from multiprocessing.synchronize import Event as MpEvent
from pathlib import Path
from typing import Any

import orjson

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from bench.hitl_client import Connection, ProtocolError, percentile  # noqa: E402
from bench.procs import core_busy_ticks, cpu_ticks, pinned, proc_status, wait_for_card  # noqa: E402
from llamon_agent.core.bounds import Limits  # noqa: E402

OUT = BENCH / "results" / "large_answers"
SERVER_CORE, LOAD_CORE = 0, 1
TARGET = "app.main:AGENTS"
NOTES, REVIEW = "until-done", "document-review"
INPUT_REQUIRED = "input-required"


# --- the largest answer the defaults accept -------------------------------------------------


def answer_body(task_id: str, context_id: str, text: str, chars_per_part: int) -> bytes:
    parts = [
        {"kind": "text", "text": text[i : i + chars_per_part]}
        for i in range(0, len(text), chars_per_part)
    ]
    message = {
        "kind": "message", "messageId": uuid.uuid4().hex, "role": "user",
        "taskId": task_id, "contextId": context_id, "parts": parts,
    }
    return orjson.dumps({"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "message/send",
                         "params": {"message": message}})


def largest_answer_chars(limits: Limits) -> int:
    """ASCII characters of the largest text answer within the body, part and part-count limits
    (ids of the same length as the real ones)."""
    ids = ("0" * 36, "0" * 32)
    chars = limits.max_body_bytes
    for _ in range(8):  # the envelope grows with the number of parts: converge
        overhead = len(answer_body(*ids, "x" * chars, limits.max_text_chars)) - chars
        fitted = min(limits.max_body_bytes - overhead, limits.max_parts * limits.max_text_chars)
        if fitted == chars:
            break
        chars = fitted
    return chars


# --- the server -----------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


CLK_TCK = os.sysconf("SC_CLK_TCK")


class Server:
    def __init__(self, db: Path, log: Path, port: int, extra: list[str]) -> None:
        self.db, self.log, self.port, self.extra = db, log, port, extra
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 60.0) -> None:
        for old in self.db.parent.glob(self.db.name + "*"):
            old.unlink()
        argv = [sys.executable, "-m", "llamon_agent.cli", "serve", TARGET, "--port",
                str(self.port), "--db", str(self.db.relative_to(ROOT)), "--log-level", "warning",
                *self.extra]
        env = {k: v for k, v in os.environ.items() if k not in ("LLAMON_MODEL", "LLAMON_DB")}
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(pinned(SERVER_CORE, argv), cwd=ROOT, env=env,
                                         stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL)
        if wait_for_card(self.proc, self.port, self.log, "the server", timeout):
            return
        self.stop()
        raise SystemExit(f"the server did not serve its card within {timeout:.0f} s")

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        os.kill(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.kill(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=5)

    def db_bytes(self) -> dict[str, int]:
        sizes = {p.name.removeprefix(self.db.name) or "main": p.stat().st_size
                 for p in self.db.parent.glob(self.db.name + "*")}
        return {"main": sizes.get("main", 0), "wal": sizes.get("-wal", 0)}


# --- the clients ----------------------------------------------------------------------------


def rpc(method: str, params: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method,
                         "params": params})


def start_body(agent: str, text: str) -> bytes:
    message = {"kind": "message", "messageId": uuid.uuid4().hex, "role": "user",
               "contextId": uuid.uuid4().hex, "parts": [{"kind": "text", "text": text}]}
    return rpc("message/send", {"message": message, "metadata": {"agentId": agent}})


def state_of(answer: Any) -> str:
    if "error" in answer:
        raise ProtocolError(f"JSON-RPC error {orjson.dumps(answer['error']).decode()[:300]}")
    return str(answer["result"]["status"]["state"])


@dataclass
class Load:
    deadline: float
    hard_deadline: float
    chars: int
    chars_per_part: int
    answers_per_task: int
    enough_samples: MpEvent
    answer_ms: dict[int, list[float]] = field(default_factory=lambda: defaultdict(list))
    accepted: int = 0
    refused: Counter[str] = field(default_factory=Counter)
    refused_ms: list[float] = field(default_factory=list)
    refused_tasks_still_waiting: int = 0
    refused_tasks_changed: list[str] = field(default_factory=list)
    tasks: list[tuple[str, str]] = field(default_factory=list)  # (task id, context id)
    errors: Counter[str] = field(default_factory=Counter)

    def running(self) -> bool:
        now = time.monotonic()
        if now >= self.hard_deadline:
            return False
        return now < self.deadline or not self.enough_samples.is_set()


async def writer(port: int, load: Load, seed: int) -> None:
    conn = Connection(port)
    filler = (f"{seed:02d}" + "abcdefghijklmnopqrstuvwxyz0123456789" * (load.chars // 36 + 1))
    try:
        while load.running():
            try:
                task = (await conn.post(start_body(NOTES, "take notes")))["result"]
                task_id, context_id = task["id"], task["contextId"]
                load.tasks.append((task_id, context_id))
                number = 0
                while load.running() and (load.answers_per_task == 0
                                          or number < load.answers_per_task):
                    text = f"{number:06d}" + filler[number % 36 : number % 36 + load.chars - 6]
                    body = answer_body(task_id, context_id, text, load.chars_per_part)
                    t0 = time.perf_counter()
                    answer = await conn.post(body)
                    ms = (time.perf_counter() - t0) * 1e3
                    error = answer.get("error")
                    if error is not None:
                        limit = (error.get("data") or {}).get("limit")
                        if error.get("code") != -32602 or limit is None:
                            raise ProtocolError(f"unexpected error {orjson.dumps(error)[:300]!r}")
                        load.refused[str(limit)] += 1
                        load.refused_ms.append(ms)
                        await check_still_waiting(conn, task_id, number, load)
                        break
                    if state_of(answer) != INPUT_REQUIRED:
                        raise ProtocolError(f"answer {number} ended the task")
                    number += 1
                    load.accepted += 1
                    load.answer_ms[number].append(ms)
            except (ProtocolError, OSError, asyncio.IncompleteReadError, ValueError,
                    KeyError) as exc:
                load.errors[f"{type(exc).__name__}: {exc}"[:200]] += 1
                await conn.close()
                await asyncio.sleep(0.05)
    finally:
        await conn.close()


async def check_still_waiting(conn: Connection, task_id: str, accepted: int, load: Load) -> None:
    """A refused answer stores nothing: the task still asks, with one question and one answer
    per accepted answer in its history (plus the first message and its question)."""
    task = (await conn.post(rpc("tasks/get", {"id": task_id})))["result"]
    history = task.get("history") or []
    if task["status"]["state"] == INPUT_REQUIRED and len(history) == 1 + 2 * accepted:
        load.refused_tasks_still_waiting += 1
    else:
        load.refused_tasks_changed.append(f"{task_id}: {task['status']['state']}, "
                                          f"{len(history)} history messages")


def sampler(port: int, task_id: str, min_samples: int, stop: MpEvent, enough: MpEvent,
            hard_deadline: float, out: Pipe) -> None:
    """``tasks/get`` of one task, one call at a time, until told to stop (in its own process)."""
    if (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {LOAD_CORE})

    async def run() -> tuple[list[float], Counter[str]]:
        conn = Connection(port)
        latencies: list[float] = []
        errors: Counter[str] = Counter()
        body = rpc("tasks/get", {"id": task_id, "historyLength": 1})
        try:
            while not stop.is_set() and time.monotonic() < hard_deadline:
                t0 = time.perf_counter()
                try:
                    if state_of(await conn.post(body)) != INPUT_REQUIRED:
                        raise ProtocolError("the unrelated task changed state")
                    latencies.append((time.perf_counter() - t0) * 1e3)
                except (ProtocolError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
                    errors[f"{type(exc).__name__}: {exc}"[:200]] += 1
                    await conn.close()
                    await asyncio.sleep(0.05)
                if len(latencies) >= min_samples:
                    enough.set()
        finally:
            await conn.close()
        return latencies, errors

    out.send(asyncio.run(run()))
    out.close()


async def setup_unrelated(port: int) -> str:
    conn = Connection(port)
    try:
        answer = await conn.post(start_body(REVIEW, "이 서류를 검증해줘"))
        if state_of(answer) != INPUT_REQUIRED:
            raise SystemExit(f"the unrelated task does not wait: {answer}")
        return str(answer["result"]["id"])
    finally:
        await conn.close()


async def run_writers(port: int, clients: int, load: Load, server: Server) -> dict[str, int]:
    peak_rss = 0

    async def watch() -> None:
        nonlocal peak_rss
        while True:
            peak_rss = max(peak_rss, proc_status(server.pid, "VmRSS"))
            await asyncio.sleep(0.5)

    watcher = asyncio.create_task(watch())
    t0, cpu0, core0 = time.monotonic(), cpu_ticks(server.pid), core_busy_ticks(SERVER_CORE)
    try:
        await asyncio.gather(*(writer(port, load, i) for i in range(clients)))
    finally:
        watcher.cancel()
    elapsed = time.monotonic() - t0
    cpu = cpu_ticks(server.pid) - cpu0
    other = core_busy_ticks(SERVER_CORE) - core0 - cpu
    return {"rss_sampled_peak_kb": peak_rss, "rss_end_kb": proc_status(server.pid, "VmRSS"),
            "vmhwm_kb": proc_status(server.pid, "VmHWM"),
            "server_cpu_pct": cpu / CLK_TCK / elapsed * 100,
            "other_load_pct": max(0.0, other / CLK_TCK / elapsed * 100)}


# --- what is stored -------------------------------------------------------------------------


def stored_per_task(db: Path, tasks: list[tuple[str, str]]) -> list[dict[str, int]]:
    """Bytes each task holds in the file: its row, its thread's checkpoints and writes."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        rows = []
        for task_id, context_id in tasks:
            row = conn.execute(
                "SELECT length(task) + COALESCE(length(extra), 0) FROM llamon_tasks WHERE id = ?",
                (task_id,),
            ).fetchone()
            checkpoints = conn.execute(
                "SELECT count(*), COALESCE(sum(length(checkpoint) + COALESCE(length(metadata), 0)),"
                " 0) FROM checkpoints WHERE thread_id = ?", (context_id,),
            ).fetchone()
            writes = conn.execute(
                "SELECT count(*), COALESCE(sum(length(value)), 0) FROM writes WHERE thread_id = ?",
                (context_id,),
            ).fetchone()
            task_bytes = int(row[0]) if row else 0
            rows.append({
                "task_row": task_bytes, "checkpoints": int(checkpoints[0]),
                "checkpoint_bytes": int(checkpoints[1]), "writes": int(writes[0]),
                "write_bytes": int(writes[1]),
                "total": task_bytes + int(checkpoints[1]) + int(writes[1]),
            })
        return rows
    finally:
        conn.close()


# --- main -----------------------------------------------------------------------------------


def mib(n: float) -> str:
    return f"{n / 2**20:,.1f}"


def report(result: dict[str, Any]) -> str:
    get, ans, per = result["tasks_get"], result["answers"], result["stored_per_task"]
    lines = [
        f"Large answers: {result['clients']} writers x {result['answer_chars']:,}-character "
        f"answers ({result['answer_body_bytes']:,}-byte requests), {result['seconds']:.0f} s "
        "of load.",
        "",
        "| what | value |",
        "|---|---:|",
        f"| `tasks/get` of an unrelated task: reads | {get['count']:,} |",
        f"| `tasks/get` p50 / p99 / max, ms | {get['p50_ms']:.1f} / {get['p99_ms']:.1f} / "
        f"{get['max_ms']:.1f} |",
        f"| `tasks/get` errors | {get['errors']} |",
        f"| accepted answers / s | {ans['per_s']:.1f} ({ans['accepted']:,} in all) |",
        f"| answer latency p50 / p99 / max, ms | {ans['p50_ms']:.0f} / {ans['p99_ms']:.0f} / "
        f"{ans['max_ms']:.0f} |",
        "| answer latency p50 by answer number in its task, ms | "
        + ", ".join(f"#{n}: {v:.0f}" for n, v in ans["p50_ms_by_number"].items()) + " |",
        f"| answers refused (limit) | {dict(ans['refused']) or 0} |",
        f"| refused tasks still waiting, unchanged | {ans['refused_tasks_still_waiting']} of "
        f"{sum(ans['refused'].values())} |",
        f"| client errors | {sum(ans['errors'].values())} |",
        f"| tasks started | {len(per)} |",
        f"| stored per task (row + checkpoints + writes), max / median, MiB | "
        f"{mib(result['stored_max'])} / {mib(result['stored_median'])} |",
        f"| largest task: row / checkpoints / writes, MiB (rows) | "
        f"{mib(result['largest']['task_row'])} / {mib(result['largest']['checkpoint_bytes'])} "
        f"({result['largest']['checkpoints']}) / {mib(result['largest']['write_bytes'])} "
        f"({result['largest']['writes']}) |",
        f"| database at the end of the load: main file + WAL, MiB | "
        f"{mib(result['db_bytes']['main'])} + {mib(result['db_bytes']['wal'])} |",
        f"| server peak RSS (VmHWM), MiB | {result['server']['vmhwm_kb'] / 1024:,.0f} |",
        f"| server log tracebacks | {result['tracebacks']} |",
        f"| server CPU / other processes on the server's core, % | "
        f"{result['server']['server_cpu_pct']:.0f} / {result['server']['other_load_pct']:.0f} |",
    ]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seconds", type=float, default=60.0, help="seconds of load (default 60)")
    p.add_argument("--clients", type=int, default=4, help="concurrent writers (default 4)")
    p.add_argument("--min-samples", type=int, default=5000,
                   help="tasks/get reads to take at least (default 5000)")
    p.add_argument("--answers-per-task", type=int, default=0,
                   help="start a new task after N accepted answers (default 0: when refused)")
    p.add_argument("--max-seconds", type=float, default=0.0,
                   help="stop the load after this long even without --min-samples reads "
                   "(default: ten times --seconds, plus 30)")
    p.add_argument("--serve-args", default="",
                   help="more arguments for llamon-agent serve, e.g. \"--max-task-bytes N\"")
    p.add_argument("--answer-chars", type=int, default=0,
                   help="characters per answer (default: the largest the default limits accept)")
    args = p.parse_args()

    limits = Limits()
    chars = args.answer_chars or largest_answer_chars(limits)
    OUT.mkdir(parents=True, exist_ok=True)
    server = Server(OUT / "large.sqlite3", OUT / "server.log", free_port(),
                    shlex.split(args.serve_args))
    server.start()
    if (os.cpu_count() or 1) >= 2:
        os.sched_setaffinity(0, {LOAD_CORE})
    try:
        unrelated = asyncio.run(setup_unrelated(server.port))
        ctx = multiprocessing.get_context("spawn")
        stop, enough = ctx.Event(), ctx.Event()
        receive, send = ctx.Pipe(duplex=False)
        t0 = time.monotonic()
        hard = t0 + (args.max_seconds or 10 * args.seconds + 30)
        probe = ctx.Process(target=sampler, args=(server.port, unrelated, args.min_samples,
                                                  stop, enough, hard, send))
        probe.start()
        load = Load(deadline=t0 + args.seconds, hard_deadline=hard, chars=chars,
                    chars_per_part=limits.max_text_chars, answers_per_task=args.answers_per_task,
                    enough_samples=enough)
        server_figures = asyncio.run(run_writers(server.port, args.clients, load, server))
        elapsed = time.monotonic() - t0
        stop.set()
        latencies, get_errors = receive.recv()
        probe.join(timeout=30)
        db_bytes = server.db_bytes()
    finally:
        server.stop()
    log = server.log.read_text(errors="replace")
    per = stored_per_task(server.db, load.tasks)
    for path in server.db.parent.glob(server.db.name + "*"):  # gigabytes: not kept
        path.unlink()
    all_answers = [ms for values in load.answer_ms.values() for ms in values]
    totals = [r["total"] for r in per] or [0]
    result: dict[str, Any] = {
        "clients": args.clients, "seconds": elapsed, "answer_chars": chars,
        "answer_body_bytes": len(answer_body("0" * 36, "0" * 32, "x" * chars,
                                             limits.max_text_chars)),
        "limits": vars(limits), "serve_args": args.serve_args,
        "tasks_get": {
            "count": len(latencies), "p50_ms": percentile(latencies, 50),
            "p99_ms": percentile(latencies, 99), "max_ms": max(latencies, default=float("nan")),
            "errors": sum(get_errors.values()), "error_samples": list(get_errors)[:5],
        },
        "answers": {
            "accepted": load.accepted, "per_s": load.accepted / elapsed,
            "p50_ms": percentile(all_answers, 50), "p99_ms": percentile(all_answers, 99),
            "max_ms": max(all_answers, default=float("nan")),
            "p50_ms_by_number": {n: percentile(v, 50) for n, v in sorted(load.answer_ms.items())
                                 if n <= 10 or n % 10 == 0},
            "refused": dict(load.refused), "refused_p50_ms": percentile(load.refused_ms, 50),
            "refused_tasks_still_waiting": load.refused_tasks_still_waiting,
            "refused_tasks_changed": load.refused_tasks_changed[:5],
            "errors": dict(load.errors),
        },
        "stored_per_task": per,
        "stored_max": max(totals), "stored_median": statistics.median(totals),
        "largest": max(per, key=lambda r: r["total"]) if per else {},
        "db_bytes": db_bytes, "server": server_figures,
        "tracebacks": log.count("Traceback (most recent call last)"),
    }
    (OUT / "latest.json").write_text(json.dumps(result, indent=2))
    print(report(result))
    if load.errors:
        print("client errors:", dict(load.errors))


if __name__ == "__main__":
    main()
