"""JWT bearer tokens (issue 10): verified with PyJWT against a JWKS served over real HTTP on
127.0.0.1; the principal is ``sub``. Every token that is not exactly right is a plain 401."""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from typing import Any

import httpx
import jwt as pyjwt
import pytest

from llamon_agent.auth import Authenticator, JWTSettings, JWTVerifier, KeyTable
from llamon_agent.core.principal import Principal
from llamon_agent.server.auth_middleware import AuthMiddleware
from llamon_agent.settings import Settings

from .helpers import (
    ALICE_KEY,
    BEARER_CHALLENGE,
    KEYS,
    KEYS_CHALLENGE,
    assert_refused,
    message_send,
    served,
)
from .jwks import AUDIENCE, ISSUER, IdentityProvider, identity_provider, new_key
from .test_middleware import echo_principal


@pytest.fixture
def idp() -> Iterator[IdentityProvider]:
    with identity_provider() as provider:
        yield provider


def settings_for(idp: IdentityProvider, **kw: Any) -> JWTSettings:
    return JWTSettings(jwks_url=idp.url, issuer=ISSUER, audience=AUDIENCE, **kw)


@pytest.fixture
async def http(idp: IdentityProvider) -> AsyncIterator[httpx.AsyncClient]:
    async with served(jwt=settings_for(idp)) as (client, app):
        assert app.state.authentication == f"JWT bearer tokens (issuer {ISSUER})"
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


@pytest.mark.usefixtures("backend")
async def test_a_valid_token_is_served_and_its_sub_is_the_principal(
    idp: IdentityProvider, http: httpx.AsyncClient
) -> None:
    response = await http.post("/", json=message_send(), headers=bearer(idp.token()))
    assert response.status_code == 200
    assert response.json()["result"]["kind"] == "task"
    verifier = Authenticator(jwt=JWTVerifier(settings_for(idp)))
    app = AuthMiddleware(echo_principal, verifier)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app),
                                 base_url="http://t") as echo:
        named = await echo.post("/", headers=bearer(idp.token(sub="dr. who@example")))
    assert named.text == "dr. who@example"


def _bad_tokens(idp: IdentityProvider) -> dict[str, str]:
    now = int(time.time())
    return {
        "expired": idp.token(exp=now - 3600, iat=now - 7200),
        "wrong audience": idp.token(aud="another-service"),
        "wrong issuer": idp.token(iss="https://evil.example.test/"),
        "bad signature": idp.token(key=new_key("another")),
        "tampered payload": _tampered(idp.token(), idp.token(sub="mallory")),
        "sub anonymous": idp.token(sub="anonymous"),
        "no sub": idp.token(sub=None),
        "sub not a string": idp.token(sub=42),
        "sub with a control character": idp.token(sub="ali\x1fce"),
        "sub too long": idp.token(sub="a" * 257),
        "no exp": idp.token(exp=None),
        "not yet valid": idp.token(nbf=now + 3600),
        "unknown kid": idp.token(kid="another-key"),
        "no kid": idp.token(kid=None),
        "HS256 (a shared secret, not the provider's key)": idp.token(
            key="a-secret-anyone-could-pick-0123456789", algorithm="HS256"),
        "alg none": pyjwt.encode({"sub": "alice", "iss": ISSUER, "aud": AUDIENCE,
                                  "exp": now + 60}, None, algorithm="none",
                                 headers={"kid": "test-key-1"}),
        "not a JWT": "abc",
        "three garbage segments": "a.b.c",
        "empty segments": "..",
    }


def _tampered(token: str, other: str) -> str:
    head, _, signature = token.split(".")
    return f"{head}.{other.split('.')[1]}.{signature}"


BAD = list(_bad_tokens(IdentityProvider(new_key())))


@pytest.mark.parametrize("case", BAD)
async def test_a_token_that_is_not_exactly_right_is_refused(
    idp: IdentityProvider, http: httpx.AsyncClient, case: str
) -> None:
    token = _bad_tokens(idp)[case]
    for method, path, body in [("POST", "/", message_send()),
                               ("POST", "/hitl/chat", {"message": "hi"})]:
        assert_refused(await http.request(method, path, json=body, headers=bearer(token)),
                       BEARER_CHALLENGE)
    assert_refused(await http.post("/", json=message_send(), headers={"X-API-Key": token}),
                   BEARER_CHALLENGE)


@pytest.mark.usefixtures("backend")
async def test_a_token_expired_within_the_leeway_is_accepted(
    idp: IdentityProvider, http: httpx.AsyncClient
) -> None:
    now = int(time.time())
    response = await http.post("/", json=message_send(),
                               headers=bearer(idp.token(exp=now - 5, iat=now - 65)))
    assert response.status_code == 200


async def test_the_key_set_is_fetched_once_and_unknown_kids_cannot_make_it_refetch(
    idp: IdentityProvider, http: httpx.AsyncClient
) -> None:
    """The lifespan fetched it at start; valid tokens use the cached set; tokens naming made-up
    keys do not reach the provider again within the cooldown."""
    assert idp.fetches == 1
    for n in range(5):
        assert (await http.post("/", json=message_send(),
                                headers=bearer(idp.token(sub=f"user-{n}")))).status_code == 200
        assert_refused(await http.post("/", json=message_send(),
                                       headers=bearer(idp.token(kid=f"made-up-{n}"))),
                       BEARER_CHALLENGE)
    assert idp.fetches == 1


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def test_an_unreachable_key_set_refuses_tokens_and_says_so_in_the_log(
    idp: IdentityProvider, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/jwks.json"
    caplog.set_level(logging.WARNING, logger="llamon_agent.auth")
    async with served(jwt=JWTSettings(jwks_url=url, issuer=ISSUER, audience=AUDIENCE,
                                      jwks_cooldown=0)) as (http, _):
        token = idp.token()
        assert_refused(await http.post("/", json=message_send(), headers=bearer(token)),
                       BEARER_CHALLENGE)
    warnings = [r.getMessage() for r in caplog.records if r.name.startswith("llamon_agent.auth")]
    assert any(url in w for w in warnings), warnings
    assert all(token not in w for w in warnings)


@pytest.mark.usefixtures("backend")
async def test_settings_from_the_environment_verify_tokens(idp: IdentityProvider) -> None:
    settings = Settings(db=":memory:", jwt_jwks_url=idp.url, jwt_issuer=ISSUER,
                        jwt_audience=AUDIENCE)
    async with served(settings=settings) as (http, _):
        assert (await http.post("/", json=message_send(),
                                headers=bearer(idp.token()))).status_code == 200
        assert_refused(await http.post("/", json=message_send()), BEARER_CHALLENGE)


class _CountingJWT(JWTVerifier):
    def __init__(self, settings: JWTSettings) -> None:
        super().__init__(settings)
        self.calls = 0

    async def verify(self, token: str) -> Principal | None:
        self.calls += 1
        return await super().verify(token)


async def test_api_keys_are_tried_first_then_the_jwt_then_the_callback(
    idp: IdentityProvider,
) -> None:
    called: list[Mapping[str, str]] = []

    async def callback(headers: Mapping[str, str]) -> Principal | None:
        called.append(headers)
        return Principal("from-callback") if headers.get("x-user") else None

    jwt_verifier = _CountingJWT(settings_for(idp))
    auth = Authenticator(api_keys=KeyTable(KEYS), jwt=jwt_verifier, verifier=callback)
    assert await auth.authenticate({"authorization": f"Bearer {ALICE_KEY}"}) == Principal("alice")
    assert (jwt_verifier.calls, called) == (0, [])
    assert await auth.authenticate({"authorization": f"Bearer {idp.token(sub='zoe')}"}) == \
        Principal("zoe")
    assert (jwt_verifier.calls, called) == (1, [])
    assert await auth.authenticate({"authorization": "Bearer a.b.c", "x-user": "1"}) == \
        Principal("from-callback")
    assert (jwt_verifier.calls, len(called)) == (2, 1)
    assert await auth.authenticate({"authorization": "Bearer nope"}) is None
    assert auth.challenge == KEYS_CHALLENGE


def test_jwt_settings_refuse_shared_secret_algorithms_and_missing_claims() -> None:
    for bad in [dict(algorithms=("HS256",)), dict(algorithms=("none",)), dict(algorithms=()),
                dict(issuer=""), dict(audience=""), dict(jwks_url="file:///etc/passwd")]:
        values: dict[str, Any] = {"jwks_url": "https://id.example.test/jwks", "issuer": ISSUER,
                                  "audience": AUDIENCE, **bad}
        with pytest.raises(ValueError):
            JWTSettings(**values)
