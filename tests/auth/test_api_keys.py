"""API keys over HTTP (issue 10): every protected method and endpoint refuses a missing or wrong
key with 401 and nothing else; ``X-API-Key`` and ``Authorization: Bearer`` both work; the public
paths stay public."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from llamon_agent.server.jsonrpc import _KNOWN as KNOWN_METHODS
from tests.conftest import rpc, send_params

from .helpers import ALICE_KEY, BOB_KEY, KEYS, assert_refused, message_send, served

_PARAMS: dict[str, Any] = {
    "message/send": send_params("hello", context_id="c-1"),
    "message/stream": send_params("hello", context_id="c-1"),
    "tasks/get": {"id": "t-1"},
    "tasks/cancel": {"id": "t-1"},
    "tasks/resubscribe": {"id": "t-1"},
    "tasks/pushNotificationConfig/set": {
        "taskId": "t-1", "pushNotificationConfig": {"url": "https://example.test/hook"},
    },
    "tasks/pushNotificationConfig/get": {"id": "t-1"},
    "tasks/pushNotificationConfig/list": {"id": "t-1"},
    "tasks/pushNotificationConfig/delete": {"id": "t-1", "pushNotificationConfigId": "p"},
    "agent/getAuthenticatedExtendedCard": None,
}


def test_every_method_the_server_knows_is_listed_here() -> None:
    assert set(_PARAMS) == set(KNOWN_METHODS)


#: (method, path, JSON body): every JSON-RPC method, both /hitl endpoints, and what a
#: protected path answers when nothing else matches (an unknown path, a wrong method)
PROTECTED: list[tuple[str, str, Any]] = [
    *(("POST", "/", rpc(method, params)) for method, params in sorted(_PARAMS.items())),
    ("POST", "/", {"not": "json-rpc"}),
    ("POST", "/hitl/chat", {"message": "Send an email to bob@example.com"}),
    ("POST", "/hitl/review", {"thread_id": "c-1", "decisions": [{"type": "approve"}]}),
    ("GET", "/hitl/chat", None),
    ("DELETE", "/", None),
    ("GET", "/no/such/path", None),
]
_IDS = [f"{m} {p} {b.get('method', '') if isinstance(b, dict) else ''}".strip()
        for m, p, b in PROTECTED]

WRONG: list[dict[str, str]] = [
    {},
    {"X-API-Key": "wrong"},
    {"X-API-Key": ""},
    {"X-API-Key": ALICE_KEY[:-1]},
    {"X-API-Key": ALICE_KEY + "x"},
    {"X-API-Key": ALICE_KEY.upper()},
    {"X-API-Key": f"Bearer {ALICE_KEY}"},
    {"Authorization": "Bearer wrong"},
    {"Authorization": "Bearer"},
    {"Authorization": "Bearer "},
    {"Authorization": ALICE_KEY},
    {"Authorization": f"Basic {ALICE_KEY}"},
    {"Authorization": f"Token {ALICE_KEY}"},
    {"Authorization": f"Bearer {ALICE_KEY} {BOB_KEY}"},
    {"X-Api-Key-Extra": ALICE_KEY},
    {"Cookie": f"X-API-Key={ALICE_KEY}"},
]
_WRONG_IDS = [repr(h) for h in WRONG]


async def _call(http: httpx.AsyncClient, method: str, path: str, body: Any,
                headers: dict[str, str]) -> httpx.Response:
    return await http.request(method, path, json=body, headers=headers)


@pytest.mark.parametrize(("method", "path", "body"), PROTECTED, ids=_IDS)
async def test_a_missing_or_wrong_key_is_refused_with_401_and_nothing_else(
    method: str, path: str, body: Any
) -> None:
    async with served(api_keys=KEYS) as (http, _):
        for headers in WRONG:
            assert_refused(await _call(http, method, path, body, headers))


@pytest.mark.parametrize("headers", WRONG, ids=_WRONG_IDS)
@pytest.mark.usefixtures("backend")
async def test_a_refused_message_starts_nothing(headers: dict[str, str]) -> None:
    """The refused send reached no agent: the server stored no task."""
    async with served(api_keys=KEYS) as (http, app):
        assert_refused(await http.post("/", json=message_send(context_id="c-9"),
                                       headers=headers))
        store = app.state.manager._store
        assert await store.count_by_state() == {}


@pytest.mark.parametrize("headers", [
    {"X-API-Key": ALICE_KEY},
    {"Authorization": f"Bearer {ALICE_KEY}"},
    {"Authorization": f"bearer {ALICE_KEY}"},
    {"Authorization": f"BEARER   {ALICE_KEY}"},
    {"X-API-Key": "wrong", "Authorization": f"Bearer {ALICE_KEY}"},
    {"X-API-Key": BOB_KEY},
], ids=["x-api-key", "bearer", "bearer-lowercase", "bearer-spaces", "wrong-header-right-bearer",
        "bob"])
@pytest.mark.usefixtures("backend")
async def test_a_right_key_is_served(headers: dict[str, str]) -> None:
    async with served(api_keys=KEYS) as (http, _):
        response = await http.post("/", json=message_send(), headers=headers)
        assert response.status_code == 200
        body = response.json()
        assert "error" not in body, body
        assert body["result"]["kind"] == "task"
        chat = await http.post("/hitl/chat", json={"message": "hello"}, headers=headers)
        assert chat.status_code == 200, chat.text
        assert chat.json()["thread_id"]
        async with http.stream("POST", "/", json=rpc("message/stream", send_params("hi")),
                               headers=headers) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            assert b"data:" in await stream.aread()


PUBLIC = [
    ("GET", "/.well-known/agent-card.json"),
    ("GET", "/.well-known/agent.json"),
    ("GET", "/"),
    ("HEAD", "/"),
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/hitl/openapi.json"),
]


@pytest.mark.parametrize(("method", "path"), PUBLIC, ids=[f"{m} {p}" for m, p in PUBLIC])
@pytest.mark.usefixtures("backend")
async def test_the_cards_docs_landing_page_and_health_stay_public(method: str, path: str) -> None:
    async with served(api_keys=KEYS) as (http, _):
        response = await http.request(method, path)
        assert response.status_code != 401
        assert "www-authenticate" not in response.headers
    if path.startswith("/.well-known/") or path == "/hitl/openapi.json":
        assert response.status_code == 200


@pytest.mark.usefixtures("backend")
async def test_the_reviewer_endpoints_keep_their_own_credential() -> None:
    """``/reviews`` is not behind the API keys: an API key is not a reviewer token, and the
    reviewer token alone is enough there."""
    async with served(api_keys=KEYS, reviewer_token="rt-1") as (http, _):
        refused = await http.get("/reviews", headers={"X-API-Key": ALICE_KEY,
                                                      "Authorization": f"Bearer {ALICE_KEY}"})
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == 'Bearer realm="llamon-reviewers"'
        ok = await http.get("/reviews", headers={"Authorization": "Bearer rt-1"})
        assert ok.status_code == 200
        assert ok.json() == {"reviews": [], "nextPageToken": ""}


@pytest.mark.usefixtures("backend")
async def test_without_authentication_every_caller_is_served_as_before() -> None:
    """No keys configured: no middleware, the README's curl examples keep working."""
    async with served() as (http, app):
        assert app.state.authentication is None
        response = await http.post("/", json=message_send())
        assert response.status_code == 200
        assert "error" not in response.json()
        card = (await http.get("/.well-known/agent-card.json")).json()
        assert "securitySchemes" not in card and "security" not in card


@pytest.mark.usefixtures("backend")
async def test_keys_from_the_environment_protect_the_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``LLAMON_API_KEYS`` (read by ``create_app`` when no ``settings`` are given)."""
    monkeypatch.setenv("LLAMON_API_KEYS", f"alice={ALICE_KEY}, bob={BOB_KEY},")
    async with served(settings=None) as (http, app):
        assert app.state.authentication == "API keys (2 principals)"
        assert_refused(await http.post("/", json=message_send()))
        ok = await http.post("/", json=message_send(), headers={"X-API-Key": BOB_KEY})
        assert ok.status_code == 200 and "result" in ok.json()
