"""The official ``a2a-sdk==0.3.26`` client reviews the example assistant's emails on a real
``llamon-agent serve`` process; side effects are counted in the server's own SQLite file."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientJSONRPCError
from a2a.types import DataPart, Message, Part, Role, Task, TaskState, TextPart

from app.outbox import Outbox
from tests.process.conftest import EXAMPLE_TARGET, Server, start_server
from tests.tool_review.helpers import EDITED_ARGS, SEED_PAYLOAD, SEED_REQUEST, TWO_REQUEST, edit

AGENT = {"agentId": "email-assistant"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("review-server")
    running = start_server(EXAMPLE_TARGET, folder / "llamon.sqlite3", folder)
    try:
        yield running
    finally:
        running.stop()


@asynccontextmanager
async def official_client(server: Server, *, streaming: bool) -> AsyncIterator[Client]:
    headers = {"Accept-Language": "id"}
    async with httpx.AsyncClient(timeout=30, trust_env=False, headers=headers) as http:
        card = await A2ACardResolver(http, server.url).get_agent_card()
        assert "email-assistant" in [s.id for s in card.skills]
        yield ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create(card)


def _message(part: TextPart | DataPart, context_id: str) -> Message:
    return Message(role=Role.user, parts=[Part(root=part)], message_id=str(uuid.uuid4()),
                   context_id=context_id)


async def _send(client: Client, message: Message) -> Task:
    task: Task | None = None
    async for event in client.send_message(message, request_metadata=AGENT):
        assert isinstance(event, tuple), event
        task = event[0]
    assert task is not None
    return task


def _review(task: Task) -> tuple[str, dict[str, Any]]:
    assert task.status.state == TaskState.input_required, task.status
    assert task.status.message is not None
    text, data = (part.root for part in task.status.message.parts)
    assert isinstance(text, TextPart) and isinstance(data, DataPart)
    return text.text, data.data["hitl"]


def _outbox(server: Server) -> list[dict[str, Any]]:
    outbox = Outbox(str(server.db))
    try:
        return outbox.rows()
    finally:
        outbox.close()


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
async def test_review_round_trip_with_data_part_decisions(server: Server, streaming: bool) -> None:
    context_id = f"review-{uuid.uuid4()}"
    async with official_client(server, streaming=streaming) as client:
        task = await _send(client, _message(TextPart(text=SEED_REQUEST), context_id))
        text, hitl = _review(task)
        assert text == "Menunggu persetujuan: send_email"
        assert hitl == {"schema": "llamon.hitl.review.v1", **SEED_PAYLOAD}

        done = await _send(client, _message(DataPart(data={"decisions": [edit()]}), context_id))
        assert done.id == task.id and done.status.state == TaskState.completed
        assert done.status.message is not None
        assert done.status.message.parts[0].root.text == (  # type: ignore[union-attr]
            "Sent an email to alice@example.com with subject 'Meeting moved'."
        )
    rows = [r for r in _outbox(server) if r["thread_id"] == context_id]
    assert [(r["to"], r["subject"], r["body"]) for r in rows] == [tuple(EDITED_ARGS.values())]


async def test_a_bad_answer_is_an_error_and_the_task_keeps_waiting(server: Server) -> None:
    context_id = f"review-{uuid.uuid4()}"
    async with official_client(server, streaming=False) as client:
        task = await _send(client, _message(TextPart(text=TWO_REQUEST), context_id))
        assert [a["args"]["to"] for a in _review(task)[1]["action_requests"]] == [
            "alice@example.com", "bob@example.com"
        ]
        one = _message(DataPart(data={"decisions": [{"type": "approve"}]}), context_id)
        with pytest.raises(A2AClientJSONRPCError) as caught:
            await _send(client, one)
        assert caught.value.error.code == -32602
        assert caught.value.error.message == "Butuh 2 keputusan (satu per aksi), diterima 1"
        with pytest.raises(A2AClientJSONRPCError) as caught:
            await _send(client, _message(TextPart(text="ok, send them"), context_id))
        assert caught.value.error.message == (
            "Masih ada aksi yang menunggu persetujuan. Kirim keputusannya dulu."
        )
        assert [r for r in _outbox(server) if r["thread_id"] == context_id] == []

        both = {"decisions": [{"type": "reject", "message": "Not this one"}, {"type": "approve"}]}
        done = await _send(client, _message(DataPart(data=both), context_id))
        assert done.id == task.id and done.status.state == TaskState.completed
    rows = [r for r in _outbox(server) if r["thread_id"] == context_id]
    assert [r["to"] for r in rows] == ["bob@example.com"]


async def test_rest_and_a2a_share_the_conversation(server: Server) -> None:
    async with httpx.AsyncClient(base_url=server.url, trust_env=False, timeout=30) as http:
        chat = await http.post("/hitl/chat", json={"message": SEED_REQUEST},
                               headers={"Accept-Language": "id"})
        assert chat.status_code == 200
        body = chat.json()
        assert body["pending_review"] == SEED_PAYLOAD
    async with official_client(server, streaming=True) as client:
        decisions = {"decisions": [{"type": "approve"}]}
        done = await _send(client, _message(DataPart(data=decisions), body["thread_id"]))
        assert done.status.state == TaskState.completed
    rows = [r for r in _outbox(server) if r["thread_id"] == body["thread_id"]]
    assert [r["subject"] for r in rows] == ["Meeting"]
