"""The request-rate quota: a token bucket per principal, checked at the HTTP layer.

``RateLimit`` is pure ASGI middleware placed right after authentication, so
``principal_of(scope)`` is the caller. It guards what authentication guards (``POST /``, the
JSON-RPC endpoint, ``/hitl/*`` except the public ``/hitl/openapi.json``, and
``DELETE /contexts/{id}``) and answers
over the rate before the body is read, so nothing is parsed, stored or run: HTTP 429,
``{"detail": "rate limit"}``, ``Retry-After`` in whole seconds.

Memory is bounded: at most ``max_principals`` buckets, least recently used first out. A bucket
left alone for ``capacity / rate`` seconds is full again, the same as no bucket, so forgetting
one only matters when more than ``max_principals`` principals call within that time.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from .principal import principal_of

__all__ = ["DEFAULT_MAX_PRINCIPALS", "RateLimit", "TokenBuckets", "rate_limited_path"]

#: buckets kept at most (a few hundred bytes each)
DEFAULT_MAX_PRINCIPALS = 10_000

_BODY = b'{"detail":"rate limit"}'


def rate_limited_path(method: str, path: str) -> bool:
    """The paths authentication guards: the JSON-RPC endpoint, ``/hitl/*`` but its docs, and
    ``/contexts/*``."""
    if path == "/":
        return method == "POST"
    if path.startswith("/contexts/"):
        return True
    return path.startswith("/hitl/") and path != "/hitl/openapi.json"


@dataclass
class _Bucket:
    tokens: float
    at: float


class TokenBuckets:
    """``capacity`` requests at once, refilled at ``rate`` per second, per principal name."""

    def __init__(
        self, rate: float, capacity: int, *, max_principals: int = DEFAULT_MAX_PRINCIPALS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._rate = rate
        self._capacity = float(capacity)
        self._max = max_principals
        self._clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def __len__(self) -> int:
        return len(self._buckets)

    def take(self, name: str) -> float:
        """Take one token for ``name``: 0 when granted, else the seconds until one is there."""
        now = self._clock()
        bucket = self._buckets.get(name)
        if bucket is None:
            bucket = self._buckets[name] = _Bucket(self._capacity, now)
            while len(self._buckets) > self._max:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(name)
            elapsed = max(0.0, now - bucket.at)  # a clock that went back refills nothing
            bucket.tokens = min(self._capacity, bucket.tokens + elapsed * self._rate)
            bucket.at = now
        if bucket.tokens >= 1.0:
            bucket.tokens -= 1.0
            return 0.0
        return (1.0 - bucket.tokens) / self._rate


class RateLimit:
    """ASGI middleware: HTTP 429 with ``Retry-After`` for a principal over its request rate."""

    def __init__(self, app: ASGIApp, buckets: TokenBuckets) -> None:
        self._app = app
        self._buckets = buckets

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not rate_limited_path(scope["method"], scope["path"]):
            await self._app(scope, receive, send)
            return
        wait = self._buckets.take(principal_of(scope).name)
        if not wait:
            await self._app(scope, receive, send)
            return
        retry_after = str(max(1, math.ceil(wait))).encode()
        await send({
            "type": "http.response.start", "status": 429,
            "headers": [(b"content-type", b"application/json"),
                        (b"content-length", str(len(_BODY)).encode()),
                        (b"retry-after", retry_after)],
        })
        await send({"type": "http.response.body", "body": _BODY})
