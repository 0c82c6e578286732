"""One log line and one metrics update per HTTP request (``RequestEvents``, ASGI middleware).

The middleware sees the HTTP side (the route, the status, the time); what only the JSON-RPC
handler knows it notes on the request's scope: the method (``note_method``) and the error code
it answered with (``note_error``). The SSE streams count their subscribers through
``subscribed``. Without the middleware (a bare route in a test) the three do nothing.

The line names the method (a label from a fixed set, ``server/metrics.py``), the outcome, the
HTTP status, the duration, the principal, the client's address and the path (never the query
string, which may carry a credential); never a header or a body.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from starlette.routing import BaseRoute, Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .logs import fields
from .metrics import OTHER, Metrics, outcome_label
from .principal import principal_of

__all__ = ["RequestEvents", "logs_requests", "note_error", "note_method", "subscribed"]

log = logging.getLogger("llamon_agent.requests")

_SCOPE_KEY: Final = "llamon.request"
_MAX_PATH = 256  # characters of the path a line shows
T = TypeVar("T")


@dataclass
class _Observed:
    metrics: Metrics
    rpc_method: str | None = None
    rpc_code: int | None = None


def note_method(scope: Scope, method: str) -> None:
    """The JSON-RPC method of this request (counted as ``other`` unless it is A2A's)."""
    observed = scope.get(_SCOPE_KEY)
    if isinstance(observed, _Observed):
        observed.rpc_method = method


def note_error(scope: Scope, code: int) -> None:
    """The JSON-RPC error code this request was answered with (HTTP 200, or an SSE frame)."""
    observed = scope.get(_SCOPE_KEY)
    if isinstance(observed, _Observed):
        observed.rpc_code = code


async def subscribed(scope: Scope, frames: AsyncIterator[T]) -> AsyncIterator[T]:
    """``frames`` while counted in ``llamon_stream_subscribers``: from the first frame asked
    for until the stream ends, fails or is closed (the inner iterator is closed with it)."""
    observed = scope.get(_SCOPE_KEY)
    gauge = observed.metrics.stream_subscribers if isinstance(observed, _Observed) else None
    if gauge is not None:
        gauge.inc()
    try:
        async for frame in frames:
            yield frame
    finally:
        if gauge is not None:
            gauge.dec()
        aclose = getattr(frames, "aclose", None)
        if aclose is not None:
            await aclose()


def logs_requests(app: Any) -> bool:
    """Whether ``app`` (from ``create_app``) logs its requests itself, so the ASGI server's
    access log would repeat every line."""
    state = getattr(app, "state", None)
    return bool(getattr(state, "logs_requests", False))


class RequestEvents:
    """The outermost middleware: it times everything the app does, authentication and the
    error guard included, and reads the principal that authentication left on the scope."""

    def __init__(self, app: ASGIApp, *, metrics: Metrics, routes: Sequence[BaseRoute],
                 rpc_path: str = "/") -> None:
        self._app = app
        self._metrics = metrics
        self._routes = [r for r in routes if isinstance(r, Route)]
        self._rpc_path = rpc_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        observed = _Observed(self._metrics)
        scope[_SCOPE_KEY] = observed
        status = 500  # what the server answers when the app raises before responding
        started = time.perf_counter()

        async def send_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self._app(scope, receive, send_status)
        finally:
            self._record(scope, observed, status, time.perf_counter() - started)

    def _record(self, scope: Scope, observed: _Observed, status: int, seconds: float) -> None:
        method, rpc = self._label(scope, observed)
        code = observed.rpc_code if rpc and status == 200 else None
        outcome = outcome_label(status=status, rpc_code=code)
        self._metrics.request(method, outcome, seconds)
        if not log.isEnabledFor(logging.INFO):
            return
        client = scope.get("client")
        log.info("request", extra=fields(
            event="request",
            method=method,
            outcome=outcome,
            status=status,
            duration_ms=round(seconds * 1000, 1),
            principal=principal_of(scope).name,
            client=client[0] if client else None,
            path=str(scope.get("path", ""))[:_MAX_PATH],
        ))

    def _label(self, scope: Scope, observed: _Observed) -> tuple[str, bool]:
        """The JSON-RPC method on the JSON-RPC endpoint (and True), else ``"GET
        /route/{param}"`` of the route that served the request, else ``other`` (an unknown
        path or method)."""
        method = "GET" if scope.get("method") == "HEAD" else str(scope.get("method"))
        route = self._route(scope)
        if route is None:
            return OTHER, False
        if route.path == self._rpc_path and method == "POST":
            return self._metrics.method(observed.rpc_method), True
        return self._metrics.method(f"{method} {route.path}"), False

    def _route(self, scope: Scope) -> Route | None:
        found = scope.get("route")  # Starlette's router leaves the route it chose: on a
        # wrong method too (405), whose "METHOD /path" is then none of the fixed labels
        if isinstance(found, Route):
            return found
        for route in self._routes:  # not routed: authentication (or a limit) answered first
            if route.matches(scope)[0] is Match.FULL:
                return route
        return None
