"""Test-only agents for the process tests (``tests.process.agents:SLOW_AGENTS``).

``slow-side-effect`` asks a first question; the node after the answer appends the answer to a
file and sleeps, then a second question follows. Everything is set by the data part of the task's
first message, so the test process decides it and can read the side effects:

- ``"log"``: file the side-effect node appends the first answer to;
- ``"sleep"``: seconds that node sleeps after writing (default 0.3);
- ``"gate"``: that node also waits, after writing, until this file exists (at most 30 s), so a
  test can hold a run in flight for as long as it needs; ``"begin_gate"`` holds the first turn.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
from pathlib import Path
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AnyMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from app.assistant import INTERRUPT_ON, SYSTEM_PROMPT
from app.main import AGENTS as EXAMPLE_AGENTS
from app.outbox import server_outbox
from app.planner import EmailPlanner
from llamon_agent import Agent, review_graph
from llamon_agent.core.hitl import HITLInterrupt
from llamon_agent.core.principal import split_key

FIRST_QUESTION = "First question: what should I record?"
SECOND_QUESTION = "Second question: anything to add?"
DEFAULT_SLEEP = 0.3
GATE_TIMEOUT = 30.0


class SlowState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    thread_id: str
    a2a_data: list[dict[str, Any]]
    log_path: str | None
    sleep: float
    gate: str | None
    first: str | None
    second: str | None
    result: dict[str, Any]


async def _wait_for(path: str | None) -> None:
    if not path:
        return
    deadline = asyncio.get_running_loop().time() + GATE_TIMEOUT
    while not os.path.exists(path) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)


async def begin(state: SlowState) -> dict[str, Any]:
    settings: dict[str, Any] = {}
    for data in state.get("a2a_data") or []:
        settings.update(data)
    await _wait_for(settings.get("begin_gate"))
    return {
        "gate": settings.get("gate"),
        "log_path": settings.get("log"),
        "sleep": float(settings.get("sleep", DEFAULT_SLEEP)),
        "first": None,
        "second": None,
    }


async def ask_first(state: SlowState) -> dict[str, Any] | HITLInterrupt:
    if state.get("first") is not None:
        return {}
    return HITLInterrupt({"question": FIRST_QUESTION}, thread_id=state["thread_id"], key="first")


async def record(state: SlowState) -> dict[str, Any]:
    """The side effect: one line per run of this node, then a slow step."""
    path = state.get("log_path")
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(f"{state.get('first')}\n")
    await _wait_for(state.get("gate"))
    await asyncio.sleep(state.get("sleep", DEFAULT_SLEEP))
    return {}


async def ask_second(state: SlowState) -> dict[str, Any] | HITLInterrupt:
    if state.get("second") is not None:
        return {}
    return HITLInterrupt({"question": SECOND_QUESTION}, thread_id=state["thread_id"], key="second")


async def finish(state: SlowState) -> dict[str, Any]:
    return {"result": {"first": state.get("first"), "second": state.get("second")}}


def slow_graph() -> StateGraph[Any, Any, Any, Any]:
    graph = StateGraph(SlowState)
    for name, node in [
        ("begin", begin),
        ("ask_first", ask_first),
        ("record", record),
        ("ask_second", ask_second),
        ("finish", finish),
    ]:
        graph.add_node(name, node)
    graph.add_edge(START, "begin")
    graph.add_edge("begin", "ask_first")
    graph.add_edge("ask_first", "record")
    graph.add_edge("record", "ask_second")
    graph.add_edge("ask_second", "finish")
    graph.add_edge("finish", END)
    return graph


SLOW_AGENTS = [
    Agent(
        "slow-side-effect",
        slow_graph(),
        name="Slow side effect",
        description="Asks twice; between the questions it writes a line to a file and sleeps.",
    )
]

#: the example agents and the slow one on one server (tests/process/test_replicas.py)
EXAMPLE_AND_SLOW_AGENTS = [*EXAMPLE_AGENTS, *SLOW_AGENTS]


# ---------------------------------------------------------------- a crash after a side effect

def pause_files(context_id: str) -> tuple[Path, Path]:
    """``(arm, paused)``: a test creates ``arm`` for its context; the next ``send_email`` of
    that context sends, removes ``arm``, creates ``paused`` and sleeps, so the test can kill the
    server between the tool running and the turn's checkpoint being written. A re-run of the
    turn (after the kill) finds no ``arm`` and goes on."""
    folder = Path(tempfile.gettempdir())
    return folder / f"llamon-pause-{context_id}.arm", folder / f"llamon-pause-{context_id}.paused"


@tool
async def send_email(
    to: str, subject: str, body: str, config: RunnableConfig,
    tool_call_id: Annotated[str, InjectedToolCallId],
) -> str:
    """Send an email to one address. A human approves it first."""
    thread_id = (config.get("configurable") or {}).get("thread_id")
    sent = await server_outbox(config).send_once(tool_call_id, to, subject, body, thread_id)
    arm, paused = pause_files(split_key(str(thread_id))[1])
    if arm.exists():
        arm.unlink()
        paused.touch()
        await asyncio.sleep(GATE_TIMEOUT)
    return f"Email #{sent.number} sent to {sent.to} with subject {sent.subject!r}."


PAUSING_EMAIL_AGENTS = [
    Agent("email-assistant", review_graph(EmailPlanner(), [send_email],
                                          interrupt_on=INTERRUPT_ON, system_prompt=SYSTEM_PROMPT)),
]
