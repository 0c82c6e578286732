"""Where the CPU of a HITL round trip runs, by native library: our app served against LangGraph
alone, each sampled with Linux ``perf`` while it works.

    .venv/bin/python bench/native_split.py [--reps 3] [--seconds 10] [--users 16]
        [--frequency 199] [--name native-split]

``bench/overhead.py`` says how much CPU our served app adds to LangGraph alone on SQLite;
py-spy profiles (``bench/profile_groups.py``) say which Python functions are on the stack. Both
leave open where the added CPU physically runs: the interpreter running Python code (ours,
LangGraph's, Starlette's, uvicorn's), pydantic-core's compiled validators and serialisers,
SQLite's library, the kernel's system calls (sockets, files), or libc. And py-spy counts a
thread blocked in ``fdatasync`` as busy: it gave the turn's end ``COMMIT`` 8% of the samples,
where its CPU (``time.thread_time``) is two thirds of its wall time, the rest the ``fdatasync``
wait of SQLite's inline WAL checkpoints (bench/README.md, "Speed, round twenty-four").

``perf record`` samples the CPU itself at ``--frequency`` Hz and names the shared object each
sample ran in. Each repetition measures, in rotating order, each on core 0:

* **served**: ``bench/servers/llamon.py`` on a fresh SQLite file, ``--users`` users of
  ``bench/hitl_client.py`` (on core 1); CPU per round trip from the process tree's clock ticks;
* **LangGraph alone**: the native graph on our checkpointer (``sqlite-llamon``,
  ``durability="exit"``), one round trip at a time, ``bench/overhead.py``'s denominator, in a
  child process; CPU per round trip from ``time.process_time``.

Each side runs two windows of ``--seconds`` after its warm-up: one not sampled, then one
sampled. The sampled window's shares by group of libraries (``GROUPS``) split the CPU per round
trip of the window that was not, since sampling a server costs it CPU of its own (2-6% at 199 Hz on
the served side, probably the perf event switched at each of its many wake-ups; about a quarter
at 999 Hz; nothing measurable on LangGraph alone): both figures are reported, and what the sampler adds
shows up mostly as the kernel's. The report gives the medians and what the served app adds in
each group. Needs
``perf`` on the PATH and permission to sample a process this user started
(``kernel.perf_event_paranoid`` <= 2). Results: bench/results/NAME.md and .json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(ROOT))

from bench import hitl_client as hc  # noqa: E402
from bench.pgdb import write_results  # noqa: E402
from bench.procs import ServerProcess, tree_cpu_ticks  # noqa: E402

SERVER_CORE, LOAD_CORE = "0", 1
CLK_TCK = os.sysconf("SC_CLK_TCK")
PORT = 9343
WARMUP_SECONDS = 2.0
WARMUP_ROUND_TRIPS = 50
SIDES = ("served", "langgraph")
TITLES = {"served": "our app served (HTTP, SQLite)", "langgraph": "LangGraph alone (our saver)"}

#: (group, pattern of the shared objects' names in it), first match wins; the rest is "other"
GROUPS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("the interpreter: Python code of every package", re.compile(r"^libpython|^python3")),
    ("pydantic-core (validation, JSON of the wire models)", re.compile(r"pydantic_core")),
    ("SQLite's library", re.compile(r"^libsqlite3|^_sqlite3")),
    ("the kernel (system calls: sockets, files)", re.compile(r"^\[kernel")),
    ("libc (malloc, memcpy, ...)", re.compile(r"^libc[.-]|^libm[.-]|^ld-linux")),
)
OTHER = "other compiled modules (orjson, ormsgpack, _asyncio, httptools, ...)"
_REPORT_LINE = re.compile(r"^\s*(?P<share>\d+(?:\.\d+)?)%\s+(?P<dso>\S.*?)\s*$")


@dataclass(frozen=True)
class Sampled:
    """One side's two windows: CPU per round trip without the sampler, and with it, and the
    sampled window's shares by group (applied to the CPU without it)."""

    cpu_ms: float
    sampled_cpu_ms: float
    round_trips: int
    shares: dict[str, float]  # group -> fraction of the samples, summing to 1

    def us_in(self, group: str) -> float:
        return self.cpu_ms * 1e3 * self.shares.get(group, 0.0)


def parse_dso_report(text: str) -> dict[str, float]:
    """``perf report --sort dso`` text: shared object -> percent of the samples."""
    shares: dict[str, float] = {}
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        match = _REPORT_LINE.match(line)
        if match:
            dso = match["dso"]
            shares[dso] = shares.get(dso, 0.0) + float(match["share"])
    return shares


def group_of(dso: str) -> str:
    return next((group for group, pattern in GROUPS if pattern.search(dso)), OTHER)


def grouped(dsos: Mapping[str, float]) -> dict[str, float]:
    """Shares by group, as fractions of the samples that name an object."""
    total = sum(dsos.values())
    if total <= 0:
        raise ValueError("the profile holds no samples")
    out: dict[str, float] = {}
    for dso, percent in dsos.items():
        group = group_of(dso)
        out[group] = out.get(group, 0.0) + percent / total
    return out


def _perf() -> str:
    found = shutil.which("perf")
    if found is None:
        raise SystemExit("perf is not installed (Debian: apt-get install linux-perf)")
    return found


def start_sampling(pid: int, seconds: float, output: Path, frequency: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [_perf(), "record", "-F", str(frequency), "-p", str(pid), "-o", str(output), "--",
         "sleep", f"{seconds:g}"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def finish_sampling(sampler: subprocess.Popen[bytes], output: Path) -> dict[str, float]:
    _, err = sampler.communicate(timeout=120)
    if sampler.returncode != 0 or not output.exists():
        raise RuntimeError(f"perf record failed ({sampler.returncode}): {err.decode()[-500:]}")
    text = subprocess.run(
        [_perf(), "report", "-i", str(output), "--stdio", "--no-children", "--sort", "dso",
         "-g", "none"], capture_output=True, text=True, check=True, timeout=300).stdout
    return grouped(parse_dso_report(text))


def sample_served(seconds: float, users: int, folder: Path, frequency: int) -> Sampled:
    argv = [sys.executable, "-m", "bench.servers.llamon", "--port", str(PORT),
            "--db", str(folder / f"served-{uuid.uuid4().hex}.sqlite3")]
    server = ServerProcess("served", argv, PORT, BENCH / "results" / "logs" / "native-split.log",
                           cores=SERVER_CORE, cwd=ROOT)
    server.start()
    try:
        asyncio.run(hc.hitl_load(PORT, users=users, duration=WARMUP_SECONDS))
        plain = _served_window(server.pid, users, seconds)
        output = folder / "served.perf"
        sampler = start_sampling(server.pid, seconds, output, frequency)
        sampled = _served_window(server.pid, users, seconds)
        shares = finish_sampling(sampler, output)
    finally:
        server.stop()
    return Sampled(plain[0], sampled[0], sampled[1], shares)


def _served_window(pid: int, users: int, seconds: float) -> tuple[float, int]:
    """CPU ms per round trip and round trips of one window of load."""
    ticks = tree_cpu_ticks(pid)
    result = asyncio.run(hc.hitl_load(PORT, users=users, duration=seconds))
    ticks = tree_cpu_ticks(pid) - ticks
    if result.errors.count or not result.round_trips:
        raise RuntimeError(f"served: {result.errors.count} errors, e.g. {result.errors.samples[:2]}")
    return ticks / CLK_TCK * 1e3 / result.round_trips, result.round_trips


def sample_langgraph(seconds: float, folder: Path, frequency: int) -> Sampled:
    argv = [sys.executable, str(Path(__file__).resolve()), "--langgraph-child", f"{seconds:g}"]
    if (os.cpu_count() or 1) >= 2:
        argv = ["taskset", "-c", SERVER_CORE, *argv]
    child = subprocess.Popen(argv, cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True)
    assert child.stdin is not None and child.stdout is not None
    try:
        plain = json.loads(_child_line(child.stdout))
        if _child_line(child.stdout) != "ready":
            raise RuntimeError("LangGraph alone's child did not say it was ready")
        output = folder / "langgraph.perf"
        sampler = start_sampling(child.pid, seconds, output, frequency)
        child.stdin.write("go\n")
        child.stdin.flush()
        measured = json.loads(_child_line(child.stdout))
        shares = finish_sampling(sampler, output)
    finally:
        with contextlib.suppress(OSError):
            child.stdin.close()
        child.wait(timeout=60)
    return Sampled(plain["cpu_ms"], measured["cpu_ms"], measured["round_trips"], shares)


def _child_line(stdout: IO[str]) -> str:
    line = stdout.readline()
    if not line:
        raise RuntimeError("LangGraph alone's child ended early (its error is above)")
    return line.strip()


async def _langgraph_child(seconds: float) -> None:
    """The child's side: warm up, run a window and print its figures, say "ready", wait for
    "go" (the sampler attached), then run and print a second window."""
    from bench import langgraph_alone as alone

    variant = alone.Variant("sqlite-llamon", "exit")
    with tempfile.TemporaryDirectory(prefix="native-split-") as folder:
        async with alone.checkpointer(variant.checkpointer, folder) as opened:
            graph = alone.compile_graph(variant, opened.saver)

            async def window() -> None:
                n, cpu0 = 0, time.process_time()
                deadline = time.perf_counter() + seconds
                while time.perf_counter() < deadline:
                    await alone.round_trip(graph, variant.durability, False)
                    n += 1
                cpu_ms = (time.process_time() - cpu0) / n * 1e3
                print(json.dumps({"round_trips": n, "cpu_ms": cpu_ms}), flush=True)

            for _ in range(WARMUP_ROUND_TRIPS):
                await alone.round_trip(graph, variant.durability, False)
            await window()
            print("ready", flush=True)
            await asyncio.to_thread(sys.stdin.readline)
            await window()


def measure_all(args: argparse.Namespace) -> dict[str, list[Sampled]]:
    os.sched_setaffinity(0, {LOAD_CORE} if (os.cpu_count() or 1) >= 2 else {0})
    sides: dict[str, list[Sampled]] = {side: [] for side in SIDES}
    with tempfile.TemporaryDirectory(prefix="native-split-") as name:
        folder = Path(name)
        runs: dict[str, Callable[[], Sampled]] = {
            "served": lambda: sample_served(args.seconds, args.users, folder, args.frequency),
            "langgraph": lambda: sample_langgraph(args.seconds, folder, args.frequency),
        }
        for rep in range(args.reps):
            for side in SIDES[rep % 2:] + SIDES[:rep % 2]:
                sampled = runs[side]()
                sides[side].append(sampled)
                print(f"repetition {rep + 1}/{args.reps}: {side}: {sampled.cpu_ms:.3f} ms CPU per"
                      f" round trip ({sampled.sampled_cpu_ms:.3f} while sampled,"
                      f" {sampled.round_trips} round trips)", flush=True)
    return sides


def report(sides: Mapping[str, list[Sampled]]) -> str:
    served, alone = sides["served"], sides["langgraph"]
    groups = [group for group, _ in GROUPS] + [OTHER]

    def median_us(samples: list[Sampled], group: str | None) -> float:
        return statistics.median(s.cpu_ms * 1e3 if group is None else s.us_in(group)
                                 for s in samples)

    added_total = median_us(served, None) - median_us(alone, None)
    lines = ["CPU per HITL round trip by where it ran, µs (median of the repetitions):", "",
             f"| where | {TITLES['served']} | {TITLES['langgraph']} | added by the app |"
             " share of what it adds |", "|---|---:|---:|---:|---:|"]
    for group in [*groups, None]:
        ours, theirs = median_us(served, group), median_us(alone, group)
        added = ours - theirs
        share = f"{added / added_total:.0%}" if added_total > 0 else "-"
        title = "**all**" if group is None else group
        lines.append(f"| {title} | {ours:.0f} | {theirs:.0f} | {added:+.0f} | {share} |")
    lines += ["", "| CPU ms per round trip, median | not sampled (the split above) | while sampled |",
              "|---|---:|---:|"]
    for side, samples in (("served", served), ("langgraph", alone)):
        lines.append(f"| {TITLES[side]} | {statistics.median(s.cpu_ms for s in samples):.3f} |"
                     f" {statistics.median(s.sampled_cpu_ms for s in samples):.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--seconds", type=float, default=10.0, help="sampled seconds per side")
    p.add_argument("--users", type=int, default=16)
    p.add_argument("--frequency", type=int, default=199, help="perf's samples per second")
    p.add_argument("--name", default="native-split", help="bench/results/NAME.md and .json")
    p.add_argument("--langgraph-child", type=float, metavar="SECONDS", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.langgraph_child is not None:
        asyncio.run(_langgraph_child(args.langgraph_child))
        return
    if args.reps < 1 or args.seconds <= 0 or args.users < 1 or args.frequency < 1:
        p.error("--reps, --users, --frequency: at least 1; --seconds: above 0")
    _perf()
    started = time.time()
    sides = measure_all(args)
    data: dict[str, Any] = {
        "settings": vars(args), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "seconds": time.time() - started,
        "sides": {side: [{"cpu_ms": s.cpu_ms, "sampled_cpu_ms": s.sampled_cpu_ms,
                          "round_trips": s.round_trips, "shares": s.shares}
                         for s in samples] for side, samples in sides.items()},
    }
    text = report(sides)
    write_results(args.name, f"Where a HITL round trip's CPU runs ({data['date']})", text, data)


if __name__ == "__main__":
    main()
