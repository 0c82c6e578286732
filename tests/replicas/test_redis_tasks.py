"""``stop_task`` ends a background task even when a cancel was swallowed on the way (what
``asyncio.wait_for`` does on Python 3.11 when the call it wraps completes as the cancel
arrives; redis-py wraps every command it sends in one), and the follower of other processes'
streams stops through it."""

from __future__ import annotations

import asyncio
from typing import Any

from llamon_agent.backends.redis_follow import StreamFollower
from llamon_agent.core.background import stop_task
from tests.backends_redis import REDIS_URL


async def test_a_task_that_swallowed_a_cancel_is_stopped() -> None:
    swallowed = 0

    async def stubborn() -> None:
        nonlocal swallowed
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if swallowed:
                    raise
                swallowed += 1  # lost, as inside wait_for: the loop goes on

    task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    stopping = asyncio.create_task(stop_task(task))
    # not wait_for: cancelling the stop on a timeout would cancel the task once more itself
    await asyncio.wait({stopping}, timeout=5)
    try:
        assert stopping.done()
        assert task.cancelled()
        assert swallowed == 1
    finally:
        task.cancel()
        stopping.cancel()


async def test_stopping_a_finished_task_reports_nothing() -> None:
    task = asyncio.create_task(asyncio.sleep(0))
    await task
    await stop_task(task)
    assert task.done() and not task.cancelled()


def losing_client() -> Any:
    from redis.asyncio import Redis

    class LosesOneCancel(Redis):
        """XREAD loses the first cancel, as redis-py's ``wait_for`` does when the command
        was sent just as the cancel came (the follower then read on, forever)."""

        lost = 0

        async def xread(self, *args: Any, **kwargs: Any) -> Any:
            try:
                return await super().xread(*args, **kwargs)
            except asyncio.CancelledError:
                if self.lost:
                    raise
                self.lost += 1
                return None

    return LosesOneCancel.from_url(REDIS_URL)


async def test_a_follower_stops_although_its_reader_lost_a_cancel(redis_prefix: str) -> None:
    client = losing_client()
    follower = StreamFollower(client, redis_prefix, block=0.05)
    await follower.__aenter__()
    try:
        await asyncio.sleep(0.1)  # the reader is in XREAD BLOCK
        closing = asyncio.create_task(follower.__aexit__(None, None, None))
        await asyncio.wait({closing}, timeout=5)
        assert closing.done() and closing.exception() is None
        assert client.lost == 1
    finally:
        reader = follower._reader
        if reader is not None:
            reader.cancel()
        await client.aclose()
