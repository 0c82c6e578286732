"""The authentication middleware on its own: the principal it leaves in the ASGI scope, and a
streamed answer passing through unbuffered."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from llamon_agent.auth import Authenticator, KeyTable
from llamon_agent.core.principal import Principal
from llamon_agent.server.auth_middleware import AuthMiddleware, is_public
from llamon_agent.server.principal import principal_of

from .helpers import ALICE_KEY, BOB_KEY, KEYS, assert_refused


async def echo_principal(scope: Scope, receive: Receive, send: Send) -> None:
    body = principal_of(scope).name.encode()
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain")]})
    await send({"type": "http.response.body", "body": body})


def client(app: Any) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t")


@pytest.mark.parametrize(("headers", "name"), [
    ({"X-API-Key": ALICE_KEY}, "alice"),
    ({"Authorization": f"Bearer {BOB_KEY}"}, "bob"),
    ({"X-API-Key": BOB_KEY, "Authorization": f"Bearer {ALICE_KEY}"}, "bob"),
])
async def test_the_principal_is_the_name_of_the_key(headers: dict[str, str], name: str) -> None:
    app = AuthMiddleware(echo_principal, Authenticator(api_keys=KeyTable(KEYS)))
    async with client(app) as http:
        response = await http.post("/", headers=headers)
    assert (response.status_code, response.text) == (200, name)


async def test_a_public_path_is_anonymous_even_with_a_key() -> None:
    """Public paths are not authenticated at all: what they serve is the same for everyone."""
    app = AuthMiddleware(echo_principal, Authenticator(api_keys=KeyTable(KEYS)))
    async with client(app) as http:
        response = await http.get("/.well-known/agent-card.json", headers={"X-API-Key": ALICE_KEY})
        assert response.text == "anonymous"
        assert_refused(await http.post("/.", headers={}))


@pytest.mark.parametrize(("method", "path", "public"), [
    ("GET", "/", True), ("HEAD", "/", True), ("POST", "/", False), ("PUT", "/", False),
    ("GET", "/healthz", True), ("POST", "/readyz", True), ("GET", "/metrics", True),
    ("GET", "/hitl/openapi.json", True), ("GET", "/hitl/openapi.json/", False),
    ("POST", "/hitl/chat", False), ("POST", "/hitl/review", False), ("GET", "/hitl", False),
    ("GET", "/reviews", True), ("POST", "/reviews/x/decision", True),
    ("GET", "/reviewsx", False), ("GET", "/favicon.ico", False), ("GET", "", False),
    ("GET", "/.well-known/agent-card.json", True), ("GET", "/.well-known/other", False),
])
def test_public_paths_are_named_and_everything_else_is_protected(
    method: str, path: str, public: bool
) -> None:
    assert is_public(method, path) is public


async def test_a_streamed_answer_is_not_buffered() -> None:
    """Each part the app sends reaches the server at once: the first part arrives while the app
    still holds the second back (a buffering middleware would deliver nothing until the end)."""
    release = asyncio.Event()

    async def streaming(scope: Scope, receive: Receive, send: Send) -> None:
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"first", "more_body": True})
        await release.wait()
        await send({"type": "http.response.body", "body": b"second"})

    sent: list[Message] = []
    first = asyncio.Event()

    async def send(message: Message) -> None:
        sent.append(message)
        if message.get("body") == b"first":
            first.set()

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": "POST", "path": "/", "headers": [
        (b"x-api-key", ALICE_KEY.encode())]}
    app = AuthMiddleware(streaming, Authenticator(api_keys=KeyTable(KEYS)))
    running = asyncio.create_task(app(scope, receive, send))
    await asyncio.wait_for(first.wait(), 5)
    assert [m.get("body") for m in sent] == [None, b"first"]
    release.set()
    await asyncio.wait_for(running, 5)
    assert [m.get("body") for m in sent] == [None, b"first", b"second"]


async def test_the_verifier_sees_the_request_headers() -> None:
    seen: list[Mapping[str, str]] = []

    async def verifier(headers: Mapping[str, str]) -> Principal | None:
        seen.append(dict(headers))
        return Principal("carol") if headers.get("x-user") == "carol" else None

    app = AuthMiddleware(echo_principal, Authenticator(verifier=verifier))
    async with client(app) as http:
        response = await http.post("/", headers={"X-User": "carol"})
        assert response.text == "carol"
        assert_refused(await http.post("/", headers={"X-User": "dave"}), 'Bearer realm="llamon"')
    assert seen[0]["x-user"] == "carol"


async def test_a_websocket_is_closed_before_it_reaches_the_app() -> None:
    """No route serves WebSockets; under an ASGI server that speaks them, none gets past."""
    sent: list[Message] = []
    reached: list[Scope] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        reached.append(scope)

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "websocket.connect"}

    scope = {"type": "websocket", "path": "/", "headers": [(b"x-api-key", ALICE_KEY.encode())]}
    await AuthMiddleware(app, Authenticator(api_keys=KeyTable(KEYS)))(scope, receive, send)
    assert (sent, reached) == ([{"type": "websocket.close", "code": 1008}], [])
