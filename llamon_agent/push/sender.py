"""One attempt of one delivery: an HTTP ``POST`` of the Task JSON to a checked address.

The connection goes to the address the guard accepted (``Destination``), never to whatever
the name resolves to by then: the URL names the address, the ``Host`` header and TLS (SNI and
the certificate check) the host. No connection is reused (a kept connection to one address
could carry another name's request), no redirect is followed, no proxy from the environment is
used, and the response body is never read. An attempt ends within ``timeout`` seconds
whatever the receiver does.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from types import TracebackType

import httpx

from .guard import Destination

__all__ = ["Attempt", "WebhookSender"]

_ERROR_CHARS = 500  # of an error kept with the delivery


@dataclass(frozen=True)
class Attempt:
    ok: bool
    #: why it failed (``HTTP 500``, ``timed out after 10 s``, the connection error)
    error: str | None = None


class WebhookSender:
    """An async context manager owning the HTTP client."""

    def __init__(self, *, timeout: float, concurrency: int) -> None:
        self._timeout = timeout
        self._http = httpx.AsyncClient(
            follow_redirects=False, trust_env=False, timeout=httpx.Timeout(timeout),
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=0),
            headers={"User-Agent": "llamon-agent push"},
        )

    async def __aenter__(self) -> WebhookSender:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        await self._http.aclose()

    async def post(self, destination: Destination, body: bytes,
                   headers: dict[str, str]) -> Attempt:
        webhook = destination.webhook
        request = self._http.build_request(
            "POST", destination.url(), content=body,
            headers={**headers, "Host": webhook.host_header(),
                     "Content-Type": "application/json"},
            extensions={"sni_hostname": webhook.host} if webhook.scheme == "https" else {},
        )
        try:
            async with asyncio.timeout(self._timeout):  # the whole attempt, not each read
                response = await self._http.send(request, stream=True)
                await response.aclose()
        except (TimeoutError, httpx.TimeoutException):
            return Attempt(False, f"timed out after {self._timeout:g} s")
        except httpx.HTTPError as exc:
            return Attempt(False, f"{type(exc).__name__}: {exc}"[:_ERROR_CHARS])
        status = response.status_code
        if 200 <= status < 300:
            return Attempt(True)
        if 300 <= status < 400:
            return Attempt(False, f"HTTP {status} (redirects are not followed)")
        return Attempt(False, f"HTTP {status}")
