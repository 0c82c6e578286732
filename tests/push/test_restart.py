"""Deliveries are stored with the tasks: a restart loses none and repeats none a receiver took
(2xx). On a SQLite file, and on PostgreSQL (with Redis events, as replicas run); the ``backend``
fixture's in-process case runs on a SQLite file here, since a restart of memory keeps nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from llamon_agent.push.policy import PushPolicy

from .helpers import (
    Clock,
    answer,
    config,
    push_of,
    push_server,
    receiving,
    start_order,
    sweep,
)

pytestmark = pytest.mark.usefixtures("backend")


@pytest.fixture
def storage(backend: str, tmp_path: Path) -> dict[str, Any]:
    """The same database for every server of the test."""
    return {"db": str(tmp_path / "llamon.sqlite3")} if backend == "memory" else {}


async def test_input_required_and_completed_each_exactly_once_across_a_restart(
    storage: dict[str, Any],
) -> None:
    clock = Clock()
    async with receiving() as receiver:
        async with push_server(clock=clock, **storage) as first:
            task = await start_order(first.client, config(receiver.hook(), token="t"))
            await receiver.wait_for(1)
            await push_of(first).settle()
        async with push_server(clock=clock, **storage) as second:
            await sweep(second)  # the restart's first sweep finds nothing left to send
            done = await answer(second.client, task)
            await receiver.wait_for(2)
            for _ in range(3):
                clock.advance(3600)
                await sweep(second)
            records = await push_of(second).deliveries(task["id"])
    assert receiver.states() == ["input-required", "completed"]
    assert receiver.received[1].body["status"] == done["status"]
    ids = [r.headers["x-a2a-delivery-id"] for r in receiver.received]
    assert len(set(ids)) == 2
    assert [(r.state, r.status, r.attempts) for r in records] == [
        ("input-required", "delivered", 1), ("completed", "delivered", 1),
    ]


async def test_a_delivery_that_failed_before_a_restart_is_retried_after_it(
    storage: dict[str, Any],
) -> None:
    clock = Clock()
    policy = PushPolicy(backoff=30)
    async with receiving([500]) as receiver:
        async with push_server(clock=clock, push_policy=policy, **storage) as first:
            task = await start_order(first.client, config(receiver.hook()))
            await receiver.wait_for(1)
            await push_of(first).settle()
        clock.advance(30)
        async with push_server(clock=clock, push_policy=policy, **storage) as second:
            await sweep(second)
            await receiver.wait_for(2)
            clock.advance(3600)
            await sweep(second)
            (record,) = await push_of(second).deliveries(task["id"])
    assert receiver.states() == ["input-required", "input-required"]
    assert len({r.headers["x-a2a-delivery-id"] for r in receiver.received}) == 1
    assert (record.status, record.attempts) == ("delivered", 2)


async def test_an_attempt_cut_by_a_stop_is_taken_over_once_its_claim_lapses(
    storage: dict[str, Any],
) -> None:
    """A server that stops (or dies) while an attempt is in flight leaves the delivery claimed;
    another server (or this one after a restart) attempts it once the claim's lease lapsed,
    never before: at least once, and one server at a time."""
    clock = Clock()
    policy = PushPolicy(timeout=5)
    async with receiving([None]) as receiver:
        async with push_server(clock=clock, push_policy=policy, **storage) as first:
            task = await start_order(first.client, config(receiver.hook()))
            await receiver.wait_for(1)  # held open by the receiver when the server stops
        async with push_server(clock=clock, push_policy=policy, **storage) as second:
            await sweep(second)
            assert len(receiver.received) == 1  # still claimed by the first
            clock.advance(policy.lease)
            await sweep(second)
            await receiver.wait_for(2)
            await push_of(second).settle()
            (record,) = await push_of(second).deliveries(task["id"])
    assert (record.status, record.attempts) == ("delivered", 1)
