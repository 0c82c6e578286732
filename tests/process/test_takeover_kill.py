"""A server killed (SIGKILL) after an approved tool ran but before the turn's checkpoint was
written: the run is taken over and the email is sent once.

The approval is stored with the task before the turn runs (``StoredTask.resuming``), so the
server that takes over (here the same SQLite file restarted; on PostgreSQL another replica,
tests/process/test_replicas.py) runs the turn again with the same decision instead
of asking again; the tool is called again with the same ``tool_call_id`` and the outbox finds
the email it already sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from pathlib import Path
from typing import Any

import httpx

from app.outbox import Outbox
from tests.conftest import A2AClient, send_params
from tests.process.agents import pause_files
from tests.process.conftest import Launch, Server, connect

PAUSING_TARGET = "tests.process.agents:PAUSING_EMAIL_AGENTS"
REQUEST = "Send an email to alice@example.com about Meeting: The meeting is at 10."


async def ask_for_approval(client: A2AClient, context_id: str) -> dict[str, Any]:
    task = await client.send(REQUEST, context_id=context_id)
    assert task["status"]["state"] == "input-required", task["status"]
    return task


def approval(task: dict[str, Any]) -> dict[str, Any]:
    params = send_params(data={"decisions": [{"type": "approve"}]},
                         context_id=task["contextId"])
    params["message"]["metadata"] = {
        "interruptId": task["status"]["message"]["metadata"]["interruptId"]}
    return params


async def approve_until_paused(server: Server, task: dict[str, Any], paused: Path) -> None:
    """Approve (a blocking send that never returns: the server dies) until the tool has sent
    the email and paused."""
    async def approve() -> None:
        async with connect(server, timeout=60) as client:
            with contextlib.suppress(httpx.TransportError):  # killed under the request
                await client.call("message/send", approval(task))

    sending = asyncio.create_task(approve())
    async with asyncio.timeout(20):
        while not paused.exists():
            await asyncio.sleep(0.02)
    return await _killed_then(sending, server)


async def _killed_then(sending: asyncio.Task[None], server: Server) -> None:
    server.sigkill()
    async with asyncio.timeout(10):
        await sending


async def until_state(client: A2AClient, task_id: str, state: str, timeout: float = 20) -> dict[str, Any]:
    async with asyncio.timeout(timeout):
        while True:
            got = await client.result("tasks/get", {"id": task_id})
            if got["status"]["state"] == state:
                return got
            await asyncio.sleep(0.05)


async def test_a_kill_between_the_tool_and_the_checkpoint_sends_one_email(
    launch: Launch, tmp_path: Path
) -> None:
    db = tmp_path / "takeover.sqlite3"
    context_id = f"kill-{uuid.uuid4().hex[:8]}"
    arm, paused = pause_files(context_id)
    first = launch(PAUSING_TARGET, db=db)
    try:
        async with connect(first) as client:
            task = await ask_for_approval(client, context_id)
        arm.touch()
        await approve_until_paused(first, task, paused)
        assert Outbox(str(db)).count(context_id) == 1  # it ran, then the server died

        second = launch(PAUSING_TARGET, db=db)  # recovery takes the run over at start
        async with connect(second) as client:
            done = await until_state(client, task["id"], "completed")
    finally:
        arm.unlink(missing_ok=True)
        paused.unlink(missing_ok=True)
    emails = Outbox(str(db)).emails(context_id)
    assert [(e.to, e.subject, e.tool_call_id) for e in emails] == [
        ("alice@example.com", "Meeting", "call_1")]
    texts = [p["text"] for m in done["history"] for p in m["parts"] if p["kind"] == "text"]
    assert not any("Email #2" in t for t in texts), texts
