"""The SSE decoder: line terminators, chunk boundaries, fields, ids, comments."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from llamon_agent.client.sse import SSEMessage, aiter_lines, aiter_sse


async def _chunks(raw: bytes, size: int) -> AsyncIterator[bytes]:
    for i in range(0, len(raw), size):
        yield raw[i : i + size]


async def decode(raw: str | bytes, size: int = 1 << 16, last_event_id: str | None = None
                 ) -> list[SSEMessage]:
    data = raw.encode() if isinstance(raw, str) else raw
    return [m async for m in aiter_sse(_chunks(data, size), last_event_id)]


STREAM = 'id: 1\ndata: {"a":1}\n\n: ping\n\nid: 2\ndata: {"b":2}\n\n'


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"], ids=["LF", "CRLF", "CR"])
@pytest.mark.parametrize("size", [1, 2, 3, 7, 1 << 16])
async def test_terminators_and_chunk_boundaries(eol: str, size: int) -> None:
    messages = await decode(STREAM.replace("\n", eol), size)
    assert messages == [SSEMessage('{"a":1}', "1"), SSEMessage('{"b":2}', "2")]


async def test_multibyte_utf8_split_across_chunks() -> None:
    raw = "data: 어떤 서류를 검증할까요?\n\n".encode()
    assert [m.data for m in await decode(raw, 1)] == ["어떤 서류를 검증할까요?"]


async def test_crlf_split_between_chunks_is_one_line_end() -> None:
    lines = [line async for line in aiter_lines(_chunks(b"a\r\nb\r\n", 2))]
    assert lines == ["a", "b"]  # not ["a", "", "b", ""]: that would dispatch empty events


async def test_fields() -> None:
    raw = (
        "\ufeffdata:no-space\ndata:  two spaces\nevent: update\nretry: 1500\nunknown: x\n"
        "data\n\n"
    )
    [message] = await decode(raw)
    assert message == SSEMessage("no-space\n two spaces\n", None, "update", 1500)


async def test_id_persists_and_can_be_reset() -> None:
    raw = "id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\nid: x\0y\ndata: d\n\n"
    assert [(m.data, m.id) for m in await decode(raw)] == [
        ("a", "7"), ("b", "7"), ("c", None), ("d", None)
    ]


async def test_initial_last_event_id() -> None:
    assert [m.id for m in await decode("data: a\n\n", last_event_id="4")] == ["4"]


async def test_comment_only_and_empty_events_are_not_dispatched() -> None:
    assert await decode(": ping\n\n\n\nid: 3\n\n") == []


async def test_incomplete_last_event_is_discarded() -> None:
    assert [m.data for m in await decode("data: a\n\ndata: b")] == ["a"]
