"""Real ``llamon-agent serve`` processes on real sockets.

``launch(target, db)`` starts ``python -m llamon_agent.cli serve TARGET --port P --db DB`` from the
repository root (so ``app.main`` and ``tests.process.agents`` import), waits until the agent card
answers, and returns a :class:`Server`. Every process a fixture started is SIGKILLed at teardown.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import A2AClient

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_TARGET = "app.main:AGENTS"
SLOW_TARGET = "tests.process.agents:SLOW_AGENTS"
STARTUP_TIMEOUT = 20.0
CARD_PATH = "/.well-known/agent-card.json"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """One running server: its base URL, its process and the file its output goes to."""

    url: str
    proc: subprocess.Popen[bytes]
    log_path: Path
    target: str
    db: Path | str
    _log_file: Any = field(repr=False, default=None)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def sigkill(self) -> int:
        """Kill without any chance to clean up (no lifespan shutdown, no flush)."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        code = self.proc.wait(timeout=10)
        self._close_log()
        return code

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self._close_log()

    def _close_log(self) -> None:
        if self._log_file is not None and not self._log_file.closed:
            self._log_file.close()


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("LLAMON_MODEL", None)  # the examples must run offline: exact-match normalisation only
    env.pop("LLAMON_DB", None)
    env.pop("LLAMON_DATABASE_URL", None)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = os.pathsep.join(p for p in [str(REPO_ROOT), env.get("PYTHONPATH", "")] if p)
    return env


def _wait_ready(server: Server, deadline: float, timeout: float = STARTUP_TIMEOUT) -> bool:
    """True once the card answers; False when the process died (the caller reads the log)."""
    with httpx.Client(trust_env=False, timeout=1.0) as http:
        while time.monotonic() < deadline:
            if server.proc.poll() is not None:
                return False
            try:
                response = http.get(server.url + CARD_PATH)
            except httpx.TransportError:
                time.sleep(0.05)
                continue
            if response.status_code == 200:
                return True
            time.sleep(0.05)
    server.stop()
    raise TimeoutError(
        f"server {server.target} did not answer {CARD_PATH} within {timeout}s:\n"
        + server.log()
    )


def serve_command(
    target: str, port: int, db: Path | str, extra_args: Sequence[str] = ()
) -> list[str]:
    """The ``llamon-agent serve`` command line the helpers run (``extra_args`` go last)."""
    return [
        sys.executable, "-m", "llamon_agent.cli", "serve", target,
        "--host", "127.0.0.1", "--port", str(port), "--db", str(db),
        "--log-level", "warning", *extra_args,
    ]


def child_env() -> dict[str, str]:
    """The environment server processes run with (offline, no ``LLAMON_DB``)."""
    return _child_env()


def start_server(
    target: str,
    db: Path | str,
    log_dir: Path,
    extra_args: Sequence[str] = (),
    preexec_fn: Callable[[], None] | None = None,
    startup_timeout: float = STARTUP_TIMEOUT,
    env: Mapping[str, str] | None = None,
) -> Server:
    """Start ``llamon-agent serve`` and wait (bounded) until it answers; retry a taken port.

    ``extra_args`` are appended to the command line; ``preexec_fn`` runs in the child before
    the server starts (e.g. to lower its file-descriptor limit); ``startup_timeout`` bounds the
    wait (worker processes each import the whole package before they answer); ``env`` is
    merged into the child's environment (e.g. ``LLAMON_REVIEWER_TOKEN``)."""
    last_log = ""
    for attempt in range(3):
        port = _free_port()
        log_path = log_dir / f"server-{port}-{attempt}-{time.monotonic_ns()}.log"
        log_file = log_path.open("wb")
        command = serve_command(target, port, db, extra_args)
        proc = subprocess.Popen(
            command,
            cwd=REPO_ROOT,
            env={**_child_env(), **(env or {})},
            stdout=log_file,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            preexec_fn=preexec_fn,
        )
        server = Server(f"http://127.0.0.1:{port}", proc, log_path, target, db, log_file)
        if _wait_ready(server, time.monotonic() + startup_timeout, startup_timeout):
            return server
        server.stop()
        last_log = server.log()
        if "address already in use" not in last_log.lower():
            break
    raise RuntimeError(f"server {target} exited during startup:\n{last_log}")


@contextmanager
def serving(
    target: str,
    folder: Path,
    *,
    api_keys: Mapping[str, str] | None = None,
    env: Mapping[str, str] | None = None,
) -> Iterator[Server]:
    """``llamon-agent serve TARGET`` on a new SQLite file in ``folder``, stopped on leaving;
    with ``api_keys`` (principal -> key), an ``--api-keys`` file requires them."""
    extra_args: list[str] = []
    if api_keys is not None:
        keys = folder / "api-keys"
        keys.write_text("".join(f"{who}={key}\n" for who, key in api_keys.items()))
        extra_args = ["--api-keys", str(keys)]
    server = start_server(target, folder / "llamon.sqlite3", folder, extra_args=extra_args,
                          env=env)
    try:
        yield server
    finally:
        server.stop()


Launch = Callable[..., Server]


@pytest.fixture
def launch(tmp_path: Path) -> Iterator[Launch]:
    """Start servers for one test; all of them are killed at teardown."""
    started: list[Server] = []

    def _launch(
        target: str = EXAMPLE_TARGET,
        db: Path | None = None,
        extra_args: Sequence[str] = (),
        preexec_fn: Callable[[], None] | None = None,
        startup_timeout: float = STARTUP_TIMEOUT,
        env: Mapping[str, str] | None = None,
    ) -> Server:
        server = start_server(
            target, db or tmp_path / "llamon.sqlite3", tmp_path, extra_args, preexec_fn,
            startup_timeout, env,
        )
        started.append(server)
        return server

    yield _launch
    for server in started:
        server.stop()


def _module_server(target: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("server")
    server = start_server(target, folder / "llamon.sqlite3", folder)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def example_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The example agents (``app.main:AGENTS``) on a SQLite file, shared by one module."""
    yield from _module_server(EXAMPLE_TARGET, tmp_path_factory)


@pytest.fixture(scope="module")
def slow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """The test agents of ``tests/process/agents.py``, shared by one module."""
    yield from _module_server(SLOW_TARGET, tmp_path_factory)


@asynccontextmanager
async def connect(server: Server, **kwargs: Any) -> AsyncIterator[A2AClient]:
    """A raw wire client on a real socket (no proxies from the environment)."""
    kwargs.setdefault("timeout", 30)
    async with httpx.AsyncClient(base_url=server.url, trust_env=False, **kwargs) as http:
        yield A2AClient(http)
