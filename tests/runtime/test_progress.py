"""Progress a graph writes (``get_stream_writer()``) streams as ``working`` status updates, in
the order written, before the turn's end (docs/hitl.md): from async and sync nodes (a sync node
runs in a worker thread), and from inside a subgraph. The run takes the writer from its config
instead of ``stream_mode="custom"`` (``runtime/runner.py``; bench/README.md, "Speed, round
nineteen"); a progress update that cannot be published is logged and the run goes on; a write
after the run is over publishes nothing."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any, TypedDict

import pytest
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph

from llamon_agent import Agent
from llamon_agent.runtime.publisher import LocalPublisher
from llamon_agent.runtime.turn import Turn
from tests.conftest import send_params, serve


class State(TypedDict, total=False):
    messages: list[Any]
    result: Any


def progress_agent(kept: list[Callable[[Any], None]] | None = None) -> Agent:
    async def first(state: State) -> dict[str, Any]:
        write = get_stream_writer()
        write("one")
        await asyncio.sleep(0)
        write({"step": 2})
        if kept is not None:
            kept.append(write)
        return {}

    def in_thread(state: State) -> dict[str, Any]:
        get_stream_writer()("three")
        return {}

    inner = StateGraph(State)
    inner.add_node("inner", lambda state: (get_stream_writer()("four"), {})[1])
    inner.add_edge(START, "inner")
    inner.add_edge("inner", END)

    g = StateGraph(State)
    g.add_node("first", first)
    g.add_node("in_thread", in_thread)
    g.add_node("sub", inner.compile())
    g.add_node("done", lambda state: {"result": {"ok": True}})
    g.add_edge(START, "first")
    g.add_edge("first", "in_thread")
    g.add_edge("in_thread", "sub")
    g.add_edge("sub", "done")
    g.add_edge("done", END)
    return Agent("progress", g)


def _progress_of(event: dict[str, Any]) -> Any:
    """The progress a ``working`` status update carries, else None."""
    result = event["data"]["result"]
    message = (result.get("status") or {}).get("message") if result["kind"] == "status-update" \
        else None
    if result["kind"] != "status-update" or result["status"]["state"] != "working" or not message:
        return None
    part = message["parts"][0]
    return part["text"] if part["kind"] == "text" else part["data"]


async def test_progress_streams_in_order_from_every_kind_of_node_before_the_end() -> None:
    async with serve([progress_agent()]) as client:
        events = await client.stream("message/stream", send_params("go", agent_id="progress"))
    kinds = [e["data"]["result"]["kind"] for e in events]
    progress = [p for p in map(_progress_of, events) if p is not None]
    assert progress == ["one", {"step": 2}, "three", "four"]
    first_progress = next(i for i, e in enumerate(events) if _progress_of(e) is not None)
    last_progress = max(i for i, e in enumerate(events) if _progress_of(e) is not None)
    assert kinds[0] == "task" and first_progress > 0
    assert kinds[last_progress + 1:] == ["artifact-update", "status-update"]
    assert events[-1]["data"]["result"]["status"]["state"] == "completed"
    assert events[-1]["data"]["result"]["final"] is True
    ids = [int(e["id"]) for e in events]
    assert ids == sorted(ids) and len(set(ids)) == len(ids)


async def test_a_write_after_the_run_is_over_publishes_nothing() -> None:
    kept: list[Callable[[Any], None]] = []
    async with serve([progress_agent(kept)]) as client:
        events = await client.stream("message/stream", send_params("go", agent_id="progress"))
        task_id = events[0]["data"]["result"]["id"]
        kept[0]("late")  # the node's writer, once its turn has ended
        for _ in range(5):
            await asyncio.sleep(0)
        replayed = await client.stream("tasks/resubscribe", {"id": task_id},
                                       headers={"Last-Event-ID": events[0]["id"]})
    # every event after the task's snapshot, as the stream had them: none after the final one
    assert [(e["id"], e["data"]) for e in replayed] == [
        (e["id"], e["data"]) for e in events[1:]]


async def test_progress_that_cannot_be_published_is_logged_and_the_run_goes_on(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    progress = LocalPublisher.progress

    async def failing_on_three(self: LocalPublisher, turn: Turn, chunk: Any) -> None:
        if chunk == "three":
            raise RuntimeError("the relay is down")
        await progress(self, turn, chunk)

    monkeypatch.setattr(LocalPublisher, "progress", failing_on_three)
    with caplog.at_level(logging.ERROR, logger="llamon_agent.runtime.runner"):
        async with serve([progress_agent()]) as client:
            events = await client.stream("message/stream",
                                         send_params("go", agent_id="progress"))
    assert [p for p in map(_progress_of, events) if p is not None] == ["one", {"step": 2}, "four"]
    assert events[-1]["data"]["result"]["status"]["state"] == "completed"
    assert any("progress update could not be published" in r.getMessage()
               for r in caplog.records)
