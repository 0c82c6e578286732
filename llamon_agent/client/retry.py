"""Retries with exponential backoff, for idempotent reads only.

Retried: connection failures, timeouts, a dropped connection before the answer
(``httpx.TransportError`` except protocol misuse on our side), and HTTP 5xx answers.
Never retried: JSON-RPC errors (the agent did answer), other HTTP statuses, invalid responses.
The client applies a policy to the agent card, ``tasks/get`` and the connection setup of
``tasks/resubscribe``; never to ``message/send``, ``message/stream`` or ``tasks/cancel``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx

from .errors import A2AHTTPStatusError

__all__ = ["NO_RETRY", "RetryPolicy", "call_with_retries"]

T = TypeVar("T")

_NOT_TRANSIENT = (httpx.UnsupportedProtocol, httpx.LocalProtocolError)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """``attempts`` tries in all; the n-th retry waits ``backoff * multiplier**(n-1)`` seconds,
    at most ``max_backoff``."""

    attempts: int = 3
    backoff: float = 0.2
    multiplier: float = 2.0
    max_backoff: float = 2.0

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        if self.backoff < 0 or self.max_backoff < 0 or self.multiplier < 1:
            raise ValueError("backoff and max_backoff must be >= 0, multiplier >= 1")

    def delay(self, retry: int) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        return float(min(self.max_backoff, self.backoff * self.multiplier ** (retry - 1)))

    @staticmethod
    def is_transient(exc: BaseException) -> bool:
        if isinstance(exc, A2AHTTPStatusError):
            return exc.status_code >= 500
        return isinstance(exc, httpx.TransportError) and not isinstance(exc, _NOT_TRANSIENT)


NO_RETRY = RetryPolicy(attempts=1)


async def call_with_retries(policy: RetryPolicy, attempt: Callable[[], Awaitable[T]]) -> T:
    """``await attempt()``, again after a transient failure while attempts remain."""
    tries = 0
    while True:
        tries += 1
        try:
            return await attempt()
        except Exception as exc:
            if tries >= policy.attempts or not policy.is_transient(exc):
                if tries > 1:
                    exc.add_note(f"gave up after {tries} attempts")
                raise
        await asyncio.sleep(policy.delay(tries))
