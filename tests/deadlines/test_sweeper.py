"""The sweeper: jobs run at start and every period, one failing job never stops the others."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

from llamon_agent.runtime.sweeper import Sweeper

MOMENT = datetime(2026, 12, 1, 22, 0, tzinfo=UTC)


class Counting:
    def __init__(self, name: str, fail: bool = False) -> None:
        self.name = name
        self.fail = fail
        self.seen: list[datetime] = []

    async def sweep(self, now: datetime) -> int:
        self.seen.append(now)
        if self.fail:
            raise RuntimeError("broken job")
        return 2


async def test_a_failing_job_is_reported_and_the_others_still_run() -> None:
    broken, fine = Counting("broken", fail=True), Counting("fine")
    sweeper = Sweeper([broken, fine], clock=lambda: MOMENT)
    report = await sweeper.sweep_once()
    assert report.handled == {"fine": 2}
    assert report.failed == ("broken",)
    assert fine.seen == [MOMENT] and broken.seen == [MOMENT]


async def test_it_sweeps_at_start_then_every_period_until_left() -> None:
    job = Counting("job")
    async with Sweeper([job], every=0.01):
        for _ in range(500):
            if len(job.seen) >= 3:
                break
            await asyncio.sleep(0.01)
    assert len(job.seen) >= 3
    seen = len(job.seen)
    await asyncio.sleep(0.05)
    assert len(job.seen) == seen  # stopped with the context


def test_the_period_must_be_positive() -> None:
    with pytest.raises(ValueError, match="above 0"):
        Sweeper(every=0)
