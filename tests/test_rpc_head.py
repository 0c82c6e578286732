"""The JSON-RPC endpoint's three headers, read in one pass (``server/rpc_head.py``): the same
values Starlette's ``Headers`` and ``versions.named_in`` give, whatever the headers are."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.requests import Request

from llamon_agent.server import versions
from llamon_agent.server.rpc_head import RpcHead, rpc_head

NAMES = [b"content-length", b"a2a-version", b"accept-language", b"host", b"content-type",
         b"accept", b"authorization", b"a2a-versions", b"accept-language2"]
values = st.text(st.characters(min_codepoint=32, max_codepoint=255), max_size=20)


def request(headers: list[tuple[bytes, bytes]], query: bytes = b"") -> Request:
    scope: dict[str, Any] = {"type": "http", "method": "POST", "path": "/", "headers": headers,
                             "query_string": query}
    return Request(scope)


@settings(max_examples=200)
@given(st.lists(st.tuples(st.sampled_from(NAMES), values), max_size=12),
       st.sampled_from([b"", b"A2A-Version=1.0", b"x=1", b"A2A-Version=0.3&A2A-Version=1.0"]))
def test_the_same_values_as_starlette_s_lookups(
    pairs: list[tuple[bytes, str]], query: bytes,
) -> None:
    sent = request([(name, value.encode("latin-1")) for name, value in pairs], query)
    assert rpc_head(sent) == RpcHead(
        sent.headers.get("content-length"), versions.named_in(sent),
        sent.headers.get("accept-language"),
    )


def test_the_first_of_repeated_headers_and_the_query_only_without_the_header() -> None:
    sent = request([(b"a2a-version", b"1.0"), (b"content-length", b"12"),
                    (b"a2a-version", b"0.3"), (b"content-length", b"99")], b"A2A-Version=0.3")
    assert rpc_head(sent) == RpcHead("12", "1.0", None)
    assert rpc_head(request([], b"A2A-Version=1.0")) == RpcHead(None, "1.0", None)
    assert rpc_head(request([])) == RpcHead(None, None, None)
