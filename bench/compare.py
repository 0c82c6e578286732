"""Before/after on our server only: bench/run.py, interleaved, medians and the spread.

    .venv/bin/python bench/compare.py --before REV [--after REV|worktree] [--reps 3] [--duration S]

Each git revision is checked out with ``git worktree add --detach`` in a temporary directory
outside the repository (removed at the end, also on failure or Ctrl-C); ``worktree`` (the
default for ``--after``) is this working tree, uncommitted changes included. Each repetition runs
``bench/run.py --reps 1 --servers ours`` once per side, alternating which side goes first
(before/after, after/before, ...), so a slow spell of a shared machine hits both. Every run uses
this repository's virtual environment (``sys.executable``) with its working directory in the
checkout, so the server imports that checkout's ``llamon_agent`` (checked before the first run).

The load side of the harness (``HARNESS``: run.py, the HITL client, the process helpers, the wrk
script) is copied from this working tree into every checkout, so both sides are measured by the
same client with the same flags; the server side (bench/agents.py, bench/servers/) stays the
revision's own, since it is written against that revision's API.

Prints and writes bench/results/compare.md; each run's raw numbers are kept in
bench/results/compare/<side>-rep<N>.json (git-ignored).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
RESULTS = BENCH / "results"
RUNS_DIR = RESULTS / "compare"
REPORT = RESULTS / "compare.md"
HARNESS = ("run.py", "hitl_client.py", "procs.py", "wrk")
RUN_NAME = "compare-run"  # run.py --name: leaves bench/results/latest.* of a full run alone
WORKTREE = "worktree"
RUN_TIMEOUT_EXTRA = 300.0  # seconds on top of the measured time for start-up, probe and warm-ups
STOP_GRACE = 30.0  # run.py stops its server (SIGTERM, then SIGKILL after 15 s) on Ctrl-C


@dataclass(frozen=True)
class Metric:
    title: str
    path: tuple[str, ...]
    digits: int
    higher_is_better: bool | None  # None: not a speed figure (machine noise, errors)


METRICS = [
    Metric("HITL round trips/s (16 users)", ("hitl", "round_trips_per_s"), 1, True),
    Metric("server CPU per HITL round trip / ms", ("hitl", "cpu_ms"), 2, False),
    Metric("HITL round trip p50 / ms", ("hitl", "round_trip_p50_ms"), 1, False),
    Metric("HITL round trip p99 / ms", ("hitl", "round_trip_p99_ms"), 1, False),
    Metric("`message/send` instant, req/s (32 connections)", ("instant", "req_s"), 1, True),
    Metric("server CPU per instant request / ms", ("instant", "cpu_ms"), 2, False),
    Metric("instant p50 / ms", ("instant", "p50_ms"), 1, False),
    Metric("instant p99 / ms", ("instant", "p99_ms"), 1, False),
    Metric("`message/stream` first event p50 / ms (idle)", ("stream", "first_p50_ms"), 2, False),
    Metric("`message/stream` final event p50 / ms (idle)", ("stream", "final_p50_ms"), 2, False),
    Metric("other processes on the server core, instant run / %", ("instant", "other_load_pct"),
           0, None),
    Metric("other processes on the server core, HITL run / %", ("hitl", "other_load_pct"), 0, None),
    Metric("errors (instant + HITL + stream, per run)", ("errors",), 0, None),
    Metric("server log tracebacks (per run)", ("log", "tracebacks"), 0, None),
]


@dataclass
class Side:
    name: str  # "before" or "after"
    rev: str  # as given on the command line
    commit: str | None  # None: this working tree
    checkout: Path
    runs: list[dict[str, Any]] = field(default_factory=list)

    def describe(self) -> str:
        if self.commit is None:
            head = git("rev-parse", "--short", "HEAD")
            dirty = " + uncommitted changes" if git("status", "--porcelain", "--untracked-files=no") else ""
            return f"this working tree (HEAD {head}{dirty})"
        return f"`{self.rev}` ({self.commit[:10]})"


# --- git and checkouts ------------------------------------------------------------------------


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip()


def resolve(rev: str) -> str:
    done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}"],
                          cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode:
        raise SystemExit(f"not a commit in this repository: {rev!r}")
    return done.stdout.strip()


def add_checkout(commit: str, path: Path) -> None:
    git("worktree", "add", "--detach", str(path), commit)
    if not (path / "bench" / "servers" / "llamon.py").exists():
        raise SystemExit(f"{commit[:10]} has no bench/servers/llamon.py: it predates the benchmark")
    for name in HARNESS:  # the same load generator and flags on both sides
        src, dst = BENCH / name, path / "bench" / name
        if src.is_dir():
            shutil.rmtree(dst, ignore_errors=True)
            shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy2(src, dst)


def remove_checkout(path: Path) -> None:
    done = subprocess.run(["git", "worktree", "remove", "--force", str(path)], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    if done.returncode:
        print(f"warning: could not remove the worktree {path}: {done.stderr.strip()}; "
              f"remove it with: git worktree remove --force {path}", flush=True)


def check_import(side: Side) -> None:
    """The shared venv has an editable install; the checkout's own package must win."""
    done = subprocess.run([sys.executable, "-c", "import llamon_agent; print(llamon_agent.__file__)"],
                          cwd=side.checkout, capture_output=True, text=True, check=False)
    imported = Path(done.stdout.strip() or "?").resolve()
    if done.returncode or not imported.is_relative_to(side.checkout.resolve()):
        raise SystemExit(f"{side.name}: `import llamon_agent` in {side.checkout} gives {imported} "
                         f"{done.stderr.strip()[-500:]}")


@contextlib.contextmanager
def checkouts(before: str, after: str) -> Iterator[tuple[Side, Side]]:
    """The two sides; the worktrees of revisions live in a temporary directory, removed at the end."""
    tmp = Path(tempfile.mkdtemp(prefix="llamon-compare-"))
    if tmp.resolve().is_relative_to(ROOT):
        raise SystemExit(f"the temporary directory {tmp} is inside the repository")
    added: list[Path] = []
    try:
        sides = []
        for name, rev in (("before", before), ("after", after)):
            if name == "after" and rev == WORKTREE:
                sides.append(Side(name, rev, None, ROOT))
                continue
            commit = resolve(rev)
            path = tmp / name
            add_checkout(commit, path)
            added.append(path)
            sides.append(Side(name, rev, commit, path))
        for side in sides:
            check_import(side)
        yield sides[0], sides[1]
    finally:
        for path in added:
            remove_checkout(path)
        shutil.rmtree(tmp, ignore_errors=True)


# --- one run ----------------------------------------------------------------------------------


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Let run.py stop its server (SIGINT -> its finally), then end what is left of its group."""
    if proc.poll() is None:
        os.kill(proc.pid, signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=STOP_GRACE)
    # run.py is the leader of its own session (start_new_session); a server it started but
    # could not stop (interrupted during start-up) is still in that group.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GRACE)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def run_once(side: Side, rep: int, duration: float | None) -> dict[str, Any]:
    """One ``bench/run.py`` of our server in the side's checkout; its numbers for ``ours``."""
    result = side.checkout / "bench" / "results" / f"{RUN_NAME}.json"
    result.unlink(missing_ok=True)
    log = RUNS_DIR / f"{side.name}-rep{rep}.log"
    argv = [sys.executable, "bench/run.py", "--reps", "1", "--servers", "ours",
            "--memory-servers", "", "--skip-langgraph-alone", "--name", RUN_NAME]
    if duration:
        argv += ["--duration", f"{duration:g}"]
    with log.open("wb") as out:
        proc = subprocess.Popen(argv, cwd=side.checkout, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            rc = proc.wait(timeout=2 * (duration or 10.0) + RUN_TIMEOUT_EXTRA)
        except BaseException:  # timeout, Ctrl-C, SIGTERM: never leave a server on the port
            stop(proc)
            raise
    if rc or not result.exists():
        tail = log.read_text(errors="replace")[-3000:]
        raise SystemExit(f"{side.name} rep {rep}: bench/run.py exited with {rc}; "
                         f"log {log.relative_to(ROOT)}:\n{tail}")
    data: dict[str, Any] = json.loads(result.read_text())
    shutil.copy2(result, RUNS_DIR / f"{side.name}-rep{rep}.json")
    run: dict[str, Any] = data["runs"]["ours"][0]
    run["machine"] = data.get("machine", {})
    run["errors"] = sum(int((run.get(k) or {}).get("errors") or 0)
                        for k in ("instant", "hitl", "stream"))
    return run


# --- report -----------------------------------------------------------------------------------


def value(run: dict[str, Any], path: tuple[str, ...]) -> float:
    v: Any = run
    for key in path:
        v = v.get(key) if isinstance(v, dict) else None
    return float(v) if isinstance(v, (int, float)) else math.nan


def values(side: Side, metric: Metric) -> list[float]:
    return [v for v in (value(run, metric.path) for run in side.runs) if not math.isnan(v)]


def fmt(v: float, digits: int) -> str:
    return "-" if math.isnan(v) else f"{v:,.{digits}f}"


def spread(vs: list[float], digits: int) -> str:
    return f"{fmt(min(vs), digits)} - {fmt(max(vs), digits)}" if vs else "-"


def change(before: list[float], after: list[float], metric: Metric) -> tuple[str, str]:
    """(change of the medians in %, whether the two ranges overlap)."""
    if not before or not after or metric.higher_is_better is None:
        return "-", "-"
    b, a = statistics.median(before), statistics.median(after)
    overlap = "yes" if max(before) >= min(after) and max(after) >= min(before) else "no"
    if not b:
        return "-", overlap
    pct = (a - b) / b * 100
    better = (pct > 0) == metric.higher_is_better
    word = "" if round(pct, 1) == 0 else (" better" if better else " worse")
    return f"{pct:+.1f} %{word}", overlap


def report(before: Side, after: Side, reps: int, duration: float | None,
           orders: list[tuple[Side, Side]]) -> str:
    machine: dict[str, str] = next(
        (run["machine"] for run in before.runs + after.runs if run.get("machine")), {})
    out = [
        "# Before/after on our server (bench/compare.py)",
        "",
        f"- before: {before.describe()}",
        f"- after: {after.describe()}",
        f"- {reps} repetition(s), order: "
        + ", ".join(" ".join(s.name for s in order) for order in orders)
        + f"; each run: bench/run.py --servers ours, 2 s warm-up + {duration or 10:g} s measured",
        f"- machine: {', '.join(f'{k} {v}' for k, v in machine.items() if v != '?')}",
        "",
        "| metric | before median | before min-max | after median | after min-max "
        "| change of the median | ranges overlap |",
        "|---|---:|---:|---:|---:|---:|:---:|",
    ]
    for m in METRICS:
        b, a = values(before, m), values(after, m)
        pct, overlap = change(b, a, m)
        med_b = statistics.median(b) if b else math.nan
        med_a = statistics.median(a) if a else math.nan
        out.append(f"| {m.title} | {fmt(med_b, m.digits)} | {spread(b, m.digits)} "
                   f"| {fmt(med_a, m.digits)} | {spread(a, m.digits)} | {pct} | {overlap} |")
    out += ["", "Each run (read a run with a high share of other processes on the server core as noise):",
            "", "| rep | side | HITL round trips/s | CPU per HITL round trip / ms | instant req/s "
            "| instant p99 / ms | other processes on the server core / % (instant, HITL) |",
            "|---:|---|---:|---:|---:|---:|---:|"]
    for rep, order in enumerate(orders, 1):
        for side in order:
            run = side.runs[rep - 1]
            out.append(f"| {rep} | {side.name} | {fmt(value(run, ('hitl', 'round_trips_per_s')), 1)} "
                       f"| {fmt(value(run, ('hitl', 'cpu_ms')), 2)} "
                       f"| {fmt(value(run, ('instant', 'req_s')), 1)} "
                       f"| {fmt(value(run, ('instant', 'p99_ms')), 1)} "
                       f"| {fmt(value(run, ('instant', 'other_load_pct')), 0)}, "
                       f"{fmt(value(run, ('hitl', 'other_load_pct')), 0)} |")
    problems = [f"- {side.name} rep {rep}: {run['errors']} errors, "
                f"{value(run, ('log', 'tracebacks')):.0f} tracebacks "
                f"(bench/results/compare/{side.name}-rep{rep}.json, .log)"
                for side in (before, after) for rep, run in enumerate(side.runs, 1)
                if run["errors"] or value(run, ("log", "tracebacks"))]
    if problems:
        out += ["", "Errors seen (the figures of these runs are not comparable):", "", *problems]
    return "\n".join(out) + "\n"


# --- main -------------------------------------------------------------------------------------


def headline(run: dict[str, Any]) -> str:
    return (f"HITL {fmt(value(run, ('hitl', 'round_trips_per_s')), 1)} round trips/s, "
            f"{fmt(value(run, ('hitl', 'cpu_ms')), 2)} ms CPU each; "
            f"instant {fmt(value(run, ('instant', 'req_s')), 1)} req/s; "
            f"other load {fmt(value(run, ('instant', 'other_load_pct')), 0)}/"
            f"{fmt(value(run, ('hitl', 'other_load_pct')), 0)} %; errors {run['errors']}")


def interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # SIGTERM too stops the running server and removes the worktrees


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", required=True, help="git revision measured as 'before'")
    p.add_argument("--after", default=WORKTREE,
                   help=f"git revision, or '{WORKTREE}' (default): this working tree")
    p.add_argument("--reps", type=int, default=3, help="interleaved repetitions (default 3)")
    p.add_argument("--duration", type=float, default=0,
                   help="seconds per measured run (default: run.py's, 10)")
    args = p.parse_args()
    if args.reps < 1 or args.duration < 0:
        raise SystemExit("--reps must be at least 1 and --duration positive")
    signal.signal(signal.SIGTERM, interrupt)
    RUNS_DIR.mkdir(parents=True, exist_ok=True)
    for old in RUNS_DIR.glob("*-rep*.*"):
        old.unlink()
    duration: float | None = args.duration or None
    started = time.monotonic()
    with checkouts(args.before, args.after) as (before, after):
        print(f"before: {before.describe()}\nafter: {after.describe()}", flush=True)
        orders = [(before, after) if rep % 2 == 0 else (after, before) for rep in range(args.reps)]
        for rep, order in enumerate(orders, 1):
            for side in order:
                print(f"repetition {rep}/{args.reps}: {side.name} ...", end=" ", flush=True)
                t0 = time.monotonic()
                side.runs.append(run_once(side, rep, duration))
                print(f"{headline(side.runs[-1])} ({time.monotonic() - t0:.0f} s)", flush=True)
        text = report(before, after, args.reps, duration, orders)
    print()
    print(text)
    REPORT.write_text(text)
    print(f"written to {REPORT.relative_to(ROOT)}, runs in {RUNS_DIR.relative_to(ROOT)}/ "
          f"({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        raise SystemExit("interrupted: the server was stopped and the worktrees removed") from None
