"""A real ``llamon-agent serve`` process (uvicorn on a real socket): the bind refusal of a server
without authentication, and the 401 of a server with API keys."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path

import httpx

from tests.process.conftest import (
    EXAMPLE_TARGET,
    REPO_ROOT,
    Launch,
    _free_port,
    child_env,
    serve_command,
)

from .helpers import ALICE_KEY, KEYS_CHALLENGE, UNAUTHORIZED, message_send


def test_started_on_0_0_0_0_without_authentication_the_server_refuses(tmp_path: Path) -> None:
    port = _free_port()
    db = tmp_path / "never.sqlite3"
    command = serve_command(EXAMPLE_TARGET, port, db, ["--host", "0.0.0.0"])
    started = time.monotonic()
    result = subprocess.run(command, cwd=REPO_ROOT, env=child_env(), capture_output=True,
                            text=True, timeout=60, stdin=subprocess.DEVNULL, check=False)
    assert result.returncode == 1, result
    assert time.monotonic() - started < 30
    lines = result.stderr.strip().splitlines()
    assert lines[-1].startswith("error: refusing to serve on 0.0.0.0 without authentication"), (
        result.stderr)
    assert "Traceback" not in result.stderr
    assert not db.exists()  # refused before storage was opened
    with socket.socket() as sock:  # and before anything was bound
        sock.bind(("0.0.0.0", port))


def test_a_server_with_api_keys_answers_401_on_a_real_socket(
    launch: Launch, tmp_path: Path
) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text(f"# who may call\nalice={ALICE_KEY}\n")
    server = launch(extra_args=["--host", "0.0.0.0", "--api-keys", str(keys)])
    with httpx.Client(base_url=server.url, trust_env=False, timeout=30) as http:
        card = http.get("/.well-known/agent-card.json")
        assert card.status_code == 200
        assert card.json()["security"] == [{"apiKey": []}, {"bearer": []}]
        for headers in ({}, {"X-API-Key": "wrong"}, {"Authorization": "Bearer wrong"}):
            refused = http.post("/", json=message_send(), headers=headers)
            assert refused.status_code == 401
            assert refused.json() == UNAUTHORIZED
            assert refused.headers["www-authenticate"] == KEYS_CHALLENGE
            # nothing but the refusal: uvicorn adds only its own date and server headers
            assert set(refused.headers) <= {"content-type", "content-length",
                                            "www-authenticate", "date", "server", "connection"}
        # the same keep-alive connection goes on after a refused request with a body
        ok = http.post("/", json=message_send(), headers={"X-API-Key": ALICE_KEY})
        assert ok.status_code == 200
        assert ok.json()["result"]["kind"] == "task"
    assert ALICE_KEY not in server.log()
