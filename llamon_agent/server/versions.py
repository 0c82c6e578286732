"""Which A2A version a request speaks: its ``A2A-Version`` (header, or query parameter) and
its method's name (docs/versions.md).

An absent or empty value means 0.3 (v1.0 says so); ``0.3`` and ``1.0`` are served, a patch
number is ignored (``1.0.1`` is 1.0); anything else is ``-32009``. A method belongs to one
version, PascalCase names to 1.0 and names with a slash to 0.3, and must agree with the
version the request names, as in the official SDK: a v1.0 client always sends the header, and
a request that names one version and calls the other's method is answered ``-32009`` rather
than guessed at.
"""

from __future__ import annotations

import re
from typing import Final, Literal

from starlette.requests import HTTPConnection

from ..errors import VersionNotSupportedError

__all__ = ["HEADER", "SUPPORTED", "V0_3", "V1_0", "Version", "in_query", "mismatch", "named_in",
           "requested"]

Version = Literal["0.3", "1.0"]
V0_3: Final = "0.3"
V1_0: Final = "1.0"
SUPPORTED: tuple[Version, ...] = (V0_3, V1_0)
HEADER: Final = "A2A-Version"
_MAJOR_MINOR = re.compile(r"\s*(\d{1,3})\.(\d{1,3})(?:\.\d{1,6})?\s*")
_SHOWN = 32  # characters of a refused value repeated in the error


def named_in(request: HTTPConnection) -> str | None:
    """The ``A2A-Version`` a request carries: its header, else its query parameter."""
    raw = request.headers.get(HEADER.lower())
    return raw if raw is not None else in_query(request)


def in_query(request: HTTPConnection) -> str | None:
    """The ``A2A-Version`` query parameter, for a request without the header."""
    if not request.scope.get("query_string"):
        return None  # the query is parsed only when there is one: about 6 us a request
    return request.query_params.get(HEADER)


def requested(raw: str | None) -> Version | None:
    """The version ``raw`` (``named_in``) names (``None``: none, which is 0.3); ``-32009`` for
    one this server does not speak."""
    if raw is None or not raw.strip():
        return None
    match = _MAJOR_MINOR.fullmatch(raw)
    version = f"{int(match.group(1))}.{int(match.group(2))}" if match else None
    for known in SUPPORTED:
        if version == known:
            return known
    shown = raw if len(raw) <= _SHOWN else raw[:_SHOWN] + "..."
    raise VersionNotSupportedError(
        f"A2A-Version {shown!r} is not supported: this server speaks 0.3 and 1.0",
        data={"requested": shown, "supported": list(SUPPORTED)},
    )


def mismatch(method: str, family: Version, named: Version | None) -> VersionNotSupportedError:
    """The error for a method of ``family`` called in a request that names ``named``."""
    said = f"A2A-Version {named}" if named else "no A2A-Version (which means 0.3)"
    hint = (f"send the header '{HEADER}: 1.0'" if family == V1_0
            else f"send no {HEADER}, or '{HEADER}: 0.3'")
    return VersionNotSupportedError(
        f"{method} is an A2A {family} method and the request names {said}: {hint}",
        data={"method": method[:100], "requested": named or V0_3, "supported": list(SUPPORTED)},
    )
