"""The runtime's task encodings, kept once per object (llamon_agent/a2a/task_json.py)."""

from __future__ import annotations

import gc

import pytest

from llamon_agent.a2a import task_json
from llamon_agent.a2a.task_json import MAX_ENTRIES, StaleTaskJSONError
from llamon_agent.a2a.types import Message, Task, TaskStatus, TextPart


def _task(text: str = "hello", task_id: str = "t-1") -> Task:
    message = Message(role="user", parts=[TextPart(kind="text", text=text)], message_id="m-1",
                      kind="message")
    return Task(id=task_id, context_id="c-1", status=TaskStatus(state="working"),
                history=[message])


@pytest.fixture(autouse=True)
def _empty() -> None:
    task_json._encoded.clear()


def test_an_object_is_encoded_once_and_its_copies_anew() -> None:
    task = _task()
    first = task_json.task_json(task)
    assert first == task.to_json()
    assert task_json.task_json(task) is first  # the same bytes: not encoded again
    copy = task.model_copy(update={"status": TaskStatus(state="completed")})
    assert b'"completed"' in task_json.task_json(copy)
    assert task_json.task_json(task) is first


def test_an_encoding_goes_with_its_task() -> None:
    task = _task()
    task_json.task_json(task)
    assert len(task_json._encoded) == 1
    del task
    gc.collect()
    assert task_json._encoded == {}


def test_at_most_max_entries_are_kept_the_oldest_dropped_first() -> None:
    tasks = [_task(task_id=f"t-{n}") for n in range(MAX_ENTRIES + 10)]
    for task in tasks:
        task_json.task_json(task)
    assert len(task_json._encoded) == MAX_ENTRIES
    assert id(tasks[0]) not in task_json._encoded
    assert id(tasks[-1]) in task_json._encoded
    assert task_json.task_json(tasks[0]) == tasks[0].to_json()  # encoded again, correctly


def test_a_reused_id_never_answers_for_another_object() -> None:
    task = _task("first")
    key = id(task)
    # an entry whose object is gone, under the same key
    task_json._encoded[key] = (lambda: None, b"stale")  # type: ignore[assignment]
    assert task_json.task_json(task) == task.to_json()


def test_a_late_callback_leaves_a_newer_objects_encoding() -> None:
    task = _task()
    data = task_json.task_json(task)
    task_json._forget(id(task), lambda: None)  # type: ignore[arg-type]  # another ref's callback
    assert task_json._encoded[id(task)][1] is data


def test_verify_catches_a_task_changed_in_place(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(task_json, "VERIFY", True)
    task = _task()
    task_json.task_json(task)
    task.status = TaskStatus(state="failed")  # what the runtime never does
    with pytest.raises(StaleTaskJSONError, match="t-1"):
        task_json.task_json(task)


def test_wire_json_caches_tasks_only() -> None:
    task = _task()
    message = task.history[0]  # type: ignore[index]
    assert task_json.wire_json(message) == message.to_json()
    assert task_json._encoded == {}  # a message is encoded once in its life: nothing kept
    assert task_json.wire_json(task) is task_json.task_json(task)
