"""``Quotas``: how much one principal may use of the server, whoever else is calling.

Every quota is per principal (``core/principal.py``) and off by default: without
authentication every caller is the one principal ``anonymous``, so a quota would be shared by
all of them. Turn them on together with authentication (docs/operations.md, "Quotas").

* ``requests_per_second`` and ``burst``: a token bucket per principal on the JSON-RPC endpoint
  and ``/hitl/*``, checked at the HTTP layer right after authentication, before the body is
  read (``server/rate_limit.py``). Over it: HTTP 429 ``{"detail": "rate limit"}`` with
  ``Retry-After`` (whole seconds). ``burst`` (default: one second's worth, at least 1) is how
  many requests may come at once after a quiet time.
* ``max_streams``: open ``message/stream`` and ``tasks/resubscribe`` streams
  (``server/stream_quota.py``). One more is ``-32004`` with ``data.reason`` "quota exceeded:
  open streams", sent as the stream's one JSON-RPC error event; nothing is opened or stored.
* ``max_waiting_tasks``: tasks in ``input-required`` (the task runtime counts them in the
  store). A message that would start a new task while the principal has that many is
  ``-32004`` with ``data.reason`` "quota exceeded: tasks waiting for input" (``/hitl/*``:
  HTTP 429); nothing is stored or run. Answers to waiting tasks are always taken.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..settings import Settings

__all__ = ["Quotas"]


@dataclass(frozen=True)
class Quotas:
    """Per-principal quotas; ``None`` turns one off (the default for all of them)."""

    requests_per_second: float | None = None
    burst: int | None = None
    max_streams: int | None = None
    max_waiting_tasks: int | None = None

    def __post_init__(self) -> None:
        rate = self.requests_per_second
        if rate is not None and not (math.isfinite(rate) and rate > 0):
            raise ValueError(f"requests_per_second must be more than 0, got {rate}")
        if self.burst is not None and rate is None:
            raise ValueError("burst needs requests_per_second")
        for name in ("burst", "max_streams", "max_waiting_tasks"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or value < 1):
                raise ValueError(f"{name} must be at least 1, got {value}")

    @property
    def bucket_size(self) -> int:
        """The token bucket's capacity: ``burst``, else one second's worth (at least 1)."""
        if self.burst is not None:
            return self.burst
        return max(1, math.ceil(self.requests_per_second or 0))

    @classmethod
    def from_settings(cls, settings: Settings) -> Quotas:
        return cls(
            requests_per_second=settings.quota_rate,
            burst=settings.quota_burst,
            max_streams=settings.quota_streams,
            max_waiting_tasks=settings.quota_waiting_tasks,
        )
