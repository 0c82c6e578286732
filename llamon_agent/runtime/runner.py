"""Run one turn of a compiled graph and say how it ended.

A turn ends either at the interrupts it raised or at the end of the graph. The interrupts are
taken from the run's own stream (deduplicated by id: a subgraph's interrupt is reported once per
namespace), not from a second ``aget_state`` read: every turn resumes *all* pending interrupts
at once (``TaskManager`` collects the answers first), so the interrupts pending after a turn are
exactly those the turn raised. What the turn produced is taken from this turn's node updates
only, so values left in state by earlier turns on the same thread never leak into a new task's
result: ``result`` becomes a data part, new AI messages become text.

Progress (``get_stream_writer()``) goes to the turn's writer (``_langgraph.with_stream_writer``)
rather than through ``stream_mode="custom"``, which made every run stream concurrently at a
cost of 15-20% of LangGraph's own work (bench/README.md, "Speed, round nineteen"). Chunks are
published in the order written, each once the loop takes it (as LangGraph's own writer hands
them over, so a sync node's thread may write too), all before the turn ends; a chunk written
after the run is over is dropped. Progress written inside a subgraph arrives too.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.pregel import Pregel
from langgraph.types import Interrupt

from .._langgraph import with_stream_writer
from ..core.hitl_graph import HITL_NODE

INTERRUPT = "__interrupt__"

__all__ = ["TurnOutcome", "run_turn"]

log = logging.getLogger(__name__)

ProgressCallback = Callable[[Any], Awaitable[None]]


@dataclass
class TurnOutcome:
    interrupts: tuple[Interrupt, ...] = ()
    result: Any = None
    texts: list[str] = field(default_factory=list)


def _ai_texts(messages: Any) -> list[str]:
    if isinstance(messages, BaseMessage):
        messages = [messages]
    if not isinstance(messages, list):
        return []
    return [
        m.text for m in messages if isinstance(m, BaseMessage) and m.type == "ai" and m.text
    ]


async def _published_nowhere(chunk: Any) -> None:
    """The callback of a run that is over: never called (nothing is taken once it is)."""


class _Progress:
    """A run's progress chunks, handed to ``on_progress`` one at a time, in order, on the loop.
    No task exists until a chunk is written: most runs write none."""

    def __init__(self, on_progress: ProgressCallback) -> None:
        self._on_progress = on_progress
        self._loop = asyncio.get_running_loop()
        self._chunks: deque[Any] = deque()
        self._publishing: asyncio.Task[None] | None = None
        self._open = True

    def write(self, chunk: Any) -> None:
        """The run's stream writer: called where the node runs (a sync node's thread too)."""
        self._loop.call_soon_threadsafe(self._take, chunk)

    def _take(self, chunk: Any) -> None:
        if not self._open:
            return  # written after the run was over: its turn has ended, or is ending
        self._chunks.append(chunk)
        if self._publishing is None or self._publishing.done():
            self._publishing = self._loop.create_task(self._publish())

    async def _publish(self) -> None:
        while self._chunks:
            chunk = self._chunks.popleft()
            try:
                await self._on_progress(chunk)
            except Exception:  # progress is not stored: the run goes on without it
                log.exception("a progress update could not be published")

    async def close(self, *, publish: bool) -> None:
        """After the run: publish what it wrote (``publish``), else drop it. Every chunk written
        before the run returned has been taken by now: each was handed to the loop before the
        node that wrote it finished."""
        self._open = False
        publishing = self._publishing
        if publishing is not None and not publishing.done():
            if not publish:
                publishing.cancel()
            await asyncio.gather(publishing, return_exceptions=True)
        # LangGraph's configs keep the writer (and so this object) in reference cycles: let go
        # of the turn, which the callback holds, so that it is freed when it ends
        # (tests/runtime/test_garbage.py)
        self._on_progress = _published_nowhere
        self._chunks.clear()


async def run_turn(
    graph: Pregel[Any, Any, Any, Any],
    graph_input: Any,
    config: dict[str, Any],
    *,
    durability: str,
    on_progress: ProgressCallback,
) -> TurnOutcome:
    outcome = TurnOutcome()
    seen: dict[str, Interrupt] = {}
    progress = _Progress(on_progress)
    try:
        async for chunk in graph.astream(  # type: ignore[call-overload]
            graph_input, with_stream_writer(config, progress.write), stream_mode="updates",
            durability=durability,
        ):
            _take_update(chunk, outcome, seen)
    except BaseException:
        await progress.close(publish=False)
        raise
    await progress.close(publish=True)
    outcome.interrupts = tuple(seen.values())
    return outcome


def _take_update(chunk: dict[str, Any], outcome: TurnOutcome, seen: dict[str, Interrupt]) -> None:
    for node, update in chunk.items():
        if node == INTERRUPT:
            for raised in update:
                seen.setdefault(raised.id, raised)
            continue
        if node == HITL_NODE or not isinstance(update, dict):
            continue
        if "result" in update:
            outcome.result = update["result"]
        outcome.texts.extend(_ai_texts(update.get("messages")))
