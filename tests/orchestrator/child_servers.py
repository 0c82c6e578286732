"""Remote children on real sockets, in the test's own event loop: a llamon server under uvicorn,
and misbehaving A2A endpoints (silent, quiet after one event, without streaming, trickling).

Each is an ASGI app served by ``uvicorn_url``; the orchestrator under test reaches it through
its real HTTP client, so connecting, reading and timing out happen on a real socket.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager, suppress
from typing import Any, Literal

import orjson
import uvicorn
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from llamon_agent.orchestrator import ChildResult, Emission, TurnContext

STARTUP = 10.0  # seconds uvicorn may take to listen


@asynccontextmanager
async def uvicorn_url(
    app: ASGIApp, *, lifespan: Literal["on", "off"] = "off"
) -> AsyncIterator[str]:
    """Serve ``app`` on a free loopback port; yields its base URL. Requests still hanging at
    the end are cancelled after a short grace."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(
        app, lifespan=lifespan, log_level="warning", timeout_graceful_shutdown=1,
        timeout_keep_alive=30,
    )
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    deadline = time.monotonic() + STARTUP
    while not server.started:
        assert not serving.done(), "uvicorn stopped during startup"
        assert time.monotonic() < deadline, "uvicorn did not start"
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        await serving
        sock.close()


@contextmanager
def unreachable_port() -> Iterator[str]:
    """A URL whose connect never completes: a listening socket that never accepts, with its
    accept queue filled first (Linux then drops further SYNs instead of refusing them)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    port = listener.getsockname()[1]
    fillers = []
    for _ in range(4):
        filler = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        filler.setblocking(False)
        with suppress(BlockingIOError):  # the connect completes in the kernel's queue
            filler.connect(("127.0.0.1", port))
        fillers.append(filler)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


# ---------------------------------------------------------------------------- misbehaving apps


async def _body(receive: Receive) -> dict[str, Any]:
    chunks = []
    while True:
        message: Message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            break
    return orjson.loads(b"".join(chunks))


async def _json(send: Send, payload: Any, *, status: int = 200) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": orjson.dumps(payload)})


def _task(request: dict[str, Any], state: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    context_id = request["params"]["message"].get("contextId", "c")
    task: dict[str, Any] = {"kind": "task", "id": "child-task", "contextId": context_id,
                            "status": {"state": state}}
    if data is not None:
        task["artifacts"] = [{"artifactId": "a", "parts": [{"kind": "data", "data": data}]}]
    return task


async def _forever() -> None:
    await asyncio.Event().wait()


async def silent_app(scope: Scope, receive: Receive, send: Send) -> None:
    """Accepts the connection and the request, and never answers."""
    await _forever()


#: the task ids ``quiet_stream_app`` was asked to cancel
QUIET_CANCELS: list[str] = []


async def quiet_stream_app(scope: Scope, receive: Receive, send: Send) -> None:
    """``message/stream``: the task's first event, then silence (no event, no ping);
    ``tasks/cancel``: noted in ``QUIET_CANCELS`` and answered."""
    request = await _body(receive)
    if request.get("method") == "tasks/cancel":
        QUIET_CANCELS.append(request["params"]["id"])
        task = {"kind": "task", "id": request["params"]["id"], "contextId": "c",
                "status": {"state": "canceled"}}
        await _json(send, {"jsonrpc": "2.0", "id": request["id"], "result": task})
        return
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/event-stream")]})
    event = {"jsonrpc": "2.0", "id": request["id"], "result": _task(request, "working")}
    await send({"type": "http.response.body", "more_body": True,
                "body": b"id: 1\ndata: " + orjson.dumps(event) + b"\n\n"})
    await _forever()


def no_streaming_app(on_send: Callable[[dict[str, Any], Send], Awaitable[None]]) -> ASGIApp:
    """An A2A endpoint without streaming (``-32004`` to ``message/stream``); ``on_send``
    answers ``message/send``."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        request = await _body(receive)
        if request["method"] == "message/stream":
            await _json(send, {"jsonrpc": "2.0", "id": request["id"], "error": {
                "code": -32004, "message": "Streaming is not supported"}})
            return
        await on_send(request, send)

    return app


async def answer_low_risk(request: dict[str, Any], send: Send) -> None:
    task = _task(request, "completed", {"risk": "low"})
    await _json(send, {"jsonrpc": "2.0", "id": request["id"], "result": task})


async def never_answer(request: dict[str, Any], send: Send) -> None:
    await _forever()


async def trickle(request: dict[str, Any], send: Send) -> None:
    """Starts the answer and sends one byte of whitespace every 50 ms, for ever: a read
    timeout restarts at every byte and never fires."""
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"application/json")]})
    while True:
        await send({"type": "http.response.body", "body": b" ", "more_body": True})
        await asyncio.sleep(0.05)


class Switch:
    """Forwards to ``app`` until ``silent`` is set; from then on every request hangs."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.silent = False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.silent:
            await _forever()
        await self.app(scope, receive, send)


# ---------------------------------------------------------------------------- the parent


async def relay(ctx: TurnContext) -> Emission:
    """Passes the message to the child ``kyc`` and ends with what it says (its question too)."""
    result: ChildResult = await ctx.call("kyc", data=ctx.data)
    return ctx.emit(result)
