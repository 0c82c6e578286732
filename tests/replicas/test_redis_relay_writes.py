"""How ``RedisPublisher`` writes the relayed events, on a real Redis reached through a proxy
that can hold its traffic (``redis_proxy.py``): a turn waits until its own events are on Redis,
also when another caller's write took them; a write in flight holds back no other write (each
goes out at once, on one connection, so every stream stays in order); a turn cancelled while
its write is on its way drops nothing; a Redis that fails or answers nothing is logged and
holds no turn for longer than the write timeout.

The relay is driven below the turns here (``_enqueue`` and ``_drain``): two turns that end at
the same moment cannot be lined up as exactly through ``TaskManager``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest

from llamon_agent.a2a.types import TaskStatusUpdateEvent
from llamon_agent.backends.redis_events import RedisPublisher, _Outgoing
from llamon_agent.backends.redis_stream import decode
from llamon_agent.runtime.messages import status
from llamon_agent.stores.memory import InMemoryTaskStore
from tests.backends_redis import REDIS_URL
from tests.replicas.redis_proxy import RedisProxy, redis_client


@asynccontextmanager
async def proxied_publisher(
    prefix: str, *, write_timeout: float = 10.0
) -> AsyncIterator[tuple[RedisPublisher, RedisProxy]]:
    """A publisher (the writer's delay never reached) whose Redis is behind the proxy; the
    proxy lets everything through again on the way out, so that closing never waits."""
    async with RedisProxy() as proxy, redis_client(proxy.url) as client, \
            RedisPublisher(InMemoryTaskStore(), None, client, prefix=prefix, relay_delay=60,
                           write_timeout=write_timeout) as publisher:
        try:
            async with asyncio.timeout(20):
                publisher._enqueue(event("warm", 1))  # connected before a hold
                await publisher._drain("warm")
                yield publisher, proxy
        finally:
            proxy.release()


async def held_write(publisher: RedisPublisher, proxy: RedisProxy, task_id: str,
                     seq: int = 1) -> asyncio.Task[None]:
    """A drain of ``task_id``'s event ``seq``, sent and held at the proxy."""
    proxy.hold()
    publisher._enqueue(event(task_id, seq))
    drain = asyncio.create_task(publisher._drain(task_id))
    await asyncio.sleep(0.1)
    assert proxy.held_bytes > 0 and not drain.done()
    return drain


def event(task_id: str, seq: int, *, final: bool = False) -> _Outgoing:
    update = TaskStatusUpdateEvent(task_id=task_id, context_id="c", status=status("working"),
                                   final=final)
    return _Outgoing(task_id, seq, update, final)


async def seqs(key: str) -> list[int]:
    async with redis_client() as client:
        entries: Any = await client.xrange(key, "-", "+")  # redis-py types every reply loosely
        return [decode(raw_id, fields).seq for raw_id, fields in entries]


async def test_a_drain_returns_once_redis_has_the_events(redis_prefix: str) -> None:
    async with proxied_publisher(redis_prefix) as (publisher, proxy):
        drain = await held_write(publisher, proxy, "t")
        await asyncio.sleep(0.2)
        assert not drain.done()
        assert await seqs(f"{redis_prefix}t") == []
        proxy.release()
        await asyncio.wait_for(drain, 5)
        assert await seqs(f"{redis_prefix}t") == [1]


async def test_a_write_in_flight_holds_back_no_other_write(redis_prefix: str) -> None:
    """A turn's write goes out at once behind one whose reply is due, not after it: both are
    on their way to Redis while the first waits."""
    async with proxied_publisher(redis_prefix) as (publisher, proxy):
        slow = await held_write(publisher, proxy, "slow")
        before = proxy.held_bytes
        publisher._enqueue(event("fast", 1, final=True))
        fast = asyncio.create_task(publisher._drain("fast"))
        await asyncio.sleep(0.1)
        assert proxy.held_bytes > before  # sent without waiting for the slow one's reply
        proxy.release()
        await asyncio.wait_for(asyncio.gather(slow, fast), 5)
        assert await seqs(f"{redis_prefix}slow") == [1]
        assert await seqs(f"{redis_prefix}fast") == [1]


async def test_many_turns_writes_land_in_order_on_one_connection(redis_prefix: str) -> None:
    """Fifty tasks' events, drained by interleaved turns at once: every stream in order, and
    one connection carried them all."""
    async with proxied_publisher(redis_prefix) as (publisher, _):
        async def turn(task_id: str) -> None:
            for seq in range(1, 6):
                publisher._enqueue(event(task_id, seq, final=seq == 5))
                if seq % 2:
                    await publisher._drain(task_id)
                await asyncio.sleep(0)

        await asyncio.gather(*(turn(f"t{n}") for n in range(50)))
        await publisher._drain()
        assert publisher._pipe is not None and publisher._pipe.connections_opened == 1
    for n in range(50):
        assert await seqs(f"{redis_prefix}t{n}") == [1, 2, 3, 4, 5]


async def test_a_drain_waits_for_the_write_that_took_its_events(redis_prefix: str) -> None:
    """A caller whose events another caller's write took (the outbox is empty for it) waits
    for that write; a drain of no task waits for every write in flight."""
    async with proxied_publisher(redis_prefix) as (publisher, proxy):
        publisher._enqueue(event("u", 1))
        taker = await held_write(publisher, proxy, "t")  # its batch carries "u" too
        own = asyncio.create_task(publisher._drain("u"))
        every = asyncio.create_task(publisher._drain())
        await asyncio.sleep(0.2)
        assert not own.done() and not every.done() and not taker.done()
        proxy.release()
        await asyncio.wait_for(asyncio.gather(taker, own, every), 5)
        assert await seqs(f"{redis_prefix}t") == [1]
        assert await seqs(f"{redis_prefix}u") == [1]


async def test_a_cancelled_drain_drops_no_events(redis_prefix: str) -> None:
    """A turn cancelled while its write is on its way: the write still lands, with the other
    task's events it carries, and the other task's turn, waiting for the same write, is not
    cancelled with it."""
    async with proxied_publisher(redis_prefix) as (publisher, proxy):
        first = await held_write(publisher, proxy, "t")
        publisher._enqueue(event("t", 2, final=True))
        publisher._enqueue(event("u", 1, final=True))
        cancelled = asyncio.create_task(publisher._drain("t"))
        other = asyncio.create_task(publisher._drain("u"))  # the same write as "t"'s
        await asyncio.sleep(0.1)
        cancelled.cancel()
        await asyncio.gather(cancelled, return_exceptions=True)
        proxy.release()
        await asyncio.wait_for(asyncio.gather(first, other), 5)
        await asyncio.wait_for(publisher._drain(), 5)
        assert await seqs(f"{redis_prefix}t") == [1, 2]
        assert await seqs(f"{redis_prefix}u") == [1]


async def test_a_lost_connection_is_logged_and_the_next_write_reconnects(
    redis_prefix: str, caplog: pytest.LogCaptureFixture,
) -> None:
    async with proxied_publisher(redis_prefix) as (publisher, proxy):
        lost = await held_write(publisher, proxy, "t")
        proxy.cut()
        proxy.release()
        await asyncio.wait_for(lost, 5)  # returns: Redis failing does not stop a turn
        assert "1 events could not be written to Redis" in caplog.text
        publisher._enqueue(event("t", 2, final=True))
        await asyncio.wait_for(publisher._drain("t"), 5)
        assert await seqs(f"{redis_prefix}t") == [2]  # followers see the gap
        assert publisher._pipe is not None and publisher._pipe.connections_opened == 2


async def test_a_redis_that_answers_nothing_holds_a_turn_no_longer_than_the_write_timeout(
    redis_prefix: str, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR)
    async with proxied_publisher(redis_prefix, write_timeout=0.5) as (publisher, proxy):
        silent = await held_write(publisher, proxy, "t")
        await asyncio.wait_for(silent, 5)
        assert "answered nothing for 0.5 s" in caplog.text
        proxy.release()
        publisher._enqueue(event("t", 2, final=True))
        await asyncio.wait_for(publisher._drain("t"), 5)
        assert (await seqs(f"{redis_prefix}t"))[-1] == 2


def test_the_write_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="write_timeout"):
        RedisPublisher(InMemoryTaskStore(), None, REDIS_URL, write_timeout=0)


async def test_a_write_after_closing_is_logged_not_raised(
    redis_prefix: str, caplog: pytest.LogCaptureFixture,
) -> None:
    """A turn that ends while the server shuts down, after the publisher closed: its events
    are lost as with Redis gone (logged), and its end does not fail."""
    async with proxied_publisher(redis_prefix) as (publisher, _):
        pass
    publisher._enqueue(event("late", 1, final=True))
    await asyncio.wait_for(publisher._drain("late"), 5)
    assert "1 events could not be written to Redis: the Redis pipe is closed" in caplog.text
    assert await seqs(f"{redis_prefix}late") == []
