"""Run one turn of a compiled graph and say how it ended.

A turn ends either at pending interrupts (read from ``aget_state``, the only authority) or at
the end of the graph. What the turn produced is taken from this turn's node updates only, so
values left in state by earlier turns on the same thread never leak into a new task's result:
``result`` becomes a data part, new AI messages become text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.pregel import Pregel
from langgraph.types import Interrupt

from .hitl_graph import HITL_NODE

__all__ = ["TurnOutcome", "run_turn"]

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


async def run_turn(
    graph: Pregel[Any, Any, Any, Any],
    graph_input: Any,
    config: dict[str, Any],
    *,
    durability: str,
    on_progress: ProgressCallback,
) -> TurnOutcome:
    outcome = TurnOutcome()
    async for mode, chunk in graph.astream(  # type: ignore[call-overload]
        graph_input, config, stream_mode=["updates", "custom"], durability=durability
    ):
        if mode == "custom":
            await on_progress(chunk)
            continue
        for node, update in chunk.items():
            if node == HITL_NODE or not isinstance(update, dict):
                continue
            if "result" in update:
                outcome.result = update["result"]
            outcome.texts.extend(_ai_texts(update.get("messages")))
    snapshot = await graph.aget_state(config)  # type: ignore[arg-type]
    outcome.interrupts = tuple(snapshot.interrupts)
    return outcome
