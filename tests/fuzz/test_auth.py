"""Authentication under generated credentials (issue 10): whatever ``X-API-Key`` and
``Authorization`` hold (random bytes, near misses of a real key, JWT-shaped tokens with random
claims and signatures), a protected request is refused with exactly the 401 of the contract:
never a 500, never served. A real key among random headers is always served.

Two servers, like the rest of the suite: the ASGI app in process (API keys, JWT against a local
JWKS, and a verifier callback) and a real ``llamon-agent serve --api-keys`` over one keep-alive
connection (a refusal must not cost the connection)."""

from __future__ import annotations

import base64
from collections.abc import Iterator, Mapping
from typing import Any

import orjson
import pytest
from anyio.from_thread import start_blocking_portal
from hypothesis import example, given, settings
from hypothesis import strategies as st

from llamon_agent.auth import JWTSettings
from llamon_agent.core.principal import Principal
from llamon_agent.settings import Settings
from tests.auth.helpers import ALICE_KEY, BOB_KEY, KEYS, KEYS_CHALLENGE, message_send
from tests.auth.jwks import AUDIENCE, ISSUER, KID, identity_provider
from tests.orchestrator.helpers import serve_app
from tests.process.conftest import EXAMPLE_TARGET, start_server

from .conftest import examples
from .wire import InProcess, Wire, one_connection

REFUSAL = b'{"detail":"unauthorized"}'
PATHS = [("POST", "/"), ("POST", "/hitl/chat"), ("POST", "/hitl/review"), ("GET", "/x"),
         ("DELETE", "/contexts/x")]
BODY = orjson.dumps(message_send("hello"))


async def _never(headers: Mapping[str, str]) -> Principal | None:
    return None


@pytest.fixture(scope="module", params=["asgi", "uvicorn"])
def wire(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
         ) -> Iterator[Wire]:
    from app.main import AGENTS

    folder = tmp_path_factory.mktemp(f"auth-{request.param}")
    if request.param == "asgi":
        with identity_provider() as idp, start_blocking_portal() as portal, \
                portal.wrap_async_context_manager(serve_app(
                    AGENTS, db=":memory:", settings=Settings(db=":memory:"), api_keys=KEYS,
                    jwt=JWTSettings(jwks_url=idp.url, issuer=ISSUER, audience=AUDIENCE),
                    auth=_never)) as harness:
            yield InProcess(portal, harness.http)
        return
    keys = folder / "keys.txt"
    keys.write_text("".join(f"{name}={key}\n" for name, key in KEYS.items()))
    server = start_server(EXAMPLE_TARGET, folder / "llamon.sqlite3", folder,
                          ["--keep-alive", "3600", "--api-keys", str(keys)])
    try:
        with one_connection(server.url) as connection:
            yield connection
        assert server.proc.poll() is None, "the server process died:\n" + server.log()
        assert len(connection.ports) == 1, "a refusal closed the connection"
    finally:
        server.stop()


#: header value bytes a client can send (h11 refuses leading/trailing whitespace and controls)
_VALUE_CHARS = [chr(c) for c in range(0x21, 0x7F)] + [" "] + [chr(c) for c in range(0x80, 0x100)]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def near_misses(key: str) -> st.SearchStrategy[str]:
    return st.one_of(
        st.integers(0, len(key) - 1).map(lambda i: key[:i] + key[i + 1:]),
        st.integers(0, len(key) - 1).map(lambda i: key[:i] + chr(ord(key[i]) ^ 1) + key[i + 1:]),
        st.text(alphabet="abc-0123", min_size=1, max_size=3).map(lambda t: key + t),
        st.just(key.upper()),
    )


@st.composite
def jwt_shaped(draw: st.DrawFn) -> str:
    head = {"alg": draw(st.sampled_from(["RS256", "HS256", "none", "ES256", "PS256", ""])),
            "kid": draw(st.sampled_from([KID, "other", ""]))}
    claims = draw(st.dictionaries(
        st.sampled_from(["sub", "iss", "aud", "exp", "nbf", "iat"]),
        st.one_of(st.sampled_from(["alice", "anonymous", ISSUER, AUDIENCE]),
                  st.integers(-(2**53), 2**53),
                  st.text(max_size=10), st.none()),
    ))
    signature = draw(st.binary(max_size=300))
    return f"{_b64(orjson.dumps(head))}.{_b64(orjson.dumps(claims))}.{_b64(signature)}"


def _value(raw: str) -> bytes:
    return raw.encode("latin-1").strip(b" ")


credential = st.one_of(
    st.text(alphabet=_VALUE_CHARS, max_size=200).map(_value),
    near_misses(ALICE_KEY).map(str.encode),
    near_misses(BOB_KEY).map(str.encode),
    jwt_shaped().map(str.encode),
)
scheme = st.sampled_from([b"Bearer ", b"bearer ", b"Basic ", b"", b"Bearer  ", b"Token "])


@st.composite
def credential_headers(draw: st.DrawFn) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    if draw(st.booleans()):
        headers["X-API-Key"] = draw(credential)
    if draw(st.booleans()):
        headers["Authorization"] = (draw(scheme) + draw(credential)).strip(b" ")
    return headers


def _refused(wire: Wire, method: str, path: str, headers: dict[str, Any]) -> None:
    reply = wire.request(method, path, BODY if method == "POST" else None, headers)
    assert reply.status == 401, (reply.status, reply.content[:300], headers)
    assert reply.content == REFUSAL
    assert reply.headers["www-authenticate"] == KEYS_CHALLENGE


def test_random_credentials_are_refused_with_401_and_never_served(wire: Wire) -> None:
    @settings(max_examples=examples(150))
    @given(headers=credential_headers(), where=st.sampled_from(PATHS))
    @example(headers={"X-API-Key": ALICE_KEY[:-1].encode()}, where=("POST", "/"))
    @example(headers={"Authorization": b"Bearer " + BOB_KEY.upper().encode()},
             where=("POST", "/hitl/chat"))
    def one(headers: dict[str, Any], where: tuple[str, str]) -> None:
        _refused(wire, *where, headers)

    one()


def test_a_right_key_among_random_headers_is_served(wire: Wire) -> None:
    @settings(max_examples=examples(25))
    @given(other=credential_headers(), key=st.sampled_from([ALICE_KEY, BOB_KEY]),
           how=st.sampled_from(["X-API-Key", "Authorization"]))
    def one(other: dict[str, Any], key: str, how: str) -> None:
        headers = dict(other)
        headers[how] = key if how == "X-API-Key" else f"Bearer {key}"
        reply = wire.request("POST", "/", BODY, headers)
        assert reply.status == 200, (reply.status, reply.content[:300])
        assert "result" in orjson.loads(reply.content)

    one()

