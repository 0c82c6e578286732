"""Process helpers shared by the benchmark scripts: pinning, /proc readings, start-up wait."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

CARD_PATH = "/.well-known/agent-card.json"


def pinned(core: int, argv: list[str]) -> list[str]:
    return ["taskset", "-c", str(core), *argv] if (os.cpu_count() or 1) >= 2 else argv


def cpu_ticks(pid: int) -> int:
    """utime + stime of the whole process (all threads), in clock ticks."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


def tree_pids(pid: int) -> list[int]:
    """``pid`` and every live descendant (the workers of a multi-process server)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # ended meanwhile
            continue
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


def tree_cpu_ticks(pid: int) -> int:
    """utime + stime of ``pid`` and its live descendants, in clock ticks."""
    total = 0
    for each in tree_pids(pid):
        with contextlib.suppress(OSError):  # ended meanwhile
            total += cpu_ticks(each)
    return total


def tree_rss_kb(pid: int) -> int:
    """``VmRSS`` of ``pid`` and its live descendants, in kB."""
    total = 0
    for each in tree_pids(pid):
        with contextlib.suppress(OSError):
            total += proc_status(each, "VmRSS")
    return total


def tree_file_io(pid: int) -> tuple[int, int]:
    """Bytes ``pid`` and its live descendants passed to ``read``/``pread`` and ``write``/``pwrite``
    (``rchar``, ``wchar`` of /proc/PID/io): a server's file reads and writes, its page cache's
    misses included, which the OS's cache serves without a disk read. Socket ``recv``/``send``
    are not counted; pipes and the server's log file are (a benchmark's server logs warnings
    only)."""
    read = written = 0
    for each in tree_pids(pid):
        with contextlib.suppress(OSError):
            fields = dict(line.split(": ") for line in
                          Path(f"/proc/{each}/io").read_text().splitlines())
            read += int(fields["rchar"])
            written += int(fields["wchar"])
    return read, written


def core_busy_ticks(core: int) -> int:
    """Busy ticks (everything but idle and iowait) of one core, from /proc/stat."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith(f"cpu{core} "):
            v = [int(x) for x in line.split()[1:]]
            return sum(v) - v[3] - v[4]
    return 0


def machine_busy_ticks() -> int:
    """Busy ticks of all cores together (the ``cpu`` line of /proc/stat)."""
    v = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    return sum(v) - v[3] - v[4]


def proc_status(pid: int, key: str) -> int:
    """A ``kB`` field of ``/proc/<pid>/status`` (``VmRSS``, ``VmHWM``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return 0


def wait_for_card(proc: subprocess.Popen[bytes], port: int, log: Path, name: str,
                  timeout: float) -> bool:
    """True once the server on ``port`` serves its agent card; exits the script when the
    process dies at start; False when ``timeout`` passes (the caller stops the process)."""
    url = f"http://127.0.0.1:{port}{CARD_PATH}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{name} exited at start:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=1) as answer:
                if answer.status == 200:
                    return True
        except OSError:
            time.sleep(0.2)
    return False


def log_summary(log: Path, root: Path) -> dict[str, Any]:
    """Tracebacks in a server's log, and its most frequent message and exception lines."""
    text = log.read_text(errors="replace") if log.exists() else ""
    lines = Counter(
        re.sub(r"[0-9a-f]{8}-[0-9a-f-]{27}|[0-9a-f]{32}", "<id>", line)
        for line in text.splitlines()
        if line and not line[0].isspace() and not line.startswith(("Traceback", "During handling",
                                                                    "The above exception"))
    )
    return {"tracebacks": text.count("Traceback (most recent call last)"),
            "top_lines": lines.most_common(6), "log": str(log.relative_to(root))}


def importing_from(tree: Path, env: dict[str, str] | None = None) -> dict[str, str]:
    """``env`` (default: this process's) with ``tree`` first on ``PYTHONPATH``. A console script
    (``llamon-agent serve``) imports the package of the venv's editable install wherever it runs;
    a benchmark started from another checkout (an A/B against an older commit) must serve that
    checkout's package (bench/README.md, "Speed, round twelve": a run that did not)."""
    found = dict(os.environ if env is None else env)
    found["PYTHONPATH"] = os.pathsep.join(filter(None, (str(tree), found.get("PYTHONPATH"))))
    return found


class ServerProcess:
    """One server started from ``argv`` (its output to ``log``), awaited until it serves its
    agent card on ``port``, stopped by its PID: SIGTERM, SIGKILL after 15 s. ``cores``: the cores
    it (and any worker it starts) may run on, ``None`` for all of them."""

    def __init__(self, name: str, argv: list[str], port: int, log: Path, *,
                 cores: str | None, cwd: Path, env: dict[str, str] | None = None) -> None:
        self.name, self.argv, self.port, self.log = name, argv, port, log
        self.cores, self.cwd, self.env = cores, cwd, env
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def start(self, timeout: float = 120.0) -> None:
        self.log.parent.mkdir(parents=True, exist_ok=True)
        argv = self.argv
        if self.cores is not None and (os.cpu_count() or 1) >= 2:
            argv = ["taskset", "-c", self.cores, *argv]
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(argv, cwd=self.cwd, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL,
                                         env=importing_from(self.cwd, self.env))
        if not wait_for_card(self.proc, self.port, self.log, self.name, timeout):
            self.stop()
            raise SystemExit(f"{self.name} did not serve its agent card within {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        # its workers: they end with it, else we end them below (the same processes: a pid
        # is only signalled while its start time is the one read here)
        started = [(pid, _start_time(pid)) for pid in tree_pids(self.proc.pid)[1:]]
        self.proc.terminate()
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=5)
        for pid, start in started:
            if start is not None and _start_time(pid) == start:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


def _start_time(pid: int) -> int | None:
    """The process's start time (clock ticks after boot), None once it has ended."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2 :].split()[19])
