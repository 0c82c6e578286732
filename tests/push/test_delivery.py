"""Deliveries to a webhook receiver over real HTTP: what is sent, when, how often, and what a
failing or silent receiver gets, on both backends (in process; PostgreSQL + Redis).

Time is the server's injectable clock: a test moves it past a retry's backoff and runs one
sweep (``sweeper.sweep_once``); nothing sleeps for a backoff."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from llamon_agent.push.policy import PushPolicy
from tests.conftest import assert_valid

from .helpers import (
    QUESTION,
    Clock,
    answer,
    config,
    push_of,
    push_server,
    receiving,
    set_config,
    start_order,
    sweep,
)

pytestmark = pytest.mark.usefixtures("backend")

TOKEN = "tok-123"


def deliveries_of(received: list[Any]) -> list[str]:
    return [r.headers["x-a2a-delivery-id"] for r in received]


async def test_a_2xx_receiver_gets_each_change_a_client_acts_on_exactly_once() -> None:
    clock = Clock()
    async with receiving() as receiver, push_server(clock=clock) as harness:
        push = config(receiver.hook(), token=TOKEN,
                      authentication={"schemes": ["Bearer"], "credentials": "webhook-key"})
        task = await start_order(harness.client, push)
        (asked,) = await receiver.wait_for(1)
        done = await answer(harness.client, task)
        _, ended = await receiver.wait_for(2)
        for _ in range(3):  # later sweeps find nothing more to send
            clock.advance(3600)
            await sweep(harness)
        assert len(receiver.received) == 2
        records = await push_of(harness).deliveries(task["id"])

    for received in (asked, ended):
        assert received.path == "/hook"
        assert received.headers["content-type"] == "application/json"
        assert received.headers["x-a2a-notification-token"] == TOKEN
        assert received.headers["authorization"] == "Bearer webhook-key"
        assert_valid("Task", received.body)
    assert asked.body["id"] == ended.body["id"] == task["id"]
    # the Task as tasks/get shows it at that change: the question, then the result
    assert asked.body["status"]["state"] == "input-required"
    assert asked.body["status"]["message"]["parts"][0] == {"kind": "text", "text": QUESTION}
    assert asked.body["status"] == task["status"]
    assert ended.body["status"] == done["status"] and ended.body["artifacts"] == done["artifacts"]
    ids = deliveries_of([asked, ended])
    assert len(set(ids)) == 2 and all(str(uuid.UUID(i)) == i for i in ids)
    assert [(r.state, r.status, r.attempts, r.last_error) for r in records] == [
        ("input-required", "delivered", 1, None), ("completed", "delivered", 1, None),
    ]


async def test_every_config_of_a_task_gets_its_own_delivery() -> None:
    async with receiving() as one, receiving() as two, push_server() as harness:
        task = await start_order(harness.client)
        await set_config(harness.client, task["id"], config(one.hook(), id="one"))
        await set_config(harness.client, task["id"], config(two.hook("/other"), id="two"))
        await answer(harness.client, task)
        (first,) = await one.wait_for(1)
        (second,) = await two.wait_for(1)
    # set after the question: only the change that followed is told
    assert first.body["status"]["state"] == second.body["status"]["state"] == "completed"
    assert "x-a2a-notification-token" not in first.headers
    assert second.path == "/other"
    assert first.headers["x-a2a-delivery-id"] != second.headers["x-a2a-delivery-id"]


async def test_a_cancel_is_told() -> None:
    async with receiving() as receiver, push_server() as harness:
        task = await start_order(harness.client, config(receiver.hook()))
        await harness.client.result("tasks/cancel", {"id": task["id"]})
        await receiver.wait_for(2)
    assert receiver.states() == ["input-required", "canceled"]


async def test_the_history_sent_is_cut_to_the_last_messages() -> None:
    policy = PushPolicy(history_length=1)
    async with receiving() as receiver, push_server(push_policy=policy) as harness:
        task = await start_order(harness.client, config(receiver.hook()))
        await answer(harness.client, task)
        await receiver.wait_for(2)
        full = await harness.client.result("tasks/get", {"id": task["id"]})
    assert len(full["history"]) > 1
    assert [b["history"] for b in receiver.bodies()] == [
        task["history"][-1:], full["history"][-1:],
    ]


async def test_a_failing_receiver_is_retried_with_backoff_until_it_answers_2xx() -> None:
    clock = Clock()
    policy = PushPolicy(backoff=10, max_backoff=15, max_attempts=5)
    async with receiving([500, 503, 404]) as receiver, \
            push_server(clock=clock, push_policy=policy) as harness:
        task = await start_order(harness.client, config(receiver.hook()))
        await receiver.wait_for(1)  # the first attempt, at once: 500
        await push_of(harness).settle()
        await sweep(harness)  # not yet due: nothing sent
        clock.advance(9.9)
        await sweep(harness)
        assert len(receiver.received) == 1
        clock.advance(0.1)  # 10 s after the first attempt
        await sweep(harness)
        assert len(receiver.received) == 2  # 503
        clock.advance(14)  # the delay doubles, capped at 15 s
        await sweep(harness)
        assert len(receiver.received) == 2
        (record,) = await push_of(harness).deliveries(task["id"])
        assert (record.status, record.attempts, record.last_error) == ("pending", 2, "HTTP 503")
        clock.advance(1)
        await sweep(harness)  # 404
        clock.advance(15)
        await sweep(harness)  # 200
        clock.advance(3600)
        await sweep(harness)
        (record,) = await push_of(harness).deliveries(task["id"])
    assert len(receiver.received) == 4
    assert len(set(deliveries_of(receiver.received))) == 1  # one delivery, retried
    assert (record.status, record.attempts, record.last_error) == ("delivered", 4, None)


async def test_a_delivery_is_given_up_after_the_last_attempt_and_recorded() -> None:
    clock = Clock()
    policy = PushPolicy(backoff=1, max_attempts=3)
    async with receiving([500] * 10) as receiver, \
            push_server(clock=clock, push_policy=policy) as harness:
        task = await start_order(harness.client, config(receiver.hook()))
        await receiver.wait_for(1)
        for _ in range(6):
            await push_of(harness).settle()
            clock.advance(60)
            await sweep(harness)
        (record,) = await push_of(harness).deliveries(task["id"])
    assert len(receiver.received) == 3
    assert (record.status, record.attempts, record.last_error) == ("failed", 3, "HTTP 500")


async def test_a_receiver_that_never_answers_neither_blocks_nor_slows_the_run() -> None:
    clock = Clock()
    policy = PushPolicy(timeout=0.5, max_attempts=2, backoff=1)
    async with receiving(hang=True) as receiver, \
            push_server(clock=clock, push_policy=policy) as harness:
        task = await start_order(harness.client, config(receiver.hook()))
        await receiver.wait_for(1)  # the first delivery is held open by the receiver...
        # ...while the task runs on to its end and answers at once
        done = await answer(harness.client, task)
        assert done["status"]["state"] == "completed"
        await receiver.wait_for(2)  # the completed one goes out beside it
        await push_of(harness).settle()  # each attempt ends at its timeout
        records = await push_of(harness).deliveries(task["id"])
        assert [(r.status, r.attempts) for r in records] == [("pending", 1)] * 2
        assert {r.last_error for r in records} == {"timed out after 0.5 s"}
        clock.advance(1)
        await sweep(harness)
        records = await push_of(harness).deliveries(task["id"])
    assert len(receiver.received) == 4
    assert [(r.status, r.attempts) for r in records] == [("failed", 2)] * 2


async def test_a_redirect_is_not_followed() -> None:
    clock = Clock()
    policy = PushPolicy(max_attempts=1)
    async with receiving([302]) as receiver, \
            push_server(clock=clock, push_policy=policy) as harness:
        task = await start_order(harness.client, config(receiver.hook()))
        await receiver.wait_for(1)
        await push_of(harness).settle()
        (record,) = await push_of(harness).deliveries(task["id"])
    assert [r.path for r in receiver.received] == ["/hook"]  # never /elsewhere
    assert (record.status, record.last_error) == ("failed", "HTTP 302 (redirects are not followed)")


async def test_a_change_whose_delivery_was_not_enqueued_is_caught_up_by_a_sweep(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reconciliation (docs/operations.md, "Push notifications"): a server that stored the
    task's state but did not enqueue its delivery (it crashed in between, or the enqueue
    failed) loses nothing, the next sweep compares the task with what was enqueued."""
    async with receiving() as receiver, push_server() as harness:
        push = push_of(harness)
        enqueue = push._enqueue

        async def lost(record: Any) -> list[Any]:
            raise RuntimeError("the process died here")

        monkeypatch.setattr(push, "_enqueue", lost)
        task = await start_order(harness.client, config(receiver.hook()))
        await push.settle()
        assert receiver.received == []
        monkeypatch.setattr(push, "_enqueue", enqueue)
        await sweep(harness)
        await receiver.wait_for(1)
        await sweep(harness)  # caught up once: not again
    assert receiver.states() == ["input-required"]
    assert receiver.received[0].body["id"] == task["id"]


async def test_a_config_deleted_before_its_retry_is_not_delivered_to() -> None:
    clock = Clock()
    async with receiving([500]) as receiver, push_server(clock=clock) as harness:
        task = await start_order(harness.client, config(receiver.hook(), id="gone"))
        await receiver.wait_for(1)
        await push_of(harness).settle()
        await harness.client.result("tasks/pushNotificationConfig/delete",
                                    {"id": task["id"], "pushNotificationConfigId": "gone"})
        clock.advance(3600)
        await sweep(harness)
        assert await push_of(harness).deliveries(task["id"]) == []
    assert len(receiver.received) == 1
