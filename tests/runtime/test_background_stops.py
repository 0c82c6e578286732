"""The runtime's periodic loops (the sweeper, the takeover sweep) stop when their owner leaves,
even when a library under them lost one cancel: psycopg_pool hands out connections inside
``asyncio.wait_for``, which on Python 3.11 can swallow a cancel (core/background.py). Before,
one lost cancel left the loop running and the server's shutdown waiting for it forever (seen on
PostgreSQL: an in-process app whose first sweep was still reading when it stopped)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, cast

from llamon_agent.runtime.claims import LocalClaims
from llamon_agent.runtime.recovery import Recovered, Recovery
from llamon_agent.runtime.resumer import Resumer
from llamon_agent.runtime.sweeper import Sweeper


class LosesOneCancel:
    """A call that swallows the first cancel it gets, as ``wait_for`` can on Python 3.11."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.lost = 0

    async def __call__(self) -> None:
        self.entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            if self.lost:
                raise
            self.lost += 1  # the caller carries on as if the call had returned


async def ends(body: Callable[[], Awaitable[None]]) -> None:
    """``body`` (enter a loop's owner, leave it) ends: waited for from outside, since a lost
    cancel inside would swallow a timeout's cancel too."""
    running = asyncio.ensure_future(body())
    await asyncio.wait({running}, timeout=5)
    assert running.done(), "leaving waited for the loop forever"
    running.result()


async def test_the_sweeper_stops_although_a_job_lost_the_cancel() -> None:
    call = LosesOneCancel()

    class Job:
        name = "slow"

        async def sweep(self, now: datetime) -> int:
            await call()
            return 0

    async def body() -> None:
        async with Sweeper([Job()], every=3600):
            await call.entered.wait()

    await ends(body)
    assert call.lost == 1


async def test_the_takeover_sweep_stops_although_recovery_lost_the_cancel() -> None:
    call = LosesOneCancel()

    class SlowRecovery:
        async def recover(self) -> Recovered:
            await call()
            return Recovered()

        async def fail(self, found: Any, why: str) -> None:
            raise AssertionError("nothing fails here")

    resumer = Resumer(LocalClaims(), cast(Any, None), cast(Any, None), None,
                      cast(Recovery, SlowRecovery()))
    async def body() -> None:
        async with resumer.sweeping(0.01):
            await call.entered.wait()

    await ends(body)
    assert call.lost == 1
