"""``llamon-agent serve --reload``: a real server restarts when a Python file under the working
folder changes, and stops cleanly; ``--reload`` with several workers is refused (issue 13)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from llamon_agent import cli

AGENTS = '''
from typing import Any, TypedDict

from langgraph.graph import START, StateGraph

from llamon_agent import Agent


class State(TypedDict, total=False):
    result: Any


graph = StateGraph(State)
graph.add_node("done", lambda state: {{"result": 1}})
graph.add_edge(START, "done")
AGENTS = [Agent("echo", graph, name="Echo", description={description!r})]
'''
#: bounds of the waits below; a reload normally takes about a second
STARTUP = 30.0
RELOAD = 30.0


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _description(http: httpx.Client, url: str) -> str | None:
    try:
        answer = http.get(url, headers={"Accept": "application/json"})
    except httpx.TransportError:
        return None  # not listening yet, or restarting
    if answer.status_code != 200:
        return None
    agents: list[dict[str, Any]] = answer.json()["agents"]
    return str(agents[0]["description"])


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "tinyagents.py").write_text(AGENTS.format(description="first version"))
    return tmp_path


@pytest.fixture
def server(folder: Path) -> Iterator[tuple[subprocess.Popen[bytes], str, Path]]:
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("LLAMON_")}
    env.update(PYTHONUNBUFFERED="1", PYTHONDONTWRITEBYTECODE="1")
    log = folder / "server.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "llamon_agent.cli", "serve", "tinyagents:AGENTS", "--reload",
             "--port", str(port), "--db", "memory://"],
            cwd=folder, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            yield proc, f"http://127.0.0.1:{port}/", log
        finally:
            if proc.poll() is None:  # the test failed before stopping it: no process left
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def _until(check: Any, seconds: float, proc: subprocess.Popen[bytes], log: Path) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text(errors="replace")
        value = check()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"not within {seconds} s:\n{log.read_text(errors='replace')}")


def test_a_changed_module_is_served_after_a_reload(
    folder: Path, server: tuple[subprocess.Popen[bytes], str, Path]
) -> None:
    proc, url, log = server
    module = folder / "tinyagents.py"
    with httpx.Client(trust_env=False, timeout=5) as http:
        assert _until(lambda: _description(http, url), STARTUP, proc, log) == "first version"
        module.write_text(AGENTS.format(description="the second, longer version"))
        touched = time.monotonic()

        def reloaded() -> bool:
            nonlocal touched
            if time.monotonic() - touched > 2:  # a change the watcher saw before it started
                os.utime(module)
                touched = time.monotonic()
            return _description(http, url) == "the second, longer version"

        _until(reloaded, RELOAD, proc, log)
    os.killpg(proc.pid, signal.SIGTERM)  # the reloader and the server it runs
    assert proc.wait(timeout=20) == 0, log.read_text(errors="replace")
    text = log.read_text(errors="replace")
    assert "detected changes in 'tinyagents.py'. Reloading..." in text
    assert "Traceback" not in text


def test_reload_is_refused_with_several_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli, "build_app", lambda *a, **kw: pytest.fail("the app was built"))
    monkeypatch.setattr(cli, "serve", lambda *a, **kw: pytest.fail("served"))
    with pytest.raises(SystemExit) as exited:
        cli.main(["serve", "--reload", "--workers", "2"])
    assert exited.value.code == (
        "error: --reload runs one server process: it cannot be used with --workers 2")
