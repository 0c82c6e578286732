"""A verifier callback (``create_app(auth=...)``): the request headers in, a ``Principal`` or
``None`` out. Whatever goes wrong in it is a refusal, never a 500 and never ``anonymous``."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import pytest

from llamon_agent.core.principal import ANONYMOUS_PRINCIPAL, Principal

from .helpers import BEARER_CHALLENGE, assert_refused, message_send, served

SECRET = "s3cret-header-value"


async def by_header(headers: Mapping[str, str]) -> Principal | None:
    return Principal("carol") if headers.get("x-session") == SECRET else None


@pytest.mark.usefixtures("backend")
async def test_the_callback_decides_who_is_served() -> None:
    async with served(auth=by_header) as (http, app):
        assert app.state.authentication == "a verifier callback"
        ok = await http.post("/", json=message_send(), headers={"X-Session": SECRET})
        assert ok.status_code == 200 and "result" in ok.json()
        assert_refused(await http.post("/", json=message_send(), headers={"X-Session": "no"}),
                       BEARER_CHALLENGE)
        assert_refused(await http.post("/hitl/chat", json={"message": "hi"}), BEARER_CHALLENGE)


async def _raises(headers: Mapping[str, str]) -> Principal | None:
    raise RuntimeError("the session store is down")


async def _anonymous(headers: Mapping[str, str]) -> Principal | None:
    return ANONYMOUS_PRINCIPAL


async def _a_string(headers: Mapping[str, str]) -> Any:
    return "carol"


@pytest.mark.parametrize("callback", [_raises, _anonymous, _a_string],
                         ids=["raises", "returns-anonymous", "returns-a-string"])
async def test_a_callback_that_fails_refuses_and_tells_the_operator(
    callback: Callable[[Mapping[str, str]], Awaitable[Any]], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="llamon_agent.auth")
    async with served(auth=callback) as (http, _):
        response = await http.post("/", json=message_send(), headers={"X-Session": SECRET})
        assert_refused(response, BEARER_CHALLENGE)
    logged = [r for r in caplog.records if r.name.startswith("llamon_agent.auth")]
    assert len(logged) == 1 and "refused" in logged[0].getMessage()
    assert SECRET not in caplog.text
