"""``POST /`` answered past Starlette's router (llamon_agent/server/direct_rpc.py)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from asgi_lifespan import LifespanManager
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from llamon_agent import create_app
from llamon_agent.server.auth_middleware import AuthMiddleware
from llamon_agent.server.direct_rpc import DirectRpc
from llamon_agent.server.quotas import Quotas
from llamon_agent.server.rate_limit import RateLimit
from tests.conftest import rpc, send_params


async def _root(request: Request) -> Response:
    return Response(b"routed")


def _direct() -> tuple[DirectRpc, list[str], Route]:
    seen: list[str] = []

    async def inner(scope: Any, receive: Any, send: Any) -> None:
        seen.append(f"inner {scope.get('method')} {scope.get('path')}")

    async def endpoint(request: Request) -> Response:
        seen.append(f"endpoint {request.method} {request.url.path}")
        return Response(b"direct", media_type="application/json")

    route = Route("/", _root, methods=["GET", "POST"])
    return DirectRpc(inner, route=route, endpoint=endpoint), seen, route


async def _call(app: Any, scope: dict[str, Any]) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(scope, receive, send)
    return sent


def _scope(method: str, path: str, root_path: str = "", kind: str = "http") -> dict[str, Any]:
    return {"type": kind, "method": method, "path": path, "root_path": root_path,
            "headers": [], "query_string": b"", "scheme": "http",
            "server": ("127.0.0.1", 8000)}


async def test_post_slash_goes_to_the_endpoint_with_what_the_router_leaves() -> None:
    direct, seen, route = _direct()
    scope = _scope("POST", "/")
    sent = await _call(direct, scope)
    assert seen == ["endpoint POST /"]
    assert [m["type"] for m in sent] == ["http.response.start", "http.response.body"]
    assert sent[1]["body"] == b"direct"
    assert scope["route"] is route
    assert scope["endpoint"] is _root
    assert scope["path_params"] == {}


@pytest.mark.parametrize(("method", "path", "root_path", "kind"), [
    ("GET", "/", "", "http"),
    ("HEAD", "/", "", "http"),
    ("POST", "/tasks", "", "http"),
    ("POST", "//", "", "http"),
    ("POST", "/api/", "/api", "http"),  # mounted below /: the router strips the root path
    ("GET", "/", "", "websocket"),
])
async def test_everything_else_goes_the_usual_way(method: str, path: str, root_path: str,
                                                  kind: str) -> None:
    direct, seen, _ = _direct()
    scope = _scope(method, path, root_path, kind)
    await _call(direct, scope)
    assert seen == [f"inner {method} {path}"]
    assert "route" not in scope


def test_it_sits_last_after_authentication_and_the_rate_limit() -> None:
    from app.main import AGENTS

    app = create_app(AGENTS, db=":memory:", api_keys={"alice": "secret-key"},
                     quotas=Quotas(requests_per_second=5.0))
    classes = [m.cls for m in app.user_middleware]
    assert classes[-1] is DirectRpc
    assert classes.index(AuthMiddleware) < classes.index(RateLimit) < classes.index(DirectRpc)


async def test_a_call_without_a_key_is_still_refused() -> None:
    from app.main import AGENTS

    app = create_app(AGENTS, db=":memory:", api_keys={"alice": "secret-key"})
    async with LifespanManager(app) as manager, httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app), base_url="http://t") as http:
        refused = await http.post("/", json=rpc("message/send", send_params("hi")))
        allowed = await http.post("/", json=rpc("message/send", send_params("hi")),
                                  headers={"X-API-Key": "secret-key"})
    assert refused.status_code == 401
    assert allowed.status_code == 200
    assert allowed.json()["result"]["kind"] == "task"


async def test_an_app_mounted_below_slash_still_answers_json_rpc() -> None:
    from app.main import AGENTS

    app = create_app(AGENTS, db=":memory:")
    async with LifespanManager(app) as manager, httpx.AsyncClient(
            transport=httpx.ASGITransport(app=manager.app, root_path="/a2a"),
            base_url="http://t") as http:
        answer = await http.post("/a2a/", json=rpc("message/send", send_params("hi")))
        wrong = await http.put("/a2a/", json={})
    assert answer.status_code == 200
    assert answer.json()["result"]["kind"] == "task"
    assert wrong.status_code == 405
