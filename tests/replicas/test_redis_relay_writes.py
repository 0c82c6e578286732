"""How ``RedisPublisher`` writes the relayed events, on a real Redis: a write in flight holds
back only the later writes of its own tasks (their streams stay in order), never another
task's; a turn waits until its own events are on Redis, also when another caller's write
took them; draining with no task waits for every write in flight.

The relay is driven below the turns here (``_enqueue`` and ``_drain``), through a client
whose pipelines for one chosen stream wait at a gate: two turns that end at the same moment
cannot be lined up as exactly through ``TaskManager``."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from llamon_agent.a2a.types import TaskStatusUpdateEvent
from llamon_agent.backends.redis_events import RedisPublisher, _Outgoing
from llamon_agent.backends.redis_stream import decode
from llamon_agent.runtime.messages import status
from llamon_agent.stores.memory import InMemoryTaskStore
from tests.backends_redis import REDIS_URL


class _GatedPipeline:
    """A pipeline whose ``execute`` waits at ``gate`` when it writes to ``held_key``."""

    def __init__(self, pipe: Any, held_key: str, gate: asyncio.Event, entered: asyncio.Event):
        self._pipe = pipe
        self._held_key = held_key
        self._gate = gate
        self._entered = entered
        self._keys: list[str] = []

    async def __aenter__(self) -> _GatedPipeline:
        await self._pipe.__aenter__()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._pipe.__aexit__(*exc)

    def xadd(self, key: str, *args: Any, **kw: Any) -> None:
        self._keys.append(key)
        self._pipe.xadd(key, *args, **kw)

    def __getattr__(self, name: str) -> Any:  # pexpire, and what the follower uses
        return getattr(self._pipe, name)

    async def execute(self) -> Any:
        if self._held_key in self._keys:
            self._entered.set()
            await self._gate.wait()
        return await self._pipe.execute()


class _GatedClient:
    """A redis-py client whose pipelines writing to ``held_key`` wait at ``gate``."""

    def __init__(self, held_key: str) -> None:
        from redis.asyncio import Redis

        self.client = Redis.from_url(REDIS_URL)
        self.held_key = held_key
        self.gate = asyncio.Event()
        self.entered = asyncio.Event()

    def pipeline(self, **kw: Any) -> _GatedPipeline:
        return _GatedPipeline(self.client.pipeline(**kw), self.held_key, self.gate, self.entered)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)


@asynccontextmanager
async def opened(gated: _GatedClient) -> AsyncIterator[None]:
    """The gate opens on the way out, so that closing the publisher never waits at it."""
    try:
        async with asyncio.timeout(20):
            yield
    finally:
        gated.gate.set()


@asynccontextmanager
async def gated_publisher(
    prefix: str, held: str
) -> AsyncIterator[tuple[RedisPublisher, _GatedClient]]:
    """A publisher (the writer's delay never reached) whose writes to stream ``held`` wait at
    the gate; the gate opens, and the client closes, on the way out."""
    gated = _GatedClient(f"{prefix}{held}")
    try:
        async with RedisPublisher(InMemoryTaskStore(), None, gated, prefix=prefix,
                                  relay_delay=60) as publisher, opened(gated):
            yield publisher, gated
    finally:
        await gated.client.aclose()


async def held_write(
    publisher: RedisPublisher, gated: _GatedClient, task_id: str
) -> asyncio.Task[None]:
    """A drain of ``task_id``'s first event, its pipeline waiting at the gate."""
    publisher._enqueue(event(task_id, 1))
    drain = asyncio.create_task(publisher._drain(task_id))
    await asyncio.wait_for(gated.entered.wait(), 5)
    return drain


def event(task_id: str, seq: int, *, final: bool = False) -> _Outgoing:
    update = TaskStatusUpdateEvent(task_id=task_id, context_id="c", status=status("working"),
                                   final=final)
    return _Outgoing(task_id, seq, update, final)


async def seqs(client: Any, key: str) -> list[int]:
    return [decode(raw_id, fields).seq for raw_id, fields in await client.xrange(key, "-", "+")]


async def test_a_write_in_flight_holds_back_no_other_task(redis_prefix: str) -> None:
    async with gated_publisher(redis_prefix, "slow") as (publisher, gated):
        slow = await held_write(publisher, gated, "slow")
        publisher._enqueue(event("fast", 1, final=True))
        await asyncio.wait_for(publisher._drain("fast"), 5)  # not behind "slow"
        assert await seqs(gated.client, f"{redis_prefix}fast") == [1]
        assert not slow.done()
        gated.gate.set()
        await asyncio.wait_for(slow, 5)
        assert await seqs(gated.client, f"{redis_prefix}slow") == [1]


async def test_a_tasks_later_write_waits_for_its_earlier_one(redis_prefix: str) -> None:
    """The stream stays in order: the second write of a task goes after the first is done,
    and a drain of that task returns only once both are on Redis."""
    async with gated_publisher(redis_prefix, "t") as (publisher, gated):
        first = await held_write(publisher, gated, "t")
        gated.held_key = "none"  # the next pipeline is not held
        publisher._enqueue(event("t", 2, final=True))
        second = asyncio.create_task(publisher._drain("t"))
        await asyncio.sleep(0.2)
        assert not second.done()  # behind the write of seq 1
        assert await seqs(gated.client, f"{redis_prefix}t") == []
        gated.gate.set()
        await asyncio.wait_for(asyncio.gather(first, second), 5)
        assert await seqs(gated.client, f"{redis_prefix}t") == [1, 2]


async def test_a_drain_waits_for_the_write_that_took_its_events(redis_prefix: str) -> None:
    """A caller whose events another caller's write took (the outbox is empty for it) waits
    for that write; a drain of no task waits for every write in flight."""
    async with gated_publisher(redis_prefix, "t") as (publisher, gated):
        publisher._enqueue(event("u", 1))
        taker = await held_write(publisher, gated, "t")  # its batch carries "u" too
        own = asyncio.create_task(publisher._drain("u"))
        every = asyncio.create_task(publisher._drain())
        await asyncio.sleep(0.2)
        assert not own.done() and not every.done() and not taker.done()
        gated.gate.set()
        await asyncio.wait_for(asyncio.gather(taker, own, every), 5)
        assert await seqs(gated.client, f"{redis_prefix}t") == [1]
        assert await seqs(gated.client, f"{redis_prefix}u") == [1]


async def test_a_cancelled_drain_drops_no_events(redis_prefix: str) -> None:
    """A turn cancelled while its write waits for an earlier one: the write still goes out,
    with the other task's events it carries."""
    async with gated_publisher(redis_prefix, "t") as (publisher, gated):
        first = await held_write(publisher, gated, "t")
        gated.held_key = "none"
        publisher._enqueue(event("t", 2, final=True))
        publisher._enqueue(event("u", 1, final=True))
        cancelled = asyncio.create_task(publisher._drain("t"))
        await asyncio.sleep(0.1)  # its write waits for the first one
        cancelled.cancel()
        await asyncio.gather(cancelled, return_exceptions=True)
        gated.gate.set()
        await asyncio.wait_for(first, 5)
        await asyncio.wait_for(publisher._drain(), 5)
        assert await seqs(gated.client, f"{redis_prefix}t") == [1, 2]
        assert await seqs(gated.client, f"{redis_prefix}u") == [1]
