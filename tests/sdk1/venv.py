"""The cached virtual environment of the official ``a2a-sdk`` 1.x client.

``a2a-sdk==0.3.26`` stays a test dependency of the main environment, so the 1.x client cannot be
imported next to it: it lives in ``tests/.venvs/a2a-sdk-1`` (ignored by git), built on first use
and rebuilt when its pinned version differs. Two test processes may start at once: the build
runs under an exclusive lock and into a temporary folder that is renamed into place only once
its import check passed, so no process ever runs a half-installed client.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
VENVS = REPO_ROOT / "tests" / ".venvs"
SDK1_VENV = VENVS / "a2a-sdk-1"
SDK1_VERSION = "1.3.0"
# the client alone: the JSON-RPC transport needs nothing beyond the base package
SDK1_PACKAGES = (f"a2a-sdk=={SDK1_VERSION}",)
BUILD_TIMEOUT = 600.0
CHECK = (
    "import importlib.metadata as m, a2a.client, a2a.client.transports.jsonrpc; "
    "print(m.version('a2a-sdk'))"
)


class VenvError(RuntimeError):
    """The 1.x client's environment could not be built (no index, a failed install)."""


@dataclass(frozen=True)
class Sdk1Venv:
    python: Path
    version: str
    built_in: float | None  # seconds this process spent building it; None when it was cached


def _python(venv: Path) -> Path:
    return venv / "bin" / "python"


def installed_version(venv: Path) -> str | None:
    """The a2a-sdk version ``venv`` imports ``a2a.client`` with, or None (missing, broken)."""
    python = _python(venv)
    if not python.exists():
        return None
    done = subprocess.run([str(python), "-c", CHECK], capture_output=True, text=True,
                          check=False, timeout=60, cwd=VENVS)
    return done.stdout.strip() or None if done.returncode == 0 else None


def _run(command: list[str]) -> None:
    done = subprocess.run(command, capture_output=True, text=True, check=False,
                          timeout=BUILD_TIMEOUT)
    if done.returncode != 0:
        raise VenvError(f"{' '.join(command)} exited {done.returncode}:\n"
                        f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}")


def _build(target: Path) -> None:
    """Build into a fresh folder beside ``target`` and swap it in once it imports."""
    staging = target.with_name(f"{target.name}.building-{os.getpid()}")
    shutil.rmtree(staging, ignore_errors=True)
    try:
        _run([sys.executable, "-m", "venv", str(staging)])
        _run([str(_python(staging)), "-m", "pip", "install", "-q",
              "--disable-pip-version-check", *SDK1_PACKAGES])
        if installed_version(staging) != SDK1_VERSION:
            raise VenvError(f"{staging} does not import a2a.client {SDK1_VERSION}")
        # a venv finds its prefix from where bin/python sits, so a renamed one keeps working
        stale = target.with_name(f"{target.name}.stale-{os.getpid()}")
        if target.exists():
            target.rename(stale)
        staging.rename(target)
        shutil.rmtree(stale, ignore_errors=True)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def ensure_sdk1_venv(target: Path = SDK1_VENV) -> Sdk1Venv:
    """The 1.x client's python, building its environment when missing or outdated."""
    if installed_version(target) == SDK1_VERSION:
        return Sdk1Venv(_python(target), SDK1_VERSION, None)
    target.parent.mkdir(parents=True, exist_ok=True)
    with (target.parent / f"{target.name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released by the kernel if this process dies
        if installed_version(target) == SDK1_VERSION:  # another process built it meanwhile
            return Sdk1Venv(_python(target), SDK1_VERSION, None)
        started = time.monotonic()
        _build(target)
        return Sdk1Venv(_python(target), SDK1_VERSION, time.monotonic() - started)


if __name__ == "__main__":
    venv = ensure_sdk1_venv()
    print(f"{venv.python} a2a-sdk {venv.version} "
          + ("cached" if venv.built_in is None else f"built in {venv.built_in:.1f}s"))
