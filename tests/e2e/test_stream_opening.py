"""A stream's response starts while its turn is being started (issue 14, the idle stream's first
event): the task's first save, a database round trip on PostgreSQL, overlaps the response's
start; no event is sent before that save is stored; an error found while starting is still one
SSE frame; a client that leaves meanwhile does not stop the turn, and what it would have read is
closed (bench/README.md, "Speed, round twenty-three")."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from asgi_lifespan import LifespanManager
from langgraph.checkpoint.memory import InMemorySaver

from llamon_agent import create_app
from llamon_agent.stores.base import StoredTask
from llamon_agent.stores.memory import InMemoryTaskStore
from tests.conftest import send_params
from tests.e2e.test_streaming import LiveStream, slow_agent, summary

WAIT = 3.0


class GatedStore(InMemoryTaskStore):
    """Saves wait for ``gate`` while ``gated``; ``saving`` tells that one began."""

    def __init__(self) -> None:
        super().__init__()
        self.gated = True
        self.gate = asyncio.Event()
        self.saving = asyncio.Event()
        self.on_save: Callable[[], None] = lambda: None

    async def save(self, record: StoredTask) -> None:
        self.on_save()
        if self.gated:
            self.saving.set()
            await self.gate.wait()
        await super().save(record)


@asynccontextmanager
async def serving(store: GatedStore, delay: float) -> AsyncIterator[tuple[Any, Any]]:
    """The ASGI callable to drive, and the app (its ``state``)."""
    app = create_app([slow_agent(delay)], task_store=store, checkpointer=InMemorySaver())
    async with LifespanManager(app) as manager:
        yield manager.app, app


async def until(check: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not check():
        assert time.monotonic() < deadline, f"not {what} within {WAIT} s"
        await asyncio.sleep(0.005)


async def test_the_response_starts_while_the_first_save_runs_and_the_task_comes_after_it() -> None:
    store = GatedStore()
    started_at_save: list[bool] = []
    async with serving(store, 0.0) as (app, _):
        async with LiveStream(app, "message/stream", send_params("go")) as live:
            store.on_save = lambda: started_at_save.append(live.start is not None)
            await asyncio.wait_for(store.saving.wait(), WAIT)
            # the open ran up to its save before the response was set up (a short text
            # message: task_bound.SHORT_FIRST_MESSAGE), so the two overlap
            assert started_at_save == [False]
            # the headers are out while the task's first save has not returned
            await until(lambda: live.start is not None, "started")
            assert live.start is not None
            assert live.start["status"] == 200
            assert dict(live.start["headers"])[b"content-type"].startswith(b"text/event-stream")
            await asyncio.sleep(0.05)
            assert live._events.empty()  # no event before the task is stored
            assert not await store.unfinished()
            store.gated = False
            store.gate.set()
            first = await live.next()
            assert first is not None
            events = [first, *await live.rest()]
        task_id = first["data"]["result"]["id"]
        assert summary(events) == [
            ("1", "task", "submitted", None),
            ("2", "status-update", "working", False),
            ("3", "artifact-update", None, None),
            ("4", "status-update", "completed", True),
        ]
        stored = await store.get(task_id)
        assert stored is not None and stored.state == "completed"


async def test_an_error_found_while_starting_is_one_frame_after_the_headers() -> None:
    store = GatedStore()
    store.gated = False
    async with serving(store, 0.0) as (app, _):
        async with LiveStream(app, "message/stream", send_params("x", task_id="nope"), "e1"
                              ) as live:
            events = await live.rest()
        assert live.start is not None and live.start["status"] == 200
        assert len(events) == 1
        body = events[0]["data"]
        assert set(body) == {"jsonrpc", "id", "error"}
        assert body["id"] == "e1"
        assert body["error"]["code"] == -32001
        assert body["error"]["data"] == {"taskId": "nope"}


async def test_a_client_leaving_while_its_turn_starts_does_not_stop_the_turn() -> None:
    store = GatedStore()
    async with serving(store, 1.0) as (app, starlette):
        manager = starlette.state.manager
        async with LiveStream(app, "message/stream", send_params("go")):
            await asyncio.wait_for(store.saving.wait(), WAIT)
            # the client leaves with the first save in flight; the save returns soon after
            asyncio.get_running_loop().call_later(0.1, store.gate.set)
        store.gated = False
        await until(lambda: len(store._rows) == 1, "stored")
        (task_id,) = list(store._rows)
        # the turn runs on (the agent sleeps a second), and the events the client would have
        # read are closed at once, not when the turn ends
        log = manager._publisher._hub.get(task_id)
        await until(lambda: not log._subscribers, "unsubscribed")
        record = await store.get(task_id)
        assert record is not None and record.state in ("submitted", "working")
        await until(lambda: store._rows[task_id][6] == "completed", "completed")


class FailingStore(GatedStore):
    async def save(self, record: StoredTask) -> None:
        self.saving.set()
        await self.gate.wait()
        raise RuntimeError("the disk is gone")


async def test_an_open_that_fails_after_its_client_left_is_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = FailingStore()
    async with serving(store, 0.0) as (app, _):
        with caplog.at_level(logging.ERROR, logger="llamon_agent.server.sse_stream"):
            async with LiveStream(app, "message/stream", send_params("go")):
                await asyncio.wait_for(store.saving.wait(), WAIT)
                asyncio.get_running_loop().call_later(0.1, store.gate.set)
    failures = [r for r in caplog.records if r.name == "llamon_agent.server.sse_stream"]
    assert [r.getMessage() for r in failures] == [
        "internal error opening a stream whose client had left"]
    assert failures[0].exc_info is not None
    assert "the disk is gone" in str(failures[0].exc_info[1])


async def test_an_open_that_fails_is_an_internal_error_frame(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = FailingStore()
    store.gate.set()
    async with serving(store, 0.0) as (app, _):
        with caplog.at_level(logging.ERROR, logger="llamon_agent.server.sse_stream"):
            async with LiveStream(app, "message/stream", send_params("go"), "f1") as live:
                events = await live.rest()
    assert live.start is not None and live.start["status"] == 200
    assert [e["data"] for e in events] == [
        {"jsonrpc": "2.0", "id": "f1", "error": {"code": -32603, "message": "Internal error"}}]
    assert [r.getMessage() for r in caplog.records
            if r.name == "llamon_agent.server.sse_stream"] == [
        "internal error opening message/stream"]


async def test_a_request_cancelled_before_its_response_exists_still_closes_the_events() -> None:
    """The handler lets the open take its first step before building the response; a request
    cancelled in that step (a server stopping) has no response to settle the open: the handler
    settles it itself."""
    store = GatedStore()
    async with serving(store, 1.0) as (app, starlette):
        manager = starlette.state.manager
        live = LiveStream(app, "message/stream", send_params("go"))
        await live.__aenter__()
        request = live._task
        assert request is not None
        # the open's first step reaches the save while the handler waits for its turn
        store.on_save = request.cancel
        await asyncio.wait_for(store.saving.wait(), WAIT)
        asyncio.get_running_loop().call_later(0.1, store.gate.set)
        with pytest.raises(asyncio.CancelledError):
            await asyncio.wait_for(request, WAIT)
        assert live.start is None  # no response was begun
        store.gated = False
        await until(lambda: len(store._rows) == 1, "stored")
        (task_id,) = list(store._rows)
        log = manager._publisher._hub.get(task_id)
        await until(lambda: not log._subscribers, "unsubscribed")
        assert store._rows[task_id][6] in ("submitted", "working")
        await until(lambda: store._rows[task_id][6] == "completed", "completed")
