"""Replicas in one process: two ``TaskManager``s on one store, one checkpointer and one claims
object, as two servers share PostgreSQL. Recovery then takes over only runs whose claim is free
(``LeaseRecovery``), and a cancel reaches the replica that runs the task (``CancelRelay``).
The real-process versions of these scenarios are in tests/replicas/."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal, TypedDict

import pytest
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, StateGraph

from llamon_agent import Agent
from llamon_agent.a2a.types import Message, Task, TextPart
from llamon_agent.core.ports import Decision
from llamon_agent.errors import UnsupportedOperationError
from llamon_agent.human_review import request_review
from llamon_agent.human_review.port import InMemoryReviewPort
from llamon_agent.runtime import messages
from llamon_agent.runtime.cancel_relay import CancelHandler
from llamon_agent.runtime.claims import LocalClaims
from llamon_agent.runtime.tasks import TaskManager
from llamon_agent.stores.base import StoredTask
from llamon_agent.stores.storage import Storage, open_storage
from tests.replicas.helpers import gated_agent, params

from .helpers import DOC_QUESTION, doc_agent

SWEEP = 0.02  # seconds between takeover sweeps: fast, so the tests need not wait


class PairedRelay:
    """A cancel relay joining the replicas of one test, as Redis joins real ones."""

    def __init__(self, peers: list[PairedRelay]) -> None:
        self._peers = peers
        self._handlers: list[CancelHandler] = []
        peers.append(self)
        self.requests: list[str] = []

    @property
    def reaches_others(self) -> bool:
        return True

    async def request(self, task_id: str) -> None:
        self.requests.append(task_id)
        for peer in self._peers:
            if peer is not self:
                for handler in list(peer._handlers):
                    await handler(task_id)

    def listen(self, handler: CancelHandler) -> Callable[[], None]:
        self._handlers.append(handler)
        return lambda: self._handlers.remove(handler)


@asynccontextmanager
async def replica(
    storage: Storage, claims: LocalClaims, agent: Agent, **kw: Any
) -> AsyncIterator[TaskManager]:
    async with TaskManager([agent], storage, claims=claims, takeover_every=SWEEP,
                           shutdown_grace=0.1, **kw) as manager:
        yield manager


async def a_run_in_flight(storage: Storage, manager: TaskManager) -> str:
    """A task whose graph waits for an answer and whose stored state says a turn runs: what a
    replica killed in the middle of an answer turn leaves behind."""
    task = await manager.send(params("verify my document"))
    assert task.status.state == "input-required"
    record = await storage.tasks.get(task.id)
    assert record is not None
    record.task = record.task.model_copy(
        update={"status": record.task.status.model_copy(update={"state": "working"})})
    await storage.tasks.save(record)
    return task.id


async def test_a_live_owners_run_is_never_taken_over() -> None:
    claims = LocalClaims()
    async with open_storage(":memory:") as storage, replica(storage, claims, doc_agent()) as a:
        task_id = await a_run_in_flight(storage, a)
        record = await storage.tasks.get(task_id)
        assert record is not None
        owner = await claims.acquire(record.context_key)  # replica A's run holds it, alive
        async with replica(storage, claims, doc_agent()):
            await asyncio.sleep(SWEEP * 10)  # B starts and sweeps many times
            now = await storage.tasks.get(task_id)
            assert now is not None
            assert (now.state, now.event_seq) == ("working", record.event_seq)
            await claims.release(owner)  # A died: its claim lapses
            await until_stored(storage, task_id, "input-required")
        after = await storage.tasks.get(task_id)
        assert after is not None and after.state == "input-required"
        assert after.task.status.message is not None
        assert after.task.status.message.parts[0].text == DOC_QUESTION  # type: ignore[union-attr]
        assert not await claims.held(record.context_key)  # the takeover gave the claim back


async def until_stored(storage: Storage, task_id: str, state: str, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while True:
            record = await storage.tasks.get(task_id)
            if record is not None and record.state == state:
                return
            await asyncio.sleep(0.01)


async def test_a_cancel_on_b_stops_the_run_on_a() -> None:
    claims, peers = LocalClaims(), list[PairedRelay]()
    gate = asyncio.Event()
    async with (
        open_storage(":memory:") as storage,
        replica(storage, claims, gated_agent(gate), cancel_relay=PairedRelay(peers)) as a,
        replica(storage, claims, gated_agent(gate), cancel_relay=PairedRelay(peers)) as b,
    ):
        running = await a.send(params("go", configuration={"blocking": False}))
        await until_stored(storage, running.id, "submitted")  # stored; the turn runs on A
        canceled = await b.cancel(running.id)
        assert canceled.status.state == "canceled"
        assert peers[1].requests == [running.id]
        stored = await storage.tasks.get(running.id)
        assert stored is not None and stored.state == "canceled"
        assert (await a.get_task(running.id)).status.state == "canceled"


async def test_a_cancel_of_a_busy_context_without_replicas_is_refused_at_once() -> None:
    """One server (no relay that reaches others): the busy refusal as before, no waiting."""
    claims = LocalClaims()
    async with open_storage(":memory:") as storage, replica(storage, claims, doc_agent()) as a:
        task_id = await a_run_in_flight(storage, a)
        record = await storage.tasks.get(task_id)
        assert record is not None
        await claims.acquire(record.context_key)
        with pytest.raises(UnsupportedOperationError) as refused:
            await a.cancel(task_id)
        # the claim names no task: the refusal names the context's unfinished task
        assert refused.value.data == {
            "contextId": record.context_id, "taskId": task_id, "reason": "task is busy"}


async def test_a_cancel_right_after_a_non_blocking_send_ends_the_task() -> None:
    """The turn's runner is cancelled before its first step: it used to never run its
    ``finally``, so the cancel waited for ever."""
    gate = asyncio.Event()
    async with open_storage(":memory:") as storage, TaskManager([gated_agent(gate)], storage) as one:
        running = await one.send(params("go", configuration={"blocking": False}))
        async with asyncio.timeout(5):
            canceled = await one.cancel(running.id)
        assert canceled.status.state == "canceled"
        stored = await storage.tasks.get(running.id)
        assert stored is not None and stored.state == "canceled"


def orphaned_first_turn(task_id: str, agent_id: str) -> StoredTask:
    """A new task stored when its first turn began (a stream or a non-blocking send), whose
    replica died before the turn wrote any checkpoint."""
    message = Message(message_id=f"m-{task_id}", role="user", task_id=task_id,
                      context_id=f"ctx-{task_id}",
                      parts=[TextPart(kind="text", text="go")])  # type: ignore[list-item]
    task = Task(id=task_id, context_id=f"ctx-{task_id}", history=[message],
                status=messages.status("submitted"))
    return StoredTask(task=task, agent_id=agent_id, event_seq=1)


@pytest.mark.parametrize("on_takeover", ["continue", "fail"])
async def test_a_first_turn_without_a_checkpoint_is_run_again_unless_the_agent_opts_out(
    on_takeover: Literal["continue", "fail"],
) -> None:
    gate = asyncio.Event()
    gate.set()
    base = gated_agent(gate)
    agent = Agent(base.id, base.graph, on_takeover=on_takeover)
    async with open_storage(":memory:") as storage:
        await storage.tasks.save(orphaned_first_turn("t1", agent.id))
        async with replica(storage, LocalClaims(), agent):
            await until_stored(storage, "t1", "completed" if on_takeover == "continue"
                               else "failed")
        record = await storage.tasks.get("t1")
    assert record is not None
    if on_takeover == "continue":  # the graph ran from the task's message to its end
        assert record.task.artifacts is not None
        assert [p.data for p in record.task.artifacts[0].parts] == [{"done": True}]  # type: ignore[union-attr]
    else:
        assert record.task.status.message is not None
        text = record.task.status.message.parts[0].text  # type: ignore[union-attr]
        assert text == ("The server could not resume this task after a restart: its run was "
                        "interrupted and this agent does not continue interrupted runs.")


class _Drafted(TypedDict, total=False):
    result: str


def _reviewed_agent() -> Agent:
    """One node that asks a reviewer and ends with the decision's type."""

    async def ask_reviewer(state: _Drafted, config: RunnableConfig) -> dict[str, Any]:
        decision = await request_review({"text": "draft"}, config)
        return {"result": decision.type}

    graph = StateGraph(_Drafted)
    graph.add_node("ask_reviewer", ask_reviewer)
    graph.add_edge(START, "ask_reviewer")
    graph.add_edge("ask_reviewer", END)
    return Agent("reviewed", graph)


async def test_a_task_parked_for_its_reviewer_is_left_as_stored_by_other_replicas() -> None:
    """A parked task holds no claim (no run waits for the reviewer), so every sweep of every
    replica finds it free. Before: each replica re-ended it once, storing and publishing a new
    'A reviewer is checking' status (new message id, new timestamp, event id + 1), so two reads
    of the parked task on two servers differed (CI, tests/process/test_replicas.py). Now a
    sweep only looks for a decision taken while no replica listened; the decision still ends it.
    """
    claims, port = LocalClaims(), InMemoryReviewPort()
    agent = _reviewed_agent()
    async with open_storage(":memory:") as storage, \
            replica(storage, claims, agent, reviews=port, review_wait=0.05) as a:
        task = await a.send(params("draft it"))
        assert task.status.state == "working"
        parked = await storage.tasks.get(task.id)
        assert parked is not None and parked.task.status.message is not None
        async with replica(storage, claims, agent, reviews=port):
            await asyncio.sleep(SWEEP * 10)  # B starts and sweeps many times
            now = await storage.tasks.get(task.id)
            assert now is not None
            assert now.event_seq == parked.event_seq
            assert now.task.to_json() == parked.task.to_json()
            [review] = await port.pending(100)
            await port.decide(review.id, Decision("approve"))
            await until_stored(storage, task.id, "completed")
        done = await storage.tasks.get(task.id)
        assert done is not None and done.task.artifacts is not None
        assert [p.data for p in done.task.artifacts[0].parts] == [{"value": "approve"}]  # type: ignore[union-attr]
