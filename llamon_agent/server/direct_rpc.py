"""``POST /`` straight to the JSON-RPC endpoint, past Starlette's exception middleware and router.

Every A2A call is a ``POST /``. Starlette hands each one through its exception middleware, the
router (which matches it against the route table), the route, and the endpoint's own exception
wrapper, building two ``Request`` objects on the way: ten calls that decide nothing for this
one route, about 1% of a HITL round trip's instructions (bench/README.md, "Speed, round
twenty-six"). This sits last among the app's middleware (after authentication and the rate
limit, so they still see every call) and answers ``POST /`` itself, as the route would.

What it skips changes nothing for this route: the only exception handler is for Starlette's
own ``HTTPException`` (a 404 or 405 of the router), which the JSON-RPC endpoint never raises;
anything else it raises reaches ``ErrorGuard`` either way. The scope gets what the router
would have left on it (``route``, ``endpoint``, ``path_params``; nothing here reads its
``router``): the request metrics label a call by its route. An app mounted below ``/`` sees
its ``root_path`` in ``path`` (ASGI): its calls go the usual way, where the router strips it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["DirectRpc"]


class DirectRpc:
    def __init__(self, app: ASGIApp, *, route: Route,
                 endpoint: Callable[[Request], Awaitable[Response]]) -> None:
        self._app = app
        self._route = route
        self._endpoint = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] != "http" or scope["method"] != "POST"
                or scope["path"] != self._route.path):
            await self._app(scope, receive, send)
            return
        scope["route"] = self._route
        scope["endpoint"] = self._route.endpoint
        scope["path_params"] = {}
        response = await self._endpoint(Request(scope, receive, send))
        await response(scope, receive, send)
