"""Timestamps on the wire and in stored rows: UTC, ISO 8601 with milliseconds and ``Z``."""

from __future__ import annotations

from datetime import UTC, datetime

__all__ = ["now"]


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
