"""One conversation, two protocol versions: the question asked through the official 0.3.26 client
(in this process) is answered through the official 1.x client in native v1.0 mode on the same
task, and the other way round; both end with the same result, seen the same from both sides."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.client import Client, create_text_message_object
from a2a.types import DataPart, Message, Role, Task, TaskQueryParams, TaskState, TextPart

from tests.process.conftest import Server
from tests.process.test_official_client import official_client
from tests.sdk1.client import sdk1_client, text, user_message
from tests.sdk1.flows import (
    BIRTHDAY_QUESTION,
    COMPLETED,
    DOC_HITL,
    DOC_QUESTION,
    DOC_REQUEST,
    DOC_RESULT,
    INPUT_REQUIRED,
    artifact_data,
    assert_chosen,
    assert_events,
    assert_wire,
    question,
)
from tests.sdk1.harness import Driver

STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
HISTORY = [DOC_REQUEST, DOC_QUESTION, "여권", BIRTHDAY_QUESTION, "1990-01-01"]


def _message(words: str, task: Task | None = None) -> Message:
    message = create_text_message_object(Role.user, words)
    if task is not None:
        message.context_id, message.task_id = task.context_id, task.id
    return message


async def _send(client: Client, message: Message) -> Task:
    task: Task | None = None
    async for event in client.send_message(message):
        assert isinstance(event, tuple), event
        task = event[0]
    assert task is not None
    return task


def _v03_question(task: Task) -> tuple[str, dict[str, Any]]:
    assert task.status.state == TaskState.input_required, task.status
    assert task.status.message is not None
    first, second = (part.root for part in task.status.message.parts)
    assert isinstance(first, TextPart) and isinstance(second, DataPart)
    return first.text, second.data["hitl"]


def _v03_completed(task: Task) -> None:
    assert task.status.state == TaskState.completed, task.status
    assert task.artifacts
    last = task.artifacts[-1].parts[0].root
    assert isinstance(last, DataPart) and last.data == DOC_RESULT
    assert task.history is not None
    assert [m.role for m in task.history] == [Role.user, Role.agent] * 2 + [Role.user]
    assert [m.parts[0].root.text for m in task.history] == HISTORY  # type: ignore[union-attr]


def _v1_completed(task: dict[str, Any]) -> None:
    assert task["status"]["state"] == COMPLETED, task["status"]
    assert artifact_data(task)[-1] == DOC_RESULT
    assert [m["role"] for m in task["history"]] == ["ROLE_USER", "ROLE_AGENT"] * 2 + ["ROLE_USER"]
    assert [m["parts"][0]["text"] for m in task["history"]] == HISTORY


@STREAMING
async def test_asked_over_v03_answered_over_v1(
    driver: Driver, server: Server, streaming: bool
) -> None:
    async with official_client(server, streaming=streaming) as old:
        asked = await _send(old, _message(DOC_REQUEST))
    assert _v03_question(asked) == (DOC_QUESTION, DOC_HITL)

    ids: dict[str, Any] = {"context_id": asked.context_id, "task_id": asked.id}
    with sdk1_client(driver, server.url, streaming=streaming) as (new, connected):
        assert_chosen(connected, "native")
        # v1.0 sees the v0.3 question exactly as v0.3 does
        waiting = new.get_task(asked.id).ok()
        assert question(waiting) == (DOC_QUESTION, DOC_HITL)

        second = new.send(user_message(text("여권"), **ids))
        assert (second.done["id"], question(second.done)[0]) == (asked.id, BIRTHDAY_QUESTION)
        assert_events(second, streaming, INPUT_REQUIRED)
        assert_wire(second, "native", streaming)

        third = new.send(user_message(text("1990-01-01"), **ids))
        assert third.done["id"] == asked.id
        assert_events(third, streaming, COMPLETED)
        assert_wire(third, "native", streaming)
        _v1_completed(new.get_task(asked.id).ok())

    async with official_client(server, streaming=streaming) as old:
        _v03_completed(await old.get_task(TaskQueryParams(id=asked.id)))


@STREAMING
async def test_asked_over_v1_answered_over_v03(
    driver: Driver, server: Server, streaming: bool
) -> None:
    with sdk1_client(driver, server.url, streaming=streaming) as (new, connected):
        assert_chosen(connected, "native")
        first = new.send(user_message(text(DOC_REQUEST)))
        asked = first.done
        assert question(asked) == (DOC_QUESTION, DOC_HITL)
        assert_wire(first, "native", streaming)

    async with official_client(server, streaming=streaming) as old:
        waiting = await old.get_task(TaskQueryParams(id=asked["id"]))
        assert _v03_question(waiting) == (DOC_QUESTION, DOC_HITL)
        second = await _send(old, _message("여권", waiting))
        assert second.id == asked["id"]
        assert _v03_question(second)[0] == BIRTHDAY_QUESTION
        done = await _send(old, _message("1990-01-01", waiting))
        assert done.id == asked["id"]
        _v03_completed(await old.get_task(TaskQueryParams(id=asked["id"])))

    with sdk1_client(driver, server.url, streaming=streaming) as (new, _):
        _v1_completed(new.get_task(asked["id"]).ok())
