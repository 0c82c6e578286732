"""Time: one injectable clock, and timestamps on the wire and in stored rows (UTC, ISO 8601
with milliseconds and ``Z``).

Deadlines, retention and push retries read the time only through a ``Clock``, so tests move
time forward instead of sleeping; ``system_clock`` is the default everywhere.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

__all__ = ["Clock", "iso", "now", "parse_iso", "system_clock"]

#: the current moment, timezone-aware (UTC)
Clock = Callable[[], datetime]


def system_clock() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    """``moment`` as the wire writes it: ``2026-12-01T22:38:12.000Z``."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def parse_iso(text: str) -> datetime:
    """The inverse of ``iso`` (any ISO 8601 with an offset or ``Z``); ``ValueError`` for text
    that is not one, or that names no timezone (a naive time would be read as local)."""
    moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} names no timezone")
    return moment.astimezone(UTC)


def now() -> str:
    return iso(system_clock())
