"""Two authenticated principals on one in-process server, over HTTP (ASGI), and the agents the
isolation tests need besides the example ones."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Annotated, Any, TypedDict

import httpx
from asgi_lifespan import LifespanManager
from langchain_core.messages import AnyMessage
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

from llamon_agent import Agent, create_app
from llamon_agent.runtime.tasks import TaskManager
from tests.conftest import A2AClient, assert_valid, served_on

KEYS = {"alice": "key-a", "bob": "key-b"}
ALICE = {"X-API-Key": "key-a"}
BOB = {"X-API-Key": "key-b"}


@dataclass
class Pair:
    """``alice`` and ``bob``: the same server, each client sending its own key."""

    alice: A2AClient
    bob: A2AClient
    app: Any

    @property
    def manager(self) -> TaskManager:
        return self.app.state.manager


@asynccontextmanager
async def two_principals(agents: Sequence[Agent], **kwargs: Any) -> AsyncIterator[Pair]:
    """``create_app(agents, api_keys=KEYS, **kwargs)`` with one client per key; storage and
    events are the ``backend`` fixture's when the test uses it, else in memory."""
    for name, value in served_on().items():
        kwargs.setdefault(name, value)
    app = create_app(list(agents), api_keys=KEYS, **kwargs)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)

        def client(headers: dict[str, str]) -> httpx.AsyncClient:
            return httpx.AsyncClient(transport=transport, base_url="http://testserver",
                                     headers=headers, timeout=30)

        async with client(ALICE) as alice, client(BOB) as bob:
            yield Pair(A2AClient(alice), A2AClient(bob), app)


def random_id() -> str:
    return str(uuid.uuid4())


def replaced(value: Any, old: str, new: str) -> Any:
    """``value`` with every occurrence of ``old`` in its JSON replaced by ``new``."""
    return json.loads(json.dumps(value, ensure_ascii=False).replace(old, new))


def mentions(value: Any, text: str) -> bool:
    return text in json.dumps(value, ensure_ascii=False)


async def answer(client: A2AClient, method: str, params: Any,
                 request_id: str | int = "r") -> dict[str, Any]:
    """The whole JSON-RPC response of one call: the body, or a stream's events (for a stream
    that failed, its one error event)."""
    if method in ("message/stream", "tasks/resubscribe"):
        events = await client.stream(method, params, request_id)
        return {"events": [e["data"] for e in events]}
    body = await client.call(method, params, request_id)
    return {"body": body}


def error_of(response: dict[str, Any]) -> dict[str, Any]:
    """The JSON-RPC error envelope of ``answer``'s result (a stream: its only event)."""
    if "events" in response:
        assert len(response["events"]) == 1, response
        body = response["events"][0]
    else:
        body = response["body"]
    assert "error" in body, body
    assert_valid("JSONRPCErrorResponse", body)
    return body


def texts(message: dict[str, Any]) -> list[str]:
    return [p["text"] for p in message["parts"] if p["kind"] == "text"]


def result_data(task: dict[str, Any]) -> list[Any]:
    return [p["data"] for a in task.get("artifacts") or [] for p in a["parts"]
            if p["kind"] == "data"]


def context_ids(task: dict[str, Any]) -> set[str]:
    """Every ``contextId`` a task shows: its own, its status message's, its history's."""
    found = {task["contextId"]}
    if task["status"].get("message"):
        found.add(task["status"]["message"]["contextId"])
    found.update(m["contextId"] for m in task.get("history") or [] if "contextId" in m)
    return found


# ---------------------------------------------------------------- agents


class EchoState(TypedDict, total=False):
    messages: Annotated[list[AnyMessage], add_messages]
    thread_id: str
    result: dict[str, Any]


def echo_agent() -> Agent:
    """Completes at once with the ``thread_id`` its graph saw."""

    async def echo(state: EchoState) -> dict[str, Any]:
        return {"result": {"thread_id": state["thread_id"]}}

    graph = StateGraph(EchoState)
    graph.add_node("echo", echo)
    graph.add_edge(START, "echo")
    graph.add_edge("echo", END)
    return Agent("echo", graph)


@dataclass
class Gate:
    """A turn whose text is ``wait`` runs until ``release`` is set; any other text completes."""

    entered: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)

    def agent(self) -> Agent:
        async def run(state: EchoState) -> dict[str, Any]:
            text = str(state["messages"][-1].content)
            if text == "wait":
                self.entered.set()
                await self.release.wait()
            return {"result": {"text": text, "thread_id": state["thread_id"]}}

        graph = StateGraph(EchoState)
        graph.add_node("run", run)
        graph.add_edge(START, "run")
        graph.add_edge("run", END)
        return Agent("gate", graph)

