"""The open-streams quota: how many ``message/stream`` and ``tasks/resubscribe`` streams one
principal holds open at a time.

A stream counts from the moment it is admitted until its response has ended, whichever way it
ends (the final event, an error event, the client leaving, shutdown), so the count cannot leak
even when the response never starts iterating. One over the quota is refused before anything
is opened or stored, with ``QuotaExceededError`` (``-32004``, ``data.reason`` "quota exceeded:
open streams"), which the endpoint sends as the stream's one JSON-RPC error event.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from ..core.principal import Principal
from ..errors import QuotaExceededError

__all__ = ["StreamQuota"]


class StreamQuota:
    """Open streams per principal; ``limit=None`` counts nothing and refuses nothing."""

    def __init__(self, limit: int | None) -> None:
        self._limit = limit
        self._open: dict[str, int] = {}  # only principals with a stream open: bounded by them

    def open_streams(self, principal: Principal) -> int:
        return self._open.get(principal.name, 0)

    async def hold(
        self, principal: Principal, opening: Callable[[], Awaitable[Response]]
    ) -> Response:
        """``opening()``'s response, counted for ``principal`` until it has ended.

        Raises ``QuotaExceededError`` without calling ``opening`` when the principal is at the
        quota: nothing is opened or stored."""
        if self._limit is None:
            return await opening()
        name = principal.name
        if self._open.get(name, 0) >= self._limit:
            raise QuotaExceededError(
                f"Quota exceeded: {self._limit} streams already open; close one",
                what="open streams", quota="max_streams", maximum=self._limit,
            )
        self._open[name] = self._open.get(name, 0) + 1
        try:
            response = await opening()
        except BaseException:
            self._release(name)
            raise
        return _Counted(response, lambda: self._release(name))

    def _release(self, name: str) -> None:
        left = self._open.get(name, 0) - 1
        if left > 0:
            self._open[name] = left
        else:
            self._open.pop(name, None)


class _Counted(Response):
    """``inner`` as it is, then ``release`` once, however sending it ended."""

    def __init__(self, inner: Response, release: Callable[[], None]) -> None:
        # Response.__init__ is not called: this response sends nothing of its own, and its
        # status and headers are the inner one's (for middleware that reads them)
        self._inner = inner
        self._release = release
        self.status_code = inner.status_code
        self.media_type = inner.media_type
        self.background = None
        self.raw_headers = inner.raw_headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self._inner(scope, receive, send)
        finally:
            self._release()
