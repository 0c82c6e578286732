"""A streamed turn's graph runs once its stream has sent the first event (the task, stored).

The run otherwise took the event loop for its first steps while the stream's response was
still being set up, and the client's first event waited for them (issue 14: 3.4-4.2 ms to
the first event of an idle stream, 2.1-2.3 ms with the wait; bench/README.md, "Speed, round
four"). A reader that never reads holds the run for ``FIRST_EVENT_WAIT`` at most."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from llamon_agent import Agent
from llamon_agent.a2a.types import MessageSendParams, Task
from llamon_agent.runtime.tasks import TaskManager
from llamon_agent.runtime.worker import FIRST_EVENT_WAIT
from llamon_agent.stores.storage import open_storage
from tests.conftest import send_params


class State(TypedDict, total=False):
    messages: list[Any]
    result: Any


def recording_agent(ran: asyncio.Event) -> Agent:
    async def node(state: State) -> dict[str, Any]:
        ran.set()
        return {"result": {"ok": True}}

    g = StateGraph(State)
    g.add_node("work", node)
    g.add_edge(START, "work")
    g.add_edge("work", END)
    return Agent("recording", g)


def params() -> MessageSendParams:
    return MessageSendParams.model_validate(send_params("go", agent_id="recording"))


async def test_the_graph_runs_after_the_stream_handled_its_first_event() -> None:
    ran = asyncio.Event()
    async with (
        open_storage(":memory:") as storage,
        TaskManager([recording_agent(ran)], storage) as manager,
    ):
        events = await manager.stream(params())
        for _ in range(5):  # the loop turns, well within the wait: the run has not begun
            await asyncio.sleep(0)
        await asyncio.sleep(FIRST_EVENT_WAIT / 10)
        assert not ran.is_set()
        seq, first = await anext(events)
        assert (seq, isinstance(first, Task), first.status.state) == (1, True, "submitted")
        assert not ran.is_set()  # handled once the reader comes back for the next event
        rest = [payload async for _, payload in events]
        assert ran.is_set()
        assert rest[-1].status.state == "completed"  # type: ignore[union-attr]


async def test_a_stream_that_is_never_read_holds_the_run_for_the_wait_at_most() -> None:
    ran = asyncio.Event()
    async with (
        open_storage(":memory:") as storage,
        TaskManager([recording_agent(ran)], storage) as manager,
    ):
        events = await manager.stream(params())
        await asyncio.wait_for(ran.wait(), FIRST_EVENT_WAIT * 50)  # bounded, not timed
        await events.aclose()
