"""``/healthz`` and ``/readyz`` over HTTP: before the lifespan, while serving, with a store that
does not answer, after shutdown; public even when authentication is on."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager
from langgraph.checkpoint.memory import InMemorySaver

from llamon_agent import Agent, create_app
from llamon_agent.stores.memory import InMemoryTaskStore
from tests.conftest import serve

#: runs on both backends: in process, and PostgreSQL + Redis as replicas run
pytestmark = pytest.mark.usefixtures("backend")

NOT_STARTED = {"status": "unavailable", "reason": "starting: storage and recovery not done"}


def _client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                             base_url="http://testserver")


async def _get(http: httpx.AsyncClient, path: str) -> tuple[int, object]:
    response = await http.get(path)
    assert response.headers["content-type"] == "application/json"
    assert response.headers["cache-control"] == "no-store"
    return response.status_code, response.json()


async def test_ready_only_between_startup_and_shutdown(example_agents: list[Agent]) -> None:
    app = create_app(example_agents, db=":memory:")
    async with _client(app) as http:
        assert await _get(http, "/healthz") == (200, {"status": "ok"})
        assert await _get(http, "/readyz") == (503, NOT_STARTED)
        async with LifespanManager(app):  # storage opened, recovery done
            assert await _get(http, "/readyz") == (200, {"status": "ok"})
            assert await _get(http, "/healthz") == (200, {"status": "ok"})
        assert await _get(http, "/readyz") == (503, {"status": "unavailable",
                                                     "reason": "stopping"})


class _Unreachable(InMemoryTaskStore):
    down = False

    async def ping(self) -> None:
        if self.down:
            raise OSError("database is locked")


async def test_not_ready_while_the_store_does_not_answer(example_agents: list[Agent]) -> None:
    store = _Unreachable()
    async with serve(example_agents, task_store=store, checkpointer=InMemorySaver()) as client:
        assert await _get(client.http, "/readyz") == (200, {"status": "ok"})
        store.down = True
        assert await _get(client.http, "/readyz") == (
            503, {"status": "unavailable", "reason": "storage unreachable"}
        )
        assert await _get(client.http, "/healthz") == (200, {"status": "ok"})  # still serving
        store.down = False
        assert await _get(client.http, "/readyz") == (200, {"status": "ok"})


async def test_ready_on_a_sqlite_file(example_agents: list[Agent], tmp_path: object) -> None:
    async with serve(example_agents, db=f"{tmp_path}/llamon.sqlite3") as client:
        assert await _get(client.http, "/readyz") == (200, {"status": "ok"})


async def test_health_landing_and_metrics_stay_public_with_api_keys(
    example_agents: list[Agent],
) -> None:
    async with serve(example_agents, api_keys={"alice": "alice-key-0123456789"}) as client:
        for path in ("/healthz", "/readyz", "/", "/metrics", "/.well-known/agent-card.json"):
            response = await client.http.get(path)
            assert response.status_code == 200, (path, response.text)
        response = await client.http.post("/", json={"jsonrpc": "2.0", "id": 1,
                                                     "method": "tasks/get",
                                                     "params": {"id": "x"}})
        assert response.status_code == 401  # the JSON-RPC endpoint is not
