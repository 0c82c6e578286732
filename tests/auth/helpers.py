"""Shared values of the authentication tests: keys, the refusal every protected request gets
without a valid credential, and an in-process server over HTTP (httpx + ASGI lifespan)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
from asgi_lifespan import LifespanManager
from starlette.applications import Starlette

from llamon_agent import create_app
from llamon_agent.settings import Settings
from tests.conftest import rpc, send_params, served_on

ALICE_KEY = "alice-key-6f1c0d2e9b8a"
BOB_KEY = "bob-key-3a9d7e5c1f20"
KEYS = {"alice": ALICE_KEY, "bob": BOB_KEY}
UNAUTHORIZED = {"detail": "unauthorized"}
KEYS_CHALLENGE = 'Bearer realm="llamon", ApiKey header="X-API-Key"'
BEARER_CHALLENGE = 'Bearer realm="llamon"'
#: the only headers of a refusal (in process, where no ASGI server adds its own)
REFUSAL_HEADERS = {"content-type", "content-length", "www-authenticate"}


def agents() -> list[Any]:
    from app.main import AGENTS

    return AGENTS


@asynccontextmanager
async def served(**kwargs: Any) -> AsyncIterator[tuple[httpx.AsyncClient, Starlette]]:
    """The example agents behind ``create_app(**kwargs)``; the environment is not read
    (``settings`` defaults to an empty ``Settings``), so a variable of the test run changes
    nothing. Storage and events are the ``backend`` fixture's when the test uses it."""
    for name, value in served_on().items():
        kwargs.setdefault(name, value)
    kwargs.setdefault("settings", Settings(db=":memory:"))
    app = create_app(agents(), **kwargs)
    async with LifespanManager(app) as manager:
        transport = httpx.ASGITransport(app=manager.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver",
                                     timeout=30) as http:
            yield http, app


def assert_refused(response: httpx.Response, challenge: str = KEYS_CHALLENGE,
                   *, in_process: bool = True) -> None:
    """401, the challenge, ``{"detail": "unauthorized"}`` and nothing else."""
    assert response.status_code == 401, (response.status_code, response.text)
    assert response.json() == UNAUTHORIZED
    assert response.content == b'{"detail":"unauthorized"}'
    assert response.headers["www-authenticate"] == challenge
    if in_process:
        assert set(response.headers) == REFUSAL_HEADERS


def message_send(text: str = "hello", **kw: Any) -> dict[str, Any]:
    return rpc("message/send", send_params(text, **kw))
