"""Authentication at the HTTP layer: a protected request without a valid credential gets 401.

Pure ASGI (not Starlette's ``BaseHTTPMiddleware``): an authenticated request goes on with the
very ``receive`` and ``send`` it came with, so a streamed answer is never buffered.

Protected: everything but the public paths below; a path this list does not name (a new route,
an unknown path) needs a credential, so nothing is public by accident. Public: the agent cards,
the landing page (``GET /``), the health endpoints, the OpenAPI document of ``/hitl``,
``/metrics`` (it has its own token), the Playground's static files (``/playground``) and
``/reviews*`` (the reviewer credential, checked there).

A refusal says nothing but ``{"detail": "unauthorized"}`` and a ``WWW-Authenticate`` challenge:
the same for a missing and a wrong credential. No credential is ever logged.
"""

from __future__ import annotations

import logging

import orjson
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Receive, Scope, Send

from ..auth import Authenticator
from .playground import PATHS as PLAYGROUND_PATHS
from .principal import with_principal

__all__ = ["PUBLIC_PATHS", "AuthMiddleware", "is_public"]

log = logging.getLogger(__name__)

#: paths anyone may read, whatever the method (a wrong method there is a plain 405)
PUBLIC_PATHS = frozenset({
    "/.well-known/agent-card.json",
    "/.well-known/agent.json",
    "/healthz",
    "/readyz",
    "/metrics",
    "/hitl/openapi.json",
    *PLAYGROUND_PATHS,  # static files only; the page's JSON-RPC calls are authenticated
})
_REVIEWS = "/reviews"
_UNAUTHORIZED = orjson.dumps({"detail": "unauthorized"})


def is_public(method: str, path: str) -> bool:
    if path in PUBLIC_PATHS:
        return True
    if path == "/":  # the landing page; JSON-RPC (POST /) is protected
        return method in ("GET", "HEAD")
    return path == _REVIEWS or path.startswith(_REVIEWS + "/")


class AuthMiddleware:
    def __init__(self, app: ASGIApp, authenticator: Authenticator) -> None:
        self._app = app
        self._auth = authenticator
        self._refusal_head = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(_UNAUTHORIZED)).encode()),
            (b"www-authenticate", authenticator.challenge.encode()),
        ]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # none is served; never let one past unauthenticated
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http" or is_public(scope["method"], scope["path"]):
            await self._app(scope, receive, send)
            return
        principal = await self._auth.authenticate(Headers(scope=scope))
        if principal is None:
            log.debug("401 for %s %s", scope["method"], scope["path"])
            await send({"type": "http.response.start", "status": 401,
                        "headers": self._refusal_head})
            await send({"type": "http.response.body", "body": _UNAUTHORIZED})
            return
        with_principal(scope, principal)
        await self._app(scope, receive, send)
