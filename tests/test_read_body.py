"""Reading a request body within its limit (llamon_agent/server/body.py), message by message."""

from __future__ import annotations

from typing import Any

import pytest
from starlette.requests import ClientDisconnect, Request

from llamon_agent.errors import PayloadTooLargeError
from llamon_agent.server.body import read_body


def _request(messages: list[dict[str, Any]], content_length: int | None = None) -> Request:
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        if not queue:
            raise AssertionError("read past the last message")
        return queue.pop(0)

    headers = [] if content_length is None else [(b"content-length", str(content_length).encode())]
    return Request({"type": "http", "method": "POST", "path": "/", "headers": headers}, receive)


async def _read(request: Request, limit: int) -> bytes:
    return await read_body(request, limit, request.headers.get("content-length"))


def _chunk(body: bytes, more: bool) -> dict[str, Any]:
    return {"type": "http.request", "body": body, "more_body": more}


async def test_one_message() -> None:
    assert await _read(_request([_chunk(b'{"a":1}', False)]), 100) == b'{"a":1}'


async def test_chunks_are_joined_in_order_and_empty_ones_skipped() -> None:
    messages = [_chunk(b"ab", True), _chunk(b"", True), _chunk(b"cd", True), _chunk(b"e", False)]
    assert await _read(_request(messages), 5) == b"abcde"


async def test_no_body_at_all() -> None:
    assert await _read(_request([{"type": "http.request"}]), 10) == b""


async def test_a_body_over_the_limit_is_cut_where_it_passes_it() -> None:
    messages = [_chunk(b"abc", True), _chunk(b"def", True)]  # never asks for a third
    with pytest.raises(PayloadTooLargeError) as caught:
        await _read(_request(messages), 5)
    assert caught.value.data == {"limit": "max_body_bytes", "max": 5}


async def test_a_declared_length_over_the_limit_reads_nothing() -> None:
    with pytest.raises(PayloadTooLargeError):
        await _read(_request([], content_length=6), 5)


async def test_a_client_that_leaves_mid_body() -> None:
    with pytest.raises(ClientDisconnect):
        await _read(_request([_chunk(b"ab", True), {"type": "http.disconnect"}]), 10)
