"""The last line of defence: an unexpected error never becomes a plain-text 500.

Starlette's own error middleware answers ``text/plain`` and re-raises, and uvicorn then
closes the connection. This middleware sits inside it: it logs the error once and answers
JSON instead (a JSON-RPC ``-32603`` envelope on the JSON-RPC endpoint, ``{"detail": ...}``
with HTTP 500 elsewhere), so the client can read the answer and the keep-alive connection
stays usable. A response that has already started cannot be replaced; it is ended as it is.
"""

from __future__ import annotations

import logging

from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from ..errors import InternalError
from . import jsonrpc

__all__ = ["ErrorGuard"]

log = logging.getLogger(__name__)


class ErrorGuard:
    def __init__(self, app: ASGIApp, rpc_path: str = "/") -> None:
        self._app = app
        self._rpc_path = rpc_path

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        started = False
        finished = False

        async def tracking_send(message: Message) -> None:
            nonlocal started, finished
            if message["type"] == "http.response.start":
                started = True
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                finished = True
            await send(message)

        try:
            await self._app(scope, receive, tracking_send)
        except ClientDisconnect:  # the client left (or was cut off) mid-body: no one to answer
            log.debug("client left during %s %s", scope.get("method"), scope.get("path"))
            return
        except Exception:
            log.exception("unexpected error in %s %s", scope.get("method"), scope.get("path"))
            if started:
                if not finished:  # end the body we began; the client sees a short response
                    await send({"type": "http.response.body", "body": b"", "more_body": False})
                return
            if scope.get("path") == self._rpc_path and scope.get("method") == "POST":
                body, status = jsonrpc.error_body(InternalError(), None), 200
            else:
                body, status = b'{"detail":"Internal server error"}', 500
            await send({
                "type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode())],
            })
            await send({"type": "http.response.body", "body": body})
