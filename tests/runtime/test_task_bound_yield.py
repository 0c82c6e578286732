"""``check_task_bytes`` lets ready work go first before encoding a task that may be large, and
not before encoding a new task of one short plain-text message (``SHORT_FIRST_MESSAGE``): that
yield put a stream's response set-up ahead of its first save, so the two no longer overlapped
(bench/README.md, "Speed, round twenty-three")."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from llamon_agent.a2a.types import DataPart, Message, Task, TaskStatus, TextPart
from llamon_agent.core.bounds import Limits
from llamon_agent.errors import LimitExceededError
from llamon_agent.runtime.task_bound import SHORT_FIRST_MESSAGE, check_task_bytes
from llamon_agent.stores.base import StoredTask


def new_task(*parts: TextPart | DataPart, **message: Any) -> StoredTask:
    first = Message(message_id="m1", role="user", parts=list(parts), task_id="t1",
                    context_id="c1", **message)
    task = Task(id="t1", context_id="c1", status=TaskStatus(state="submitted"), history=[first])
    return StoredTask(task=task, agent_id="a")


def text(chars: int) -> TextPart:
    return TextPart(kind="text", text="x" * chars)


async def yields(record: StoredTask, limits: Limits | None = None) -> bool:
    """Whether work already waiting ran before the check returned."""
    order: list[str] = []
    asyncio.get_running_loop().call_soon(order.append, "other")
    await check_task_bytes(record, limits or Limits())
    order.append("checked")
    await asyncio.sleep(0)
    return order == ["other", "checked"]


@pytest.mark.parametrize(("name", "record"), [
    ("one short text part", new_task(text(5))),
    ("several short parts", new_task(text(100), text(200), text(0))),
    ("just under the bound", new_task(text(SHORT_FIRST_MESSAGE - 64))),
])
async def test_a_new_task_of_a_short_text_message_is_encoded_at_once(
    name: str, record: StoredTask,
) -> None:
    assert not await yields(record), name


@pytest.mark.parametrize(("name", "record"), [
    ("a long text", new_task(text(SHORT_FIRST_MESSAGE - 63))),
    ("short texts, long together", new_task(*[text(8000)] * 3)),
    ("a data part", new_task(DataPart(kind="data", data={"k": "v"}))),
    ("message metadata", new_task(text(5), metadata={"k": "v"})),
    ("part metadata", new_task(TextPart(kind="text", text="x", metadata={"k": "v"}))),
    ("reference task ids", new_task(text(5), reference_task_ids=["t0"])),
    ("extensions", new_task(text(5), extensions=["https://example.com/ext"])),
])
async def test_a_task_that_may_be_large_lets_ready_work_go_first(
    name: str, record: StoredTask,
) -> None:
    assert await yields(record), name


async def test_a_task_that_published_events_is_not_a_first_message() -> None:
    record = new_task(text(5))
    record.event_seq = 3  # a stored task being answered: never taken for a new one
    assert await yields(record)


async def test_a_short_first_message_is_still_held_to_the_bound() -> None:
    limits = Limits(max_task_bytes=1024)
    record = new_task(text(2000))  # short for the yield, long for this bound
    with pytest.raises(LimitExceededError):
        await check_task_bytes(record, limits)
