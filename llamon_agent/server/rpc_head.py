"""The three headers the JSON-RPC endpoint reads, found in one pass over a request's headers.

Every ``POST /`` reads its ``Content-Length`` (a body declared over the limit is refused
unread), its ``A2A-Version`` and its ``Accept-Language``. Through Starlette's ``Headers`` each
is a lookup of its own, a ``Mapping.get`` that scans every header again, and the
``request.headers`` object made for them: about 470 bytecodes a HITL round trip, 0.5% of its
instructions (bench/README.md, "Speed, round thirty-three"). One pass over the ASGI headers
takes the first value of each, as Starlette's lookup does. Header names are lowercase in ASGI,
which is what Starlette's lookup compares with too.
"""

from __future__ import annotations

from typing import Final, NamedTuple

from starlette.requests import Request

from . import versions

__all__ = ["RpcHead", "rpc_head"]


class RpcHead(NamedTuple):
    content_length: str | None
    #: the header, else the query parameter (``versions.named_in``)
    a2a_version: str | None
    accept_language: str | None


_WANTED: Final = {b"content-length": 0, versions.HEADER.lower().encode(): 1,
                  b"accept-language": 2}


def rpc_head(request: Request) -> RpcHead:
    found: list[str | None] = [None, None, None]
    for name, value in request.scope["headers"]:
        index = _WANTED.get(name)
        if index is not None and found[index] is None:
            found[index] = value.decode("latin-1")
    length, version, language = found
    if version is None:
        version = versions.in_query(request)
    return RpcHead(length, version, language)
