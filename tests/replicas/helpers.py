"""Builders for the cross-process backend tests: a turn that waits on a gate while emitting
progress, so that a subscriber in another "replica" can join it mid-run."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from llamon_agent import Agent
from llamon_agent.a2a.types import MessageSendParams
from llamon_agent.runtime.events import Event
from tests.conftest import send_params


class GateState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    thread_id: str
    a2a_task_id: str
    result: dict[str, Any]


def gated_agent(
    gate: asyncio.Event, before: int = 3, after: int = 3, pause: float | None = None
) -> Agent:
    """``before`` progress events, then wait for ``gate``, then ``after`` more (``pause``
    seconds apart, else in one burst), then done."""

    async def work(state: GateState) -> dict[str, Any]:
        write = get_stream_writer()
        for i in range(before):
            write(f"before {i}")
        await gate.wait()
        for i in range(after):
            write(f"after {i}")
            if pause is not None:
                await asyncio.sleep(pause)
        return {"result": {"done": True}}

    g = StateGraph(GateState)
    g.add_node("work", work)
    g.add_edge(START, "work")
    g.add_edge("work", END)
    return Agent("gated", g)


def params(text: str, **kw: Any) -> MessageSendParams:
    return MessageSendParams.model_validate(send_params(text, **kw))


def wire(events: list[Event]) -> list[tuple[int, bytes]]:
    """Events as the SSE frames show them: id and JSON."""
    return [(seq, payload.to_json()) for seq, payload in events]


async def collect(events: AsyncIterator[Event], into: list[Event]) -> list[Event]:
    async for event in events:
        into.append(event)
    return into


async def eventually(check: Any, timeout: float = 5.0) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.01)
