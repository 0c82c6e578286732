"""The client against our server, in-process: the document-review HITL flow by send and by
stream, get/cancel/resubscribe (with Last-Event-ID) and the mapping of JSON-RPC errors."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from llamon_agent.a2a.types import DataPart, Message, Task, TaskStatusUpdateEvent
from llamon_agent.client import (
    A2AClient,
    A2ARPCError,
    Question,
    StreamEvent,
    answer_message,
    fetch_card,
    question_of,
)
from llamon_agent.client.errors import (
    RemoteInvalidParamsError,
    RemoteTaskNotCancelableError,
    RemoteTaskNotFoundError,
    RemoteUnsupportedOperationError,
)
from tests.client.conftest import BIRTHDAY_QUESTION, DOC_QUESTION, FAST_RETRY
from tests.conftest import serve, served_on

RESULT = {"doc_type": "passport", "birthday": "1990-01-01"}

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")


def ask(task: Task | Message) -> Question:
    assert isinstance(task, Task), task
    question = question_of(task)
    assert question is not None, task.status
    return question


def result_data(task: Task) -> dict[str, Any]:
    assert task.status.state == "completed", task.status
    assert task.artifacts
    first = task.artifacts[-1].parts[0]
    assert isinstance(first, DataPart)
    return first.data


async def test_card_resolved_from_the_base_url(ours: A2AClient) -> None:
    card = ours.card
    assert card is not None
    assert ours.card_url == "http://testserver/.well-known/agent-card.json"
    assert ours.url == card.url == "http://testserver/"
    assert card.protocol_version == "0.3.0" and card.streaming
    assert {s.id for s in card.skills} >= {"document-review", "until-done"}
    # the deprecated path serves the same card
    old, url = await fetch_card(ours._http, "http://testserver/.well-known/agent.json",
                                retry=FAST_RETRY, timeout=ours._timeout)
    assert url.endswith("/agent.json") and old == card


@pytest.mark.parametrize(
    "how", ["choice-label", "choice-value", "value", "text"],
)
async def test_document_review_by_send(ours: A2AClient, how: str) -> None:
    context_id = f"case-{uuid.uuid4()}"
    first = await ours.send("이 서류를 검증해줘", context_id=context_id,
                            metadata={"agentId": "document-review", "sessionId": context_id})
    question = ask(first)
    assert question.text == DOC_QUESTION
    assert [(c.label, c.value) for c in question.choices] == [
        ("여권", "passport"), ("주민등록증", "id_card")
    ]
    assert question.hitl is not None and question.hitl["schema"] == "llamon.hitl.question.v1"
    assert not question.is_review
    assert question.context_id == context_id

    answer: dict[str, Any] = {
        "choice-label": {"choice": "여권"},
        "choice-value": {"choice": "passport"},
        "value": {"value": "passport"},
        "text": {"text": "여권"},
    }[how]
    second = await ours.answer(question, **answer)
    question2 = ask(second)
    assert question2.text == BIRTHDAY_QUESTION and question2.choices == ()
    assert (question2.task_id, question2.context_id) == (question.task_id, context_id)

    done = await ours.answer(question2, "1990-01-01")
    assert isinstance(done, Task) and done.id == question.task_id
    assert result_data(done) == RESULT

    stored = await ours.get_task(done.id)
    assert stored.status.state == "completed"
    users = [m for m in stored.history or [] if m.role == "user"]
    assert [m.task_id for m in users[1:]] == [done.id, done.id]  # the answers named the task
    assert {m.context_id for m in users} == {context_id}


async def test_document_review_by_stream(ours: A2AClient) -> None:
    async with ours.stream("이 서류를 검증해줘") as stream:
        events = await stream.collect()
    assert [e.kind for e in events] == ["task", "status-update", "status-update"]
    assert [e.state for e in events] == ["submitted", "working", "input-required"]
    assert [e.final for e in events] == [False, False, True]
    ids = [int(e.id) for e in events if e.id is not None]
    assert ids == sorted(ids) and len(ids) >= 2
    assert stream.finished and stream.last_event_id == events[-1].id
    final = events[-1].result
    assert isinstance(final, TaskStatusUpdateEvent)
    question = question_of(final)
    assert question is not None and question.text == DOC_QUESTION
    assert stream.task is not None and stream.task.status.state == "input-required"
    assert stream.task.id == question.task_id == stream.task_id

    second = ours.stream(answer_message(question, choice="passport"))
    assert isinstance(await second.result(), Task)
    question = ask(await second.result())
    assert question.text == BIRTHDAY_QUESTION

    third = ours.stream(answer_message(question, "1990-01-01"))
    events = [e async for e in third]
    assert [e.kind for e in events][-2:] == ["artifact-update", "status-update"]
    assert events[-1].state == "completed" and events[-1].final
    assert third.task is not None and result_data(third.task) == RESULT
    assert third.task.id == question.task_id


async def test_non_blocking_send_then_get(ours: A2AClient) -> None:
    task = await ours.send("이 서류를 검증해줘", blocking=False)
    assert isinstance(task, Task) and task.status.state == "submitted"
    for _ in range(200):
        task = await ours.get_task(task.id)
        if task.status.state == "input-required":
            break
        await asyncio.sleep(0.01)
    assert ask(task).text == DOC_QUESTION


async def test_history_length(ours: A2AClient) -> None:
    task = await ours.send("이 서류를 검증해줘", history_length=0)
    assert isinstance(task, Task) and task.history is None
    full = await ours.get_task(task.id)
    assert full.history and len(full.history) >= 1
    assert (await ours.get_task(task.id, history_length=0)).history is None
    await ours.answer(ask(task), choice="passport")
    assert len((await ours.get_task(task.id)).history or []) >= 3
    last = (await ours.get_task(task.id, history_length=1)).history
    assert last is not None and len(last) == 1


async def test_cancel(ours: A2AClient) -> None:
    task = await ours.send("이 서류를 검증해줘")
    assert isinstance(task, Task)
    canceled = await ours.cancel(task.id)
    assert canceled.id == task.id and canceled.status.state == "canceled"
    with pytest.raises(RemoteTaskNotCancelableError) as info:
        await ours.cancel(task.id)
    assert info.value.code == -32002
    assert info.value.data == {"taskId": task.id, "state": "canceled"}


async def test_resubscribe_snapshot_and_last_event_id(ours: A2AClient) -> None:
    first = ours.stream("이 서류를 검증해줘")
    first_events = await first.collect()
    final = first_events[-1].result
    assert isinstance(final, TaskStatusUpdateEvent)
    question = question_of(final)
    assert question is not None
    second = ours.stream(answer_message(question, choice="passport"))
    second_events = await second.collect()
    task_id = question.task_id

    # no cursor: the snapshot first, then the current status as the final event
    snapshot = await ours.resubscribe(task_id).collect()
    assert [(e.kind, e.state, e.final) for e in snapshot] == [
        ("task", "input-required", False), ("status-update", "input-required", True)
    ]
    assert snapshot[0].id is None

    # Last-Event-ID from the latest turn's snapshot on: exactly the events after it
    cursor = second_events[0]
    assert cursor.kind == "task" and cursor.id is not None
    replay = ours.resubscribe(task_id, last_event_id=cursor.id)
    replayed = await replay.collect()

    def view(events: list[StreamEvent]) -> list[tuple[str | None, dict[str, Any]]]:
        return [(e.id, e.result.to_wire()) for e in events]

    assert view(replayed) == view(second_events[1:])
    assert replay.finished and replay.last_event_id == second_events[-1].id
    assert replay.task is not None and replay.task.status.state == "input-required"

    # a cursor in the earlier turn: replicas' Redis stream still holds every event after it;
    # one process's ended log let go of the latest snapshot (the whole task), so it answers
    # as for events no longer retained: the task as stored, then its current status
    older = await ours.resubscribe(task_id, last_event_id=first_events[1].id).collect()
    if "events" in served_on():
        assert view(older) == view(first_events[2:] + second_events)
    else:
        assert [(e.kind, e.state, e.final) for e in older] == [
            ("task", "input-required", False), ("status-update", "input-required", True)
        ]
        assert older[-1].id == second_events[-1].id

    # an integer cursor is sent the same way
    latest = await ours.resubscribe(task_id, last_event_id=int(second_events[1].id or 0)).collect()
    assert view(latest) == view(second_events[2:])


async def test_error_mapping(ours: A2AClient) -> None:
    with pytest.raises(RemoteTaskNotFoundError) as info:
        await ours.get_task("no-such-task")
    assert isinstance(info.value, A2ARPCError)
    assert (info.value.code, info.value.data) == (-32001, {"taskId": "no-such-task"})

    with pytest.raises(RemoteTaskNotFoundError):
        await ours.send("hello", task_id="no-such-task")
    with pytest.raises(RemoteTaskNotFoundError):  # an SSE error event
        await ours.stream("hello", task_id="no-such-task").collect()
    with pytest.raises(RemoteTaskNotFoundError):
        await ours.resubscribe("no-such-task").collect()
    with pytest.raises(RemoteTaskNotFoundError):
        await ours.cancel("no-such-task")

    task = await ours.send("이 서류를 검증해줘")
    assert isinstance(task, Task)
    with pytest.raises(RemoteInvalidParamsError) as mismatch:
        await ours.send("x", task_id=task.id, context_id="another-context")
    assert mismatch.value.code == -32602

    await ours.cancel(task.id)
    with pytest.raises(RemoteUnsupportedOperationError) as terminal:
        await ours.send("again", task_id=task.id)
    assert terminal.value.code == -32004
    assert terminal.value.data["state"] == "canceled"
    with pytest.raises(RemoteUnsupportedOperationError):
        await ours.stream("again", task_id=task.id).collect()


async def test_agent_id_goes_into_params_metadata(example_agents: list[Any]) -> None:
    async with serve(example_agents) as raw:
        client = A2AClient("/", http=raw.http, agent_id="until-done")
        assert client.url == "http://testserver/"
        task = await client.send("take notes")
        assert isinstance(task, Task)
        assert ask(task).text.startswith("What should I note?")
        done = await client.answer(ask(task), "done")
        assert isinstance(done, Task) and done.status.state == "completed"
        assert not raw.http.is_closed  # a client that was passed in stays open


async def test_an_answer_sent_again_is_the_task_as_it_stands(ours: A2AClient) -> None:
    """Issue 8, finding 3: ``answer_message`` binds the answer to its question, so a client
    that resends it after a timeout cannot answer the next question with it."""
    first = await ours.send("이 서류를 검증해줘", metadata={"agentId": "document-review"})
    question = ask(first)
    answer = answer_message(question, choice="passport")
    assert answer.metadata == {"interruptId": question.interrupt_id}

    second = await ours.send(answer)
    assert ask(second).text == BIRTHDAY_QUESTION
    again = await ours.send(answer)  # the same message: the task as it stands
    assert isinstance(again, Task) and again.status == second.status
    assert again.history == second.history

    with pytest.raises(RemoteInvalidParamsError) as stale:  # a new copy of it: stale
        await ours.answer(question, choice="passport")
    assert stale.value.data == {
        "reason": "stale answer", "taskId": question.task_id,
        "interruptId": question.interrupt_id, "pendingInterruptId": ask(second).interrupt_id,
    }
    done = await ours.answer(ask(second), "1990-01-01")
    assert isinstance(done, Task) and result_data(done) == RESULT
