"""A clock the tests move, and a server that reads it (deadlines without sleeping)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from asgi_lifespan import LifespanManager
from starlette.applications import Starlette

from llamon_agent import Agent, create_app
from llamon_agent.runtime.sweeper import SweepReport
from tests.conftest import A2AClient, served_on


class MovableClock:
    """Real time until moved: ``advance`` adds to what it answers."""

    def __init__(self) -> None:
        self.offset = timedelta()

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += timedelta(seconds=seconds)


@dataclass
class Served:
    client: A2AClient
    app: Starlette
    clock: MovableClock

    async def sweep(self) -> SweepReport:
        return await self.app.state.manager.sweeper.sweep_once()

    async def settled(self, task_id: str, bound: float = 10.0) -> dict[str, Any]:
        """The task once the turn a sweep started (which nobody waits for) has ended."""
        deadline = asyncio.get_running_loop().time() + bound
        while True:
            task = await self.client.result("tasks/get", {"id": task_id})
            if task["status"]["state"] not in ("submitted", "working"):
                return task
            assert asyncio.get_running_loop().time() < deadline, task
            await asyncio.sleep(0.01)

    async def later(self, seconds: float) -> SweepReport:
        """Move the clock ``seconds`` on and sweep once."""
        self.clock.advance(seconds)
        return await self.sweep()


@asynccontextmanager
async def serve_clocked(agents: Sequence[Agent], clock: MovableClock | None = None,
                        **kwargs: Any) -> AsyncIterator[Served]:
    """``create_app`` in process on the test's backend, its sweeper only swept by hand (the
    period is long) and its time read from ``clock``."""
    clock = clock or MovableClock()
    for name, value in served_on().items():
        kwargs.setdefault(name, value)
    kwargs.setdefault("sweep_every", 3600.0)
    app = create_app(list(agents), clock=clock, **kwargs)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver",
                                     timeout=30) as http:
            yield Served(A2AClient(http), app, clock)
