"""``StoredTask.twin``: the shallow copy a turn's ending is built on (runtime/publisher.py),
made without ``dataclasses.replace`` (bench/README.md, "Speed, round thirty")."""

from __future__ import annotations

import dataclasses

from llamon_agent.a2a.types import Task, TaskStatus
from llamon_agent.core.deadlines import Cancel
from llamon_agent.stores.base import Expiry, Pending, StoredTask


def every_field_set() -> StoredTask:
    task = Task(id="t-1", context_id="c-1", status=TaskStatus(state="input-required"),
                kind="task")
    return StoredTask(
        task=task, agent_id="hitl", event_seq=7, pending_interrupt="i-1", reask_count=1,
        pending=(Pending(id="i-1", value={"question": "?"}),), collected={"i-0": "yes"},
        answered={"i-0": "m-3"}, added_reviews={"tool": {"allow": ["approve"]}},
        space="alice", resuming={"i-1": "go"},
        deadline=Expiry(interrupt_id="i-1", at="2026-12-07T10:00:00Z", then=Cancel()),
        expired=("i-00",), reviews_opened=True, stored_bytes=812,
    )


def test_a_twin_is_what_replace_makes() -> None:
    record = every_field_set()
    twin = record.twin()
    assert twin is not record
    assert type(twin) is StoredTask
    assert twin == dataclasses.replace(record)
    for field in dataclasses.fields(StoredTask):  # shallow, as replace: the same objects
        assert getattr(twin, field.name) is getattr(record, field.name), field.name


def test_a_twin_changes_without_its_original() -> None:
    record = every_field_set()
    twin = record.twin()
    twin.resuming = None
    twin.event_seq += 2
    twin.task = twin.task.model_copy(update={"status": TaskStatus(state="completed")})
    assert record.resuming == {"i-1": "go"}
    assert record.event_seq == 7
    assert record.state == "input-required"
    assert twin.state == "completed"
