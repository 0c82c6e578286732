"""The official ``a2a-sdk==0.3.26`` client against a real ``llamon-agent serve`` process."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from a2a.client import (
    A2ACardResolver,
    Client,
    ClientConfig,
    ClientFactory,
    create_text_message_object,
)
from a2a.types import DataPart, Message, Role, Task, TaskQueryParams, TaskState, TextPart

from tests.process.conftest import Server

DOC_QUESTION = "어떤 서류를 검증할까요?"
BIRTHDAY_QUESTION = "생년월일을 알려주세요."


@asynccontextmanager
async def official_client(server: Server, *, streaming: bool) -> AsyncIterator[Client]:
    async with httpx.AsyncClient(timeout=30, trust_env=False) as http:
        card = await A2ACardResolver(http, server.url).get_agent_card()
        assert card.capabilities.streaming is True
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=streaming)).create(card)
        yield client


async def _send(client: Client, message: Message) -> tuple[Task, list[Any]]:
    """The final Task the client assembled, and the updates it yielded on the way."""
    task: Task | None = None
    updates: list[Any] = []
    async for event in client.send_message(message):
        assert isinstance(event, tuple), f"expected (Task, update) events, got {event!r}"
        task, update = event
        updates.append(update)
    assert task is not None
    return task, updates


def _message(text: str, *, context_id: str | None = None, task_id: str | None = None) -> Message:
    message = create_text_message_object(Role.user, text)
    message.context_id, message.task_id = context_id, task_id
    return message


def _question(task: Task) -> tuple[str, dict[str, Any]]:
    assert task.status.state == TaskState.input_required, task
    assert task.status.message is not None
    text, data = (part.root for part in task.status.message.parts)
    assert isinstance(text, TextPart) and isinstance(data, DataPart)
    return text.text, data.data["hitl"]


def _assert_completed(task: Task) -> None:
    assert task.status.state == TaskState.completed, task
    assert task.artifacts
    first = task.artifacts[-1].parts[0].root
    assert isinstance(first, DataPart)
    assert first.data == {"doc_type": "passport", "birthday": "1990-01-01"}


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
async def test_document_review_hitl_with_official_client(
    example_server: Server, streaming: bool
) -> None:
    async with official_client(example_server, streaming=streaming) as client:
        task, updates = await _send(client, _message("이 서류를 검증해줘"))
        text, hitl = _question(task)
        assert text == DOC_QUESTION
        assert hitl["schema"] == "llamon.hitl.question.v1"
        assert hitl["options"] == ["passport", "id_card"]
        assert [c["label"] for c in hitl["choices"]] == ["여권", "주민등록증"]
        if streaming:
            assert updates[0] is None  # the Task snapshot comes first
            assert updates[-1].final is True
        else:
            assert updates == [None]

        asked, _ = await _send(
            client, _message("여권", context_id=task.context_id, task_id=task.id)
        )
        assert asked.id == task.id and asked.context_id == task.context_id
        assert _question(asked)[0] == BIRTHDAY_QUESTION

        done, _ = await _send(
            client, _message("1990-01-01", context_id=task.context_id, task_id=task.id)
        )
        assert done.id == task.id
        _assert_completed(done)

        fetched = await client.get_task(TaskQueryParams(id=task.id))
        _assert_completed(fetched)
        assert fetched.history is not None
        assert [m.role for m in fetched.history] == [Role.user, Role.agent] * 2 + [Role.user]


@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
async def test_answers_by_context_id_only_with_official_client(
    example_server: Server, streaming: bool
) -> None:
    context_id = f"official-{uuid.uuid4()}"
    async with official_client(example_server, streaming=streaming) as client:
        task, _ = await _send(client, _message("이 서류를 검증해줘", context_id=context_id))
        assert task.context_id == context_id
        assert _question(task)[0] == DOC_QUESTION

        asked, _ = await _send(client, _message("passport", context_id=context_id))
        assert asked.id == task.id
        assert _question(asked)[0] == BIRTHDAY_QUESTION

        done, _ = await _send(client, _message("1990-01-01", context_id=context_id))
        assert done.id == task.id
        _assert_completed(done)
        _assert_completed(await client.get_task(TaskQueryParams(id=task.id)))
