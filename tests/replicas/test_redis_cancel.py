"""``RedisCancelRelay`` on a real Redis: a request on one replica reaches every other replica's
handler exactly once (never its own), prefixes keep deployments apart, a failing handler does
not stop later deliveries, unreadable requests are ignored, the reader subscribes again after
losing its connection, and closing leaves no task running and no subscriber on Redis.

Pub/sub keeps order per channel, so "nothing else came" is shown without sleeping: a sentinel
request sent afterwards arrives after anything sent before it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import pytest

from llamon_agent.backends.redis_cancel import RedisCancelRelay
from llamon_agent.runtime.cancel_relay import CancelRelay
from tests.backends_redis import REDIS_URL

from .helpers import eventually


class Received:
    """A handler that records the task ids it was called with."""

    def __init__(self, fail_first: bool = False) -> None:
        self.ids: list[str] = []
        self._fail_first = fail_first

    async def __call__(self, task_id: str) -> None:
        self.ids.append(task_id)
        if self._fail_first and len(self.ids) == 1:
            raise RuntimeError("boom")


@asynccontextmanager
async def relays(*prefixes: str, **kw: Any) -> AsyncIterator[list[RedisCancelRelay]]:
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(RedisCancelRelay(REDIS_URL, prefix=p, **kw))
               for p in prefixes]


async def client() -> Any:
    from redis.asyncio import Redis

    return Redis.from_url(REDIS_URL)


async def subscribers(channel: str) -> int:
    redis = await client()
    try:
        [(_, count)] = await redis.pubsub_numsub(channel)
        return int(count)
    finally:
        await redis.aclose()


async def test_a_request_reaches_the_other_replica_once_and_not_its_own(
    redis_prefix: str,
) -> None:
    async with relays(redis_prefix, redis_prefix) as (a, b):
        on_a, on_b = Received(), Received()
        a.listen(on_a)
        b.listen(on_b)
        assert a.reaches_others is True
        await a.request("task-1")
        await a.request("sentinel-a")
        await b.request("sentinel-b")
        await eventually(lambda: "sentinel-a" in on_b.ids and "sentinel-b" in on_a.ids)
    assert on_b.ids == ["task-1", "sentinel-a"]
    assert on_a.ids == ["sentinel-b"]
    assert a.channel == f"{redis_prefix}cancel"


async def test_prefixes_do_not_cross(redis_prefix: str) -> None:
    one, other = f"{redis_prefix}one:", f"{redis_prefix}other:"
    async with relays(one, one, other, other) as (asker, witness, elsewhere, sentinel):
        on_witness, on_elsewhere = Received(), Received()
        witness.listen(on_witness)
        elsewhere.listen(on_elsewhere)
        await asker.request("task-1")
        await eventually(lambda: on_witness.ids == ["task-1"])
        await sentinel.request("sentinel")  # published after task-1 was delivered on `one`
        await eventually(lambda: on_elsewhere.ids != [])
    assert on_elsewhere.ids == ["sentinel"]


async def test_a_failing_handler_does_not_stop_later_deliveries(
    redis_prefix: str, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR, logger="llamon_agent.backends.redis_cancel")
    async with relays(redis_prefix, redis_prefix) as (a, b):
        on_b = Received(fail_first=True)
        b.listen(on_b)
        await a.request("task-1")
        await a.request("task-2")
        await eventually(lambda: len(on_b.ids) == 2)
    assert on_b.ids == ["task-1", "task-2"]
    [failure] = [r for r in caplog.records if r.exc_info]
    assert failure.getMessage() == (
        "cancelling task task-1 on request of another replica failed")
    assert str(failure.exc_info[1]) == "boom"  # type: ignore[index]


async def test_stopping_to_listen_and_unreadable_requests(redis_prefix: str) -> None:
    async with relays(redis_prefix, redis_prefix) as (a, b):
        on_b, stopped = Received(), Received()
        b.listen(on_b)
        b.listen(stopped)()  # registered and stopped at once
        sender = b"0" * 32
        redis = await client()
        try:
            for data in (
                sender + b" " + b"\xff\xfe",          # not UTF-8
                sender + b" " + b"x" * 257,           # over 256 characters
                sender + b" ",                         # empty
                b"not-a-sender " + b"task",            # no sender id
                sender + b" " + "é".encode() * 256,   # 256 characters, 512 bytes: accepted
            ):
                await redis.publish(b.channel, data)
        finally:
            await redis.aclose()
        await a.request("x" * 257)  # never sent
        await a.request("sentinel")
        await eventually(lambda: "sentinel" in on_b.ids)
    assert on_b.ids == ["é" * 256, "sentinel"]
    assert stopped.ids == []


async def test_the_reader_subscribes_again_after_losing_its_connection(
    redis_prefix: str,
) -> None:
    from redis.asyncio import Redis

    name = f"{redis_prefix.replace(':', '_')}b"
    b_client = Redis.from_url(REDIS_URL, client_name=name)
    try:
        async with relays(redis_prefix) as (a,), \
                RedisCancelRelay(b_client, prefix=redis_prefix) as b:
            on_b = Received()
            b.listen(on_b)
            assert await subscribers(b.channel) == 2
            admin = await client()
            try:
                ids = [c["id"] for c in await admin.client_list()
                       if c.get("name") == name and int(c.get("sub", 0)) > 0]
                assert len(ids) == 1
                await admin.client_kill_filter(_id=ids[0])
            finally:
                await admin.aclose()

            # not the subscriber count: redis-py reconnects the lost connection once by itself
            # before it reports the error, and the relay then replaces it
            await eventually(lambda: b.subscriptions == 2, timeout=10)
            assert await subscribers(b.channel) == 2
            await a.request("task-1")
            await eventually(lambda: on_b.ids != [])
        assert on_b.ids == ["task-1"]
        assert a.subscriptions == 1
    finally:
        await b_client.aclose()


async def test_closing_leaves_no_task_and_no_subscriber(redis_prefix: str) -> None:
    stuck = asyncio.Event()
    started = asyncio.Event()

    async def never_ends(task_id: str) -> None:
        started.set()
        await stuck.wait()

    relay: CancelRelay
    async with relays(redis_prefix, redis_prefix) as (a, b):
        relay = b
        b.listen(never_ends)
        assert await subscribers(b.channel) == 2
        await a.request("task-1")
        await asyncio.wait_for(started.wait(), 5)  # a handler call in flight
    names = {t.get_name() for t in asyncio.all_tasks()}
    assert not {n for n in names if n.startswith("llamon-redis")}, names
    assert await subscribers(f"{redis_prefix}cancel") == 0
    assert relay.reaches_others
