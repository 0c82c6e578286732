"""Two ways to reach the server, one synchronous interface for the fuzz tests.

* :class:`InProcess`: the ASGI app in this process (``serve_app``), its event loop running in
  a thread (an anyio blocking portal), so that Hypothesis drives plain synchronous tests while
  the app's background turns keep running between examples.
* :class:`OneConnection`: a real server over ONE keep-alive HTTP/1.1 connection (``httpx``,
  one pooled connection). It records the local port of every response: a new port means the
  connection was closed, which is allowed only after the server said ``Connection: close`` (a
  body over the size limit); anything else is a reset and fails the test that caused it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import httpx
from anyio.from_thread import BlockingPortal

#: a response to a request the fuzzer sent never takes this long; past it the test fails
REQUEST_TIMEOUT = 30.0


@dataclass(frozen=True)
class Reply:
    response: httpx.Response  # read: ``content`` is there, schemathesis can validate it

    @property
    def status(self) -> int:
        return self.response.status_code

    @property
    def headers(self) -> httpx.Headers:
        return self.response.headers

    @property
    def content(self) -> bytes:
        return self.response.content

    @property
    def media_type(self) -> str:
        return self.headers.get("content-type", "").split(";")[0].strip()


class Wire(Protocol):
    name: str

    def request(self, method: str, path: str, content: bytes | None = None,
                headers: dict[str, str] | None = None) -> Reply: ...


class ConnectionReset(AssertionError):
    """The server closed or reset the connection without saying so."""


def _json_headers(headers: dict[str, str] | None) -> dict[str, str]:
    return {"content-type": "application/json", **(headers or {})}


class InProcess:
    name = "asgi"

    def __init__(self, portal: BlockingPortal, http: httpx.AsyncClient) -> None:
        self._portal = portal
        self._http = http

    async def _request(self, method: str, path: str, content: bytes | None,
                       headers: dict[str, str]) -> Reply:
        with anyio.fail_after(REQUEST_TIMEOUT):
            response = await self._http.request(method, path, content=content, headers=headers)
        return Reply(response)

    def request(self, method: str, path: str, content: bytes | None = None,
                headers: dict[str, str] | None = None) -> Reply:
        return self._portal.call(self._request, method, path, content, _json_headers(headers))

    def call(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` (a coroutine function) on the app's event loop."""
        return self._portal.call(fn, *args)


@dataclass
class OneConnection:
    """``httpx.Client`` limited to one connection; see the module doc."""

    base_url: str
    name: str = "uvicorn"
    #: local ports in the order they were first seen
    ports: list[int] = field(default_factory=list)
    #: closes the server announced (``Connection: close``)
    announced_closes: int = 0
    _client: httpx.Client = field(init=False, repr=False)
    _close_expected: bool = field(default=False, init=False, repr=False)

    def __post_init__(self) -> None:
        # one connection, kept as long as the server keeps it, and no silent retry
        transport = httpx.HTTPTransport(
            http2=False, retries=0,
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1,
                                keepalive_expiry=None),
        )
        self._client = httpx.Client(base_url=self.base_url, transport=transport,
                                    trust_env=False, timeout=REQUEST_TIMEOUT)

    def close(self) -> None:
        self._client.close()

    def request(self, method: str, path: str, content: bytes | None = None,
                headers: dict[str, str] | None = None) -> Reply:
        try:
            with self._client.stream(method, path, content=content,
                                     headers=_json_headers(headers)) as response:
                self._note_connection(response)
                response.read()
        except httpx.TimeoutException as exc:
            raise AssertionError(f"no complete response within {REQUEST_TIMEOUT} s") from exc
        except httpx.TransportError as exc:
            raise ConnectionReset(
                f"{type(exc).__name__}: {exc} (the server closed or reset the connection)"
            ) from exc
        if response.headers.get("connection", "").lower() == "close":
            self.announced_closes += 1
            self._close_expected = True
        return Reply(response)

    def _note_connection(self, response: httpx.Response) -> None:
        stream = response.extensions.get("network_stream")
        address = stream.get_extra_info("client_addr") if stream is not None else None
        if address is None:
            return
        port = int(address[1])
        if not self.ports or self.ports[-1] != port:
            if self.ports and not self._close_expected:
                raise ConnectionReset(
                    f"a new connection (local port {port}) replaced port {self.ports[-1]} "
                    "although the server never announced a close"
                )
            self.ports.append(port)
        self._close_expected = False


@contextmanager
def one_connection(base_url: str) -> Iterator[OneConnection]:
    wire = OneConnection(base_url)
    try:
        yield wire
    finally:
        wire.close()
