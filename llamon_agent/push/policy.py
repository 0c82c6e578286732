"""How push notifications are delivered: attempts, timeouts, backoff, concurrency, targets.

``create_app(push_policy=PushPolicy(...))``; the settings (``LLAMON_PUSH_*``) fill what a server
started from the command line uses (docs/operations.md, "Push notifications").
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..settings import DEFAULT_PUSH_ATTEMPTS, DEFAULT_PUSH_TIMEOUT, Settings
from .guard import Resolve, system_resolve

__all__ = ["PushPolicy"]


@dataclass(frozen=True)
class PushPolicy:
    #: attempts of one delivery before it is given up (status ``failed``, last error kept)
    max_attempts: int = DEFAULT_PUSH_ATTEMPTS
    #: seconds one attempt may take, from the connection to the response's status line
    timeout: float = DEFAULT_PUSH_TIMEOUT
    #: seconds before the second attempt; each later wait doubles, up to ``max_backoff``
    backoff: float = 10.0
    max_backoff: float = 900.0
    #: attempts in flight at once in one server; more wait for a free place (in the store)
    concurrency: int = 16
    #: messages of the task's history a notification carries (the last ones; 0: none)
    history_length: int = 10
    #: webhooks on loopback, private and link-local addresses are allowed (tests, private
    #: networks); multicast, unspecified and reserved addresses never are
    allow_private: bool = False
    #: how a webhook's host name becomes addresses (``getaddrinfo`` on the event loop's
    #: executor); tests pass their own to play a DNS change
    resolve: Resolve = system_resolve
    #: seconds a name may take to resolve
    resolve_timeout: float = 5.0
    #: tasks whose notified change was not enqueued that one sweep catches up on
    reconcile_batch: int = 200

    def __post_init__(self) -> None:
        for name in ("max_attempts", "concurrency", "reconcile_batch"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"PushPolicy.{name} must be an integer above 0, got {value!r}")
        for name in ("timeout", "backoff", "max_backoff", "resolve_timeout"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
                raise ValueError(f"PushPolicy.{name} must be a number above 0, got {value!r}")
        if not isinstance(self.history_length, int) or self.history_length < 0:
            raise ValueError(f"PushPolicy.history_length must be an integer from 0, got "
                             f"{self.history_length!r}")

    @classmethod
    def from_settings(cls, settings: Settings) -> PushPolicy:
        return cls(max_attempts=settings.push_max_attempts, timeout=settings.push_timeout,
                   allow_private=settings.push_allow_private)

    def retry_delay(self, attempts: int) -> float:
        """Seconds from the ``attempts``-th failed attempt to the next one."""
        return min(self.backoff * 2.0 ** (attempts - 1), self.max_backoff)

    @property
    def lease(self) -> float:
        """Seconds a server holds a delivery it attempts: longer than an attempt can take, so
        no other server attempts it meanwhile; a server that died holding it is relieved
        after that long."""
        return self.resolve_timeout + self.timeout + 30.0
