"""Process lifecycle around running turns: client disconnects and graceful shutdown (SIGTERM)."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from tests.conftest import A2AClient, rpc, send_params
from tests.process.agents import FIRST_QUESTION, SECOND_QUESTION
from tests.process.conftest import SLOW_TARGET, Launch, Server, connect

TERMINAL = {"completed", "canceled", "failed", "rejected"}


async def _wait_parked(client: A2AClient, task_id: str, timeout: float = 10) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        task = await client.result("tasks/get", {"id": task_id})
        if task["status"]["state"] not in {"submitted", "working"}:
            return task
        assert time.monotonic() < deadline, task
        await asyncio.sleep(0.05)


async def _wait_for_line(log: Path, timeout: float = 10) -> None:
    deadline = time.monotonic() + timeout
    while not (log.exists() and log.read_text(encoding="utf-8")):
        assert time.monotonic() < deadline, "the side-effect node never ran"
        await asyncio.sleep(0.02)


async def test_client_disconnect_does_not_cancel_the_run(launch: Launch, tmp_path: Path) -> None:
    """docs/wire.md §7.8: a dropped SSE connection only detaches that subscriber."""
    server = launch(SLOW_TARGET)
    log = tmp_path / "side-effects.log"
    context_id = f"disconnect-{uuid.uuid4()}"
    async with connect(server) as client:
        task = await client.send(
            "start", context_id=context_id, data={"log": str(log), "sleep": 0.5}
        )
        body = rpc("message/stream", send_params("answer", context_id=context_id))
        async with client.http.stream("POST", "/", json=body) as response:
            async for line in response.aiter_lines():
                if line.startswith("data:"):
                    break  # first event seen: hang up while the node sleeps
        parked = await _wait_parked(client, task["id"])
    assert parked["status"]["state"] == "input-required", parked
    assert parked["status"]["message"]["parts"][0]["text"] == SECOND_QUESTION
    assert log.read_text(encoding="utf-8").splitlines() == ["answer"]


async def test_sigterm_mid_run_leaves_a_recoverable_task(launch: Launch, tmp_path: Path) -> None:
    """A graceful stop must not lose more than a crash does.

    After SIGKILL at the same point the task asks its question again
    (test_restart.py::test_run_killed_mid_turn_asks_again_after_restart); after SIGTERM the
    server logs "it is recovered at the next start", so the task must not come back terminal
    and the conversation must still be able to finish.
    """
    db = tmp_path / "sigterm.sqlite3"
    log, gate = tmp_path / "side-effects.log", tmp_path / "gate"
    first = launch(SLOW_TARGET, db=db)
    context_id = f"sigterm-{uuid.uuid4()}"
    async with connect(first) as client:
        task = await client.send(
            "start", context_id=context_id, data={"log": str(log), "gate": str(gate)}
        )
        await client.send("interrupted", context_id=context_id, configuration={"blocking": False})
        await _wait_for_line(log)
    first.proc.send_signal(signal.SIGTERM)
    first.proc.wait(timeout=15)
    gate.touch()  # should the run be re-run after the restart, it is not held again

    second = launch(SLOW_TARGET, db=db)
    async with connect(second) as client:
        recovered = await _wait_parked(client, task["id"])
        assert recovered["status"]["state"] not in TERMINAL, recovered
        assert recovered["status"]["state"] == "input-required", recovered
        question = recovered["status"]["message"]["parts"][0]["text"]
        if question == FIRST_QUESTION:
            recovered = await client.send("again", context_id=context_id)
            question = recovered["status"]["message"]["parts"][0]["text"]
        assert question == SECOND_QUESTION, recovered
        done = await client.send("finish", context_id=context_id)
        assert done["id"] == task["id"]
        assert done["status"]["state"] == "completed", done


async def test_sigterm_closes_open_streams_cleanly(launch: Launch, tmp_path: Path) -> None:
    """Shutdown with a stream open: the process exits promptly and the HTTP response is
    completed (no truncated chunked body, no 'ASGI callable returned without completing
    response' in the server log)."""
    server: Server = launch(SLOW_TARGET)
    log, gate = tmp_path / "side-effects.log", tmp_path / "gate"
    context_id = f"sigterm-stream-{uuid.uuid4()}"
    async with connect(server) as client:
        await client.send("start", context_id=context_id, data={"log": str(log), "gate": str(gate)})
        body = rpc("message/stream", send_params("streamed", context_id=context_id))

        async def read_stream() -> str:
            async with client.http.stream("POST", "/", json=body) as response:
                return (await response.aread()).decode()

        reader = asyncio.create_task(read_stream())
        try:
            await _wait_for_line(log)
            started = time.monotonic()
            server.proc.send_signal(signal.SIGTERM)
            await asyncio.to_thread(server.proc.wait, 15)
            assert time.monotonic() - started < 10
            raw = await asyncio.wait_for(reader, 10)
        except httpx.RemoteProtocolError as exc:
            raise AssertionError(f"stream cut off at shutdown: {exc}") from exc
        finally:
            reader.cancel()
    assert raw.startswith("id:") or raw.startswith("data:"), raw[:200]
    assert "ASGI callable returned without completing response" not in server.log()
