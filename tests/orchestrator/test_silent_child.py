"""Remote children that never answer (issue 12): the parent fails within the child's configured
timeout (``RemoteAgent(..., timeout=...)``), with a message that names the child.

Each child is a real socket in the test's event loop (``child_servers.py``): a server that
accepts and never answers, one that never accepts, a stream that falls silent, a child that does
not stream and answers a blocking send late or never. ``EVENTUALLY`` is far below every default
(60 s before a stream's first event), so a parent that ends inside it ended by the configured
bound, without asserting how fast.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from llamon_agent import Agent
from llamon_agent.orchestrator import ChildTimeouts, Orchestrator, RemoteAgent
from tests.orchestrator.child_servers import (
    QUIET_CANCELS,
    answer_low_risk,
    never_answer,
    no_streaming_app,
    quiet_stream_app,
    relay,
    silent_app,
    trickle,
    unreachable_port,
    uvicorn_url,
)
from tests.orchestrator.helpers import artifact_data, serve_app
from tests.process.conftest import _free_port

pytestmark = pytest.mark.usefixtures("backend")

EVENTUALLY = 20.0
REQUEST = {"applicant": "Kim"}


def parent(url: str, timeout: ChildTimeouts | float) -> list[Agent]:
    return [Orchestrator("front", relay, children=[RemoteAgent("kyc", url, timeout=timeout)])]


async def send_front(agents: list[Agent]) -> dict[str, Any]:
    async with serve_app(agents) as h:
        return await asyncio.wait_for(h.client.send(data=REQUEST, agent_id="front"), EVENTUALLY)


def failed_with(text: str) -> dict[str, Any]:
    return {"state": "failed", "parts": [{"kind": "text", "text": f"The agent failed: {text}"}]}


def outcome(task: dict[str, Any]) -> dict[str, Any]:
    status = task["status"]
    return {"state": status["state"], "parts": status["message"]["parts"]}


async def test_a_child_that_accepts_and_never_answers_fails_its_parent_naming_it() -> None:
    async with uvicorn_url(silent_app) as url:
        task = await send_front(parent(url, 0.5))
    assert outcome(task) == failed_with(
        f"ChildFailedError: child agent 'kyc' ({url}) did not answer within 0.5 s"
    )


async def test_a_child_that_never_accepts_fails_its_parent_by_the_connect_timeout() -> None:
    with unreachable_port() as url:
        task = await send_front(parent(url, ChildTimeouts(connect=0.5, send=60, quiet=60)))
    assert outcome(task) == failed_with(
        f"ChildFailedError: child agent 'kyc' ({url}) could not be reached within 0.5 s"
    )


async def test_a_closed_port_fails_the_parent_naming_the_child() -> None:
    url = f"http://127.0.0.1:{_free_port()}"  # nothing listens there
    task = await send_front(parent(url, 60))
    assert outcome(task) == failed_with(
        f"ChildFailedError: child agent 'kyc' ({url}) could not be reached"
    )


async def test_a_stream_that_goes_quiet_fails_its_parent_and_its_task_is_canceled() -> None:
    QUIET_CANCELS.clear()
    async with uvicorn_url(quiet_stream_app) as url:
        task = await send_front(parent(url, ChildTimeouts(connect=5, send=60, quiet=0.5)))
    assert outcome(task) == failed_with(
        f"ChildFailedError: child agent 'kyc' ({url}) went quiet: no event for 0.5 s"
    )
    assert len(QUIET_CANCELS) == 1  # the child's task (named by its first event) is canceled


async def test_a_child_that_does_not_stream_gets_a_blocking_send() -> None:
    async with uvicorn_url(no_streaming_app(answer_low_risk)) as url:
        task = await send_front(parent(url, 5))
    assert task["status"]["state"] == "completed"
    assert artifact_data(task) == [{"risk": "low"}]


@pytest.mark.parametrize("answer", [never_answer, trickle], ids=["silent", "trickling"])
async def test_a_blocking_send_is_bounded_as_a_whole(answer: Any) -> None:
    """A child that trickles a byte every 50 ms never trips a read timeout: the send's own
    deadline ends it."""
    async with uvicorn_url(no_streaming_app(answer)) as url:
        task = await send_front(parent(url, ChildTimeouts(connect=5, send=0.5, quiet=60)))
    assert outcome(task) == failed_with(
        f"ChildFailedError: child agent 'kyc' ({url}) did not answer within 0.5 s"
    )
