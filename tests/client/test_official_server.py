"""The client against the official ``a2a-sdk==0.3.26`` server (in-process): card, send,
stream (the SDK frames SSE with CRLF), get_task, the answer on the same task, and errors."""

from __future__ import annotations

import uuid

import pytest
from a2a.utils.constants import PREV_AGENT_CARD_WELL_KNOWN_PATH

from llamon_agent.a2a.types import DataPart, Task, TaskStatusUpdateEvent
from llamon_agent.client import (
    A2AClient,
    A2ARPCError,
    Question,
    answer_message,
    question_of,
)
from llamon_agent.client.errors import RemoteTaskNotCancelableError, RemoteTaskNotFoundError
from tests.client.conftest import FAST_RETRY
from tests.client.sdk_agent import COLOR_QUESTION, SDK_URL, sdk_http


def parked_question(task: object) -> Question:
    assert isinstance(task, Task), task
    question = question_of(task)
    assert question is not None, task.status
    assert question.text == COLOR_QUESTION
    assert [(c.label, c.value) for c in question.choices] == [("red", "red"), ("blue", "blue")]
    assert question.hitl == {"question": COLOR_QUESTION, "options": ["red", "blue"]}
    assert question.schema is None and not question.is_review
    return question


def answer_data(task: Task) -> dict[str, object]:
    assert task.status.state == "completed", task.status
    assert task.artifacts
    part = task.artifacts[-1].parts[0]
    assert isinstance(part, DataPart)
    return part.data


async def test_card() -> None:
    async with sdk_http() as http:
        client = await A2AClient.connect("http://sdk.test", http=http, retry=FAST_RETRY)
        assert client.card is not None and client.card.name == "SDK color agent"
        assert client.card_url == "http://sdk.test/.well-known/agent-card.json"
        assert client.url == SDK_URL and client.card.streaming
        assert client.card.preferred_transport == "JSONRPC"


async def test_card_only_at_the_old_path() -> None:
    async with sdk_http(card_path=PREV_AGENT_CARD_WELL_KNOWN_PATH) as http:
        assert (await http.get("/.well-known/agent-card.json")).status_code == 404
        client = await A2AClient.connect("http://sdk.test", http=http, retry=FAST_RETRY)
        assert client.card_url == "http://sdk.test/.well-known/agent.json"
        assert client.card is not None and client.card.name == "SDK color agent"


async def test_send_question_answer_get() -> None:
    async with sdk_http() as http:
        client = await A2AClient.connect("http://sdk.test", http=http, retry=FAST_RETRY)
        context_id = str(uuid.uuid4())
        first = await client.send("paint the wall", context_id=context_id)
        question = parked_question(first)
        assert question.context_id == context_id

        done = await client.answer(question, choice="blue")
        assert isinstance(done, Task)
        assert (done.id, done.context_id) == (question.task_id, context_id)
        assert answer_data(done) == {"text": "blue", "data": [{"value": "blue"}]}

        stored = await client.get_task(done.id)
        assert stored.status.state == "completed"
        assert answer_data(stored) == answer_data(done)
        texts = [m.text() for m in stored.history or [] if m.role == "user"]
        assert texts[0] == "paint the wall" and texts[-1] == "blue"
        short = await client.get_task(done.id, history_length=1)
        assert short.history is not None and len(short.history) == 1


async def test_stream_question_answer_get() -> None:
    async with sdk_http() as http:
        raw = await http.post("/", json={
            "jsonrpc": "2.0", "id": "probe", "method": "message/stream",
            "params": {"message": {"kind": "message", "messageId": "m0", "role": "user",
                                   "parts": [{"kind": "text", "text": "probe"}]}}})
        assert "\r\n\r\n" in raw.text  # the SDK really frames SSE with CRLF

        client = await A2AClient.connect("http://sdk.test", http=http, retry=FAST_RETRY)
        first = client.stream("paint the wall")
        events = await first.collect()
        assert [(e.kind, e.state, e.final) for e in events] == [
            ("task", "submitted", False),
            ("status-update", "working", False),
            ("status-update", "input-required", True),
        ]
        final = events[-1].result
        assert isinstance(final, TaskStatusUpdateEvent)
        question = question_of(final)
        assert question is not None and question.text == COLOR_QUESTION
        assert first.task is not None
        assert parked_question(first.task).task_id == question.task_id

        second = client.stream(answer_message(question, "red"))
        events = await second.collect()
        assert [e.kind for e in events] == ["artifact-update", "status-update"]
        assert events[-1].state == "completed" and events[-1].final and second.finished
        assert second.task is not None and second.task.id == question.task_id
        assert answer_data(second.task) == {"text": "red", "data": []}

        stored = await client.get_task(question.task_id)
        assert stored.status.state == "completed"
        assert answer_data(stored) == {"text": "red", "data": []}


async def test_errors() -> None:
    async with sdk_http() as http:
        client = await A2AClient.connect("http://sdk.test", http=http, retry=FAST_RETRY)
        with pytest.raises(RemoteTaskNotFoundError):
            await client.get_task("no-such-task")
        with pytest.raises(RemoteTaskNotFoundError):
            await client.send("hi", task_id="no-such-task")
        with pytest.raises(RemoteTaskNotFoundError):
            await client.stream("hi", task_id="no-such-task").collect()

        task = await client.send("paint")
        assert isinstance(task, Task)
        await client.answer(parked_question(task), "red")
        with pytest.raises(RemoteTaskNotCancelableError):
            await client.cancel(task.id)
        # the reference answers a message to a terminal task with -32602 (we use -32004)
        with pytest.raises(A2ARPCError) as terminal:
            await client.send("again", task_id=task.id)
        assert terminal.value.code == -32602


async def test_cancel_a_parked_task() -> None:
    async with sdk_http() as http:
        client = await A2AClient.connect("http://sdk.test", http=http, retry=FAST_RETRY)
        task = await client.send("paint")
        assert isinstance(task, Task)
        canceled = await client.cancel(task.id)
        assert canceled.status.state == "canceled"
        assert (await client.get_task(task.id)).status.state == "canceled"
