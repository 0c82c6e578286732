"""Time: one injectable clock, and timestamps on the wire and in stored rows (UTC, ISO 8601
with milliseconds and ``Z``).

Deadlines, retention and push retries read the time only through a ``Clock``, so tests move
time forward instead of sleeping; ``system_clock`` is the default everywhere.
"""

from __future__ import annotations

import time
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


#: the wire text of the latest second ``now`` was asked in: (seconds since the epoch, its
#: ``YYYY-MM-DDTHH:MM:SS``); one tuple, so a thread reads a matching pair
_second: tuple[int, str] = (-1, "")


def now() -> str:
    """The current moment as ``iso`` writes it, from the same clock as ``system_clock``.

    Every status a task takes is stamped with it, six times a HITL round trip: from the
    integer milliseconds and the text of the second (made once a second) it takes 0.6 us,
    where ``iso(system_clock())`` takes 2.2, most of it ``datetime.isoformat``
    (bench/README.md, "Speed, round thirty-two")."""
    global _second
    seconds, millis = divmod(time.time_ns() // 1_000_000, 1000)
    second = _second  # read once: another thread may move it to another second meanwhile
    if second[0] != seconds:
        second = _second = (seconds, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)))
    return f"{second[1]}.{millis:03d}Z"
