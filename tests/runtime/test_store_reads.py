"""How often routing reads the task store. An answer that names its task and its context (what
the official client sends) is read once, under the context's claim: before, it was read first
to find its context, then again under the claim (PostgreSQL: one more statement per answer).
What that first read checked is still checked, with the same errors, whether or not the
context is busy."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from llamon_agent.a2a.types import Task
from llamon_agent.errors import InvalidParamsError, TaskNotFoundError, UnsupportedOperationError
from llamon_agent.runtime.claims import LocalClaims
from llamon_agent.runtime.tasks import TaskManager
from llamon_agent.stores.storage import Storage, open_storage

from .helpers import BIRTHDAY_QUESTION, doc_agent
from .test_seams import params

READS = ("get", "latest_in_context")


def question_of(task: Task) -> str:
    assert task.status.state == "input-required" and task.status.message is not None
    return str(task.status.message.parts[0].text)  # type: ignore[union-attr]


@asynccontextmanager
async def counted(claims: LocalClaims | None = None
                  ) -> AsyncIterator[tuple[TaskManager, Storage, Counter[str]]]:
    reads: Counter[str] = Counter()
    inside: list[str] = []  # the store's own calls (latest_in_context gets) are not reads
    async with open_storage(":memory:") as storage:
        for name in READS:
            original: Callable[..., Any] = getattr(storage.tasks, name)

            async def read(*args: Any, __name: str = name, __original: Any = original) -> Any:
                if inside:
                    return await __original(*args)
                reads[__name] += 1
                inside.append(__name)
                try:
                    return await __original(*args)
                finally:
                    inside.pop()

            setattr(storage.tasks, name, read)
        async with TaskManager([doc_agent()], storage, claims=claims) as manager:
            yield manager, storage, reads


async def test_an_answer_naming_its_task_and_context_reads_the_store_once() -> None:
    async with counted() as (manager, _, reads):
        asked = await manager.send(params("이 서류를 검증해줘", context_id="c1"))
        assert asked.status.state == "input-required"
        reads.clear()
        answered = await manager.send(params("여권", context_id="c1", task_id=asked.id))
        assert question_of(answered) == BIRTHDAY_QUESTION  # the answer was taken
        assert reads == Counter(latest_in_context=1)


@pytest.mark.parametrize("busy", [False, True], ids=["free", "busy"])
async def test_a_named_task_is_still_checked_before_anything_else(busy: bool) -> None:
    claims = LocalClaims()
    async with counted(claims) as (manager, _, _reads):
        asked = await manager.send(params("이 서류를 검증해줘", context_id="c1"))
        other = await manager.send(params("이 서류를 검증해줘", context_id="c2"))
        held = await claims.acquire("c1") if busy else None
        with pytest.raises(TaskNotFoundError) as missing:
            await manager.send(params("여권", context_id="c1", task_id="no-such-task"))
        assert missing.value.message == "Task no-such-task was specified but does not exist"
        assert missing.value.data == {"taskId": "no-such-task"}
        with pytest.raises(InvalidParamsError) as elsewhere:
            await manager.send(params("여권", context_id="c1", task_id=other.id))
        assert elsewhere.value.message == "bad context id: the task belongs to another context"
        assert elsewhere.value.data == {"taskId": other.id, "contextId": "c1"}
        if held is not None:  # the named task is right: the context is busy
            with pytest.raises(UnsupportedOperationError) as refused:
                await manager.send(params("여권", context_id="c1", task_id=asked.id))
            assert refused.value.data is not None
            assert refused.value.data["taskId"] == asked.id
            await claims.release(held)
        for task in (asked, other):
            answered = await manager.send(params("여권", context_id=task.context_id,
                                                 task_id=task.id))
            assert question_of(answered) == BIRTHDAY_QUESTION
