"""Run one turn of a compiled graph and say how it ended.

A turn ends either at the interrupts it raised or at the end of the graph. The interrupts are
taken from the run's own stream (deduplicated by id: a subgraph's interrupt is reported once per
namespace), not from a second ``aget_state`` read: every turn resumes *all* pending interrupts
at once (``TaskManager`` collects the answers first), so the interrupts pending after a turn are
exactly those the turn raised. What the turn produced is taken from this turn's node updates
only, so values left in state by earlier turns on the same thread never leak into a new task's
result: ``result`` becomes a data part, new AI messages become text.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import BaseMessage
from langgraph.pregel import Pregel
from langgraph.types import Interrupt

from ..core.hitl_graph import HITL_NODE

INTERRUPT = "__interrupt__"

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
    seen: dict[str, Interrupt] = {}
    async for mode, chunk in graph.astream(  # type: ignore[call-overload]
        graph_input, config, stream_mode=["updates", "custom"], durability=durability
    ):
        if mode == "custom":
            await on_progress(chunk)
            continue
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
    outcome.interrupts = tuple(seen.values())
    return outcome
