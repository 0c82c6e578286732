"""The task-size bound from lengths alone (``runtime/task_bound.py``): a plain-text message and
a new task of one short text are bounded without encoding them, and the bound is never below
what the store then writes; a bound over the limit falls back to encoding, so a task that fits
is never refused for it and one that does not is still refused (bench/README.md, "Speed, round
thirty-two")."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from llamon_agent.a2a.types import DataPart, Message, Task, TaskStatus, TextPart
from llamon_agent.core.bounds import Limits
from llamon_agent.errors import LimitExceededError
from llamon_agent.runtime import task_bound
from llamon_agent.runtime.task_bound import check_task_bytes
from llamon_agent.stores.base import StoredTask
from llamon_agent.stores.size import encoded_size

#: every kind of character whose JSON is longest: control characters (six bytes each), quotes
#: and backslashes (two), and characters of two, three and four bytes of UTF-8 (no lone
#: surrogates: the JSON parser refuses them, so no message holds one)
_NO_SURROGATES = st.characters(blacklist_categories=["Cs"])
texts = st.text(st.sampled_from(["a", "\x00", "\x1f", '"', "\\", "\n", "é", "€", "😀", "\u2028"])
                | _NO_SURROGATES, max_size=300)
ids = st.text(_NO_SURROGATES, min_size=1, max_size=40)


def message(parts: list[str], message_id: str, task_id: str | None, context_id: str | None,
            **more: Any) -> Message:
    return Message(message_id=message_id, role="user", task_id=task_id, context_id=context_id,
                   parts=[TextPart(kind="text", text=t) for t in parts] or
                   [TextPart(kind="text", text="")], **more)


@settings(max_examples=300)
@given(st.lists(texts, max_size=5), ids, st.none() | ids, st.none() | ids)
@example(["\x1f" * 300] * 5, "\x00" * 40, "\x00" * 40, "\x00" * 40)  # six bytes a character
@example([""] * 5, "m", None, None)  # the frame around nothing
def test_a_plain_text_message_is_bounded_from_its_lengths(
    parts: list[str], message_id: str, task_id: str | None, context_id: str | None,
) -> None:
    sent = message(parts, message_id, task_id, context_id)
    assert task_bound._message_bound(sent) >= len(sent.to_json())
    if parts and all(p and set(p) == {"\x1f"} for p in parts):
        # the worst case is tight: within the frame's spare room
        assert task_bound._message_bound(sent) - len(sent.to_json()) < 1024


@settings(max_examples=200)
@given(st.lists(texts, max_size=5), ids, ids, ids, st.none() | ids)
def test_a_new_task_of_plain_text_is_bounded_from_its_lengths(
    parts: list[str], task_id: str, context_id: str, message_id: str, space: str | None,
) -> None:
    first = message(parts, message_id, task_id, context_id)
    task = Task(id=task_id, context_id=context_id, history=[first],
                status=TaskStatus(state="submitted", timestamp="2026-12-07T15:00:00.000Z"))
    record = StoredTask(task=task, agent_id="a")
    if space is not None:
        record.space = space
    assert task_bound._new_task_bound(record) >= encoded_size(record)


@pytest.mark.parametrize("more", [
    {"metadata": {"k": "v" * 500}},
    {"extensions": ["https://example.com/" + "x" * 500]},
    {"reference_task_ids": ["t" * 500]},
])
def test_a_message_with_more_than_plain_text_is_encoded(more: dict[str, Any]) -> None:
    sent = message(["hi"], "m1", "t1", "c1", **more)
    assert task_bound._message_bound(sent) == len(sent.to_json())


def test_a_message_with_a_data_part_is_encoded() -> None:
    sent = Message(message_id="m1", role="agent", parts=[
        TextPart(kind="text", text="which?"), DataPart(kind="data", data={"hitl": "x" * 900})])
    assert task_bound._message_bound(sent) == len(sent.to_json())


def new_task(text: str) -> StoredTask:
    first = message([text], "m1", "t1", "c1")
    return StoredTask(task=Task(id="t1", context_id="c1", history=[first],
                                status=TaskStatus(state="submitted")), agent_id="a")


async def test_a_new_task_whose_length_bound_is_over_the_limit_is_measured_exactly() -> None:
    """2,000 characters of plain ASCII: the bound (6 bytes each) is over a 4 KiB limit, the
    task (about 2.2 KB) is not: it is accepted, after being encoded."""
    record = new_task("x" * 2000)
    assert task_bound._new_task_bound(record) > 4096 >= encoded_size(record)
    await check_task_bytes(record, Limits(max_task_bytes=4096))


async def test_a_new_task_over_the_limit_is_still_refused() -> None:
    record = new_task("x" * 5000)
    with pytest.raises(LimitExceededError) as refused:
        await check_task_bytes(record, Limits(max_task_bytes=4096))
    assert refused.value.data["limit"] == "max_task_bytes"


def test_a_new_task_with_a_status_message_counts_it_too() -> None:
    record = new_task("hi")
    said = Message(message_id="m2", role="agent", parts=[
        TextPart(kind="text", text="\x1f" * 3000), DataPart(kind="data", data={"k": "v" * 500})])
    record.task = record.task.model_copy(
        update={"status": TaskStatus(state="working", message=said)})
    assert task_bound._new_task_bound(record) >= encoded_size(record) > 18_000
