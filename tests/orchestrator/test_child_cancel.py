"""Cancelling a parent cancels its child's task (issue 12): a child whose call is in flight and
a child waiting for input (the parent then waits too), in the same server and over A2A, also
after the parent's server restarted; a dead child never holds the parent's cancel beyond its
timeout. The child servers are real llamon servers under uvicorn (``child_servers.py``)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Annotated, Any, TypedDict

import httpx
import pytest
from langchain_core.messages import AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from starlette.applications import Starlette

from app.orchestrator import FINALIZE, RISK, run_turn
from llamon_agent import Agent, create_app
from llamon_agent.core.principal import ANONYMOUS, context_key
from llamon_agent.orchestrator import ChildTimeouts, Orchestrator, RemoteAgent
from tests.conftest import A2AClient
from tests.orchestrator.child_servers import Switch, relay, uvicorn_url
from tests.orchestrator.helpers import HIGH_RISK, TOKEN, Harness, serve_app

pytestmark = pytest.mark.usefixtures("backend")

EVENTUALLY = 10.0


class HangState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]


async def hang(state: HangState) -> dict[str, Any]:
    await asyncio.Event().wait()  # works until cancelled
    return {}


def hanging_graph() -> StateGraph[Any, Any, Any, Any]:
    graph = StateGraph(HangState)
    graph.add_node("hang", hang)
    graph.add_edge(START, "hang")
    graph.add_edge("hang", END)
    return graph


KYC = Agent("kyc", hanging_graph(), name="KYC check that never ends")


async def eventually(check: Callable[[], Awaitable[Any]], what: str) -> Any:
    deadline = time.monotonic() + EVENTUALLY
    while not (found := await check()):
        assert time.monotonic() < deadline, what
        await asyncio.sleep(0.02)
    return found


@asynccontextmanager
async def child_server(agents: list[Agent]) -> AsyncIterator[tuple[str, Starlette]]:
    """A llamon server (in memory) on a real socket: its URL and its app."""
    app = create_app(agents, db=":memory:", shutdown_grace=0.5)
    async with uvicorn_url(app, lifespan="on") as url:
        yield url, app


async def remote_task(app: Starlette, context_id: str) -> str | None:
    """The latest task of a context on a child server (remote calls are anonymous there)."""
    latest = await app.state.manager._store.latest_in_context(context_key(ANONYMOUS, context_id))
    return None if latest is None else latest.id


async def remote_state(url: str, task_id: str) -> str:
    async with httpx.AsyncClient(base_url=url, trust_env=False, timeout=10) as http:
        task = await A2AClient(http).result("tasks/get", {"id": task_id})
    return str(task["status"]["state"])


async def in_flight(h: Harness, parent_id: str) -> list[str]:
    """The child task ids the parent's running turn knows (its calls in flight)."""
    children = h.manager._served["front"].children
    assert children is not None
    return [c.task_id for c in children.calls_of(parent_id) if c.task_id is not None]


async def cancel(h: Harness, task_id: str) -> dict[str, Any]:
    task = await asyncio.wait_for(h.client.result("tasks/cancel", {"id": task_id}), EVENTUALLY)
    assert task["status"]["state"] == "canceled"
    return task


async def test_cancel_of_the_parent_cancels_a_running_remote_child() -> None:
    async with child_server([KYC]) as (url, child_app):
        front = Orchestrator("front", relay, children=[RemoteAgent("kyc", url, timeout=5)])
        async with serve_app([front]) as h:
            parent = await h.client.send(data={"applicant": "Kim"}, agent_id="front",
                                         configuration={"blocking": False})
            child_id = (await eventually(lambda: in_flight(h, parent["id"]),
                                         "the parent never learnt its child's task"))[0]
            assert child_id == await remote_task(child_app, f"{parent['contextId']}::kyc")
            assert await remote_state(url, child_id) == "working"

            await cancel(h, parent["id"])
            assert await remote_state(url, child_id) == "canceled"


async def test_cancel_of_the_parent_cancels_a_remote_child_waiting_for_input() -> None:
    async with child_server([RISK]) as (url, child_app):
        loan = Orchestrator("loan", run_turn, children=[RemoteAgent("risk", url, timeout=5)])
        async with serve_app([loan, FINALIZE], reviewer_token=TOKEN) as h:
            parent = await h.send_loan(HIGH_RISK)
            assert parent["status"]["state"] == "input-required"
            child_id = await remote_task(child_app, f"{parent['contextId']}::risk")
            assert child_id is not None
            assert await remote_state(url, child_id) == "input-required"

            await cancel(h, parent["id"])
            assert await remote_state(url, child_id) == "canceled"


async def test_cancel_of_the_parent_cancels_a_running_local_child() -> None:
    front = Orchestrator("front", relay)
    async with serve_app([front, KYC]) as h:
        parent = await h.client.send(data={"applicant": "Kim"}, agent_id="front",
                                     configuration={"blocking": False})
        child_context = f"{parent['contextId']}::kyc"

        async def running_child() -> str | None:
            return next((t.record.id for t in h.manager._live.running()
                         if t.record.context_id == child_context), None)

        child_id = await eventually(running_child, "the local child never started")
        await cancel(h, parent["id"])
        assert (await h.get_child(child_id))["status"]["state"] == "canceled"


async def test_cancel_of_the_parent_cancels_a_local_child_waiting_for_input() -> None:
    loan = Orchestrator("loan", run_turn)
    async with serve_app([loan, RISK, FINALIZE], reviewer_token=TOKEN) as h:
        parent = await h.send_loan(HIGH_RISK)
        assert parent["status"]["state"] == "input-required"
        child_id = await h.child_task_id(f"{parent['contextId']}::risk")
        assert (await h.get_child(child_id))["status"]["state"] == "input-required"

        await cancel(h, parent["id"])
        assert (await h.get_child(child_id))["status"]["state"] == "canceled"


async def test_a_waiting_child_is_canceled_with_its_parent_after_a_restart(
    backend: str, tmp_path: Path
) -> None:
    """The parent remembers its children's tasks in its checkpoint, not in memory."""
    stored = {"db": str(tmp_path / "parent.sqlite3")} if backend == "memory" else {}
    async with child_server([RISK]) as (url, child_app):
        loan = Orchestrator("loan", run_turn, children=[RemoteAgent("risk", url, timeout=5)])
        async with serve_app([loan, FINALIZE], reviewer_token=TOKEN, **stored) as h:
            parent = await h.send_loan(HIGH_RISK)
            assert parent["status"]["state"] == "input-required"
        child_id = await remote_task(child_app, f"{parent['contextId']}::risk")
        assert child_id is not None

        async with serve_app([loan, FINALIZE], reviewer_token=TOKEN, **stored) as h:
            await cancel(h, parent["id"])
            assert await remote_state(url, child_id) == "canceled"


async def test_a_dead_child_does_not_hold_the_parents_cancel(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The child's cancel is best effort: bounded by its timeout, logged when it fails."""
    caplog.set_level(logging.WARNING)
    risk_app = create_app([RISK], db=":memory:", shutdown_grace=0.5)
    switch = Switch(risk_app)
    async with uvicorn_url(switch, lifespan="on") as url:
        timeouts = ChildTimeouts(connect=5, send=0.5, quiet=5)
        loan = Orchestrator("loan", run_turn, children=[RemoteAgent("risk", url, timeout=timeouts)])
        async with serve_app([loan, FINALIZE], reviewer_token=TOKEN) as h:
            parent = await h.send_loan(HIGH_RISK)
            assert parent["status"]["state"] == "input-required"
            child_id = await remote_task(risk_app, f"{parent['contextId']}::risk")
            switch.silent = True  # from now on the child accepts and never answers

            await cancel(h, parent["id"])
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert f"child agent 'risk' ({url}): task {child_id} not canceled: did not answer within " \
        "0.5 s" in warnings
