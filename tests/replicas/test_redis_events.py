"""``RedisPublisher`` on a real Redis: a subscriber on replica B follows a turn that runs on
replica A gap-free (also from a second process, and without the task in B's own store),
``Last-Event-ID`` replays exactly what is missing, the final event ends the stream, a finished
turn is read from the store (else replayed from its stream), a slow subscriber is evicted, a
follower whose owner died (killed, or ended without relaying its end) or whose stream expired
ends instead of waiting forever, and nothing is left running or undeleted after close. The
relay: a stored event and a turn's end are on Redis before the turn goes on, the others after
the writer's delay or with the end, and a full backlog makes the turn wait."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import textwrap
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from llamon_agent import Agent
from llamon_agent.a2a.types import Task, TaskStatusUpdateEvent
from llamon_agent.backends.redis_events import RedisPublisher
from llamon_agent.backends.redis_stream import CLOSE, decode
from llamon_agent.errors import TaskNotFoundError
from llamon_agent.runtime.events import Event
from llamon_agent.runtime.messages import status
from llamon_agent.runtime.tasks import TaskManager
from llamon_agent.stores.memory import InMemoryTaskStore
from llamon_agent.stores.storage import open_storage
from tests.backends_redis import REDIS_URL, keys_under
from tests.runtime.helpers import DOC_QUESTION, doc_agent

from .helpers import collect, eventually, gated_agent, params, wire


@asynccontextmanager
async def replicas(
    prefix: str, agent: Agent, **kw: Any
) -> AsyncIterator[tuple[TaskManager, RedisPublisher, RedisPublisher]]:
    """Replica A runs the turns; replica B only publishes and follows. They share the task
    store, as two replicas share their database."""
    async with open_storage(":memory:") as storage:
        a = RedisPublisher(storage.tasks, None, REDIS_URL, prefix=prefix, **kw)
        b = RedisPublisher(storage.tasks, None, REDIS_URL, prefix=prefix, **kw)
        async with a, b, TaskManager([agent], storage, publisher=a) as manager:
            yield manager, a, b


def stranger(prefix: str, **kw: Any) -> RedisPublisher:
    """A replica whose own store does not know the task (a store of its own)."""
    return RedisPublisher(InMemoryTaskStore(), None, REDIS_URL, prefix=prefix, **kw)


async def delete(key: str) -> None:
    """What expiry does to a task's stream."""
    from redis.asyncio import Redis

    client = Redis.from_url(REDIS_URL)
    try:
        assert await client.delete(key) == 1
    finally:
        await client.aclose()


def final_state(events: list[Event]) -> str:
    last = events[-1][1]
    assert isinstance(last, TaskStatusUpdateEvent) and last.final, last
    return last.status.state


async def test_a_subscriber_on_b_follows_a_turn_on_a_gap_free(redis_prefix: str) -> None:
    gate = asyncio.Event()
    async with replicas(redis_prefix, gated_agent(gate)) as (manager, _a, b):
        local: list[Event] = []
        running = asyncio.create_task(collect(await manager.stream(params("go")), local))
        await eventually(lambda: len(local) >= 5)  # snapshot, working, 3 progress; gate shut
        task_id = local[0][1].id  # type: ignore[attr-defined]
        remote: list[Event] = []
        following = asyncio.create_task(collect(await b.resubscribe(task_id, None), remote))
        replayed: list[Event] = []
        after_3 = asyncio.create_task(collect(await b.resubscribe(task_id, 3), replayed))
        await eventually(lambda: len(remote) >= 5 and len(replayed) >= 2)
        assert not following.done()  # waiting for the turn's next events, live
        gate.set()
        async with asyncio.timeout(10):
            await asyncio.gather(running, following, after_3)

    assert [seq for seq, _ in local] == list(range(1, 11))
    assert final_state(local) == "completed"
    # the turn's snapshot (id 0, as LocalPublisher shows it), then every event after it
    assert remote[0][0] == 0 and isinstance(remote[0][1], Task)
    assert remote[0][1].to_json() == local[0][1].to_json()
    assert wire(remote[1:]) == wire(local[1:])
    assert wire(replayed) == wire(local[3:])  # Last-Event-ID 3: exactly 4..10
    assert b.following == 0


async def test_last_event_id_replays_exactly_the_missing_events(redis_prefix: str) -> None:
    gate = asyncio.Event()
    gate.set()
    async with replicas(redis_prefix, gated_agent(gate)) as (manager, _a, b):
        local = await collect(await manager.stream(params("go")), [])
        task_id = local[0][1].id  # type: ignore[attr-defined]
        for last in (0, 1, 4, 8, 9):
            replayed = await collect(await b.resubscribe(task_id, last), [])
            assert wire(replayed) == wire([e for e in local if e[0] > last]), last
        # nothing missing: the task as stored, then its final status (LocalPublisher's answer)
        caught_up = await collect(await b.resubscribe(task_id, 10), [])
        stored = await manager.get_task(task_id)
    assert [seq for seq, _ in caught_up] == [0, 10]
    assert caught_up[0][1].to_json() == stored.to_json()
    assert final_state(caught_up) == "completed"


async def test_the_final_event_ends_a_remote_stream(redis_prefix: str) -> None:
    """A turn ending in a question is final: the follower on B ends with it, and a later
    resubscribe on B reads the waiting task from the store."""
    async with replicas(redis_prefix, doc_agent()) as (manager, _a, b):
        local = await collect(await manager.stream(params("이 서류를 검증해줘")), [])
        task_id = local[0][1].id  # type: ignore[attr-defined]
        replayed = await collect(await b.resubscribe(task_id, 1), [])
        later = await collect(await b.resubscribe(task_id, None), [])
    assert final_state(local) == "input-required"
    assert wire(replayed) == wire(local[1:])
    assert [seq for seq, _ in later] == [0, local[-1][0]]
    assert final_state(later) == "input-required"
    question = later[-1][1].status.message.parts[0]  # type: ignore[attr-defined]
    assert getattr(question, "text", None) == DOC_QUESTION


async def test_a_slow_subscriber_is_evicted(redis_prefix: str) -> None:
    gate = asyncio.Event()
    # paced: the local reader keeps up with a buffer of 4 (a burst would evict it as well)
    agent = gated_agent(gate, before=1, after=8, pause=0.005)
    async with replicas(redis_prefix, agent, buffer=4) as (
        manager, _a, b
    ):
        local: list[Event] = []
        running = asyncio.create_task(collect(await manager.stream(params("go")), local))
        await eventually(lambda: len(local) >= 3)
        task_id = local[0][1].id  # type: ignore[attr-defined]
        slow = await b.resubscribe(task_id, None)  # never read while the turn runs
        assert b.following == 1
        gate.set()
        await asyncio.wait_for(running, 10)
        await eventually(lambda: b.following == 0)  # evicted: let go at once
        got = await asyncio.wait_for(collect(slow, []), 5)
    assert final_state(local) == "completed"
    assert [seq for seq, _ in got] == [0]  # the snapshot it had, then its stream ended
    assert len(local) == 13


async def test_nothing_is_left_after_close(redis_prefix: str) -> None:
    gate = asyncio.Event()
    async with open_storage(":memory:") as storage:
        a = RedisPublisher(storage.tasks, None, REDIS_URL, prefix=redis_prefix,
                           finished_ttl=30)
        async with a, TaskManager([gated_agent(gate)], storage, publisher=a) as manager:
            local: list[Event] = []
            running = asyncio.create_task(collect(await manager.stream(params("go")), local))
            await eventually(lambda: len(local) >= 5)
            task_id = local[0][1].id  # type: ignore[attr-defined]
            b = RedisPublisher(storage.tasks, None, REDIS_URL, prefix=redis_prefix)
            async with b:
                assert len(await keys_under(redis_prefix)) == 3  # the task, two wake-ups
                remote: list[Event] = []
                following = asyncio.create_task(
                    collect(await b.resubscribe(task_id, None), remote)
                )
                await eventually(lambda: len(remote) >= 5)
            await asyncio.wait_for(following, 5)  # closing B ended its follower's stream
            assert b.following == 0
            gate.set()
            await asyncio.wait_for(running, 10)
    names = {t.get_name() for t in asyncio.all_tasks()}
    assert not {n for n in names if n.startswith("llamon-redis")}, names
    from redis.asyncio import Redis

    client = Redis.from_url(REDIS_URL)
    try:
        key = f"{redis_prefix}{task_id}".encode()
        assert await keys_under(redis_prefix) == [key]  # the wake-up streams are deleted
        ttl = await client.pttl(key)
        assert 0 < ttl <= 30_000  # the finished task's stream expires
        assert await client.xlen(key) == 10
    finally:
        await client.aclose()


CHILD = textwrap.dedent("""
    import asyncio, json, sys
    from llamon_agent.backends.redis_events import RedisPublisher
    from llamon_agent.stores.memory import InMemoryTaskStore

    async def main(url, prefix, task_id):
        async with RedisPublisher(InMemoryTaskStore(), None, url, prefix=prefix) as b:
            events = await b.resubscribe(task_id, 0)
            print("ready", flush=True)
            async for seq, payload in events:
                print(json.dumps([seq, payload.to_json().decode()]), flush=True)

    asyncio.run(main(*sys.argv[1:]))
""")


async def test_a_subscriber_in_another_process_follows_the_turn(redis_prefix: str) -> None:
    """Replica B is a real second process: it replays from the start (Last-Event-ID 0) and
    follows live until the final event."""
    gate = asyncio.Event()
    async with replicas(redis_prefix, gated_agent(gate)) as (manager, _a, _b):
        local: list[Event] = []
        running = asyncio.create_task(collect(await manager.stream(params("go")), local))
        await eventually(lambda: len(local) >= 5)
        task_id = local[0][1].id  # type: ignore[attr-defined]
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CHILD, REDIS_URL, redis_prefix, task_id,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        )
        assert child.stdout is not None
        try:
            ready = await asyncio.wait_for(child.stdout.readline(), 20)
            assert ready == b"ready\n", (ready, await child.stderr.read())  # type: ignore[union-attr]
            gate.set()
            out, err = await asyncio.wait_for(child.communicate(), 20)
        finally:
            if child.returncode is None:
                child.kill()
                await child.wait()
        await asyncio.wait_for(running, 10)
    assert child.returncode == 0, err.decode()
    remote = [json.loads(line) for line in out.decode().splitlines()]
    assert remote == [[seq, payload.to_json().decode()] for seq, payload in local]


async def test_b_follows_a_turn_its_own_store_does_not_know(redis_prefix: str) -> None:
    """The stream shows the turn running: its snapshot and events are enough, no store read."""
    gate = asyncio.Event()
    async with replicas(redis_prefix, gated_agent(gate)) as (manager, _a, _b), \
            stranger(redis_prefix) as b:
        local: list[Event] = []
        running = asyncio.create_task(collect(await manager.stream(params("go")), local))
        await eventually(lambda: len(local) >= 5)
        task_id = local[0][1].id  # type: ignore[attr-defined]
        remote: list[Event] = []
        following = asyncio.create_task(collect(await b.resubscribe(task_id, None), remote))
        await eventually(lambda: len(remote) >= 5)
        gate.set()
        async with asyncio.timeout(10):
            await asyncio.gather(running, following)
    assert remote[0][0] == 0 and remote[0][1].to_json() == local[0][1].to_json()
    assert wire(remote[1:]) == wire(local[1:])
    assert final_state(remote) == "completed"


async def test_a_finished_turn_is_read_from_the_store_else_replayed_from_its_stream(
    redis_prefix: str,
) -> None:
    gate = asyncio.Event()
    gate.set()
    async with replicas(redis_prefix, gated_agent(gate)) as (manager, a, b), \
            stranger(redis_prefix) as c:
        local = await collect(await manager.stream(params("go")), [])
        task_id = local[0][1].id  # type: ignore[attr-defined]
        stored = await manager.get_task(task_id)
        shared = await collect(await b.resubscribe(task_id, None), [])
        replayed = await collect(await c.resubscribe(task_id, None), [])
        await delete(a.key(task_id))  # the stream expired: only the store is left
        expired = await collect(await b.resubscribe(task_id, 4), [])
        with pytest.raises(TaskNotFoundError):
            await c.resubscribe(task_id, None)
    # B shares the store: the task as stored, then its final status (LocalPublisher's answer)
    assert [seq for seq, _ in shared] == [0, 10]
    assert shared[0][1].to_json() == stored.to_json()
    # C's store does not know it: the turn's snapshot, then its events up to the final one
    assert replayed[0][0] == 0 and replayed[0][1].to_json() == local[0][1].to_json()
    assert wire(replayed[1:]) == wire(local[1:])
    assert wire(expired) == wire(shared)  # Last-Event-ID 4 cannot be replayed: the store


@asynccontextmanager
async def quiet_replicas(
    prefix: str, agent: Agent
) -> AsyncIterator[tuple[TaskManager, RedisPublisher, RedisPublisher]]:
    """As ``replicas``, but B checks a quiet stream after 0.05 s and has no idle limit."""
    async with open_storage(":memory:") as storage:
        a = RedisPublisher(storage.tasks, None, REDIS_URL, prefix=prefix)
        b = RedisPublisher(storage.tasks, None, REDIS_URL, prefix=prefix, quiet=0.05,
                           idle_limit=None)
        async with a, b, TaskManager([agent], storage, publisher=a) as manager:
            yield manager, a, b


async def test_a_follower_ends_when_the_store_is_ahead_of_a_quiet_stream(
    redis_prefix: str,
) -> None:
    """The owner stored its turn's end and died before relaying it: B's follower ends once the
    stream is quiet and the store ahead of it, and a resubscribe reads the store."""
    gate = asyncio.Event()
    async with quiet_replicas(redis_prefix, gated_agent(gate)) as (manager, a, b):
        local: list[Event] = []
        running = asyncio.create_task(collect(await manager.stream(params("go")), local))
        await eventually(lambda: len(local) >= 5)
        task_id = local[0][1].id  # type: ignore[attr-defined]
        remote: list[Event] = []
        following = asyncio.create_task(collect(await b.resubscribe(task_id, None), remote))
        await eventually(lambda: len(remote) >= 5)
        record = await a._store.get(task_id)
        assert record is not None
        record.task = record.task.model_copy(update={"status": status("failed")})
        record.event_seq = 7  # its ending numbered 6 and 7, never relayed
        await a._store.save(record)
        await asyncio.wait_for(following, 5)
        after = await collect(await b.resubscribe(task_id, None), [])
        assert b.following == 0
        gate.set()
        await asyncio.wait_for(running, 10)
    assert remote[0][0] == 0 and wire(remote[1:]) == wire(local[1:5])
    assert [seq for seq, _ in after] == [0, 7]
    assert final_state(after) == "failed"


async def test_a_follower_ends_when_its_stream_expires(redis_prefix: str) -> None:
    gate = asyncio.Event()
    async with quiet_replicas(redis_prefix, gated_agent(gate)) as (manager, a, b):
        local: list[Event] = []
        running = asyncio.create_task(collect(await manager.stream(params("go")), local))
        await eventually(lambda: len(local) >= 5)
        task_id = local[0][1].id  # type: ignore[attr-defined]
        remote: list[Event] = []
        following = asyncio.create_task(collect(await b.resubscribe(task_id, None), remote))
        await eventually(lambda: len(remote) >= 5)
        await delete(a.key(task_id))
        await asyncio.wait_for(following, 5)
        assert b.following == 0
        gate.set()
        await asyncio.wait_for(running, 10)
    assert remote[0][0] == 0 and wire(remote[1:]) == wire(local[1:5])


OWNER = textwrap.dedent("""
    import asyncio, sys
    from llamon_agent.backends.redis_events import RedisPublisher
    from llamon_agent.runtime.tasks import TaskManager
    from llamon_agent.stores.storage import open_storage
    from tests.replicas.helpers import gated_agent, params

    async def main(url, prefix):
        gate = asyncio.Event()  # never opened: the turn runs until the process is killed
        async with open_storage(":memory:") as storage:
            a = RedisPublisher(storage.tasks, None, url, prefix=prefix)
            async with a, TaskManager([gated_agent(gate)], storage, publisher=a) as manager:
                async for seq, payload in await manager.stream(params("go")):
                    if seq == 5:
                        print(payload.task_id, flush=True)

    asyncio.run(main(*sys.argv[1:]))
""")


async def test_a_follower_ends_after_the_idle_limit_when_the_owner_is_killed(
    redis_prefix: str,
) -> None:
    """Replica A is a real process killed (SIGKILL) mid-turn: nothing ever ends its stream,
    and B's store does not know the task; B's follower ends after its idle limit."""
    owner = await asyncio.create_subprocess_exec(
        sys.executable, "-c", OWNER, REDIS_URL, redis_prefix,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert owner.stdout is not None and owner.stderr is not None
    try:
        line = await asyncio.wait_for(owner.stdout.readline(), 20)
        assert line.strip(), await owner.stderr.read()
        task_id = line.decode().strip()
        async with stranger(redis_prefix, quiet=0.05, idle_limit=0.5) as b:
            remote: list[Event] = []
            following = asyncio.create_task(collect(await b.resubscribe(task_id, None), remote))
            await eventually(lambda: len(remote) >= 5)
            owner.kill()
            await owner.wait()
            await asyncio.wait_for(following, 10)
            assert b.following == 0
    finally:
        if owner.returncode is None:
            owner.kill()
            await owner.wait()
    assert owner.returncode == -signal.SIGKILL
    assert [seq for seq, _ in remote] == [0, 2, 3, 4, 5]
    assert isinstance(remote[0][1], Task) and remote[0][1].id == task_id


async def stream_entries(prefix: str, task_id: str) -> list[tuple[int, bool]]:
    """(event id, final) of each event on the task's stream, close markers left out."""
    from redis.asyncio import Redis

    client = Redis.from_url(REDIS_URL)
    try:
        raw: Any = await client.xrange(f"{prefix}{task_id}", "-", "+")
    finally:
        await client.aclose()
    entries = [decode(raw_id, fields) for raw_id, fields in raw]
    return [(e.seq, e.final) for e in entries if e.kind != CLOSE]


async def test_events_before_the_end_wait_for_it_or_the_relay_delay(redis_prefix: str) -> None:
    """A stored snapshot is on Redis before the turn goes on; progress events wait for the
    writer's delay (never reached here) and go with the turn's end, in order, in one batch."""
    gate = asyncio.Event()
    async with replicas(redis_prefix, gated_agent(gate, before=3, after=2),
                        relay_delay=60) as (manager, _a, _b):
        local: list[Event] = []
        running = asyncio.create_task(collect(await manager.stream(params("go")), local))
        await eventually(lambda: len(local) >= 5)  # snapshot, working, 3 progress
        task_id = local[0][1].id  # type: ignore[attr-defined]
        assert await stream_entries(redis_prefix, task_id) == [(1, False)]  # the stored one
        gate.set()
        await asyncio.wait_for(running, 10)
        relayed = await stream_entries(redis_prefix, task_id)
    assert [seq for seq, _ in local] == list(range(1, 10))
    assert relayed == [(seq, seq == 9) for seq in range(1, 10)]


async def test_the_writer_relays_a_running_turns_events_after_its_delay(
    redis_prefix: str,
) -> None:
    gate = asyncio.Event()
    async with replicas(redis_prefix, gated_agent(gate, before=3),
                        relay_delay=0.05) as (manager, _a, _b):
        local: list[Event] = []
        running = asyncio.create_task(collect(await manager.stream(params("go")), local))
        await eventually(lambda: len(local) >= 5)
        task_id = local[0][1].id  # type: ignore[attr-defined]
        async with asyncio.timeout(5):
            while len(await stream_entries(redis_prefix, task_id)) < 5:
                await asyncio.sleep(0.01)
        assert not running.done()  # relayed while the turn still waits at its gate
        assert await stream_entries(redis_prefix, task_id) == [(s, False) for s in range(1, 6)]
        gate.set()
        await asyncio.wait_for(running, 10)


async def test_a_turn_waits_for_redis_once_its_backlog_is_full(redis_prefix: str) -> None:
    """However long the writer's delay, no more than ``_BACKLOG`` events wait for Redis."""
    from llamon_agent.backends.redis_events import _BACKLOG

    gate = asyncio.Event()
    burst = _BACKLOG + 44
    async with replicas(redis_prefix, gated_agent(gate, before=burst),
                        relay_delay=60, buffer=4 * burst) as (manager, _a, _b):
        local: list[Event] = []
        running = asyncio.create_task(collect(await manager.stream(params("go")), local))
        await eventually(lambda: len(local) >= burst + 2)
        task_id = local[0][1].id  # type: ignore[attr-defined]
        relayed = await stream_entries(redis_prefix, task_id)
        assert burst + 2 - _BACKLOG <= len(relayed) < burst + 2
        assert [seq for seq, _ in relayed] == list(range(1, len(relayed) + 1))
        gate.set()
        await asyncio.wait_for(running, 10)


def test_the_relay_delay_is_checked() -> None:
    with pytest.raises(ValueError, match="relay_delay"):
        RedisPublisher(InMemoryTaskStore(), None, REDIS_URL, relay_delay=-1)
