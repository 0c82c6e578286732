"""The periodic sweeper: work that falls due with time rather than with a request.

Deadlines that passed, push deliveries to retry and tasks old enough to delete are each a
``SweepJob``. Every replica runs the same sweeper at once, so a job must be safe to run
concurrently with itself on another process (each item is claimed or deleted atomically in
the store, and handled once); a sweep after a restart catches up on everything that fell due
while no server ran, because jobs select by time, not by a timer they kept in memory.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from types import TracebackType
from typing import Final, Protocol

from ..core.background import stop_task
from ..core.clock import Clock, system_clock

__all__ = ["SWEEPER_TASK", "SweepJob", "SweepReport", "Sweeper"]

#: the name of the task that runs the sweeps (tests tell its statements from the requests')
SWEEPER_TASK: Final = "llamon-sweeper"

log = logging.getLogger(__name__)


class SweepJob(Protocol):
    #: names the job in logs and in ``SweepReport``
    name: str

    async def sweep(self, now: datetime) -> int:
        """Handle what is due at ``now``; return how many items were handled."""
        ...


@dataclass(frozen=True)
class SweepReport:
    """What one sweep handled, per job name; jobs that raised are in ``failed``."""

    handled: dict[str, int]
    failed: tuple[str, ...] = ()


class Sweeper:
    """Runs its jobs every ``every`` seconds while entered (an async context manager that owns
    its background task); ``sweep_once`` runs them now (tests, ``llamon-agent prune``)."""

    def __init__(self, jobs: Sequence[SweepJob] = (), *, every: float = 5.0,
                 clock: Clock = system_clock) -> None:
        if not every > 0:
            raise ValueError(f"the sweep period must be above 0 seconds, got {every!r}")
        self._jobs = list(jobs)
        self._every = every
        self.clock = clock
        self._task: asyncio.Task[None] | None = None
        self._lock = asyncio.Lock()  # the loop and a caller's sweep_once never overlap

    def add(self, job: SweepJob) -> None:
        self._jobs.append(job)

    async def sweep_once(self) -> SweepReport:
        async with self._lock:
            moment = self.clock()
            handled: dict[str, int] = {}
            failed: list[str] = []
            for job in self._jobs:  # one job failing never stops the others
                try:
                    handled[job.name] = await job.sweep(moment)
                except Exception:
                    log.exception("sweeper: %s failed; the next sweep tries again", job.name)
                    failed.append(job.name)
            return SweepReport(handled, tuple(failed))

    async def __aenter__(self) -> Sweeper:
        self._task = asyncio.create_task(self._loop(), name=SWEEPER_TASK)
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        if self._task is not None:
            # a cancel landing in psycopg_pool's ``wait_for`` may be lost (core/background.py)
            await stop_task(self._task)
            self._task = None

    async def _loop(self) -> None:
        while True:
            await self.sweep_once()  # at start too: catch up on what fell due while stopped
            await asyncio.sleep(self._every)
