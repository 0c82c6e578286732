"""Push notification tests: a webhook receiver served by a real uvicorn over a real socket, a
clock the tests move, a one-question agent, and wire shortcuts.

The receiver is an ASGI app in the test's event loop, served by ``uvicorn.Server`` on
``127.0.0.1`` (a port the OS picks): a delivery is a real HTTP POST over TCP, parsed by uvicorn's
h11, exactly as a remote receiver would get it.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, TypedDict

import uvicorn
from langgraph.graph import END, START, StateGraph

from llamon_agent import Agent
from llamon_agent.core.hitl import HITLInterrupt
from tests.conftest import A2AClient, assert_valid, send_params
from tests.orchestrator.helpers import Harness, serve_app

QUESTION = "Ship the order?"
#: a generous bound for something that happens at once (a background attempt, a served
#: request); never a timing assertion: a test that reaches it has failed for another reason
EVENTUALLY = 10.0


class Clock:
    """The server's clock (``create_app(clock=...)``): still until a test moves it."""

    def __init__(self) -> None:
        self.moment = datetime(2026, 1, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.moment

    def advance(self, seconds: float) -> None:
        self.moment += timedelta(seconds=seconds)


# ----------------------------------------------------------------------------- the agent


class OrderState(TypedDict, total=False):
    thread_id: str
    ship: str
    result: dict[str, Any]


async def ask_ship(state: OrderState) -> dict[str, Any] | HITLInterrupt:
    if state.get("ship"):
        return {}
    return HITLInterrupt({"question": QUESTION}, thread_id=state["thread_id"], key="ship")


async def finish(state: OrderState) -> dict[str, Any]:
    return {"result": {"ship": state.get("ship")}}


def order_agent() -> Agent:
    """One question, then a result: ``input-required``, then ``completed``."""
    graph: StateGraph[Any, Any, Any, Any] = StateGraph(OrderState)
    graph.add_node("ask_ship", ask_ship)
    graph.add_node("finish", finish)
    graph.add_edge(START, "ask_ship")
    graph.add_edge("ask_ship", "finish")
    graph.add_edge("finish", END)
    return Agent("orders", graph, name="Orders", description="asks once, then completes")


# ----------------------------------------------------------------------------- the receiver


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: Any


@dataclass
class Receiver:
    """What the receiver answers, in order: ``statuses`` (then 200 for ever; ``None``: take the
    request and never answer it, until the test ends); ``hang`` answers none of them."""

    statuses: list[int | None] = field(default_factory=list)
    hang: bool = False
    url: str = ""
    received: list[Received] = field(default_factory=list)
    _arrived: asyncio.Condition = field(default_factory=asyncio.Condition)
    _release: asyncio.Event = field(default_factory=asyncio.Event)

    def hook(self, path: str = "/hook") -> str:
        return self.url + path

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        chunks = []
        while True:
            message = await receive()
            chunks.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        raw = b"".join(chunks)
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        body: Any = json.loads(raw) if raw else None
        async with self._arrived:
            self.received.append(Received(scope["path"], headers, body))
            self._arrived.notify_all()
        status = self.statuses.pop(0) if self.statuses else 200
        if self.hang or status is None:
            await self._release.wait()
            return
        extra = [(b"location", self.hook("/elsewhere").encode())] if 300 <= status < 400 else []
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"text/plain"), *extra]})
        await send({"type": "http.response.body", "body": b"ok"})

    async def wait_for(self, count: int) -> list[Received]:
        """The first ``count`` requests, once they have arrived."""
        async with asyncio.timeout(EVENTUALLY), self._arrived:
            await self._arrived.wait_for(lambda: len(self.received) >= count)
        return self.received[:count]

    def bodies(self) -> list[Any]:
        return [r.body for r in self.received]

    def states(self) -> list[str]:
        return [r.body["status"]["state"] for r in self.received]


@asynccontextmanager
async def receiving(statuses: Sequence[int | None] = (), *, hang: bool = False
                    ) -> AsyncIterator[Receiver]:
    receiver = Receiver(list(statuses), hang)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    receiver.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    config = uvicorn.Config(receiver, log_level="warning", lifespan="off",
                            timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(EVENTUALLY):
            while not server.started:
                await asyncio.sleep(0.01)
        yield receiver
    finally:
        receiver._release.set()
        server.should_exit = True
        await serving
        sock.close()


# ----------------------------------------------------------------------------- the server


@asynccontextmanager
async def push_server(agents: Sequence[Agent] | None = None, **kwargs: Any
                      ) -> AsyncIterator[Harness]:
    """``create_app`` in process over ASGI (the ``backend`` fixture's storage when the test
    uses it), private webhook targets allowed (the receiver is on loopback) unless the test
    says otherwise, and no periodic sweep."""
    kwargs.setdefault("push_allow_private", True)
    kwargs.setdefault("sweep_every", 3600)  # the tests sweep (``sweep``): at start, then never
    async with serve_app(list(agents or [order_agent()]), **kwargs) as harness:
        yield harness


def push_of(harness: Any) -> Any:
    """The server's push notifications (``app.state.push``) of a ``Harness`` or a ``Pair``."""
    return harness.app.state.push


async def sweep(harness: Harness) -> None:
    """One sweep of the server (push retries, reconciliation), then every attempt it started
    has ended. Attempts in flight end first: a test that moved the clock past their claim's
    lease would otherwise see them claimed again (a real attempt ends long before that)."""
    await push_of(harness).settle()
    await harness.manager.sweeper.sweep_once()
    await push_of(harness).settle()


def config(url: str, **fields: Any) -> dict[str, Any]:
    return {"url": url, **fields}


async def set_config(client: A2AClient, task_id: str, push: dict[str, Any],
                     request_id: str | int = "set") -> dict[str, Any]:
    body = await client.call("tasks/pushNotificationConfig/set",
                             {"taskId": task_id, "pushNotificationConfig": push}, request_id)
    assert "error" not in body, body
    assert_valid("SetTaskPushNotificationConfigSuccessResponse", body)
    result: dict[str, Any] = body["result"]
    return result


async def start_order(client: A2AClient, push: dict[str, Any] | None = None,
                      **kw: Any) -> dict[str, Any]:
    """A new order task, waiting for its answer (``input-required``)."""
    configuration = {"pushNotificationConfig": push} if push is not None else None
    body = await client.call("message/send", send_params("order 7", configuration=configuration,
                                                         **kw), "start")
    assert "error" not in body, body
    assert_valid("SendMessageSuccessResponse", body)
    task: dict[str, Any] = body["result"]
    assert task["status"]["state"] == "input-required", task["status"]
    return task


async def answer(client: A2AClient, task: dict[str, Any], text: str = "yes") -> dict[str, Any]:
    done = await client.send(text, context_id=task["contextId"], task_id=task["id"])
    assert done["status"]["state"] == "completed", done["status"]
    return done
