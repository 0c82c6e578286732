"""A real ``llamon-agent serve --workers 2`` on PostgreSQL with Redis events: two worker
processes share the listening socket and both serve; ``/metrics`` adds up what every worker
counted; a worker that dies is replaced; SIGTERM to the parent stops every worker through its
lifespan's shutdown; a parent killed outright takes its workers with it.

Which worker answers a new connection is the kernel's choice, so the test makes it: while one
worker is stopped (SIGSTOP) only the other can accept."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from llamon_agent.server.metrics import MULTIPROC_DIR, shared_metrics
from tests.observability.series import Series, parse_metrics, value
from tests.process.conftest import (
    EXAMPLE_TARGET,
    REPO_ROOT,
    Launch,
    Server,
    _free_port,
    child_env,
    connect,
    serve_command,
)

pytest.importorskip("psycopg_pool", reason="the postgres extra is not installed")
pytest.importorskip("redis", reason="the redis extra is not installed")

ASK = "이 서류를 검증해줘"
READY = "Application startup complete."
#: seconds to wait for what should happen; generous: each worker imports the whole package
WAIT = 60.0


def _workers(parent: int) -> list[int]:
    """The worker processes of ``parent`` (multiprocessing's resource tracker is a child too)."""
    try:
        children = Path(f"/proc/{parent}/task/{parent}/children").read_text().split()
    except FileNotFoundError:
        return []
    return sorted(int(pid) for pid in children if b"spawn_main" in _cmdline(int(pid)))


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return b""


def _state(pid: int) -> str | None:
    """The process's state letter (``T`` stopped, ``Z`` zombie), ``None`` once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except FileNotFoundError:
        return None


def _gone(pid: int) -> bool:
    return _state(pid) in (None, "Z")


def _wait(done: Callable[[], bool], what: str, server: Server) -> None:
    deadline = time.monotonic() + WAIT
    while not done():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WAIT}s: {what}\n{server.log()}")
        time.sleep(0.05)


def _metrics_folder(pid: int) -> str:
    environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    [folder] = [v.partition(b"=")[2] for v in environ if v.startswith(b"PROMETHEUS_MULTIPROC_DIR=")]
    return folder.decode()


@contextmanager
def _stopped(pid: int, server: Server) -> Iterator[None]:
    """``pid`` stopped: it accepts nothing until it continues."""
    os.kill(pid, signal.SIGSTOP)
    try:
        _wait(lambda: _state(pid) == "T", f"worker {pid} stopped", server)
        yield
    finally:
        os.kill(pid, signal.SIGCONT)


@contextmanager
def _reaped(server: Server) -> Iterator[set[int]]:
    """Workers this test saw are killed at its end, should the test fail before they stop
    (the launch fixture kills only the parent)."""
    seen: set[int] = set()
    try:
        yield seen
    finally:
        for pid in seen:
            if not _gone(pid) and b"spawn_main" in _cmdline(pid):
                os.kill(pid, signal.SIGCONT)
                os.kill(pid, signal.SIGKILL)


def _launch(launch: Launch, postgres_url: str, redis_prefix: str) -> Server:
    return launch(EXAMPLE_TARGET, db=postgres_url, extra_args=[
        "--workers", "2", "--events", f"redis://127.0.0.1:6379/0?prefix={redis_prefix}",
        "--log-level", "info", "--db-pool-size", "3",
    ], startup_timeout=WAIT)


def _ready(server: Server, count: int) -> None:
    _wait(lambda: server.log().count(READY) == count,
          f"{count} workers completed their startup", server)


async def _ask(server: Server, context: str) -> dict[str, Any]:
    async with connect(server) as client:  # a new connection: the running worker takes it
        task = await client.send(ASK, context_id=context, agent_id="document-review")
    assert task["status"]["state"] == "input-required", task
    return task


async def _get(server: Server, task_id: str) -> dict[str, Any]:
    async with connect(server) as client:
        return await client.result("tasks/get", {"id": task_id})


async def _scrape(server: Server) -> Series:
    async with connect(server) as client:
        response = await client.http.get("/metrics")
    assert response.status_code == 200, response.text
    return parse_metrics(response.text)


def _sent(series: Series) -> float:
    return value(series, "llamon_requests_total", method="message/send", outcome="ok")


async def test_two_workers_share_the_socket_and_add_up_their_metrics(
    launch: Launch, postgres_url: str, redis_prefix: str
) -> None:
    server = _launch(launch, postgres_url, redis_prefix)
    parent = server.proc.pid
    with _reaped(server) as seen:
        _ready(server, 2)
        first, second = workers = _workers(parent)
        seen.update(workers)
        for pid in workers:  # uvicorn's line of each worker process
            assert f"Started server process [{pid}]" in server.log()
        assert "workers: 2 processes share the listening socket" in server.log()
        # every worker's stream events go through Redis (its start-up line)
        assert server.log().count("events: redis://127.0.0.1:6379/0") == 2
        # each worker opens its own pool, of the size --db-pool-size gives
        assert server.log().count("database pool: up to 3 connections") == 2
        folder = _metrics_folder(first)
        assert _metrics_folder(second) == folder
        assert Path(folder).is_dir()

        with _stopped(second, server):  # only the first worker serves
            asked = [await _ask(server, f"workers-a{i}") for i in range(2)]
            assert _sent(await _scrape(server)) == 2
        with _stopped(first, server):  # only the second: the same database, its own counts
            asked += [await _ask(server, f"workers-b{i}") for i in range(3)]
            got = await _get(server, asked[0]["id"])  # asked through the first worker
            assert (got["id"], got["status"]["state"]) == (asked[0]["id"], "input-required")
            series = await _scrape(server)
        # the second worker's /metrics holds the first worker's requests too
        assert _sent(series) == 5
        assert value(series, "llamon_db_pool_max") == 3  # the answering worker's own pool
        assert value(series, "llamon_requests_total", method="tasks/get", outcome="ok") == 1
        assert value(series, "llamon_request_duration_seconds_count", method="message/send") == 5
        assert value(series, "llamon_tasks", state="input-required") == 5  # read from storage
        assert value(series, "llamon_stream_subscribers") == 0
        assert not [labels for _, labels in series if any(k == "pid" for k, _ in labels)]

        # a worker that dies is replaced, and what it counted stays counted
        os.kill(first, signal.SIGKILL)
        _wait(lambda: len(set(_workers(parent)) - {first}) == 2, "a third worker", server)
        [third] = set(_workers(parent)) - {second}
        seen.add(third)
        _ready(server, 3)
        with _stopped(second, server):
            series = await _scrape(server)  # answered by the third worker
        assert _sent(series) == 5

        server.proc.send_signal(signal.SIGTERM)
        assert server.proc.wait(timeout=WAIT) == 0
        for pid in (second, third):
            _wait(partial(_gone, pid), f"worker {pid} exited", server)
    log = server.log()
    assert log.count("Application shutdown complete.") == 2  # both lifespans shut down
    for pid in (second, third):
        assert f"Finished server process [{pid}]" in log
    assert not Path(folder).exists()  # the parent removed the metrics folder


async def small_app(scope: Any, receive: Any, send: Any) -> None:
    """An ASGI app with a lifespan that opens nothing: the tests of the workers' parent."""
    if scope["type"] == "lifespan":
        while (await receive())["type"] != "lifespan.shutdown":
            await send({"type": "lifespan.startup.complete"})
        await send({"type": "lifespan.shutdown.complete"})
        return
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}"})


#: the CLI's checks pass on these; ``small_app`` and ``failing_startup`` open neither
UNUSED_BACKENDS = ["--events", "redis://127.0.0.1:6379/0?prefix=llamon_t_unused:"]
UNUSED_DATABASE = "postgresql://postgres@127.0.0.1:5432/test"


async def test_workers_stop_when_their_parent_is_killed(launch: Launch) -> None:
    server = launch("tests.process.test_workers:small_app", db=UNUSED_DATABASE, extra_args=[
        "--workers", "2", *UNUSED_BACKENDS, "--log-level", "info"], startup_timeout=WAIT)
    with _reaped(server) as seen:
        _ready(server, 2)
        workers = _workers(server.proc.pid)
        seen.update(workers)
        assert len(workers) == 2
        folder = _metrics_folder(workers[0])
        try:
            assert server.sigkill() == -signal.SIGKILL
            for pid in workers:  # each worker notices and shuts down through its lifespan
                _wait(partial(_gone, pid), f"worker {pid} exited", server)
        finally:  # a killed parent cannot remove its metrics folder
            for file in Path(folder).glob("*.db"):
                file.unlink()
            Path(folder).rmdir()
    assert server.log().count("Application shutdown complete.") == 2


def test_the_metrics_folder_lives_while_the_workers_do(monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent's side of the multiprocess mode, without processes: a fresh folder named in
    the environment the workers start in, a dead worker's open-stream gauge dropped and its
    counters kept, and the environment and the disk as they were afterwards."""
    monkeypatch.setenv(MULTIPROC_DIR, "/an/operator's/folder")
    with shared_metrics() as exited:
        folder = Path(os.environ[MULTIPROC_DIR])
        assert folder.is_dir() and folder.name.startswith("llamon-metrics-")
        assert list(folder.iterdir()) == []
        for name in ("gauge_livesum_123.db", "counter_123.db", "gauge_livesum_456.db"):
            (folder / name).touch()
        exited(123)
        assert sorted(f.name for f in folder.iterdir()) == ["counter_123.db",
                                                           "gauge_livesum_456.db"]
    assert os.environ[MULTIPROC_DIR] == "/an/operator's/folder"
    assert not folder.exists()
    monkeypatch.delenv(MULTIPROC_DIR)
    with shared_metrics():
        pass
    assert MULTIPROC_DIR not in os.environ


async def failing_startup(scope: Any, receive: Any, send: Any) -> None:
    """An ASGI app whose startup fails, as one on an unreachable database would."""
    if scope["type"] == "lifespan":
        await receive()
        await send({"type": "lifespan.startup.failed", "message": "cannot start"})


def test_a_worker_that_cannot_start_stops_the_server(tmp_path: Path) -> None:
    """Status 3, as one process whose startup fails: not workers restarted for ever."""
    command = serve_command(
        "tests.process.test_workers:failing_startup", _free_port(), UNUSED_DATABASE,
        ["--workers", "2", *UNUSED_BACKENDS, "--log-level", "info"],
    )
    done = subprocess.run(command, cwd=REPO_ROOT, env=child_env(), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 3, done.stderr
    assert done.stderr.count("Application startup failed. Exiting.") >= 1, done.stderr
    assert "failed to start; stopping" in done.stderr
    assert "starting another" not in done.stderr
