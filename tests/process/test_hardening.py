"""The server process against hostile clients and a second server (issue 8, findings 4, 6, 8).

Real ``llamon-agent serve`` processes on real sockets:

- one server per SQLite file: a second server on a file in use refuses to start, naming the
  file, and leaves the first server's tasks exactly as they were (finding 6); a restart after
  SIGKILL starts, since the OS released the lock with the process;
- the socket is bound before the app's startup: a second server on a busy port fails before
  it opens (or creates) its database;
- connections: a timeout covers the request head and body (also of a keep-alive connection's
  next request), the head is bounded, keep-alive is bounded, open connections are capped,
  pipelined requests are answered in order, and running out of file descriptors logs a line per interval, not a
  traceback per accept, and the server answers again once the load leaves (finding 4);
- the card's ``url`` is ``--public-url``, else the local address of the connection, never the
  ``Host`` header (finding 8).

Waits are bounded liveness checks (the server must close or answer at all), never speed checks.
"""

from __future__ import annotations

import asyncio
import dataclasses
import resource
import select
import socket
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from llamon_agent.cli import main
from llamon_agent.core.bounds import Limits
from llamon_agent.server.connection import MAX_HEAD_BYTES
from tests.process.agents import FIRST_QUESTION
from tests.process.conftest import (
    CARD_PATH,
    EXAMPLE_TARGET,
    REPO_ROOT,
    SLOW_TARGET,
    Launch,
    Server,
    child_env,
    connect,
    serve_command,
)

#: how long a refused server may take to exit, or a cut connection to be closed: a bound for
#: "it happens at all", far above the configured timeouts
BOUND = 20.0
FD_LIMIT = 256


def _port(server: Server) -> int:
    return int(server.url.rsplit(":", 1)[1])


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _run_to_exit(
    target: str, port: int, db: Path, log: Path, extra_args: Sequence[str] = ()
) -> tuple[int | None, str]:
    """Run a server that is expected to refuse to start: its exit code (None if it was still
    running after ``BOUND`` seconds and had to be killed) and its output."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            serve_command(target, port, db, extra_args), cwd=REPO_ROOT, env=child_env(),
            stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
        )
        try:
            code: int | None = proc.wait(timeout=BOUND)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
            code = None
    return code, log.read_text(errors="replace")


def _rows(db: Path) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every table, read without writing anything."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        tables = [r[0] for r in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name"
        )]
        return {t: sorted(conn.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr)
                for t in tables}
    finally:
        conn.close()


async def _wait_for_line(log: Path) -> None:
    deadline = time.monotonic() + BOUND
    while not (log.exists() and log.read_text(encoding="utf-8")):
        assert time.monotonic() < deadline, "the side-effect node never ran"
        await asyncio.sleep(0.02)


# ----------------------------------------------------------------- one server per SQLite file


async def test_a_second_server_on_a_database_in_use_refuses_and_touches_nothing(
    launch: Launch, tmp_path: Path
) -> None:
    """Finding 6: the second server's startup recovery used to mark the live server's running
    task failed and rewrite the waiting one, on a different port it even kept serving."""
    db = tmp_path / "shared.sqlite3"
    side_effects, gate = tmp_path / "side-effects.log", tmp_path / "gate"
    first = launch(SLOW_TARGET, db=db)
    async with connect(first) as client:
        running = await client.send(
            "start", context_id=f"run-{uuid.uuid4()}",
            data={"log": str(side_effects), "gate": str(gate)},
        )
        await client.send("held", context_id=running["contextId"],
                          configuration={"blocking": False})
        await _wait_for_line(side_effects)
        waiting = await client.send("start", context_id=f"wait-{uuid.uuid4()}")
        before = {t["id"]: await client.result("tasks/get", {"id": t["id"]})
                  for t in (running, waiting)}
        assert before[running["id"]]["status"]["state"] == "working"
        assert before[waiting["id"]]["status"]["state"] == "input-required"
        rows_before = _rows(db)

        code, output = _run_to_exit(SLOW_TARGET, _free_port(), db, tmp_path / "second.log")

        assert code is not None, "the second server started on a database in use:\n" + output
        assert code != 0, output
        assert str(db) in output, output
        assert "in use" in output, output
        assert "Traceback" not in output, output  # a clear message, not a stack
        assert _rows(db) == rows_before
        for task_id, task in before.items():
            assert await client.result("tasks/get", {"id": task_id}) == task

        gate.touch()  # the first server still owns its tasks: the held run finishes
        deadline = time.monotonic() + BOUND
        while (await client.result("tasks/get", {"id": running["id"]}))["status"][
            "state"
        ] == "working":
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)
        answered = await client.send("more", context_id=running["contextId"])
        assert answered["status"]["state"] == "completed", answered
    assert first.proc.poll() is None


def test_a_second_server_on_a_busy_port_fails_before_opening_its_database(
    launch: Launch, tmp_path: Path
) -> None:
    """The socket is bound before the app's startup (which opens the store and runs recovery),
    so a taken port stops a server before it creates or alters any database."""
    first = launch(EXAMPLE_TARGET)
    other = tmp_path / "other.sqlite3"
    code, output = _run_to_exit(EXAMPLE_TARGET, _port(first), other, tmp_path / "second.log")
    assert code is not None and code != 0, output
    assert "address already in use" in output.lower(), output
    assert not other.exists()
    assert not any(tmp_path.glob("other.sqlite3*"))
    with httpx.Client(trust_env=False, timeout=10) as http:
        assert http.get(first.url + CARD_PATH).status_code == 200


async def test_a_restart_after_sigkill_starts_on_the_same_file(
    launch: Launch, tmp_path: Path
) -> None:
    """The lock is the OS's: it holds while the server lives and goes with the process."""
    db = tmp_path / "killed.sqlite3"
    first = launch(SLOW_TARGET, db=db)
    async with connect(first) as client:
        task = await client.send("start", context_id=f"kill-{uuid.uuid4()}")
    code, output = _run_to_exit(SLOW_TARGET, _free_port(), db, tmp_path / "while-alive.log")
    assert code is not None and code != 0, output
    assert str(db) in output, output

    first.sigkill()
    second = launch(SLOW_TARGET, db=db)
    async with connect(second) as client:
        again = await client.result("tasks/get", {"id": task["id"]})
    assert again["status"]["state"] == "input-required"
    assert again["status"]["message"]["parts"][0]["text"] == FIRST_QUESTION


# ------------------------------------------------------------------------------ connections


@contextmanager
def _socket(server: Server) -> Iterator[socket.socket]:
    sock = socket.create_connection(("127.0.0.1", _port(server)), timeout=BOUND)
    try:
        yield sock
    finally:
        sock.close()


def _until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (bounded)."""
    sock.settimeout(BOUND)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except ConnectionResetError:
        pass
    except TimeoutError:
        raise AssertionError(f"the server kept the connection open: {received!r}") from None
    return received


def _responses(sock: socket.socket, count: int) -> list[bytes]:
    """``count`` whole responses with a ``content-length``, read off one connection in order
    (pipelined answers may share a read)."""
    sock.settimeout(BOUND)
    data, found = b"", []
    while len(found) < count:
        head, sep, rest = data.partition(b"\r\n\r\n")
        if sep:
            length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                          if line.lower().startswith(b"content-length:"))
            if len(rest) >= length:
                found.append(head + sep + rest[:length])
                data = rest[length:]
                continue
        chunk = sock.recv(65536)
        assert chunk, (found, data)
        data += chunk
    assert data == b"", data
    return found


def _read_response(sock: socket.socket) -> bytes:
    """One whole response with a ``content-length`` (head and body), nothing after it."""
    return _responses(sock, 1)[0]


def _card_status(server: Server) -> int:
    with httpx.Client(trust_env=False, timeout=5) as http:
        return http.get(server.url + CARD_PATH).status_code


def _wait_card(server: Server) -> None:
    deadline = time.monotonic() + BOUND
    while True:
        try:
            if _card_status(server) == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "the server does not answer again:\n" + server.log()
        time.sleep(0.1)


def _trickle_until_cut(sock: socket.socket) -> bytes:
    """Send a request head one byte at a time (5 a second) until the server answers or closes."""
    sock.sendall(b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: a\r\nX-Slow: ")
    deadline = time.monotonic() + BOUND
    while time.monotonic() < deadline:
        readable, _, _ = select.select([sock], [], [], 0.2)
        if readable:
            return _until_closed(sock) or b"<closed>"
        try:
            sock.sendall(b"a")
        except OSError:
            return b"<closed>"
    raise AssertionError("a client trickling its headers was never cut")


def test_a_slow_client_is_cut_after_the_request_timeout(launch: Launch) -> None:
    """Finding 4: uvicorn has no timeout before the first request is complete; a client that
    sends part of a head or body and stops used to hold its connection for ever."""
    server = launch(EXAMPLE_TARGET, extra_args=["--request-timeout", "1"])
    with _socket(server) as head, _socket(server) as body, _socket(server) as silent, \
            _socket(server) as slow:
        head.sendall(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n")
        body.sendall(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{\"jsonrpc\":")
        assert _card_status(server) == 200  # others are served meanwhile
        cut_head, cut_body = _until_closed(head), _until_closed(body)
        assert cut_head.startswith(b"HTTP/1.1 408 "), cut_head
        assert b"connection: close" in cut_head.lower(), cut_head
        assert cut_body.startswith(b"HTTP/1.1 408 "), cut_body
        assert _until_closed(silent) == b""  # it asked nothing: closed without an answer
        trickled = _trickle_until_cut(slow)
        assert trickled.startswith(b"HTTP/1.1 408 ") or trickled == b"<closed>", trickled
    assert _card_status(server) == 200
    assert "Traceback" not in server.log(), server.log()


def test_keep_alive_is_bounded_and_the_timeout_covers_the_next_request(launch: Launch) -> None:
    """After a response, an idle keep-alive connection is closed after ``--keep-alive``; a
    second request that stops half-way is cut by ``--request-timeout``."""
    server = launch(EXAMPLE_TARGET, extra_args=["--request-timeout", "1", "--keep-alive", "1"])
    request = b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: a\r\n\r\n"
    with _socket(server) as idle, _socket(server) as half:
        idle.sendall(request)
        half.sendall(request)
        for sock in (idle, half):
            first = _read_response(sock)
            assert first.startswith(b"HTTP/1.1 200 "), first
        half.sendall(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n{")
        tail = _until_closed(half)
        assert tail.startswith(b"HTTP/1.1 408 "), tail
        assert _until_closed(idle) == b""  # an idle connection is closed without an answer


def test_connections_over_the_cap_are_closed_at_once(launch: Launch) -> None:
    """Finding 4: with ``--max-connections 5`` a sixth open connection is answered 503 and
    closed without waiting for a request; the server answers again once the five go away."""
    server = launch(EXAMPLE_TARGET, extra_args=["--max-connections", "5", "--keep-alive", "60"])
    request = b"GET /.well-known/agent-card.json HTTP/1.1\r\nHost: a\r\n\r\n"
    held: list[socket.socket] = []
    try:
        deadline = time.monotonic() + BOUND
        while len(held) < 5:  # each one served once, then idle on keep-alive
            sock = socket.create_connection(("127.0.0.1", _port(server)), timeout=BOUND)
            sock.sendall(request)
            reply = _read_response(sock)
            if reply.startswith(b"HTTP/1.1 200 "):
                held.append(sock)
                continue
            sock.close()  # the readiness probe's connection was not closed yet
            assert time.monotonic() < deadline, reply
            time.sleep(0.05)
        with _socket(server) as sixth:
            refused = _until_closed(sixth)
        assert refused.startswith(b"HTTP/1.1 503 "), refused
        assert b"connection: close" in refused.lower(), refused
    finally:
        for sock in held:
            sock.close()
    _wait_card(server)
    assert "Traceback" not in server.log(), server.log()


def _low_fd_limit() -> None:  # runs in the server's child process before exec
    resource.setrlimit(resource.RLIMIT_NOFILE, (FD_LIMIT, FD_LIMIT))


def test_a_request_head_over_the_bound_is_answered_431_and_closed(launch: Launch) -> None:
    """llhttp bounds no head: past ``MAX_HEAD_BYTES`` of target and headers (one large header
    or many small ones) the client is answered 431 and the connection closed; a head just
    under the bound, and a request asking for an upgrade the server does not speak, are
    served."""
    server = launch(EXAMPLE_TARGET)
    target = CARD_PATH.encode()
    room = MAX_HEAD_BYTES - len(target) - len(b"hostax-pad")
    with _socket(server) as under:
        under.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: a\r\nX-Pad: " + b"p" * room
                      + b"\r\n\r\n")
        assert _read_response(under).startswith(b"HTTP/1.1 200 ")
    one_large = b"X-Pad: " + b"p" * (room + 1) + b"\r\n"
    many_small = b"".join(b"X-Pad-%d: %s\r\n" % (i, b"p" * 100) for i in range(200))
    for headers in (one_large, many_small):
        with _socket(server) as over:
            over.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: a\r\n" + headers
                         + b"\r\n")
            refused = _until_closed(over)
        assert refused.startswith(b"HTTP/1.1 431 "), refused
        assert b"connection: close" in refused.lower(), refused
    with _socket(server) as upgrade:
        upgrade.sendall(b"GET " + target + b" HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\n"
                        b"Upgrade: websocket\r\n\r\n")
        assert _read_response(upgrade).startswith(b"HTTP/1.1 200 ")
    assert _card_status(server) == 200
    assert "Traceback" not in server.log(), server.log()


def test_a_client_library_sending_a_huge_head_reads_its_431(launch: Launch) -> None:
    """httpx, which writes its whole request before it reads, sends a 1 MB header: it gets the
    431 (h11 answered 400 to this), and the server serves the next connection."""
    server = launch(EXAMPLE_TARGET)
    with httpx.Client(trust_env=False, timeout=BOUND) as http:
        refused = http.get(server.url + CARD_PATH, headers={"X-Huge": "v" * 1_000_000})
        assert refused.status_code == 431, refused.text
        assert refused.headers["connection"] == "close"
        assert http.get(server.url + CARD_PATH).status_code == 200
    assert "Traceback" not in server.log(), server.log()


def test_pipelined_requests_are_answered_in_order_and_a_stalled_next_head_gets_408(
    launch: Launch,
) -> None:
    """Two requests in one write get two answers, in order. A third request whose head stops
    half-way on that keep-alive connection is answered 408: it began, and nothing answered it
    yet (the previous request's answer did not count as its answer)."""
    server = launch(EXAMPLE_TARGET, extra_args=["--request-timeout", "1", "--keep-alive", "60"])
    card = b"GET " + CARD_PATH.encode() + b" HTTP/1.1\r\nHost: a\r\n\r\n"
    missing = b"GET /no-such-page HTTP/1.1\r\nHost: a\r\n\r\n"
    with _socket(server) as sock:
        sock.sendall(card + missing)
        first, second = _responses(sock, 2)
        assert first.startswith(b"HTTP/1.1 200 "), first
        assert b'"skills"' in first, first
        assert second.startswith(b"HTTP/1.1 404 "), second
        sock.sendall(b"GET " + CARD_PATH.encode() + b" HTTP/1.1\r\nHost: a\r\n")
        tail = _until_closed(sock)
    assert tail.startswith(b"HTTP/1.1 408 "), tail
    assert _card_status(server) == 200
    assert "Traceback" not in server.log(), server.log()


def test_running_out_of_file_descriptors_logs_a_line_per_interval_and_recovers(
    launch: Launch,
) -> None:
    """Finding 4: with the connection cap above the process's file limit, accepting fails with
    EMFILE; that used to log a full traceback per failed accept. Now: at most a few lines, and
    once the clients leave the server answers again."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 2 * FD_LIMIT + 200
    if soft < wanted:
        if hard != resource.RLIM_INFINITY and hard < wanted:
            pytest.skip(f"this test needs {wanted} open files in the test process (hard {hard})")
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))
    server = launch(EXAMPLE_TARGET, extra_args=["--max-connections", "1000"],
                    preexec_fn=_low_fd_limit)
    clients: list[socket.socket] = []
    try:
        for _ in range(FD_LIMIT + 50):
            clients.append(socket.create_connection(("127.0.0.1", _port(server)), timeout=BOUND))
        deadline = time.monotonic() + BOUND
        while "too many open files" not in server.log().lower():
            assert time.monotonic() < deadline, "accept never ran out of file descriptors"
            time.sleep(0.1)
        time.sleep(3)  # several of asyncio's accept retries (one a second) while still out
        log = server.log()
    finally:
        for sock in clients:
            sock.close()
    lines = [line for line in log.splitlines() if "too many open files" in line.lower()]
    assert 1 <= len(lines) <= 3, log[-3000:]
    assert "Traceback" not in log, log[-3000:]
    _wait_card(server)


# ------------------------------------------------------------------------------ the card URL


def test_the_card_url_is_the_public_url(launch: Launch) -> None:
    server = launch(EXAMPLE_TARGET, extra_args=["--public-url", "https://agents.example/a2a/"])
    with httpx.Client(trust_env=False, timeout=10) as http:
        card = http.get(server.url + CARD_PATH, headers={"Host": "evil.example"}).json()
    assert card["url"] == "https://agents.example/a2a/"


def test_the_card_url_is_the_local_address_never_the_host_header(launch: Launch) -> None:
    """Finding 8: ``Host: evil.example`` used to give ``"url": "http://evil.example/"``."""
    server = launch(EXAMPLE_TARGET)
    with httpx.Client(trust_env=False, timeout=10) as http:
        card = http.get(server.url + CARD_PATH, headers={"Host": "evil.example"}).json()
    assert card["url"] == server.url + "/"


# ------------------------------------------------------------------------------ the CLI


def test_serve_help_shows_every_operating_limit_with_its_default(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LLAMON_PUBLIC_URL", "https://from-env.example/")
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--help"])
    assert exited.value.code == 0
    described = " ".join(capsys.readouterr().out.split("options:", 1)[1].split())
    limits = Limits()
    expected = {
        "--request-timeout": "(default: 30.0 s)",
        "--keep-alive": "(default: 5 s)",
        "--max-connections": "(default: 1000)",
        "--public-url": "(default: $LLAMON_PUBLIC_URL = https://from-env.example/)",
        # every edge limit has its flag: a new Limits field without one fails here
        **{"--" + f.name.replace("_", "-"): f"(default: {getattr(limits, f.name)})"
           for f in dataclasses.fields(limits)},
    }
    for option, default in expected.items():
        assert f" {option} " in described, option
        own_text = described.rsplit(f" {option} ", 1)[1].split(" --", 1)[0]  # its entry
        assert default in own_text, (option, own_text)


@pytest.mark.parametrize("argv", [
    ["--request-timeout", "0"], ["--keep-alive", "-1"], ["--max-connections", "0"],
    ["--max-depth", "0"], ["--public-url", "agents.example"],
])
def test_serve_refuses_bad_operating_limits(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", *argv])
    assert exited.value.code == 2
    assert argv[0] in capsys.readouterr().err
