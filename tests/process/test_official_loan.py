"""The official ``a2a-sdk==0.3.26`` client through the loan example on a real ``llamon-agent
serve`` process: the risk child's question forwarded, the answer, a human reviewer's approval over
``/reviews`` (Bearer ``LLAMON_REVIEWER_TOKEN``), the draft as the artifact."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import (
    DataPart,
    Message,
    Part,
    Role,
    Task,
    TaskQueryParams,
    TaskState,
    TaskStatusUpdateEvent,
    TextPart,
)

from tests.orchestrator.helpers import (
    DRAFT_WITH_COLLATERAL,
    HIGH_RISK,
    QUESTION_PARTS,
    WAITING_TEXT,
)
from tests.process.conftest import EXAMPLE_TARGET, Server, start_server

TOKEN = "official-loan-reviewer"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
LOAN = {"agentId": "loan"}
TERMINAL = {TaskState.completed, TaskState.failed, TaskState.canceled, TaskState.rejected}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("loan-server")
    running = start_server(EXAMPLE_TARGET, folder / "llamon.sqlite3", folder,
                           env={"LLAMON_REVIEWER_TOKEN": TOKEN})
    try:
        yield running
    finally:
        running.stop()


@asynccontextmanager
async def official_client(server: Server, *, streaming: bool) -> AsyncIterator[Client]:
    async with httpx.AsyncClient(timeout=30, trust_env=False) as http:
        card = await A2ACardResolver(http, server.url).get_agent_card()
        assert "loan" in [s.id for s in card.skills]
        yield ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create(card)


def _message(part: TextPart | DataPart, task: Task | None = None) -> Message:
    message = Message(role=Role.user, parts=[Part(root=part)], message_id=f"loan-{time.time_ns()}")
    if task is not None:
        message.context_id, message.task_id = task.context_id, task.id
    return message


async def _send(client: Client, message: Message) -> tuple[Task, list[Any]]:
    task: Task | None = None
    updates: list[Any] = []
    async for event in client.send_message(message, request_metadata=LOAN):
        assert isinstance(event, tuple), event
        task, update = event
        updates.append(update)
    assert task is not None
    return task, updates


def _dump(message: Message | None) -> list[dict[str, Any]]:
    assert message is not None
    return [part.root.model_dump(mode="json", exclude_none=True) for part in message.parts]


async def _pending_review(http: httpx.AsyncClient, task_id: str) -> dict[str, Any]:
    async with asyncio.timeout(15):
        while True:
            response = await http.get("/reviews", headers=AUTH)
            assert response.status_code == 200, response.text
            found = [r for r in response.json()["reviews"] if r["taskId"] == task_id]
            if found:
                assert len(found) == 1, found
                return dict(found[0])
            await asyncio.sleep(0.05)


async def _until_terminal(client: Client, task_id: str) -> Task:
    async with asyncio.timeout(15):
        while True:
            task = await client.get_task(TaskQueryParams(id=task_id))
            if task.status.state in TERMINAL:
                return task
            await asyncio.sleep(0.05)


def _waiting_review_id(parts: list[dict[str, Any]]) -> str:
    first, second = parts
    assert first == {"kind": "text", "text": WAITING_TEXT}
    return str(second["data"]["review"]["id"])


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
async def test_loan_with_a_human_reviewer_with_official_client(
    server: Server, streaming: bool
) -> None:
    async with (
        official_client(server, streaming=streaming) as client,
        httpx.AsyncClient(base_url=server.url, trust_env=False, timeout=10) as reviewer,
    ):
        asked, _ = await _send(client, _message(DataPart(data=HIGH_RISK)))
        assert asked.status.state == TaskState.input_required
        assert _dump(asked.status.message) == QUESTION_PARTS

        answer = _message(TextPart(text="예"), asked)
        if streaming:
            # the answer's stream stays open in working until the reviewer decides
            sending = asyncio.create_task(_send(client, answer))
            review = await _pending_review(reviewer, asked.id)
            assert not sending.done()
            response = await reviewer.post(f"/reviews/{review['id']}/decision", headers=AUTH,
                                           json={"type": "approve"})
            assert response.status_code == 200, response.text
            async with asyncio.timeout(30):
                streamed, updates = await sending
            statuses = [u for u in updates if isinstance(u, TaskStatusUpdateEvent)]
            waiting = [u for u in statuses if u.status.message is not None
                       and _dump(u.status.message)[0].get("text") == WAITING_TEXT]
            assert [_waiting_review_id(_dump(u.status.message)) for u in waiting] == [
                review["id"]]
            assert [u.final for u in statuses].count(True) == 1 and statuses[-1].final
            assert streamed.status.state == TaskState.completed
        else:
            # a blocking message/send returns after review_wait (5 s) with the task working
            parked, _ = await _send(client, answer)
            assert parked.id == asked.id and parked.status.state == TaskState.working
            review_id = _waiting_review_id(_dump(parked.status.message))
            review = await _pending_review(reviewer, asked.id)
            assert review["id"] == review_id
            response = await reviewer.post(f"/reviews/{review_id}/decision", headers=AUTH,
                                           json={"type": "approve"})
            assert response.status_code == 200, response.text
        assert review["draft"] == DRAFT_WITH_COLLATERAL

        done = await _until_terminal(client, asked.id)
        assert done.status.state == TaskState.completed, done.status
        assert done.artifacts is not None
        data = [p.root.data for a in done.artifacts for p in a.parts
                if isinstance(p.root, DataPart)]
        assert data == [DRAFT_WITH_COLLATERAL]
