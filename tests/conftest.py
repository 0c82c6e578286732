"""Shared test helpers: an in-process server over HTTP, wire builders, schema validation."""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager

from llamon_agent import Agent, create_app
from llamon_agent.a2a import task_json
from llamon_agent.backends.coordination import Coordination, open_coordination
from llamon_agent.backends.events_url import parse_events_url
from llamon_agent.core.ports import HumanReviewPort
from llamon_agent.runtime.tasks import TaskManager
from llamon_agent.settings import DEFAULT_LEASE
from llamon_agent.stores import kept_tasks
from llamon_agent.stores.kept_tasks import KeptTasks
from llamon_agent.stores.storage import Storage, open_storage
from tests.backends import postgres_database, postgres_url  # noqa: F401 (fixtures)
from tests.backends_redis import (
    REDIS_URL,
    fresh_prefix,
    redis_prefix,  # noqa: F401 (fixtures)
)

ROOT = Path(__file__).resolve().parent.parent

# every cached task encoding the suite reaches is checked against a fresh one: a change that
# mutates a runtime's task in place fails where it is reached (llamon_agent/a2a/task_json.py)
task_json.VERIFY = True
# and every task the suite stores or reads is kept whatever its size, so that every decoding
# the kept object saves and every spliced encoding is checked too (llamon_agent/stores/
# kept_tasks.py; the server keeps only tasks of 16 KiB or more)
kept_tasks.KEPT = KeptTasks(min_bytes=1)

#: what ``serve`` opens when a test names none (the ``backend`` fixture changes it)
_SERVED_ON: dict[str, str] = {"db": ":memory:"}
BACKENDS = ("memory", "postgres+redis")


def served_on() -> dict[str, str]:
    """The ``create_app`` storage and events arguments of the test's ``backend``."""
    return dict(_SERVED_ON)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Iterator[str]:
    """Runs a test on both backends: in-process storage and events, then a fresh PostgreSQL
    schema with Redis events under a fresh key prefix, as replicas run (leased claims,
    takeover sweeps, the Redis publisher and cancel relay all in the path). A module opts in
    with ``pytestmark = pytest.mark.usefixtures("backend")``; ``serve`` picks it up."""
    with serving_on(request, request.param):
        yield request.param


@contextmanager
def serving_on(request: pytest.FixtureRequest, name: str, db: str | None = None,
               ) -> Iterator[None]:
    """While inside, ``serve`` uses backend ``name``: ``memory``, ``postgres+redis`` (a fresh
    schema and Redis prefix), or ``sqlite`` (the file ``db``)."""
    with ExitStack() as stack:
        if name == "sqlite":
            assert db is not None
            _SERVED_ON["db"] = db
        elif name == "postgres+redis":
            url = request.getfixturevalue("postgres_url")
            prefix = stack.enter_context(fresh_prefix())
            _SERVED_ON.update(db=url, events=f"{REDIS_URL}?prefix={prefix}")
        try:
            yield
        finally:
            _SERVED_ON.clear()
            _SERVED_ON["db"] = ":memory:"


def durable_db(tmp_path: Path, name: str = "llamon.sqlite3") -> str:
    """The database of a test that reopens it (a restart) or reads it past the server: the
    ``backend``'s PostgreSQL schema, which outlives every app of the test, else a SQLite file
    ``name`` in ``tmp_path``."""
    db = served_on()["db"]
    return db if db.startswith("postgresql") else str(tmp_path / name)


@dataclass
class OnBackend:
    """The ``backend``'s storage and replica parts, opened as ``create_app``'s lifespan opens
    them, for tests that drive a ``TaskManager`` without HTTP."""

    storage: Storage
    coordination: Coordination
    reviews: HumanReviewPort | None

    def manager(self, agents: Sequence[Agent], **kwargs: Any) -> TaskManager:
        """A ``TaskManager`` (not entered) wired to them, as ``create_app`` wires it."""
        parts = self.coordination
        return TaskManager(
            agents, self.storage, reviews=self.reviews, claims=parts.claims,
            publisher=parts.publisher, cancel_relay=parts.cancel_relay,
            takeover_every=parts.takeover_every, **kwargs,
        )


@asynccontextmanager
async def on_backend(db: str | None = None, *,
                     reviews: HumanReviewPort | None = None) -> AsyncIterator[OnBackend]:
    """``db`` (default: the ``backend``'s) with the ``backend``'s events; ``reviews`` is the
    managers' review port (``None``: none, as ``TaskManager``'s default)."""
    on = served_on()
    async with AsyncExitStack() as stack:
        storage = await stack.enter_async_context(open_storage(db or on["db"]))
        coordination = await stack.enter_async_context(open_coordination(
            storage, parse_events_url(on.get("events")), lease=DEFAULT_LEASE, reviews=reviews))
        yield OnBackend(storage, coordination, reviews)


#: the official A2A v0.3 JSON Schema, kept in the repository (tests/spec/SOURCE.md)
SCHEMA_PATH = ROOT / "tests" / "spec" / "a2a-v0.3.0.schema.json"


@cache
def _schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text())


def schema_errors(definition: str, instance: Any) -> list[str]:
    """Validation errors of ``instance`` against a definition of the official v0.3 schema."""
    from jsonschema import Draft7Validator

    schema = _schema()
    validator = Draft7Validator({**schema, "$ref": f"#/definitions/{definition}"})
    return sorted(f"{list(e.path)}: {e.message}" for e in validator.iter_errors(instance))


def assert_valid(definition: str, instance: Any) -> None:
    errors = schema_errors(definition, instance)
    assert errors == [], errors


def user_message(text: str | None = None, *, context_id: str | None = None,
                 task_id: str | None = None, data: dict[str, Any] | None = None,
                 message_id: str | None = None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if text is not None:
        parts.append({"kind": "text", "text": text})
    if data is not None:
        parts.append({"kind": "data", "data": data})
    message: dict[str, Any] = {
        "kind": "message",
        "messageId": message_id or str(uuid.uuid4()),
        "role": "user",
        "parts": parts,
    }
    if context_id is not None:
        message["contextId"] = context_id
    if task_id is not None:
        message["taskId"] = task_id
    return message


def rpc(method: str, params: Any, request_id: str | int = 1) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}


def send_params(text: str | None = None, *, agent_id: str | None = None,
                configuration: dict[str, Any] | None = None, **message: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"message": user_message(text, **message)}
    if agent_id is not None:
        params["metadata"] = {"agentId": agent_id}
    if configuration is not None:
        params["configuration"] = configuration
    return params


def parse_sse(raw: str) -> list[dict[str, Any]]:
    """SSE frames as ``{"id": str | None, "data": parsed JSON}``; comment lines are skipped."""
    events = []
    for frame in raw.split("\n\n"):
        event_id, data = None, []
        for line in frame.split("\n"):
            if line.startswith("id:"):
                event_id = line[3:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
        if data:
            events.append({"id": event_id, "data": json.loads("\n".join(data))})
    return events


class A2AClient:
    """A thin raw client: exact wire in, exact wire out."""

    def __init__(self, http: httpx.AsyncClient) -> None:
        self.http = http

    async def call(self, method: str, params: Any, request_id: str | int = 1) -> dict[str, Any]:
        response = await self.http.post("/", json=rpc(method, params, request_id))
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("application/json")
        return response.json()

    async def result(self, method: str, params: Any) -> dict[str, Any]:
        body = await self.call(method, params)
        assert "error" not in body, body
        return body["result"]

    async def send(self, text: str | None = None, **kw: Any) -> dict[str, Any]:
        return await self.result("message/send", send_params(text, **kw))

    async def stream(self, method: str, params: Any, request_id: str | int = 1,
                     headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
        async with self.http.stream("POST", "/", json=rpc(method, params, request_id),
                                    headers=headers or {}) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            raw = (await response.aread()).decode()
        assert "\r\n" not in raw
        return parse_sse(raw)


@asynccontextmanager
async def serve(agents: Sequence[Agent], **kwargs: Any) -> AsyncIterator[A2AClient]:
    """An in-process server; storage and events are the ``backend`` fixture's when the test
    uses it, else in memory."""
    for name, value in served_on().items():
        kwargs.setdefault(name, value)
    app = create_app(agents, **kwargs)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver",
                                     timeout=30) as http:
            yield A2AClient(http)


@pytest.fixture
def example_agents() -> list[Agent]:
    from app.main import AGENTS

    return AGENTS


@pytest.fixture
async def client(example_agents: list[Agent]) -> AsyncIterator[A2AClient]:
    async with serve(example_agents) as c:
        yield c


ServeFactory = Callable[..., Any]
