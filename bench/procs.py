"""Process helpers shared by the benchmark scripts: pinning, /proc readings, start-up wait."""

from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from pathlib import Path

CARD_PATH = "/.well-known/agent-card.json"


def pinned(core: int, argv: list[str]) -> list[str]:
    return ["taskset", "-c", str(core), *argv] if (os.cpu_count() or 1) >= 2 else argv


def cpu_ticks(pid: int) -> int:
    """utime + stime of the whole process (all threads), in clock ticks."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()
    return int(fields[11]) + int(fields[12])


def core_busy_ticks(core: int) -> int:
    """Busy ticks (everything but idle and iowait) of one core, from /proc/stat."""
    for line in Path("/proc/stat").read_text().splitlines():
        if line.startswith(f"cpu{core} "):
            v = [int(x) for x in line.split()[1:]]
            return sum(v) - v[3] - v[4]
    return 0


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
