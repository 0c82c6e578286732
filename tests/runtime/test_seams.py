"""The runtime's seams (claims, event publisher, recovery) take other implementations, and the
parts keep their promises: every claim is released, a state is stored before it is published,
routing starts nothing. The backend issue plugs replicas' versions in behind these calls."""

from __future__ import annotations

from typing import Any

import pytest

from llamon_agent.a2a.types import MessageSendParams, Task
from llamon_agent.errors import StaleAnswerError
from llamon_agent.runtime.claims import Claim, LocalClaims
from llamon_agent.runtime.events import EventLog
from llamon_agent.runtime.publisher import LocalPublisher
from llamon_agent.runtime.recovery import Recovered
from llamon_agent.runtime.requests import checked_request
from llamon_agent.runtime.tasks import TaskManager
from llamon_agent.stores.base import StoredTask, UnreadableRow
from llamon_agent.stores.storage import Storage, open_storage
from tests.conftest import send_params

from .helpers import doc_agent


def params(text: str, **kw: Any) -> MessageSendParams:
    return MessageSendParams.model_validate(send_params(text, **kw))


class CountingClaims(LocalClaims):
    def __init__(self) -> None:
        super().__init__()
        self.acquired: list[Claim] = []
        self.released: list[Claim] = []

    async def acquire(self, context_id: str, task_id: str | None = None) -> Claim:
        claim = await super().acquire(context_id, task_id)
        self.acquired.append(claim)
        return claim

    async def release(self, claim: Claim) -> None:
        self.released.append(claim)
        await super().release(claim)


class OrderedPublisher(LocalPublisher):
    """Records every store write and every published event, in order."""

    def __init__(self, storage: Storage) -> None:
        super().__init__(storage.tasks, None)
        self.trail: list[tuple[str, int, str]] = []

    async def save(self, record: StoredTask) -> None:
        await super().save(record)
        self.trail.append(("saved", record.event_seq, record.state))

    def open(self, task_id: str, last_seq: int) -> EventLog:
        log = super().open(task_id, last_seq)
        if not getattr(log, "_recorded", False):
            publish = log.publish

            def recorded(seq: int, payload: Any, *, final: bool = False) -> None:
                state = payload.status.state if hasattr(payload, "status") else "?"
                self.trail.append(("published", seq, state))
                publish(seq, payload, final=final)

            log.publish = recorded  # type: ignore[method-assign]
            log._recorded = True  # type: ignore[attr-defined]
        return log


async def test_every_claim_is_released_whatever_the_message_did() -> None:
    claims = CountingClaims()
    async with (
        open_storage(":memory:") as storage,
        TaskManager([doc_agent()], storage, claims=claims) as manager,
    ):
            asked = await manager.send(params("이 서류를 검증해줘", context_id="c1"))
            assert asked.status.state == "input-required"
            stale = params("여권", context_id="c1")
            stale.message.metadata = {"interruptId": "0" * 32}
            with pytest.raises(StaleAnswerError):  # refused under the claim
                await manager.send(stale)
            await manager.cancel(asked.id)
            events = await manager.stream(params("이 서류를 검증해줘", context_id="c2"))
            async for _ in events:
                pass
            for context in ("c1", "c2"):
                assert not await claims.held(context)
    assert len(claims.acquired) == 4  # the send, the refused answer, the cancel, the stream
    assert sorted(map(id, claims.released)) == sorted(map(id, claims.acquired))


async def test_a_state_is_stored_before_any_client_sees_it() -> None:
    async with open_storage(":memory:") as storage:
        publisher = OrderedPublisher(storage)
        async with TaskManager([doc_agent()], storage, publisher=publisher) as manager:
            events = await manager.stream(params("이 서류를 검증해줘", context_id="c1"))
            async for _ in events:
                pass
    trail = publisher.trail
    # the snapshot a stream shows first, then the question that ends the turn
    assert [step for step in trail if step[0] == "saved"] == [
        ("saved", 1, "submitted"), ("saved", 3, "input-required")
    ]
    for kind, seq, state in trail:
        if kind == "published" and state in {"submitted", "input-required"}:
            assert trail.index(("saved", seq, state)) < trail.index((kind, seq, state))


async def test_routing_returns_a_plan_and_starts_nothing() -> None:
    async with (
        open_storage(":memory:") as storage,
        TaskManager([doc_agent()], storage) as manager,
    ):
            request = checked_request(params("이 서류를 검증해줘"), ["document-review"])
            plan = await manager._router.plan(request, "c1")
            assert plan.runs and plan.record.state == "submitted"
            assert await storage.tasks.latest_in_context("c1") is None  # nothing stored
            assert manager._live.get(plan.record.id) is None  # nothing running
            assert not await manager._claims.held("c1")  # nothing claimed


class ScriptedRecovery:
    """A recovery that owns nothing: what a replica's lease-based version looks like."""

    def __init__(self, fails: bool = False) -> None:
        self.calls = 0
        self.fails = fails
        self.failed: list[str] = []

    async def recover(self) -> Recovered:
        self.calls += 1
        if self.fails:
            raise RuntimeError("the lease table is unreachable")
        return Recovered()

    async def fail(self, found: StoredTask | UnreadableRow, why: str) -> None:
        self.failed.append(found.id)


async def test_recovery_is_a_seam() -> None:
    recovery = ScriptedRecovery()
    async with (
        open_storage(":memory:") as storage,
        TaskManager([doc_agent()], storage, recovery=recovery) as manager,
    ):
            task = await manager.send(params("이 서류를 검증해줘"))
            assert isinstance(task, Task)
    assert recovery.calls == 1

    failing = ScriptedRecovery(fails=True)
    async with open_storage(":memory:") as storage:
        with pytest.raises(RuntimeError, match="lease table"):
            async with TaskManager([doc_agent()], storage, recovery=failing):
                pytest.fail("the manager started")
