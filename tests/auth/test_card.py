"""The agent card declares how to authenticate (A2A v0.3 ``securitySchemes``, ``security``),
and ``agent/getAuthenticatedExtendedCard`` serves the extended card to authenticated callers."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from llamon_agent.auth import CredentialConfigError, JWTSettings
from llamon_agent.core.principal import ANONYMOUS_PRINCIPAL, Principal
from tests.conftest import assert_valid, rpc

from .helpers import ALICE_KEY, BEARER_CHALLENGE, KEYS, assert_refused, served
from .jwks import AUDIENCE, ISSUER, IdentityProvider, identity_provider

API_KEY = {"type": "apiKey", "in": "header", "name": "X-API-Key",
           "description": "an API key in X-API-Key (or as a bearer token)"}
BEARER = {"type": "http", "scheme": "bearer"}
BEARER_JWT = {"type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
EXTENDED = {
    "name": "llamon-agent (partners)",
    "description": "The same agents, with the partner-only skill listed.",
    "version": "1.0.0",
    "skills": [{"id": "bulk-review", "name": "Bulk review", "description": "partners only",
                "tags": ["partners"]}],
}


@pytest.fixture
def idp() -> Iterator[IdentityProvider]:
    with identity_provider() as provider:
        yield provider


async def _card(**kwargs: Any) -> dict[str, Any]:
    async with served(**kwargs) as (http, _):
        card = (await http.get("/.well-known/agent-card.json")).json()
        assert (await http.get("/.well-known/agent.json")).json() == card
    assert_valid("AgentCard", card)
    return card


async def _nobody(headers: Mapping[str, str]) -> Principal | None:
    return None


async def test_api_keys_are_declared_as_an_api_key_header_or_a_bearer_token() -> None:
    card = await _card(api_keys=KEYS)
    assert card["securitySchemes"] == {"apiKey": API_KEY, "bearer": BEARER}
    assert card["security"] == [{"apiKey": []}, {"bearer": []}]
    assert card["supportsAuthenticatedExtendedCard"] is False


async def test_jwt_is_declared_as_a_jwt_bearer_token(idp: IdentityProvider) -> None:
    jwt = JWTSettings(jwks_url=idp.url, issuer=ISSUER, audience=AUDIENCE)
    card = await _card(jwt=jwt)
    assert card["securitySchemes"] == {"bearer": BEARER_JWT}
    assert card["security"] == [{"bearer": []}]
    both = await _card(jwt=jwt, api_keys=KEYS)
    assert both["securitySchemes"] == {"apiKey": API_KEY, "bearer": BEARER_JWT}
    assert both["security"] == [{"apiKey": []}, {"bearer": []}]


async def test_without_authentication_the_card_declares_nothing_of_its_own() -> None:
    card = await _card()
    assert "securitySchemes" not in card and "security" not in card


async def test_a_callback_declares_a_bearer_token_unless_the_card_file_says_more() -> None:
    card = await _card(auth=_nobody)
    assert card["securitySchemes"] == {"bearer": BEARER}
    assert card["security"] == [{"bearer": []}]
    mtls = {"mtls": {"type": "mutualTLS", "description": "client certificates at the proxy"}}
    template = {"name": "x", "description": "d", "version": "1.0.0", "skills": [],
                "securitySchemes": mtls, "security": [{"mtls": []}]}
    own = await _card(auth=_nobody, card=template)
    assert own["securitySchemes"] == mtls
    assert own["security"] == [{"mtls": []}]


async def test_the_card_files_own_schemes_are_kept_beside_the_servers() -> None:
    oauth = {"type": "oauth2", "flows": {"clientCredentials": {
        "tokenUrl": "https://id.example.test/token", "scopes": {}}}}
    template = {"name": "x", "description": "d", "version": "1.0.0", "skills": [],
                "securitySchemes": {"oauth": oauth, "apiKey": {"type": "apiKey", "in": "query",
                                                               "name": "k"}},
                "security": [{"oauth": []}]}
    card = await _card(api_keys=KEYS, card=template)
    assert card["securitySchemes"] == {"oauth": oauth, "apiKey": API_KEY, "bearer": BEARER}
    assert card["security"] == [{"apiKey": []}, {"bearer": []}, {"oauth": []}]


@pytest.mark.parametrize("source", ["mapping", "file"])
async def test_the_extended_card_is_served_to_authenticated_callers(
    source: str, tmp_path: Path
) -> None:
    extended: Any = EXTENDED
    if source == "file":
        extended = tmp_path / "extended.json"
        extended.write_text(json.dumps(EXTENDED))
    async with served(api_keys=KEYS, extended_card=extended) as (http, _):
        public = (await http.get("/.well-known/agent-card.json")).json()
        assert public["supportsAuthenticatedExtendedCard"] is True
        assert "bulk-review" not in [s["id"] for s in public["skills"]]
        request = rpc("agent/getAuthenticatedExtendedCard", None, "ext")
        request.pop("params")
        assert_refused(await http.post("/", json=request))
        response = await http.post("/", json=request, headers={"X-API-Key": ALICE_KEY})
    body = response.json()
    assert set(body) == {"jsonrpc", "id", "result"} and body["id"] == "ext"
    card = body["result"]
    assert_valid("AgentCard", card)
    assert (card["name"], card["skills"]) == (EXTENDED["name"], EXTENDED["skills"])
    # made truthful like the public card: the same endpoint, protocol and schemes
    for key in ("url", "protocolVersion", "preferredTransport", "capabilities",
                "securitySchemes", "security", "supportsAuthenticatedExtendedCard"):
        assert card[key] == public[key], key


async def test_without_an_extended_card_an_authenticated_caller_gets_32007() -> None:
    async with served(api_keys=KEYS) as (http, _):
        response = await http.post(
            "/", json={"jsonrpc": "2.0", "id": 7, "method": "agent/getAuthenticatedExtendedCard"},
            headers={"Authorization": f"Bearer {ALICE_KEY}"},
        )
    assert response.json() == {"jsonrpc": "2.0", "id": 7, "error": {
        "code": -32007, "message": "Authenticated Extended Card is not configured"}}


async def test_a_callback_authenticated_caller_gets_the_extended_card() -> None:
    async def carol(headers: Mapping[str, str]) -> Principal | None:
        return Principal("carol") if headers.get("x-user") == "carol" else None

    async with served(auth=carol, extended_card=EXTENDED) as (http, _):
        request = {"jsonrpc": "2.0", "id": 1, "method": "agent/getAuthenticatedExtendedCard"}
        assert_refused(await http.post("/", json=request), BEARER_CHALLENGE)
        ok = await http.post("/", json=request, headers={"X-User": "carol"})
        assert ok.json()["result"]["name"] == EXTENDED["name"]


def test_an_extended_card_without_authentication_is_a_configuration_error() -> None:
    from llamon_agent import create_app
    from llamon_agent.settings import Settings
    from tests.auth.helpers import agents

    with pytest.raises(CredentialConfigError, match="extended card is for authenticated"):
        create_app(agents(), db=":memory:", settings=Settings(), extended_card=EXTENDED)


def test_the_extended_card_is_never_given_to_anonymous() -> None:
    from llamon_agent.errors import AuthenticatedExtendedCardNotConfiguredError
    from llamon_agent.server.extended_card import extended_card_for

    with pytest.raises(AuthenticatedExtendedCardNotConfiguredError):
        extended_card_for(ANONYMOUS_PRINCIPAL, EXTENDED)
    assert extended_card_for(Principal("alice"), EXTENDED) is EXTENDED
