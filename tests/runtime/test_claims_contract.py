"""The ``ContextClaims`` contract, the same tests on every implementation: ``LocalClaims`` (one
process) and ``PostgresClaims`` (claim rows shared by replicas; skipped with a reason when no
PostgreSQL server runs, failed under ``CI=true``). Two claim objects on PostgreSQL stand for two
replicas; in one process there is only one ``LocalClaims``, so both names are the same object."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

from llamon_agent.runtime.claims import Claim, ClaimTaken, ContextClaims, LocalClaims

RENEWED_LEASE = 0.6  # seconds: renewed every 0.2 s


@dataclass
class Replicas:
    a: ContextClaims
    b: ContextClaims


@pytest.fixture(params=["local", "postgres"])
async def replicas(request: pytest.FixtureRequest) -> AsyncIterator[Replicas]:
    if request.param == "local":
        local = LocalClaims()
        yield Replicas(local, local)
        return
    url = str(request.getfixturevalue("postgres_url"))
    from llamon_agent.backends.pg_claims import PostgresClaims
    from tests.replicas.pg import open_pool

    async with AsyncExitStack() as stack:
        pool = await stack.enter_async_context(open_pool(url))
        # a short lease: the renewal (every lease / 3) writes a claim's task once the turn knows it
        a = await stack.enter_async_context(PostgresClaims(pool, lease=RENEWED_LEASE))
        b = await stack.enter_async_context(PostgresClaims(pool, lease=RENEWED_LEASE))
        yield Replicas(a, b)


async def refusal(claims: ContextClaims, key: str) -> ClaimTaken:
    with pytest.raises(ClaimTaken) as refused:
        await claims.acquire(key)
    return refused.value


async def until(check: Callable[[], Awaitable[bool]], timeout: float = 5.0) -> None:
    """PostgreSQL writes a claim's task id at its next renewal: poll for it."""
    async with asyncio.timeout(timeout):
        while not await check():
            await asyncio.sleep(0.01)


async def test_one_holder_per_key_and_the_refusal_names_the_task(replicas: Replicas) -> None:
    claim = await replicas.a.acquire("s:c1")
    assert (claim.key, claim.task_id) == ("s:c1", None)
    assert (await refusal(replicas.a, "s:c1")).task_id is None
    assert (await refusal(replicas.b, "s:c1")).task_id is None
    other = await replicas.b.acquire("s:c2")  # another context is free
    assert other.key == "s:c2"

    claim.task_id = "task-1"  # the turn's task is known (TurnWorker.start)

    async def names_the_task() -> bool:
        return (await refusal(replicas.b, "s:c1")).task_id == "task-1"

    await until(names_the_task)
    assert (await refusal(replicas.a, "s:c1")).task_id == "task-1"
    assert (await refusal(replicas.b, "s:c2")).task_id is None


async def test_a_claim_taken_for_a_known_task_names_it_at_once(replicas: Replicas) -> None:
    """An answer that names its task takes the claim with the task id: a refusal names it
    with no wait (written with the row on PostgreSQL)."""
    claim = await replicas.a.acquire("s:c3", task_id="task-3")
    assert (claim.key, claim.task_id) == ("s:c3", "task-3")
    assert (await refusal(replicas.b, "s:c3")).task_id == "task-3"  # no wait: written with it
    await replicas.a.release(claim)


async def test_held_follows_acquire_and_release(replicas: Replicas) -> None:
    assert (await replicas.a.held("s:c1"), await replicas.b.held("s:c1")) == (False, False)
    claim = await replicas.a.acquire("s:c1")
    assert (await replicas.a.held("s:c1"), await replicas.b.held("s:c1")) == (True, True)
    assert await replicas.b.held("s:c2") is False
    await replicas.b.acquire("s:c3")
    keys = {"s:c1", "s:c2", "s:c3"}
    assert (await replicas.a.held_among(keys), await replicas.b.held_among(keys)) == (
        {"s:c1", "s:c3"}, {"s:c1", "s:c3"})
    assert await replicas.a.held_among(set()) == set()
    await replicas.a.release(claim)
    assert (await replicas.a.held("s:c1"), await replicas.b.held("s:c1")) == (False, False)
    assert await replicas.b.held_among(keys) == {"s:c3"}


async def test_a_released_key_is_acquired_again(replicas: Replicas) -> None:
    first = await replicas.a.acquire("s:c1")
    first.task_id = "task-1"
    await replicas.a.release(first)
    second = await replicas.b.acquire("s:c1")
    assert second is not first and (second.key, second.task_id) == ("s:c1", None)
    assert (await refusal(replicas.a, "s:c1")).task_id is None  # not the released task's


async def test_releasing_a_claim_not_held_does_nothing(replicas: Replicas) -> None:
    stale = await replicas.a.acquire("s:c1")
    await replicas.a.release(stale)
    holder = await replicas.b.acquire("s:c1")
    await replicas.a.release(stale)  # released twice: the new holder keeps the context
    await replicas.b.release(stale)
    await replicas.a.release(Claim("s:c1"))  # a claim no acquire returned
    await replicas.b.release(Claim("s:c1", "task-x"))
    assert await replicas.a.held("s:c1") is True
    assert (await refusal(replicas.a, "s:c1")).task_id is None
    await replicas.b.release(holder)
    assert await replicas.a.held("s:c1") is False


@asynccontextmanager
async def doc_manager(claims: ContextClaims) -> AsyncIterator[Any]:
    """A ``TaskManager`` serving the document-review agent on memory storage with ``claims``."""
    from llamon_agent.runtime.tasks import TaskManager
    from llamon_agent.stores.storage import open_storage

    from .helpers import doc_agent

    async with (
        open_storage(":memory:") as storage,
        TaskManager([doc_agent()], storage, claims=claims) as manager,
    ):
        yield manager


def in_c1(text: str) -> Any:
    """``MessageSendParams`` of a message without ``taskId`` in the context ``c1``."""
    from llamon_agent.a2a.types import MessageSendParams
    from tests.conftest import send_params

    return MessageSendParams.model_validate(send_params(text, context_id="c1"))


async def test_a_new_task_is_claimed_with_its_id_from_the_start(
    replicas: Replicas, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A message that starts a task takes the context's claim with the id its task will have
    (``TaskManager`` draws it before the claim, the router's plan uses it): a refusal names the
    task at once. An answer without ``taskId`` (to the context's waiting task) cannot know its
    task before the plan: its claim names that task from then on, and on PostgreSQL no
    statement of its own writes it (the renewal does, for a turn that lasts that long): a
    HITL round trip answered by context sends no ``UPDATE`` of the claim row."""
    taken: list[tuple[str, str | None]] = []  # (key, task id) as each claim was taken
    claims: list[Claim] = []
    acquire = replicas.a.acquire

    async def recorded(key: str, task_id: str | None = None) -> Claim:
        claim = await acquire(key, task_id)
        taken.append((key, claim.task_id))
        claims.append(claim)
        return claim

    monkeypatch.setattr(replicas.a, "acquire", recorded)
    sent: list[str] = []  # PostgreSQL: the claims' statements
    rows = getattr(replicas.a, "_rows", None)
    if rows is not None:
        async def counted(sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
            sent.append(sql.split()[0])
            return await rows(sql, params)  # type: ignore[no-any-return]

        monkeypatch.setattr(replicas.a, "_rows", counted)
        monkeypatch.setattr(replicas.a, "_renew", _no_renewal)  # only the turns' statements

    async with doc_manager(replicas.a) as manager:
        asked = await manager.send(in_c1("이 서류를 검증해줘"))
        assert asked.status.state == "input-required"
        assert taken == [("c1", asked.id)]
        again = await manager.send(in_c1("여권"))  # no taskId: it answers the waiting task
        assert (again.id, again.status.state) == (asked.id, "input-required")
        assert claims[1].task_id == asked.id  # the turn names its task
        await asyncio.sleep(0.05)  # what a write "at once" in the background would take
    assert [key for key, _ in taken] == ["c1", "c1"]
    assert taken[1][1] != asked.id  # taken before the plan knew which task it answers
    assert sent == (["INSERT", "DELETE"] * 2 if rows is not None else [])


async def _no_renewal() -> None:
    return None


async def test_a_refusal_names_the_waiting_task_an_answer_s_claim_is_for(replicas: Replicas) -> None:
    """An answer without ``taskId`` takes the claim with the id a new task would get (it
    cannot know yet that it answers the waiting task); a message refused meanwhile, here on
    another replica, is told the waiting task, never that id, which no task will have."""
    from llamon_agent.errors import UnsupportedOperationError

    async with doc_manager(replicas.a) as manager:
        asked = await manager.send(in_c1("이 서류를 검증해줘"))
        assert asked.status.state == "input-required"
        answering = await replicas.b.acquire("c1", "a-task-id-drawn-for-the-answer")
        try:
            with pytest.raises(UnsupportedOperationError) as refused:
                await manager.send(in_c1("여권"))
        finally:
            await replicas.b.release(answering)
        assert refused.value.data == {"contextId": "c1", "taskId": asked.id,
                                      "reason": "task is busy"}
        done = await manager.send(in_c1("여권"))  # the context is free again
        assert (done.id, done.status.state) == (asked.id, "input-required")


async def test_a_cancel_or_a_context_deletion_refused_names_the_waiting_task(
    replicas: Replicas,
) -> None:
    """The same for the other refusals of a busy context: canceling the waiting task, and
    deleting its context, while an answer without ``taskId`` holds the claim with its drawn id
    (on PostgreSQL that id stays in the claim row until the renewal)."""
    from llamon_agent.errors import UnsupportedOperationError

    async with doc_manager(replicas.a) as manager:
        asked = await manager.send(in_c1("이 서류를 검증해줘"))
        answering = await replicas.b.acquire("c1", "a-task-id-drawn-for-the-answer")
        try:
            with pytest.raises(UnsupportedOperationError) as canceled:
                await manager.cancel(asked.id)
            with pytest.raises(UnsupportedOperationError) as deleted:
                await manager.delete_context("c1")
        finally:
            await replicas.b.release(answering)
        busy = {"contextId": "c1", "taskId": asked.id, "reason": "task is busy"}
        assert (canceled.value.data, deleted.value.data) == (busy, busy)
        assert (await manager.cancel(asked.id)).status.state == "canceled"  # free again
