"""Concurrent answers to one waiting task, over real sockets to a real server process.

Rule (docs/wire.md §7.6): one run per context; a follow-up that arrives while a run is in progress
is refused with ``-32004`` and ``data.reason == "task is busy"``. It must never be queued, since a
queued answer would be taken as the answer to the next question.

The winning run is held in its node by a gate file until every other request has been answered,
so the race is decided by the server alone, however slowly the machine schedules the requests.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TypeVar

import httpx
import pytest

from tests.conftest import assert_valid, parse_sse, rpc, send_params
from tests.process.agents import FIRST_QUESTION, SECOND_QUESTION
from tests.process.conftest import Server, connect

CONCURRENT = 12
UNSUPPORTED_OPERATION = -32004
T = TypeVar("T")


def _limits() -> httpx.Limits:
    return httpx.Limits(max_connections=CONCURRENT + 2, max_keepalive_connections=0)


async def _race(calls: list[Callable[[], Awaitable[T]]], gate: Path) -> list[T]:
    """Fire every call at once; open the gate once all but one answered (or after 15 s)."""
    tasks = [asyncio.create_task(call()) for call in calls]
    deadline = time.monotonic() + 15
    while sum(t.done() for t in tasks) < len(tasks) - 1 and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    gate.touch()
    return list(await asyncio.gather(*tasks))


async def _start_task(server: Server, context_id: str, data: dict[str, Any]) -> dict[str, Any]:
    async with connect(server) as client:
        task = await client.send("start", context_id=context_id, data=data)
    assert task["status"]["state"] == "input-required", task
    assert task["status"]["message"]["parts"][0]["text"] == FIRST_QUESTION
    return task


def _answers() -> list[tuple[str, str]]:
    """(messageId, text) of each concurrent answer: all different."""
    return [(f"answer-{i}-{uuid.uuid4().hex[:8]}", f"answer number {i}") for i in range(CONCURRENT)]


def _assert_busy(body: dict[str, Any], request_id: str) -> None:
    assert body["id"] == request_id
    assert "result" not in body, body
    assert body["error"]["code"] == UNSUPPORTED_OPERATION, body
    assert body["error"]["data"]["reason"] == "task is busy", body
    assert_valid("JSONRPCErrorResponse", body)


async def _assert_afterwards(
    server: Server, task_id: str, log: Path, sent: list[tuple[str, str]], winner: int
) -> None:
    """One side effect, the task waits on the second question, exactly one answer in history."""
    winner_id, winner_text = sent[winner]
    assert log.read_text(encoding="utf-8").splitlines() == [winner_text]

    async with connect(server) as client:
        task = await client.result("tasks/get", {"id": task_id})
        assert task["status"]["state"] == "input-required"
        assert task["status"]["message"]["parts"][0]["text"] == SECOND_QUESTION
        sent_ids = {message_id for message_id, _ in sent}
        delivered = [m for m in task["history"] if m["messageId"] in sent_ids]
        assert [m["messageId"] for m in delivered] == [winner_id], task["history"]
        assert [m["role"] for m in task["history"]] == ["user", "agent", "user"]
        assert task["history"][1]["parts"][0]["text"] == FIRST_QUESTION

        # the task still takes a genuine answer to the second question, and reports the winner
        done = await client.send("that is all", task_id=task_id)
        assert done["status"]["state"] == "completed", done
        assert done["artifacts"][0]["parts"][0]["data"] == {
            "first": winner_text,
            "second": "that is all",
        }
    assert log.read_text(encoding="utf-8").splitlines() == [winner_text]


@pytest.mark.parametrize("addressing", ["context", "task"])
async def test_concurrent_answers_only_one_moves_the_task(
    slow_server: Server, tmp_path: Path, addressing: str
) -> None:
    log, gate = tmp_path / "side-effects.log", tmp_path / "gate"
    context_id = f"concurrent-{addressing}-{uuid.uuid4()}"
    task = await _start_task(slow_server, context_id, {"log": str(log), "gate": str(gate)})
    task_id = task["id"] if addressing == "task" else None

    sent = _answers()
    bodies = [
        rpc(
            "message/send",
            send_params(text, context_id=context_id, task_id=task_id, message_id=message_id),
            request_id=f"r{i}",
        )
        for i, (message_id, text) in enumerate(sent)
    ]
    async with httpx.AsyncClient(
        base_url=slow_server.url, trust_env=False, timeout=30, limits=_limits()
    ) as http:
        responses = await _race([lambda b=body: http.post("/", json=b) for body in bodies], gate)

    moved, busy = [], []
    for i, response in enumerate(responses):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/json")
        body = response.json()
        (moved if "result" in body else busy).append((i, body))
    assert len(moved) == 1, [body for _, body in moved]
    winner, body = moved[0]
    assert body["id"] == f"r{winner}"
    result = body["result"]
    assert result["id"] == task["id"]
    assert result["status"]["state"] == "input-required"
    assert result["status"]["message"]["parts"][0]["text"] == SECOND_QUESTION
    assert result["history"][-1]["messageId"] == sent[winner][0]
    assert_valid("SendMessageSuccessResponse", body)
    assert len(busy) == CONCURRENT - 1
    for i, error in busy:
        _assert_busy(error, f"r{i}")

    await _assert_afterwards(slow_server, task["id"], log, sent, winner)


async def test_concurrent_streamed_answers_only_one_moves_the_task(
    slow_server: Server, tmp_path: Path
) -> None:
    """Over ``message/stream`` a refused answer is one SSE error event (docs/wire.md §8.2), then close."""
    log, gate = tmp_path / "side-effects.log", tmp_path / "gate"
    context_id = f"concurrent-stream-{uuid.uuid4()}"
    task = await _start_task(slow_server, context_id, {"log": str(log), "gate": str(gate)})
    sent = _answers()

    async with httpx.AsyncClient(
        base_url=slow_server.url, trust_env=False, timeout=30, limits=_limits()
    ) as http:

        async def stream(i: int, message_id: str, text: str) -> list[dict[str, Any]]:
            body = rpc(
                "message/stream",
                send_params(text, context_id=context_id, message_id=message_id),
                request_id=f"s{i}",
            )
            async with http.stream("POST", "/", json=body) as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                raw = (await response.aread()).decode()
            # framing (LF, never CRLF) is asserted in test_seed_conversation.py; here only the
            # outcome of the race matters, so parse either line ending
            return [event["data"] for event in parse_sse(raw.replace("\r\n", "\n"))]

        streams = await _race(
            [lambda i=i, m=m, t=t: stream(i, m, t) for i, (m, t) in enumerate(sent)], gate
        )

    moved = [(i, events) for i, events in enumerate(streams) if "result" in events[0]]
    assert len(moved) == 1, moved
    winner, events = moved[0]
    assert all(e["id"] == f"s{winner}" and "result" in e for e in events)
    last = events[-1]["result"]
    assert last["kind"] == "status-update" and last["final"] is True
    assert last["status"]["state"] == "input-required"
    assert last["status"]["message"]["parts"][0]["text"] == SECOND_QUESTION
    finals = [e["result"]["final"] for e in events if e["result"]["kind"] == "status-update"]
    assert finals.count(True) == 1
    for i, events in enumerate(streams):
        if i != winner:
            assert len(events) == 1, events
            _assert_busy(events[0], f"s{i}")

    await _assert_afterwards(slow_server, task["id"], log, sent, winner)


async def test_concurrent_first_messages_on_a_new_context_create_one_task(
    slow_server: Server, tmp_path: Path
) -> None:
    """Openers racing on a context nobody has used yet: one task, the others are busy."""
    gate = tmp_path / "gate"
    context_id = f"concurrent-new-{uuid.uuid4()}"
    bodies = [
        rpc(
            "message/send",
            send_params("start", context_id=context_id, data={"begin_gate": str(gate)}),
            request_id=f"n{i}",
        )
        for i in range(CONCURRENT)
    ]
    async with httpx.AsyncClient(
        base_url=slow_server.url, trust_env=False, timeout=30, limits=_limits()
    ) as http:
        responses = await _race([lambda b=body: http.post("/", json=b) for body in bodies], gate)
    bodies_out = [r.json() for r in responses]
    created = [body["result"] for body in bodies_out if "result" in body]
    assert len(created) == 1, created
    assert created[0]["status"]["state"] == "input-required"
    assert created[0]["status"]["message"]["parts"][0]["text"] == FIRST_QUESTION
    for i, body in enumerate(bodies_out):
        if "error" in body:
            _assert_busy(body, f"n{i}")
    async with connect(slow_server) as client:
        answered = await client.send("only answer", context_id=context_id)
    assert answered["id"] == created[0]["id"]
    assert answered["status"]["message"]["parts"][0]["text"] == SECOND_QUESTION
