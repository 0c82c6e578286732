"""Page tokens: where a listing's page ended, as opaque text a client hands back.

A token is the last listed row's sort key (a list of strings and numbers) as JSON, in base64url
without padding. It is opaque to clients and never trusted: ``parts_of`` takes back only what
``token_of`` could have written, of the expected kinds, or raises ``ValueError``; the edge that
took it answers that with its own error (``-32602`` for ``ListTasks``, 400 for ``GET
/reviews``). Nothing in a token is secret or authorises anything: a page holds only what its
query matches for the caller who asks.
"""

from __future__ import annotations

import base64
from typing import Any

import orjson

__all__ = ["MAX_TOKEN", "parts_of", "token_of"]

#: characters of a page token (ours are under 400: a sort key of ids and a time)
MAX_TOKEN = 512


def token_of(*parts: str | float) -> str:
    return base64.urlsafe_b64encode(orjson.dumps(parts)).rstrip(b"=").decode()


def parts_of(token: str, *kinds: type) -> list[Any]:
    """The parts of ``token``, one of each of ``kinds`` (``str``, or ``float`` for any JSON
    number but a boolean), or ``ValueError``."""
    if len(token) > MAX_TOKEN:
        raise ValueError("too long")
    try:
        decoded = orjson.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
    except ValueError:  # not base64 (binascii.Error), not ASCII, not JSON
        raise ValueError("not a page token") from None
    if not isinstance(decoded, list) or len(decoded) != len(kinds):
        raise ValueError("not a page token")
    parts: list[Any] = []
    for part, kind in zip(decoded, kinds, strict=True):
        if kind is float and isinstance(part, (int, float)) and not isinstance(part, bool):
            parts.append(float(part))
        elif kind is str and isinstance(part, str):
            parts.append(part)
        else:
            raise ValueError("not a page token")
    return parts
