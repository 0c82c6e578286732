"""One HTTP connection: uvicorn's httptools protocol, bounded against clients that hold it.

``serve`` builds every connection from ``bounded_protocol(...)``, a subclass of uvicorn's
``HttpToolsProtocol`` (the llhttp parser, in C) carrying the server's settings. What it adds:

* **A cap on open connections** (``max_connections``): over the cap a new connection is answered
  503 and closed at once, so it holds a file descriptor for one loop iteration.
* **A deadline for each request** (``request_timeout``): it runs while a request is arriving,
  from the connection's start, or from the first byte after uvicorn's keep-alive wait, until
  the parser has the whole request (head and body). It does not run while the app works or
  streams its answer, nor during the keep-alive wait, which uvicorn's own timer bounds. A client
  that began a request gets 408 and the connection is closed; one that asked nothing is closed
  without an answer (a client that sends its request just then must retry, as after
  keep-alive, not read a 408 meant for none).
* **A bound on each request's head** (``MAX_HEAD_BYTES``: the target and the headers' names and
  values): llhttp has none, so a client could make one request's headers as large as the
  request timeout lets it send. Over the bound the client is answered 431 and the connection is
  closed. 16 KiB is the bound h11 (uvicorn's other parser) sets on a head still arriving.
* ``TCP_NODELAY`` on every TCP connection.

httptools was measured against h11 (bench/README.md, "Speed, round thirteen"): 7.6% less server
CPU per instant ``message/send`` and 3.5% per HITL round trip. uvicorn's internals are used
here and in ``server/serve.py`` and nowhere else, each with a comment saying why and what
breaks if it changes;
``pyproject.toml`` caps uvicorn below its next minor version, and
``tests/process/test_hardening.py`` exercises every one of them against a real process.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from typing import Any, ClassVar

import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["LOG_INTERVAL", "MAX_HEAD_BYTES", "EveryInterval", "bounded_protocol"]

#: seconds between two log lines about the same kind of refused or failed connection
LOG_INTERVAL = 10.0
#: bytes of one request's target and header names and values (h11's bound on a head still
#: arriving; h11 let a larger head through when it came in one read)
MAX_HEAD_BYTES = 16 * 1024

# The server's lines go where uvicorn's go, formatted and filtered by --log-level like them.
log = logging.getLogger("uvicorn.error")


class EveryInterval:
    """One log line per ``LOG_INTERVAL`` for a repeated event, with the count since the last."""

    def __init__(self, level: int, template: str) -> None:
        self._level, self._template = level, template
        self._count = 0
        self._last = -LOG_INTERVAL

    def __call__(self, *args: Any) -> None:
        self._count += 1
        now = time.monotonic()
        if now - self._last < LOG_INTERVAL:
            return
        log.log(self._level, self._template, *args, self._count)
        self._count, self._last = 0, now


def _response(status: int, reason: str, detail: str) -> bytes:
    body = orjson.dumps({"detail": detail})
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


_TOO_MANY = _response(503, "Service Unavailable", "Too many open connections")
_TIMED_OUT = _response(408, "Request Timeout", "The request was not received in time")
_HEAD_TOO_LARGE = _response(
    431, "Request Header Fields Too Large",
    f"The request's target and headers are over {MAX_HEAD_BYTES} bytes",
)


def bounded_protocol(request_timeout: float, max_connections: int) -> type[HttpToolsProtocol]:
    """uvicorn builds one protocol object per connection from a class (``Config(http=...)``),
    so the settings travel as class attributes of a subclass made for this server."""

    class Protocol(_BoundedProtocol):
        pass

    Protocol.request_timeout = request_timeout
    Protocol.max_connections = max_connections
    Protocol.refused = EveryInterval(
        logging.WARNING, "refused a connection over the cap of %d open connections "
        "(%d refused since the last such line)",
    )
    Protocol.timed_out = EveryInterval(
        logging.INFO, "answered 408 to a client that did not send its request within %.1f s "
        "(%d since the last such line)",
    )
    return Protocol


class _HeadTooLarge(Exception):
    """Raised from a parser callback: llhttp stops and uvicorn answers through
    ``send_400_response``, which answers 431 instead."""


class _BoundedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a connection cap, a deadline for each request and a
    bound on each request's head (the module's docstring says what each does)."""

    request_timeout: ClassVar[float]
    max_connections: ClassVar[int]
    refused: ClassVar[EveryInterval]
    timed_out: ClassVar[EveryInterval]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._deadline: asyncio.TimerHandle | None = None
        self._refused = False
        #: no request has begun on this connection yet
        self._first = True
        #: a request has begun and is not whole yet
        self._partial = False
        self._head_bytes = 0
        self._head_too_large = False

    # ----------------------------------------------------------------- the connection

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        # uvicorn internal: `self.connections` is the server's set of open HTTP connections
        # (ServerState.connections), filled by HttpToolsProtocol.connection_made. Were it
        # renamed or no longer shared, the cap would count nothing and never refuse.
        if len(self.connections) >= self.max_connections:
            self._refused = True
            transport.write(_TOO_MANY)
            transport.close()
            self.refused(self.max_connections)
            return
        # The listening socket comes from uvicorn's bind_socket() (proto 0), and asyncio sets
        # TCP_NODELAY only on sockets whose proto is IPPROTO_TCP. Without it a response that
        # uvicorn writes in two parts (head, body) waits for the client's delayed ACK: 40 ms
        # for every keep-alive request on Linux (bench/large_answers.py measured it).
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        super().connection_made(transport)
        self._watch()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return  # uvicorn never saw this connection: nothing of its state to clean up
        self._stop_deadline()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._head_too_large:
            return  # answered 431 and closing: the parser stopped at the bound
        super().data_received(data)
        self._watch()

    def on_response_complete(self) -> None:
        # uvicorn internal: the cycle calls this hook when a response is complete; it arms the
        # keep-alive timer or starts a pipelined request. Were it no longer called, the
        # deadline of a request that arrives after the first one would not start.
        super().on_response_complete()
        self._watch()

    # ------------------------------------------------- parser callbacks (llhttp calls them)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._first = False
        self._partial = True
        self._head_bytes = 0

    def on_url(self, url: bytes) -> None:
        self._count_head(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count_head(len(name) + len(value))
        super().on_header(name, value)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        self._partial = False

    def _count_head(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > MAX_HEAD_BYTES:
            self._head_too_large = True
            raise _HeadTooLarge

    def send_400_response(self, msg: str) -> None:
        # uvicorn internal: HttpToolsProtocol.data_received answers every parser error through
        # this method (and logs "Invalid HTTP request received."); an exception raised by a
        # callback arrives as one. Were it answered elsewhere, an oversized head would get
        # uvicorn's 400 instead of 431, still refused and closed.
        if not self._head_too_large:
            super().send_400_response(msg)
            return
        self._stop_deadline()
        self.transport.write(_HEAD_TOO_LARGE)
        self.transport.close()

    # ------------------------------------------------------------------------- the deadline

    def _watch(self) -> None:
        # uvicorn internal: `self.timeout_keep_alive_task` is uvicorn's keep-alive timer, set
        # only while waiting between requests (and cancelled by data_received). Were it
        # renamed, this raises on every connection; were its meaning to change, requests would
        # be cut while the app works, or never.
        arriving = (
            (self._first or self._partial)
            and self.timeout_keep_alive_task is None
            and not self.transport.is_closing()
        )
        if not arriving:
            self._stop_deadline()
        elif self._deadline is None:
            self._deadline = asyncio.get_running_loop().call_later(
                self.request_timeout, self._expired
            )

    def _stop_deadline(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        # uvicorn internal: `self.cycle` is the current (or last) request's
        # RequestResponseCycle. Marking it disconnected and waking its reader is what uvicorn's
        # connection_lost does: the app's receive() returns http.disconnect and a late send()
        # is dropped instead of writing a second response after the 408.
        cycle = self.cycle
        current = cycle if cycle is not None and not cycle.response_complete else None
        if current is not None:
            current.disconnected = True
            current.message_event.set()
        if self._partial and not (current is not None and current.response_started):
            self.transport.write(_TIMED_OUT)
            self.timed_out(self.request_timeout)
        self.transport.close()
