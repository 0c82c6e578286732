"""Reading a request body within the size limit, without holding more than the limit.

A declared ``Content-Length`` over the limit is refused before a byte of the body is read; a
chunked body is counted as it arrives and cut at the limit. Either way the server holds at
most the limit plus one chunk, and the connection is closed after the error response (the
rest of the body is never read).

The body is read from the ASGI ``receive`` directly, not through ``Request.stream()``, whose
async generator costs each call more than this loop (bench/README.md, "Speed, round
twenty-six"). Nothing else reads a body once the endpoint has.
"""

from __future__ import annotations

from starlette.requests import ClientDisconnect, Request

from ..errors import PayloadTooLargeError

__all__ = ["read_body"]


def _too_large(limit: int) -> PayloadTooLargeError:
    return PayloadTooLargeError(data={"limit": "max_body_bytes", "max": limit})


async def read_body(request: Request, limit: int, declared: str | None) -> bytes:
    """``declared``: the request's ``Content-Length``, as the caller read it."""
    if declared is not None and declared.strip().isdigit() and int(declared) > limit:
        raise _too_large(limit)
    chunks: list[bytes] = []
    size = 0
    receive = request.receive
    while True:
        message = await receive()
        if message["type"] != "http.request":  # http.disconnect: the client left
            raise ClientDisconnect()
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
        if not message.get("more_body", False):
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
