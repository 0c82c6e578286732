"""Helpers of the retention tests: a clock the test moves, and reads past the wire (the
checkpointer, the Redis stream of a task)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from llamon_agent.backends.events_url import parse_events_url
from llamon_agent.core.principal import ANONYMOUS, context_key
from tests.backends_redis import REDIS_URL
from tests.conftest import served_on
from tests.orchestrator.helpers import Harness

DAY = timedelta(days=1)
#: far beyond any test: the sweeper's own loop sweeps once at start, then only when told
NEVER = 3600.0


class MovingClock:
    """``create_app(clock=...)``: the real time, plus what the test added."""

    def __init__(self) -> None:
        self.ahead = timedelta(0)

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.ahead

    def advance_to(self, ahead: timedelta) -> None:
        self.ahead = ahead


async def sweep(harness: Harness) -> int:
    """One sweep now; how many tasks retention deleted (it must not have failed)."""
    report = await harness.manager.sweeper.sweep_once()
    assert "retention" not in report.failed, report
    return report.handled["retention"]


async def has_checkpoint(harness: Harness, context_id: str, space: str = ANONYMOUS) -> bool:
    """Does the context's LangGraph thread hold a checkpoint (read from the checkpointer)?"""
    saver = harness.manager._storage.checkpointer
    config: Any = {"configurable": {"thread_id": context_key(space, context_id),
                                    "checkpoint_ns": ""}}
    return await saver.aget_tuple(config) is not None


async def task_error(harness: Harness, task_id: str) -> int | None:
    """The JSON-RPC error code of ``tasks/get`` (``None`` when it answers the task)."""
    body = await harness.client.call("tasks/get", {"id": task_id})
    return body["error"]["code"] if "error" in body else None


async def stream_exists(task_id: str) -> bool | None:
    """Does the task's Redis event stream exist? ``None`` without Redis events."""
    events = served_on().get("events")
    if events is None:
        return None
    from redis.asyncio import Redis

    url = parse_events_url(events)
    redis = Redis.from_url(REDIS_URL)
    try:
        return bool(await redis.exists(f"{url.prefix}events:{task_id}"))
    finally:
        await redis.aclose()
